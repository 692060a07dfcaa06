use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use testweb::{HostConfig, SiteConfig};

use crate::util::{Site, crawl, fast, ms, urls_recorded};

/// The journal's promise, with the default settings (a checkpoint every 5 minutes, which
/// none of these runs reaches): killed with SIGKILL at five moments and resumed each time,
/// the crawl fetches the whole site, and repeats at most what was in flight or completed
/// within the last sync interval of each kill.
#[test]
fn killed_again_and_again_the_crawl_loses_nothing_and_repeats_little() {
    let site = Site::start(SiteConfig {
        pages_per_host: 1000,
        host_configs: vec![HostConfig {
            latency: ms(20),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state = state.to_str().unwrap();
    const CONNECTIONS: usize = 4;
    let mut base = fast();
    base.extend(
        [
            "--state-dir",
            state,
            "--connections-per-host",
            &CONNECTIONS.to_string(),
        ]
        .map(String::from),
    );
    // Kill points, in requests since the run started: varied, and deterministic.
    let kills = [200, 150, 250, 120, 180];
    let mut outputs = Vec::new();
    for (run, &after) in kills.iter().enumerate() {
        let out = tmp.path().join(format!("run-{run}.jsonl"));
        let mut args = base.clone();
        if run == 0 {
            args.extend(["--seed".to_owned(), site.web.seeds()[0].clone()]);
        } else {
            args.push("--resume".to_owned());
        }
        args.extend(["--output".to_owned(), out.to_str().unwrap().to_owned()]);
        let start = site.web.requests().len();
        let mut child = Command::new(env!("CARGO_BIN_EXE_crawler"))
            .args(&args)
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        while site.web.requests().len() < start + after && Instant::now() < deadline {
            assert!(child.try_wait().unwrap().is_none(), "run {run} ended early");
            std::thread::sleep(ms(2));
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        outputs.push(out);
    }
    let last = tmp.path().join("last.jsonl");
    let mut args = base.clone();
    args.extend(["--resume".to_owned(), "--output".to_owned()]);
    args.push(last.to_str().unwrap().to_owned());
    let run = crawl(&args);
    run.assert_success();
    outputs.push(last);

    let mut recorded: BTreeMap<String, usize> = BTreeMap::new();
    for out in &outputs {
        for url in urls_recorded(out) {
            *recorded.entry(url).or_default() += 1;
        }
    }
    let union: BTreeSet<String> = recorded.keys().cloned().collect();
    assert_eq!(
        union,
        site.web.expected_pages(),
        "the runs together fetched the site"
    );
    // Per kill: the fetches in flight, and those completed within one sync interval (100
    // ms at about CONNECTIONS / 20 ms, some 20 pages). Without the journal, each run would
    // start over from the seed, and every page fetched before the last run (250 and more)
    // would be fetched again.
    let bound = kills.len() * (CONNECTIONS + 26);
    let refetched = site
        .web
        .fetch_counts()
        .iter()
        .filter(|(u, n)| !u.ends_with("/robots.txt") && **n > 1)
        .count();
    assert!(
        refetched <= bound,
        "{refetched} URLs requested twice, bound {bound}"
    );
    let twice = recorded.values().filter(|&&n| n > 1).count();
    assert!(twice <= bound, "{twice} URLs recorded twice, bound {bound}");
}

/// Two processes on one state directory would corrupt it: the second is refused.
#[test]
fn a_second_process_on_a_state_directory_in_use_is_refused() {
    let site = Site::start(SiteConfig {
        pages_per_host: 200,
        host_configs: vec![HostConfig {
            latency: ms(50),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("state");
    let state = state.to_str().unwrap();
    let mut args = fast();
    args.extend(["--seed", &site.web.seeds()[0], "--state-dir", state].map(String::from));
    let mut first = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while site.web.requests().is_empty() && Instant::now() < deadline {
        std::thread::sleep(ms(5));
    }
    let second = crawl(&["--resume", "--state-dir", state, "--progress", "off"]);
    first.kill().unwrap();
    first.wait().unwrap();
    second.assert_exit(2);
    assert!(
        second
            .stderr()
            .contains("in use by another crawler process"),
        "{}",
        second.stderr()
    );
}
