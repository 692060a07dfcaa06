//! Page requisites: what a page needs to render is fetched with it, on another host too
//! (one hop), each once, with a record that says so and names the page; in both stores.

use std::collections::BTreeSet;

use serde_json::Value;
use testweb::{ExpectOptions, HostConfig, Robots, RobotsRules, SiteConfig, Special, SpecialKind};

use crate::util::{Crawl, Site, crawl, fast};

/// Two hosts: the first has a few pages and a page that needs requisites, one of them an
/// image on the second host (a CDN, out of the crawl's scope). No page links across hosts.
/// The CDN's robots.txt keeps crawlers out of `/private/` only.
pub(crate) fn styled_site() -> Site {
    styled_site_disallowing("/private/")
}

/// [`styled_site`], the CDN's robots.txt disallowing `path`.
fn styled_site_disallowing(path: &str) -> Site {
    Site::start(SiteConfig {
        hosts: 2,
        pages_per_host: 4,
        inter_host_fraction: 0.0,
        log_requests: true,
        host_configs: vec![
            HostConfig {
                specials: vec![Special::new(
                    "/styled",
                    SpecialKind::Styled { cdn: Some(1) },
                )],
                ..HostConfig::default()
            },
            HostConfig {
                robots: Robots::Rules(RobotsRules {
                    disallow: vec![path.into()],
                    ..RobotsRules::default()
                }),
                ..HostConfig::default()
            },
        ],
        ..SiteConfig::default()
    })
}

/// A crawl of the first host only (the default scope: the seed's host).
fn crawl_first_host(site: &Site, extra: &[&str]) -> Crawl {
    let mut args = fast();
    args.extend(["--seed".to_owned(), site.web.roots()[0].clone()]);
    args.extend(extra.iter().map(|s| s.to_string()));
    let crawl = crawl(&args);
    crawl.assert_success();
    crawl
}

/// Lets a crawl fetch from the CDN host, which is on loopback like every testweb host.
pub(crate) const PRIVATE_OK: [&str; 2] = ["--allow-private-addresses", "true"];

/// The first host's pages: what a crawl seeded there reaches by links.
fn first_host_pages(site: &Site) -> BTreeSet<String> {
    let origin = &site.web.roots()[0];
    let pages = site.web.expected_pages().into_iter();
    pages.filter(|url| url.starts_with(origin)).collect()
}

/// The ground truth of a crawl of [`styled_site`]'s first host with requisites, and which of
/// its URLs are requisites.
pub(crate) fn expected(site: &Site) -> (BTreeSet<String>, BTreeSet<String>) {
    let with = site.web.expected_pages_with(ExpectOptions {
        page_requisites: true,
        ..ExpectOptions::default()
    });
    let requisites: BTreeSet<String> = with
        .difference(&site.web.expected_pages())
        .cloned()
        .collect();
    let all = first_host_pages(site).union(&requisites).cloned().collect();
    (all, requisites)
}

/// Checks the records of a crawl of [`styled_site`] with requisites: every page and every
/// requisite once (the CDN's image too, and nothing else of the CDN), each requisite's
/// record marked and naming the page, or the style sheet, that needed it.
pub(crate) fn assert_requisites_recorded(site: &Site, records: &[Value]) {
    let (all, requisites) = expected(site);
    assert_eq!(requisites.len(), 12, "{requisites:?}");
    let urls: Vec<&str> = records.iter().map(|r| r["url"].as_str().unwrap()).collect();
    let once: BTreeSet<String> = urls.iter().map(|u| u.to_string()).collect();
    assert_eq!(once.len(), urls.len(), "a URL recorded twice: {urls:?}");
    assert_eq!(once, all);
    let origin = &site.web.roots()[0];
    let page = format!("{origin}styled");
    for record in records {
        let url = record["url"].as_str().unwrap();
        assert_eq!(record["requisite"], requisites.contains(url), "{record}");
        if !requisites.contains(url) {
            continue;
        }
        assert_eq!(record["status"], 200, "{record}");
        // What the style sheets load names the sheet; the rest, the page.
        let from = match url.rsplit('/').next().unwrap() {
            "base.css" | "bg.png" => format!("{origin}t/styled/site.css"),
            "base.png" => format!("{origin}t/styled/base.css"),
            _ => page.clone(),
        };
        assert_eq!(record["from"], from.as_str(), "{record}");
    }
}

fn records(crawl: &Crawl) -> Vec<Value> {
    crawl.records.values().cloned().collect()
}

#[test]
fn a_pages_requisites_are_fetched_once_on_any_host_and_recorded_as_such() {
    let site = styled_site();
    // The CDN is on loopback too, and not a seed's host: the SSRF guard would keep it out.
    let crawl = crawl_first_host(
        &site,
        &["--page-requisites", "true", PRIVATE_OK[0], PRIVATE_OK[1]],
    );
    assert_requisites_recorded(&site, &records(&crawl));
    // One hop: the CDN's robots.txt and its image, nothing else of it.
    let cdn: Vec<String> = site
        .web
        .requests()
        .iter()
        .filter(|r| r.host == 1)
        .map(|r| r.path.clone())
        .collect();
    assert_eq!(cdn, ["/robots.txt", "/t/cdn/photo.png"]);
    assert!(
        crawl
            .stderr()
            .contains("page requisites: 12 of the records"),
        "{}",
        crawl.stderr()
    );
}

#[test]
fn requisites_are_off_without_warc_and_keep_to_the_exclude_patterns_and_robots() {
    let site = styled_site();
    let off = crawl_first_host(&site, &[]);
    assert_eq!(off.fetched(), first_host_pages(&site));
    assert!(off.records.values().all(|r| r["requisite"] == false));

    // The user's exclusions hold for requisites too, and so does the CDN's robots.txt.
    let site = styled_site_disallowing("/t/cdn/");
    let (exclude, private) = (["--exclude", r"\.js$"], PRIVATE_OK);
    let crawl = crawl_first_host(
        &site,
        &[&exclude[..], &private, &["--page-requisites", "true"]].concat(),
    );
    let origin = &site.web.roots()[0];
    assert!(
        !crawl
            .records
            .contains_key(&format!("{origin}t/styled/app.js"))
    );
    let photo = format!("{}t/cdn/photo.png", site.web.roots()[1]);
    assert_eq!(crawl.record(&photo)["error"], "robots_denied");
    assert!(
        crawl
            .records
            .contains_key(&format!("{origin}t/styled/base.png"))
    );

    // A requisite is a URL a page chose: the SSRF guard judges it as any link.
    let guarded = crawl_first_host(&site, &["--page-requisites", "true"]);
    assert_eq!(guarded.record(&photo)["error"], "ssrf_blocked");
}
