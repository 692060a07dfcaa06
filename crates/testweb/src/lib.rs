//! A deterministic synthetic web on loopback, for testing and benchmarking crawlers.
//!
//! [`Testweb::start`] serves a [`SiteConfig`] on 127.0.0.1, one port per host, with hyper
//! (HTTP/1.1, keep-alive). Regular pages are generated on request from the seed; nothing is
//! stored. The server knows the ground truth — [`Testweb::expected_pages`], the exact set of
//! URLs a correct crawl fetches — and logs every request so a test can check what a crawler
//! did: [`Testweb::fetch_counts`], [`Testweb::max_in_flight`].
//!
//! # Runtime
//!
//! [`Testweb::start`] spawns its tasks on the current tokio runtime, which needs its IO and
//! time drivers (`#[tokio::test]` and `#[tokio::main]` enable them). On a single-threaded
//! runtime the server shares the thread with the test, so a client that blocks the thread
//! (a `std::process::Command::output`, say) starves it: await the client, or start the web
//! on a runtime of its own.
//!
//! # What a site holds
//!
//! [`SiteConfig`] describes the regular pages and how they link; [`HostConfig`] adds, per
//! host, a robots.txt ([`Robots`]), a latency, and [`Special`] pages, each of a
//! [`SpecialKind`]: error statuses (with `Retry-After`, or failing a few times then
//! succeeding), redirects and redirect loops, delayed, trickled and hanging responses, huge
//! bodies, gzip and gzip bombs, non-HTML bodies, malformed HTML, legacy encodings,
//! `<base href>`, nofollow links and meta tags, canonical links.
//! [`HostConfig::every_special`] has one of each.
//!
//! # Generations, for recrawls
//!
//! Regular pages carry validators (a strong `ETag`, a hash of what their bytes follow from, and a
//! `Last-Modified`) and answer `304 Not Modified` to a request that holds them
//! (`If-None-Match`, else `If-Modified-Since`). [`SiteConfig::generation`] and
//! [`SiteConfig::changed_fraction`] change a fraction of the pages in each generation;
//! [`Testweb::changes_since`] says which changed between two, and
//! [`Testweb::page_bytes_served`] and [`Testweb::not_modified_served`] what a recrawl cost.
//!
//! # The binary
//!
//! `testweb --pages 100000 --children 10 --random-links 20 --page-bytes 8500` serves such a
//! site until killed and prints its seed URL; `testweb --help` lists the options. On one
//! core it serves about 100,000 of those 8.5 KB pages a second over keep-alive connections
//! (`tests/throughput.rs`).
//!
//! # Canonical URLs
//!
//! URLs this crate returns are canonical: `http://127.0.0.1:PORT` followed by the path (and
//! query, if any), as the WHATWG URL standard serializes them (lower-case scheme, the host as
//! a dotted IPv4 address, `/` for an empty path, dot segments resolved, non-ASCII characters
//! percent-encoded as UTF-8 with upper-case hex), without a fragment, without an empty query
//! (`/p/12?` is `/p/12`), and with escapes of unreserved characters decoded (`/p/%312` is
//! `/p/12`). Those are the rules of the `frontier` crate's canonicalizer that matter here.
//!
//! # Example
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! use testweb::{SiteConfig, Testweb};
//!
//! let web = Testweb::start(SiteConfig { pages_per_host: 20, ..SiteConfig::default() }).await?;
//! let seed = &web.seeds()[0];
//! assert!(seed.starts_with("http://127.0.0.1:") && seed.ends_with('/'));
//! assert_eq!(web.expected_pages().len(), 20);
//! // ... run a crawler from `seed`, then compare what it fetched:
//! assert!(web.fetch_counts().is_empty());
//! web.shutdown();
//! # Ok(())
//! # }
//! ```

mod config;
mod dns;
mod reply;
mod server;
mod site;
mod special;

use std::collections::{BTreeSet, HashMap};
use std::io;
use std::net::Ipv4Addr;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

pub use config::{
    Charset, Declared, HostConfig, NonHtml, Robots, RobotsRules, SiteConfig, SitemapFormat,
    Special, SpecialKind,
};
pub use dns::DnsServer;

use site::{Route, Site};

