//! What records say of a page besides its status: when it was fetched (`fetched_at`), its
//! body's digest, `lastmod` from `Last-Modified`, and whether its body was read before under
//! another URL (`duplicate`, the content-seen test).

use serde_json::Value;

use crate::util::{crawl, fast, serve_with_headers};

/// A site whose `/m1/` and `/m2/` serve one body (a mirror), with a relative link that
/// leads to `next` under each; `/e1` and `/e2` are empty. Returns its root URL.
fn mirrored_site() -> String {
    let (port, _log) = serve_with_headers(|path| {
        let html = "text/html";
        let page = |body: String| (200, html, Vec::new(), body.into_bytes());
        match path {
            "/" => page(
                r#"<a href="/m1/">1</a><a href="/m2/">2</a><a href="/e1">e</a><a href="/e2">e</a>"#
                    .into(),
            ),
            "/m1/" | "/m2/" => page(r#"<p>the same page</p><a href="next">next</a>"#.into()),
            "/e1" | "/e2" => page(String::new()),
            "/robots.txt" => (404, "", Vec::new(), Vec::new()),
            other => page(format!("<p>{other}</p>")),
        }
    });
    format!("http://127.0.0.1:{port}/")
}

fn crawl_with(root: &str, extra: &[&str]) -> crate::util::Crawl {
    let mut args = fast();
    args.extend(["--seed", root].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    let crawl = crawl(&args);
    crawl.assert_success();
    crawl
}

/// Which of `/m1/` and `/m2/` was read first, and which is its duplicate.
fn first_and_copy(crawl: &crate::util::Crawl, root: &str) -> (&'static str, &'static str) {
    let duplicate = |path: &str| crawl.record(&format!("{root}{path}"))["duplicate"].clone();
    let mirrors = [duplicate("m1/"), duplicate("m2/")];
    // One copy is the first, whichever was read first; the other is its duplicate.
    assert!(
        mirrors.contains(&Value::Bool(false)) && mirrors.contains(&Value::Bool(true)),
        "{mirrors:?}"
    );
    if mirrors[0] == false {
        ("m1", "m2")
    } else {
        ("m2", "m1")
    }
}

/// Regression: with the defaults, the page reachable only through a duplicate's relative link
/// was never crawled.
#[test]
fn a_body_read_before_is_a_duplicate_and_its_links_are_followed() {
    let root = mirrored_site();
    let tmp = tempfile::tempdir().unwrap();
    let json = tmp.path().join("summary.json");
    let crawl = crawl_with(&root, &["--summary-json", json.to_str().unwrap()]);
    let (first, copy) = first_and_copy(&crawl, &root);
    assert!(crawl.records.contains_key(&format!("{root}{first}/next")));
    assert!(crawl.records.contains_key(&format!("{root}{copy}/next")));
    assert_eq!(crawl.record(&format!("{root}{copy}/"))["links"], 1);
    // Empty bodies are never duplicates.
    let duplicate = |path: &str| crawl.record(&format!("{root}{path}"))["duplicate"].clone();
    assert_eq!(duplicate("e1"), false);
    assert_eq!(duplicate("e2"), false);
    assert_eq!(duplicate(""), false);
    assert!(
        crawl
            .stderr()
            .contains("duplicates: 1 of 5 non-empty 2xx bodies had been read before"),
        "{}",
        crawl.stderr()
    );
    // Regression: --summary-json lacked the text summary's duplicates.
    let summary: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let duplicates = &summary["this_run"]["duplicates"];
    assert_eq!(duplicates["duplicates"], 1, "{summary}");
    assert_eq!(duplicates["bodies_tested"], 5, "{summary}");
}

#[test]
fn without_follow_duplicates_a_duplicates_links_are_not_even_extracted() {
    let root = mirrored_site();
    let crawl = crawl_with(&root, &["--follow-duplicates", "false"]);
    let (first, copy) = first_and_copy(&crawl, &root);
    assert!(crawl.records.contains_key(&format!("{root}{first}/next")));
    assert!(!crawl.records.contains_key(&format!("{root}{copy}/next")));
    assert_eq!(crawl.record(&format!("{root}{copy}/"))["links"], 0);
}

#[test]
fn without_the_test_there_are_no_duplicates_and_every_link_is_followed() {
    let root = mirrored_site();
    let crawl = crawl_with(&root, &["--content-seen", "false"]);
    assert!(crawl.records.contains_key(&format!("{root}m1/next")));
    assert!(crawl.records.contains_key(&format!("{root}m2/next")));
    assert!(crawl.records.values().all(|r| r["duplicate"] == false));
    assert!(!crawl.stderr().contains("duplicates:"));
}

#[test]
fn records_carry_the_fetch_time_the_body_digest_and_the_validators() {
    let (port, _log) = serve_with_headers(|path| match path {
        "/" => (
            200,
            "text/html",
            vec![
                ("last-modified", "Wed, 01 May 2024 10:00:00 GMT".to_owned()),
                ("etag", "W/\"v1-abc\"".to_owned()),
            ],
            b"<p>abc</p><a href=/plain>p</a>".to_vec(),
        ),
        "/plain" => (
            200,
            "text/html",
            Vec::new(),
            b"<p>no validators</p>".to_vec(),
        ),
        _ => (404, "", Vec::new(), Vec::new()),
    });
    let root = format!("http://127.0.0.1:{port}/");
    let before = std::time::SystemTime::now();
    let crawl = crawl_with(&root, &[]);
    let record = crawl.record(&root);
    assert_eq!(record["lastmod"], "Wed, 01 May 2024 10:00:00 GMT");
    // The validators, as sent: what a recrawl asks with.
    assert_eq!(record["last_modified"], "Wed, 01 May 2024 10:00:00 GMT");
    assert_eq!(record["etag"], "W/\"v1-abc\"");
    let plain = crawl.record(&format!("{root}plain"));
    assert!(
        plain["etag"].is_null() && plain["last_modified"].is_null(),
        "{plain}"
    );
    // SHA-1 of the body as read, in base32, as WARC-Payload-Digest has it.
    let sha1 = <sha1::Sha1 as sha1::Digest>::digest(b"<p>abc</p><a href=/plain>p</a>");
    let expected = format!("sha1:{}", data_encoding::BASE32.encode(&sha1));
    assert_eq!(record["digest"], expected.as_str());
    // RFC 3339, UTC, milliseconds; the date of this run.
    let at = record["fetched_at"].as_str().unwrap();
    let shape: String = at
        .chars()
        .map(|c| if c.is_ascii_digit() { '0' } else { c })
        .collect();
    assert_eq!(shape, "0000-00-00T00:00:00.000Z", "{at}");
    let today = httpdate::fmt_http_date(before);
    let year: u32 = at[..4].parse().unwrap();
    assert!(today.contains(&format!(" {year} ")), "{at} is not {today}");

    // `--digest false` leaves it out (and saves its cost) unless the content-seen test needs
    // it; with the test on, the digest is computed for it but still left out of the record.
    for extra in [
        &["--digest", "false", "--content-seen", "false"][..],
        &["--digest", "false"],
    ] {
        let crawl = crawl_with(&root, extra);
        assert!(crawl.record(&root)["digest"].is_null(), "{extra:?}");
    }
}

/// `from`: a broken link's record names the page that has it, a redirect's target the URL
/// that redirected, and the seed none; a broken-link report is one filter over the records.
#[test]
fn from_names_the_page_whose_link_led_here() {
    let (port, _log) = serve_with_headers(|path| {
        let html = |body: &str| (200, "text/html", Vec::new(), body.as_bytes().to_vec());
        match path {
            "/" => html(r#"<a href="/missing">gone</a> <a href="/moved">moved</a>"#),
            "/moved" => (301, "/target", Vec::new(), Vec::new()),
            "/target" => html(r#"<a href="/missing">gone again</a>"#),
            "/robots.txt" => (404, "", Vec::new(), Vec::new()),
            _ => (404, "text/html", Vec::new(), b"not found".to_vec()),
        }
    });
    let root = format!("http://127.0.0.1:{port}/");
    let crawl = crawl_with(&root, &[]);
    let from = |path: &str| crawl.record(&format!("{root}{path}"))["from"].clone();
    assert_eq!(from(""), Value::Null);
    assert_eq!(from("missing"), root.as_str());
    assert_eq!(from("moved"), root.as_str());
    assert_eq!(from("target"), format!("{root}moved").as_str());
    // What `jq -c 'select(.status >= 400) | {url, from, status}'` prints.
    let broken: Vec<Value> = crawl
        .records
        .values()
        .filter(|r| r["status"].as_u64().is_some_and(|s| s >= 400))
        .map(|r| serde_json::json!({"url": r["url"], "from": r["from"], "status": r["status"]}))
        .collect();
    let expected =
        serde_json::json!([{"url": format!("{root}missing"), "from": root, "status": 404}]);
    assert_eq!(Value::Array(broken), expected);
}

/// Over a testweb site with every kind of special page (redirects, errors, `<base href>`,
/// many spellings of one link): every record but the seeds' names a page that was fetched
/// and, read again here, links to the URL or redirects to it.
#[test]
fn every_from_is_a_page_that_links_or_redirects_here() {
    use testweb::{HostConfig, SiteConfig};

    let site = crate::util::Site::start(SiteConfig {
        hosts: 2,
        pages_per_host: 60,
        children_per_page: 3,
        random_links_per_page: 4,
        host_configs: vec![HostConfig::every_special()],
        ..SiteConfig::default()
    });
    let crawl = crate::util::crawl_site(&site, &["--timeout", "1s"]);
    let seeds = site.web.roots();
    let canon = frontier::Canonicalizer::new();
    let mut links_of: std::collections::HashMap<String, Vec<String>> = Default::default();
    let mut checked = 0;
    for (url, record) in &crawl.records {
        if seeds.contains(url) {
            assert_eq!(record["from"], Value::Null, "{url}: a seed");
            continue;
        }
        let from = record["from"]
            .as_str()
            .unwrap_or_else(|| panic!("{url}: no from in {record}"));
        let referrer = crawl.record(from);
        if referrer["redirect"]
            .as_str()
            .and_then(|r| canon.canonicalize(r).ok())
            == canon.canonicalize(url).ok()
        {
            checked += 1;
            continue;
        }
        let links = links_of.entry(from.to_owned()).or_insert_with(|| {
            let page = frontier::Url::parse(from).unwrap();
            let (content_type, body) = get(&page);
            let extracted = links::extract(
                &links::Page {
                    url: &page,
                    body: &body,
                    content_type: content_type.as_deref(),
                },
                &links::Options::default(),
            );
            extracted
                .links
                .iter()
                .filter_map(|href| canon.canonicalize_relative(&extracted.base, href).ok())
                .map(|link| link.as_str().to_owned())
                .collect()
        });
        assert!(links.contains(url), "{from} does not link to {url}");
        checked += 1;
    }
    assert!(checked > 100, "only {checked} records checked");
}

/// The Content-Type and body of `url`, decompressed, as the crawler reads them.
fn get(url: &frontier::Url) -> (Option<String>, Vec<u8>) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let client = reqwest::Client::builder()
            .no_proxy()
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .unwrap();
        let answer = client.get(url.as_str()).send().await.unwrap();
        let content_type = answer
            .headers()
            .get("content-type")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        (content_type, answer.bytes().await.unwrap().to_vec())
    })
}
