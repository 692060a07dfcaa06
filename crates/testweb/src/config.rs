//! What a site looks like: the whole-site knobs, the per-host features and the special pages.

use std::time::Duration;

/// The shape of a synthetic site: how many hosts, how many pages each, how they link.
///
/// A plain struct with public fields; start from [`Default`] and override what matters.
///
/// # The link graph
///
/// Host `h` serves pages `0 .. pages_per_host`. Page 0 is the root `/`; page `i > 0` is
/// `/p/{i}`. The links of page `i`, in document order:
///
/// * a "home" link to the root of its own host;
/// * its tree children `i * children_per_page + 1 ..= i * children_per_page + children_per_page`
///   (those below `pages_per_host`), then the first child a second time (with
///   `varied_spellings`, spelled another way);
/// * `random_links_per_page` links to pseudo-random pages, a fraction `inter_host_fraction` of
///   them (when there is more than one host) to pages of other hosts;
/// * on a root page only: on host 0, a link to the root of every other host; on every host,
///   a link to each of its [`Special`] pages whose `linked` is true; and, if
///   `offsite_links`, one link to a host outside the site.
///
/// So every page of every host is reachable from the root of host 0 (unless robots.txt says
/// otherwise), and the root of host 0 is the only seed a crawl needs.
///
/// Everything is a pure function of the configuration and `seed`, except the port numbers
/// that absolute links spell.
///
/// # Example
///
/// ```
/// use testweb::SiteConfig;
///
/// let config = SiteConfig {
///     pages_per_host: 1_000,
///     children_per_page: 10,
///     random_links_per_page: 20,
///     page_bytes: 8_500,
///     ..SiteConfig::default()
/// };
/// assert_eq!(config.hosts, 1);
/// ```
#[derive(Clone, Debug)]
pub struct SiteConfig {
    /// How many hosts, each on its own port of 127.0.0.1 (or by name: see
    /// [`addresses`](Self::addresses)). Default: 1.
    pub hosts: usize,
    /// Pages per host, the root included. Default: 100.
    pub pages_per_host: u64,
    /// Tree fan-out: the number of child pages each page links to. Default: 4.
    pub children_per_page: u64,
    /// Links from each page to pseudo-random pages. Default: 4.
    pub random_links_per_page: u64,
    /// The fraction, in `0.0 ..= 1.0`, of random links that point to another host (ignored
    /// with a single host). Default: 0.2.
    pub inter_host_fraction: f64,
    /// Pad each regular page with filler text to about this many bytes (pages whose markup is
    /// already longer are not cut). Default: 2,048.
    pub page_bytes: usize,
    /// The seed of every pseudo-random choice: link targets, spellings, filler text.
    /// Default: 0.
    pub seed: u64,
    /// Spell links in many equivalent ways (relative, absolute, with a fragment, an empty
    /// query, dot segments, escaped digits, other spellings of 127.0.0.1). When false, every
    /// link to the same host is an absolute path (`/p/12`) and every link to another host is
    /// `http://127.0.0.1:PORT/p/12`. Default: true.
    pub varied_spellings: bool,
    /// Put a link to `http://offsite.invalid/` on every root page. No crawl can fetch it (the
    /// `.invalid` top-level domain never resolves); it tests that the crawl stays in scope.
    /// Default: false.
    pub offsite_links: bool,
    /// Keep a log of every request (see [`Testweb::requests`](crate::Testweb::requests)).
    /// The per-host counters (requests served, requests in flight) are kept either way.
    /// Default: true.
    pub log_requests: bool,
    /// The port of host 0; host `i` listens on `port + i`. 0, the default, lets the system
    /// choose a free port for every host. With [`addresses`](Self::addresses), the one port
    /// every address listens on (0: one the system chooses).
    pub port: u16,
    /// Serve the hosts by name, as shared hosting does (name-based virtual hosts): host `i`
    /// is `h{i}.test`, at 127.0.0.`1 + i % addresses`, every address listening on one port
    /// and answering each request for the host its `Host` header names (421 for a name it
    /// does not serve). No resolver knows these names: a client is told where they live
    /// ([`Testweb::resolve_entries`](crate::Testweb::resolve_entries)). 0, the default: each
    /// host on its own port of 127.0.0.1, named by that address. At most 254.
    pub addresses: usize,
    /// The domain the hosts are named under when served by name: host `i` is
    /// `h{i}.{domain}`. Default `test`: each host is a registrable domain of its own
    /// (`h3.test`). A domain under a suffix (`farm.test`) makes every host a subdomain of
    /// that one registrable domain, linking to its siblings: a spam farm's shape, which a
    /// budget of hosts per domain stops.
    pub domain: String,
    /// Served by name, name each host after its address too: host `i` is
    /// `h{i}.a{i % addresses}.{domain}`, so that the names a server answers for share a
    /// registrable domain (`a3.test`), as a site's subdomains often share its servers (under
    /// a domain that is a public suffix itself, as `test` is: under `farm.test` every name is
    /// in that one domain). Default: false.
    pub names_by_address: bool,
    /// Per-host features: host `i` uses `host_configs[i]`, or [`HostConfig::default`] (no
    /// robots.txt, no latency, no special pages) when the list is shorter. Default: empty.
    pub host_configs: Vec<HostConfig>,
    /// The site's generation: in each generation from 1 to this one, each regular page
    /// changes with probability [`changed_fraction`](Self::changed_fraction) (its text, and
    /// where its links to pseudo-random pages lead). Generation 0 is the site as first
    /// served. The same seed, ports and generation serve the same bytes; see
    /// [`Testweb::changes_since`](crate::Testweb::changes_since) for what changed between
    /// two. Default: 0.
    pub generation: u64,
    /// The chance, in `0.0 ..= 1.0`, that a regular page changes in each generation.
    /// Default: 0.
    pub changed_fraction: f64,
}

