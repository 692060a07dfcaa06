use testweb::{HostConfig, SiteConfig, Special};

use crate::util::{Site, crawl, fast, serve};

/// A site with an endless calendar (`/cal/N` links to `/cal/N+1` and to a page in a path
/// that repeats itself), a page with 200,000 links, and a few good pages.
fn trap_site() -> (u16, crate::util::Requests) {
    serve(|path| {
        let html = |body: String| (200, "text/html", body.into_bytes());
        if path == "/" {
            return html(
                "<a href=/cal/0>calendar</a><a href=/many>many</a><a href=/good/1>good</a>\
                 <a href=/notype>no content type</a>"
                    .to_owned(),
            );
        }
        if path == "/notype" {
            // HTML without a Content-Type: sniffed, and its links followed.
            return (200, "", b"<!DOCTYPE html><a href=/good/3>x</a>".to_vec());
        }
        if let Some(n) = path.strip_prefix("/cal/") {
            let n: u64 = n.parse().unwrap_or(0);
            return html(format!(
                "<a href=/cal/{}>next month</a><a href=/loop/a/b/a/b/a/b/{n}>loop</a>",
                n + 1
            ));
        }
        if path == "/many" {
            let mut body = String::with_capacity(200_000 * 24);
            for i in 0..200_000 {
                body.push_str(&format!("<a href=/m/{i}>x</a>"));
            }
            return html(body);
        }
        if path.starts_with("/good/") {
            // Links that are not URLs a crawler fetches, beside a good one; each page its own
            // content (its path), or the content-seen test would skip the copies' links.
            return html(format!(
                "<p>{path}</p><a href=/good/2>more</a><a href=javascript:void(0)>js</a>\
                 <a href=\"/good/2;jsessionid=0A1B2C\">s1</a><a href=\"/good/2?PHPSESSID=f00\">s2</a>\
                 <a href=\"data:text/html,<a href=x>\">data</a><a href=\"http://[broken/\">b</a>\
                 <a href=\"/{}\">long</a><a href=\"mailto:x@example.com\">m</a>",
                "x".repeat(10_000)
            ));
        }
        (200, "text/plain", b"leaf".to_vec())
    })
}

/// The trap site crawled with each profile's own trap settings, and with a depth cap.
#[test]
fn traps_end_at_the_rules_and_good_pages_are_still_found() {
    // The polite profile, without its politeness delays; the local profile; a depth cap of 12.
    let default: Vec<String> = ["--progress", "off", "--delay", "0", "--address-delay", "0"]
        .map(String::from)
        .to_vec();
    let capped: Vec<String> = [&fast()[..], &["--max-depth".to_owned(), "12".to_owned()]].concat();
    for (name, profile, last_month) in [
        ("default", default, 19),
        ("local", fast(), 19),
        ("depth cap 12", capped, 11),
    ] {
        traps_end_with(name, &profile, last_month);
    }
}

