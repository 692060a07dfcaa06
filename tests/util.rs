use std::collections::{BTreeMap, BTreeSet};
use std::process::{Command, Output, Stdio};
use std::time::Duration;

use serde_json::Value;
use testweb::{SiteConfig, Testweb};

/// A site served by its own runtime, so that the test thread can block on the crawler.
pub(crate) struct Site {
    pub(crate) web: Testweb,
    _runtime: tokio::runtime::Runtime,
}

impl Site {
    pub(crate) fn start(config: SiteConfig) -> Site {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .expect("runtime");
        let web = runtime
            .block_on(Testweb::start(config))
            .expect("testweb starts");
        Site {
            web,
            _runtime: runtime,
        }
    }
}

/// What a crawl printed.
pub(crate) struct Crawl {
    pub(crate) output: Output,
    /// Records by URL; a URL recorded twice fails the test.
    pub(crate) records: BTreeMap<String, Value>,
}

impl Crawl {
    pub(crate) fn stderr(&self) -> String {
        String::from_utf8_lossy(&self.output.stderr).into_owned()
    }

    /// Fails the test, showing the crawler's stderr, unless it exited 0.
    #[track_caller]
    pub(crate) fn assert_success(&self) {
        assert!(self.output.status.success(), "{}", self.stderr());
    }

    /// Fails the test, showing the crawler's stderr, unless it exited with `code`.
    #[track_caller]
    pub(crate) fn assert_exit(&self, code: i32) {
        assert_eq!(self.output.status.code(), Some(code), "{}", self.stderr());
    }

    pub(crate) fn record(&self, url: &str) -> &Value {
        self.records
            .get(url)
            .unwrap_or_else(|| panic!("no record for {url}; stderr:\n{}", self.stderr()))
    }

    /// URLs whose record is a fetch (an answer or a network error), not a robots refusal.
    pub(crate) fn fetched(&self) -> BTreeSet<String> {
        self.records
            .iter()
            .filter(|(_, r)| r["error"] != "robots_denied" && r["error"] != "robots_unreachable")
            .map(|(url, _)| url.clone())
            .collect()
    }
}

/// Flags for fast tests on loopback: the local profile, no progress display, short waits.
pub(crate) fn fast() -> Vec<String> {
    [
        "--config",
        concat!(env!("CARGO_MANIFEST_DIR"), "/config/local.toml"),
        "--progress",
        "off",
        "--max-retry-after",
        "50ms",
        "--backoff-base",
        "10ms",
        "--backoff-max",
        "50ms",
    ]
    .map(String::from)
    .to_vec()
}

/// Runs the crawler with `args` (records to standard output) and reads its records. A crawl
/// that has not ended after two minutes is killed and fails the test, rather than hang it.
pub(crate) fn crawl<S: AsRef<str>>(args: &[S]) -> Crawl {
    crawl_with_env(args, &[])
}

/// `crawl`, with these environment variables set for the crawler.
pub(crate) fn crawl_with_env<S: AsRef<str>>(args: &[S], env: &[(&str, &str)]) -> Crawl {
    let mut command = Command::new(env!("CARGO_BIN_EXE_crawler"));
    command.envs(env.iter().copied());
    crawl_by(command, args)
}

/// `crawl`, started by `command`: the crawler itself, or a shell that runs it after setting
/// the process's limits (see `crawler()`).
pub(crate) fn crawl_by<S: AsRef<str>>(mut command: Command, args: &[S]) -> Crawl {
    // Warnings, unless the test set the log filter itself (or removed it, to see the
    // crawler's default).
    if !command.get_envs().any(|(key, _)| key == "RUST_LOG") {
        command.env("RUST_LOG", "warn");
    }
    let child = command
        .args(args.iter().map(AsRef::as_ref))
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the crawler runs");
    let (output, hung) = wait_or_kill(child, Duration::from_secs(120));
    assert!(!hung, "the crawler hung and was killed");
    let stdout = String::from_utf8(output.stdout.clone()).expect("records are UTF-8");
    let mut records = BTreeMap::new();
    for line in stdout.lines() {
        let record: Value = serde_json::from_str(line)
            .unwrap_or_else(|e| panic!("not a JSON record ({e}): {line}"));
        let url = record["url"].as_str().expect("url").to_owned();
        assert!(
            records.insert(url.clone(), record).is_none(),
            "{url} recorded twice"
        );
    }
    Crawl { output, records }
}