impl Default for SiteConfig {
    fn default() -> Self {
        SiteConfig {
            hosts: 1,
            pages_per_host: 100,
            children_per_page: 4,
            random_links_per_page: 4,
            inter_host_fraction: 0.2,
            page_bytes: 2_048,
            seed: 0,
            varied_spellings: true,
            offsite_links: false,
            log_requests: true,
            port: 0,
            addresses: 0,
            domain: "test".to_owned(),
            names_by_address: false,
            host_configs: Vec::new(),
            generation: 0,
            changed_fraction: 0.0,
        }
    }
}

/// The features of one host: its robots.txt, its latency, its special pages.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use testweb::{HostConfig, Robots, Special, SpecialKind};
///
/// let host = HostConfig {
///     robots: Robots::disallow(["/p/1"]),
///     latency: Duration::from_millis(5),
///     specials: vec![Special::new("/gone", SpecialKind::status(404))],
/// };
/// assert_eq!(host.specials.len(), 1);
/// ```
#[derive(Clone, Debug, Default)]
pub struct HostConfig {
    /// What `/robots.txt` answers. Default: [`Robots::Missing`] (404, everything allowed).
    pub robots: Robots,
    /// A delay before every response of this host, robots.txt included. Default: none.
    pub latency: Duration,
    /// Special pages, each linked from this host's root unless its `linked` is false.
    pub specials: Vec<Special>,
}

