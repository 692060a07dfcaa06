//! `testweb`: serves a synthetic site on loopback until killed, for crawl benchmarks and for
//! trying a crawler offline.
//!
//! ```text
//! testweb --pages 100000 --children 10 --random-links 20 --page-bytes 8500 --port 0
//! ```
//!
//! prints the seed URL (the root of host 0; with `--all-roots`, the root of every host) on
//! stdout, one per line, then serves. On Ctrl-C or SIGTERM it prints a summary of the
//! requests to stderr and exits.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;
use testweb::{HostConfig, Robots, RobotsRules, SiteConfig, Testweb};

/// Serve a deterministic synthetic web on 127.0.0.1 until killed.
#[derive(Debug, Parser)]
#[command(name = "testweb", version)]
struct Args {
    /// Number of hosts (one port each).
    #[arg(long, default_value_t = 1)]
    hosts: usize,
    /// Pages per host.
    #[arg(long, default_value_t = 100_000)]
    pages: u64,
    /// Child pages per page (tree fan-out).
    #[arg(long, default_value_t = 10)]
    children: u64,
    /// Links to pseudo-random pages per page.
    #[arg(long, default_value_t = 20)]
    random_links: u64,
    /// Fraction of random links that go to another host.
    #[arg(long, default_value_t = 0.2)]
    inter_host: f64,
    /// Approximate size of each page in bytes.
    #[arg(long, default_value_t = 8_500)]
    page_bytes: usize,
    /// Seed of every pseudo-random choice.
    #[arg(long, default_value_t = 0)]
    seed: u64,
    /// Port of host 0 (host i gets port + i); 0 picks free ports.
    #[arg(long, default_value_t = 0)]
    port: u16,
    /// Serve the hosts by name on this many loopback addresses sharing one port (host i is
    /// h{i}.test at 127.0.0.{1 + i % N}), as shared hosting does; 0: a port per host.
    #[arg(long, default_value_t = 0, value_name = "N")]
    addresses: usize,
    /// With --addresses, name the hosts h{i}.DOMAIN: under a domain like farm.test, every
    /// host is a subdomain of one registrable domain (a spam farm).
    #[arg(long, default_value = "test")]
    domain: String,
    /// With --addresses, name the hosts h{i}.a{i % N}.DOMAIN: the names of one address share
    /// a registrable domain (a{i % N}.DOMAIN), as a site's subdomains often share its servers.
    #[arg(long)]
    names_by_address: bool,
    /// With --addresses, write where each name lives to this file, one NAME:PORT:ADDRESS a
    /// line, as the crawler's --resolve takes it.
    #[arg(long, value_name = "FILE")]
    resolve_out: Option<PathBuf>,
    /// With --addresses, also serve DNS for the hosts' names on a UDP port of 127.0.0.1, and
    /// write where (127.0.0.1:PORT, as the crawler's --dns-server takes it) to this file.
    #[arg(long, value_name = "FILE")]
    dns_out: Option<PathBuf>,
    /// With --dns-out, answer each question only after this many milliseconds: a slow name
    /// server (each question waits on its own; none holds up another).
    #[arg(long, value_name = "MS", default_value_t = 0)]
    dns_delay_ms: u64,
    /// Spell every link the plain way instead of in many equivalent ways.
    #[arg(long)]
    plain_links: bool,
    /// Keep no request log (the summary then has the counters only).
    #[arg(long)]
    no_log: bool,
    /// Delay before every response, in milliseconds.
    #[arg(long, default_value_t = 0)]
    latency_ms: u64,
    /// A robots.txt `Disallow:` prefix for every host (repeatable).
    #[arg(long = "disallow", value_name = "PREFIX")]
    disallow: Vec<String>,
    /// A robots.txt `Crawl-delay:` for every host, in seconds.
    #[arg(long, value_name = "SECONDS")]
    crawl_delay: Option<f64>,
    /// Give host 0 one special page of every kind (errors, redirects, slow and hanging
    /// responses, huge bodies, gzip bombs, legacy encodings...).
    #[arg(long)]
    all_specials: bool,
    /// Print the root of every host, not only the seed.
    #[arg(long)]
    all_roots: bool,
    /// Write the expected pages (the ground truth), one URL a line, to this file.
    #[arg(long, value_name = "FILE")]
    expected_out: Option<PathBuf>,
    /// The site's generation: in each from 1 to this one, each page changes with the chance
    /// --changed (its text and where its links to random pages lead).
    #[arg(long, default_value_t = 0)]
    generation: u64,
    /// The chance that a page changes in each generation, 0 to 1.
    #[arg(long, default_value_t = 0.0)]
    changed: f64,
    /// Write what changed since generation 0 to this file, one `changed URL`, `new URL` or
    /// `gone URL` a line (the ground truth of a recrawl).
    #[arg(long, value_name = "FILE")]
    changes_out: Option<PathBuf>,
    /// Worker threads of the server (1: a single-threaded runtime).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

fn main() -> std::io::Result<()> {
    let args = Args::parse();
    let runtime = if args.threads <= 1 {
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()?
    } else {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(args.threads)
            .enable_all()
            .build()?
    };
    runtime.block_on(serve(args))
}

async fn serve(args: Args) -> std::io::Result<()> {
    let robots = if args.disallow.is_empty() && args.crawl_delay.is_none() {
        Robots::Missing
    } else {
        let crawl_delay = match args.crawl_delay {
            Some(seconds) if seconds.is_finite() && seconds >= 0.0 => {
                Some(Duration::from_secs_f64(seconds))
            }
            Some(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    "--crawl-delay must be a non-negative number",
                ));
            }
            None => None,
        };
        Robots::Rules(RobotsRules {
            disallow: args.disallow.clone(),
            allow: Vec::new(),
            crawl_delay,
            sitemaps: Vec::new(),
        })
    };
    let host_configs = (0..args.hosts)
        .map(|host| {
            let base = if host == 0 && args.all_specials {
                HostConfig::every_special()
            } else {
                HostConfig::default()
            };
            HostConfig {
                robots: robots.clone(),
                latency: Duration::from_millis(args.latency_ms),
                ..base
            }
        })
        .collect();
    let config = SiteConfig {
        hosts: args.hosts,
        pages_per_host: args.pages,
        children_per_page: args.children,
        random_links_per_page: args.random_links,
        inter_host_fraction: args.inter_host,
        page_bytes: args.page_bytes,
        seed: args.seed,
        varied_spellings: !args.plain_links,
        offsite_links: false,
        log_requests: !args.no_log,
        port: args.port,
        addresses: args.addresses,
        domain: args.domain.clone(),
        names_by_address: args.names_by_address,
        host_configs,
        generation: args.generation,
        changed_fraction: args.changed,
    };
    let web = Testweb::start(config).await?;
    if let Some(path) = &args.changes_out {
        let first = SiteConfig {
            generation: 0,
            ..web.config().clone()
        };
        let changes = web.changes_since(&first)?;
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for (kind, urls) in [
            ("changed", &changes.changed),
            ("new", &changes.new),
            ("gone", &changes.gone),
        ] {
            for url in urls {
                writeln!(out, "{kind} {url}")?;
            }
        }
        out.flush()?;
    }
    if let Some(path) = &args.resolve_out {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for entry in web.resolve_entries() {
            writeln!(out, "{entry}")?;
        }
        out.flush()?;
    }
    let dns = match &args.dns_out {
        Some(path) => {
            let names = web.names();
            let dns = testweb::DnsServer::start(names.clone()).await?;
            if args.dns_delay_ms > 0 {
                for (name, _) in &names {
                    dns.delay(name, Duration::from_millis(args.dns_delay_ms));
                }
            }
            std::fs::write(path, format!("{}\n", dns.addr()))?;
            Some(dns)
        }
        None => None,
    };
    if let Some(path) = &args.expected_out {
        let mut out = std::io::BufWriter::new(std::fs::File::create(path)?);
        for url in web.expected_pages() {
            writeln!(out, "{url}")?;
        }
        out.flush()?;
    }
    {
        let mut stdout = std::io::stdout().lock();
        let urls = if args.all_roots {
            web.roots()
        } else {
            web.seeds()
        };
        for url in urls {
            writeln!(stdout, "{url}")?;
        }
        stdout.flush()?;
    }
    wait_for_signal().await;
    summarize(&web, dns.as_ref());
    Ok(())
}