/// Waits for `child` to end, reading its output, for at most `limit`; then kills it through
/// its handle (never by a pid, which another process may have taken since). Returns the
/// output and whether the child had to be killed.
pub(crate) fn wait_or_kill(mut child: std::process::Child, limit: Duration) -> (Output, bool) {
    use std::io::Read;

    // Read on threads, so that a child filling a pipe is not stuck while we wait.
    let read = |pipe: Option<Box<dyn Read + Send>>| {
        std::thread::spawn(move || {
            let mut bytes = Vec::new();
            if let Some(mut pipe) = pipe {
                let _ = pipe.read_to_end(&mut bytes);
            }
            bytes
        })
    };
    let stdout = read(
        child
            .stdout
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let stderr = read(
        child
            .stderr
            .take()
            .map(|p| Box::new(p) as Box<dyn Read + Send>),
    );
    let deadline = std::time::Instant::now() + limit;
    let mut hung = false;
    let status = loop {
        if let Some(status) = child.try_wait().expect("the child can be waited for") {
            break status;
        }
        if std::time::Instant::now() >= deadline {
            hung = true;
            let _ = child.kill();
            break child.wait().expect("the killed child is reaped");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let output = Output {
        status,
        stdout: stdout.join().expect("stdout read"),
        stderr: stderr.join().expect("stderr read"),
    };
    (output, hung)
}

/// `crawl` with `fast()` flags and every host root of the site as a seed (the default scope is
/// the seeds' hosts).
pub(crate) fn crawl_site(site: &Site, extra: &[&str]) -> Crawl {
    let mut args = fast();
    for seed in site.web.roots() {
        args.push("--seed".into());
        args.push(seed);
    }
    args.extend(extra.iter().map(|s| s.to_string()));
    let crawl = crawl(&args);
    assert!(
        crawl.output.status.success(),
        "crawler failed: {}",
        crawl.stderr()
    );
    crawl
}

/// Crawls `site` with a feature switched off by `flags`: the crawl fetches the pages the
/// site expects when `ignoring` it, and asks for no URL of the feature (`of_it`).
#[track_caller]
pub(crate) fn assert_switched_off(
    site: &Site,
    flags: &[&str],
    ignoring: testweb::ExpectOptions,
    of_it: impl Fn(&str) -> bool,
) {
    let crawl = crawl_site(site, flags);
    assert_eq!(crawl.fetched(), site.web.expected_pages_with(ignoring));
    let asked: Vec<_> = site
        .web
        .fetch_counts()
        .into_keys()
        .filter(|url| of_it(url))
        .collect();
    assert!(asked.is_empty(), "asked for {asked:?}");
}

/// When the site's pages (robots.txt aside) were requested, in order: what a politeness
/// test measures the gaps of.
pub(crate) fn page_request_times(site: &Site) -> Vec<std::time::Instant> {
    let mut times: Vec<_> = site
        .web
        .requests()
        .iter()
        .filter(|r| r.path != "/robots.txt")
        .map(|r| r.at)
        .collect();
    times.sort();
    times
}

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// One request as a test server saw it: its path and headers (names lowercased).
#[derive(Clone, Debug)]
pub(crate) struct Request {
    pub(crate) path: String,
    pub(crate) headers: BTreeMap<String, String>,
}

impl Request {
    /// A header's value, by its lowercase name.
    pub(crate) fn header(&self, name: &str) -> Option<&str> {
        self.headers.get(name).map(String::as_str)
    }
}

/// An answer of a test server: status, headers (name and value), body.
pub(crate) type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

/// What a test server was asked, in order. Cheap to clone (shared).
#[derive(Clone, Default)]
pub(crate) struct Requests(std::sync::Arc<std::sync::Mutex<Vec<Request>>>);

impl Requests {
    /// Every request so far.
    pub(crate) fn all(&self) -> Vec<Request> {
        self.0.lock().unwrap().clone()
    }

    /// The paths asked for so far.
    pub(crate) fn paths(&self) -> Vec<String> {
        self.all().into_iter().map(|r| r.path).collect()
    }

    /// Forgets the requests so far.
    pub(crate) fn clear(&self) {
        self.0.lock().unwrap().clear();
    }
}

/// The one hand-written HTTP/1.1 test server, on 127.0.0.1, for what testweb does not serve:
/// `page` answers each request (one per connection), and every request is logged with its
/// headers. Returns its port and its log.
pub(crate) fn server(page: impl Fn(&Request) -> Answer + Send + 'static) -> (u16, Requests) {
    use std::io::{BufRead, BufReader, Write};

    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let log = Requests::default();
    let requests = log.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            if reader.read_line(&mut line).is_err() {
                continue;
            }
            let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
            let mut headers = BTreeMap::new();
            loop {
                let mut header = String::new();
                if reader.read_line(&mut header).map_or(true, |n| n <= 2) {
                    break;
                }
                if let Some((name, value)) = header.trim_end().split_once(':') {
                    headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_owned());
                }
            }
            let request = Request { path, headers };
            requests.0.lock().unwrap().push(request.clone());
            let (status, extra, body) = page(&request);
            let mut head = format!("HTTP/1.1 {status} X\r\n");
            for (name, value) in extra {
                head.push_str(&format!("{name}: {value}\r\n"));
            }
            head.push_str(&format!(
                "content-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            ));
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    (port, log)
}

/// [`server`] for the common case: `page(path)` gives the status, the content type (for a
/// 3xx status: the `Location`; empty: no such header) and the body.
pub(crate) fn serve(
    page: impl Fn(&str) -> (u16, &'static str, Vec<u8>) + Send + 'static,
) -> (u16, Requests) {
    serve_with_headers(move |path| {
        let (status, content_type, body) = page(path);
        (status, content_type, Vec::new(), body)
    })
}

/// [`serve`], with more headers (name and value) for each answer.
pub(crate) fn serve_with_headers(
    page: impl Fn(&str) -> (u16, &'static str, Vec<(&'static str, String)>, Vec<u8>) + Send + 'static,
) -> (u16, Requests) {
    server(move |request| {
        let (status, content_type, mut extra, body) = page(&request.path);
        if !content_type.is_empty() {
            let name = if (300..400).contains(&status) {
                "location"
            } else {
                "content-type"
            };
            extra.insert(0, (name, content_type.to_owned()));
        }
        (status, extra, body)
    })
}

/// A loopback port nothing listens on: connections to it are refused.
pub(crate) fn refused_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// Waits (a minute at most, else fails saying `what`) until `done` holds.
pub(crate) fn wait_until(what: &str, mut done: impl FnMut() -> bool) {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while !done() {
        assert!(std::time::Instant::now() < deadline, "{what}");
        std::thread::sleep(ms(2));
    }
}

/// Sends Ctrl-C (SIGINT) to a crawler process, as a user at its terminal would.
pub(crate) fn interrupt(child: &std::process::Child) {
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success(), "kill -INT {}", child.id());
}

/// The URLs of the records in a records file, in order (a torn last line skipped, as a
/// crash leaves it).
pub(crate) fn urls_recorded(path: &std::path::Path) -> Vec<String> {
    records_in(&[path.to_path_buf()])
        .iter()
        .map(|r| r["url"].as_str().unwrap().to_owned())
        .collect()
}

/// The records in these files, one after the other (a file not there has none; a line cut
/// off by a process killed while writing it is skipped).
pub(crate) fn records_in(paths: &[std::path::PathBuf]) -> Vec<Value> {
    paths
        .iter()
        .flat_map(|path| {
            let text = std::fs::read_to_string(path).unwrap_or_default();
            let records: Vec<Value> = text
                .lines()
                .filter_map(|l| serde_json::from_str::<Value>(l).ok())
                .collect();
            records
        })
        .collect()
}

/// `hosts` names of `pages` pages each, all served by one address (testweb by name), each
/// page answered after 5 ms.
pub(crate) fn names_on_one_address(hosts: usize, pages: u64) -> Site {
    names_on_one_address_answering(hosts, pages, ms(5))
}

/// The same, each page answered after `latency`.
pub(crate) fn names_on_one_address_answering(hosts: usize, pages: u64, latency: Duration) -> Site {
    Site::start(SiteConfig {
        hosts,
        addresses: 1,
        pages_per_host: pages,
        host_configs: vec![
            testweb::HostConfig {
                latency,
                ..testweb::HostConfig::default()
            };
            hosts
        ],
        ..SiteConfig::default()
    })
}

/// The flags that tell the crawler where a site served by name lives, and its limits per
/// address: 2 in flight, 100 ms between starts; the hosts' own: none to speak of.
pub(crate) fn address_limited(site: &Site) -> Vec<String> {
    address_limited_to(site, 2, "100ms")
}

/// The same, with `connections` in flight and `delay` between starts at the address.
pub(crate) fn address_limited_to(site: &Site, connections: u32, delay: &str) -> Vec<String> {
    let mut args: Vec<String> = ["--delay", "0", "--connections-per-host", "4"]
        .map(String::from)
        .to_vec();
    args.extend([
        "--address-connections".into(),
        connections.to_string(),
        "--address-delay".into(),
        delay.into(),
    ]);
    for entry in site.web.resolve_entries() {
        args.extend(["--resolve".into(), entry]);
    }
    args
}

/// Checks from the server's log that its one address had 2 requests in flight at most and
/// 100 ms between starts, robots.txt's included. The server sees a start when its own
/// thread gets to it: on a loaded machine one start seen 25 ms late, the next on time, is
/// jitter, not a crawler that ignores the delay. So the rate is checked over windows (no
/// 11 starts in less than 900 ms: a 100 ms delay spaces them by 1 s), and each pair is
/// checked against half a delay (a crawler without the delay starts them together).
pub(crate) fn assert_address_limits_held(site: &Site) {
    assert!(
        site.web.max_in_flight_at_address(0) <= 2,
        "{} in flight",
        site.web.max_in_flight_at_address(0)
    );
    let mut starts: Vec<_> = site.web.requests().iter().map(|r| r.at).collect();
    assert_spaced(&mut starts, ms(50), "the address");
    for run in starts.windows(11) {
        let span = run[10] - run[0];
        assert!(span >= ms(900), "the address: 11 starts in {span:?}");
    }
}

/// Checks that `times`, once sorted, are at least `least` apart (what is told of them on
/// failure: `what`).
pub(crate) fn assert_spaced(times: &mut [std::time::Instant], least: Duration, what: &str) {
    times.sort();
    for pair in times.windows(2) {
        let gap = pair[1] - pair[0];
        assert!(gap >= least, "{what}: {gap:?} between two starts");
    }
}