impl HostConfig {
    /// A host with one special page of every kind, at fixed paths, for end-to-end tests.
    ///
    /// | path | kind |
    /// |---|---|
    /// | `/status/404`, `/status/410`, `/status/500` | [`SpecialKind::Status`] without `Retry-After` |
    /// | `/status/503`, `/status/429` | [`SpecialKind::Status`] with `Retry-After: 1` |
    /// | `/flaky/503` | [`SpecialKind::Flaky`]: two 503s with `Retry-After: 1`, then 200 |
    /// | `/flaky/500` | [`SpecialKind::Flaky`]: one 500, then 200 |
    /// | `/redirect/301`, `/redirect/302` | [`SpecialKind::Redirect`] to `/t/redirect/301-target`, `/t/redirect/302-target` |
    /// | `/redirect/loop-a` | [`SpecialKind::Redirect`] (302) to `/redirect/loop-b`, not linked, which redirects back |
    /// | `/slow/delay` | [`SpecialKind::Delay`] of 200 ms |
    /// | `/slow/trickle` | [`SpecialKind::Trickle`]: 20 chunks of 100 bytes, 50 ms apart |
    /// | `/slow/hang` | [`SpecialKind::Hang`] |
    /// | `/huge` | [`SpecialKind::Huge`], 50,000,000 bytes |
    /// | `/gzip` | [`SpecialKind::Gzip`] |
    /// | `/gzip-bomb` | [`SpecialKind::GzipBomb`], 1 GiB decompressed |
    /// | `/binary/png`, `/binary/pdf` | [`SpecialKind::NonHtml`] |
    /// | `/malformed` | [`SpecialKind::Malformed`] |
    /// | `/charset/windows-1252-header`, `/charset/windows-1252-meta` | [`SpecialKind::Encoded`] |
    /// | `/charset/shift-jis-header`, `/charset/shift-jis-meta` | [`SpecialKind::Encoded`] (the latter by `http-equiv`) |
    /// | `/base-href` | [`SpecialKind::BaseHref`] |
    /// | `/nofollow` | [`SpecialKind::Nofollow`] |
    /// | `/meta-nofollow` | [`SpecialKind::MetaNofollow`] |
    /// | `/canonical` | [`SpecialKind::Canonical`] pointing at `/` |
    ///
    /// robots.txt is [`Robots::Missing`] and there is no latency.
    ///
    /// # Example
    ///
    /// ```
    /// use testweb::{HostConfig, SiteConfig};
    ///
    /// let config = SiteConfig {
    ///     host_configs: vec![HostConfig::every_special()],
    ///     ..SiteConfig::default()
    /// };
    /// assert!(config.host_configs[0].specials.iter().any(|s| s.path == "/gzip-bomb"));
    /// ```
    pub fn every_special() -> HostConfig {
        use SpecialKind as K;
        let ms = Duration::from_millis;
        let specials = vec![
            Special::new("/status/404", K::status(404)),
            Special::new("/status/410", K::status(410)),
            Special::new("/status/500", K::status(500)),
            Special::new(
                "/status/503",
                K::Status {
                    status: 503,
                    retry_after: Some(1),
                },
            ),
            Special::new(
                "/status/429",
                K::Status {
                    status: 429,
                    retry_after: Some(1),
                },
            ),
            Special::new(
                "/flaky/503",
                K::Flaky {
                    status: 503,
                    failures: 2,
                    retry_after: Some(1),
                },
            ),
            Special::new(
                "/flaky/500",
                K::Flaky {
                    status: 500,
                    failures: 1,
                    retry_after: None,
                },
            ),
            Special::new("/redirect/301", K::redirect(301, "/t/redirect/301-target")),
            Special::new("/redirect/302", K::redirect(302, "/t/redirect/302-target")),
            Special::new("/redirect/loop-a", K::redirect(302, "/redirect/loop-b")),
            Special::new("/redirect/loop-b", K::redirect(302, "/redirect/loop-a")).unlinked(),
            Special::new("/slow/delay", K::Delay(ms(200))),
            Special::new(
                "/slow/trickle",
                K::Trickle {
                    chunk_bytes: 100,
                    chunks: 20,
                    interval: ms(50),
                },
            ),
            Special::new("/slow/hang", K::Hang),
            Special::new("/huge", K::Huge { bytes: 50_000_000 }),
            Special::new("/gzip", K::Gzip),
            Special::new(
                "/gzip-bomb",
                K::GzipBomb {
                    decompressed_bytes: 1 << 30,
                },
            ),
            Special::new("/binary/png", K::NonHtml(NonHtml::Png)),
            Special::new("/binary/pdf", K::NonHtml(NonHtml::Pdf)),
            Special::new("/malformed", K::Malformed),
            Special::new(
                "/charset/windows-1252-header",
                K::Encoded {
                    charset: Charset::Windows1252,
                    declared: Declared::Header,
                },
            ),
            Special::new(
                "/charset/windows-1252-meta",
                K::Encoded {
                    charset: Charset::Windows1252,
                    declared: Declared::MetaCharset,
                },
            ),
            Special::new(
                "/charset/shift-jis-header",
                K::Encoded {
                    charset: Charset::ShiftJis,
                    declared: Declared::Header,
                },
            ),
            Special::new(
                "/charset/shift-jis-meta",
                K::Encoded {
                    charset: Charset::ShiftJis,
                    declared: Declared::MetaHttpEquiv,
                },
            ),
            Special::new("/base-href", K::BaseHref),
            Special::new("/nofollow", K::Nofollow),
            Special::new("/meta-nofollow", K::MetaNofollow),
            Special::new(
                "/canonical",
                K::Canonical {
                    href: "/".to_owned(),
                },
            ),
        ];
        HostConfig {
            specials,
            ..HostConfig::default()
        }
    }
}

