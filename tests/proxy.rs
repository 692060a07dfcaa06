use std::io::{BufRead, BufReader, Write};
use std::sync::{Arc, Mutex};

use crate::util::{crawl, fast};

/// A forward HTTP proxy on loopback that is also the origin of `a.example`: it answers
/// requests in absolute form (`GET http://a.example/ HTTP/1.1`) and logs their targets.
fn proxy() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let seen = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let seen = Arc::clone(&seen);
            std::thread::spawn(move || {
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                loop {
                    let mut line = String::new();
                    if reader.read_line(&mut line).unwrap_or(0) == 0 {
                        return;
                    }
                    let target = line.split_whitespace().nth(1).unwrap_or("").to_owned();
                    let mut header = String::new();
                    while reader
                        .read_line(&mut header)
                        .map(|n| n > 2)
                        .unwrap_or(false)
                    {
                        header.clear();
                    }
                    seen.lock().unwrap().push(target.clone());
                    let (status, body) = match target.as_str() {
                        "http://a.example/" => (
                            200,
                            "<a href=/b>b</a><a href=http://169.254.169.254/latest/>meta</a>",
                        ),
                        "http://a.example/b" => (200, "<p>b</p>"),
                        _ => (404, ""),
                    };
                    let head = format!(
                        "HTTP/1.1 {status} X\r\ncontent-type: text/html\r\ncontent-length: {}\r\n\r\n",
                        body.len()
                    );
                    if stream
                        .write_all(head.as_bytes())
                        .and_then(|()| stream.write_all(body.as_bytes()))
                        .is_err()
                    {
                        return;
                    }
                }
            });
        }
    });
    (port, log)
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
    assert!(run.output.status.success(), "{}", run.stderr());
    assert_eq!(run.record("http://a.example/")["status"], 200);
    assert_eq!(run.record("http://a.example/b")["status"], 200);
    assert_eq!(
        run.record("http://169.254.169.254/latest/")["error"],
        "ssrf_blocked"
    );
    let requested = log.lock().unwrap().clone();
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
    assert!(log.lock().unwrap().is_empty());
}

/// A proxy that is not a proxy URL is refused by name.
#[test]
fn a_bad_proxy_is_refused_by_name() {
    let run = crawl(&["--seed", "http://a.example/", "--proxy", "ftp://x"]);
    assert_eq!(run.output.status.code(), Some(2));
    assert!(run.stderr().contains("fetch.proxy"), "{}", run.stderr());
}
