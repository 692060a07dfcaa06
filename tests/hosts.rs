//! `[[hosts]]`, `fetch.headers` and `fetch.cookies`, seen from the servers: each header,
//! credential and cookie reaches the hosts it belongs to and no other, a redirect to another
//! host included; robots.txt obeyed or not per host; `--explain-host`; bad entries and
//! missing secrets refused before anything is written.

use crate::util::{self, Answer, Requests, crawl, crawl_with_env, fast};

/// A test server whose `page(path)` answers each request; every request is logged with its
/// headers.
fn server(page: impl Fn(&str) -> Answer + Send + 'static) -> (u16, Requests) {
    util::server(move |request| page(&request.path))
}

fn html(body: String) -> Answer {
    (
        200,
        vec![("content-type", "text/html".into())],
        body.into_bytes(),
    )
}

fn not_found() -> Answer {
    (404, vec![("content-type", "text/plain".into())], Vec::new())
}

/// The local profile with `extra` appended, as a config file in `dir`: the crawler reads one
/// config file.
fn config_file(dir: &std::path::Path, extra: &str) -> String {
    let local = include_str!("../config/local.toml");
    let path = dir.join("crawl.toml");
    std::fs::write(&path, format!("{local}\n{extra}")).unwrap();
    path.to_str().unwrap().to_owned()
}

/// Fast flags, but with this config file in place of the local profile.
fn args_with(config: &str, more: &[&str]) -> Vec<String> {
    let mut args = fast();
    let at = args.iter().position(|a| a == "--config").unwrap();
    args[at + 1] = config.to_owned();
    args.extend(more.iter().map(|s| s.to_string()));
    args
}

/// Host A has basic credentials (from the environment) and a header of its own, host B a
/// bearer token (from a file) and its header, host C nothing: every request each gets
/// carries its own and nothing of the others', robots.txt included; A's redirect to C does
/// not take A's credentials along, nor does A's link to B.
#[test]
fn headers_and_credentials_reach_only_the_hosts_they_belong_to() {
    let (c, c_log) = server(|path| match path {
        "/landing" => html("<p>landed</p>".into()),
        _ => not_found(),
    });
    let (b, b_log) = server(|path| match path {
        "/" => html("<a href=/b2>b2</a>".into()),
        "/b2" => html("<p>b2</p>".into()),
        _ => not_found(),
    });
    let (a, a_log) = server(move |path| match path {
        "/" => html(format!(
            "<a href=/a2>a2</a><a href=/go>go</a><a href=http://localhost:{b}/b2>b2</a>"
        )),
        "/a2" => html("<p>a2</p>".into()),
        "/go" => (
            302,
            vec![("location", format!("http://localhost:{c}/landing"))],
            Vec::new(),
        ),
        _ => not_found(),
    });
    let dir = tempfile::tempdir().unwrap();
    let token = dir.path().join("token");
    std::fs::write(&token, "b-token\n").unwrap();
    let config = config_file(
        dir.path(),
        &format!(
            r#"
[fetch.headers]
X-Global = "g"

[[hosts]]
match = "http://127.0.0.1:{a}"
headers = {{ X-A = "a" }}
basic_user = "bot"
basic_password_env = "CRAWLER_TEST_A_PASSWORD"

[[hosts]]
match = "localhost:{b}"
headers = {{ X-B = "b" }}
bearer_token_file = {token:?}
"#
        ),
    );
    let args = args_with(
        &config,
        &[
            "--scope",
            "any",
            "--allow-private-addresses",
            "true",
            "--seed",
            &format!("http://127.0.0.1:{a}/"),
            "--seed",
            &format!("http://localhost:{b}/"),
        ],
    );
    let run = crawl_with_env(&args, &[("CRAWLER_TEST_A_PASSWORD", "a-secret")]);
    run.assert_success();
    assert_eq!(
        run.record(&format!("http://127.0.0.1:{a}/go"))["redirect"],
        format!("http://localhost:{c}/landing")
    );
    assert_eq!(
        run.record(&format!("http://localhost:{c}/landing"))["status"],
        200
    );

    let basic = format!("Basic {}", data_encoding::BASE64.encode(b"bot:a-secret"));
    let a_requests = a_log.all();
    let paths: Vec<&str> = a_requests.iter().map(|r| r.path.as_str()).collect();
    for path in ["/robots.txt", "/", "/a2", "/go"] {
        assert!(paths.contains(&path), "{path} not requested: {paths:?}");
    }
    for r in &a_requests {
        assert_eq!(r.header("authorization"), Some(basic.as_str()), "{r:?}");
        assert_eq!(r.header("x-a"), Some("a"), "{r:?}");
        assert_eq!(r.header("x-global"), Some("g"), "{r:?}");
        assert_eq!(r.header("x-b"), None, "{r:?}");
    }
    let b_requests = b_log.all();
    assert!(b_requests.iter().any(|r| r.path == "/b2"), "{b_requests:?}");
    // Its entry does not say http://: its token is not sent in the clear, and one warning
    // says so.
    for r in &b_requests {
        assert_eq!(r.header("authorization"), None, "{r:?}");
        assert_eq!(r.header("x-b"), Some("b"), "{r:?}");
        assert_eq!(r.header("x-global"), Some("g"), "{r:?}");
        assert_eq!(r.header("x-a"), None, "{r:?}");
    }
    let withheld = format!("localhost:{b}: credentials not sent over plain http://");
    assert_eq!(
        run.stderr().matches(&withheld).count(),
        1,
        "{}",
        run.stderr()
    );
    assert!(!run.stderr().contains("127.0.0.1:{a}: credentials"));
    let c_requests = c_log.all();
    assert!(
        c_requests.iter().any(|r| r.path == "/landing"),
        "{c_requests:?}"
    );
    for r in &c_requests {
        assert_eq!(r.header("authorization"), None, "{r:?}");
        assert_eq!(r.header("x-a"), None, "{r:?}");
        assert_eq!(r.header("x-b"), None, "{r:?}");
        assert_eq!(r.header("x-global"), Some("g"), "{r:?}");
    }
}

