use std::path::Path;
use std::process::{Child, Command, Stdio};

use testweb::{DnsServer, SiteConfig};

use crate::util::{Site, crawl, fast};

/// A site of `hosts` names served by name on `addresses` loopback addresses.
fn by_name(hosts: usize, addresses: usize, pages: u64) -> Site {
    Site::start(SiteConfig {
        hosts,
        addresses,
        pages_per_host: pages,
        inter_host_fraction: 0.5,
        ..SiteConfig::default()
    })
}

/// Every page `site` expects was fetched by `crawl`.
fn every_page_fetched(site: &Site, crawl: &crate::util::Crawl) {
    crawl.assert_success();
    let expected = site.web.expected_pages();
    assert_eq!(crawl.fetched(), expected, "{}", crawl.stderr());
}

/// Every root a seed, and the fast flags.
fn seeded(site: &Site) -> Vec<String> {
    let mut args = fast();
    for seed in site.web.roots() {
        args.extend(["--seed".into(), seed]);
    }
    args
}

#[test]
fn names_only_the_user_knows_are_crawled_with_resolve() {
    let site = by_name(6, 2, 20);
    let mut args = seeded(&site);
    for entry in site.web.resolve_entries() {
        args.extend(["--resolve".into(), entry]);
    }
    every_page_fetched(&site, &crawl(&args));

    // Without them, the names do not resolve, and the error says what to do.
    let crawl = crate::util::crawl(&seeded(&site));
    let root = site.web.host_url(0);
    let record = crawl.record(&root);
    assert_eq!(record["error"], "dns", "{record}");
    let detail = record["error_detail"].as_str().unwrap_or_default();
    assert!(detail.contains("--resolve NAME:PORT:ADDRESS"), "{detail}");
}

/// A DNS server for `site`'s names, on a runtime of its own (kept with it).
fn dns_for(site: &Site) -> (tokio::runtime::Runtime, DnsServer) {
    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let dns = runtime
        .block_on(DnsServer::start(site.web.names()))
        .expect("a DNS server");
    (runtime, dns)
}

/// Crawls every root of `site` asking `dns`, and checks every expected page was fetched.
fn crawl_asking(site: &Site, dns: &DnsServer) {
    let mut args = seeded(site);
    args.extend(["--dns-server".into(), dns.addr().to_string()]);
    every_page_fetched(site, &crawl(&args));
}

#[test]
fn each_name_is_asked_of_dns_once_for_the_whole_crawl() {
    let site = by_name(5000, 4, 2);
    let (_runtime, dns) = dns_for(&site);
    // robots.txt on: each host is fetched at least twice, each fetch resolving its name
    // twice (the SSRF guard's check and the connection).
    crawl_asking(&site, &dns);
    for (name, _) in &site.web.names() {
        assert_eq!(dns.questions(name), 1, "{name}");
    }
}

#[test]
fn names_resolved_and_fetched_under_few_open_files_lose_no_page() {
    // 300 names on 4 addresses, asked of DNS, under a limit of 150 open files: the idle
    // connections (one a name) and the resolver's sockets run out of files, and the lookups
    // and connections that fail for it are the machine's, not the names'.
    let site = by_name(300, 4, 2);
    let (_runtime, dns) = dns_for(&site);
    let mut command = Command::new("bash");
    command.args([
        "-c",
        "ulimit -n 150 && exec \"$0\" \"$@\"",
        env!("CARGO_BIN_EXE_crawler"),
    ]);
    let mut args = seeded(&site);
    args.extend(["--dns-server".into(), dns.addr().to_string()]);
    args.extend(["--concurrency", "16"].map(String::from));
    let crawl = crate::util::crawl_by(command, &args);
    every_page_fetched(&site, &crawl);
    let stderr = crawl.stderr();
    assert!(
        stderr.contains("for want of this machine's resources"),
        "{stderr}"
    );
}

#[test]
fn a_name_slow_to_resolve_holds_up_no_other_host() {
    let site = by_name(4, 1, 10);
    let (_runtime, dns) = dns_for(&site);
    // Under the profile's 2 s connect timeout, which the lookup counts against.
    dns.delay("h3.test", std::time::Duration::from_millis(1200));
    crawl_asking(&site, &dns);
    // Every other host was under way before the slow name's answer came.
    let requests = site.web.requests();
    let first_of = |host| {
        let at = requests.iter().filter(|r| r.host == host).map(|r| r.at);
        at.min().expect("every host was fetched")
    };
    for host in 0..3 {
        assert!(
            first_of(host) < first_of(3),
            "host {host} waited for h3.test"
        );
    }
}

