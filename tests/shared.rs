//! Several crawler processes sharing one crawl through a real `redis-server` (started by the
//! tests on a free loopback port): each page fetched once by one of them, politeness across
//! them, a process killed with SIGKILL, Redis restarted, Redis unreachable.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use testweb::{HostConfig, SiteConfig};

use crate::redis_server::{RedisCluster, RedisServer};
use crate::util::{
    Site, address_limited, address_limited_to, assert_address_limits_held, assert_spaced, fast, ms,
    names_on_one_address, names_on_one_address_answering, page_request_times, records_in,
    urls_recorded, wait_or_kill, wait_until,
};

/// A crawler process of the shared crawl on `redis`, writing its records to `out`.
fn start(redis: &str, seeds: &[String], out: &Path, extra: &[&str]) -> Child {
    let mut args = fast();
    if extra.contains(&"--config") {
        // The test's own config file instead of the local profile.
        let at = args.iter().position(|a| a == "--config").unwrap();
        args.drain(at..at + 2);
    }
    args.extend(["--redis".to_owned(), redis.to_owned()]);
    for seed in seeds {
        args.extend(["--seed".to_owned(), seed.clone()]);
    }
    args.extend(["--output".to_owned(), out.to_str().unwrap().to_owned()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let mut command = Command::new(env!("CARGO_BIN_EXE_crawler"));
    // CRAWLER_TEST_LOG (e.g. shared=trace,warn) to see more when a test fails: the
    // log then goes to crawler-N.jsonl.log in the temporary directory, as much as it is, and
    // outlives the test's own files. Without it, the crawler's own default filter, as a user
    // running it gets.
    match std::env::var("CRAWLER_TEST_LOG") {
        Ok(filter) => command.env("RUST_LOG", filter),
        Err(_) => command.env_remove("RUST_LOG"),
    };
    command
        .args(&args)
        .stdout(Stdio::null())
        .stderr(match std::env::var_os("CRAWLER_TEST_LOG") {
            Some(_) => {
                let name = out.file_name().unwrap().to_string_lossy();
                let log = std::env::temp_dir().join(format!("crawler-{name}.log"));
                Stdio::from(std::fs::File::create(log).unwrap())
            }
            None => Stdio::piped(),
        })
        .spawn()
        .expect("the crawler runs")
}

/// Waits for a process to end (two minutes at most), and checks it succeeded.
fn finish(child: Child) -> String {
    let (output, hung) = wait_or_kill(child, Duration::from_secs(120));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!hung, "a crawler hung: {stderr}");
    assert!(output.status.success(), "a crawler failed: {stderr}");
    stderr
}

/// Waits for a process that is to fail (a minute at most), and checks its exit code; its
/// standard error.
fn exits_with(child: Child, code: i32) -> String {
    let (output, hung) = wait_or_kill(child, Duration::from_secs(60));
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!hung, "a crawler hung: {stderr}");
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    stderr
}

/// The most leases a whole-crawl summary line in `stderr` says came back from processes
/// that stopped (`N leases came back`).
fn leases_came_back(stderr: &str) -> u64 {
    stderr
        .lines()
        .filter_map(|line| {
            let (before, _) = line.split_once(" came back from processes")?;
            before.rsplit(' ').nth(1)?.replace(',', "").parse().ok()
        })
        .max()
        .unwrap_or(0)
}

/// Where each of `n` processes writes its records, in `dir`.
fn record_files(dir: &Path, n: usize) -> Vec<PathBuf> {
    (0..n).map(|i| dir.join(format!("{i}.jsonl"))).collect()
}

/// How many times each URL was recorded, over these record files.
fn recorded(outs: &[PathBuf]) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for out in outs {
        for url in urls_recorded(out) {
            *counts.entry(url).or_default() += 1;
        }
    }
    counts
}

/// One process per record file, all of the crawl on `redis` with the same seeds and flags.
fn start_all(redis: &str, seeds: &[String], outs: &[PathBuf], extra: &[&str]) -> Vec<Child> {
    outs.iter()
        .map(|out| start(redis, seeds, out, extra))
        .collect()
}

/// Waits for every process (see [`finish`]); their standard errors, one after the other.
fn finish_all(children: Vec<Child>) -> String {
    children.into_iter().map(finish).collect()
}

/// The pages the site expects that have no record in any of `outs`.
fn missing_pages(site: &Site, outs: &[PathBuf]) -> Vec<String> {
    let counts = recorded(outs);
    site.web
        .expected_pages()
        .into_iter()
        .filter(|page| !counts.contains_key(page))
        .collect()
}

/// Every page the site expects has a record in one of `outs` (some may have two).
fn assert_every_page_recorded(site: &Site, outs: &[PathBuf]) {
    assert_every_page_recorded_after(site, outs, "");
}

/// [`assert_every_page_recorded`], saying on failure whether the server was asked for each
/// missing page, and what the processes printed (`stderr`).
fn assert_every_page_recorded_after(site: &Site, outs: &[PathBuf], stderr: &str) {
    let missing = missing_pages(site, outs);
    if missing.is_empty() {
        return;
    }
    let roots = site.web.roots();
    let requested: BTreeSet<String> = site
        .web
        .requests()
        .into_iter()
        .map(|r| format!("{}{}", roots[r.host].trim_end_matches('/'), r.path))
        .collect();
    let asked: Vec<bool> = missing.iter().map(|m| requested.contains(m)).collect();
    panic!(
        "{} never recorded, e.g. {:?} (requested from the server: {asked:?}); the processes \
         said:\n{stderr}",
        missing.len(),
        missing.first()
    );
}

fn site(hosts: usize, pages: u64, latency: Duration) -> Site {
    Site::start(SiteConfig {
        hosts,
        pages_per_host: pages,
        host_configs: vec![
            HostConfig {
                latency,
                ..HostConfig::default()
            };
            hosts
        ],
        ..SiteConfig::default()
    })
}

#[test]
fn two_processes_fetch_every_page_once_between_them() {
    let redis = RedisServer::start();
    // Sixteen hosts: each bucket has an owner that asks for its hosts first (the other
    // process takes only what its owner leaves ready), so with three hosts one process could
    // own them all (one time in four) and rightly do the whole crawl.
    const HOSTS: usize = 16;
    let site = site(HOSTS, 60, ms(5));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    // Both started with the same command and seeds, as the README says.
    let children = start_all(&redis.url(), &site.web.roots(), &outs, &[]);
    let stderrs: Vec<String> = children.into_iter().map(finish).collect();
    let counts = recorded(&outs);
    let union: BTreeSet<String> = counts.keys().cloned().collect();
    assert_eq!(union, site.web.expected_pages());
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "recorded twice: {twice:?}");
    // Each record names the page that led to it, whichever process fetched that page; a
    // seed names none.
    let roots = site.web.roots();
    for out in &outs {
        for line in std::fs::read_to_string(out).unwrap().lines() {
            let record: serde_json::Value = serde_json::from_str(line).unwrap();
            let url = record["url"].as_str().unwrap();
            let from = &record["from"];
            if roots.iter().any(|r| r == url) {
                assert!(from.is_null(), "{url}: from {from}");
            } else {
                let from = from.as_str().unwrap_or_else(|| panic!("{url} has no from"));
                assert!(union.contains(from), "{url}: from {from}, not crawled");
            }
        }
    }
    for host in 0..HOSTS {
        let pages = site
            .web
            .requests()
            .iter()
            .filter(|r| r.host == host && r.path != "/robots.txt")
            .count();
        let expected = site
            .web
            .expected_pages()
            .iter()
            .filter(|u| u.starts_with(&site.web.roots()[host]))
            .count();
        assert_eq!(pages, expected, "host {host}: each page requested once");
    }
    // Both did part of the work, and each summary speaks of the whole crawl.
    for (out, stderr) in outs.iter().zip(&stderrs) {
        assert!(
            !urls_recorded(out).is_empty(),
            "one process did nothing: {stderr}"
        );
        assert!(stderr.contains("whole crawl"), "{stderr}");
    }
}