/// Two hosts on one address, told apart by their ports (RFC 6265 would let their cookies
/// mix: cookies ignore ports): each gets back its own cookie alone; with cookies off, none;
/// on for one host only, only that host.
#[test]
fn cookies_go_back_only_to_the_host_that_set_them() {
    let site = |name: &'static str| {
        server(move |path| match path {
            "/" => (
                200,
                vec![
                    ("content-type", "text/html".into()),
                    ("set-cookie", format!("{name}=1; Path=/")),
                ],
                // Bodies of their own: the content-seen test would not follow a copy's links.
                format!("<a href=/next>{name}</a>").into_bytes(),
            ),
            "/next" => html("<p>next</p>".into()),
            _ => not_found(),
        })
    };
    let (a, a_log) = site("from_a");
    let (b, b_log) = site("from_b");
    let dir = tempfile::tempdir().unwrap();
    let seeds = [
        "--seed".to_owned(),
        format!("http://127.0.0.1:{a}/"),
        "--seed".to_owned(),
        format!("http://127.0.0.1:{b}/"),
    ];
    let cookie_of = |log: &Requests, path: &str| {
        let all = log.all();
        let r = all
            .iter()
            .find(|r| r.path == path)
            .unwrap_or_else(|| panic!("{path} not requested: {all:?}"));
        r.header("cookie").map(str::to_owned)
    };
    let run_with = |config: &str, more: &[&str]| {
        a_log.clear();
        b_log.clear();
        let mut args = args_with(config, more);
        args.extend(seeds.iter().cloned());
        let run = crawl(&args);
        run.assert_success();
        // Nothing before the first answer: robots.txt and the root go without.
        for log in [&a_log, &b_log] {
            assert_eq!(cookie_of(log, "/robots.txt"), None);
            assert_eq!(cookie_of(log, "/"), None);
        }
    };

    let plain = config_file(dir.path(), "");
    run_with(&plain, &["--cookies", "true"]);
    assert_eq!(cookie_of(&a_log, "/next").as_deref(), Some("from_a=1"));
    assert_eq!(cookie_of(&b_log, "/next").as_deref(), Some("from_b=1"));

    run_with(&plain, &[]);
    assert_eq!(cookie_of(&a_log, "/next"), None);
    assert_eq!(cookie_of(&b_log, "/next"), None);

    let b_only = config_file(
        dir.path(),
        &format!("[[hosts]]\nmatch = \"127.0.0.1:{b}\"\ncookies = true\n"),
    );
    run_with(&b_only, &[]);
    assert_eq!(cookie_of(&a_log, "/next"), None);
    assert_eq!(cookie_of(&b_log, "/next").as_deref(), Some("from_b=1"));
}

