//! Generations of a site and conditional requests: pages change by the fraction asked,
//! answer 304 to their own validators, and `changes_since` names exactly the pages whose
//! validators changed.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use common::Conn;
use testweb::{SiteConfig, Testweb};

fn site(generation: u64, port: u16) -> SiteConfig {
    SiteConfig {
        hosts: 2,
        pages_per_host: 600,
        changed_fraction: 0.1,
        generation,
        port,
        ..SiteConfig::default()
    }
}

/// Starts `config`, waiting for its ports if the previous site on them is still closing.
async fn start(config: SiteConfig) -> Testweb {
    for _ in 0..100 {
        match Testweb::start(config.clone()).await {
            Ok(web) => return web,
            Err(err) if err.kind() == std::io::ErrorKind::AddrInUse => {
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            Err(err) => panic!("{err}"),
        }
    }
    panic!("the ports stayed in use");
}

/// The first of `n` ports in a row that are free now.
fn free_ports(n: u16) -> u16 {
    loop {
        let first = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = first.local_addr().unwrap().port();
        let rest: Vec<_> = (1..n)
            .map_while(|i| std::net::TcpListener::bind(("127.0.0.1", port.checked_add(i)?)).ok())
            .collect();
        if rest.len() + 1 == usize::from(n) {
            return port;
        }
    }
}

/// The (host, path) of a canonical URL of `web`.
fn target(web: &Testweb, url: &str) -> (usize, String) {
    let host = (0..web.hosts())
        .find(|&h| url.starts_with(&web.host_url(h)))
        .expect("a URL of the site");
    let path_at = url["http://".len()..].find('/').expect("a path") + "http://".len();
    (host, url[path_at..].to_owned())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_answers_304_to_its_own_validators() {
    let web = start(site(0, 0)).await;
    let mut conn = Conn::new(web.port(0));
    let first = conn.get_with("/p/3", &[]).await.unwrap();
    assert_eq!(first.status, 200);
    let etag = first.header("etag").expect("an ETag").to_owned();
    let modified = first
        .header("last-modified")
        .expect("a Last-Modified")
        .to_owned();
    assert!(etag.starts_with('"') && etag.ends_with('"'), "{etag}");
    assert_eq!(modified, "Thu, 01 Jan 2026 00:00:00 GMT");
    let ask = |headers: Vec<String>| {
        let mut conn = Conn::new(web.port(0));
        async move { conn.get_with("/p/3", &headers).await.unwrap() }
    };
    let not_modified = ask(vec![format!("If-None-Match: \"x\", {etag}")]).await;
    assert_eq!(not_modified.status, 304);
    assert!(not_modified.body.is_empty());
    assert_eq!(not_modified.header("etag"), Some(etag.as_str()));
    assert_eq!(ask(vec!["If-None-Match: *".into()]).await.status, 304);
    assert_eq!(
        ask(vec![format!("If-Modified-Since: {modified}")])
            .await
            .status,
        304
    );
    let earlier = "If-Modified-Since: Wed, 31 Dec 2025 23:59:59 GMT".to_owned();
    assert_eq!(ask(vec![earlier]).await.status, 200);
    // An ETag that does not match decides: If-Modified-Since is then not asked.
    let other = vec![
        "If-None-Match: \"other\"".to_owned(),
        format!("If-Modified-Since: {modified}"),
    ];
    let full = ask(other).await;
    assert_eq!(full.status, 200);
    assert_eq!(full.body, first.body);
    assert_eq!(web.not_modified_served(0), 3);
    assert_eq!(web.page_bytes_served(0), 3 * first.body.len() as u64);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_generation_changes_its_fraction_and_changes_since_names_each_changed_page() {
    // Generation 0 on two free ports in a row: every page's validators.
    let port = free_ports(2);
    let first = start(site(0, port)).await;
    let mut etags = BTreeMap::new();
    for url in first.expected_pages() {
        let (host, path) = target(&first, &url);
        let mut conn = Conn::new(first.port(host));
        let response = conn.get_with(&path, &[]).await.unwrap();
        etags.insert(url, response.header("etag").unwrap().to_owned());
    }
    first.shutdown();
    drop(first);
    // Generation 2 on the same ports: what its pages answer to those validators.
    let later = start(site(2, port)).await;
    let changes = later.changes_since(&site(0, port)).unwrap();
    let mut answered_full = BTreeSet::new();
    for (url, etag) in &etags {
        let (host, path) = target(&later, url);
        let mut conn = Conn::new(later.port(host));
        let response = conn
            .get_with(&path, &[format!("If-None-Match: {etag}")])
            .await
            .unwrap();
        match response.status {
            304 => {}
            200 => {
                answered_full.insert(url.clone());
            }
            status => panic!("{url}: {status}"),
        }
    }
    assert_eq!(answered_full, changes.changed);
    // Two generations at 10% each: about 19% of the pages changed.
    let share = changes.changed.len() as f64 / etags.len() as f64;
    assert!((0.12..0.27).contains(&share), "{share}");
    // Every page stays reachable through the tree: none new, none gone.
    assert!(
        changes.new.is_empty() && changes.gone.is_empty(),
        "{changes:?}"
    );
    assert!(
        later
            .changes_since(later.config())
            .unwrap()
            .changed
            .is_empty()
    );
}

#[tokio::test(flavor = "current_thread")]
async fn generation_zero_is_the_site_as_first_served() {
    let plain = SiteConfig {
        hosts: 2,
        pages_per_host: 300,
        ..SiteConfig::default()
    };
    let web = Testweb::start(SiteConfig {
        changed_fraction: 0.5,
        ..plain.clone()
    })
    .await
    .unwrap();
    let changes = web.changes_since(&plain).unwrap();
    assert_eq!(changes, testweb::Changes::default());
    let other_hosts = SiteConfig { hosts: 3, ..plain };
    assert!(web.changes_since(&other_hosts).is_err());
}