/// One request received, as logged.
///
/// # Example
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// use tokio::io::{AsyncReadExt, AsyncWriteExt};
///
/// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
/// let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", web.port(0))).await?;
/// stream.write_all(b"GET /p/3?x=1 HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").await?;
/// stream.read_to_end(&mut Vec::new()).await?;
/// let log = web.requests();
/// assert_eq!((log[0].host, log[0].path.as_str(), log[0].in_flight), (0, "/p/3?x=1", 1));
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Debug)]
pub struct Request {
    /// The index of the host it was sent to.
    pub host: usize,
    /// The index of the address it reached (see [`Testweb::addresses`]).
    pub address: usize,
    /// The request target as received: path and query (`/p/3?x=1`).
    pub path: String,
    /// When it arrived.
    pub at: Instant,
    /// Requests to this host in flight when it arrived, itself included. A request stays in
    /// flight until its response is fully handed to the connection (or the connection
    /// closes), so a crawler that waits for each response before sending the next request
    /// to a host keeps this at 1.
    pub in_flight: usize,
    /// Requests to this address in flight when it arrived, itself included: the load of one
    /// server, whichever of its names they were for.
    pub at_address: usize,
    /// Connections open to this host when it arrived (0 when served by name: a connection is
    /// the address's, see [`Testweb::addresses`]). The server may notice a closed connection
    /// late, so this can exceed what the client has open; `in_flight` is exact.
    pub connections: usize,
}

/// What the crawl whose ground truth [`Testweb::expected_pages_with`] computes obeys.
///
/// # Example
///
/// ```
/// let options = testweb::ExpectOptions { follow_nofollow: true, ..Default::default() };
/// assert!(!options.ignore_robots);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ExpectOptions {
    /// Follow links marked `rel=nofollow` and the links of pages with a robots `nofollow`
    /// meta tag. Default: false.
    pub follow_nofollow: bool,
    /// Fetch what robots.txt disallows. Default: false.
    pub ignore_robots: bool,
    /// Read no sitemap: neither robots.txt's `Sitemap:` lines nor the entries of
    /// [`SpecialKind::Sitemap`] pages. Default: false (sitemaps are read).
    pub ignore_sitemaps: bool,
    /// Fetch pages' requisites (the images, style sheets and scripts of
    /// [`SpecialKind::Styled`] pages). Default: false.
    pub page_requisites: bool,
}

/// What changed between two sites (see [`Testweb::changes_since`]), as canonical URLs.
///
/// # Example
///
/// ```
/// let changes = testweb::Changes::default();
/// assert!(changes.changed.is_empty() && changes.new.is_empty() && changes.gone.is_empty());
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Changes {
    /// Regular pages in both whose HTML differs.
    pub changed: BTreeSet<String>,
    /// Pages a crawl of the later site fetches that one of the earlier did not.
    pub new: BTreeSet<String>,
    /// Pages a crawl of the earlier site fetched that one of the later does not.
    pub gone: BTreeSet<String>,
}

/// A running synthetic web. Dropping it (or [`Testweb::shutdown`]) stops it.
///
/// See the [crate documentation](crate) for an example.
#[derive(Debug)]
pub struct Testweb {
    site: Arc<Site>,
    shutdown: watch::Sender<bool>,
    tasks: Vec<JoinHandle<()>>,
}