/// `obey_robots = false` for one host: its robots.txt is not even requested and its pages
/// are fetched; the other host's robots.txt is still obeyed.
#[test]
fn robots_txt_is_obeyed_or_not_per_host() {
    let site = || {
        server(|path| match path {
            "/robots.txt" => (
                200,
                vec![("content-type", "text/plain".into())],
                b"User-agent: *\nDisallow: /\n".to_vec(),
            ),
            "/" => html("<p>root</p>".into()),
            _ => not_found(),
        })
    };
    let (own, own_log) = site();
    let (other, other_log) = site();
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        &format!("[[hosts]]\nmatch = \"127.0.0.1:{own}\"\nobey_robots = false\n"),
    );
    let run = crawl(&args_with(
        &config,
        &[
            "--seed",
            &format!("http://127.0.0.1:{own}/"),
            "--seed",
            &format!("http://127.0.0.1:{other}/"),
        ],
    ));
    run.assert_success();
    assert_eq!(
        run.record(&format!("http://127.0.0.1:{own}/"))["status"],
        200
    );
    assert_eq!(
        run.record(&format!("http://127.0.0.1:{other}/"))["error"],
        "robots_denied"
    );
    let own_paths: Vec<String> = own_log.all().into_iter().map(|r| r.path).collect();
    assert_eq!(own_paths, ["/"]);
    let other_paths: Vec<String> = other_log.all().into_iter().map(|r| r.path).collect();
    assert_eq!(other_paths, ["/robots.txt"]);
}

/// `--explain-host` says what a host gets and where each setting comes from, names where
/// the secret is and never shows it, and crawls nothing.
#[test]
fn explain_host_prints_the_settings_without_the_secret() {
    let dir = tempfile::tempdir().unwrap();
    let config = config_file(
        dir.path(),
        r#"
[[hosts]]
match = "*.example.com"
connections = 4
headers = { X-Team = "all" }

[[hosts]]
match = "docs.example.com"
delay = "250ms"
basic_user = "bot"
basic_password_env = "CRAWLER_TEST_DOCS_PASSWORD"
"#,
    );
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args([
            "--config",
            &config,
            "--explain-host",
            "https://docs.example.com/guide",
            "--resolve",
            "docs.example.com:443:192.0.2.7",
            "--address-connections",
            "3",
        ])
        .env("CRAWLER_TEST_DOCS_PASSWORD", "hunter2")
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout);
    assert_eq!(output.status.code(), Some(0), "{text}");
    for expected in [
        "host: docs.example.com",
        "[[hosts]] #2 (match = \"docs.example.com\"), [[hosts]] #1 (match = \"*.example.com\")",
        "delay: 250ms",
        "connections: 4",
        "x-team: all",
        "credentials: basic, user \"bot\", secret from env CRAWLER_TEST_DOCS_PASSWORD",
        "address: 192.0.2.7 (fetch.resolve",
        "per address: at most 3 requests in flight",
    ] {
        assert!(text.contains(expected), "{expected:?} in:\n{text}");
    }
    let encoded = data_encoding::BASE64.encode(b"bot:hunter2");
    assert!(
        !text.contains("hunter2") && !text.contains(&encoded),
        "{text}"
    );
}

