use crate::util::{crawl, fast, serve};

/// A forward HTTP proxy on loopback that is also the origin of `a.example`: requests to a
/// proxy name their target in absolute form (`GET http://a.example/ HTTP/1.1`), which the
/// test server hands over as the path, and logs.
fn proxy() -> (u16, crate::util::Requests) {
    serve(|target| match target {
        "http://a.example/" => (
            200,
            "text/html",
            b"<a href=/b>b</a><a href=http://169.254.169.254/latest/>meta</a>".to_vec(),
        ),
        "http://a.example/b" => (200, "text/html", b"<p>b</p>".to_vec()),
        _ => (404, "text/html", Vec::new()),
    })
}

/// An explicit proxy (`fetch.proxy`) carries every request, and the SSRF guard still judges
/// each target: a link to a cloud's metadata service is not requested, through the proxy or
/// otherwise.
#[test]
fn an_explicit_proxy_carries_the_requests_and_the_guard_still_judges_them() {
    let (port, log) = proxy();
    let mut args = fast();
    args.extend(
        [
            "--proxy",
            &format!("http://127.0.0.1:{port}"),
            // Any host in scope: the guard, not the scope, must stop the metadata link.
            "--scope",
            "any",
            "--seed",
            "http://a.example/",
        ]
        .map(String::from),
    );
    let run = crawl(&args);
    run.assert_success();
    assert_eq!(run.record("http://a.example/")["status"], 200);
    assert_eq!(run.record("http://a.example/b")["status"], 200);
    assert_eq!(
        run.record("http://169.254.169.254/latest/")["error"],
        "ssrf_blocked"
    );
    let requested = log.paths();
    assert!(
        requested.contains(&"http://a.example/robots.txt".to_owned()),
        "{requested:?}"
    );
    assert!(
        requested.iter().all(|t| !t.contains("169.254")),
        "{requested:?}"
    );
}

/// A proxy in the environment is never taken silently: the resolver would then see the
/// proxy's name, not the target's, and the guard's check at connection would be gone.
#[test]
fn a_proxy_in_the_environment_is_not_used() {
    let (port, log) = proxy();
    let mut args = fast();
    args.extend(["--seed".to_owned(), "http://a.example/".to_owned()]);
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .env("HTTP_PROXY", format!("http://127.0.0.1:{port}"))
        .env("http_proxy", format!("http://127.0.0.1:{port}"))
        .env("ALL_PROXY", format!("http://127.0.0.1:{port}"))
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let (output, hung) = crate::util::wait_or_kill(child, std::time::Duration::from_secs(60));
    assert!(!hung);
    // a.example does not resolve here: nothing could be fetched.
    assert_eq!(output.status.code(), Some(3));
    assert!(log.paths().is_empty());
}

/// A proxy that is not a proxy URL is refused by name.
#[test]
fn a_bad_proxy_is_refused_by_name() {
    let run = crawl(&["--seed", "http://a.example/", "--proxy", "ftp://x"]);
    assert_eq!(run.output.status.code(), Some(2));
    assert!(run.stderr().contains("fetch.proxy"), "{}", run.stderr());
}