#[cfg(unix)]
async fn wait_for_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match signal(SignalKind::terminate()) {
        Ok(mut term) => {
            tokio::select! {
                _ = tokio::signal::ctrl_c() => {}
                _ = term.recv() => {}
            }
        }
        Err(_) => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

#[cfg(not(unix))]
async fn wait_for_signal() {
    let _ = tokio::signal::ctrl_c().await;
}

/// Prints what was requested to stderr.
fn summarize(web: &Testweb, dns: Option<&testweb::DnsServer>) {
    let mut err = std::io::stderr().lock();
    for (a, address) in web.addresses().iter().enumerate() {
        if web.addresses().len() > 1 || web.config().addresses > 0 {
            let _ = writeln!(
                err,
                "address {address}: at most {} requests in flight",
                web.max_in_flight_at_address(a)
            );
        }
    }
    if let Some(dns) = dns {
        let questions = dns.all_questions();
        let _ = writeln!(
            err,
            "dns: {} questions about {} names",
            questions.values().sum::<usize>(),
            questions.len()
        );
    }
    for host in 0..web.hosts() {
        let _ = writeln!(
            err,
            "host {host} ({}): {} requests, at most {} in flight; {} bytes of pages, {} pages \
             not modified (304)",
            web.host_url(host),
            web.requests_served(host),
            web.max_in_flight(host),
            web.page_bytes_served(host),
            web.not_modified_served(host),
        );
    }
    if !web.config().log_requests {
        return;
    }
    let counts = web.fetch_counts();
    let expected = web.expected_pages();
    let fetched = expected
        .iter()
        .filter(|url| counts.contains_key(*url))
        .count();
    let repeated: usize = counts.values().map(|&n| n.saturating_sub(1)).sum();
    let unexpected = counts
        .keys()
        .filter(|url| !expected.contains(*url) && !url.ends_with("/robots.txt"))
        .count();
    let _ = writeln!(
        err,
        "expected pages fetched: {fetched} of {}; repeated fetches: {repeated}; unexpected URLs: {unexpected}",
        expected.len(),
    );
}