/// Entries that cannot work are refused before the crawl starts, by entry and with what to
/// fix, exit code 2, and the state directory is not written; a secret is never written to
/// the state directory either.
#[test]
fn bad_entries_and_missing_secrets_stop_the_start_and_secrets_stay_out_of_the_state() {
    let dir = tempfile::tempdir().unwrap();
    let cases = [
        (
            "[[hosts]]\nmatch = \"a.example\"\nbasic_user = \"bot\"\nbasic_password_env = \"CRAWLER_TEST_SURELY_UNSET\"\n",
            "CRAWLER_TEST_SURELY_UNSET is not set",
        ),
        (
            "[[hosts]]\nmatch = \"a.example\"\nbearer_token_file = \"/surely/not/here\"\n",
            "/surely/not/here",
        ),
        (
            "[[hosts]]\nmatch = \"a.example\"\nbasic_user = \"bot\"\nbasic_password_env = \"X\"\nbearer_token_env = \"Y\"\n",
            "both basic and bearer",
        ),
        (
            "[[hosts]]\nmatch = \"a.example\"\nheaders = { \"Not A Name\" = \"x\" }\n",
            "not a valid header name",
        ),
        ("[[hosts]]\nmatch = \"https://a.example/x\"\n", "not a host"),
        (
            "[[hosts]]\nmatch = \"a.example\"\nconnections = 0\n",
            "connections",
        ),
    ];
    for (i, (entry, expected)) in cases.into_iter().enumerate() {
        let config = config_file(dir.path(), entry);
        let state = dir.path().join(format!("state-{i}"));
        let run = crawl(&args_with(
            &config,
            &[
                "--seed",
                "http://127.0.0.1:9/",
                "--state-dir",
                state.to_str().unwrap(),
            ],
        ));
        let stderr = run.stderr();
        assert_eq!(run.output.status.code(), Some(2), "{entry}: {stderr}");
        assert!(stderr.contains("[[hosts]] #1"), "{entry}: {stderr}");
        assert!(stderr.contains(expected), "{entry}: {stderr}");
        assert!(!state.join("crawl.toml").exists(), "{entry}");
    }
    let run = crawl(&["--seed", "http://127.0.0.1:9/", "--header", "User-Agent: x"]);
    assert_eq!(run.output.status.code(), Some(2));
    assert!(
        run.stderr().contains("politeness.user_agent"),
        "{}",
        run.stderr()
    );

    // A crawl with credentials keeps where the secret is in its state, never the secret.
    let (port, _log) = server(|path| match path {
        "/" => html("<p>hi</p>".into()),
        _ => not_found(),
    });
    let config = config_file(
        dir.path(),
        "[[hosts]]\nmatch = \"127.0.0.1\"\nbasic_user = \"bot\"\nbasic_password_env = \"CRAWLER_TEST_STATE_PASSWORD\"\n",
    );
    let state = dir.path().join("state");
    let run = crawl_with_env(
        &args_with(
            &config,
            &[
                "--seed",
                &format!("http://127.0.0.1:{port}/"),
                "--state-dir",
                state.to_str().unwrap(),
            ],
        ),
        &[("CRAWLER_TEST_STATE_PASSWORD", "pa55word")],
    );
    run.assert_success();
    let encoded = data_encoding::BASE64.encode(b"bot:pa55word");
    let mut saved = String::new();
    for file in walk(&state) {
        let bytes = std::fs::read(&file).unwrap();
        let text = String::from_utf8_lossy(&bytes);
        assert!(
            !text.contains("pa55word") && !text.contains(&encoded),
            "{} holds the secret",
            file.display()
        );
        saved.push_str(&text);
    }
    assert!(saved.contains("CRAWLER_TEST_STATE_PASSWORD"), "{saved}");
    // Readable by the owner alone.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = |path: &std::path::Path| std::fs::metadata(path).unwrap().permissions().mode();
        assert_eq!(mode(&state) & 0o777, 0o700);
        for file in ["crawl.toml", "seeds.txt"] {
            assert_eq!(mode(&state.join(file)) & 0o777, 0o600, "{file}");
        }
    }
}

/// Regression: a proxy's password was written to `DIR/crawl.toml` (mode 0644) and a secret
/// header's value with it. Now the password comes from the environment, and a secret that
/// would be stored is refused, before anything is written, without being printed.
#[test]
fn secrets_are_refused_where_they_would_be_stored_and_never_printed() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let state_args = [
        "--seed",
        "http://127.0.0.1:9/",
        "--state-dir",
        state.to_str().unwrap(),
    ];
    for (extra, expected) in [
        (
            ["--proxy", "http://bot:Pr0xyPw@127.0.0.1:9"],
            "--proxy-password-env",
        ),
        (
            ["--header", "X-Api-Key: Pr0xyPw"],
            "X-Api-Key looks like a secret",
        ),
    ] {
        let mut args = state_args.to_vec();
        args.extend(extra);
        let run = crawl(&args);
        let stderr = run.stderr();
        assert_eq!(run.output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(expected), "{stderr}");
        assert!(!stderr.contains("Pr0xyPw"), "{stderr}");
        assert!(!state.join("crawl.toml").exists());
    }

    // The password from the environment reaches the proxy; the state keeps the variable's
    // name. The "proxy" is a server answering every request itself.
    let (proxy, proxy_log) = server(|_| html("<p>through the proxy</p>".into()));
    let seed = "http://site.example/";
    let run = crawl_with_env(
        &[
            "--seed",
            seed,
            "--proxy",
            &format!("http://bot@127.0.0.1:{proxy}"),
            "--proxy-password-env",
            "CRAWLER_TEST_PROXY_PASSWORD",
            "--robots",
            "false",
            "--state-dir",
            state.to_str().unwrap(),
        ],
        &[("CRAWLER_TEST_PROXY_PASSWORD", "Pr0xyPw")],
    );
    run.assert_success();
    assert_eq!(run.record(seed)["status"], 200);
    let expected = format!("Basic {}", data_encoding::BASE64.encode(b"bot:Pr0xyPw"));
    let sent = proxy_log.all();
    assert!(!sent.is_empty());
    for r in &sent {
        assert_eq!(
            r.header("proxy-authorization"),
            Some(expected.as_str()),
            "{r:?}"
        );
    }
    let settings = std::fs::read_to_string(state.join("crawl.toml")).unwrap();
    assert!(!settings.contains("Pr0xyPw"), "{settings}");
    assert!(
        settings.contains("CRAWLER_TEST_PROXY_PASSWORD"),
        "{settings}"
    );
}

/// Every file under `dir`.
fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(walk(&path));
        } else {
            files.push(path);
        }
    }
    files
}