/// Crawls the trap site with `profile`: the calendar's last month fetched is `last_month`.
fn traps_end_with(name: &str, profile: &[String], last_month: u32) {
    let (port, log) = trap_site();
    let mut args = profile.to_vec();
    let seed = format!("http://127.0.0.1:{port}/");
    args.extend(
        [
            "--seed",
            &seed,
            "--robots",
            "false",
            "--max-links-per-page",
            "1000",
        ]
        .map(String::from),
    );
    let run = crawl(&args);
    assert!(run.output.status.success(), "{name}: {}", run.stderr());
    let url = |p: &str| format!("http://127.0.0.1:{port}{p}");
    // The good pages are found, the one behind a page without a Content-Type too.
    assert_eq!(run.record(&url("/good/2"))["status"], 200, "{name}");
    assert_eq!(run.record(&url("/good/3"))["status"], 200, "{name}");
    // The calendar ends: /cal/N is N + 1 links from the seed. With a depth cap of 12, at
    // depth 12; without one, where a link to a page of its own page's shape goes deeper than
    // crawl.max_same_shape_depth (20): no more requests than the old depth cap of 20 made.
    let month = |n: u32| url(&format!("/cal/{n}"));
    assert!(run.records.contains_key(&month(last_month)), "{name}");
    assert!(!run.records.contains_key(&month(last_month + 1)), "{name}");
    let requested = log.paths();
    let calendar = requested.iter().filter(|p| p.starts_with("/cal/")).count();
    assert_eq!(calendar as u32, last_month + 1, "{name}");
    // The self-repeating paths are dropped as traps, never requested.
    assert!(
        requested.iter().all(|p| !p.starts_with("/loop/")),
        "{name}: a trap URL was requested"
    );
    // The page of 200,000 links: 1,000 followed, the rest counted.
    assert_eq!(run.record(&url("/many"))["links"], 200_000, "{name}");
    assert_eq!(
        requested.iter().filter(|p| p.starts_with("/m/")).count(),
        1_000,
        "{name}"
    );
    // Session ids in path parameters and queries name the same page: fetched once.
    assert_eq!(
        requested
            .iter()
            .filter(|p| p.starts_with("/good/2"))
            .count(),
        1,
        "{name}"
    );
    let stderr = run.stderr();
    // Three good pages (/good/1, 2 and 3), each with three links of a scheme not fetched
    // (javascript:, data:, mailto:), one unparsable and one too long.
    let calendar_end = if last_month == 19 {
        "repeated shape"
    } else {
        "too deep"
    };
    for counted in [
        "199,000 not followed because their page had more than extract.max_links_per_page (1,000)",
        calendar_end,
        "repeated segment",
        "9 unsupported scheme",
        "3 unparsable",
        "3 too long",
    ] {
        assert!(
            stderr.contains(counted),
            "{name}: {counted} not in the summary:\n{stderr}"
        );
    }
}

/// Regression: a book whose 600 chapters each link to the next (as mdBook makes
/// them) was cut at the old depth limit of 20. With each profile's settings, every page of
/// the site is fetched, the last chapter 601 links from the seed.
#[test]
fn a_book_of_600_chained_chapters_is_read_to_its_end() {
    let site = Site::start(SiteConfig {
        pages_per_host: 20,
        host_configs: vec![HostConfig {
            specials: Special::book("/book", 600),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let seed = site.web.seeds()[0].clone();
    let default: Vec<String> = ["--progress", "off", "--delay", "0", "--address-delay", "0"]
        .map(String::from)
        .to_vec();
    for (profile, args) in [("default", default), ("local", fast())] {
        let mut args = args;
        args.extend(["--seed".to_owned(), seed.clone()]);
        let run = crawl(&args);
        assert!(run.output.status.success(), "{profile}: {}", run.stderr());
        assert_eq!(run.fetched(), site.web.expected_pages(), "{profile}");
        let last = site.web.url(0, "/book/ch59-09-concepts.html");
        assert_eq!(run.record(&last)["depth"], 600, "{profile}");
    }
}

#[test]
fn hostile_robots_txt_files_neither_stop_nor_fool_the_crawl() {
    // A robots.txt of 2 MB (only the first 500 KiB count; its disallow comes first), one of
    // binary garbage, and one that redirects to the real rules.
    for (name, robots) in [
        ("huge", {
            let mut txt = b"User-agent: *\nDisallow: /private\n".to_vec();
            txt.resize(2 << 20, b'#');
            (200, "text/plain", txt)
        }),
        (
            "binary",
            (
                200,
                "application/octet-stream",
                (0..4096u32).map(|i| (i * 7919 % 251) as u8).collect(),
            ),
        ),
        ("redirect", (301, "/rules.txt", Vec::new())),
    ] {
        let (port, log) = serve(move |path| match path {
            "/robots.txt" => robots.clone(),
            "/rules.txt" => (
                200,
                "text/plain",
                b"User-agent: *\nDisallow: /private\n".to_vec(),
            ),
            "/" => (
                200,
                "text/html",
                b"<a href=/public>p</a><a href=/private>x</a>".to_vec(),
            ),
            _ => (200, "text/plain", b"leaf".to_vec()),
        });
        let mut args = fast();
        let seed = format!("http://127.0.0.1:{port}/");
        args.extend(["--seed", &seed].map(String::from));
        let run = crawl(&args);
        assert!(run.output.status.success(), "{name}: {}", run.stderr());
        let public = run.record(&format!("http://127.0.0.1:{port}/public"));
        assert_eq!(public["status"], 200, "{name}");
        let requested = log.paths();
        if name != "binary" {
            assert!(
                !requested.contains(&"/private".to_owned()),
                "{name}: {requested:?}"
            );
        }
    }
}