#[test]
fn a_host_gets_its_delay_and_one_connection_across_processes() {
    let redis = RedisServer::start();
    let site = site(1, 12, ms(10));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let polite = ["--delay", "150ms", "--connections-per-host", "1"];
    crawl_politely_in_two(&redis, &site, &outs, &polite);
}

#[test]
fn a_hosts_own_delay_and_connections_hold_across_processes() {
    let redis = RedisServer::start();
    let site = site(1, 12, ms(10));
    let tmp = tempfile::tempdir().unwrap();
    // The crawl's politeness is the local profile's (no delay, many connections); the
    // site's host has its own, from [[hosts]].
    let config = tmp.path().join("crawl.toml");
    let local =
        std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/local.toml")).unwrap();
    std::fs::write(
        &config,
        format!("{local}\n[[hosts]]\nmatch = \"127.0.0.1\"\ndelay = \"150ms\"\nconnections = 1\n"),
    )
    .unwrap();
    let config = config.to_str().unwrap();
    let outs = record_files(tmp.path(), 2);
    crawl_politely_in_two(&redis, &site, &outs, &["--config", config]);
}

#[test]
fn ten_names_on_one_address_share_its_limits_across_processes() {
    let redis = RedisServer::start();
    let site = names_on_one_address(10, 2);
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let flags = address_limited(&site);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    finish_all(start_all(&redis.url(), &site.web.roots(), &outs, &flags));
    assert_eq!(
        recorded(&outs).keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    assert_address_limits_held(&site);
}

/// An address whose connections, not its delay, hold it back (two, for 20 hosts answering
/// after 40 ms): both processes' requests wait in place or are held off in Redis, none is
/// lost, and the address never has more than two in flight.
#[test]
fn a_full_address_holds_its_connections_across_processes_and_loses_no_page() {
    let redis = RedisServer::start();
    let site = names_on_one_address_answering(20, 6, ms(40));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let flags = address_limited_to(&site, 2, "0");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    finish_all(start_all(&redis.url(), &site.web.roots(), &outs, &flags));
    assert_eq!(
        recorded(&outs).keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    let most = site.web.max_in_flight_at_address(0);
    assert!((1..=2).contains(&most), "{most} in flight at the address");
}

/// Leases given back to wait for their address's turn, as the processes' summaries (their
/// `stderr`) count them.
fn given_back(stderr: &str) -> u64 {
    const SAID: &str = "this process gave back ";
    stderr
        .lines()
        .filter_map(|line| line.trim().strip_prefix(SAID)?.split(' ').next())
        .map(|n| n.replace(',', "").parse::<u64>().unwrap())
        .sum()
}

/// The Redis requests the processes sent, as their summaries (their `stderr`) say.
fn redis_requests(stderr: &str) -> u64 {
    const SAID: &str = "this process sent ";
    stderr
        .lines()
        .filter_map(|line| Some(line.split_once(SAID)?.1.split(' ').next()?.replace(',', "")))
        .map(|n| n.parse::<u64>().unwrap())
        .sum()
}

/// Regression: at an address whose connections bind, the leases of the tasks beyond its
/// lines (three tasks a fetch, 16 places in line a connection) went back to Redis and came
/// again, about twice a page, each a script; they wait parked in their process now (or, at
/// an address another process holds, held off in this one's memory), and every page is
/// fetched once.
#[test]
fn leases_beyond_a_full_address_lines_wait_parked_rather_than_go_back() {
    let redis = RedisServer::start();
    let site = names_on_one_address_answering(20, 30, ms(10));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let flags = address_limited_to(&site, 2, "0");
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let stderr = finish_all(start_all(&redis.url(), &site.web.roots(), &outs, &flags));
    let counts = recorded(&outs);
    assert_eq!(
        counts.keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    assert!(counts.values().all(|&n| n == 1), "a page recorded twice");
    let pages = counts.len() as u64;
    // The summaries, which the counts are read from, are there.
    assert_eq!(stderr.matches("this process sent").count(), 2, "{stderr}");
    let (given_back, requests) = (given_back(&stderr), redis_requests(&stderr));
    eprintln!("given back: {given_back}, Redis requests: {requests}, for {pages} pages");
    // 3.8 a page on 2026-12-06 (a small crawl: heartbeats and polls weigh); a script a
    // turn, or a lease back through Redis a turn, would add two or more.
    assert!(
        requests <= 5 * pages,
        "{requests} Redis requests for {pages} pages"
    );
}

/// Runs two processes of one crawl of a one-host site with `extra` flags, and checks from
/// the server's log that the host had one connection at a time and 150 ms between starts,
/// whichever process fetched.
fn crawl_politely_in_two(redis: &RedisServer, site: &Site, outs: &[PathBuf], extra: &[&str]) {
    let children = start_all(&redis.url(), &site.web.roots(), outs, extra);
    finish_all(children);
    assert_eq!(
        recorded(outs).keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    assert_eq!(site.web.max_in_flight(0), 1, "one connection at a time");
    // 150 ms between starts; 50 ms of margin for loopback jitter.
    assert_spaced(&mut page_request_times(site), ms(100), "the host");
}

#[test]
fn a_process_killed_mid_crawl_loses_nothing() {
    let redis = RedisServer::start();
    // Hosts in many buckets: each process owns about half of them.
    let site = site(32, 25, ms(20));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    const CONCURRENCY: usize = 8;
    let concurrency = CONCURRENCY.to_string();
    let extra = ["--lease-time", "2s", "--concurrency", &concurrency];
    let mut victim = start(&redis.url(), &site.web.roots(), &outs[0], &extra);
    let survivor = start(&redis.url(), &site.web.roots(), &outs[1], &extra);
    wait_until("the first process wrote nothing", || {
        assert!(victim.try_wait().unwrap().is_none(), "it ended early");
        urls_recorded(&outs[0]).len() >= 100
    });
    victim.kill().unwrap(); // SIGKILL
    victim.wait().unwrap();
    let stderr = finish(survivor);
    let counts = recorded(&outs);
    let union: BTreeSet<String> = counts.keys().cloned().collect();
    let expected = site.web.expected_pages();
    let missing: Vec<_> = expected.difference(&union).collect();
    let extra: Vec<_> = union.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}, not expected {extra:?}; {stderr}"
    );
    // Repeated: at most what the killed process had leased (in flight, or waiting for a
    // worker) and not recorded.
    let repeats: usize = counts.values().map(|n| n - 1).sum();
    assert!(repeats <= 2 * CONCURRENCY, "{repeats} repeated");
    assert!(leases_came_back(&stderr) > 0, "{stderr}");
}

#[test]
fn a_process_stopping_early_has_sent_every_completion() {
    let redis = RedisServer::start();
    let site = site(2, 150, ms(1));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    // Its completions are sent while its workers fetch on: when it stops, each one whose
    // record it wrote has reached Redis, so nothing is left leased to come back later...
    let first = start(
        &redis.url(),
        &site.web.roots(),
        &outs[0],
        &["--max-pages", "40"],
    );
    let stderr = finish(first);
    assert_eq!(urls_recorded(&outs[0]).len(), 40, "{stderr}");
    assert!(stderr.contains(" 0 leased"), "{stderr}");
    // ...and a process joining fetches the rest, none of it again.
    finish(start(&redis.url(), &[], &outs[1], &[]));
    let counts = recorded(&outs);
    assert_eq!(
        counts.keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    let twice: Vec<_> = counts.iter().filter(|(_, n)| **n > 1).collect();
    assert!(twice.is_empty(), "recorded twice: {twice:?}");
}

#[test]
fn a_redis_restart_mid_crawl_is_waited_out() {
    let mut redis = RedisServer::start_with(&["--appendonly", "yes", "--save", ""]);
    let site = site(1, 600, ms(10));
    let tmp = tempfile::tempdir().unwrap();
    let out = tmp.path().join("0.jsonl");
    let child = start(&redis.url(), &site.web.roots(), &out, &[]);
    wait_until("nothing recorded", || urls_recorded(&out).len() >= 100);
    redis.restart();
    let stderr = finish(child);
    // One line for the blip, not one per worker waiting it out.
    assert_eq!(stderr.matches("; retrying").count(), 1, "{stderr}");
    assert_eq!(stderr.matches("answers again").count(), 1, "{stderr}");
    let counts = recorded(std::slice::from_ref(&out));
    assert_eq!(
        counts.keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
}

/// Regression: Redis rolled back (a `SAVE`, more crawling, `kill -9`, restarted from the
/// snapshot, as a crash without AOF or a failover to a lagging replica leaves it): 431 of
/// these 3,000 pages never had a record, as the processes' lists of links already sent (and
/// their copies of the seen-test) held URLs the snapshot had forgotten, and they never sent
/// them again. Now a process that finds Redis went back forgets them (and tells the others):
/// every page has its record, some twice. (Tokens handed out twice are pinned by the
/// shared crate's `a_token_is_not_handed_out_again_and_completes_only_its_own_url`.)
#[test]
fn a_redis_rolled_back_to_an_older_snapshot_loses_no_page() {
    let mut redis = RedisServer::start();
    let site = site(20, 150, ms(1));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let children = start_all(
        &redis.url(),
        &site.web.roots(),
        &outs,
        &["--lease-time", "2s"],
    );
    let requests = || site.web.requests().len();
    wait_until("the crawl stalled", || requests() >= 600);
    redis.cli(&["SAVE"]);
    wait_until("the crawl stalled", || requests() >= 1_500);
    redis.crash_and_restart();
    let stderr = finish_all(children);
    assert_every_page_recorded_after(&site, &outs, &stderr);
    // Said once by each process that saw it, not once per bucket that showed it.
    let said = stderr
        .lines()
        .filter(|line| {
            line.contains("WARN")
                && (line.contains("went back to an older state")
                    || line.contains("another server than before"))
        })
        .count();
    // (Unless the log went to files, CRAWLER_TEST_LOG.)
    let logged_apart = std::env::var_os("CRAWLER_TEST_LOG").is_some();
    assert!(
        logged_apart || (1..=2).contains(&said),
        "{said} lines for one rollback:\n{stderr}"
    );
}

/// Regression: a replica promoted mid-crawl (the master killed with SIGKILL, the replica made
/// master, the crawl's address moved to it, as a failover does): replication is
/// asynchronous, so the replica may be a little behind, which the processes take as Redis
/// going back in time. Every page still gets its record, and both processes end.
#[test]
fn a_replica_promoted_mid_crawl_loses_no_page() {
    let mut master = RedisServer::start();
    let replica = RedisServer::start_with(&[
        "--save",
        "",
        "--appendonly",
        "no",
        "--replicaof",
        "127.0.0.1",
        &master.port.to_string(),
    ]);
    let proxy = crate::redis_server::DelayProxy::start(master.port, Duration::ZERO);
    let site = site(20, 150, ms(1));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let children = start_all(
        &proxy.url(),
        &site.web.roots(),
        &outs,
        &["--lease-time", "2s"],
    );
    wait_until("the crawl stalled", || site.web.requests().len() >= 1_200);
    // A failover: the replica promoted, the address moved to it, the old master gone (in
    // that order, so that no new connection reaches the dead master's port, which another
    // test's server may take).
    replica.cli(&["REPLICAOF", "NO", "ONE"]);
    proxy.switch_to(replica.port);
    master.kill();
    let stderr = finish_all(children);
    let missing = missing_pages(&site, &outs);
    assert!(missing.is_empty(), "{missing:?} never recorded; {stderr}");
}

/// Regression: with many buckets and Redis a few milliseconds away, every page was fetched and
/// then both processes asked Redis for work for ever: a search ran until a sweep asked no
/// bucket, and an empty bucket was due again after a second, less than a sweep took.
#[test]
fn many_buckets_far_away_still_end() {
    let redis = RedisServer::start();
    // A round trip of 4 ms: a sweep of 4,096 buckets, 8 at a time, takes two seconds.
    let proxy = crate::redis_server::DelayProxy::start(redis.port, ms(2));
    let site = site(4, 10, ms(1));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let children = start_all(
        &proxy.url(),
        &site.web.roots(),
        &outs,
        &["--redis-buckets", "4096"],
    );
    finish_all(children);
    let ended = std::time::SystemTime::now();
    let counts = recorded(&outs);
    assert_eq!(
        counts.keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    // Within seconds of the last record: the check that the crawl is over reads every
    // bucket twice, 4,096 of them 4 ms away.
    let last_record = outs
        .iter()
        .map(|out| std::fs::metadata(out).unwrap().modified().unwrap())
        .max()
        .unwrap();
    let after = ended.duration_since(last_record).unwrap_or_default();
    assert!(
        after < Duration::from_secs(15),
        "ended {after:?} after its last record"
    );
}

/// Regression: Redis killed behind a proxy that kept the process's connection open and
/// carried nothing on it (as a firewall that forgot the connection, or a server gone
/// without a reset): every request timed out on it and was sent on it again, for ever; the
/// process never ended. A request that times out now has the connection it was sent on made
/// anew.
#[test]
fn a_connection_that_never_answers_again_is_made_anew() {
    let redis = RedisServer::start();
    let proxy = crate::redis_server::DelayProxy::start(redis.port, Duration::ZERO);
    let site = site(4, 60, ms(20));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 1);
    let child = start(
        &proxy.url(),
        &site.web.roots(),
        &outs[0],
        &["--delay", "20ms"],
    );
    wait_until("the process wrote nothing", || {
        urls_recorded(&outs[0]).len() >= 20
    });
    proxy.black_hole();
    let stderr = finish(child);
    assert_every_page_recorded_after(&site, &outs, &stderr);
    assert!(stderr.contains("timed out; retrying"), "{stderr}");
}

/// Regression: a process whose link to Redis stalls (connections open, nothing going through)
/// for longer than its leases last: the other process takes its leases back when they
/// expire and fetches them, and the stalled one's completions, arriving late, are refused.
/// Nothing is lost, and both end.
#[test]
fn a_process_stalled_longer_than_its_leases_loses_nothing() {
    let redis = RedisServer::start();
    let proxy = crate::redis_server::DelayProxy::start(redis.port, Duration::ZERO);
    // Pages that take 300 ms each: the first process holds leases of pages in flight when
    // its link stalls, their completions held with it.
    let site = site(4, 50, ms(300));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let extra = [
        "--lease-time",
        "2s",
        "--delay",
        "20ms",
        "--concurrency",
        "8",
    ];
    // The first alone until it has leases of every host; then the other joins, and the
    // first's link stalls.
    let stalled = start(&proxy.url(), &site.web.roots(), &outs[0], &extra);
    wait_until("the first process wrote nothing", || {
        urls_recorded(&outs[0]).len() >= 5
    });
    let direct = start(&redis.url(), &site.web.roots(), &outs[1], &extra);
    // Present before the stall (a machine slow to start it had the first crawl everything
    // after the stall), and the stall longer than a process counts as present unheard
    // (5 s), so that the second takes every bucket whose hold lapsed, not only its share:
    // the four hosts' buckets may all be the first's.
    wait_until("the second process never said it was present", || {
        redis.cli(&["ZCARD", "crawl:procs"]).trim() == "2"
    });
    proxy.stall(Duration::from_secs(7));
    let stderr = finish_all(vec![stalled, direct]);
    assert_every_page_recorded(&site, &outs);
    assert!(
        leases_came_back(&stderr) > 0,
        "no lease came back: {stderr}"
    );
}

/// Regression: a script that ran but whose answer was lost (a timeout, a dropped connection)
/// was sent again, and its second run did not answer what the first did: a batch's
/// completions came back "not held" and their records were never written; a lease script's
/// leases waited for their deadline. Now a script sent again answers from its first run.
#[test]
fn answers_cut_off_lose_no_record_and_strand_no_lease() {
    let redis = RedisServer::start();
    // One answer in 25 cut off, the connection with it.
    let proxy = crate::redis_server::CutProxy::start(redis.port, 25);
    // Error pages: their records are written once Redis has answered the completion.
    let specials: Vec<testweb::Special> = (0..40)
        .map(|i| testweb::Special::new(format!("/broken/{i}"), testweb::SpecialKind::status(500)))
        .collect();
    let site = Site::start(SiteConfig {
        hosts: 2,
        pages_per_host: 100,
        host_configs: vec![
            HostConfig {
                latency: ms(1),
                specials,
                ..HostConfig::default()
            };
            2
        ],
        ..SiteConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let started = Instant::now();
    let children = start_all(
        &proxy.url(),
        &site.web.roots(),
        &outs,
        &["--lease-time", "60s", "--max-attempts", "1"],
    );
    finish_all(children);
    assert_every_page_recorded(&site, &outs);
    // A stranded lease would hold its URL for the whole lease time.
    assert!(
        started.elapsed() < Duration::from_secs(40),
        "{:?}",
        started.elapsed()
    );
}

/// Regression: each process read robots.txt for itself (with two processes on 100 hosts, 100
/// repeated requests). Now the first process to need a host's file fetches it and stores
/// it in Redis, and the others use it.
#[test]
fn robots_txt_is_fetched_once_per_host_for_the_whole_crawl() {
    let redis = RedisServer::start();
    let site = site(10, 40, ms(2));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 3);
    let children = start_all(&redis.url(), &site.web.roots(), &outs, &[]);
    finish_all(children);
    let mut robots = BTreeMap::new();
    for request in site.web.requests() {
        if request.path == "/robots.txt" {
            *robots.entry(request.host).or_insert(0) += 1;
        }
    }
    assert_eq!(robots.len(), 10, "{robots:?}");
    assert!(robots.values().all(|&n| n == 1), "{robots:?}");
    assert_eq!(recorded(&outs).len(), 400);
}

/// Regression: `--per-host-pages` was charged by the embedded frontier's admission only; two
/// processes on Redis fetched every page. The budget now holds for the crawl, in Redis, and
/// both stores admit the same number of pages per host.
#[test]
fn the_per_host_page_budget_holds_for_the_crawl_on_either_store() {
    let site = site(3, 100, ms(1));
    let per_host = |urls: Vec<String>| {
        let mut counts = BTreeMap::new();
        for url in urls {
            let host = url.split('/').nth(2).unwrap_or_default().to_owned();
            *counts.entry(host).or_insert(0) += 1;
        }
        counts
    };
    let mut args = fast();
    for root in site.web.roots() {
        args.extend(["--seed".to_owned(), root]);
    }
    args.extend(["--per-host-pages".to_owned(), "10".to_owned()]);
    let embedded = crate::util::crawl(&args);
    embedded.assert_success();
    let embedded = per_host(embedded.records.keys().cloned().collect());

    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let children = start_all(
        &redis.url(),
        &site.web.roots(),
        &outs,
        &["--per-host-pages", "10"],
    );
    let stderr = finish_all(children);
    let counts = recorded(&outs);
    assert!(counts.values().all(|&n| n == 1), "a URL recorded twice");
    let shared = per_host(counts.into_keys().collect());
    assert_eq!(shared, embedded);
    assert!(shared.values().all(|&n| n == 10), "{shared:?}");
    assert!(stderr.contains("host budget"), "{stderr}");
}

/// Regression: the content-seen test was each process's own: a body one process had read was
/// new to the next. The first process reads a mirror or two and stops; the second finishes
/// the crawl, and takes every mirror it reads for a duplicate.
#[test]
fn a_body_read_by_one_process_is_a_duplicate_for_another() {
    let (port, _) = crate::util::serve(|path| match path {
        "/" => (
            200,
            "text/html",
            (0..10)
                .map(|i| format!("<a href=\"/m{i}/\">m</a>"))
                .collect::<String>()
                .into_bytes(),
        ),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        mirror if mirror.starts_with("/m") && mirror.ends_with('/') => (
            200,
            "text/html",
            b"<p>the same page</p><a href=\"next\">next</a>".to_vec(),
        ),
        other => (200, "text/html", format!("<p>{other}</p>").into_bytes()),
    });
    let root = format!("http://127.0.0.1:{port}/");
    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    // The root and two more: at least one mirror, as the root links to nothing else.
    finish(start(
        &redis.url(),
        std::slice::from_ref(&root),
        &outs[0],
        &["--max-pages", "3"],
    ));
    let stderr = finish(start(&redis.url(), &[], &outs[1], &[]));
    let mirrors = |out: &PathBuf| -> Vec<(String, bool)> {
        std::fs::read_to_string(out)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
            .filter(|r| r["url"].as_str().unwrap().ends_with('/') && r["url"] != root.as_str())
            .map(|r| {
                (
                    r["url"].as_str().unwrap().to_owned(),
                    r["duplicate"] == true,
                )
            })
            .collect()
    };
    let (first, second) = (mirrors(&outs[0]), mirrors(&outs[1]));
    assert!(
        !first.is_empty() && !second.is_empty(),
        "{first:?} {second:?}"
    );
    assert_eq!(first.len() + second.len(), 10, "{first:?} {second:?}");
    let new: Vec<_> = first
        .iter()
        .chain(&second)
        .filter(|(_, dup)| !dup)
        .collect();
    assert_eq!(new.len(), 1, "{first:?} {second:?}");
    assert!(second.iter().all(|(_, dup)| *dup), "{second:?}");
    // Their links followed all the same.
    let counts = recorded(&outs);
    for i in 0..10 {
        assert!(
            counts.contains_key(&format!("{root}m{i}/next")),
            "{counts:?}"
        );
    }
    assert!(stderr.contains("by a process of the crawl"), "{stderr}");
}

/// Regression: which URLs are sitemaps, and at which index level, was each process's own: a
/// sitemap an index listed, leased by a process that had not read the index, was read as a
/// page, and its pages were never reached. The first process reads the index given on its
/// command line and stops; the second, given nothing, reads the sitemap the index listed.
#[test]
fn a_sitemap_is_one_whichever_process_leases_it() {
    let (port, _) = crate::util::serve(|path| {
        let xml = |body: String| (200, "application/xml", body.into_bytes());
        let urls = |locs: &[String], tag: &str| {
            let inner: String = locs
                .iter()
                .map(|l| format!("<{tag}><loc>{l}</loc></{tag}>"))
                .collect();
            inner
        };
        let root = |port: &str| format!("http://127.0.0.1:{port}");
        match path {
            "/robots.txt" => (404, "text/plain", Vec::new()),
            index if index.starts_with("/index/") => {
                let port = &index["/index/".len()..];
                let child = vec![format!("{}/child/{port}", root(port))];
                xml(format!(
                    "<sitemapindex xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{}</sitemapindex>",
                    urls(&child, "sitemap")
                ))
            }
            child if child.starts_with("/child/") => {
                let port = &child["/child/".len()..];
                let pages: Vec<String> =
                    (0..3).map(|i| format!("{}/page{i}", root(port))).collect();
                xml(format!(
                    "<urlset xmlns=\"http://www.sitemaps.org/schemas/sitemap/0.9\">{}</urlset>",
                    urls(&pages, "url")
                ))
            }
            _ => (200, "text/html", b"<p>a page</p>".to_vec()),
        }
    });
    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let index = format!("http://127.0.0.1:{port}/index/{port}");
    // Bodies that look like sitemaps are not taken for ones: only what a sitemap lists is.
    let flags = ["--sitemaps", "false"];
    let first = start(
        &redis.url(),
        &[],
        &outs[0],
        &[&flags[..], &["--sitemap", &index, "--max-pages", "1"]].concat(),
    );
    finish(first);
    assert_eq!(urls_recorded(&outs[0]), vec![index.clone()]);
    finish(start(&redis.url(), &[], &outs[1], &flags));
    let counts = recorded(&outs);
    for i in 0..3 {
        let page = format!("http://127.0.0.1:{port}/page{i}");
        assert!(
            counts.contains_key(&page),
            "{page} never reached: {counts:?}"
        );
    }
}

/// Regression: a seed's redirect to another host widened the scope of the process that saw it
/// only: a running process that leased the target's pages dropped their links as out of
/// scope. The target is in Redis before it is queued, and a process leasing a URL at depth 0
/// reads the targets first.
#[test]
fn a_seeds_redirect_widens_the_scope_of_every_process() {
    let (b, _) = crate::util::serve(|path| match path {
        "/" => (
            200,
            "text/html",
            b"<a href=\"/x\">x</a> <a href=\"/y\">y</a>".to_vec(),
        ),
        "/x" => (200, "text/html", b"<a href=\"/z\">z</a>".to_vec()),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (200, "text/html", b"<p>page</p>".to_vec()),
    });
    let target: &'static str = format!("http://127.0.0.1:{b}/").leak();
    let (a, _) = crate::util::serve(move |path| match path {
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (301, target, Vec::new()),
    });
    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    // Both hosts are on loopback: the guard is lifted (the target is not a seed it trusts).
    // The second runs before the crawl exists, so it joins with no target in its scope; the
    // first stops after one page: when that is the seed's redirect, the target's pages are
    // all the second's to fetch.
    let flags = ["--allow-private-addresses", "true"];
    let second = start(&redis.url(), &[], &outs[1], &flags);
    let first = start(
        &redis.url(),
        &[format!("http://127.0.0.1:{a}/")],
        &outs[0],
        &[&flags[..], &["--max-pages", "1"]].concat(),
    );
    finish_all(vec![first, second]);
    let counts = recorded(&outs);
    for path in ["", "x", "y", "z"] {
        let url = format!("http://127.0.0.1:{b}/{path}");
        assert!(counts.contains_key(&url), "{url} not recorded: {counts:?}");
    }
}

#[test]
fn an_unreachable_redis_is_a_clear_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let url = format!("redis://127.0.0.1:{port}");
    let started = Instant::now();
    let out = tempfile::tempdir().unwrap();
    let child = start(
        &url,
        &["http://127.0.0.1:1/".into()],
        &out.path().join("r"),
        &[],
    );
    let stderr = exits_with(child, 2);
    assert!(stderr.contains(&url), "{stderr}");
    assert!(started.elapsed() < Duration::from_secs(20));
}

/// A server on that port that answers, but not in Redis's protocol (here an HTTP server):
/// said in a sentence, not in the client parser's bytes.
#[test]
fn a_server_that_does_not_speak_redis_is_a_clear_error() {
    let web = site(1, 2, ms(0));
    let root = web.web.roots().remove(0);
    let port = url::Url::parse(&root).unwrap().port().unwrap();
    let out = tempfile::tempdir().unwrap();
    let child = start(
        &format!("redis://127.0.0.1:{port}"),
        std::slice::from_ref(&root),
        &out.path().join("r"),
        &[],
    );
    let stderr = exits_with(child, 2);
    assert!(
        stderr.contains("does not speak Redis's protocol"),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
}

/// A bad seed stops the crawler before the shared crawl is created: nothing is left in
/// Redis, and the corrected command starts the crawl.
#[test]
fn a_bad_seed_leaves_no_shared_crawl_behind() {
    let redis = RedisServer::start();
    let web = site(1, 3, ms(0));
    let tmp = tempfile::tempdir().unwrap();
    for bad in ["not-a-url", "127.0.0.1:8080", "ftp://example.com/"] {
        let child = start(
            &redis.url(),
            &[bad.to_owned()],
            &tmp.path().join("bad"),
            &[],
        );
        let stderr = exits_with(child, 2);
        assert!(stderr.contains("bad seed"), "{stderr}");
        assert_eq!(redis.cli(&["DBSIZE"]).trim(), "0", "{bad}: Redis written");
    }
    let out = tmp.path().join("good");
    finish(start(&redis.url(), &web.web.roots(), &out, &[]));
    assert_eq!(
        urls_recorded(&out).into_iter().collect::<BTreeSet<_>>(),
        web.web.expected_pages()
    );
}

#[test]
fn joining_needs_a_crawl_and_takes_its_settings() {
    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    // No crawl of that name, and no seeds to start one.
    let child = start(
        &redis.url(),
        &[],
        &tmp.path().join("a"),
        &["--crawl-name", "x"],
    );
    let stderr = exits_with(child, 2);
    assert!(stderr.contains("no crawl named \"x\""), "{stderr}");
    // A crawl started with one delay; a process joining with another is refused, the
    // difference named, unless it says --join: then the crawl's applies.
    let site = site(1, 30, ms(1));
    let first = start(
        &redis.url(),
        &site.web.roots(),
        &tmp.path().join("b"),
        &["--max-pages", "10"],
    );
    finish(first);
    let joiner = start(&redis.url(), &[], &tmp.path().join("c"), &["--delay", "1s"]);
    let stderr = exits_with(joiner, 2);
    assert!(
        stderr.contains("politeness.delay: \"1000ms\" here, \"0\" in the crawl"),
        "{stderr}"
    );
    assert!(stderr.contains("--join"), "{stderr}");
    // The differences never show a secret.
    let joiner = start(
        &redis.url(),
        &[],
        &tmp.path().join("c"),
        &["--proxy", "http://bot:Pr0xyPw@127.0.0.1:9"],
    );
    let stderr = exits_with(joiner, 2);
    assert!(
        stderr.contains("fetch.proxy: \"http://bot:***@127.0.0.1:9\" here"),
        "{stderr}"
    );
    assert!(!stderr.contains("Pr0xyPw"), "{stderr}");
    let joiner = start(
        &redis.url(),
        &[],
        &tmp.path().join("c"),
        &["--delay", "1s", "--join"],
    );
    let stderr = finish(joiner);
    assert!(stderr.contains("its stored settings apply"), "{stderr}");
    assert_eq!(urls_recorded(&tmp.path().join("c")).len(), 20, "{stderr}");
}

/// Processes started together, the one with the seeds last (as README.md's example may run
/// them): the one without seeds waits for the crawl rather than fail.
#[test]
fn a_process_without_seeds_waits_for_the_crawl_to_be_started() {
    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let site = site(1, 20, ms(1));
    let joiner = start(&redis.url(), &[], &tmp.path().join("a"), &[]);
    let first = start(&redis.url(), &site.web.roots(), &tmp.path().join("b"), &[]);
    finish(first);
    finish(joiner);
    let outs = [tmp.path().join("a"), tmp.path().join("b")];
    assert_eq!(recorded(&outs).len(), 20);
}

/// Regression: the same command run again on a finished crawl printed "crawled 0 URLs" and
/// exited 0; a crawl of another site under the default name joined the old crawl and took
/// its settings; a crawl's keys could only be removed by hand.
#[test]
fn a_finished_crawl_says_so_another_site_is_refused_and_removing_starts_anew() {
    let redis = RedisServer::start();
    let tmp = tempfile::tempdir().unwrap();
    let site = site(1, 20, ms(1));
    let roots = site.web.roots();
    finish(start(&redis.url(), &roots, &tmp.path().join("a"), &[]));
    assert_eq!(urls_recorded(&tmp.path().join("a")).len(), 20);

    let again = start(&redis.url(), &roots, &tmp.path().join("b"), &[]);
    let stderr = exits_with(again, 4);
    assert!(stderr.contains("finished at 20"), "{stderr}");
    assert!(stderr.contains("--remove-crawl"), "{stderr}");
    assert!(urls_recorded(&tmp.path().join("b")).is_empty());

    let other = self::site(1, 5, ms(1));
    let refused = start(&redis.url(), &other.web.roots(), &tmp.path().join("c"), &[]);
    let stderr = exits_with(refused, 2);
    assert!(stderr.contains("seeds it does not have"), "{stderr}");

    let remove = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(["--redis", &redis.url(), "--remove-crawl"])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&remove.stderr);
    assert!(remove.status.success(), "{stderr}");
    assert!(stderr.contains("removed the crawl \"crawl\""), "{stderr}");
    assert_eq!(redis.cli(&["DBSIZE"]).trim(), "0");
    // Removed, the same command crawls the site again from the start.
    finish(start(&redis.url(), &roots, &tmp.path().join("d"), &[]));
    assert_eq!(urls_recorded(&tmp.path().join("d")).len(), 20);
    let remove = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args([
            "--redis",
            &redis.url(),
            "--crawl-name",
            "nothing",
            "--remove-crawl",
        ])
        .output()
        .unwrap();
    assert_eq!(remove.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&remove.stderr).contains("no crawl named \"nothing\""));
}

/// Regression: the Redis password was printed on an error (`cannot reach Redis at
/// redis://:WrongPw123@...`) and when a process joined, and the crawl's stored settings held
/// the Redis URL. Now every message shows `redis://:***@host` and Redis stores no secret.
#[test]
fn the_redis_password_is_never_printed_nor_stored() {
    let redis = RedisServer::start();
    redis.cli(&["CONFIG", "SET", "requirepass", "S3cretPw"]);
    let with = |password: &str| {
        redis
            .url()
            .replace("redis://", &format!("redis://:{password}@"))
    };
    let tmp = tempfile::tempdir().unwrap();
    let site = site(1, 20, ms(1));

    let wrong = start(
        &with("WrongPw123"),
        &site.web.roots(),
        &tmp.path().join("a"),
        &[],
    );
    let stderr = exits_with(wrong, 2);
    assert!(!stderr.contains("WrongPw123"), "{stderr}");
    assert!(stderr.contains("redis://:***@127.0.0.1:"), "{stderr}");
    assert!(stderr.contains("refused the password"), "{stderr}");

    // Stopped early, so that another process can join it.
    let first = start(
        &with("S3cretPw"),
        &site.web.roots(),
        &tmp.path().join("b"),
        &["--max-pages", "5"],
    );
    let stderr = finish(first);
    assert!(!stderr.contains("S3cretPw"), "{stderr}");
    // A process joining with other settings is told so, with the server's address.
    let joiner = start(
        &with("S3cretPw"),
        &[],
        &tmp.path().join("c"),
        &["--delay", "1ms", "--join"],
    );
    let stderr = finish(joiner);
    assert!(stderr.contains("redis://:***@127.0.0.1:"), "{stderr}");
    assert!(!stderr.contains("S3cretPw"), "{stderr}");
    let auth = ["-a", "S3cretPw", "--no-auth-warning"];
    let mut dump = String::new();
    for key in redis.cli(&[&auth[..], &["KEYS", "*"]].concat()).lines() {
        let kind = redis.cli(&[&auth[..], &["TYPE", key]].concat());
        if kind.trim() == "hash" {
            dump.push_str(&redis.cli(&[&auth[..], &["HGETALL", key]].concat()));
        }
        if kind.trim() == "set" {
            dump.push_str(&redis.cli(&[&auth[..], &["SMEMBERS", key]].concat()));
        }
    }
    assert!(
        dump.contains("settings"),
        "the crawl's record was read: {dump}"
    );
    assert!(!dump.contains("S3cretPw"), "{dump}");
}

/// Regression: slots moved between a cluster's masters mid-crawl (`redis-cli --cluster
/// reshard`). A script run while its bucket's slot was half moved read the keys not moved
/// yet as empty on the new master, or failed half-way on the old one with its first writes
/// made (Redis does not roll a script back). Scripts now refuse to run while their slot is
/// moving (`TRYAGAIN`, waited out like a blip), before any write, so every page gets its
/// record and the reshard completes.
#[test]
fn a_reshard_mid_crawl_loses_no_page() {
    let cluster = RedisCluster::start();
    let site = site(16, 150, ms(2));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    // 150 pages 40 ms apart on each host: the crawl lasts some 6 s, the reshards with it.
    let extra = ["--delay", "40ms", "--concurrency", "16"];
    let children = start_all(&cluster.url(), &site.web.roots(), &outs, &extra);
    let recorded_now = || urls_recorded(&outs[0]).len() + urls_recorded(&outs[1]).len();
    wait_until("nothing recorded", || recorded_now() >= 100);
    let id = |i: usize| cluster.nodes[i].cli(&["CLUSTER", "MYID"]).trim().to_owned();
    let entry = format!("127.0.0.1:{}", cluster.nodes[0].port);
    // A reshard moves the source's lowest slots first, some 5 ms each: as few as take the
    // crawl's first keys on the first master (and back from the second), so that both
    // rounds move keys in use and end well before the crawl does, on a busy machine too.
    // (Moving 1,000 slots took 4 to 6 s, as long as the crawl.)
    let slots = (lowest_slot_with_keys(&cluster.nodes[0]) + 50).to_string();
    for (round, (from, to)) in [(0, 1), (1, 2)].into_iter().enumerate() {
        let out = Command::new("redis-cli")
            .args(["--cluster", "reshard", &entry, "--cluster-from", &id(from)])
            .args(["--cluster-to", &id(to), "--cluster-slots", &slots])
            .arg("--cluster-yes")
            .output()
            .unwrap();
        let said = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success() && !said.contains("ERR"),
            "reshard: {said}"
        );
        // The first reshard at least moved slots under a running crawl.
        let done = recorded_now();
        assert!(
            round > 0 || done < 2400,
            "the crawl was over before the reshard was: {done}"
        );
    }
    let stderr = finish_all(children);
    assert_every_page_recorded(&site, &outs);
    let counts = recorded(&outs);
    assert!(
        counts.values().all(|&n| n == 1),
        "a page recorded twice: {stderr}"
    );
    // The client's own warnings of each slot refresh stay out of a user's way.
    assert!(!stderr.contains(" redis::"), "{stderr}");
}

/// The lowest slot holding a key on `node`, a cluster's master: each key's slot asked of
/// the node (`CLUSTER KEYSLOT`), in one `redis-cli`.
fn lowest_slot_with_keys(node: &RedisServer) -> u32 {
    let keys = node.cli(&["KEYS", "*"]);
    let asks: String = keys
        .lines()
        .map(|key| format!("CLUSTER KEYSLOT \"{key}\"\n"))
        .collect();
    let mut cli = Command::new("redis-cli")
        .args(["-p", &node.port.to_string()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut cli.stdin.take().unwrap(), asks.as_bytes()).unwrap();
    let out = cli.wait_with_output().unwrap();
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|line| line.trim().parse().ok())
        .min()
        .unwrap_or_else(|| panic!("no key on the first master: {keys}"))
}

/// A master of a cluster down for three seconds mid-crawl: a process that hears of it says
/// once that Redis is in trouble and once that it answers again, as with one server, and
/// none of the client's own lines reaches the user; every page gets its record.
#[test]
fn a_cluster_master_down_mid_crawl_is_one_line_each_way() {
    let mut cluster = RedisCluster::start_durable();
    let site = site(16, 100, ms(2));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let extra = ["--delay", "20ms", "--concurrency", "16"];
    let children = start_all(&cluster.url(), &site.web.roots(), &outs, &extra);
    wait_until("nothing recorded", || urls_recorded(&outs[0]).len() >= 50);
    cluster.nodes[1].stop_for(Duration::from_secs(3));
    let stderr: Vec<String> = children.into_iter().map(finish).collect();
    for said in &stderr {
        assert!(said.matches("; retrying").count() <= 1, "{said}");
        assert_eq!(
            said.matches("; retrying").count(),
            said.matches("answers again").count(),
            "{said}"
        );
        assert!(!said.contains(" redis::"), "{said}");
    }
    // Whether a process hears of the outage at all is the client's timing: redis-rs retries
    // a refused connection on its own, with waits that may outlast three seconds, and only a
    // request cut off mid-flight reaches the crawler (about half the runs). What holds either
    // way is above: never more than one line each way, and none of the client's.
    assert_every_page_recorded(&site, &outs);
}

/// A shared crawl runs more worker tasks than `fetch.concurrency`, so that pages waiting
/// for Redis do not idle the fetches, but has no more fetches in flight than it says.
#[test]
fn a_shared_crawl_fetches_no_more_at_once_than_its_concurrency() {
    let redis = RedisServer::start();
    let site = site(1, 200, ms(20));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 1);
    let roots = site.web.roots();
    finish(start(
        &redis.url(),
        &roots,
        &outs[0],
        &["--concurrency", "4"],
    ));
    assert_every_page_recorded(&site, &outs);
    let most = site.web.max_in_flight(0);
    assert!((3..=4).contains(&most), "{most} fetches at once");
}

/// Regression: a lease script handed out as many leases of its first ready host as the host's
/// connection limit allowed (64 in the local profile) before the next host: each process
/// then opened that many connections to one host and kept them idle afterwards. Two
/// processes on 1,000 hosts x 200 pages held some 20,000 connections between them, more
/// than the server could accept, and took six times as long as one process, re-fetching
/// pages whose requests had hung. Leases now go to a bucket's ready hosts in turn, as the
/// embedded frontier hands them out. A shared crawl of 1,000 hosts.
#[test]
fn a_shared_crawl_spreads_its_fetches_over_the_ready_hosts() {
    let redis = RedisServer::start();
    let hosts = 1000;
    let site = site(hosts, 12, ms(20));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let children = start_all(&redis.url(), &site.web.roots(), &outs, &[]);
    finish_all(children);
    assert_every_page_recorded(&site, &outs);
    assert!(recorded(&outs).values().all(|&n| n == 1), "a page twice");
    // 64 fetches of one host are allowed at once; with 200 hosts ready, a handful at most.
    // 64 fetches of one host are allowed at once, and each process runs 384 slots: taken
    // host by host, a host saw 5 at once (the median; up to 10); in turn, 2.
    let mut most: Vec<_> = (0..hosts).map(|h| site.web.max_in_flight(h)).collect();
    most.sort_unstable();
    let median = most[hosts / 2];
    assert!(
        median <= 3,
        "a host saw {median} fetches at once (the median)"
    );
}

/// Page requisites in a shared crawl: the requisite rules are the embedded frontier's
/// (past the scope, one hop), each requisite fetched once by one of the processes, with its
/// record marked and naming its page.
#[test]
fn page_requisites_are_fetched_once_across_processes() {
    use crate::requisites::{PRIVATE_OK, assert_requisites_recorded, styled_site};
    let redis = RedisServer::start();
    let site = styled_site();
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let seeds = [site.web.roots()[0].clone()];
    let flags = [&["--page-requisites", "true"][..], &PRIVATE_OK].concat();
    finish_all(start_all(&redis.url(), &seeds, &outs, &flags));
    let records = records_in(&outs);
    assert_requisites_recorded(&site, &records);
}

/// The budgets per registrable domain hold for a shared crawl as in one process (one rule,
/// `frontier::HostBudget`, charged by the batch script in the bucket that keeps the domain's
/// hosts): two processes crawl exactly ten of a farm's sixty subdomains.
#[test]
fn domain_budgets_hold_across_processes() {
    use crate::budgets::{farm, farm_flags, hosts_of};
    let redis = RedisServer::start();
    let site = farm();
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    // The farm's own flags, the seed among them, given as extra flags: no seeds of start's.
    let mut flags = farm_flags(&site);
    flags.drain(..fast().len());
    flags.extend(["--per-domain-hosts".into(), "10".into()]);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    finish_all(start_all(&redis.url(), &[], &outs, &flags));
    let records = records_in(&outs);
    let records: Vec<&serde_json::Value> = records.iter().collect();
    assert_eq!(hosts_of(&records).len(), 10);
    assert_eq!(records.len(), 10 * 10);
}

/// Regression: a Redis that refused every script at once (here its user's right to `FCALL`
/// taken away mid-crawl, as an operator's ACL might) had the dispatcher ask it again in a
/// loop, thousands of "frontier: ..." lines a second. It is asked again after a pause that
/// doubles, up to 5 s; once Redis answers again, the crawl ends with every page.
#[test]
fn a_redis_refusing_the_scripts_is_asked_again_after_pauses_not_in_a_loop() {
    let redis = RedisServer::start();
    let site = site(4, 50, ms(2));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 1);
    let child = start(
        &redis.url(),
        &site.web.roots(),
        &outs[0],
        &["--delay", "40ms", "--lease-time", "2s"],
    );
    wait_until("nothing recorded", || urls_recorded(&outs[0]).len() >= 20);
    redis.cli(&["ACL", "SETUSER", "default", "-fcall"]);
    std::thread::sleep(Duration::from_secs(2));
    redis.cli(&["ACL", "SETUSER", "default", "+fcall"]);
    let stderr = finish(child);
    // Leases come from memory: the refusal meets the completions under way, and the
    // buckets whose batches failed are given up until the heartbeat can take them again.
    let asked = stderr
        .matches("ERROR crawler::backend: completing ")
        .count()
        + stderr
            .matches("ERROR crawler::crawl::worker: frontier: ")
            .count();
    assert!((1..=12).contains(&asked), "{asked} times: {stderr}");
    assert_every_page_recorded_after(&site, &outs, &stderr);
}

