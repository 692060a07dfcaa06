use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::util::wait_or_kill;

/// The shell lines of README.md's "Try it offline" block, as a user pastes them.
fn readme_demo() -> String {
    let readme = include_str!("../README.md");
    let section = &readme[readme.find("## Try it offline").expect("the demo section")..];
    let start = section.find("```sh\n").expect("a sh block") + "```sh\n".len();
    let end = start + section[start..].find("```").expect("the block ends");
    section[start..end].to_owned()
}

/// Regression: the demo started testweb in the background and the crawler at
/// once, which could read `seed.txt` before testweb wrote it (1 run in 4 exited with "no
/// seeds"). Runs the README's lines as written, in a directory where `target/release` holds
/// this build's binaries and `cargo` does nothing (the binaries are built already).
#[test]
fn the_readme_demo_works_as_pasted() {
    let bin = Path::new(env!("CARGO_BIN_EXE_crawler")).parent().unwrap();
    assert!(
        bin.join("testweb").exists(),
        "the testweb binary is not built: run the tests with `cargo test --workspace`, as \
         README.md says, or `cargo build -p politecrawl-testweb` first"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::create_dir(dir.path().join("target")).unwrap();
    std::os::unix::fs::symlink(bin, dir.path().join("target/release")).unwrap();
    let config = concat!(env!("CARGO_MANIFEST_DIR"), "/config");
    std::os::unix::fs::symlink(config, dir.path().join("config")).unwrap();
    let script = format!("cargo() {{ :; }}\nset -e\n{}", readme_demo());
    let child = Command::new("bash")
        .arg("-c")
        .arg(&script)
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("bash runs");
    let (output, hung) = wait_or_kill(child, Duration::from_secs(240));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(!hung, "the demo hung: {stderr}");
    assert!(output.status.success(), "{stderr}");
    // testweb was killed at the end and said what it served.
    assert!(stderr.contains("requests"), "{stderr}");
    let records = std::fs::read_to_string(dir.path().join("records.jsonl")).unwrap();
    let urls: std::collections::BTreeSet<&str> = records
        .lines()
        .map(|line| {
            let start = line.find("\"url\":\"").expect("a url") + 7;
            &line[start..start + line[start..].find('"').unwrap()]
        })
        .collect();
    assert_eq!(urls.len(), records.lines().count(), "a URL recorded twice");
    // 10,000 pages and the special pages, each recorded once.
    assert!(urls.len() > 10_000, "{} records: {stderr}", urls.len());
}
