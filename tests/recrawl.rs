//! Recrawls (`--since`): a crawl started from an earlier one's records asks for each page
//! with its validators, fetches in full only what changed, and says what became of each.

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use testweb::{HostConfig, SiteConfig, Special, SpecialKind, Testweb};

use crate::redis_server::RedisServer;
use crate::util::{Crawl, crawl, fast, wait_or_kill};

/// The first of two ports in a row that are free now.
fn free_ports() -> u16 {
    loop {
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        let Some(next) = port.checked_add(1) else {
            continue;
        };
        if std::net::TcpListener::bind(("127.0.0.1", next)).is_ok() {
            return port;
        }
    }
}

fn config(generation: u64, port: u16) -> SiteConfig {
    // A redirect and a missing page too: the same answer again is no change either.
    let specials = vec![
        Special::new("/moved", SpecialKind::redirect(301, "/p/1")),
        Special::new("/missing", SpecialKind::status(404)),
    ];
    SiteConfig {
        hosts: 2,
        pages_per_host: 300,
        changed_fraction: 0.1,
        generation,
        port,
        host_configs: vec![HostConfig {
            specials,
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    }
}

/// A site of `config` on its own runtime, started again while its ports are still closing.
struct Served {
    web: Testweb,
    _runtime: tokio::runtime::Runtime,
}

fn serve(config: SiteConfig) -> Served {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    for _ in 0..100 {
        match runtime.block_on(Testweb::start(config.clone())) {
            Ok(web) => {
                return Served {
                    web,
                    _runtime: runtime,
                };
            }
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => {
                std::thread::sleep(Duration::from_millis(50));
            }
            Err(err) => panic!("{err}"),
        }
    }
    panic!("the ports stayed in use");
}

fn run(web: &Testweb, since: Option<&Path>) -> Crawl {
    let mut args = fast();
    for seed in web.roots() {
        args.extend(["--seed".to_owned(), seed]);
    }
    if let Some(path) = since {
        args.extend(["--since".to_owned(), path.to_str().unwrap().to_owned()]);
    }
    let crawl = crawl(&args);
    crawl.assert_success();
    crawl
}

/// A first crawl of generation 0 on two free ports, its site stopped after.
struct First {
    /// Holds `earlier`.
    dir: tempfile::TempDir,
    /// Its records file.
    earlier: std::path::PathBuf,
    /// The port of host 0, for the later site.
    port: u16,
    crawl: Crawl,
}

fn first_crawl() -> First {
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("earlier.jsonl");
    let port = free_ports();
    let site = serve(config(0, port));
    let crawl = run(&site.web, None);
    save(&crawl, &earlier);
    site.web.shutdown();
    First {
        dir,
        earlier,
        port,
        crawl,
    }
}

/// Writes a crawl's records as its records file.
fn save(crawl: &Crawl, path: &Path) {
    std::fs::write(path, &crawl.output.stdout).unwrap();
}

fn revisits(crawl: &Crawl) -> BTreeMap<String, String> {
    crawl
        .records
        .iter()
        .map(|(url, r)| {
            (
                url.clone(),
                r["revisit"].as_str().unwrap_or("null").to_owned(),
            )
        })
        .collect()
}

#[test]
fn a_recrawl_of_a_site_where_a_tenth_changed_fetches_only_those_in_full() {
    // The directory held to the end: it holds the records file.
    let First {
        dir: _dir,
        earlier,
        port,
        crawl,
    } = first_crawl();
    assert!(crawl.records.values().all(|r| r["revisit"].is_null()));
    // The regular pages carry validators; the redirect and the missing page do not.
    let digests: BTreeMap<String, String> = crawl
        .records
        .iter()
        .filter(|(_, r)| r["etag"].is_string())
        .map(|(url, r)| (url.clone(), r["digest"].as_str().unwrap().to_owned()))
        .collect();
    assert_eq!(digests.len() + 2, crawl.records.len());
    let later = serve(config(1, port));
    let changes = later.web.changes_since(&config(0, port)).unwrap();
    assert!(!changes.changed.is_empty());
    let recrawl = run(&later.web, Some(&earlier));
    let expected = later.web.expected_pages();
    let recorded: std::collections::BTreeSet<String> = recrawl.records.keys().cloned().collect();
    let differ: Vec<_> = recorded.symmetric_difference(&expected).take(3).collect();
    assert!(
        differ.is_empty(),
        "recorded and expected differ: {differ:?}"
    );
    for (url, revisit) in revisits(&recrawl) {
        let record = &recrawl.records[&url];
        if changes.changed.contains(&url) {
            assert_eq!(revisit, "changed", "{url}: {record}");
            assert_eq!(record["status"], 200, "{url}");
            assert_ne!(
                record["digest"].as_str(),
                Some(digests[&url].as_str()),
                "{url}"
            );
        } else if let Some(digest) = digests.get(&url) {
            assert_eq!(revisit, "unchanged", "{url}: {record}");
            assert_eq!(record["status"], 304, "{url}");
            // The body not sent again keeps the digest it had.
            assert_eq!(record["digest"].as_str(), Some(digest.as_str()), "{url}");
        } else {
            // The redirect and the missing page answer as before: no change either.
            assert_eq!(revisit, "unchanged", "{url}: {record}");
            assert!(
                [301, 404].contains(&record["status"].as_u64().unwrap()),
                "{record}"
            );
        }
    }
    // The server sent the changed pages' bodies, and no other.
    let sent: u64 = (0..2).map(|h| later.web.page_bytes_served(h)).sum();
    let changed_bytes: u64 = changes
        .changed
        .iter()
        .map(|url| recrawl.records[url]["bytes"].as_u64().unwrap())
        .sum();
    assert_eq!(sent, changed_bytes);
    let not_modified: u64 = (0..2).map(|h| later.web.not_modified_served(h)).sum();
    assert_eq!(not_modified as usize, digests.len() - changes.changed.len());
    let stderr = recrawl.stderr();
    let line = format!(
        "{} unchanged ({} answered 304 Not Modified",
        not_modified + 2,
        not_modified
    );
    assert!(stderr.contains(&line), "{stderr}");
    assert!(
        stderr.contains(&format!("{} changed, 0 new, 0 gone", changes.changed.len())),
        "{stderr}"
    );
}

#[test]
fn a_recrawl_of_an_unchanged_site_transfers_no_page() {
    let dir = tempfile::tempdir().unwrap();
    let earlier = dir.path().join("earlier.jsonl.gz");
    let port = free_ports();
    let site = serve(config(0, port));
    let crawl = run(&site.web, None);
    // A gzipped records file reads the same.
    {
        use std::io::Write;
        let file = std::fs::File::create(&earlier).unwrap();
        let mut gz = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
        gz.write_all(&crawl.output.stdout).unwrap();
        gz.finish().unwrap();
    }
    site.web.clear_log();
    // No --seed: the earlier crawl's seeds (its depth-0 records) are the recrawl's.
    let mut args = fast();
    args.extend(["--since".to_owned(), earlier.to_str().unwrap().to_owned()]);
    let recrawl = crate::util::crawl(&args);
    recrawl.assert_success();
    assert_eq!(recrawl.records.len(), crawl.records.len());
    assert!(revisits(&recrawl).values().all(|r| r == "unchanged"));
    assert_eq!(
        (0..2).map(|h| site.web.page_bytes_served(h)).sum::<u64>(),
        0
    );
}

/// The earlier records travel with the queued URLs (their leases' memos), in the
/// checkpoint too: a recrawl stopped and resumed without --since asks for the pages left
/// with their validators as before, and still says what became of each.
#[test]
fn a_recrawl_resumed_without_since_still_asks_for_the_rest_conditionally() {
    let first = first_crawl();
    let site = serve(config(0, first.port));
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap();
    let mut args = fast();
    for seed in site.web.roots() {
        args.extend(["--seed".to_owned(), seed]);
    }
    let since = first.earlier.to_str().unwrap();
    args.extend(["--since", since, "--state-dir", dir, "--max-pages", "7"].map(String::from));
    let part = crawl(&args);
    part.assert_success();
    assert_eq!(part.records.len(), 7);
    let rest = crawl(&["--resume", "--state-dir", dir, "--max-pages", "0"]);
    rest.assert_success();
    assert_eq!(
        part.records.len() + rest.records.len(),
        first.crawl.records.len(),
        "{}",
        rest.stderr()
    );
    for crawl in [&part, &rest] {
        assert!(
            revisits(crawl).values().all(|r| r == "unchanged"),
            "{:?}",
            revisits(crawl)
        );
    }
    assert_eq!(
        (0..2).map(|h| site.web.page_bytes_served(h)).sum::<u64>(),
        0,
        "every page answered 304"
    );
    assert!(rest.stderr().contains("unchanged"), "{}", rest.stderr());
}

/// What a resume needs is said, not guessed: a crawl that was no recrawl cannot become one
/// (its queued URLs have no records), and a recrawl stopped while queuing its earlier URLs
/// needs its --since files again for those not queued yet.
#[test]
fn a_resume_says_when_it_needs_or_refuses_since() {
    let first = first_crawl();
    let site = serve(config(0, first.port));
    let since = first.earlier.to_str().unwrap().to_owned();
    let seeds: Vec<String> = site
        .web
        .roots()
        .into_iter()
        .flat_map(|seed| ["--seed".to_owned(), seed])
        .collect();
    let start = |dir: &str, more: &[&str]| {
        let mut args = fast();
        args.extend(seeds.iter().cloned());
        args.extend(["--state-dir", dir, "--max-pages", "3"].map(String::from));
        args.extend(more.iter().map(|a| a.to_string()));
        crawl(&args)
    };
    // Not a recrawl: --since on resume is refused, naming the directory.
    let plain = tempfile::tempdir().unwrap();
    let plain_dir = plain.path().to_str().unwrap();
    assert!(start(plain_dir, &[]).output.status.success());
    let refused = crawl(&["--resume", "--state-dir", plain_dir, "--since", &since]);
    refused.assert_exit(2);
    assert!(
        refused.stderr().contains("was not started with --since"),
        "{}",
        refused.stderr()
    );
    // A recrawl stopped while queuing (as a crash would leave it): --since is asked for,
    // and given, the crawl goes on as a recrawl.
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap();
    let part = start(dir, &["--since", &since]);
    part.assert_success();
    std::fs::write(state.path().join("recrawl"), "queuing\n").unwrap();
    let asked = crawl(&["--resume", "--state-dir", dir, "--max-pages", "0"]);
    asked.assert_exit(2);
    assert!(
        asked.stderr().contains("same --since files"),
        "{}",
        asked.stderr()
    );
    let rest = crawl(&[
        "--resume",
        "--state-dir",
        dir,
        "--max-pages",
        "0",
        "--since",
        &since,
    ]);
    rest.assert_success();
    assert_eq!(
        part.records.len() + rest.records.len(),
        first.crawl.records.len()
    );
    assert!(revisits(&rest).values().all(|r| r == "unchanged"));
    let marker = std::fs::read_to_string(state.path().join("recrawl")).unwrap();
    assert_eq!(marker, "queued\n");
}

#[test]
fn a_records_file_that_cannot_be_read_stops_the_start_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    let bad = dir.path().join("bad.jsonl");
    std::fs::write(
        &bad,
        "{\"url\":\"http://127.0.0.1:1/\"}\nnot a record\n{}\n",
    )
    .unwrap();
    let mut args = fast();
    args.extend(
        [
            "--seed",
            "http://127.0.0.1:1/",
            "--since",
            bad.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let crawl = crawl(&args);
    assert_eq!(crawl.output.status.code(), Some(2));
    let stderr = crawl.stderr();
    assert!(
        stderr.contains("bad.jsonl") && stderr.contains("line 2"),
        "{stderr}"
    );
}

#[test]
fn pages_gone_since_are_recorded_as_gone() {
    // The directory held to the end: it holds the records file.
    let First {
        dir: _dir,
        earlier,
        port,
        ..
    } = first_crawl();
    // The same site, a sixth of each host's pages taken down (they answer 404).
    let smaller = SiteConfig {
        pages_per_host: 250,
        ..config(0, port)
    };
    let later = serve(smaller.clone());
    let changes = later.web.changes_since(&config(0, port)).unwrap();
    assert_eq!(changes.gone.len(), 100);
    let recrawl = run(&later.web, Some(&earlier));
    let kinds = revisits(&recrawl);
    for url in &changes.gone {
        assert_eq!(kinds[url], "gone", "{url}");
        assert_eq!(recrawl.records[url]["status"], 404, "{url}");
    }
    let changed: std::collections::BTreeSet<String> = kinds
        .iter()
        .filter(|(_, kind)| *kind == "changed")
        .map(|(url, _)| url.clone())
        .collect();
    // The parents of the pages taken down lost links to them: changed.
    assert_eq!(changed, changes.changed);
    assert!(
        recrawl.stderr().contains(", 100 gone"),
        "{}",
        recrawl.stderr()
    );
}

#[test]
fn pages_new_since_are_fetched_in_full_and_recorded_as_new() {
    // The directory held to the end: it holds the records file.
    let First {
        dir: _dir,
        earlier,
        port,
        ..
    } = first_crawl();
    // The site grew: the new pages hang below the old leaves, whose links changed.
    let larger = SiteConfig {
        pages_per_host: 400,
        ..config(1, port)
    };
    let later = serve(larger);
    let changes = later.web.changes_since(&config(0, port)).unwrap();
    assert_eq!(changes.new.len(), 200);
    let recrawl = run(&later.web, Some(&earlier));
    let kinds = revisits(&recrawl);
    for url in &changes.new {
        assert_eq!(kinds[url], "new", "{url}");
        assert_eq!(recrawl.records[url]["status"], 200, "{url}");
    }
    for url in &changes.changed {
        assert_eq!(kinds[url], "changed", "{url}");
    }
    let unchanged = kinds.values().filter(|k| *k == "unchanged").count();
    assert_eq!(
        unchanged,
        kinds.len() - changes.new.len() - changes.changed.len()
    );
}

/// Two processes of a crawl shared through Redis, each given the earlier records: each
/// queues them (the seen-test drops the other's), and each asks with their validators; the
/// first stops early, and the one that joined takes its buckets over and ends the crawl.
#[test]
fn two_processes_on_redis_recrawl_each_page_once_fetching_only_what_changed_one_without_since() {
    let First {
        dir, earlier, port, ..
    } = first_crawl();
    // Slow pages on one host (the same pages: a latency changes no validator), so that the
    // process joining takes part whatever its start's timing.
    let mut slow = config(1, port);
    slow.host_configs[0].latency = Duration::from_millis(300);
    let later = serve(slow);
    let changes = later.web.changes_since(&config(0, port)).unwrap();
    let redis = RedisServer::start();
    let outs: Vec<_> = (0..2)
        .map(|i| dir.path().join(format!("out{i}.jsonl")))
        .collect();
    // The second process joins without --since, once the first has queued the earlier URLs
    // (as the guide says): the records come with the URLs it leases, and make it a recrawl.
    let children: Vec<_> = outs
        .iter()
        .enumerate()
        .map(|(i, out)| {
            let mut args = fast();
            args.extend(["--redis", &redis.url()].map(String::from));
            // Few fetches a process: the crawl lasts seconds, not one, so that the process
            // joining takes part however late a loaded machine starts it.
            args.extend(["--concurrency", "32"].map(String::from));
            if i == 0 {
                for seed in later.web.roots() {
                    args.extend(["--seed".to_owned(), seed]);
                }
                args.extend(["--since", earlier.to_str().unwrap()].map(String::from));
                // It stops early, handing its buckets over: each bucket has one owner,
                // and the two hosts' may both be its own.
                args.extend(["--max-pages", "150"].map(String::from));
            } else {
                args.push("--join".to_owned());
            }
            args.extend(["--output", out.to_str().unwrap()].map(String::from));
            let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_crawler"))
                .args(&args)
                .env("RUST_LOG", if i == 0 { "info" } else { "warn" })
                .stdout(std::process::Stdio::null())
                .stderr(std::process::Stdio::piped())
                .spawn()
                .unwrap();
            if i == 0 {
                // Its log, read to the line saying the earlier URLs are queued; the rest is
                // read on, so that the process never blocks on a full pipe.
                use std::io::BufRead;
                let mut lines = std::io::BufReader::new(child.stderr.take().unwrap()).lines();
                let queued = lines
                    .by_ref()
                    .map_while(Result::ok)
                    .any(|line| line.contains("earlier URLs are queued"));
                assert!(queued, "the first process said nothing of queuing");
                std::thread::spawn(move || lines.for_each(drop));
            }
            child
        })
        .collect();
    for child in children {
        let (output, hung) = wait_or_kill(child, Duration::from_secs(120));
        assert!(
            !hung && output.status.success(),
            "{}",
            String::from_utf8_lossy(&output.stderr)
        );
    }
    let mut kinds = BTreeMap::new();
    for out in &outs {
        for line in std::fs::read_to_string(out).unwrap().lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let url = record["url"].as_str().unwrap().to_owned();
            let kind = record["revisit"].as_str().unwrap().to_owned();
            assert!(
                kinds.insert(url.clone(), kind).is_none(),
                "{url} recorded twice"
            );
        }
    }
    assert_eq!(kinds.len(), later.web.expected_pages().len());
    let joined = std::fs::read_to_string(&outs[1]).unwrap().lines().count();
    assert!(joined > 0, "the process that joined recorded no page");
    for (url, kind) in &kinds {
        let want = if changes.changed.contains(url) {
            "changed"
        } else {
            "unchanged"
        };
        assert_eq!(kind, want, "{url}");
    }
    let not_modified: u64 = (0..2).map(|h| later.web.not_modified_served(h)).sum();
    // All but the changed, the redirect and the missing page.
    assert_eq!(
        not_modified as usize,
        kinds.len() - changes.changed.len() - 2
    );
}
