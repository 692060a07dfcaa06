use std::time::Duration;

use testweb::{HostConfig, Robots, RobotsRules, SiteConfig};

use crate::util::{Site, assert_switched_off, crawl_site, page_request_times};

#[test]
fn disallowed_urls_are_recorded_and_never_requested() {
    let site = Site::start(SiteConfig {
        pages_per_host: 60,
        host_configs: vec![HostConfig {
            robots: Robots::disallow(["/p/2", "/p/3"]),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let crawl = crawl_site(&site, &[]);
    let denied: Vec<&String> = crawl
        .records
        .iter()
        .filter(|(_, r)| r["error"] == "robots_denied")
        .map(|(url, _)| url)
        .collect();
    assert!(!denied.is_empty());
    for url in &denied {
        assert!(site.web.is_disallowed(url), "{url} denied but allowed");
    }
    for request in site.web.requests() {
        assert!(
            !site
                .web
                .is_disallowed(&site.web.url(request.host, &request.path))
        );
    }
    assert_eq!(crawl.fetched(), site.web.expected_pages());
}

#[test]
fn robots_txt_can_be_ignored_for_your_own_sites() {
    let site = Site::start(SiteConfig {
        pages_per_host: 30,
        host_configs: vec![HostConfig {
            robots: Robots::disallow(["/"]),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let ignoring = testweb::ExpectOptions {
        ignore_robots: true,
        ..Default::default()
    };
    assert_switched_off(&site, &["--robots", "false"], ignoring, |url| {
        url.ends_with("/robots.txt")
    });
}

#[test]
fn an_unreachable_robots_txt_closes_its_host_and_is_said_so() {
    let site = Site::start(SiteConfig {
        hosts: 2,
        pages_per_host: 20,
        host_configs: vec![
            HostConfig::default(),
            HostConfig {
                robots: Robots::Status(503),
                ..HostConfig::default()
            },
        ],
        ..SiteConfig::default()
    });
    // Robots failures count as the host's errors, but do not give it up within the crawl:
    // its root's record shows the cause.
    let crawl = crawl_site(&site, &[]);
    let root = site.web.host_url(1);
    assert_eq!(crawl.record(&root)["error"], "robots_unreachable");
    assert_eq!(crawl.record(&root)["attempts"], 3);
    let requested_pages = site
        .web
        .requests()
        .iter()
        .filter(|r| r.host == 1 && r.path != "/robots.txt")
        .count();
    assert_eq!(
        requested_pages, 0,
        "nothing fetched from a host whose robots.txt is down"
    );
    // The other host is crawled in full.
    let host0 = site.web.host_url(0);
    assert!(
        crawl
            .fetched()
            .iter()
            .filter(|u| u.starts_with(&host0))
            .count()
            >= 20
    );
}

#[test]
fn crawl_delay_spaces_requests() {
    let site = Site::start(SiteConfig {
        pages_per_host: 4,
        children_per_page: 3,
        random_links_per_page: 0,
        host_configs: vec![HostConfig {
            robots: Robots::Rules(RobotsRules {
                crawl_delay: Some(Duration::from_millis(300)),
                ..RobotsRules::default()
            }),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    crawl_site(&site, &[]);
    let times = page_request_times(&site);
    assert_eq!(times.len(), 4);
    for pair in times.windows(2) {
        // Starts are 300 ms apart at the crawler; arrival jitter on loopback is far less than
        // the 100 ms margin.
        assert!(
            pair[1] - pair[0] >= Duration::from_millis(200),
            "{:?}",
            pair[1] - pair[0]
        );
    }
}
