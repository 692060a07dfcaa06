//! The site model shared by the server and the ground truth: routes, the link graph of regular
//! pages and its spellings, the special pages' links, robots rules, and the breadth-first
//! search that computes the expected set.

use std::collections::{BTreeSet, HashMap, HashSet, VecDeque};
use std::io;
use std::net::Ipv4Addr;
use std::sync::atomic::{AtomicU32, AtomicU64, AtomicUsize};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::{Duration, SystemTime};

use bytes::Bytes;

use crate::config::{Charset, HostConfig, NonHtml, Robots, RobotsRules, SiteConfig, SpecialKind};
use crate::{ExpectOptions, Request};

/// Address `a` of a site served by name: 127.0.0.`1 + a`.
pub(crate) fn address(a: usize) -> Ipv4Addr {
    Ipv4Addr::new(127, 0, 0, 1 + (a % 254) as u8)
}

/// Counters of one host (or of one address), kept whether or not requests are logged.
#[derive(Debug, Default)]
pub(crate) struct HostStats {
    /// Requests whose response is not fully sent yet.
    pub(crate) in_flight: AtomicUsize,
    /// The largest `in_flight` seen by an arriving request (itself included).
    pub(crate) max_in_flight: AtomicUsize,
    /// Open connections.
    pub(crate) connections: AtomicUsize,
    /// Requests received.
    pub(crate) requests: AtomicU64,
    /// Body bytes of the regular pages answered 200.
    pub(crate) page_bytes: AtomicU64,
    /// Regular pages answered 304 Not Modified.
    pub(crate) not_modified: AtomicU64,
}

/// One host of a running site.
#[derive(Debug)]
pub(crate) struct HostSite {
    /// Its features.
    pub(crate) config: HostConfig,
    /// Its port.
    pub(crate) port: u16,
    /// The index of its address in [`Site::addresses`].
    pub(crate) address: usize,
    /// `http://127.0.0.1:PORT`, or `http://h{i}.test:PORT` served by name.
    pub(crate) origin: String,
    /// Other spellings of the origin, indexed by [`Alt`].
    alt: [String; 4],
    /// Special page index by path.
    pub(crate) specials: HashMap<String, usize>,
    /// Requests so far, per special page (for [`SpecialKind::Flaky`]).
    pub(crate) hits: Vec<AtomicU32>,
    /// Gzip bombs, built on first request, per special page.
    pub(crate) bombs: Vec<OnceLock<Bytes>>,
    /// The body of robots.txt when it answers 200.
    pub(crate) robots_txt: Option<Bytes>,
    /// Counters.
    pub(crate) stats: Arc<HostStats>,
}

/// Indexes into [`HostSite::alt`].
#[derive(Clone, Copy)]
enum Alt {
    /// `HTTP://0X7F.0.0.1:PORT`.
    UpperHex = 0,
    /// `http://127.1:PORT`.
    Short = 1,
    /// `//127.0.0.1:PORT`.
    SchemeRelative = 2,
    /// `http://127.0.0.1.:PORT`.
    TrailingDot = 3,
}

/// A running site: configuration, hosts, filler text and the request log.
#[derive(Debug)]
pub(crate) struct Site {
    pub(crate) config: SiteConfig,
    pub(crate) hosts: Vec<HostSite>,
    /// The addresses the hosts are served on (127.0.0.1 alone unless served by name), with
    /// the counters of the requests each received.
    pub(crate) addresses: Vec<(Ipv4Addr, Arc<HostStats>)>,
    /// Each host's index by its authority (`127.0.0.1:PORT` or `h{i}.test:PORT`).
    by_authority: HashMap<String, usize>,
    /// Pseudo-random words, at least 64 KiB longer than `page_bytes`.
    filler: Vec<u8>,
    /// The request log, if kept.
    pub(crate) log: Option<Mutex<Vec<Request>>>,
    /// A hash of everything a regular page's bytes depend on but its revision: the
    /// configuration (its generation and change rate aside) and the ports.
    fingerprint: u64,
}

/// Where a request path leads.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Route {
    /// Regular page `n` (0 is the root).
    Page(u64),
    /// `/robots.txt`.
    Robots,
    /// The special page with this index.
    Special(usize),
    /// A helper page under `/t/`.
    Leaf,
    /// Anything else.
    NotFound,
}

/// What the ground truth does with a link of a special page.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Follow {
    /// A link a crawl follows.
    Yes,
    /// A link marked nofollow.
    Nofollow,
    /// Text that is not a link.
    Never,
    /// An entry of a sitemap: followed by a crawl that reads sitemaps.
    Sitemap,
    /// A page requisite: fetched by a crawl that fetches them.
    Requisite,
}

/// A link of a special page: the canonical target and whether it is followed.
#[derive(Clone, Debug)]
pub(crate) struct SpecialLink {
    pub(crate) host: usize,
    /// Canonical path, starting with `/`.
    pub(crate) path: String,
    pub(crate) follow: Follow,
}

/// Why a regular page links to another, which picks the anchor text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Role {
    Home,
    Child,
    Again,
    Random,
    HostRoot,
}

/// A link of a regular page.
#[derive(Clone, Copy, Debug)]
struct PageLink {
    role: Role,
    host: usize,
    page: u64,
    /// A pseudo-random number that picks the spelling.
    spelling: u64,
}

/// A node of the ground-truth search.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
enum Node {
    Page(usize, u64),
    Path(usize, String),
}

/// The Last-Modified of a page that never changed: 2026-01-01T00:00:00Z, in seconds since
/// the Unix epoch.
const FIRST_MODIFIED: u64 = 1_767_225_600;

/// The SplitMix64 finalizer: a cheap, good 64-bit mixer.
pub(crate) fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// A pseudo-random number in `0 .. n` from `r`.
fn below(r: u64, n: u64) -> u64 {
    ((u128::from(r) * u128::from(n)) >> 64) as u64
}

