use crate::util::{Crawl, crawl, serve};

/// A site at `127.0.0.1:b` with a home page linking to two pages (one links to a third), and a seed at
/// `127.0.0.1:a` that redirects to it (two hosts: their ports differ).
fn redirecting_seed() -> (u16, u16) {
    let (b, _) = serve(|path| match path {
        "/" => (
            200,
            "text/html",
            b"<a href=\"/x\">x</a> <a href=\"/y\">y</a>".to_vec(),
        ),
        "/robots.txt" => (404, "text/plain", Vec::new()),
        "/x" => (200, "text/html", b"<a href=\"/z\">z</a>".to_vec()),
        _ => (200, "text/html", b"<p>page</p>".to_vec()),
    });
    let target: &'static str = format!("http://127.0.0.1:{b}/").leak();
    let (a, _) = serve(move |path| match path {
        "/robots.txt" => (404, "text/plain", Vec::new()),
        _ => (301, target, Vec::new()),
    });
    (a, b)
}

fn crawl_seed(a: u16, extra: &[&str]) -> Crawl {
    let mut args: Vec<String> = ["--progress", "off", "--delay", "0", "--address-delay", "0"]
        .map(String::from)
        .to_vec();
    args.extend(extra.iter().map(|s| s.to_string()));
    args.extend(["--seed".into(), format!("http://127.0.0.1:{a}/")]);
    let crawl = crawl(&args);
    crawl.assert_success();
    crawl
}

/// Regression: with the default scope (the seeds' hosts), a seed redirecting to
/// another host (`example.com` to `www.example.com`) was dropped as `out_of_scope`.
#[test]
fn a_seeds_redirect_target_is_a_seed_and_its_host_in_scope() {
    let (a, b) = redirecting_seed();
    // Both hosts are on loopback: the guard would refuse the target, which is not a seed
    // the user gave (see the next test).
    let crawl = crawl_seed(a, &["--allow-private-addresses", "true"]);
    let seed = format!("http://127.0.0.1:{a}/");
    assert_eq!(crawl.record(&seed)["status"], 301);
    for path in ["/", "/x", "/y", "/z"] {
        let record = crawl.record(&format!("http://127.0.0.1:{b}{path}"));
        assert_eq!(record["status"], 200, "{record}");
    }
    assert_eq!(crawl.record(&format!("http://127.0.0.1:{b}/"))["depth"], 0);
    // The target names the seed that redirected to it; the seed names nothing.
    let target = crawl.record(&format!("http://127.0.0.1:{b}/"));
    assert_eq!(target["from"], seed.as_str());
    assert_eq!(crawl.record(&seed)["from"], serde_json::Value::Null);
    assert_eq!(crawl.records.len(), 5);
}

/// Crawling a list of URLs (`--max-depth 0`): a listed URL's redirect is followed, and
/// nothing beyond it.
#[test]
fn a_list_of_urls_follows_their_redirects() {
    let (a, b) = redirecting_seed();
    let crawl = crawl_seed(
        a,
        &["--allow-private-addresses", "true", "--max-depth", "0"],
    );
    assert_eq!(
        crawl.record(&format!("http://127.0.0.1:{b}/"))["status"],
        200
    );
    assert_eq!(crawl.records.len(), 2, "{:?}", crawl.records.keys());
}

/// The redirect target joins the scope, not the hosts the SSRF guard trusts: a seed on the
/// public web cannot send the crawler into the network it runs in.
#[test]
fn a_seeds_redirect_target_is_not_trusted_by_the_ssrf_guard() {
    let (a, b) = redirecting_seed();
    let crawl = crawl_seed(a, &[]);
    let record = crawl.record(&format!("http://127.0.0.1:{b}/"));
    assert_eq!(record["error"], "ssrf_blocked", "{record}");
    assert_eq!(crawl.records.len(), 2);
}

