use std::collections::{BTreeMap, BTreeSet};
use std::io::BufReader;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha1::{Digest as _, Sha1};
use testweb::{HostConfig, SiteConfig};
use warc::{BufferedBody, Record, RecordType, WarcHeader, WarcReader};

use crate::util::{Site, crawl_site};

/// Every record of a `.warc.gz` file, read as any reader does: gzip members, one record each.
fn read_records(path: &Path) -> Vec<Record<BufferedBody>> {
    let file = std::fs::File::open(path).unwrap();
    let reader = WarcReader::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)));
    reader
        .iter_records()
        .map(|r| r.expect("a well-formed WARC record"))
        .collect()
}

/// The numbered files of the series `stem` in `dir`, in order.
fn series(dir: &Path, stem: &str) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_str().unwrap();
            name.starts_with(&format!("{stem}-")) && name.ends_with(".warc.gz")
        })
        .collect();
    files.sort();
    files
}

fn header(record: &Record<BufferedBody>, name: &str) -> Option<String> {
    record
        .header(WarcHeader::from(name))
        .map(|value| value.into_owned())
}

/// A record's `WARC-Date` to the millisecond, as written (the `warc` crate's `header` gives
/// it to the second).
fn warc_date(record: &Record<BufferedBody>) -> String {
    record.date().format("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// `sha1:` and the base32 SHA-1 of `bytes`, computed here, independently of the crawler.
fn sha1_base32(bytes: &[u8]) -> String {
    let digest: [u8; 20] = Sha1::digest(bytes).into();
    format!("sha1:{}", data_encoding::BASE32.encode(&digest))
}

/// The body of an HTTP message stored in a record's block: what follows the blank line.
fn http_body(block: &[u8]) -> &[u8] {
    let split = block
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .expect("an HTTP head")
        + 4;
    &block[split..]
}

/// Checks a file's shape and every digest in it: a warcinfo record first, every other
/// record naming it, each request beside its response, each block digest the SHA-1 of the
/// block as read back, each response's payload digest the SHA-1 of its HTTP body.
fn check_file(path: &Path) -> Vec<Record<BufferedBody>> {
    let records = read_records(path);
    let info = records.first().expect("a record");
    assert_eq!(
        *info.warc_type(),
        RecordType::WarcInfo,
        "{}",
        path.display()
    );
    let fields = String::from_utf8_lossy(info.body());
    assert!(fields.starts_with("software: crawler/"), "{fields}");
    assert!(
        fields.contains("format: WARC File Format 1.1\r\n"),
        "{fields}"
    );
    assert!(
        fields.contains("http-header-user-agent: crawler/"),
        "{fields}"
    );
    assert!(fields.contains("robots: obey\r\n"), "{fields}");
    assert_eq!(
        header(info, "warc-filename").as_deref(),
        path.file_name().unwrap().to_str()
    );
    let mut responses = BTreeSet::new();
    for (i, record) in records.iter().enumerate() {
        let block_digest = header(record, "warc-block-digest").expect("a block digest");
        assert_eq!(block_digest, sha1_base32(record.body()), "record {i}");
        if i == 0 {
            continue;
        }
        assert_eq!(
            header(record, "warc-warcinfo-id").as_deref(),
            Some(info.warc_id()),
            "record {i} names its file's warcinfo"
        );
        match record.warc_type() {
            RecordType::Response => {
                let payload = header(record, "warc-payload-digest").unwrap();
                assert_eq!(payload, sha1_base32(http_body(record.body())));
                responses.insert(record.warc_id().to_owned());
            }
            RecordType::Revisit => {
                // A 304's has no payload to digest; an identical payload's names it.
                let not_modified = header(record, "warc-profile").as_deref()
                    == Some("http://netpreserve.org/warc/1.1/revisit/server-not-modified");
                assert_eq!(
                    header(record, "warc-payload-digest").is_some(),
                    !not_modified
                );
                responses.insert(record.warc_id().to_owned());
            }
            RecordType::Request => {
                let to = header(record, "warc-concurrent-to").unwrap();
                assert!(
                    responses.contains(&to),
                    "a request follows its response, in the same file"
                );
            }
            other => panic!("unexpected record type {other:?}"),
        }
    }
    records
}

#[test]
fn the_warc_file_holds_every_response_with_its_request_and_verifiable_digests() {
    let site = Site::start(SiteConfig {
        pages_per_host: 20,
        host_configs: vec![HostConfig::default()],
        ..SiteConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("crawl.warc.gz");
    let crawl = crawl_site(&site, &["--warc", path.to_str().unwrap()]);

    // Under the default limit: one file, numbered.
    assert_eq!(
        series(dir.path(), "crawl"),
        [dir.path().join("crawl-00000.warc.gz")]
    );
    assert!(!path.exists());
    let records = check_file(&dir.path().join("crawl-00000.warc.gz"));
    let (mut responses, mut requests) = (BTreeSet::new(), 0);
    for record in &records[1..] {
        let target = header(record, "warc-target-uri").unwrap();
        match record.warc_type() {
            RecordType::Response => {
                let body = String::from_utf8_lossy(record.body());
                assert!(
                    body.starts_with("HTTP/1.1 200 OK\r\n"),
                    "{target}: {body:.40}"
                );
                assert!(body.contains("<a "), "{target}: the page is in the record");
                // The record's digest and time are the WARC record's.
                let json = crawl.record(&target);
                assert_eq!(
                    header(record, "warc-payload-digest").as_deref(),
                    json["digest"].as_str()
                );
                assert_eq!(
                    Some(warc_date(record).as_str()),
                    json["fetched_at"].as_str()
                );
                responses.insert(target);
            }
            RecordType::Request => {
                let body = String::from_utf8_lossy(record.body());
                assert!(body.starts_with("GET /"), "{body}");
                requests += 1;
            }
            other => panic!("unexpected record type {other:?}"),
        }
    }
    let fetched: BTreeSet<String> = crawl
        .records
        .iter()
        .filter(|(_, r)| r["status"].is_number())
        .map(|(url, _)| url.clone())
        .collect();
    assert_eq!(responses, fetched);
    assert_eq!(requests, fetched.len());
}

#[test]
fn large_incompressible_bodies_are_stored_whole_in_a_single_file() {
    // 1 MB of noise: compresses to about its own size, far past a gzip buffer.
    let noise: Vec<u8> = (0..1_000_000u32)
        .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
        .collect();
    let expected = noise.clone();
    let (port, _log) = crate::util::serve(move |path| match path {
        "/" => (200, "text/html", b"<a href=/noise.bin>n</a>".to_vec()),
        _ => (200, "application/octet-stream", noise.clone()),
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("big.warc.gz");
    let mut args = crate::util::fast();
    let seed = format!("http://127.0.0.1:{port}/");
    // No rotation: the very file named, appended to.
    let flags = ["--seed", &seed, "--warc", path.to_str().unwrap()];
    args.extend(flags.map(String::from));
    args.extend(["--warc-max-bytes", "0"].map(String::from));
    let run = crate::util::crawl(&args);
    run.assert_success();
    assert!(series(dir.path(), "big").is_empty());

    let mut found = false;
    for record in check_file(&path) {
        if header(&record, "warc-target-uri").is_some_and(|t| t.ends_with("/noise.bin"))
            && *record.warc_type() == RecordType::Response
        {
            assert_eq!(
                http_body(record.body()),
                &expected[..],
                "the whole body is in the record"
            );
            found = true;
        }
    }
    assert!(found);

    // A second run appends, with a warcinfo record of its own.
    let run = crate::util::crawl(&args);
    run.assert_success();
    let infos: Vec<String> = read_records(&path)
        .iter()
        .filter(|r| *r.warc_type() == RecordType::WarcInfo)
        .map(|r| r.warc_id().to_owned())
        .collect();
    assert_eq!(infos.len(), 2);
    assert_ne!(infos[0], infos[1]);
}

/// The contents of every file in `files`, to tell that none was written to later.
fn snapshot(files: &[PathBuf]) -> BTreeMap<PathBuf, Vec<u8>> {
    files
        .iter()
        .map(|f| (f.clone(), std::fs::read(f).unwrap()))
        .collect()
}

#[test]
fn files_rotate_at_the_limit_and_a_resumed_crawl_numbers_on_without_touching_them() {
    let site = Site::start(SiteConfig {
        pages_per_host: 40,
        host_configs: vec![HostConfig::default()],
        ..SiteConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("rot.warc.gz");
    let state = dir.path().join("state");
    let (path, state) = (path.to_str().unwrap(), state.to_str().unwrap());
    let common = ["--warc", path, "--warc-max-bytes", "8KB"];
    let mut first: Vec<&str> = vec!["--state-dir", state, "--max-pages", "12"];
    first.extend(common);
    let run1 = crawl_site(&site, &first);
    run1.assert_success();
    let before = series(dir.path(), "rot");
    assert!(before.len() >= 2, "{before:?}");
    let kept = snapshot(&before);

    let mut resume = crate::util::fast();
    resume.extend(["--resume", "--state-dir", state, "--max-pages", "0"].map(String::from));
    let run2 = crate::util::crawl(&resume);
    run2.assert_success();
    let after = series(dir.path(), "rot");
    assert!(after.len() > before.len(), "{after:?}");
    assert_eq!(&after[..before.len()], &before[..]);
    assert_eq!(
        snapshot(&before),
        kept,
        "a resumed crawl never writes into earlier files"
    );

    let mut responses = Vec::new();
    for (n, file) in after.iter().enumerate() {
        let name = format!("rot-{n:05}.warc.gz");
        assert_eq!(file.file_name().unwrap().to_str(), Some(name.as_str()));
        let records = check_file(file);
        // Pairs are whole in a file: a warcinfo, then response and request in turns.
        assert!(records.len() >= 3 && records.len() % 2 == 1, "{name}");
        // A file is closed once full, or when its run ends (each run starts a new one).
        let size = std::fs::metadata(file).unwrap().len();
        if n + 1 != before.len() && n + 1 != after.len() {
            assert!(size >= 8_000, "{name} was closed before the limit: {size}");
        }
        responses.extend(
            records
                .iter()
                .filter(|r| *r.warc_type() == RecordType::Response)
                .map(|r| header(r, "warc-target-uri").unwrap()),
        );
    }
    let mut fetched: Vec<String> = [&run1, &run2]
        .iter()
        .flat_map(|run| run.records.iter())
        .filter(|(_, r)| r["status"].is_number())
        .map(|(url, _)| url.clone())
        .collect();
    fetched.sort();
    responses.sort();
    assert_eq!(
        responses, fetched,
        "every response once, over both runs' files"
    );
    assert!(fetched.len() > 12);
}

/// A site where `/a`, `/b` and `/c` answer the same body, which links to the others, and
/// `/x` and `/y` answer the same 404 page: crawled from `/a` with WARC output to `path` and
/// `flags`.
fn crawl_copies(path: &Path, flags: &[&str]) -> crate::util::Crawl {
    let (port, _log) = crate::util::serve(|path| {
        let page = b"<a href=/b>b</a> <a href=/c>c</a> <a href=/x>x</a> <a href=/y>y</a>";
        match path {
            "/a" | "/b" | "/c" => (200, "text/html", page.to_vec()),
            _ => (404, "text/html", b"<p>gone</p>".to_vec()),
        }
    });
    let mut args = crate::util::fast();
    let seed = format!("http://127.0.0.1:{port}/a");
    args.extend(["--seed", &seed, "--warc", path.to_str().unwrap()].map(String::from));
    args.extend(flags.iter().map(|f| f.to_string()));
    let run = crate::util::crawl(&args);
    run.assert_success();
    run
}

#[test]
fn a_body_stored_before_is_stored_again_as_a_revisit_of_its_record() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.warc.gz");
    crawl_copies(&path, &["--warc-revisits", "true"]);
    let records = check_file(&dir.path().join("dup-00000.warc.gz"));
    let of_type = |t: RecordType| -> Vec<&Record<BufferedBody>> {
        records.iter().filter(|r| *r.warc_type() == t).collect()
    };
    let responses = of_type(RecordType::Response);
    let revisits = of_type(RecordType::Revisit);
    let uri = |r: &Record<BufferedBody>| header(r, "warc-target-uri").unwrap();
    let original = responses
        .iter()
        .find(|r| uri(r).ends_with("/a"))
        .expect("the first copy is stored whole");
    // 404 pages are stored whole each time, copies or not.
    assert_eq!(responses.len(), 3, "/a, /x and /y");
    assert_eq!(revisits.len(), 2, "/b and /c");
    for revisit in revisits {
        let field = |name| header(revisit, name);
        assert!(uri(revisit).ends_with("/b") || uri(revisit).ends_with("/c"));
        assert_eq!(
            field("warc-profile").as_deref(),
            Some("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
        );
        assert_eq!(field("warc-refers-to").as_deref(), Some(original.warc_id()));
        assert_eq!(field("warc-refers-to-target-uri"), Some(uri(original)));
        assert_eq!(
            field("warc-refers-to-date"),
            Some(warc_date(original)),
            "the original's WARC-Date"
        );
        assert_eq!(
            field("warc-payload-digest"),
            header(original, "warc-payload-digest")
        );
        let block = String::from_utf8_lossy(revisit.body());
        assert!(block.starts_with("HTTP/1.1 200 OK\r\n"), "{block}");
        assert!(block.ends_with("\r\n\r\n"), "headers only: {block}");
    }

    // Off by default: every copy whole.
    let path = dir.path().join("all.warc.gz");
    crawl_copies(&path, &[]);
    let records = read_records(&dir.path().join("all-00000.warc.gz"));
    let count = |t: RecordType| records.iter().filter(|r| *r.warc_type() == t).count();
    assert_eq!(
        (count(RecordType::Response), count(RecordType::Revisit)),
        (5, 0)
    );
}

/// Whether Python can import `modules` (comma-separated), `what` they are: when not, the
/// test skips saying so, except in CI, which installs them (tests/setup.sh): there, a skip
/// would be a test that cannot fail.
fn python_has(modules: &str, what: &str) -> bool {
    let there = Command::new("python3")
        .args(["-c", &format!("import {modules}")])
        .output()
        .is_ok_and(|out| out.status.success());
    if !there {
        assert!(
            std::env::var_os("CI").is_none(),
            "{what} is not installed: tests/setup.sh installs it"
        );
        eprintln!("note: skipped: {what} is not installed (tests/setup.sh installs it)");
    }
    there
}

/// What the replay and index tests import: pywb and its indexer.
const PYWB: &str = "pywb.apps.cli, pywb.manager.manager, cdxj_indexer.main";

/// Runs `python3 -m warcio.cli ARGS`; its standard output, and it must succeed.
fn warcio(args: &[&str]) -> String {
    let out = Command::new("python3")
        .args(["-m", "warcio.cli"])
        .args(args)
        .output()
        .expect("python3 runs");
    let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
    assert!(
        out.status.success(),
        "warcio {args:?} failed:\n{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    stdout
}

#[test]
fn warcio_checks_and_indexes_the_files() {
    if !python_has("warcio", "Python's warcio") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("py.warc.gz");
    // Small files, revisits on: every record kind, and revisits pointing across files.
    crawl_copies(
        &path,
        &["--warc-revisits", "true", "--warc-max-bytes", "600"],
    );
    let files = series(dir.path(), "py");
    assert!(files.len() >= 2, "{files:?}");
    let names: Vec<&str> = files.iter().map(|f| f.to_str().unwrap()).collect();

    let mut check = vec!["check", "-v"];
    check.extend(&names);
    let report = warcio(&check);
    assert!(!report.contains("fail"), "{report}");
    assert!(report.contains("digest pass"), "{report}");

    let mut index = vec!["index", "-f", "warc-type,warc-target-uri,http:status"];
    index.extend(&names);
    let mut kinds = BTreeMap::<String, usize>::new();
    for line in warcio(&index).lines() {
        let entry: serde_json::Value = serde_json::from_str(line).unwrap();
        *kinds
            .entry(entry["warc-type"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    assert_eq!(kinds["warcinfo"], files.len(), "{kinds:?}");
    assert_eq!(kinds["response"], 3, "{kinds:?}");
    assert_eq!(kinds["revisit"], 2, "{kinds:?}");
    assert_eq!(kinds["request"], 5, "{kinds:?}");
}

/// A recrawl (`--since`): a page that answers 304 Not Modified is stored as a revisit record
/// of the identical-payload profile with no HTTP head of its own, naming the earlier body's
/// digest and pointing at the URL and at when the earlier crawl fetched it: a replay serves
/// the earlier capture for it (see `a_recrawl_archive_replays_in_pywb`).
#[test]
fn a_304_to_a_recrawl_is_stored_as_a_revisit_of_the_earlier_capture() {
    let site = Site::start(SiteConfig {
        pages_per_host: 30,
        ..SiteConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("earlier.jsonl");
    let first = crawl_site(&site, &[]);
    std::fs::write(&earlier, &first.output.stdout).unwrap();
    let warc = dir.path().join("again.warc.gz");
    let again = crawl_site(
        &site,
        &[
            "--since",
            earlier.to_str().unwrap(),
            "--warc",
            warc.to_str().unwrap(),
        ],
    );
    let root = site.web.url(0, "/");
    assert_eq!(again.record(&root)["status"], 304);
    let records = check_file(&series(dir.path(), "again")[0]);
    let revisits: Vec<_> = records
        .iter()
        .filter(|r| *r.warc_type() == RecordType::Revisit)
        .collect();
    assert_eq!(revisits.len(), 30, "one per page, every page unchanged");
    let of_root = revisits
        .iter()
        .find(|r| header(r, "warc-target-uri").as_deref() == Some(root.as_str()))
        .expect("the root's revisit");
    assert_eq!(
        header(of_root, "warc-profile").as_deref(),
        Some("http://netpreserve.org/warc/1.1/revisit/identical-payload-digest")
    );
    assert_eq!(
        header(of_root, "warc-payload-digest").as_deref(),
        first.record(&root)["digest"].as_str()
    );
    assert_eq!(
        header(of_root, "warc-refers-to-target-uri").as_deref(),
        Some(root.as_str())
    );
    let fetched_before = first.record(&root)["fetched_at"]
        .as_str()
        .unwrap()
        .to_owned();
    assert_eq!(header(of_root, "warc-refers-to-date"), Some(fetched_before));
    assert!(of_root.body().is_empty(), "no HTTP head of its own");
}

/// pywb's command `name` (`wb-manager`, `wayback`) run by python3 with `args`: the same
/// whether pip put its scripts on the PATH or not (`--user`).
fn pywb(name: &str, args: &[&str]) -> Command {
    let main = match name {
        "wayback" => "from pywb.apps.cli import wayback as main",
        _ => "from pywb.manager.manager import main",
    };
    let mut command = Command::new("python3");
    command
        .args([
            "-c",
            &format!("import sys; {main}; sys.exit(main(sys.argv[1:]))"),
        ])
        .args(args);
    command
}

/// pywb serving a collection of `files` from `dir` on a free port; killed on drop.
struct Pywb {
    child: std::process::Child,
    port: u16,
}

impl Pywb {
    fn start(dir: &Path, files: &[PathBuf]) -> Pywb {
        let run = |args: &[&str]| {
            let out = pywb("wb-manager", args)
                .current_dir(dir)
                .output()
                .expect("wb-manager runs");
            assert!(out.status.success(), "wb-manager {args:?}: {out:?}");
        };
        run(&["init", "crawl"]);
        let mut add = vec!["add", "crawl"];
        add.extend(files.iter().map(|f| f.to_str().unwrap()));
        run(&add);
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .unwrap()
            .port();
        let child = pywb("wayback", &["-p", &port.to_string(), "-b", "127.0.0.1"])
            .current_dir(dir)
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .expect("wayback runs");
        let pywb = Pywb { child, port };
        crate::util::wait_until("pywb did not start", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        pywb
    }

    /// The latest capture of `url` as pywb replays it, unrewritten: its status and body.
    fn latest(&self, url: &str) -> (u16, Vec<u8>) {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let at = format!("http://127.0.0.1:{}/crawl/2999id_/{url}", self.port);
            let response = reqwest::get(&at).await.expect("pywb answers");
            let status = response.status().as_u16();
            (status, response.bytes().await.unwrap().to_vec())
        })
    }
}

impl Drop for Pywb {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The bodies of the response records of `files`, by URL.
fn stored_bodies(files: &[PathBuf]) -> BTreeMap<String, Vec<u8>> {
    let mut bodies = BTreeMap::new();
    for file in files {
        for record in read_records(file) {
            if *record.warc_type() == RecordType::Response {
                let url = header(&record, "warc-target-uri").unwrap();
                bodies.insert(url, http_body(record.body()).to_vec());
            }
        }
    }
    bodies
}

/// A crawl and its recrawl with revisits, both archived, replayed in pywb (the archivists'
/// replay tool, not a model of it): the latest capture of every unchanged page replays 200
/// with the bytes the first crawl stored, and every changed page its new bytes. A page that
/// needs a style sheet (which imports another and loads an image), images (`src`,
/// `srcset`), a script and an icon replays whole: every requisite was archived
/// (writing WARC fetches them unasked) and replays 200 with its bytes, after the recrawl too.
#[test]
fn a_recrawl_archive_replays_in_pywb() {
    if !python_has(PYWB, "pywb and cdxj-indexer") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let styled = testweb::Special::new("/styled", testweb::SpecialKind::Styled { cdn: None });
    let config = SiteConfig {
        pages_per_host: 30,
        changed_fraction: 0.3,
        host_configs: vec![HostConfig {
            specials: vec![styled],
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    };
    let first_warc = dir.path().join("first.warc.gz");
    let earlier = dir.path().join("earlier.jsonl");
    // One index for both crawls: the recrawl's lines merged into the first's.
    let cdx = dir.path().join("index.cdxj");
    let port = {
        let site = Site::start(config.clone());
        let first = crawl_with_files(&site, &[("--warc", &first_warc), ("--cdx", &cdx)], &[]);
        std::fs::write(&earlier, &first.output.stdout).unwrap();
        site.web.port(0)
    };
    // WARC dates are to the second: the recrawl's must be later than the crawl's.
    std::thread::sleep(std::time::Duration::from_millis(1100));
    let site = Site::start(SiteConfig {
        generation: 1,
        port,
        ..config.clone()
    });
    let changes = site.web.changes_since(&config).unwrap();
    assert!(!changes.changed.is_empty());
    let again_warc = dir.path().join("again.warc.gz");
    crawl_with_files(
        &site,
        &[
            ("--since", &earlier),
            ("--warc", &again_warc),
            ("--cdx", &cdx),
        ],
        &["--warc-revisits", "true"],
    );
    let (first, again) = (series(dir.path(), "first"), series(dir.path(), "again"));
    assert_eq!(
        std::fs::read_to_string(&cdx).unwrap(),
        cdxj_indexer(dir.path(), &[first.clone(), again.clone()].concat()),
        "our index, then pywb's cdxj-indexer's"
    );
    let (stored_first, stored_again) = (stored_bodies(&first), stored_bodies(&again));
    let pywb = Pywb::start(dir.path(), &[first, again].concat());
    let mut unchanged = 0;
    let with_requisites = site.web.expected_pages_with(testweb::ExpectOptions {
        page_requisites: true,
        ..testweb::ExpectOptions::default()
    });
    let requisites = with_requisites
        .difference(&site.web.expected_pages())
        .count();
    assert_eq!(requisites, 11);
    for url in with_requisites {
        let (status, body) = pywb.latest(&url);
        assert_eq!(status, 200, "{url}");
        // Its latest capture: the recrawl's body when it stored one (a changed or new
        // page), else the first crawl's (an unchanged page, stored again as a revisit).
        let expected = match stored_again.get(&url) {
            Some(body) => body,
            None => {
                assert!(!changes.changed.contains(&url), "{url} changed, not stored");
                unchanged += 1;
                &stored_first[&url]
            }
        };
        assert!(body == *expected, "{url}: {} bytes replayed", body.len());
    }
    assert!(unchanged > 0);
}

/// pywb's `cdxj-indexer` of `files` (in `dir`), sorted: what `output.cdx` must write.
fn cdxj_indexer(dir: &Path, files: &[PathBuf]) -> String {
    let names: Vec<&str> = files
        .iter()
        .map(|f| f.file_name().unwrap().to_str().unwrap())
        .collect();
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; from cdxj_indexer.main import main; main(sys.argv[1:])",
            "-s",
        ])
        .args(&names)
        .current_dir(dir)
        .output()
        .expect("python3 runs");
    assert!(out.status.success(), "cdxj-indexer: {out:?}");
    String::from_utf8(out.stdout).unwrap()
}

/// The index of a crawl whose bodies repeat (revisits of this run's records) over several
/// files is the one pywb's indexer makes of them, line for line.
#[test]
fn the_cdxj_index_is_pywbs() {
    if !python_has(PYWB, "pywb and cdxj-indexer") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("dup.warc.gz");
    let cdx = dir.path().join("dup.cdxj");
    let cdx_flag = cdx.to_str().unwrap();
    crawl_copies(
        &path,
        &[
            "--warc-revisits",
            "true",
            "--warc-max-bytes",
            "600",
            "--cdx",
            cdx_flag,
        ],
    );
    let files = series(dir.path(), "dup");
    assert!(files.len() >= 2, "{files:?}");
    let ours = std::fs::read_to_string(&cdx).unwrap();
    assert!(ours.contains("warc/revisit"), "{ours}");
    assert_eq!(ours, cdxj_indexer(dir.path(), &files));
}

/// A crawl packaged as WACZ (over several WARC files) passes py-wacz's own validation (the
/// data package, every file's SHA-256 and size, the pages list), and lists its HTML pages.
#[test]
fn the_wacz_file_passes_py_wacz_validation() {
    if !python_has("wacz.main", "py-wacz") {
        return;
    }
    let site = Site::start(SiteConfig {
        pages_per_host: 30,
        ..SiteConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("site.warc.gz");
    let wacz = dir.path().join("site.wacz");
    crawl_with_files(
        &site,
        &[("--warc", &warc), ("--wacz", &wacz)],
        &["--warc-max-bytes", "20000"],
    );
    assert!(series(dir.path(), "site").len() >= 2);
    let out = Command::new("python3")
        .args([
            "-c",
            "import sys; from wacz.main import main; sys.exit(main(sys.argv[1:]))",
        ])
        .args(["validate", "-f", wacz.to_str().unwrap()])
        .output()
        .expect("python3 runs");
    let said = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "wacz validate: {said}");
    assert!(said.contains("Validation succeeded"), "{said}");
    // Its pages: every HTML page answered 200, after the list's header.
    let listed = Command::new("python3")
        .args([
            "-c",
            "import sys, zipfile; sys.stdout.write(zipfile.ZipFile(sys.argv[1]).read('pages/pages.jsonl').decode())",
            wacz.to_str().unwrap(),
        ])
        .output()
        .expect("python3 runs");
    let lines = String::from_utf8_lossy(&listed.stdout).lines().count();
    let html = site.web.expected_pages().len();
    assert_eq!(lines, html + 1, "a header and a line per HTML page");
}

/// `crawl_site` with flags that name files, then `more` flags.
fn crawl_with_files(site: &Site, files: &[(&str, &Path)], more: &[&str]) -> crate::util::Crawl {
    let mut flags: Vec<&str> = Vec::new();
    for (flag, path) in files {
        flags.extend([*flag, path.to_str().unwrap()]);
    }
    flags.extend(more);
    crawl_site(site, &flags)
}
