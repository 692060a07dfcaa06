use std::collections::BTreeSet;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testweb::{HostConfig, SiteConfig};

use crate::util::{Site, crawl, fast, interrupt, ms, urls_recorded as records, wait_until};

#[test]
fn a_crawl_killed_with_sigkill_resumes_and_loses_nothing() {
    let site = Site::start(SiteConfig {
        pages_per_host: 300,
        host_configs: vec![HostConfig {
            latency: ms(5),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let state = tempfile::tempdir().unwrap();
    let first = state.path().join("first.jsonl");
    let second = state.path().join("second.jsonl");
    let mut args = fast();
    args.extend(
        [
            "--seed",
            &site.web.seeds()[0],
            "--state-dir",
            state.path().join("state").to_str().unwrap(),
            "--checkpoint-interval",
            "100ms",
            // A small filter: each checkpoint writes it whole, with an fsync.
            "--seen-initial-capacity",
            "10000",
            "--connections-per-host",
            "2",
        ]
        .map(String::from),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .args(["--output", first.to_str().unwrap()])
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Kill it in the middle of the crawl, once a few checkpoints have been written.
    let deadline = Instant::now() + Duration::from_secs(60);
    while site.web.requests().len() < 100 && Instant::now() < deadline {
        std::thread::sleep(ms(5));
    }
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let before = site.web.requests().len();
    assert!(
        before < 300,
        "the crawl was killed before its end ({before} requests)"
    );

    let mut resume = vec!["--resume".to_owned()];
    resume.extend(
        args.iter()
            .skip_while(|a| *a != "--state-dir")
            .take(2)
            .cloned(),
    );
    resume.extend(["--output".to_owned(), second.to_str().unwrap().to_owned()]);
    resume.extend(["--progress".to_owned(), "off".to_owned()]);
    let run = crawl(&resume);
    run.assert_success();

    let (a, b) = (records(&first), records(&second));
    let fetched: BTreeSet<String> = a.iter().chain(&b).cloned().collect();
    assert_eq!(
        fetched,
        site.web.expected_pages(),
        "the union of both runs is the site"
    );
    // At most the work since the last checkpoint is repeated: a few fetches, far from all.
    let repeated = a.iter().filter(|u| b.contains(u)).count();
    assert!(repeated < 60, "{repeated} URLs fetched by both runs");
    let counts = site.web.fetch_counts();
    let refetched = counts
        .iter()
        .filter(|(u, n)| !u.ends_with("/robots.txt") && **n > 1)
        .count();
    assert!(refetched < 60, "{refetched} URLs requested twice");
}

#[test]
fn a_state_dir_is_not_reused_by_accident_and_resumes_with_its_settings() {
    let site = Site::start(SiteConfig {
        pages_per_host: 20,
        ..SiteConfig::default()
    });
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().to_str().unwrap();
    let seed = site.web.seeds()[0].clone();
    let mut args = fast();
    args.extend(["--seed", &seed, "--state-dir", dir, "--max-pages", "5"].map(String::from));
    let run = crawl(&args);
    run.assert_success();
    assert_eq!(run.records.len(), 5);
    // The summary says where the URLs left queued are.
    assert!(
        run.stderr()
            .contains("left queued are kept in the state directory: --resume crawls on"),
        "{}",
        run.stderr()
    );

    // Starting again in the same directory without --resume is refused.
    let again = crawl(&args);
    assert_eq!(again.output.status.code(), Some(2));
    assert!(again.stderr().contains("--resume"), "{}", again.stderr());

    // Resuming goes on from the checkpoint, with the saved settings (local profile) and the
    // limit lifted from the command line.
    let resumed = crawl(&[
        "--resume",
        "--state-dir",
        dir,
        "--max-pages",
        "0",
        "--progress",
        "off",
    ]);
    resumed.assert_success();
    assert!(
        !resumed.stderr().contains("stopped:"),
        "{}",
        resumed.stderr()
    );
    let all: BTreeSet<String> = run
        .records
        .keys()
        .chain(resumed.records.keys())
        .cloned()
        .collect();
    assert_eq!(all, site.web.expected_pages());
    assert!(
        run.records.keys().all(|u| !resumed.records.contains_key(u)),
        "nothing fetched twice"
    );

    // A damaged checkpoint is refused with a message naming the file.
    std::fs::write(state.path().join("checkpoint/MANIFEST"), b"garbage").unwrap();
    let broken = crawl(&["--resume", "--state-dir", dir]);
    assert_eq!(broken.output.status.code(), Some(2));
    assert!(broken.stderr().contains("MANIFEST"), "{}", broken.stderr());
}

#[test]
fn ctrl_c_finishes_the_fetches_in_flight_checkpoints_and_exits_0() {
    let site = Site::start(SiteConfig {
        pages_per_host: 200,
        host_configs: vec![HostConfig {
            latency: ms(10),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("state");
    let records_path = state.path().join("records.jsonl");
    let mut args = fast();
    args.extend(
        [
            "--seed",
            &site.web.seeds()[0],
            "--state-dir",
            dir.to_str().unwrap(),
            "--output",
            records_path.to_str().unwrap(),
            "--connections-per-host",
            "2",
            "--seen-initial-capacity",
            "10000",
        ]
        .map(String::from),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the crawl made no request", || {
        site.web.requests().len() >= 30
    });
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(
        stderr.contains("stopping") && stderr.contains("crawled"),
        "{stderr}"
    );
    let first = records(&records_path);
    assert!(first.len() < 200, "stopped early: {}", first.len());

    // Resuming appends the rest; in-flight fetches had finished, so nothing is fetched twice.
    let run = crawl(&[
        "--resume",
        "--state-dir",
        dir.to_str().unwrap(),
        "--progress",
        "off",
    ]);
    run.assert_success();
    // The summary tells this run's counts from the whole crawl's.
    assert!(
        run.stderr().contains("this run: crawled"),
        "{}",
        run.stderr()
    );
    assert!(
        run.stderr().contains("since the crawl began"),
        "{}",
        run.stderr()
    );
    let all = records(&records_path);
    let unique: BTreeSet<String> = all.iter().cloned().collect();
    assert_eq!(unique.len(), all.len(), "no URL recorded twice");
    assert_eq!(unique, site.web.expected_pages());
    // robots.txt is fetched again by the resumed process; pages are not.
    let counts = site.web.fetch_counts();
    assert!(
        counts
            .iter()
            .all(|(url, &n)| n == 1 || url.ends_with("/robots.txt"))
    );
}

#[test]
fn ctrl_c_without_a_state_dir_says_the_queued_urls_are_lost_and_how_to_keep_them() {
    let site = Site::start(SiteConfig {
        pages_per_host: 200,
        host_configs: vec![HostConfig {
            latency: ms(10),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let mut args = fast();
    args.extend(
        [
            "--seed",
            &site.web.seeds()[0],
            "--connections-per-host",
            "2",
        ]
        .map(String::from),
    );
    let child = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    wait_until("the crawl made no request", || {
        site.web.requests().len() >= 30
    });
    interrupt(&child);
    let output = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("queued URLs will be lost"), "{stderr}");
    assert!(stderr.contains("--state-dir DIR"), "{stderr}");
    assert!(stderr.contains("--resume"), "{stderr}");
}

/// Regression: a second Ctrl-C quit from inside a task with `process::exit`,
/// leaving the temporary spill directory and its segment files behind.
#[test]
fn a_second_ctrl_c_quits_at_once_and_leaves_no_spill_files() {
    use std::io::BufRead;

    let site = Site::start(SiteConfig {
        pages_per_host: 2000,
        host_configs: vec![HostConfig {
            latency: ms(3000),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let mut args = fast();
    args.extend(
        [
            "--seed",
            &site.web.seeds()[0],
            // Every queued URL spills: there are segment files to clean up.
            "--memory-budget-mib",
            "0",
            "--shutdown-grace",
            "60s",
            "--robots",
            "false",
        ]
        .map(String::from),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .env("TMPDIR", tmp.path())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let (said, heard) = std::sync::mpsc::channel();
    let stderr = child.stderr.take().unwrap();
    let reader = std::thread::spawn(move || {
        let mut all = String::new();
        for line in std::io::BufReader::new(stderr).lines() {
            let line = line.unwrap_or_default();
            let _ = said.send(line.clone());
            all.push_str(&line);
            all.push('\n');
        }
        all
    });
    // Wait for the root's links to be queued (spilled), then interrupt twice.
    wait_until("the crawl made no request", || {
        site.web.requests().len() >= 3
    });
    interrupt(&child);
    while let Ok(line) = heard.recv_timeout(Duration::from_secs(30)) {
        if line.contains("stopping") {
            break;
        }
    }
    let asked = Instant::now();
    interrupt(&child);
    let status = child.wait().unwrap();
    let stderr = reader.join().unwrap();
    // At once: not after the 3 s fetches in flight, nor the 60 s grace.
    assert!(asked.elapsed() < Duration::from_secs(2), "{stderr}");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("quitting now"), "{stderr}");
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// Regression: with `--state-dir`, records sent to `/dev/null` (to keep only a WARC file) made
/// every periodic sync fail with EINVAL, and the crawl stopped early with exit code 2.
#[test]
fn records_to_dev_null_with_a_state_dir_keep_only_the_warc_file() {
    let site = Site::start(SiteConfig {
        pages_per_host: 100,
        host_configs: vec![HostConfig {
            latency: ms(5),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let warc = dir.path().join("pages.warc.gz");
    let mut args = fast();
    args.extend(
        [
            "--seed",
            &site.web.seeds()[0],
            "--state-dir",
            dir.path().join("state").to_str().unwrap(),
            "--checkpoint-interval",
            "100ms",
            "--connections-per-host",
            "1",
            "--output",
            "/dev/null",
            "--warc",
            warc.to_str().unwrap(),
        ]
        .map(String::from),
    );
    let run = crawl(&args);
    run.assert_success();
    assert!(!run.stderr().contains("could not be"), "{}", run.stderr());
    assert!(
        run.stderr().contains("crawled 100 URLs"),
        "{}",
        run.stderr()
    );
    assert!(dir.path().join("state/checkpoint").is_dir());
    // Numbered files (output.warc_max_bytes): pages-00000.warc.gz, ...
    let written: u64 = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|entry| entry.unwrap())
        .filter(|entry| entry.file_name().to_string_lossy().starts_with("pages"))
        .map(|entry| entry.metadata().unwrap().len())
        .sum();
    assert!(written > 100 * 1000, "{written} bytes of WARC files");
}