/// Appends the decimal digits of `n`.
pub(crate) fn push_u64(buf: &mut Vec<u8>, mut n: u64) {
    let mut digits = [0u8; 20];
    let mut i = digits.len();
    loop {
        i -= 1;
        digits[i] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    buf.extend_from_slice(&digits[i..]);
}

/// Decodes `%XX` escapes of unreserved characters (letters, digits, `-._~`), as the
/// canonical form does; other escapes stay as they are. Borrows when there is nothing to do.
pub(crate) fn decode_unreserved(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains('%') {
        return std::borrow::Cow::Borrowed(path);
    }
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' && i + 2 < bytes.len() {
            let hex = |b: u8| (b as char).to_digit(16);
            if let (Some(h), Some(l)) = (hex(bytes[i + 1]), hex(bytes[i + 2])) {
                let c = (h * 16 + l) as u8;
                if c.is_ascii_alphanumeric() || matches!(c, b'-' | b'.' | b'_' | b'~') {
                    out.push(c);
                    i += 3;
                    continue;
                }
            }
        }
        out.push(bytes[i]);
        i += 1;
    }
    // Only ASCII bytes were replaced by ASCII bytes: still UTF-8.
    std::borrow::Cow::Owned(String::from_utf8(out).unwrap_or_else(|_| path.to_owned()))
}

/// Percent-encodes the non-ASCII characters of `s` as UTF-8, as a URL path does.
pub(crate) fn encode_non_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len() * 3);
    for &b in s.as_bytes() {
        if b.is_ascii() {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Whether `path` is a valid special page path (see [`crate::Special::path`]).
fn valid_path(path: &str) -> bool {
    path.starts_with('/')
        && path.len() > 1
        && path[1..].split('/').all(|segment| {
            !segment.is_empty()
                && segment != "."
                && segment != ".."
                && segment
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.~".contains(&b))
        })
}

fn invalid(message: String) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidInput, message)
}

