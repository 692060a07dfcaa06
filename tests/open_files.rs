use std::process::Command;

use testweb::{ExpectOptions, HostConfig, SiteConfig};

use crate::util::{Site, crawl_by, fast, ms};

/// A site of `hosts` hosts of two pages, each answering after 300 ms: a crawl with one
/// connection per host holds a connection to every host at once.
fn slow_hosts(hosts: usize) -> Site {
    Site::start(SiteConfig {
        hosts,
        pages_per_host: 2,
        children_per_page: 1,
        random_links_per_page: 0,
        host_configs: vec![
            HostConfig {
                latency: ms(300),
                ..HostConfig::default()
            };
            hosts
        ],
        ..SiteConfig::default()
    })
}

/// The crawler run by a shell that first sets its limit on open files (`ulimit` flags), with
/// `--concurrency` as given, every root a seed.
fn crawl_limited(site: &Site, ulimit: &[&str], concurrency: &str) -> crate::util::Crawl {
    let mut command = Command::new("bash");
    let limit = ulimit.join(" ");
    command.args([
        "-c",
        &format!("ulimit {limit} && exec \"$0\" \"$@\""),
        env!("CARGO_BIN_EXE_crawler"),
    ]);
    let mut args = fast();
    args.extend(["--robots", "false", "--connections-per-host", "1"].map(String::from));
    args.extend(["--concurrency".into(), concurrency.into()]);
    for seed in site.web.roots() {
        args.extend(["--seed".into(), seed]);
    }
    let crawl = crawl_by(command, &args);
    crawl.assert_success();
    crawl
}

/// Every expected page has one record, fetched at its first try.
fn every_page_at_the_first_try(site: &Site, crawl: &crate::util::Crawl) {
    let expected = site.web.expected_pages_with(ExpectOptions {
        ignore_robots: true,
        ..Default::default()
    });
    assert_eq!(crawl.fetched(), expected, "{}", crawl.stderr());
    for (url, record) in &crawl.records {
        assert_eq!(record["status"], 200, "{url}: {record}");
        assert_eq!(record["attempts"], 1, "{url}: {record}");
    }
}

#[test]
fn a_low_soft_limit_is_raised_so_that_no_connection_fails() {
    // 150 connections at once under a soft limit of 48: without the soft limit raised to
    // the hard one, about a hundred of them fail with "too many open files" and are retried.
    let site = slow_hosts(150);
    let hard = Command::new("bash")
        .args(["-c", "ulimit -Hn"])
        .output()
        .expect("bash runs");
    let hard = String::from_utf8_lossy(&hard.stdout).trim().to_owned();
    if hard != "unlimited" && hard.parse::<u64>().is_ok_and(|n| n < 1024) {
        // This machine's hard limit is too low to test the raise (the cut is tested below).
        return;
    }
    let crawl = crawl_limited(&site, &["-Sn", "48"], "200");
    every_page_at_the_first_try(&site, &crawl);
    assert!(!crawl.stderr().contains("open files"), "{}", crawl.stderr());
}

#[test]
fn a_concurrency_over_the_hard_limit_is_cut_to_it_and_said_once() {
    // A hard limit of 100: 18 fetches fit beside the files kept for the rest (64), two each.
    let site = slow_hosts(60);
    let crawl = crawl_limited(&site, &["-n", "100"], "200");
    every_page_at_the_first_try(&site, &crawl);
    let stderr = crawl.stderr();
    assert_eq!(stderr.matches("open files").count(), 1, "{stderr}");
    assert!(stderr.contains("fetching 18 at a time"), "{stderr}");
}

#[test]
fn more_hosts_than_open_files_lose_no_page() {
    // 300 hosts under a limit of 150 open files, 16 fetches at a time: the client's pool
    // keeps a connection to each host it fetched from, and runs out of files after about a
    // hundred hosts. The requests that fail for it go back in line, not to the hosts' errors,
    // and the idle connections are closed; before, some 40% of the pages were lost.
    let site = Site::start(SiteConfig {
        hosts: 300,
        pages_per_host: 2,
        children_per_page: 1,
        random_links_per_page: 0,
        host_configs: vec![
            HostConfig {
                latency: ms(1),
                ..HostConfig::default()
            };
            300
        ],
        ..SiteConfig::default()
    });
    let crawl = crawl_limited(&site, &["-n", "150"], "16");
    every_page_at_the_first_try(&site, &crawl);
    let stderr = crawl.stderr();
    assert!(
        stderr.contains("for want of this machine's resources"),
        "{stderr}"
    );
}
