use std::time::{Duration, Instant};

use serde_json::Value;

use crate::util::{crawl, serve};

/// Flags of the polite default profile made quick: no delays and short back-offs, but the
/// default rule for giving hosts up (5 errors in a row lasting 30 minutes).
fn quick_default() -> Vec<String> {
    [
        "--progress",
        "off",
        "--delay",
        "0",
        "--address-delay",
        "0",
        "--backoff-base",
        "10ms",
        "--backoff-max",
        "50ms",
        "--max-retry-after",
        "50ms",
    ]
    .map(String::from)
    .to_vec()
}

fn html_linking(links: &[String]) -> Vec<u8> {
    let anchors: String = links
        .iter()
        .map(|l| format!("<a href=\"{l}\">x</a>\n"))
        .collect();
    format!("<!doctype html><html><body>{anchors}</body></html>").into_bytes()
}

/// Regression: a home page linking first to five pages that answer 500, then to
/// 100 good pages, gave the whole host up after the fifth error: 2 of 106 URLs crawled,
/// the rest dropped without records, exit code 0.
#[test]
fn a_few_broken_pages_do_not_abandon_their_site() {
    let mut links: Vec<String> = (0..5).map(|i| format!("/broken/{i}")).collect();
    links.extend((0..100).map(|i| format!("/good/{i}")));
    let home = html_linking(&links);
    let (port, _log) = serve(move |path| match path {
        "/" => (200, "text/html", home.clone()),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        p if p.starts_with("/broken/") => (500, "text/html", b"oops".to_vec()),
        _ => (200, "text/html", b"<p>fine</p>".to_vec()),
    });
    let mut args = quick_default();
    args.extend(["--seed".into(), format!("http://127.0.0.1:{port}/")]);
    let crawl = crawl(&args);
    crawl.assert_success();
    assert_eq!(crawl.records.len(), 106, "{}", crawl.stderr());
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    for i in 0..100 {
        assert_eq!(crawl.record(&url(&format!("/good/{i}")))["status"], 200);
    }
    for i in 0..5 {
        let record = crawl.record(&url(&format!("/broken/{i}")));
        assert_eq!(record["status"], 500);
        assert_eq!(record["attempts"], 3);
    }
    assert!(!crawl.stderr().contains("giving up"), "{}", crawl.stderr());
}

/// Regression (found trying it as a user): with the default back-off, the five broken pages'
/// retries doubled the host's wait after each, and the 106-page site took 9 minutes. A
/// server that answers is up: its broken pages wait the base back-off each.
#[test]
fn broken_pages_do_not_slow_their_site_down_more_and_more() {
    let links: Vec<String> = (0..5).map(|i| format!("/broken/{i}")).collect();
    let home = html_linking(&links);
    let (port, _log) = serve(move |path| match path {
        "/" => (200, "text/html", home.clone()),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (500, "text/html", b"oops".to_vec()),
    });
    let started = std::time::Instant::now();
    let crawl = crawl(&[
        "--progress".to_owned(),
        "off".to_owned(),
        "--delay".to_owned(),
        "0".to_owned(),
        "--backoff-base".to_owned(),
        "100ms".to_owned(),
        "--seed".to_owned(),
        format!("http://127.0.0.1:{port}/"),
    ]);
    crawl.assert_success();
    assert_eq!(crawl.records.len(), 6);
    // 15 tries of broken pages, 100 ms apart: under 2 s. Doubled per error in a row, the
    // waits would add up to 0.1 s * (2^14 - 1), capped at 10 minutes each: over an hour.
    let took = started.elapsed();
    assert!(took < Duration::from_secs(10), "took {took:?}");
}

/// A host that answers errors to everything for longer than `give_up_after` is given up,
/// and every URL it still held gets a record saying so: none is dropped silently.
#[test]
fn a_host_failing_for_long_is_given_up_with_a_record_for_every_url() {
    let links: Vec<String> = (0..60).map(|i| format!("/p/{i}")).collect();
    let home = html_linking(&links);
    let (port, log) = serve(move |path| match path {
        "/" => (200, "text/html", home.clone()),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (503, "text/html", b"down".to_vec()),
    });
    let mut args = quick_default();
    args.extend(
        [
            "--give-up-after",
            "300ms",
            "--max-consecutive-errors",
            "3",
            "--seed",
        ]
        .map(String::from),
    );
    args.push(format!("http://127.0.0.1:{port}/"));
    let crawl = crawl(&args);
    crawl.assert_success();
    // The home page and its 60 links: each has exactly one record.
    assert_eq!(crawl.records.len(), 61, "{}", crawl.stderr());
    let given_up: Vec<&Value> = crawl
        .records
        .values()
        .filter(|r| r["error"] == "host_given_up")
        .collect();
    assert!(!given_up.is_empty(), "{}", crawl.stderr());
    for record in &given_up {
        let detail = record["error_detail"].as_str().unwrap();
        assert!(detail.contains("given up"), "{record}");
    }
    // URLs never tried before the host was given up say so, and were never requested.
    let untried: Vec<&&Value> = given_up.iter().filter(|r| r["attempts"] == 0).collect();
    assert!(!untried.is_empty());
    assert!(untried.iter().all(|r| r["status"].is_null()));
    let requested = log.paths();
    for record in untried {
        let url = record["url"].as_str().unwrap();
        let path = &url[url.find("/p/").unwrap()..];
        assert!(!requested.iter().any(|p| p == path), "{path} was requested");
    }
    assert!(
        crawl.stderr().contains("giving up 127.0.0.1"),
        "{}",
        crawl.stderr()
    );
}

