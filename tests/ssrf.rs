use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};

use crate::util::{crawl, fast};

/// A server on 127.0.0.1 whose root links to a cloud metadata address and to itself under
/// the name `localhost`; it logs the paths asked for.
fn serve() -> (u16, Arc<Mutex<Vec<String>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Arc::new(Mutex::new(Vec::new()));
    let paths = Arc::clone(&log);
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            while reader.read_line(&mut line).map(|n| n > 2).unwrap_or(false) {
                line.clear();
            }
            paths.lock().unwrap().push(path.clone());
            let body = if path == "/" {
                format!(
                    "<a href=\"http://169.254.169.254/latest/meta-data/\">m</a>\
                     <a href=\"http://localhost:{port}/secret\">s</a>\
                     <a href=\"http://[::1]:{port}/v6\">v6</a>"
                )
            } else {
                "ok".to_owned()
            };
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: text/html\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                body.len()
            );
        }
    });
    (port, log)
}

fn run(port: u16, extra: &[&str]) -> crate::util::Crawl {
    let mut args = fast();
    let seed = format!("http://127.0.0.1:{port}/");
    args.extend(["--seed", &seed, "--scope", "any", "--robots", "false"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    let run = crawl(&args);
    assert!(run.output.status.success(), "{}", run.stderr());
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
    assert_eq!(*log.lock().unwrap(), ["/"], "only the seed was requested");
    assert!(run.stderr().contains("ssrf_blocked: 3"), "{}", run.stderr());
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
    assert!(log.lock().unwrap().contains(&"/secret".to_owned()));
}