impl Testweb {
    /// Checks `config`, binds one listener per host on 127.0.0.1 and serves them on the
    /// current tokio runtime.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] on an invalid configuration (no host, no
    /// page, a special path that is malformed, reserved or repeated, a robots rule that is not
    /// a plain prefix, a redirect to a missing host), or with the error of binding a port.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use testweb::{SiteConfig, Testweb};
    ///
    /// let web = Testweb::start(SiteConfig { hosts: 3, ..SiteConfig::default() }).await?;
    /// assert_eq!(web.hosts(), 3);
    /// assert!(Testweb::start(SiteConfig { hosts: 0, ..SiteConfig::default() }).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start(config: SiteConfig) -> io::Result<Testweb> {
        Site::validate(&config)?;
        let (listeners, ports) = if config.addresses == 0 {
            let mut listeners = Vec::with_capacity(config.hosts);
            for host in 0..config.hosts {
                let port = if config.port == 0 {
                    0
                } else {
                    config.port + host as u16
                };
                listeners.push(TcpListener::bind((Ipv4Addr::LOCALHOST, port)).await?);
            }
            let ports = listeners
                .iter()
                .map(|listener| listener.local_addr().map(|addr| addr.port()))
                .collect::<io::Result<Vec<u16>>>()?;
            (listeners, ports)
        } else {
            let listeners = bind_addresses(config.addresses, config.port).await?;
            let port = listeners[0].local_addr()?.port();
            (listeners, vec![port; config.hosts])
        };
        let by_name = config.addresses > 0;
        let site = Arc::new(Site::new(config, &ports)?);
        let (shutdown, receiver) = watch::channel(false);
        let tasks = listeners
            .into_iter()
            .enumerate()
            .map(|(i, listener)| {
                let serving = if by_name {
                    server::Serving::Address(i)
                } else {
                    server::Serving::Host(i)
                };
                tokio::spawn(server::serve(
                    Arc::clone(&site),
                    serving,
                    listener,
                    receiver.clone(),
                ))
            })
            .collect();
        Ok(Testweb {
            site,
            shutdown,
            tasks,
        })
    }

    /// The configuration it serves.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { seed: 7, ..Default::default() }).await?;
    /// assert_eq!(web.config().seed, 7);
    /// # Ok(())
    /// # }
    /// ```
    pub fn config(&self) -> &SiteConfig {
        &self.site.config
    }

    /// The number of hosts.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.hosts(), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn hosts(&self) -> usize {
        self.site.hosts.len()
    }

    /// The port of `host`. Panics if there is no such host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_ne!(web.port(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn port(&self, host: usize) -> u16 {
        self.site.hosts[host].port
    }

    /// The seeds of a crawl: the root URL of host 0 alone, since it links to the root of
    /// every other host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { hosts: 2, ..Default::default() }).await?;
    /// assert_eq!(web.seeds(), [web.host_url(0)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn seeds(&self) -> Vec<String> {
        vec![self.host_url(0)]
    }

    /// The root URL of every host, in host order.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { hosts: 2, ..Default::default() }).await?;
    /// assert_eq!(web.roots(), [web.host_url(0), web.host_url(1)]);
    /// # Ok(())
    /// # }
    /// ```
    pub fn roots(&self) -> Vec<String> {
        (0..self.hosts()).map(|host| self.host_url(host)).collect()
    }

    /// The root URL of `host`: `http://127.0.0.1:PORT/`. Panics if there is no such host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.host_url(0), format!("http://127.0.0.1:{}/", web.port(0)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn host_url(&self, host: usize) -> String {
        format!("{}/", self.site.hosts[host].origin)
    }

    /// The URL of `path` (which starts with `/`) on `host`: `http://127.0.0.1:PORT{path}`.
    /// Panics if there is no such host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.url(0, "/p/3"), format!("http://127.0.0.1:{}/p/3", web.port(0)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn url(&self, host: usize, path: &str) -> String {
        format!("{}{path}", self.site.hosts[host].origin)
    }

    /// The canonical URLs a correct crawl from [`Testweb::seeds`] requests, obeying
    /// robots.txt and nofollow: the same as [`Testweb::expected_pages_with`] with the default
    /// [`ExpectOptions`].
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use testweb::{HostConfig, Robots, SiteConfig, Testweb};
    ///
    /// let config = SiteConfig {
    ///     pages_per_host: 10,
    ///     host_configs: vec![HostConfig { robots: Robots::disallow(["/p/1"]), ..Default::default() }],
    ///     ..SiteConfig::default()
    /// };
    /// let web = Testweb::start(config).await?;
    /// let expected = web.expected_pages();
    /// assert!(expected.contains(&web.url(0, "/p/2")));
    /// assert!(!expected.contains(&web.url(0, "/p/1")));
    /// # Ok(())
    /// # }
    /// ```
    pub fn expected_pages(&self) -> BTreeSet<String> {
        self.expected_pages_with(ExpectOptions::default())
    }

    /// The canonical URLs a correct crawl from [`Testweb::seeds`] requests, for a crawl that
    /// obeys what `options` says.
    ///
    /// It is the closure of the seed under links and redirects, computed from the site model
    /// (no request is made):
    ///
    /// * Included: every URL of the site's hosts reached from the seed by followed links and
    ///   by redirects' `Location`s that robots.txt allows. That is the regular pages (`/` and
    ///   `/p/{i}`), the linked special pages of every kind — whatever they answer: errors,
    ///   redirects, slow, hanging, huge, gzip bombs, non-HTML — the targets of redirects
    ///   (even when they answer 404), and the helper pages (`/t/...`) special pages link to.
    /// * Excluded: `/robots.txt` itself (which a crawl fetches too); URLs robots.txt
    ///   disallows, and whatever is reachable only through them (a host whose robots.txt
    ///   answers 5xx contributes nothing); targets of `rel=nofollow` links and of the links on
    ///   a page with a robots `nofollow` meta tag; link-like text that is not a link (in
    ///   comments, scripts, textareas, plain text, non-HTML bodies, `data-href`, a second
    ///   `href`); `<link rel=canonical>` targets; pages whose only links are on pages that
    ///   answer an error or a redirect (those carry none); special pages with `linked: false`
    ///   no redirect reaches; off-site URLs.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use testweb::{ExpectOptions, HostConfig, Special, SpecialKind, SiteConfig, Testweb};
    ///
    /// let host = HostConfig {
    ///     specials: vec![Special::new("/nf", SpecialKind::Nofollow)],
    ///     ..HostConfig::default()
    /// };
    /// let config = SiteConfig { host_configs: vec![host], ..SiteConfig::default() };
    /// let web = Testweb::start(config).await?;
    /// let follow = ExpectOptions { follow_nofollow: true, ..Default::default() };
    /// let hidden = web.url(0, "/t/nf/nofollow-1");
    /// assert!(!web.expected_pages().contains(&hidden));
    /// assert!(web.expected_pages_with(follow).contains(&hidden));
    /// # Ok(())
    /// # }
    /// ```
    pub fn expected_pages_with(&self, options: ExpectOptions) -> BTreeSet<String> {
        self.site.expected(options)
    }

    /// Whether robots.txt of the site disallows `url`, a canonical URL of one of its hosts
    /// (false for any other URL, and for `/robots.txt`).
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use testweb::{HostConfig, Robots, SiteConfig, Testweb};
    ///
    /// let config = SiteConfig {
    ///     hosts: 2,
    ///     host_configs: vec![HostConfig::default(), HostConfig { robots: Robots::Status(503), ..Default::default() }],
    ///     ..SiteConfig::default()
    /// };
    /// let web = Testweb::start(config).await?;
    /// assert!(!web.is_disallowed(&web.url(0, "/p/1")));
    /// assert!(web.is_disallowed(&web.url(1, "/")));
    /// assert!(!web.is_disallowed("http://example.com/"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn is_disallowed(&self, url: &str) -> bool {
        match self.site.locate(url) {
            Some((host, path)) => {
                let path = if path.is_empty() { "/" } else { path };
                !self.site.allowed(host, path)
            }
            None => false,
        }
    }

    /// The special pages of every host: their canonical URL and kind, host by host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use testweb::{HostConfig, SiteConfig, SpecialKind, Testweb};
    ///
    /// let config = SiteConfig { host_configs: vec![HostConfig::every_special()], ..Default::default() };
    /// let web = Testweb::start(config).await?;
    /// let hang = web.url(0, "/slow/hang");
    /// assert!(web.specials().iter().any(|(url, kind)| *url == hang && matches!(kind, SpecialKind::Hang)));
    /// # Ok(())
    /// # }
    /// ```
    pub fn specials(&self) -> Vec<(String, SpecialKind)> {
        let mut out = Vec::new();
        for (host, site) in self.site.hosts.iter().enumerate() {
            for special in &site.config.specials {
                out.push((self.url(host, &special.path), special.kind.clone()));
            }
        }
        out
    }

    /// A copy of the request log, in arrival order. Empty if the configuration turned the
    /// log off.
    ///
    /// See [`Request`] for an example.
    pub fn requests(&self) -> Vec<Request> {
        match &self.site.log {
            Some(log) => log.lock().unwrap_or_else(|e| e.into_inner()).clone(),
            None => Vec::new(),
        }
    }

    /// How many times each URL was requested, from the log. The key is
    /// `http://127.0.0.1:PORT` followed by the request target exactly as received (so a
    /// crawler that sends a non-canonical target shows up with it), `/robots.txt` included.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use tokio::io::{AsyncReadExt, AsyncWriteExt};
    ///
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", web.port(0))).await?;
    /// stream.write_all(b"GET / HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n").await?;
    /// stream.read_to_end(&mut Vec::new()).await?;
    /// assert_eq!(web.fetch_counts()[&web.host_url(0)], 2);
    /// # Ok(())
    /// # }
    /// ```
    pub fn fetch_counts(&self) -> HashMap<String, usize> {
        let mut counts = HashMap::new();
        if let Some(log) = &self.site.log {
            for request in log.lock().unwrap_or_else(|e| e.into_inner()).iter() {
                let url = format!("{}{}", self.site.hosts[request.host].origin, request.path);
                *counts.entry(url).or_insert(0) += 1;
            }
        }
        counts
    }

    /// The most requests to `host` ever in flight at once (see [`Request::in_flight`]), since
    /// the start or the last [`Testweb::clear_log`]. Kept even without the log. Panics if
    /// there is no such host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.max_in_flight(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_in_flight(&self, host: usize) -> usize {
        self.site.hosts[host].stats.max_in_flight.load(Relaxed)
    }

    /// The addresses the hosts are served on: 127.0.0.1 alone, or with
    /// [`SiteConfig::addresses`] that many, 127.0.0.1 and up.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { hosts: 4, addresses: 2, ..Default::default() }).await?;
    /// assert_eq!(web.addresses(), ["127.0.0.1".parse::<std::net::Ipv4Addr>().unwrap(), "127.0.0.2".parse().unwrap()]);
    /// assert_eq!(web.address_of(3), 1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn addresses(&self) -> Vec<Ipv4Addr> {
        self.site.addresses.iter().map(|(ip, _)| *ip).collect()
    }

    /// The index in [`Testweb::addresses`] of the address `host` is served on. Panics if
    /// there is no such host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.address_of(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn address_of(&self, host: usize) -> usize {
        self.site.hosts[host].address
    }

    /// The most requests in flight at once at address `address` (an index in
    /// [`Testweb::addresses`]), whichever hosts they were for, since the start or the last
    /// [`Testweb::clear_log`]. Panics if there is no such address.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { hosts: 3, addresses: 1, ..Default::default() }).await?;
    /// assert_eq!(web.max_in_flight_at_address(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn max_in_flight_at_address(&self, address: usize) -> usize {
        self.site.addresses[address].1.max_in_flight.load(Relaxed)
    }

    /// Each host's name and address, for a site served by name (what a DNS server for it
    /// answers: see [`DnsServer`]); empty otherwise.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { hosts: 2, addresses: 2, ..Default::default() }).await?;
    /// assert_eq!(web.names()[1], ("h1.test".to_owned(), "127.0.0.2".parse().unwrap()));
    /// # Ok(())
    /// # }
    /// ```
    pub fn names(&self) -> Vec<(String, std::net::IpAddr)> {
        if self.site.config.addresses == 0 {
            return Vec::new();
        }
        (0..self.hosts())
            .map(|h| {
                let (ip, _) = self.site.addresses[self.site.hosts[h].address];
                (
                    format!("h{h}.{}", site::host_domain(&self.site.config, h)),
                    std::net::IpAddr::V4(ip),
                )
            })
            .collect()
    }

    /// Where each host name lives, as curl's and the crawler's `--resolve` take it
    /// (`NAME:PORT:ADDRESS`), for a site served by name; empty otherwise.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig { hosts: 2, addresses: 2, ..Default::default() }).await?;
    /// let port = web.port(0);
    /// assert_eq!(web.resolve_entries(), [format!("h0.test:{port}:127.0.0.1"), format!("h1.test:{port}:127.0.0.2")]);
    /// assert_eq!(web.host_url(1), format!("http://h1.test:{port}/"));
    /// # Ok(())
    /// # }
    /// ```
    pub fn resolve_entries(&self) -> Vec<String> {
        if self.site.config.addresses == 0 {
            return Vec::new();
        }
        self.site
            .hosts
            .iter()
            .map(|host| {
                let authority = &host.origin["http://".len()..];
                let (ip, _) = &self.site.addresses[host.address];
                format!("{authority}:{ip}")
            })
            .collect()
    }

    /// The number of requests `host` received, since the start or the last
    /// [`Testweb::clear_log`]. Kept even without the log. Panics if there is no such host.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.requests_served(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn requests_served(&self, host: usize) -> u64 {
        self.site.hosts[host].stats.requests.load(Relaxed)
    }

    /// Body bytes of the regular pages `host` answered with 200 (304s send none).
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.page_bytes_served(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn page_bytes_served(&self, host: usize) -> u64 {
        self.site.hosts[host].stats.page_bytes.load(Relaxed)
    }

    /// Regular pages of `host` answered 304 Not Modified: the request's `If-None-Match`
    /// named the page's ETag, or, without it, its `If-Modified-Since` was no earlier than
    /// the page's `Last-Modified`.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// assert_eq!(web.not_modified_served(0), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn not_modified_served(&self, host: usize) -> u64 {
        self.site.hosts[host].stats.not_modified.load(Relaxed)
    }

    /// What changed from the site `earlier` describes (another generation, say) to this
    /// one, served on this site's ports: the expected pages whose HTML differs, those
    /// expected now and not then, and those expected then and not now. The ground truth of a
    /// recrawl.
    ///
    /// Fails with [`io::ErrorKind::InvalidInput`] when `earlier` is not a valid
    /// configuration or has another number of hosts.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// use testweb::{SiteConfig, Testweb};
    ///
    /// let first = SiteConfig { pages_per_host: 200, changed_fraction: 0.1, ..SiteConfig::default() };
    /// let web = Testweb::start(SiteConfig { generation: 1, ..first.clone() }).await?;
    /// let changes = web.changes_since(&first)?;
    /// assert!(!changes.changed.is_empty() && changes.changed.len() < 60);
    /// assert!(web.changes_since(web.config())?.changed.is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn changes_since(&self, earlier: &SiteConfig) -> io::Result<Changes> {
        if earlier.hosts != self.site.config.hosts {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                "the earlier site has another number of hosts",
            ));
        }
        Site::validate(earlier)?;
        let ports: Vec<u16> = self.site.hosts.iter().map(|h| h.port).collect();
        let then = Site::new(earlier.clone(), &ports)?;
        let before = then.expected(ExpectOptions::default());
        let now = self.site.expected(ExpectOptions::default());
        let mut changes = Changes::default();
        for url in now.intersection(&before) {
            let Some((host, path)) = self.site.locate(url) else {
                continue;
            };
            if let Route::Page(n) = self.site.route(host, path)
                && (n >= then.config.pages_per_host
                    || self.site.render_page(host, n) != then.render_page(host, n))
            {
                changes.changed.insert(url.clone());
            }
        }
        changes.new = now.difference(&before).cloned().collect();
        changes.gone = before.difference(&now).cloned().collect();
        Ok(changes)
    }

    /// Empties the request log and resets the counters of [`Testweb::max_in_flight`],
    /// [`Testweb::requests_served`], [`Testweb::page_bytes_served`] and
    /// [`Testweb::not_modified_served`] (not the request counts of flaky pages).
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// web.clear_log();
    /// assert!(web.requests().is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn clear_log(&self) {
        if let Some(log) = &self.site.log {
            log.lock().unwrap_or_else(|e| e.into_inner()).clear();
        }
        for (_, stats) in &self.site.addresses {
            stats.requests.store(0, Relaxed);
            stats
                .max_in_flight
                .store(stats.in_flight.load(Relaxed), Relaxed);
        }
        for host in &self.site.hosts {
            host.stats.requests.store(0, Relaxed);
            host.stats.page_bytes.store(0, Relaxed);
            host.stats.not_modified.store(0, Relaxed);
            host.stats
                .max_in_flight
                .store(host.stats.in_flight.load(Relaxed), Relaxed);
        }
    }

    /// Stops accepting connections and closes the open ones (responses in progress are cut).
    /// Dropping the `Testweb` does the same.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let web = testweb::Testweb::start(testweb::SiteConfig::default()).await?;
    /// let port = web.port(0);
    /// web.shutdown();
    /// tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    /// assert!(tokio::net::TcpStream::connect(("127.0.0.1", port)).await.is_err());
    /// # Ok(())
    /// # }
    /// ```
    pub fn shutdown(&self) {
        let _ = self.shutdown.send(true);
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Listeners on `n` loopback addresses (127.0.0.1 and up) sharing one port: `port`, or one
/// the system gives 127.0.0.1 and the others also have free (tried a few times).
async fn bind_addresses(n: usize, port: u16) -> io::Result<Vec<TcpListener>> {
    let mut last = None;
    for _ in 0..20 {
        let first = TcpListener::bind((site::address(0), port)).await?;
        let port = first.local_addr()?.port();
        let mut listeners = vec![first];
        for a in 1..n {
            match TcpListener::bind((site::address(a), port)).await {
                Ok(listener) => listeners.push(listener),
                Err(e) => {
                    last = Some(e);
                    break;
                }
            }
        }
        if listeners.len() == n {
            return Ok(listeners);
        }
    }
    Err(last.unwrap_or_else(|| io::Error::other("no port free on every address")))
}

impl Drop for Testweb {
    fn drop(&mut self) {
        self.shutdown();
    }
}
