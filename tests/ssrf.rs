use std::sync::{Arc, Mutex};

use crate::util::{self, crawl, fast};

/// A server on 127.0.0.1 whose root links to a cloud metadata address and to itself under
/// the name `localhost`; it logs the paths asked for.
fn serve() -> (u16, util::Requests) {
    let port = Arc::new(Mutex::new(0u16));
    let own = Arc::clone(&port);
    let (bound, log) = util::serve(move |path| {
        let port = *own.lock().unwrap();
        let body = if path == "/" {
            format!(
                "<a href=\"http://169.254.169.254/latest/meta-data/\">m</a>\
                 <a href=\"http://localhost:{port}/secret\">s</a>\
                 <a href=\"http://[::1]:{port}/v6\">v6</a>"
            )
        } else {
            "ok".to_owned()
        };
        (200, "text/html", body.into_bytes())
    });
    *port.lock().unwrap() = bound;
    (bound, log)
}

fn run(port: u16, extra: &[&str]) -> crate::util::Crawl {
    let mut args = fast();
    let seed = format!("http://127.0.0.1:{port}/");
    args.extend(["--seed", &seed, "--scope", "any", "--robots", "false"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = crawl(&args);
    run.assert_success();
    run
}

#[test]
fn links_from_pages_to_private_addresses_are_not_fetched() {
    let (port, log) = serve();
    let run = run(port, &[]);
    for url in [
        "http://169.254.169.254/latest/meta-data/".to_owned(),
        format!("http://localhost:{port}/secret"),
        format!("http://[::1]:{port}/v6"),
    ] {
        assert_eq!(run.record(&url)["error"], "ssrf_blocked", "{url}");
    }
    assert_eq!(log.paths(), ["/"], "only the seed was requested");
    let stderr = run.stderr();
    assert!(stderr.contains("3 ssrf_blocked"), "{stderr}");
    // Regression: the records said nothing of why, and the summary's hosts not
    // crawled ended in "ssrf_blocked: " with nothing after it.
    let allow = "--allow-private-addresses true (fetch.allow_private_addresses) allows them";
    for (url, why) in [
        (
            "http://169.254.169.254/latest/meta-data/".to_owned(),
            "169.254.169.254 is a link-local address",
        ),
        (
            format!("http://localhost:{port}/secret"),
            "localhost resolves to an address that is not public",
        ),
        (
            format!("http://[::1]:{port}/v6"),
            "::1 is a loopback address (this machine)",
        ),
    ] {
        let detail = run.record(&url)["error_detail"].clone();
        let detail = detail.as_str().unwrap_or_default();
        assert!(detail.starts_with(why), "{url}: {detail}");
        assert!(detail.ends_with(allow), "{url}: {detail}");
    }
    let line = stderr
        .lines()
        .find(|l| {
            l.trim_start()
                .starts_with(&format!("localhost:{port} (1 URL)"))
        })
        .unwrap_or_else(|| panic!("no line for localhost:{port}:\n{stderr}"));
    assert!(
        line.contains("ssrf_blocked: localhost resolves to an address that is not public")
            && line.ends_with(allow),
        "{line}"
    );
}

#[test]
fn the_guard_can_be_lifted_for_intranet_crawls() {
    let (port, log) = serve();
    let run = run(
        port,
        // The metadata link stays out of this crawl: tests touch nothing beyond loopback.
        &[
            "--allow-private-addresses",
            "true",
            "--timeout",
            "1s",
            "--exclude",
            r"169\.254\.",
        ],
    );
    assert_eq!(
        run.record(&format!("http://localhost:{port}/secret"))["status"],
        200
    );
    assert!(log.paths().contains(&"/secret".to_owned()));
}