/// A Redis user whose ACL does not allow loading the frontier's function library: the
/// crawler stops before it starts, saying what the user needs.
#[test]
fn a_redis_user_that_may_not_load_the_functions_is_told_what_it_needs() {
    let redis = RedisServer::start();
    redis.cli(&[
        "ACL",
        "SETUSER",
        "crawler",
        "on",
        ">pw",
        "~*",
        "&*",
        "+@all",
        "-function",
    ]);
    let url = format!("redis://crawler:pw@127.0.0.1:{}", redis.port);
    let stderr = refused_at_start(&url);
    assert!(stderr.contains("needs FCALL and FUNCTION LOAD"), "{stderr}");
    assert!(!stderr.contains("pw@"), "the password stays out: {stderr}");
}

/// A server without functions (Redis before 7.0; here one whose `FCALL` is renamed away):
/// the crawler stops before it starts, saying which Redis it needs.
#[test]
fn a_redis_without_functions_is_told_apart() {
    let redis = RedisServer::start_with(&["--rename-command", "FCALL", ""]);
    let stderr = refused_at_start(&redis.url());
    assert!(stderr.contains("needs Redis 7 or later"), "{stderr}");
}

/// Runs a crawler on `redis` that must stop before it starts (exit 2); answers what it said.
fn refused_at_start(redis: &str) -> String {
    let site = site(1, 5, ms(1));
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 1);
    let (output, hung) = wait_or_kill(
        start(redis, &site.web.roots(), &outs[0], &[]),
        Duration::from_secs(60),
    );
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert!(!hung, "{stderr}");
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    stderr
}