/// What an unreachable seed's crawl says and how long it takes.
fn crawl_unreachable(seed: &str) -> (crate::util::Crawl, Duration) {
    let mut args = quick_default();
    // The default back-off, so that the bound below holds for the settings users have.
    args.truncate(4);
    args.extend(["--seed".into(), seed.to_owned()]);
    let started = Instant::now();
    let crawl = crawl(&args);
    (crawl, started.elapsed())
}

/// Regression: an unreachable seed took two minutes, wrote `robots_unreachable`
/// and exited 0, naming neither DNS nor the connection.
#[test]
fn an_unreachable_seed_is_known_in_seconds_says_why_and_exits_3() {
    // Plain HTTP where TLS is expected: the handshake fails.
    let (plain, _log) = serve(|_| (200, "text/html", b"<p>not TLS</p>".to_vec()));
    // After the server's: a port released before it binds may be given to it.
    let refused = crate::util::refused_port();
    let cases = [
        (
            "http://no-such-host.invalid/".to_owned(),
            "dns",
            "no-such-host.invalid",
        ),
        (format!("http://127.0.0.1:{refused}/"), "connect", "refused"),
        (format!("https://127.0.0.1:{plain}/"), "tls", ""),
    ];
    for (seed, kind, words) in cases {
        let (crawl, took) = crawl_unreachable(&seed);
        assert_eq!(
            crawl.output.status.code(),
            Some(3),
            "{seed}: {}",
            crawl.stderr()
        );
        // Three tries with the default back-off (1 s, then 2 s) between them.
        assert!(took < Duration::from_secs(30), "{seed}: took {took:?}");
        let record = crawl.record(&seed);
        assert_eq!(record["error"], kind, "{seed}: {record}");
        assert_eq!(record["attempts"], 3, "{seed}");
        let detail = record["error_detail"].as_str().unwrap_or_default();
        assert!(!detail.is_empty(), "{seed}: {record}");
        assert!(
            detail.to_lowercase().contains(words),
            "{seed}: {detail:?} should say {words:?}"
        );
        let stderr = crawl.stderr();
        assert!(stderr.contains("could not be crawled"), "{stderr}");
        assert!(stderr.contains(&format!("{kind}: ")), "{stderr}");
        assert!(stderr.contains("no page could be fetched"), "{stderr}");
    }
}

/// A crawl where some page answered exits 0, however many others failed.
#[test]
fn a_crawl_with_an_answer_exits_0_and_names_the_hosts_it_could_not_reach() {
    let (port, _log) = serve(|path| match path {
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (200, "text/html", b"<p>fine</p>".to_vec()),
    });
    // After the server's: a port released before it binds may be given to it.
    let refused = crate::util::refused_port();
    let mut args = quick_default();
    args.truncate(4);
    for seed in [
        format!("http://127.0.0.1:{port}/"),
        format!("http://127.0.0.1:{refused}/"),
    ] {
        args.extend(["--seed".into(), seed]);
    }
    let crawl = crawl(&args);
    crawl.assert_success();
    let stderr = crawl.stderr();
    assert!(
        stderr.contains(&format!("127.0.0.1:{refused} (1 URL): connect: ")),
        "{stderr}"
    );
    assert!(!stderr.contains(&format!("127.0.0.1:{port} (")), "{stderr}");
}

/// Regression: a fetch that hangs showed as "1 in flight" for as long as it hung,
/// with no word of which URL. Past 5 s the status line names it.
#[test]
fn a_fetch_in_flight_long_is_named_in_the_status_line() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    // Takes connections and never answers, holding them open.
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in listener.incoming() {
            held.push(stream);
        }
    });
    let url = format!("http://127.0.0.1:{port}/hangs");
    // fast() without its `--progress off`.
    let mut args: Vec<String> = crate::util::fast()
        .chunks(2)
        .filter(|flag| flag[0] != "--progress")
        .flatten()
        .cloned()
        .collect();
    args.extend(
        [
            "--seed",
            &url,
            "--robots",
            "false",
            "--max-attempts",
            "1",
            "--timeout",
            "7s",
            "--progress",
            "lines",
            "--status-interval",
            "500ms",
        ]
        .map(String::from),
    );
    let crawl = crate::util::crawl(&args);
    let stderr = crawl.stderr();
    assert_eq!(crawl.record(&url)["error"], "timeout", "{stderr}");
    let named: Vec<&str> = stderr
        .lines()
        .filter(|l| {
            l.contains("1 in flight, 0 errors; waiting ") && l.ends_with(&format!(" s for {url}"))
        })
        .collect();
    assert!(!named.is_empty(), "{stderr}");
    // Not before 5 s.
    assert!(
        stderr
            .lines()
            .any(|l| l.contains("1 in flight, 0 errors") && !l.contains("waiting")),
        "{stderr}"
    );
}