/// A CA and a certificate it signed for `name` and `other.test`, written in `dir` with
/// openssl.
fn private_ca(dir: &Path, name: &str) {
    let openssl = |args: &[&str]| {
        let out = Command::new("openssl")
            .args(args)
            .current_dir(dir)
            .output()
            .expect("openssl runs (tests/setup.sh installs it)");
        assert!(
            out.status.success(),
            "openssl {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    };
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "ca.key",
        "-out",
        "ca.pem",
        "-days",
        "2",
        "-subj",
        "/CN=Test private CA",
    ]);
    openssl(&[
        "req",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-keyout",
        "site.key",
        "-out",
        "site.csr",
        "-subj",
        &format!("/CN={name}"),
    ]);
    std::fs::write(
        dir.join("ext.cnf"),
        format!("subjectAltName=DNS:{name},DNS:other.test\n"),
    )
    .expect("ext");
    openssl(&[
        "x509",
        "-req",
        "-in",
        "site.csr",
        "-CA",
        "ca.pem",
        "-CAkey",
        "ca.key",
        "-CAcreateserial",
        "-out",
        "site.pem",
        "-days",
        "2",
        "-extfile",
        "ext.cnf",
    ]);
}

/// `openssl s_server` serving `dir`'s files over HTTPS on a free port; killed on drop.
struct TlsServer {
    child: Child,
    port: u16,
}

impl TlsServer {
    fn start(dir: &Path) -> TlsServer {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        let child = Command::new("openssl")
            .args([
                "s_server", "-quiet", "-WWW", "-cert", "site.pem", "-key", "site.key",
            ])
            .args(["-accept", &format!("127.0.0.1:{port}")])
            .current_dir(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("openssl s_server runs");
        // Killed on drop, listening or not.
        let server = TlsServer { child, port };
        for _ in 0..200 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
        panic!("openssl s_server did not listen on {port}");
    }
}

impl Drop for TlsServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn a_site_with_a_private_ca_is_crawled_with_ca_cert_and_the_error_says_so_without() {
    let dir = tempfile::tempdir().expect("a directory");
    private_ca(dir.path(), "secure.test");
    std::fs::write(dir.path().join("index.html"), "<a href=/next.html>next</a>").expect("page");
    std::fs::write(dir.path().join("next.html"), "<p>the end</p>").expect("page");
    let server = TlsServer::start(dir.path());
    let seed = format!("https://secure.test:{}/index.html", server.port);
    let mut args = fast();
    args.extend([
        "--seed".into(),
        seed.clone(),
        "--robots".into(),
        "false".into(),
    ]);
    args.extend([
        "--resolve".into(),
        format!("secure.test:{}:127.0.0.1", server.port),
    ]);

    // With the default log filter: no line of the TLS client's own.
    let mut command = Command::new(env!("CARGO_BIN_EXE_crawler"));
    command.env_remove("RUST_LOG");
    let refused = crate::util::crawl_by(command, &args);
    let record = refused.record(&seed);
    assert_eq!(record["error"], "tls", "{record}");
    let detail = record["error_detail"].as_str().unwrap_or_default();
    assert!(detail.contains("--ca-cert FILE"), "{detail}");
    assert!(
        refused.stderr().contains("--ca-cert FILE"),
        "{}",
        refused.stderr()
    );
    assert!(!refused.stderr().contains("rustls"), "{}", refused.stderr());

    let ca = dir.path().join("ca.pem");
    args.extend(["--ca-cert".into(), ca.display().to_string()]);
    let trusted = crawl(&args);
    trusted.assert_success();
    let next = format!("https://secure.test:{}/next.html", server.port);
    for url in [&seed, &next] {
        assert_eq!(trusted.record(url)["status"], 200, "{}", trusted.stderr());
    }

    // A file that holds no certificate stops the crawler before it fetches anything.
    let not_pem = dir.path().join("index.html");
    let last = args.len() - 1;
    args[last] = not_pem.display().to_string();
    let bad = crawl(&args);
    bad.assert_exit(2);
    assert!(bad.stderr().contains("fetch.ca_file"), "{}", bad.stderr());
    assert!(bad.records.is_empty());

    // The CA trusted for one [[hosts]] entry alone: its host crawled, another name of the
    // same server (the certificate holds both) refused.
    let config = dir.path().join("crawl.toml");
    let local = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/config/local.toml"))
        .expect("the local profile");
    std::fs::write(
        &config,
        format!(
            "{local}\n[[hosts]]\nmatch = \"secure.test\"\nca_file = {:?}\n",
            ca.display().to_string()
        ),
    )
    .expect("a config file");
    let other = format!("https://other.test:{}/index.html", server.port);
    let mut args: Vec<String> = fast()
        .into_iter()
        .map(|a| {
            if a.ends_with("local.toml") {
                config.display().to_string()
            } else {
                a
            }
        })
        .collect();
    args.extend(["--robots".into(), "false".into()]);
    for (name, url) in [("secure.test", &seed), ("other.test", &other)] {
        args.extend(["--seed".into(), url.clone()]);
        args.extend([
            "--resolve".into(),
            format!("{name}:{}:127.0.0.1", server.port),
        ]);
    }
    let per_host = crawl(&args);
    assert_eq!(
        per_host.record(&next)["status"],
        200,
        "{}",
        per_host.stderr()
    );
    assert_eq!(
        per_host.record(&other)["error"],
        "tls",
        "{}",
        per_host.stderr()
    );
}