/// Spellings of a link to the same host, by weight (16 entries).
const SAME_HOST: [u8; 16] = [0, 0, 0, 0, 1, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
/// Spellings of a link to another host (absolute ones only).
const OTHER_HOST: [u8; 6] = [1, 1, 7, 8, 9, 11];

const WORDS: &[&str] = &[
    "the",
    "of",
    "and",
    "crawler",
    "frontier",
    "page",
    "link",
    "host",
    "queue",
    "bloom",
    "filter",
    "robots",
    "polite",
    "delay",
    "fetch",
    "parse",
    "canonical",
    "seed",
    "graph",
    "synthetic",
    "loopback",
    "server",
    "request",
    "response",
    "header",
    "body",
    "gzip",
    "encoding",
    "anchor",
    "fragment",
    "query",
    "path",
    "scheme",
    "port",
    "redirect",
    "status",
    "retry",
    "after",
    "timeout",
    "budget",
    "depth",
    "breadth",
    "first",
    "search",
    "visit",
    "admit",
    "reject",
    "spill",
    "checkpoint",
    "token",
    "bucket",
    "latency",
    "throughput",
    "deterministic",
    "random",
    "number",
    "generator",
    "words",
    "filler",
    "text",
    "lorem",
    "ipsum",
    "dolor",
    "sit",
];

/// The filler text: words and spaces, a newline every dozen words.
fn make_filler(seed: u64, len: usize) -> Vec<u8> {
    let mut out = Vec::with_capacity(len + 32);
    let mut state = mix(seed ^ 0x00F1_11E2);
    let mut n = 0u32;
    while out.len() < len {
        state = mix(state);
        out.extend_from_slice(WORDS[below(state, WORDS.len() as u64) as usize].as_bytes());
        n += 1;
        out.push(if n.is_multiple_of(12) { b'\n' } else { b' ' });
    }
    out
}

impl Site {
    /// Checks `config` and builds the site for hosts on `ports`.
    pub(crate) fn new(config: SiteConfig, ports: &[u16]) -> io::Result<Site> {
        let filler = make_filler(config.seed, config.page_bytes + 65_536);
        let mut hosts = Vec::with_capacity(config.hosts);
        let mut by_authority = HashMap::with_capacity(ports.len());
        for (h, &port) in ports.iter().enumerate() {
            let host_config = config.host_configs.get(h).cloned().unwrap_or_default();
            let (origin, alt) = if config.addresses == 0 {
                let alt = [
                    format!("HTTP://0X7F.0.0.1:{port}"),
                    format!("http://127.1:{port}"),
                    format!("//127.0.0.1:{port}"),
                    format!("http://127.0.0.1.:{port}"),
                ];
                (format!("http://127.0.0.1:{port}"), alt)
            } else {
                let domain = &host_domain(&config, h);
                let upper = domain.to_ascii_uppercase();
                let alt = [
                    format!("HTTP://H{h}.{upper}:{port}"),
                    format!("http://H{h}.{upper}:{port}"),
                    format!("//h{h}.{domain}:{port}"),
                    format!("http://h{h}.{domain}.:{port}"),
                ];
                (format!("http://h{h}.{domain}:{port}"), alt)
            };
            by_authority.insert(origin["http://".len()..].to_owned(), h);
            let mut specials = HashMap::new();
            for (i, special) in host_config.specials.iter().enumerate() {
                specials.insert(special.path.clone(), i);
            }
            let n = host_config.specials.len();
            let robots_txt = match &host_config.robots {
                Robots::Rules(rules) => Some(Bytes::from(robots_txt(rules, &origin))),
                _ => None,
            };
            hosts.push(HostSite {
                port,
                address: h % config.addresses.max(1),
                origin,
                alt,
                specials,
                hits: (0..n).map(|_| AtomicU32::new(0)).collect(),
                bombs: (0..n).map(|_| OnceLock::new()).collect(),
                robots_txt,
                stats: Arc::new(HostStats::default()),
                config: host_config,
            });
        }
        let log = config.log_requests.then(|| Mutex::new(Vec::new()));
        let fingerprint = {
            // Its description, as Debug writes it: every field a page's bytes follow from. A
            // host's latency is not one: the same site served slower has the same pages.
            let mut pages = SiteConfig {
                generation: 0,
                changed_fraction: 0.0,
                log_requests: true,
                port: 0,
                ..config.clone()
            };
            for host in &mut pages.host_configs {
                host.latency = Duration::ZERO;
            }
            let text = format!("{pages:?} {ports:?}");
            text.bytes().fold(0x7E57_7EB0, |h, b| mix(h ^ u64::from(b)))
        };
        let addresses = (0..config.addresses.max(1))
            .map(|a| (address(a), Arc::default()))
            .collect();
        Ok(Site {
            config,
            hosts,
            addresses,
            by_authority,
            filler,
            log,
            fingerprint,
        })
    }

    /// Checks a configuration before any port is bound.
    pub(crate) fn validate(config: &SiteConfig) -> io::Result<()> {
        if config.hosts == 0 {
            return Err(invalid("hosts must be at least 1".into()));
        }
        if config.names_by_address && config.addresses == 0 {
            return Err(invalid(
                "names_by_address needs hosts served by name (addresses)".into(),
            ));
        }
        if config.pages_per_host == 0 {
            return Err(invalid("pages_per_host must be at least 1".into()));
        }
        if !(0.0..=1.0).contains(&config.changed_fraction) {
            return Err(invalid(
                "changed_fraction must be within 0.0 ..= 1.0".into(),
            ));
        }
        if !(0.0..=1.0).contains(&config.inter_host_fraction) {
            return Err(invalid(
                "inter_host_fraction must be within 0.0 ..= 1.0".into(),
            ));
        }
        let label = |l: &str| {
            !l.is_empty()
                && l.len() <= 63
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        };
        if !config.domain.split('.').all(label) {
            return Err(invalid(format!(
                "domain {:?}: lowercase letters, digits and hyphens in dot-separated labels",
                config.domain
            )));
        }
        if config.host_configs.len() > config.hosts {
            return Err(invalid("more host_configs than hosts".into()));
        }
        if config.addresses > 254 {
            return Err(invalid("addresses must be at most 254".into()));
        }
        if config.addresses == 0
            && config.port != 0
            && usize::from(config.port) + config.hosts > 65_536
        {
            return Err(invalid("port + hosts exceeds 65535".into()));
        }
        for (h, host) in config.host_configs.iter().enumerate() {
            if let Robots::Rules(rules) = &host.robots {
                for rule in rules.disallow.iter().chain(&rules.allow) {
                    if !rule.starts_with('/') || rule.contains(['*', '$', '\n', '\r', '#']) {
                        return Err(invalid(format!(
                            "host {h}: robots rule {rule:?} must be a plain prefix starting with /"
                        )));
                    }
                }
            }
            let mut seen = HashSet::new();
            for special in &host.specials {
                let path = &special.path;
                if !valid_path(path)
                    || path == "/robots.txt"
                    || path.starts_with("/p/")
                    || path.starts_with("/t/")
                    || path == "/p"
                    || path == "/t"
                {
                    return Err(invalid(format!("host {h}: invalid special path {path:?}")));
                }
                if !seen.insert(path.as_str()) {
                    return Err(invalid(format!("host {h}: special path {path:?} twice")));
                }
                if let SpecialKind::Redirect { status, host, to } = &special.kind {
                    if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                        return Err(invalid(format!(
                            "host {h}: {path}: redirect status {status}"
                        )));
                    }
                    if host.is_some_and(|target| target >= config.hosts) {
                        return Err(invalid(format!("host {h}: {path}: no such target host")));
                    }
                    if !(to == "/" || valid_path(to)) {
                        return Err(invalid(format!("host {h}: {path}: invalid target {to:?}")));
                    }
                }
                if let SpecialKind::Status { status, .. } | SpecialKind::Flaky { status, .. } =
                    special.kind
                    && !(100..=999).contains(&status)
                {
                    return Err(invalid(format!(
                        "host {h}: {path}: invalid status {status}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// Where `path` (escapes of unreserved characters already decoded, no query) leads.
    pub(crate) fn route(&self, host: usize, path: &str) -> Route {
        if path == "/" {
            Route::Page(0)
        } else if let Some(n) = path.strip_prefix("/p/") {
            match self.page_number(n) {
                Some(n) => Route::Page(n),
                None => Route::NotFound,
            }
        } else if path == "/robots.txt" {
            Route::Robots
        } else if path.starts_with("/t/") {
            Route::Leaf
        } else if let Some(&i) = self.hosts[host].specials.get(path) {
            Route::Special(i)
        } else {
            Route::NotFound
        }
    }

    /// Parses a page number in canonical form (no sign, no leading zero), if it names a page.
    fn page_number(&self, digits: &str) -> Option<u64> {
        if digits.is_empty()
            || digits.starts_with('0')
            || !digits.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        digits
            .parse()
            .ok()
            .filter(|&n| n < self.config.pages_per_host)
    }

    /// The ground-truth node for a canonical path.
    fn node(&self, host: usize, path: &str) -> Node {
        match self.route(host, path) {
            Route::Page(n) => Node::Page(host, n),
            _ => Node::Path(host, path.to_owned()),
        }
    }

    /// Whether robots.txt of `host` allows `path_and_query` (for a robots-obeying crawl).
    pub(crate) fn allowed(&self, host: usize, path_and_query: &str) -> bool {
        if path_and_query == "/robots.txt" {
            return true;
        }
        match &self.hosts[host].config.robots {
            Robots::Missing => true,
            Robots::Status(status) => !(500..=599).contains(status),
            Robots::Rules(rules) => {
                let longest = |list: &[String]| {
                    list.iter()
                        .filter(|rule| path_and_query.starts_with(rule.as_str()))
                        .map(String::len)
                        .max()
                };
                match (longest(&rules.allow), longest(&rules.disallow)) {
                    (_, None) => true,
                    (None, Some(_)) => false,
                    (Some(allow), Some(disallow)) => allow >= disallow,
                }
            }
        }
    }

    /// How many times regular page `page` of `host` has changed by the site's generation:
    /// in each generation from 1 on, with probability `changed_fraction`. 0 in generation 0.
    pub(crate) fn revision(&self, host: usize, page: u64) -> u64 {
        let config = &self.config;
        if config.changed_fraction <= 0.0 {
            return 0;
        }
        let base = mix(mix(config.seed ^ 0x0C4A_4E6E) ^ mix(host as u64) ^ page);
        (1..=config.generation)
            .filter(|&g| {
                let r = mix(base ^ g.rotate_left(40));
                ((r >> 11) as f64) / ((1u64 << 53) as f64) < config.changed_fraction
            })
            .count() as u64
    }

    /// The validators of regular page `page` of `host`: a strong ETag and the time of its
    /// last change (a day per revision after 2026-01-01). The ETag is a hash of what the
    /// page's bytes follow from (the site's fingerprint, the page, its revision), so that it
    /// changes whenever they may, and a 304 costs no rendering.
    pub(crate) fn validators(&self, host: usize, page: u64) -> (String, SystemTime) {
        let days = self.revision(host, page);
        let h = mix(self.fingerprint ^ mix(mix(host as u64) ^ page) ^ mix(days ^ 0xE7A6));
        let modified = SystemTime::UNIX_EPOCH + Duration::from_secs(FIRST_MODIFIED + 86_400 * days);
        (format!("\"{h:016x}\""), modified)
    }

    /// The links of regular page `page` of `host`, in document order.
    fn page_links(&self, host: usize, page: u64, mut f: impl FnMut(PageLink)) {
        let config = &self.config;
        let pages = config.pages_per_host;
        let base = mix(mix(config.seed ^ mix(host as u64)) ^ page);
        let slot = |k: u64| mix(base ^ k);
        // A page that changed links elsewhere; one that never did as in generation 0.
        let revision = match self.revision(host, page) {
            0 => 0,
            n => mix(n ^ 0x5EED),
        };
        f(PageLink {
            role: Role::Home,
            host,
            page: 0,
            spelling: slot(0),
        });
        let first = page
            .saturating_mul(config.children_per_page)
            .saturating_add(1);
        for j in 0..config.children_per_page {
            let child = first.saturating_add(j);
            if child >= pages {
                break;
            }
            f(PageLink {
                role: Role::Child,
                host,
                page: child,
                spelling: slot(1 + j),
            });
        }
        if first < pages {
            // The first child again: one page, two spellings (`SAME_HOST[i]` and
            // `SAME_HOST[(i + 8) % 16]` always differ).
            let spelling = slot(1).wrapping_add(8);
            f(PageLink {
                role: Role::Again,
                host,
                page: first,
                spelling,
            });
        }
        let hosts = config.hosts as u64;
        for j in 0..config.random_links_per_page {
            let r = slot((2 << 32) + j) ^ revision;
            let mut target_host = host;
            if hosts > 1 {
                let pick = mix(r ^ 1);
                if ((pick >> 11) as f64) / ((1u64 << 53) as f64) < config.inter_host_fraction {
                    target_host =
                        ((host as u64 + 1 + below(mix(r ^ 2), hosts - 1)) % hosts) as usize;
                }
            }
            let target = below(mix(r ^ 3), pages);
            f(PageLink {
                role: Role::Random,
                host: target_host,
                page: target,
                spelling: r,
            });
        }
        if page == 0 && host == 0 {
            for other in 1..config.hosts {
                f(PageLink {
                    role: Role::HostRoot,
                    host: other,
                    page: 0,
                    spelling: slot((3 << 32) + other as u64),
                });
            }
        }
    }

    /// Appends one spelling of the link from `(src_host, src_page)` to `link`.
    fn push_href(&self, buf: &mut Vec<u8>, src_host: usize, src_page: u64, link: &PageLink) {
        let same = link.host == src_host;
        let variant = if !self.config.varied_spellings {
            if same { 0 } else { 1 }
        } else if same {
            SAME_HOST[(link.spelling & 15) as usize]
        } else {
            OTHER_HOST[below(link.spelling, OTHER_HOST.len() as u64) as usize]
        };
        let target = &self.hosts[link.host];
        let root = link.page == 0;
        let path = |buf: &mut Vec<u8>| {
            if root {
                buf.push(b'/');
            } else {
                buf.extend_from_slice(b"/p/");
                push_u64(buf, link.page);
            }
        };
        let alt = |buf: &mut Vec<u8>, which: Alt| {
            buf.extend_from_slice(target.alt[which as usize].as_bytes())
        };
        match variant {
            0 => path(buf),
            1 => {
                buf.extend_from_slice(target.origin.as_bytes());
                path(buf);
            }
            2 => {
                path(buf);
                buf.extend_from_slice(b"#s");
                push_u64(buf, (link.spelling >> 8) % 100);
            }
            3 => {
                path(buf);
                buf.push(b'?');
            }
            4 => {
                buf.extend_from_slice(b"/.");
                path(buf);
            }
            5 | 6 => {
                let from_root = src_page == 0;
                let text: &[u8] = match (variant, from_root, root) {
                    (5, true, true) => b"./",
                    (5, true, false) => b"p/",
                    (5, false, true) => b"../",
                    (5, false, false) => b"",
                    (_, true, true) => b".",
                    (_, true, false) => b"./p/",
                    (_, false, true) => b"..",
                    (_, false, false) => b"../p/",
                };
                buf.extend_from_slice(text);
                if !root {
                    push_u64(buf, link.page);
                }
            }
            7 => {
                alt(buf, Alt::UpperHex);
                path(buf);
            }
            8 => {
                alt(buf, Alt::Short);
                path(buf);
            }
            9 => {
                alt(buf, Alt::SchemeRelative);
                path(buf);
            }
            10 => {
                if root {
                    buf.extend_from_slice(target.origin.as_bytes());
                } else {
                    // The first digit escaped: `/p/%312` for `/p/12`.
                    buf.extend_from_slice(b"/p/%3");
                    push_u64(buf, link.page);
                }
            }
            _ => {
                alt(buf, Alt::TrailingDot);
                path(buf);
                buf.extend_from_slice(b"#top");
            }
        }
    }

    /// The HTML of regular page `page` of `host`.
    pub(crate) fn render_page(&self, host: usize, page: u64) -> Vec<u8> {
        let config = &self.config;
        let links = 3 + config.children_per_page + config.random_links_per_page;
        let estimate = config.page_bytes + 512 + 96 * links.min(10_000) as usize;
        let mut buf = Vec::with_capacity(estimate);
        buf.extend_from_slice(
            b"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>Page ",
        );
        push_u64(&mut buf, page);
        buf.extend_from_slice(b" of host ");
        push_u64(&mut buf, host as u64);
        buf.extend_from_slice(b"</title></head>\n<body>\n");
        let mut open: Option<&'static [u8]> = None;
        self.page_links(host, page, |link| {
            let class: &'static [u8] = match link.role {
                Role::Home => {
                    buf.extend_from_slice(b"<nav><a href=\"");
                    self.push_href(&mut buf, host, page, &link);
                    buf.extend_from_slice(b"\">home</a></nav>\n<h1>Page ");
                    push_u64(&mut buf, page);
                    buf.extend_from_slice(b"</h1>\n");
                    return;
                }
                Role::Child | Role::Again => b"children",
                Role::Random => b"related",
                Role::HostRoot => b"hosts",
            };
            if open != Some(class) {
                if open.is_some() {
                    buf.extend_from_slice(b"</ul>\n");
                }
                buf.extend_from_slice(b"<ul class=\"");
                buf.extend_from_slice(class);
                buf.extend_from_slice(b"\">\n");
                open = Some(class);
            }
            buf.extend_from_slice(b"<li><a href=\"");
            self.push_href(&mut buf, host, page, &link);
            buf.extend_from_slice(match link.role {
                Role::Child => b"\">child ",
                Role::Again => b"\">again, child ",
                Role::HostRoot => b"\">host ",
                _ => b"\">page ",
            });
            let number = if link.role == Role::HostRoot {
                link.host as u64
            } else {
                link.page
            };
            push_u64(&mut buf, number);
            if link.role == Role::Random && link.host != host {
                buf.extend_from_slice(b" of host ");
                push_u64(&mut buf, link.host as u64);
            }
            buf.extend_from_slice(b"</a></li>\n");
        });
        if open.is_some() {
            buf.extend_from_slice(b"</ul>\n");
        }
        if page == 0 {
            let specials = &self.hosts[host].config.specials;
            if specials.iter().any(|s| s.linked) {
                buf.extend_from_slice(b"<ul class=\"specials\">\n");
                for special in specials.iter().filter(|s| s.linked) {
                    buf.extend_from_slice(b"<li><a href=\"");
                    buf.extend_from_slice(special.path.as_bytes());
                    buf.extend_from_slice(b"\">");
                    buf.extend_from_slice(special.path.as_bytes());
                    buf.extend_from_slice(b"</a></li>\n");
                }
                buf.extend_from_slice(b"</ul>\n");
            }
            if config.offsite_links {
                buf.extend_from_slice(
                    b"<p><a href=\"http://offsite.invalid/\">a site elsewhere</a></p>\n",
                );
            }
        }
        let revision = self.revision(host, page);
        if revision > 0 {
            buf.extend_from_slice(b"<p class=\"revision\">revision ");
            push_u64(&mut buf, revision);
            buf.extend_from_slice(b"</p>\n");
        }
        const TAIL: &[u8] = b"</p>\n</body></html>\n";
        buf.extend_from_slice(b"<p>");
        let room = config.page_bytes.saturating_sub(buf.len() + TAIL.len());
        if room > 0 {
            let start = below(
                mix(config.seed ^ mix(host as u64) ^ page.rotate_left(17) ^ revision),
                65_536,
            ) as usize;
            buf.extend_from_slice(&self.filler[start..start + room]);
        }
        buf.extend_from_slice(TAIL);
        buf
    }

    /// The canonical URL of a node.
    fn url_of(&self, node: &Node) -> String {
        match node {
            Node::Page(h, 0) => format!("{}/", self.hosts[*h].origin),
            Node::Page(h, n) => format!("{}/p/{n}", self.hosts[*h].origin),
            Node::Path(h, path) => format!("{}{path}", self.hosts[*h].origin),
        }
    }

    /// The ground truth: a breadth-first search from the root of host 0.
    pub(crate) fn expected(&self, options: ExpectOptions) -> BTreeSet<String> {
        let pages = self.config.pages_per_host as usize;
        let mut seen_pages: Vec<Vec<bool>> = vec![Vec::new(); self.hosts.len()];
        let mut seen_paths: HashSet<(usize, String)> = HashSet::new();
        let mut queue: VecDeque<Node> = VecDeque::new();
        let mut out = BTreeSet::new();
        let mut scratch = Vec::new();
        let mut visit = |node: Node, queue: &mut VecDeque<Node>, out: &mut BTreeSet<String>| {
            let fresh = match &node {
                Node::Page(h, n) => {
                    let seen = &mut seen_pages[*h];
                    if seen.is_empty() {
                        seen.resize(pages, false);
                    }
                    !std::mem::replace(&mut seen[*n as usize], true)
                }
                Node::Path(h, path) => seen_paths.insert((*h, path.clone())),
            };
            if !fresh {
                return;
            }
            let allowed = options.ignore_robots
                || match &node {
                    Node::Page(h, 0) => self.allowed(*h, "/"),
                    Node::Page(h, n) => {
                        scratch.clear();
                        scratch.extend_from_slice(b"/p/");
                        push_u64(&mut scratch, *n);
                        self.allowed(*h, std::str::from_utf8(&scratch).unwrap_or(""))
                    }
                    Node::Path(h, path) => self.allowed(*h, path),
                };
            if allowed {
                out.insert(self.url_of(&node));
                queue.push_back(node);
            }
        };
        visit(Node::Page(0, 0), &mut queue, &mut out);
        while let Some(node) = queue.pop_front() {
            match node {
                Node::Page(h, n) => {
                    let mut targets = Vec::new();
                    self.page_links(h, n, |link| targets.push(Node::Page(link.host, link.page)));
                    if n == 0 {
                        for special in self.hosts[h].config.specials.iter().filter(|s| s.linked) {
                            targets.push(Node::Path(h, special.path.clone()));
                        }
                        // robots.txt's sitemaps, as if the root linked to them: a crawl reads
                        // them once it has the host's robots.txt.
                        if let Robots::Rules(rules) = &self.hosts[h].config.robots
                            && !options.ignore_sitemaps
                            && !options.ignore_robots
                        {
                            for path in &rules.sitemaps {
                                targets.push(self.node(h, path));
                            }
                        }
                    }
                    for target in targets {
                        visit(target, &mut queue, &mut out);
                    }
                }
                Node::Path(h, path) => {
                    if let Route::Special(i) = self.route(h, &path) {
                        for link in special_links(self, h, i) {
                            let follow = match link.follow {
                                Follow::Yes => true,
                                Follow::Nofollow => options.follow_nofollow,
                                Follow::Never => false,
                                Follow::Sitemap => !options.ignore_sitemaps,
                                Follow::Requisite => options.page_requisites,
                            };
                            if follow {
                                let target = self.node(link.host, &link.path);
                                visit(target, &mut queue, &mut out);
                            }
                        }
                    }
                }
            }
        }
        out
    }

    /// The host and path-and-query of a URL of this site, if it is one (canonical form:
    /// `http://127.0.0.1:PORT/...` or `http://h{i}.test:PORT/...`).
    pub(crate) fn locate<'a>(&self, url: &'a str) -> Option<(usize, &'a str)> {
        let rest = url.strip_prefix("http://")?;
        let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let host = self.host_named(&rest[..end])?;
        let tail = &rest[end..];
        let tail = tail.split('#').next().unwrap_or("");
        Some((host, tail))
    }

    /// The host of an authority (`127.0.0.1:PORT`, `h{i}.test:PORT`), as a request's `Host`
    /// header or a canonical URL names it.
    pub(crate) fn host_named(&self, authority: &str) -> Option<usize> {
        self.by_authority.get(authority).copied()
    }

    /// `len` bytes of filler text, starting at a place picked by `r` (repeated as needed).
    pub(crate) fn filler(&self, r: u64, len: usize) -> Bytes {
        let mut out = Vec::with_capacity(len);
        let mut start = below(r, 65_536) as usize;
        while out.len() < len {
            let take = (len - out.len()).min(self.filler.len() - start);
            out.extend_from_slice(&self.filler[start..start + take]);
            start = 0;
        }
        Bytes::from(out)
    }
}

/// The domain host `h` of a site served by name is named under: the site's, or with
/// `names_by_address` its address's under it (`a3.test`).
pub(crate) fn host_domain(config: &SiteConfig, h: usize) -> String {
    match config.names_by_address {
        true => format!("a{}.{}", h % config.addresses.max(1), config.domain),
        false => config.domain.clone(),
    }
}

/// The text of a robots.txt that answers 200.
pub(crate) fn robots_txt(rules: &RobotsRules, origin: &str) -> String {
    let mut out = String::from(
        "# robots.txt of a testweb host\n\nUser-agent: testweb-other-bot\nDisallow: /\n\n\
         User-agent: *\n",
    );
    for allow in &rules.allow {
        out.push_str(&format!("Allow: {allow}\n"));
    }
    for disallow in &rules.disallow {
        out.push_str(&format!("Disallow: {disallow}\n"));
    }
    if rules.allow.is_empty() && rules.disallow.is_empty() {
        out.push_str("Disallow:\n");
    }
    if let Some(delay) = rules.crawl_delay {
        out.push_str(&format!("Crawl-delay: {}\n", delay.as_secs_f64()));
    }
    for path in &rules.sitemaps {
        // Outside any group, as RFC 9309 allows: sitemaps are for every crawler.
        out.push_str(&format!("\nSitemap: {origin}{path}\n"));
    }
    out
}

/// The links of special page `index` of `host`, for the ground truth.
pub(crate) fn special_links(site: &Site, host: usize, index: usize) -> Vec<SpecialLink> {
    let special = &site.hosts[host].config.specials[index];
    let t = format!("/t{}", special.path);
    let link = |suffix: &str, follow: Follow| SpecialLink {
        host,
        path: format!("{t}/{}", encode_non_ascii(suffix)),
        follow,
    };
    match &special.kind {
        SpecialKind::Redirect {
            host: target, to, ..
        } => vec![SpecialLink {
            host: target.unwrap_or(host),
            path: to.clone(),
            follow: Follow::Yes,
        }],
        SpecialKind::Gzip => vec![link("1", Follow::Yes), link("2", Follow::Yes)],
        SpecialKind::Chapter { next } => next
            .iter()
            .map(|path| SpecialLink {
                host,
                path: path.clone(),
                follow: Follow::Yes,
            })
            .collect(),
        SpecialKind::Sitemap { entries, .. } => entries
            .iter()
            .map(|path| SpecialLink {
                host,
                path: path.clone(),
                follow: Follow::Sitemap,
            })
            .collect(),
        SpecialKind::SitemapBomb { .. } => vec![
            link("1", Follow::Sitemap),
            link("2", Follow::Sitemap),
            link("3", Follow::Sitemap),
            link("after-cap", Follow::Never),
        ],
        SpecialKind::NonHtml(NonHtml::Png) => {
            vec![
                link("in-png", Follow::Never),
                link("in-png-absolute", Follow::Never),
            ]
        }
        SpecialKind::NonHtml(NonHtml::Pdf) => {
            vec![
                link("in-pdf", Follow::Never),
                link("in-pdf-uri", Follow::Never),
            ]
        }
        SpecialKind::Malformed => {
            let mut out: Vec<_> = (1..=11)
                .map(|i| link(&i.to_string(), Follow::Yes))
                .collect();
            for hidden in ["comment", "script", "textarea", "text", "data", "duplicate"] {
                out.push(link(&format!("hidden-{hidden}"), Follow::Never));
            }
            out
        }
        SpecialKind::Encoded { charset, .. } => encoded_targets(*charset)
            .iter()
            .map(|s| link(s, Follow::Yes))
            .collect(),
        SpecialKind::BaseHref => vec![
            link("base/a", Follow::Yes),
            link("base/sub/b", Follow::Yes),
            link("c", Follow::Yes),
            SpecialLink {
                host,
                path: "/".into(),
                follow: Follow::Yes,
            },
        ],
        SpecialKind::Nofollow => vec![
            link("followed", Follow::Yes),
            link("nofollow-1", Follow::Nofollow),
            link("nofollow-2", Follow::Nofollow),
            link("followed-2", Follow::Yes),
        ],
        SpecialKind::MetaNofollow => vec![link("1", Follow::Nofollow), link("2", Follow::Nofollow)],
        SpecialKind::Styled { cdn } => {
            let mut out: Vec<_> = STYLED_REQUISITES
                .iter()
                .map(|name| link(name, Follow::Requisite))
                .collect();
            out.extend(cdn.map(|cdn| SpecialLink {
                host: cdn,
                path: "/t/cdn/photo.png".into(),
                follow: Follow::Requisite,
            }));
            out
        }
        SpecialKind::Status { .. }
        | SpecialKind::Flaky { .. }
        | SpecialKind::Delay(_)
        | SpecialKind::Trickle { .. }
        | SpecialKind::Hang
        | SpecialKind::Huge { .. }
        | SpecialKind::GzipBomb { .. }
        | SpecialKind::Canonical { .. } => Vec::new(),
    }
}

/// What a [`SpecialKind::Styled`] page needs, under its `T/`: in the page, then loaded by its
/// style sheets.
pub(crate) const STYLED_REQUISITES: [&str; 11] = [
    "site.css",
    "favicon.png",
    "hero.png",
    "app.js",
    "logo.png",
    "logo-2x.png",
    "logo-3x.png",
    "div.png",
    "base.css",
    "bg.png",
    "base.png",
];

/// The non-ASCII link suffixes of an encoded page.
pub(crate) fn encoded_targets(charset: Charset) -> &'static [&'static str] {
    match charset {
        Charset::Windows1252 => &["café", "€", "naïve"],
        Charset::ShiftJis => &["日本語", "テスト"],
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::{HostConfig, RobotsRules};

    fn site(hosts: usize, varied: bool) -> Site {
        let config = SiteConfig {
            hosts,
            pages_per_host: 1_000,
            varied_spellings: varied,
            ..SiteConfig::default()
        };
        Site::new(
            config,
            &(0..hosts).map(|h| 40_000 + h as u16).collect::<Vec<_>>(),
        )
        .expect("site")
    }

    /// What a WHATWG parser plus the canonical rules make of `href` on `base`.
    fn resolve(base: &str, href: &str) -> String {
        let mut url = url::Url::parse(base).unwrap().join(href).unwrap();
        url.set_fragment(None);
        if url.query() == Some("") {
            url.set_query(None);
        }
        decode_unreserved(url.as_str()).into_owned()
    }

    #[test]
    fn every_spelling_resolves_to_its_target() {
        let site = site(2, true);
        for variant in 0..16u64 {
            for (src_host, src_page) in [(0, 0), (0, 5), (1, 0), (1, 321)] {
                for (host, page) in [(0, 0), (0, 12), (1, 0), (1, 999)] {
                    let link = PageLink {
                        role: Role::Random,
                        host,
                        page,
                        spelling: variant,
                    };
                    let mut href = Vec::new();
                    site.push_href(&mut href, src_host, src_page, &link);
                    let href = String::from_utf8(href).unwrap();
                    let base = site.url_of(&Node::Page(src_host, src_page));
                    let target = site.url_of(&Node::Page(host, page));
                    assert_eq!(resolve(&base, &href), target, "{href} on {base}");
                    if host != src_host {
                        assert!(href.contains(&site.hosts[host].port.to_string()), "{href}");
                    }
                }
            }
        }
        // Cross-host spellings, all of them.
        for spelling in 0..OTHER_HOST.len() as u64 {
            let spelling = spelling.wrapping_mul(u64::MAX / OTHER_HOST.len() as u64) + 1;
            let link = PageLink {
                role: Role::Random,
                host: 1,
                page: 7,
                spelling,
            };
            let mut href = Vec::new();
            site.push_href(&mut href, 0, 3, &link);
            let href = String::from_utf8(href).unwrap();
            assert_eq!(
                resolve("http://127.0.0.1:40000/p/3", &href),
                "http://127.0.0.1:40001/p/7"
            );
        }
    }

    #[test]
    fn plain_spellings() {
        let site = site(2, false);
        let mut hrefs = Vec::new();
        site.page_links(0, 0, |link| {
            let mut href = Vec::new();
            site.push_href(&mut href, 0, 0, &link);
            hrefs.push(String::from_utf8(href).unwrap());
        });
        assert_eq!(hrefs[..4], ["/", "/p/1", "/p/2", "/p/3"]);
        assert_eq!(
            hrefs.last().map(String::as_str),
            Some("http://127.0.0.1:40001/")
        );
    }

    #[test]
    fn the_first_child_twice_in_two_spellings() {
        let site = site(1, true);
        for page in 0..300 {
            let mut hrefs = Vec::new();
            site.page_links(0, page, |link| {
                if link.page == page * 4 + 1 && matches!(link.role, Role::Child | Role::Again) {
                    let mut href = Vec::new();
                    site.push_href(&mut href, 0, page, &link);
                    hrefs.push(href);
                }
            });
            if page < 250 {
                assert!(hrefs.len() == 2 && hrefs[0] != hrefs[1], "page {page}");
            }
        }
    }

    #[test]
    fn page_size_and_links() {
        let site = site(1, true);
        for page in [0, 1, 999] {
            let html = site.render_page(0, page);
            assert_eq!(html.len(), 2_048);
            assert!(std::str::from_utf8(&html).is_ok());
        }
        let mut links = Vec::new();
        site.page_links(0, 249, |link| links.push((link.role, link.page)));
        let children: Vec<_> = links
            .iter()
            .filter(|(role, _)| *role == Role::Child)
            .map(|(_, p)| *p)
            .collect();
        assert_eq!(children, [997, 998, 999]);
        assert_eq!(
            links
                .iter()
                .filter(|(role, _)| *role == Role::Random)
                .count(),
            4
        );
    }

    #[test]
    fn routes() {
        let site = site(1, true);
        assert_eq!(site.route(0, "/"), Route::Page(0));
        assert_eq!(site.route(0, "/p/999"), Route::Page(999));
        for missing in ["/p/1000", "/p/0", "/p/01", "/p/", "/p/1x", "/p/-1", "/x"] {
            assert_eq!(site.route(0, missing), Route::NotFound, "{missing}");
        }
        assert_eq!(site.route(0, "/robots.txt"), Route::Robots);
        assert_eq!(site.route(0, "/t/a/%C3%A9"), Route::Leaf);
    }

    #[test]
    fn unreserved_escapes() {
        assert_eq!(decode_unreserved("/p/%312"), "/p/12");
        assert_eq!(decode_unreserved("/%7euser/%41%2F%e9%"), "/~user/A%2F%e9%");
        assert!(matches!(
            decode_unreserved("/plain"),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(encode_non_ascii("/t/café"), "/t/caf%C3%A9");
    }

    #[test]
    fn robots_longest_match_wins() {
        let host_configs = vec![HostConfig {
            robots: Robots::Rules(RobotsRules {
                disallow: vec!["/p/1".into(), "/a".into()],
                allow: vec!["/p/12".into(), "/a".into()],
                crawl_delay: None,
                sitemaps: Vec::new(),
            }),
            ..HostConfig::default()
        }];
        let config = SiteConfig {
            host_configs,
            ..SiteConfig::default()
        };
        let site = Site::new(config, &[1]).expect("site");
        assert!(!site.allowed(0, "/p/1") && !site.allowed(0, "/p/100"));
        assert!(site.allowed(0, "/p/12") && site.allowed(0, "/p/123"));
        assert!(site.allowed(0, "/a/b"), "allow wins a tie");
        assert!(site.allowed(0, "/p/2") && site.allowed(0, "/robots.txt"));
    }

    /// A slower server serves the same pages: a host's latency changes no validator (a
    /// recrawl test serves its second generation slowly and still gets 304s).
    #[test]
    fn a_hosts_latency_changes_no_validator() {
        let with = |latency| SiteConfig {
            host_configs: vec![HostConfig {
                latency,
                ..HostConfig::default()
            }],
            ..SiteConfig::default()
        };
        let fast = Site::new(with(Duration::ZERO), &[1]).expect("site");
        let slow = Site::new(with(Duration::from_millis(300)), &[1]).expect("site");
        assert_eq!(fast.validators(0, 7), slow.validators(0, 7));
        let other = Site::new(
            SiteConfig {
                seed: 9,
                ..with(Duration::ZERO)
            },
            &[1],
        )
        .expect("site");
        assert_ne!(fast.validators(0, 7), other.validators(0, 7));
    }

    #[test]
    fn gzip_bomb_decodes_to_spaces() {
        use std::io::Read;
        for total in [0u64, 10, (1 << 20) + 5, 3 << 20] {
            let bomb = crate::special::gzip_spaces(total);
            let mut out = Vec::new();
            flate2::read::GzDecoder::new(&bomb[..])
                .read_to_end(&mut out)
                .expect("valid gzip");
            assert_eq!(out.len() as u64, total);
            assert!(out.iter().all(|&b| b == b' '));
        }
        assert!(crate::special::gzip_spaces(64 << 20).len() < 100_000);
    }
}