/// What a host's `/robots.txt` answers.
///
/// How a robots-obeying crawl reads each answer follows RFC 9309: a 4xx status means
/// everything is allowed, a 5xx status means nothing is (§2.3.1.3 and §2.3.1.4).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use testweb::{Robots, RobotsRules};
///
/// let robots = Robots::Rules(RobotsRules {
///     disallow: vec!["/p/1".into()],
///     allow: vec!["/p/1/".into()],
///     crawl_delay: Some(Duration::from_millis(500)),
///     sitemaps: vec!["/sitemap.xml".into()],
/// });
/// assert!(matches!(robots, Robots::Rules(_)));
/// assert!(matches!(Robots::default(), Robots::Missing));
/// ```
#[derive(Clone, Debug, Default)]
pub enum Robots {
    /// 404 Not Found: everything is allowed.
    #[default]
    Missing,
    /// This status, with a short text body. 500–599 disallow the whole host (only
    /// `/robots.txt` itself is fetched); any other status allows everything.
    Status(u16),
    /// 200 with these rules for `User-agent: *`.
    Rules(RobotsRules),
}

impl Robots {
    /// 200 with a `Disallow:` line for each prefix, and nothing else.
    ///
    /// # Example
    ///
    /// ```
    /// let robots = testweb::Robots::disallow(["/private/", "/p/2"]);
    /// let testweb::Robots::Rules(rules) = robots else { unreachable!() };
    /// assert_eq!(rules.disallow, ["/private/", "/p/2"]);
    /// ```
    pub fn disallow<I, S>(prefixes: I) -> Robots
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        Robots::Rules(RobotsRules {
            disallow: prefixes.into_iter().map(Into::into).collect(),
            ..RobotsRules::default()
        })
    }
}

/// The rules of a robots.txt that answers 200.
///
/// The file holds two groups. The first, `User-agent: testweb-other-bot` with `Disallow: /`,
/// applies to no real crawler: a crawler that merges groups, or ignores the user agent, blocks
/// itself. The second, `User-agent: *`, lists `allow`, then `disallow`, then `Crawl-delay`.
///
/// Rules are plain path prefixes (matched against the path and query, as RFC 9309 says); `*`
/// and `$` are refused by [`Testweb::start`](crate::Testweb::start) because the ground truth
/// does not implement them. Of the rules that match a URL the longest wins, and `allow` wins a
/// tie; a URL no rule matches is allowed.
///
/// # Example
///
/// ```
/// use testweb::RobotsRules;
///
/// let rules = RobotsRules { disallow: vec!["/p/".into()], ..RobotsRules::default() };
/// assert!(rules.allow.is_empty() && rules.crawl_delay.is_none());
/// ```
#[derive(Clone, Debug, Default)]
pub struct RobotsRules {
    /// `Disallow:` prefixes, each starting with `/`.
    pub disallow: Vec<String>,
    /// `Allow:` prefixes, each starting with `/`.
    pub allow: Vec<String>,
    /// A `Crawl-delay:` line, in seconds with decimals (`0.5`), when set.
    pub crawl_delay: Option<Duration>,
    /// Paths of this host listed as `Sitemap:` lines (written as absolute URLs). A crawl that
    /// reads sitemaps fetches them, as if the host's root linked to them (unless
    /// [`ExpectOptions::ignore_sitemaps`](crate::ExpectOptions::ignore_sitemaps)). Default:
    /// none.
    pub sitemaps: Vec<String>,
}

