use testweb::{HostConfig, SiteConfig};

use crate::util::{Crawl, Site, crawl_site};

/// One crawl of a small site with every special page, shared by the tests below.
fn crawl_specials() -> (Site, Crawl) {
    let site = Site::start(SiteConfig {
        pages_per_host: 10,
        host_configs: vec![HostConfig::every_special()],
        ..SiteConfig::default()
    });
    // Many errors on one host, with the default give-up rule: every kind is still seen.
    let crawl = crawl_site(
        &site,
        &["--timeout", "600ms", "--max-body-bytes", "1000000"],
    );
    (site, crawl)
}

#[test]
fn each_kind_of_answer_gets_the_record_it_deserves() {
    let (site, crawl) = crawl_specials();
    let record = |path: &str| crawl.record(&site.web.url(0, path)).clone();
    let field = |path: &str, key: &str| record(path)[key].clone();

    // A 404 or 410 is an answer: no retry.
    for path in ["/status/404", "/status/410"] {
        assert_eq!(field(path, "attempts"), 1, "{path}");
        assert_eq!(field(path, "error"), serde_json::Value::Null, "{path}");
    }
    assert_eq!(field("/status/404", "status"), 404);
    // 5xx and 429 are retried up to max_attempts (3), honouring Retry-After (capped).
    for (path, status) in [
        ("/status/500", 500),
        ("/status/503", 503),
        ("/status/429", 429),
    ] {
        assert_eq!(field(path, "status"), status, "{path}");
        assert_eq!(field(path, "attempts"), 3, "{path}");
    }
    // A host that fails a few times then answers: the last try's answer is recorded.
    assert_eq!(field("/flaky/503", "status"), 200);
    assert_eq!(field("/flaky/503", "attempts"), 3);
    assert_eq!(field("/flaky/500", "attempts"), 2);

    // Redirects are recorded with their target, which is fetched as a page of its own.
    let target = site.web.url(0, "/t/redirect/301-target");
    assert_eq!(field("/redirect/301", "status"), 301);
    assert_eq!(field("/redirect/301", "redirect"), target.as_str());
    assert!(crawl.records.contains_key(&target));
    // A redirect loop ends at the seen-test: each side fetched once.
    assert_eq!(field("/redirect/loop-a", "attempts"), 1);
    assert_eq!(field("/redirect/loop-b", "attempts"), 1);

    // A server that never answers: a timeout, retried, then recorded.
    assert_eq!(field("/slow/hang", "error"), "timeout");
    assert_eq!(field("/slow/hang", "attempts"), 3);
    // A slow answer within the timeout is a page; a body trickling past it is a timeout.
    assert_eq!(field("/slow/delay", "status"), 200);
    assert_eq!(field("/slow/trickle", "error"), "timeout");

    // Bodies over the cap are cut at the cap, after decompression too.
    for path in ["/huge", "/gzip-bomb"] {
        assert_eq!(field(path, "error"), "too_large", "{path}");
        assert_eq!(field(path, "bytes"), 1_000_000, "{path}");
        // Regression: a too_large record said nothing of the cap or what was kept.
        let detail = field(path, "error_detail");
        let detail = detail.as_str().unwrap_or_default();
        assert!(
            detail.contains("fetch.max_body_bytes (977 KiB)")
                && detail.contains("only its first 977 KiB were read"),
            "{path}: {detail}"
        );
    }
    // A gzip page is decoded and its links followed.
    assert!(field("/gzip", "links").as_u64().unwrap() >= 2);
    assert!(crawl.records.contains_key(&site.web.url(0, "/t/gzip/1")));

    // Non-HTML is recorded, never parsed for links.
    for path in ["/binary/png", "/binary/pdf"] {
        assert_eq!(field(path, "links"), 0, "{path}");
        assert_ne!(
            field(path, "content_type"),
            serde_json::Value::Null,
            "{path}"
        );
    }
    // Malformed HTML still yields the links a browser sees.
    assert!(field("/malformed", "links").as_u64().unwrap() >= 11);
    // Pages in other encodings still yield their links.
    for path in [
        "/charset/windows-1252-header",
        "/charset/windows-1252-meta",
        "/charset/shift-jis-header",
        "/charset/shift-jis-meta",
    ] {
        assert!(field(path, "links").as_u64().unwrap() > 0, "{path}");
    }
    // <link rel=canonical> is recorded.
    assert_eq!(
        field("/canonical", "canonical"),
        site.web.url(0, "/").as_str()
    );
    // Every record carries the contract's fields.
    for (url, record) in &crawl.records {
        for key in [
            "url",
            "attempts",
            "status",
            "error",
            "depth",
            "content_type",
            "bytes",
            "links",
            "elapsed_ms",
            "redirect",
        ] {
            assert!(record.get(key).is_some(), "{url}: {key} missing");
        }
    }
    let stderr = crawl.stderr();
    assert!(
        stderr.contains("2 timeout") && stderr.contains("2 too_large"),
        "{stderr}"
    );
}
