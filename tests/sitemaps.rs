use testweb::{
    ExpectOptions, HostConfig, Robots, RobotsRules, SiteConfig, SitemapFormat, Special, SpecialKind,
};

use crate::util::{Site, assert_switched_off, crawl_site};

/// A sitemap special, linked from nowhere.
fn sitemap(path: &str, format: SitemapFormat, entries: &[&str], gzip: bool) -> Special {
    Special::new(
        path,
        SpecialKind::Sitemap {
            format,
            entries: entries.iter().map(|e| e.to_string()).collect(),
            gzip,
        },
    )
    .unlinked()
}

/// A host whose robots.txt lists a gzipped index (which lists an XML sitemap, itself and a
/// bomb) and a text sitemap; their pages are linked from nowhere else, and one of them is
/// disallowed.
fn site_with_sitemaps() -> Site {
    Site::start(SiteConfig {
        pages_per_host: 30,
        host_configs: vec![HostConfig {
            robots: Robots::Rules(RobotsRules {
                disallow: vec!["/t/hidden/".into()],
                sitemaps: vec!["/sitemap-index.xml.gz".into(), "/sitemap.txt".into()],
                ..RobotsRules::default()
            }),
            specials: vec![
                sitemap(
                    "/sitemap-index.xml.gz",
                    SitemapFormat::Index,
                    &[
                        "/sitemap-pages.xml",
                        "/sitemap-index.xml.gz",
                        "/sitemap-bomb.xml.gz",
                    ],
                    true,
                ),
                sitemap(
                    "/sitemap-pages.xml",
                    SitemapFormat::Urlset,
                    &[
                        "/t/only-in-sitemap/1",
                        "/t/only-in-sitemap/2",
                        "/p/3",
                        "/t/hidden/disallowed",
                    ],
                    false,
                ),
                sitemap(
                    "/sitemap.txt",
                    SitemapFormat::Text,
                    &["/t/only-in-text/1", "/t/only-in-sitemap/1"],
                    false,
                ),
                Special::new(
                    "/sitemap-bomb.xml.gz",
                    SpecialKind::SitemapBomb {
                        decompressed_bytes: 200_000_000,
                    },
                )
                .unlinked(),
            ],
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    })
}

#[test]
fn sitemaps_lead_to_pages_nothing_links_to_each_fetched_once() {
    let site = site_with_sitemaps();
    let web = &site.web;
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("summary.json");
    let crawl = crawl_site(&site, &["--summary-json", json.to_str().unwrap()]);
    let expected = web.expected_pages();
    for path in [
        "/sitemap-index.xml.gz",
        "/sitemap-pages.xml",
        "/sitemap.txt",
        "/sitemap-bomb.xml.gz",
        "/t/only-in-sitemap/1",
        "/t/only-in-text/1",
        "/t/sitemap-bomb.xml.gz/3",
    ] {
        assert!(expected.contains(&web.url(0, path)), "{path} not expected");
    }
    assert_eq!(crawl.fetched(), expected, "{}", crawl.stderr());
    // Nothing twice: not the index that lists itself, not a page two sitemaps list.
    for (url, n) in web.fetch_counts() {
        assert_eq!(n, 1, "{url} fetched {n} times");
    }
    // Disallowed: recorded, never requested. Past the bomb's cap: never.
    let disallowed = web.url(0, "/t/hidden/disallowed");
    assert_eq!(crawl.record(&disallowed)["error"], "robots_denied");
    let counts = web.fetch_counts();
    assert!(!counts.contains_key(&disallowed));
    assert!(!counts.contains_key(&web.url(0, "/t/sitemap-bomb.xml.gz/after-cap")));
    // lastmod reaches the page's record; a page no sitemap dates has its Last-Modified.
    let dated = crawl.record(&web.url(0, "/t/only-in-sitemap/2"));
    assert_eq!(dated["lastmod"], "2024-05-01");
    let undated = crawl.record(&web.url(0, "/p/1"));
    assert_eq!(undated["lastmod"], "Thu, 01 Jan 2026 00:00:00 GMT");
    // A sitemap's record counts the URLs it lists.
    assert_eq!(crawl.record(&web.url(0, "/sitemap-pages.xml"))["links"], 4);
    // `from`: the sitemap that listed a page, the index that listed a sitemap, robots.txt
    // for the sitemaps it lists.
    let from = |path: &str| crawl.record(&web.url(0, path))["from"].clone();
    assert_eq!(
        from("/t/only-in-sitemap/2"),
        web.url(0, "/sitemap-pages.xml").as_str()
    );
    assert_eq!(
        from("/t/only-in-text/1"),
        web.url(0, "/sitemap.txt").as_str()
    );
    assert_eq!(
        from("/sitemap-pages.xml"),
        web.url(0, "/sitemap-index.xml.gz").as_str()
    );
    assert_eq!(from("/sitemap.txt"), web.url(0, "/robots.txt").as_str());
    let stderr = crawl.stderr();
    assert!(stderr.contains("sitemaps: 4 read"), "{stderr}");
    // Regression: --summary-json lacked the text summary's sitemaps.
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(summary["this_run"]["sitemaps"]["read"], 4, "{summary}");
    assert!(
        summary["this_run"]["sitemaps"]["urls_listed"]
            .as_u64()
            .is_some_and(|n| n > 0),
        "{summary}"
    );
}

#[test]
fn crawl_sitemaps_false_reads_none() {
    let site = site_with_sitemaps();
    let ignoring = ExpectOptions {
        ignore_sitemaps: true,
        ..ExpectOptions::default()
    };
    assert_switched_off(&site, &["--sitemaps", "false"], ignoring, |url| {
        url.contains("sitemap")
    });
}

#[test]
fn a_sitemap_given_on_the_command_line_is_read() {
    let site = site_with_sitemaps();
    let text = site.web.url(0, "/sitemap.txt");
    // Without robots.txt's sitemaps, only the one given is read.
    let crawl = crawl_site(&site, &["--sitemaps", "false", "--sitemap", &text]);
    let fetched = crawl.fetched();
    assert!(fetched.contains(&text));
    assert!(fetched.contains(&site.web.url(0, "/t/only-in-text/1")));
    assert!(fetched.contains(&site.web.url(0, "/t/only-in-sitemap/1")));
    assert!(!fetched.contains(&site.web.url(0, "/sitemap-pages.xml")));
    assert_eq!(crawl.record(&text)["links"], 2);
}

#[test]
fn sitemap_urls_go_through_the_scope_rules() {
    let site = site_with_sitemaps();
    // The scope's rules judge a sitemap's URLs as they judge links: one excluded page and
    // one excluded sitemap are not requested, and what only the latter listed is not found.
    let crawl = crawl_site(
        &site,
        &["--exclude", "only-in-text", "--exclude", "sitemap-bomb"],
    );
    let counts = site.web.fetch_counts();
    for path in [
        "/t/only-in-text/1",
        "/sitemap-bomb.xml.gz",
        "/t/sitemap-bomb.xml.gz/1",
    ] {
        assert!(!counts.contains_key(&site.web.url(0, path)), "{path}");
    }
    assert!(
        crawl
            .fetched()
            .contains(&site.web.url(0, "/t/only-in-sitemap/1"))
    );
    assert!(
        crawl.stderr().contains("sitemaps: 3 read"),
        "{}",
        crawl.stderr()
    );
}