/// A special page: a path of one host that behaves in a particular way.
///
/// Special pages are linked from their host's root page (unless `linked` is false), so a
/// crawl finds them. Several of them link to helper pages under `/t{path}/...` (for a special
/// page at `/gzip`, `/t/gzip/1`): every path under `/t/` answers 200 with a small HTML page
/// without links, so a crawler that follows a link it should not is caught by the request log
/// and not by a 404.
///
/// # Example
///
/// ```
/// use testweb::{Special, SpecialKind};
///
/// let gone = Special::new("/old", SpecialKind::redirect(301, "/"));
/// assert!(gone.linked);
/// let hidden = Special::new("/hidden", SpecialKind::status(500)).unlinked();
/// assert!(!hidden.linked);
/// ```
#[derive(Clone, Debug)]
pub struct Special {
    /// The path, starting with `/`, made of ASCII letters, digits and `-_.~/` (no query, no
    /// empty or dot segments). It may not be `/`, `/robots.txt`, or start with `/p/` or `/t/`.
    pub path: String,
    /// What the page does.
    pub kind: SpecialKind,
    /// Whether the host's root page links to it. Default: true.
    pub linked: bool,
}

impl Special {
    /// A special page at `path`, linked from its host's root.
    ///
    /// # Example
    ///
    /// ```
    /// let page = testweb::Special::new("/gzip", testweb::SpecialKind::Gzip);
    /// assert_eq!(page.path, "/gzip");
    /// ```
    pub fn new(path: impl Into<String>, kind: SpecialKind) -> Special {
        Special {
            path: path.into(),
            kind,
            linked: true,
        }
    }

    /// A book of `chapters` chapters under `prefix` (`/book`), with names of their own, as
    /// mdBook names them (`/book/ch03-02-variables.html`): the first linked from the host's
    /// root, each other one only from the chapter before it.
    ///
    /// # Example
    ///
    /// ```
    /// let book = testweb::Special::book("/book", 600);
    /// assert_eq!(book.len(), 600);
    /// assert!(book[0].linked && !book[1].linked);
    /// ```
    pub fn book(prefix: &str, chapters: usize) -> Vec<Special> {
        const WORDS: [&str; 7] = [
            "intro",
            "install",
            "hello",
            "guessing",
            "concepts",
            "variables",
            "types",
        ];
        let path = |i: usize| {
            let word = WORDS[i % WORDS.len()];
            format!("{prefix}/ch{:02}-{:02}-{word}.html", i / 10, i % 10)
        };
        (0..chapters)
            .map(|i| {
                let next = (i + 1 < chapters).then(|| path(i + 1));
                let chapter = Special::new(path(i), SpecialKind::Chapter { next });
                if i == 0 { chapter } else { chapter.unlinked() }
            })
            .collect()
    }

    /// The same page, not linked from its host's root: reachable only by a redirect or from
    /// another special page.
    ///
    /// # Example
    ///
    /// ```
    /// let page = testweb::Special::new("/x", testweb::SpecialKind::Hang).unlinked();
    /// assert!(!page.linked);
    /// ```
    pub fn unlinked(self) -> Special {
        Special {
            linked: false,
            ..self
        }
    }
}

