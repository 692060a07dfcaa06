use std::collections::HashMap;

use testweb::{HostConfig, SiteConfig};

use crate::util::{
    Site, address_limited, assert_address_limits_held, assert_spaced, crawl_site, ms,
    names_on_one_address,
};

#[test]
fn per_host_delay_and_connection_limit_hold() {
    delay_and_connection_limit_hold(false);
}

/// Regression: a host's first page was fetched 2 ms after its robots.txt, as if robots.txt
/// were not a request.
#[test]
fn robots_txt_counts_as_a_request_of_its_host() {
    delay_and_connection_limit_hold(true);
}

/// Crawls three hosts with 150 ms between request starts and one connection each, robots.txt
/// read or not, and checks every request of a host, robots.txt's too, kept both.
fn delay_and_connection_limit_hold(robots: bool) {
    let site = Site::start(SiteConfig {
        hosts: 3,
        pages_per_host: 8,
        children_per_page: 3,
        random_links_per_page: 2,
        host_configs: vec![
            HostConfig {
                latency: ms(20),
                ..HostConfig::default()
            };
            3
        ],
        ..SiteConfig::default()
    });
    let crawl = crawl_site(
        &site,
        &[
            "--delay",
            "150ms",
            "--connections-per-host",
            "1",
            "--robots",
            if robots { "true" } else { "false" },
        ],
    );
    assert_eq!(
        crawl.fetched(),
        site.web.expected_pages_with(testweb::ExpectOptions {
            ignore_robots: !robots,
            ..Default::default()
        })
    );
    let robots_fetched = site.web.requests().iter().any(|r| r.path == "/robots.txt");
    assert_eq!(robots_fetched, robots);
    let mut by_host: HashMap<usize, Vec<_>> = HashMap::new();
    for request in site.web.requests() {
        by_host.entry(request.host).or_default().push(request.at);
    }
    for host in 0..3 {
        assert_eq!(
            site.web.max_in_flight(host),
            1,
            "host {host}: one connection at a time"
        );
        let times = by_host.get_mut(&host).expect("every host crawled");
        // 150 ms between starts at the crawler; 50 ms of margin for loopback jitter.
        assert_spaced(times, ms(100), &format!("host {host}"));
    }
}

#[test]
fn hosts_are_crawled_in_parallel_up_to_their_limits() {
    let site = Site::start(SiteConfig {
        pages_per_host: 40,
        children_per_page: 6,
        random_links_per_page: 2,
        host_configs: vec![HostConfig {
            latency: ms(30),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    crawl_site(&site, &["--connections-per-host", "4", "--robots", "false"]);
    let most = site.web.max_in_flight(0);
    assert!(most <= 4, "{most} in flight on one host, limit 4");
    assert!(most >= 2, "the limit is used: {most}");
}

#[test]
fn ten_names_on_one_address_share_its_limits() {
    let site = names_on_one_address(10, 2);
    let flags = address_limited(&site);
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let crawl = crawl_site(&site, &flags);
    assert_eq!(
        crawl.fetched(),
        site.web.expected_pages(),
        "{}",
        crawl.stderr()
    );
    assert_address_limits_held(&site);
}
