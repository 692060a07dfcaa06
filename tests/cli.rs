use std::io::Write;

use crate::util::crawl;

fn fails_with(args: &[&str], message: &str) {
    let run = crawl(args);
    assert_eq!(run.output.status.code(), Some(2), "{}", run.stderr());
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