/// How a special page behaves. `T` below stands for `/t` followed by the page's path.
///
/// Links marked "followed" are in [`Testweb::expected_pages`](crate::Testweb::expected_pages);
/// links marked "nofollow" are in it only with
/// [`ExpectOptions::follow_nofollow`](crate::ExpectOptions::follow_nofollow); "never" marks
/// text a correct crawler does not read as a link at all.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use testweb::SpecialKind;
///
/// let kinds = [
///     SpecialKind::status(404),
///     SpecialKind::Flaky { status: 503, failures: 2, retry_after: Some(1) },
///     SpecialKind::redirect(302, "/p/3"),
///     SpecialKind::Delay(Duration::from_millis(50)),
/// ];
/// assert_eq!(kinds.len(), 4);
/// ```
#[derive(Clone, Debug)]
pub enum SpecialKind {
    /// Answers `status` with a short `text/plain` body, and a `Retry-After: {seconds}` header
    /// when set. Use [`SpecialKind::Redirect`] for 3xx.
    Status {
        /// The status code.
        status: u16,
        /// Seconds for the `Retry-After` header.
        retry_after: Option<u32>,
    },
    /// The first `failures` requests answer like [`SpecialKind::Status`], every later one 200
    /// with a small HTML page without links. The count is shared by all clients.
    Flaky {
        /// The status code of the failures.
        status: u16,
        /// How many requests fail before the first success.
        failures: u32,
        /// Seconds for the `Retry-After` header of the failures.
        retry_after: Option<u32>,
    },
    /// Answers `status` (301, 302, 303, 307 or 308) with `Location` set to `to`, an absolute
    /// path, as written when `host` is `None`, or as `http://127.0.0.1:PORT{to}` of `host`.
    /// The target is followed. Two redirects to each other make a loop.
    Redirect {
        /// The status code.
        status: u16,
        /// The host the target is on: `None` for this host, written as a relative reference.
        host: Option<usize>,
        /// The target's path, starting with `/`.
        to: String,
    },
    /// Waits this long (on top of the host's latency), then answers 200 with a small HTML
    /// page without links.
    Delay(Duration),
    /// Sends the headers (200, `text/html`, `Content-Length`) at once, then the body in
    /// `chunks` chunks of `chunk_bytes`, the first at once and each next after `interval`.
    /// No links.
    Trickle {
        /// Bytes per chunk.
        chunk_bytes: usize,
        /// Number of chunks.
        chunks: u32,
        /// Time between two chunks.
        interval: Duration,
    },
    /// Reads the request and never answers (until shutdown, or until the client closes the
    /// connection). A crawler must time out; the page is still in the expected set, since a
    /// correct crawl requests it.
    Hang,
    /// 200 `text/html` with a `Content-Length` of `bytes` and a body of filler text, streamed.
    /// No links.
    Huge {
        /// The size of the body.
        bytes: u64,
    },
    /// A chapter of a book: a small HTML page linking to the next chapter's path, if any.
    /// Chained (see [`Special::book`]), chapters are reachable only one after the other, as
    /// mdBook's "next" links make them: a chain as deep as the book is long.
    Chapter {
        /// The next chapter's path, `None` for the last.
        next: Option<String>,
    },
    /// 200 `text/html` with `Content-Encoding: gzip` (whatever the request's
    /// `Accept-Encoding`), decoding to a page that links (followed) to `T/1` and `T/2`.
    Gzip,
    /// 200 `text/html` with `Content-Encoding: gzip`, a body of about a thousandth of
    /// `decompressed_bytes` that decodes to `decompressed_bytes` spaces. No links.
    GzipBomb {
        /// The size of the decoded body.
        decompressed_bytes: u64,
    },
    /// A body that is not HTML, holding `<a href="T/in-...">` and an absolute URL to `T/...`
    /// as text: never links.
    NonHtml(NonHtml),
    /// HTML that breaks the rules in ways browsers forgive. Followed: `T/1` (unquoted
    /// attribute), `T/2` (upper-case tag and attribute, single quotes), `T/3` (spaces around
    /// `=`), `T/4` (an `<a>` never closed), `T/5`, `T/6` (an `<a>` inside a `<table>`, moved
    /// out by the parser), `T/7` (written with a character reference, `T/&#55;`), `T/8` (a
    /// newline inside the value), `T/9` (spaces around the value), `T/10` (the first of two
    /// `href` attributes), `T/11` (unclosed, at the end of a file without `</body>`). Never:
    /// `T/hidden-comment`, `T/hidden-script`, `T/hidden-textarea`, `T/hidden-text` (plain text
    /// `href="..."`), `T/hidden-data` (a `data-href`), `T/hidden-duplicate` (the second `href`).
    Malformed,
    /// A page in a legacy encoding, declared as `declared` says, linking (followed) to paths
    /// with non-ASCII characters. Since URL paths are always percent-encoded as UTF-8,
    /// whatever the document's encoding, the canonical targets are, for windows-1252,
    /// `T/caf%C3%A9`, `T/%E2%82%AC` (the euro sign, byte 0x80) and `T/na%C3%AFve`, and for
    /// Shift_JIS `T/%E6%97%A5%E6%9C%AC%E8%AA%9E` (日本語) and `T/%E3%83%86%E3%82%B9%E3%83%88`
    /// (テスト).
    Encoded {
        /// The encoding of the body.
        charset: Charset,
        /// Where the encoding is declared.
        declared: Declared,
    },
    /// A page whose `<head>` holds `<base href="T/base/">` and then a second, ignored,
    /// `<base href="T/wrong/">`. Its links `a`, `sub/b` and `../c` resolve (followed) to
    /// `T/base/a`, `T/base/sub/b` and `T/c`; `/` is its host root. Resolved against the page's
    /// own URL instead, they name paths that answer 404.
    BaseHref,
    /// Followed: `T/followed` and `T/followed-2` (`rel="nofollowers"`, not the `nofollow`
    /// token). Nofollow: `T/nofollow-1` (`rel="nofollow"`), `T/nofollow-2`
    /// (`rel="external NoFollow"`).
    Nofollow,
    /// A page with `<meta name="robots" content="noindex, NoFollow">`: its links, to `T/1`
    /// and `T/2`, are all nofollow.
    MetaNofollow,
    /// A sitemap listing `entries`, paths of this host (pages, `/t/...` helpers, or other
    /// sitemaps), written as absolute URLs; in a `urlset` each has
    /// `<lastmod>2024-05-01</lastmod>`. With `gzip`, the body is a gzip file served as
    /// `application/gzip` (not with `Content-Encoding`), as `.xml.gz` files are. Its entries
    /// are followed by a crawl that reads sitemaps (not with
    /// [`ExpectOptions::ignore_sitemaps`](crate::ExpectOptions::ignore_sitemaps)), and only
    /// if it knows the page as a sitemap (robots.txt, an index) or it is XML.
    Sitemap {
        /// How it is written.
        format: SitemapFormat,
        /// The paths it lists.
        entries: Vec<String>,
        /// Served as a gzip file.
        gzip: bool,
    },
    /// A gzip file (`application/gzip`) of about a thousandth of `decompressed_bytes`, which
    /// decompresses to that many bytes: a `urlset` listing `T/1`, `T/2` and `T/3` (followed,
    /// as a [`SpecialKind::Sitemap`]'s), then blanks, then `T/after-cap` (never: a reader that
    /// stops at the protocol's 50 MB, or at a text that long, never gets there).
    SitemapBomb {
        /// The size of the decompressed file.
        decompressed_bytes: u64,
    },
    /// A page that needs requisites to render, and has no link: a style sheet
    /// (`<link rel="stylesheet" href="T/site.css">`, which answers `text/css` with
    /// `@import "base.css"` and `url("bg.png")`; `T/base.css` with `url(base.png)`), an icon
    /// `T/favicon.png`, a `<style>` element's `url(T/hero.png)`, a script `T/app.js`, an image
    /// `T/logo.png` with `srcset` `T/logo-2x.png 2x, T/logo-3x.png 3x`, a `style` attribute's
    /// `url('T/div.png')`, and with `cdn` an image on that host, `/t/cdn/photo.png`. Under
    /// `/t/`, `.css`, `.png` and `.js` paths answer as those types (a `.png`'s bytes name its
    /// path). The requisites are in [`Testweb::expected_pages`](crate::Testweb::expected_pages)
    /// with [`ExpectOptions::page_requisites`](crate::ExpectOptions::page_requisites).
    Styled {
        /// The host of the page's one image on another host (a CDN), if any.
        cdn: Option<usize>,
    },
    /// A page with `<link rel="canonical" href="{href}">` and no other link. The canonical
    /// target is not counted as a link either way, so point it at a page the crawl reaches
    /// anyway (`/`, say).
    Canonical {
        /// The `href` of the canonical link, written as is.
        href: String,
    },
}

