use std::io::Write;

use testweb::SiteConfig;

use crate::util::{Site, crawl, crawl_site};

fn fails_with(args: &[&str], message: &str) {
    let run = crawl(args);
    run.assert_exit(2);
    assert!(
        run.stderr().contains(message),
        "expected {message:?} in:\n{}",
        run.stderr()
    );
    assert!(run.records.is_empty());
}

#[test]
fn bad_seeds_are_named() {
    fails_with(&[], "no seeds");
    fails_with(
        &["--seed", "ftp://example.com/"],
        "bad seed \"ftp://example.com/\"",
    );
    fails_with(&["--seed", "not a url"], "bad seed \"not a url\"");
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(
        file,
        "# seeds\nhttp://example.com/\n\nmailto:me@example.com"
    )
    .unwrap();
    let path = file.path().to_str().unwrap();
    fails_with(&["--seeds-file", path], "line 4");
}

/// Regression: a seen-test too large said "N bits exceed the maximum filter size"
/// twice, and named no key.
#[test]
fn a_seen_test_too_large_names_its_key_and_limit_once() {
    let run = crawl(&[
        "--seed",
        "http://example.com/",
        "--seen-initial-capacity",
        "100000000000000",
    ]);
    let stderr = run.stderr();
    assert_eq!(run.output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "bad setting: frontier.seen_initial_capacity (--seen-initial-capacity): \
             100,000,000,000,000 URLs"
        ),
        "{stderr}"
    );
    assert!(stderr.contains("the largest is 128 GiB"), "{stderr}");
    assert_eq!(stderr.matches("128 GiB").count(), 1, "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
}

/// Regression: an `http://` Redis URL was taken, and failed later as "did not
/// parse - InvalidClientConfig", with its password printed.
#[test]
fn a_redis_url_of_another_scheme_is_refused_without_its_password() {
    let run = crawl(&[
        "--seed",
        "http://example.com/",
        "--redis",
        "http://crawler:hunter2@cache:6379/",
    ]);
    let stderr = run.stderr();
    assert_eq!(run.output.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains(
            "bad setting: redis.url: \"http://crawler:***@cache:6379/\" is not a Redis URL: \
             use redis://HOST:PORT"
        ),
        "{stderr}"
    );
    assert!(!stderr.contains("hunter2"), "{stderr}");
}

#[test]
fn bad_config_names_the_key_and_line() {
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "[fetch]\nconcurrency = 8\ntimout = \"1s\"").unwrap();
    let path = file.path().to_str().unwrap();
    fails_with(
        &["--config", path, "--seed", "http://example.com/"],
        "timout",
    );
    fails_with(
        &["--config", path, "--seed", "http://example.com/"],
        "line 3",
    );
    fails_with(
        &["--concurrency", "0", "--seed", "http://example.com/"],
        "fetch.concurrency",
    );
    fails_with(
        &["--exclude", "(", "--seed", "http://example.com/"],
        "invalid exclude pattern",
    );
    fails_with(
        &["--config", "/no/such/file.toml", "--seed", "http://e.com/"],
        "/no/such/file.toml",
    );
}

#[test]
fn help_explains_every_config_key() {
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_crawler"))
        .arg("--help")
        .output()
        .unwrap();
    assert!(run.status.success());
    let help = String::from_utf8_lossy(&run.stdout);
    let config: toml::Table = include_str!("../config/default.toml").parse().unwrap();
    for (section, keys) in &config {
        for key in keys.as_table().unwrap().keys() {
            assert!(
                help.contains(&format!("[{section}.{key}]")),
                "--help lacks {section}.{key}"
            );
        }
    }
}

#[test]
fn an_empty_seeds_file_is_named() {
    // It was "no seeds: give at least one --seed URL or a --seeds-file", with the file given.
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "# nothing yet\n\n").unwrap();
    let path = file.path().to_str().unwrap();
    fails_with(
        &["--seeds-file", path],
        &format!("no seeds: {path} holds no URL"),
    );
}

#[test]
fn a_bad_pattern_is_reported_once_with_its_key() {
    // The regex crate's message was printed twice: in the error and again as its source.
    let run = crawl(&["--seed", "http://a.example/", "--include", "("]);
    assert_eq!(run.output.status.code(), Some(2));
    let stderr = run.stderr();
    assert!(
        stderr.contains("crawl.include: invalid include pattern"),
        "{stderr}"
    );
    assert_eq!(stderr.matches("unclosed group").count(), 1, "{stderr}");
}

#[test]
fn a_zero_timeout_names_the_timeout() {
    fails_with(
        &["--seed", "http://a.example/", "--timeout", "0"],
        "fetch.timeout: must be longer than 0",
    );
    fails_with(
        &["--seed", "http://a.example/", "--connect-timeout", "0"],
        "fetch.connect_timeout: must be longer than 0",
    );
}

