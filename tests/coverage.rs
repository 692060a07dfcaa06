use testweb::{HostConfig, Robots, SiteConfig};

use crate::util::{Site, crawl_site};

#[test]
fn a_crawl_fetches_exactly_the_expected_pages_each_once() {
    let site = Site::start(SiteConfig {
        hosts: 3,
        pages_per_host: 150,
        children_per_page: 4,
        random_links_per_page: 8,
        host_configs: vec![
            HostConfig::every_special(),
            HostConfig {
                robots: Robots::disallow(["/p/1"]),
                ..HostConfig::default()
            },
        ],
        ..SiteConfig::default()
    });
    // Host 0's special pages fail on purpose, many in a row, with the default give-up rule:
    // broken pages cost their retries, never their site.
    let crawl = crawl_site(&site, &["--timeout", "1s"]);
    let expected = site.web.expected_pages();
    let fetched = crawl.fetched();
    let missing: Vec<_> = expected.difference(&fetched).collect();
    let extra: Vec<_> = fetched.difference(&expected).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "missing {missing:?}\nextra {extra:?}\nstderr:\n{}",
        crawl.stderr()
    );
    // Every URL requested once, except those retried after an error.
    for (url, count) in site.web.fetch_counts() {
        if url.ends_with("/robots.txt") {
            assert_eq!(count, 1, "{url}: robots.txt fetched once per host");
            continue;
        }
        let attempts = crawl.record(&url)["attempts"].as_u64().unwrap() as usize;
        assert_eq!(
            count, attempts,
            "{url} requested {count} times in {attempts} attempts"
        );
    }
    // Nothing robots.txt disallows was requested.
    for request in site.web.requests() {
        let url = site.web.url(request.host, &request.path);
        assert!(!site.web.is_disallowed(&url), "requested disallowed {url}");
    }
    assert!(crawl.stderr().contains("crawled"), "{}", crawl.stderr());
}

#[test]
fn max_pages_stops_at_exactly_that_many_records() {
    let site = Site::start(SiteConfig {
        pages_per_host: 200,
        ..SiteConfig::default()
    });
    for limit in ["1", "37"] {
        let crawl = crawl_site(&site, &["--max-pages", limit, "--robots", "false"]);
        assert_eq!(crawl.records.len().to_string(), limit, "{}", crawl.stderr());
        // Regression: the summary did not say why the crawl stopped, nor what
        // became of the URLs left queued; and it said "1 URLs".
        let stderr = crawl.stderr();
        let crawled = if limit == "1" {
            "crawled 1 URL in"
        } else {
            "crawled 37 URLs in"
        };
        assert!(stderr.contains(crawled), "{stderr}");
        assert!(
            stderr.contains(&format!(
                "stopped: crawl.max_pages (--max-pages) is {limit}"
            )),
            "{stderr}"
        );
        assert!(
            stderr.contains("left queued were not fetched (with --state-dir they are kept"),
            "{stderr}"
        );
    }
    // A crawl that ran its course says nothing of a stop.
    let all = crawl_site(&site, &["--robots", "false"]);
    assert!(!all.stderr().contains("stopped:"), "{}", all.stderr());
}