impl SpecialKind {
    /// [`SpecialKind::Status`] without `Retry-After`.
    ///
    /// # Example
    ///
    /// ```
    /// use testweb::SpecialKind;
    /// assert!(matches!(
    ///     SpecialKind::status(404),
    ///     SpecialKind::Status { status: 404, retry_after: None }
    /// ));
    /// ```
    pub fn status(status: u16) -> SpecialKind {
        SpecialKind::Status {
            status,
            retry_after: None,
        }
    }

    /// [`SpecialKind::Redirect`] to a path of the same host.
    ///
    /// # Example
    ///
    /// ```
    /// use testweb::SpecialKind;
    /// let SpecialKind::Redirect { status, host, to } = SpecialKind::redirect(301, "/p/1") else {
    ///     unreachable!()
    /// };
    /// assert_eq!((status, host, to.as_str()), (301, None, "/p/1"));
    /// ```
    pub fn redirect(status: u16, to: impl Into<String>) -> SpecialKind {
        SpecialKind::Redirect {
            status,
            host: None,
            to: to.into(),
        }
    }
}

/// How a [`SpecialKind::Sitemap`] is written (sitemaps.org protocol 0.9).
///
/// # Example
///
/// ```
/// assert_ne!(testweb::SitemapFormat::Urlset, testweb::SitemapFormat::Index);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SitemapFormat {
    /// `<urlset>` of pages, `application/xml`.
    Urlset,
    /// `<sitemapindex>` of other sitemaps, `application/xml`.
    Index,
    /// One URL per line, `text/plain`, with a comment line a reader must skip.
    Text,
}