/// Two processes crawl testweb's 16 names over 4 addresses (host I at address I % 4, named
/// `hI.aJ.test` with `names_by_address`), held to 2 connections 10 ms apart an address, with
/// `more` flags: every page fetched once, no address ever with more in flight than its
/// limit, and the crawl laid out `by` as its record says. Answers the server and the pages.
fn crawl_laid_out(
    names_by_address: bool,
    more: &[&str],
    by: &str,
) -> (RedisServer, BTreeMap<String, usize>) {
    let redis = RedisServer::start();
    let site = Site::start(SiteConfig {
        hosts: 16,
        addresses: 4,
        pages_per_host: 4,
        names_by_address,
        ..SiteConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let outs = record_files(tmp.path(), 2);
    let mut flags = address_limited_to(&site, 2, "10ms");
    flags.extend(more.iter().map(|flag| flag.to_string()));
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    finish_all(start_all(&redis.url(), &site.web.roots(), &outs, &flags));
    assert_eq!(redis.cli(&["HGET", "crawl:meta", "buckets_by"]).trim(), by);
    let counts = recorded(&outs);
    assert_eq!(
        counts.keys().cloned().collect::<BTreeSet<_>>(),
        site.web.expected_pages()
    );
    assert!(counts.values().all(|&n| n == 1), "a page recorded twice");
    for address in 0..4 {
        let most = site.web.max_in_flight_at_address(address);
        assert!(most <= 2, "{most} in flight at address {address}");
    }
    (redis, counts)
}

/// With limits per address, a crawl places each host in the bucket of its server's address
/// when it first meets it (by default, as `--redis-buckets-by address` does; the names told
/// by testweb's DNS server), kept in Redis for every process: the names of one address in
/// one bucket.
#[test]
fn limits_per_address_put_a_servers_names_in_one_bucket() {
    let (redis, _) = crawl_laid_out(false, &[], "address");
    // Host I (`hI.test:PORT`) at address I % 4: its place is its address's bucket.
    let mut bucket_of_address = HashMap::new();
    let mut placed = 0;
    for key in redis.cli(&["KEYS", "*:places"]).lines() {
        let pairs = redis.cli(&["HGETALL", key]);
        let pairs: Vec<&str> = pairs.lines().collect();
        for pair in pairs.chunks(2) {
            let host: usize = pair[0][1..pair[0].find('.').unwrap()].parse().unwrap();
            let bucket = bucket_of_address
                .entry(host % 4)
                .or_insert_with(|| pair[1].to_owned());
            assert_eq!(*bucket, pair[1], "host {host}: {pairs:?}");
            placed += 1;
        }
    }
    assert_eq!(placed, 16);
    // And each host was scheduled there alone: its state is in one bucket, its address's.
    let mut states_of_address = HashMap::new();
    let mut scheduled = 0;
    for key in redis.cli(&["KEYS", "*:hosts"]).lines() {
        for host in redis.cli(&["HKEYS", key]).lines() {
            let host: usize = host[1..host.find('.').unwrap()].parse().unwrap();
            let states = states_of_address
                .entry(host % 4)
                .or_insert_with(|| key.to_owned());
            assert_eq!(states, key, "host {host}");
            scheduled += 1;
        }
    }
    assert_eq!(scheduled, 16);
}

/// `--redis-buckets-by domain` lays a crawl's hosts out by registrable domain when it is created
/// (the layout stored with it), here names grouped by server in domains (`h3.a3.test` at
/// the fourth address).
#[test]
fn buckets_by_domain_lay_out_a_crawl_by_registrable_domain() {
    let (_redis, counts) = crawl_laid_out(true, &["--redis-buckets-by", "domain"], "domain");
    // Host I at address I % 4, named after it: h5.a1.test.
    for url in counts.keys() {
        let host = url
            .split("//")
            .nth(1)
            .and_then(|rest| rest.split(':').next());
        let labels: Vec<&str> = host.unwrap_or_default().split('.').collect();
        let host: usize = labels[0][1..].parse().unwrap();
        assert_eq!(
            labels[1..],
            [format!("a{}", host % 4).as_str(), "test"],
            "{url}"
        );
    }
}