#[test]
fn body_sizes_take_units_in_flags_and_files() {
    fails_with(
        &[
            "--seed",
            "http://a.example/",
            "--max-body-bytes",
            "10 furlongs",
        ],
        "KiB",
    );
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "[fetch]\nmax_body_bytes = \"lots\"").unwrap();
    let path = file.path().to_str().unwrap();
    fails_with(&["--config", path, "--seed", "http://a.example/"], "MiB");
    // Accepted, and applied.
    let site = Site::start(SiteConfig {
        pages_per_host: 3,
        ..SiteConfig::default()
    });
    // The local profile (which `fast()` gives as its --config) with a cap of 1 KiB.
    let local = include_str!("../config/local.toml");
    let mut file = tempfile::NamedTempFile::new().unwrap();
    write!(
        file,
        "{}",
        local.replace("[fetch]\n", "[fetch]\nmax_body_bytes = \"1KiB\"\n")
    )
    .unwrap();
    let seed = &site.web.seeds()[0];
    let path = file.path().to_str().unwrap();
    let run = crawl(&["--config", path, "--progress", "off", "--seed", seed]);
    run.assert_success();
    // The seed's page, cut before its links.
    assert_eq!(run.records.len(), 1, "{}", run.stderr());
    assert_eq!(run.record(seed)["error"], "too_large");
    let run = crawl_site(&site, &["--max-body-bytes", "1MB"]);
    assert_eq!(run.records.len(), 3, "{}", run.stderr());
    assert!(run.records.values().all(|r| r["error"].is_null()));
}

#[test]
fn a_seed_without_a_scheme_gets_a_suggestion() {
    fails_with(
        &["--seed", "example.com"],
        "did you mean https://example.com/?",
    );
    let mut file = tempfile::NamedTempFile::new().unwrap();
    writeln!(file, "https://example.org/\nexample.com/news").unwrap();
    let path = file.path().to_str().unwrap();
    fails_with(&["--seeds-file", path], "line 2");
    fails_with(
        &["--seeds-file", path],
        "did you mean https://example.com/news?",
    );
}

#[test]
fn a_local_crawl_is_quiet_about_its_contact_and_summed_up_in_words() {
    let site = Site::start(SiteConfig {
        pages_per_host: 30,
        ..SiteConfig::default()
    });
    let run = crawl_site(&site, &[]);
    let stderr = run.stderr();
    assert!(!stderr.contains("--contact"), "{stderr}");
    assert!(!stderr.contains("WARN"), "{stderr}");
    assert!(stderr.contains("crawled 30 URLs in"), "{stderr}");
    assert!(stderr.contains(" KiB"), "{stderr}");
    assert!(stderr.contains("seen URLs: 30 remembered in"), "{stderr}");
    assert!(
        stderr.contains("(frontier.seen_false_positive_rate: 1 in 1,000,000)"),
        "{stderr}"
    );
    // Regression: words a newcomer could not read.
    for jargon in ["part", "fewer than 1 in", "over the cap"] {
        assert!(!stderr.contains(jargon), "{jargon:?} in: {stderr}");
    }
    assert!(stderr.contains("well under 1 in a billion now"), "{stderr}");
    assert!(!stderr.contains("this run"), "not resumed: {stderr}");
}

/// Regression: `--state-dir s --exclude '('` exited 2 but had written
/// `s/crawl.toml`, so the corrected command was refused ("holds a crawl already"); and a bad
/// override given with `--resume` was saved before it failed, so every later plain
/// `--resume` failed too. Every setting is now checked before the state directory is
/// written.
#[test]
fn a_refused_setting_leaves_the_state_directory_untouched() {
    let site = Site::start(SiteConfig {
        pages_per_host: 5,
        ..SiteConfig::default()
    });
    let seed = &site.web.seeds()[0];
    let tmp = tempfile::tempdir().unwrap();
    let state = tmp.path().join("s");
    let state = state.to_str().unwrap();
    let unwritable = tmp.path().join("no/such/dir/out.warc.gz");
    let unwritable = unwritable.to_str().unwrap();
    for bad in [
        &["--exclude", "("][..],
        &["--include", "[z-a]"],
        &["--warc", unwritable],
        &["--output", unwritable],
    ] {
        let mut args = vec!["--seed", seed, "--state-dir", state, "--progress", "off"];
        args.extend(bad);
        let run = crawl(&args);
        assert_eq!(
            run.output.status.code(),
            Some(2),
            "{bad:?}: {}",
            run.stderr()
        );
        assert!(
            !tmp.path().join("s/crawl.toml").exists(),
            "{bad:?} wrote the state directory"
        );
    }
    // The corrected command starts the crawl...
    let run = crawl(&["--seed", seed, "--state-dir", state, "--progress", "off"]);
    run.assert_success();
    // ... a bad override on resume is refused without being saved ...
    let run = crawl(&["--resume", "--state-dir", state, "--exclude", "("]);
    run.assert_exit(2);
    let saved = std::fs::read_to_string(tmp.path().join("s/crawl.toml")).unwrap();
    assert!(!saved.contains("exclude = [\"(\"]"), "{saved}");
    // ... and a plain resume still works.
    let run = crawl(&["--resume", "--state-dir", state, "--progress", "off"]);
    run.assert_success();
}

/// Regression: logs redirected to a file carried ANSI colour codes (`[2m...[0m [33m WARN`).
#[test]
fn logs_written_to_a_file_or_pipe_have_no_colour_codes() {
    // A seed that redirects: an info line says its target is a seed too.
    let (port, _log) = crate::util::serve(|path| match path {
        "/" => (301, "/home", Vec::new()),
        _ => (200, "text/html", b"<p>home</p>".to_vec()),
    });
    let mut args = crate::util::fast();
    args.extend(["--seed".to_owned(), format!("http://127.0.0.1:{port}/")]);
    let run = std::process::Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .env("RUST_LOG", "info")
        .env_remove("NO_COLOR")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(run.status.success(), "{stderr}");
    assert!(stderr.contains("INFO"), "no log lines to look at: {stderr}");
    assert!(!stderr.contains('\x1b'), "escape codes in: {stderr:?}");
}