/// A kind of non-HTML body, for [`SpecialKind::NonHtml`].
///
/// # Example
///
/// ```
/// assert_eq!(testweb::NonHtml::Png.content_type(), "image/png");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonHtml {
    /// A valid 1×1 PNG image whose `tEXt` chunk holds the link-like text.
    Png,
    /// A small PDF document whose content and `/URI` action hold the link-like text.
    Pdf,
}

impl NonHtml {
    /// The `Content-Type` it is served with.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(testweb::NonHtml::Pdf.content_type(), "application/pdf");
    /// ```
    pub fn content_type(self) -> &'static str {
        match self {
            NonHtml::Png => "image/png",
            NonHtml::Pdf => "application/pdf",
        }
    }
}

/// A legacy encoding, for [`SpecialKind::Encoded`].
///
/// # Example
///
/// ```
/// assert_eq!(testweb::Charset::ShiftJis.label(), "Shift_JIS");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Charset {
    /// windows-1252 (what browsers read for `iso-8859-1` too).
    Windows1252,
    /// Shift_JIS.
    ShiftJis,
}

impl Charset {
    /// The label the page declares.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(testweb::Charset::Windows1252.label(), "windows-1252");
    /// ```
    pub fn label(self) -> &'static str {
        match self {
            Charset::Windows1252 => "windows-1252",
            Charset::ShiftJis => "Shift_JIS",
        }
    }
}

/// Where a [`SpecialKind::Encoded`] page declares its encoding.
///
/// # Example
///
/// ```
/// let declared = testweb::Declared::MetaCharset;
/// assert_ne!(declared, testweb::Declared::Header);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Declared {
    /// In the `Content-Type` header (`text/html; charset=...`), and nowhere in the body.
    Header,
    /// In `<meta charset="...">`; the header says `text/html` without a charset.
    MetaCharset,
    /// In `<meta http-equiv="Content-Type" content="text/html; charset=...">`; the header
    /// says `text/html` without a charset.
    MetaHttpEquiv,
}