/// A resumed crawl keeps the redirect targets' hosts in scope (`seed-redirects.txt` in the
/// state directory): links found on them after the resume are followed.
#[test]
fn a_resumed_crawl_keeps_its_seeds_redirect_targets_in_scope() {
    let (a, b) = redirecting_seed();
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("s");
    let dir = dir.to_str().unwrap();
    let flags = ["--allow-private-addresses", "true", "--state-dir", dir];
    // The seed's redirect and the target's home page, then a stop: /x and /y stay queued.
    let first = crawl_seed(a, &[&flags[..], &["--max-pages", "2"]].concat());
    assert_eq!(first.records.len(), 2, "{:?}", first.records.keys());
    let saved = std::fs::read_to_string(state.path().join("s/seed-redirects.txt")).unwrap();
    assert_eq!(
        saved.trim(),
        format!("http://127.0.0.1:{b}/ http://127.0.0.1:{a}/")
    );

    let mut args: Vec<String> = ["--progress", "off", "--resume", "--max-pages", "0"]
        .map(String::from)
        .to_vec();
    args.extend(flags.map(String::from));
    let resumed = crawl(&args);
    resumed.assert_success();
    // /z is linked from /x, fetched after the resume: in scope only through the redirect.
    for path in ["/x", "/y", "/z"] {
        let record = resumed.record(&format!("http://127.0.0.1:{b}{path}"));
        assert_eq!(record["status"], 200, "{record}");
    }
}

/// A server on `127.0.0.1` whose `/` answers with a redirect to `location(its port)`, and
/// whose `/home` links to `/next`. Returns its port.
fn seed_redirecting_to(location: fn(u16) -> String) -> u16 {
    let own = std::sync::Arc::new(std::sync::OnceLock::new());
    let known = std::sync::Arc::clone(&own);
    let (port, _) = serve(move |path| match path {
        "/robots.txt" => (404, "text/plain", Vec::new()),
        "/home" => (200, "text/html", b"<a href=\"/next\">next</a>".to_vec()),
        "/next" => (200, "text/html", b"<p>next</p>".to_vec()),
        _ => {
            let target: &'static str = location(*known.get().unwrap()).leak();
            (301, target, Vec::new())
        }
    });
    own.set(port).unwrap();
    port
}

/// Regression: a seed `http://127.0.0.1:PORT/` answering with a redirect to
/// `http://localhost:PORT/home` had its target recorded `ssrf_blocked`: it is the same server
/// under another name, and is crawled now, links and all; a resume trusts it again.
#[test]
fn a_seeds_redirect_to_another_name_of_the_same_server_is_crawled() {
    let port = seed_redirecting_to(|port| format!("http://localhost:{port}/home"));
    let state = tempfile::tempdir().unwrap();
    let dir = state.path().join("s");
    let dir = dir.to_str().unwrap();
    let first = crawl_seed(port, &["--state-dir", dir, "--max-pages", "2"]);
    let home = format!("http://localhost:{port}/home");
    assert_eq!(first.record(&home)["status"], 200, "{}", first.stderr());
    assert_eq!(first.records.len(), 2, "{:?}", first.records.keys());

    let resumed = crawl(&[
        "--progress",
        "off",
        "--delay",
        "0",
        "--resume",
        "--max-pages",
        "0",
        "--state-dir",
        dir,
    ]);
    resumed.assert_success();
    let next = resumed.record(&format!("http://localhost:{port}/next"));
    assert_eq!(next["status"], 200, "{next}");
}

/// The other side of the same rule: a seed's redirect to a private address that is not the
/// seed's own stays blocked.
#[test]
fn a_seeds_redirect_to_another_private_address_stays_blocked() {
    let port = seed_redirecting_to(|port| format!("http://169.254.169.254:{port}/latest/"));
    let crawl = crawl_seed(port, &[]);
    let record = crawl.record(&format!("http://169.254.169.254:{port}/latest/"));
    assert_eq!(record["error"], "ssrf_blocked", "{record}");
    assert_eq!(crawl.records.len(), 2);
}
