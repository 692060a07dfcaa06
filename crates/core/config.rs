//! Settings: a TOML file (see `config/default.toml`, which documents every key), overridden
//! by command-line flags, validated once into [`Config`].

use std::collections::BTreeMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// Every setting of a crawl. Field names are the TOML keys, section by section.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Config {
    pub(crate) crawl: Crawl,
    pub(crate) politeness: Politeness,
    pub(crate) fetch: Fetch,
    pub(crate) extract: Extract,
    pub(crate) frontier: Frontier,
    pub(crate) output: Output,
    pub(crate) state: State,
    pub(crate) redis: Redis,
    /// `[[hosts]]`: settings of a host's (or a domain's) own, over the ones above; see
    /// `hosts.rs` for how they match and combine.
    pub(crate) hosts: Vec<HostEntry>,
}

/// One `[[hosts]]` entry: a host or a domain, and what it changes for them. Unset fields
/// leave the crawl's setting (or a less specific entry's) as it is. Secrets are never
/// written here: only where to read them (an environment variable or a file), at start.
#[derive(Clone, Debug, Default, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct HostEntry {
    /// `docs.example.com`, `docs.example.com:8080`, or `*.example.com` (the domain and its
    /// subdomains).
    #[serde(rename = "match")]
    pub(crate) pattern: String,
    /// Replaces `politeness.delay`.
    #[serde(
        default,
        with = "opt_duration",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) delay: Option<Duration>,
    /// Replaces `politeness.connections_per_host`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) connections: Option<u32>,
    /// Replaces `politeness.robots`: off only for sites you run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) obey_robots: Option<bool>,
    /// Replaces `fetch.cookies`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) cookies: Option<bool>,
    /// Request headers, over `fetch.headers` (a name set here replaces it there).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub(crate) headers: BTreeMap<String, String>,
    /// HTTP basic authentication: the user, with its password from one of the two below.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) basic_user: Option<String>,
    /// The environment variable holding the basic password.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) basic_password_env: Option<String>,
    /// The file holding the basic password (a final newline is not part of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) basic_password_file: Option<PathBuf>,
    /// The environment variable holding a bearer token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bearer_token_env: Option<String>,
    /// The file holding a bearer token (a final newline is not part of it).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) bearer_token_file: Option<PathBuf>,
    /// A PEM file of CA certificates trusted for this entry's hosts alone, besides
    /// `fetch.ca_file` and the system's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ca_file: Option<PathBuf>,
}

/// `[crawl]`: what to crawl.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Crawl {
    /// Stop after this many URLs have a final record; 0 for no limit.
    pub(crate) max_pages: u64,
    /// Links followed from a seed, at most: a far backstop.
    pub(crate) max_depth: u32,
    /// Beyond this depth, a link to a page of the same shape as the page linking to it (a
    /// calendar's next month) is a trap; 0 for no such rule.
    pub(crate) max_same_shape_depth: u32,
    /// `hosts` (the seeds' hosts), `domains` (their registrable domains and subdomains) or
    /// `any`.
    pub(crate) scope: Scope,
    /// Regular expressions a URL must match one of (none: all pass).
    pub(crate) include: Vec<String>,
    /// Regular expressions no URL may match.
    pub(crate) exclude: Vec<String>,
    /// The most times one path segment may appear in a URL.
    pub(crate) max_repeated_segment: u32,
    /// The most path segments in a URL.
    pub(crate) max_path_segments: u32,
    /// The most pages per host; 0 for no limit.
    pub(crate) per_host_pages: u64,
    /// The most hosts per registrable domain; 0 for no limit.
    pub(crate) per_domain_hosts: u64,
    /// The most pages per registrable domain; 0 for no limit.
    pub(crate) per_domain_pages: u64,
    /// Read the sitemaps robots.txt lists and bodies that are sitemaps.
    pub(crate) sitemaps: bool,
    /// The content-seen test: mark a 2xx body read before under another URL as a
    /// duplicate.
    pub(crate) content_seen: bool,
    /// Follow the links of a duplicate (with `content_seen`). On by default: a copy's
    /// relative links point elsewhere than the first copy's, and pages reachable only through
    /// them would be lost; the seen-test drops the links that repeat.
    pub(crate) follow_duplicates: bool,
    /// Fetch what each page needs to render (images, style sheets, scripts, ...), even on
    /// other hosts, one hop: `None` ("auto") for on when writing WARC files, off otherwise.
    #[serde(with = "auto")]
    pub(crate) page_requisites: Option<bool>,
}

/// Scope modes, as written in the file.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Scope {
    /// The seeds' hosts.
    Hosts,
    /// The seeds' registrable domains and their subdomains.
    Domains,
    /// Any host.
    Any,
}

/// The longest a robots.txt's rules are used before the file is fetched again (RFC 9309
/// section 2.4: not more than 24 hours), and the default of `politeness.robots_max_age`.
pub(crate) const ROBOTS_MAX_AGE: Duration = Duration::from_secs(24 * 3600);

/// `[politeness]`: how hard each host is hit.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Politeness {
    /// Fetches in flight per host, at most.
    pub(crate) connections_per_host: u32,
    /// Time between two requests to one host.
    #[serde(with = "duration")]
    pub(crate) delay: Duration,
    /// Requests in flight at one IP address, across every host name it serves, at most; 0
    /// for no limit.
    pub(crate) address_connections: u32,
    /// Time between two requests to one IP address, whichever names they are for.
    #[serde(with = "duration")]
    pub(crate) address_delay: Duration,
    /// Obey robots.txt. Turn it off only for sites you run.
    pub(crate) robots: bool,
    /// How long a host's robots.txt rules are used before the file is fetched again: at most
    /// 24 hours (RFC 9309 section 2.4).
    #[serde(with = "duration")]
    pub(crate) robots_max_age: Duration,
    /// The longest robots.txt `Crawl-delay` honoured.
    #[serde(with = "duration")]
    pub(crate) max_crawl_delay: Duration,
    /// The longest `Retry-After` honoured.
    #[serde(with = "duration")]
    pub(crate) max_retry_after: Duration,
    /// Wait after a host's first error, doubled for each further one.
    #[serde(with = "duration")]
    pub(crate) backoff_base: Duration,
    /// The longest back-off.
    #[serde(with = "duration")]
    pub(crate) backoff_max: Duration,
    /// Errors in a row before a host may be given up (see `give_up_after`).
    pub(crate) max_consecutive_errors: u32,
    /// How long a host must have failed, every try an error, before it is given up.
    #[serde(with = "duration")]
    pub(crate) give_up_after: Duration,
    /// Tries of one URL, the first included.
    pub(crate) max_attempts: u32,
    /// A URL or an e-mail address of whoever runs the crawl, put in the built User-Agent so
    /// that a site owner can reach them; empty for none.
    pub(crate) contact: String,
    /// The User-Agent header as written, and the name robots.txt rules are matched against;
    /// empty for the built one (see [`Politeness::user_agent`]).
    pub(crate) user_agent: String,
}

/// `[fetch]`: the HTTP client.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Fetch {
    /// Fetches in flight across all hosts, at most.
    pub(crate) concurrency: usize,
    /// Time allowed to connect.
    #[serde(with = "duration")]
    pub(crate) connect_timeout: Duration,
    /// Time allowed for a whole request, body included.
    #[serde(with = "duration")]
    pub(crate) timeout: Duration,
    /// The largest body read, after decompression; larger ones are cut and recorded as
    /// `too_large`. Read as an integer or a size with a unit (`"10MiB"`), written as an integer.
    #[serde(with = "size")]
    pub(crate) max_body_bytes: u64,
    /// Fetch links to loopback, private, link-local and other non-public addresses (the
    /// seeds' hosts are always allowed). Off: the SSRF guard (see `guard.rs`).
    pub(crate) allow_private_addresses: bool,
    /// Send every request through this proxy (`http://`, `https://` or `socks5://` URL);
    /// empty for none. Proxies are never taken from the environment.
    pub(crate) proxy: String,
    /// The environment variable holding the proxy's password (its user is in `proxy`), read
    /// at start: what is stored with the crawl's settings is this name, not the password.
    pub(crate) proxy_password_env: String,
    /// Extra request headers sent to every host (`[[hosts]]` may add or replace some).
    pub(crate) headers: BTreeMap<String, String>,
    /// Keep the cookies each host sets and send them back to it alone (a jar per host).
    pub(crate) cookies: bool,
    /// Where names live, before DNS is asked: `NAME:PORT:ADDRESS[,ADDRESS...]` entries, as
    /// curl's `--resolve` writes them (an entry holds for every port of its name). The SSRF
    /// guard trusts a name at the addresses given here. Each process's own.
    pub(crate) resolve: Vec<String>,
    /// DNS servers to ask (`ADDRESS` or `ADDRESS:PORT`); empty for the system's. Each
    /// process's own.
    pub(crate) dns_servers: Vec<String>,
    /// A PEM file of CA certificates trusted besides the system's (a private CA); empty for
    /// none. Each process's own.
    pub(crate) ca_file: PathBuf,
}

/// `[extract]`: links from pages.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Extract {
    /// Links followed per page, at most; the rest are counted.
    pub(crate) max_links_per_page: usize,
    /// Follow `rel=nofollow` links and pages with `<meta name=robots content=nofollow>`.
    pub(crate) follow_nofollow: bool,
    /// Follow `<frame src>` and `<iframe src>` as links.
    pub(crate) follow_frames: bool,
}

/// `[frontier]`: the URL frontier.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Frontier {
    /// URLs the seen-test holds before it first grows.
    pub(crate) seen_initial_capacity: usize,
    /// The seen-test's false-positive rate: the share of new URLs wrongly taken for seen.
    pub(crate) seen_false_positive_rate: f64,
    /// Memory for queued URLs, in MiB, before they spill to disk.
    pub(crate) memory_budget_mib: usize,
    /// Where queued URLs spill; empty for a fresh directory under the system's temporary
    /// directory.
    pub(crate) spill_dir: PathBuf,
}

/// `[output]`: records, logs and progress.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Output {
    /// The JSON Lines file of records; empty or `-` for standard output.
    pub(crate) file: PathBuf,
    /// A `.warc.gz` file for every response and request; empty for none. With
    /// `warc_max_bytes`, the name the numbered files derive from.
    pub(crate) warc: PathBuf,
    /// A WARC file is closed, and the next numbered one started, once it holds this many
    /// bytes (compressed); 0 for a single file. Read as an integer or a size with a unit.
    #[serde(with = "size")]
    pub(crate) warc_max_bytes: u64,
    /// Store a 2xx body already stored whole in this run as a `revisit` record.
    pub(crate) warc_revisits: bool,
    /// A CDXJ index of the WARC files' captures, written when the crawl ends (merged with
    /// what the file holds); empty for none. Needs `warc`.
    pub(crate) cdx: PathBuf,
    /// A WACZ file of the WARC files, their index and pages, written when the crawl ends;
    /// empty for none. Needs `warc`.
    pub(crate) wacz: PathBuf,
    /// `auto` (a bar on a terminal, status lines otherwise), `bar`, `lines` or `off`.
    pub(crate) progress: Progress,
    /// Time between two status lines.
    #[serde(with = "duration")]
    pub(crate) status_interval: Duration,
    /// Where to serve live metrics (Prometheus text at `/metrics`): `HOST:PORT`, or a port
    /// on the loopback address; empty for none.
    pub(crate) metrics: String,
    /// A JSON file of the summary, written at the end; empty for none.
    pub(crate) summary_json: PathBuf,
    /// Each record's `digest` (SHA-1 of the body, base32): off saves its cost when no WARC
    /// file or content-seen test needs it.
    pub(crate) digest: bool,
}

/// `[state]`: checkpoints, for `--state-dir` and `--resume`.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct State {
    /// Time between two checkpoints of the crawl to the state directory.
    #[serde(with = "duration")]
    pub(crate) checkpoint_interval: Duration,
    /// After Ctrl-C, how long fetches in flight may take to finish before the crawl stops
    /// anyway (their URLs are fetched again on resume).
    #[serde(with = "duration")]
    pub(crate) shutdown_grace: Duration,
    /// Time between two writes of the journal to disk; 0 for no journal.
    #[serde(with = "duration")]
    pub(crate) journal_sync_interval: Duration,
}

impl Default for State {
    fn default() -> Self {
        State {
            checkpoint_interval: Duration::from_secs(300),
            shutdown_grace: Duration::from_secs(10),
            journal_sync_interval: Duration::from_millis(100),
        }
    }
}

/// `[redis]`: a crawl shared by several processes through Redis.
#[derive(Clone, Debug, Deserialize, PartialEq, Serialize)]
#[serde(deny_unknown_fields, default)]
pub(crate) struct Redis {
    /// The server (or a node of the cluster) holding the shared crawl,
    /// `redis://HOST:PORT[/DB]`; empty for a crawl of this process alone.
    pub(crate) url: String,
    /// The crawl's name: several crawls share one server under different names.
    pub(crate) crawl_name: String,
    /// How long a lease outlives its process: a process that dies (or stalls) this long has
    /// its URLs fetched by the others.
    #[serde(with = "duration")]
    pub(crate) lease_time: Duration,
    /// Buckets hosts are hashed into, fixed when the crawl is created; `None` ("auto"): the
    /// store's default (`shared::Store::default_buckets`).
    #[serde(with = "auto")]
    pub(crate) buckets: Option<u32>,
    /// What puts hosts in one bucket (one process schedules a bucket's hosts), fixed when the
    /// crawl is created.
    pub(crate) buckets_by: BucketsBy,
    /// URLs the shared seen-test holds before it first grows, fixed when the crawl is
    /// created.
    pub(crate) seen_initial_capacity: u64,
}

/// What a shared crawl's hosts are hashed into buckets by, as written in the file.
#[derive(Clone, Copy, Debug, Default, Deserialize, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum BucketsBy {
    /// By address when the limits per address are set (`politeness.address_connections` or
    /// `address_delay`), which a server's names then keep in one process; else by host.
    #[default]
    Auto,
    /// Each host by its name.
    Host,
    /// Each host by its registrable domain: a domain's hosts in one process.
    Domain,
    /// Each host by its server's address, found when the host is first met: a server's
    /// names in one process.
    Address,
}

impl Default for Redis {
    fn default() -> Self {
        Redis {
            url: String::new(),
            crawl_name: "crawl".to_owned(),
            lease_time: Duration::from_secs(30),
            buckets: None,
            buckets_by: BucketsBy::Auto,
            seen_initial_capacity: 65_536,
        }
    }
}

/// How progress is shown.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq, Serialize, clap::ValueEnum)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Progress {
    /// A bar on a terminal, status lines otherwise.
    Auto,
    /// A live bar.
    Bar,
    /// A status line every `status_interval`.
    Lines,
    /// Nothing but the summary.
    Off,
}

// The defaults are the polite public-web profile; `config/default.toml` spells them out and
// a test checks the two agree.
impl Default for Crawl {
    fn default() -> Self {
        Crawl {
            max_pages: 0,
            max_depth: frontier::ScopeRules::DEFAULT_MAX_DEPTH,
            max_same_shape_depth: frontier::ScopeRules::DEFAULT_MAX_SAME_SHAPE_DEPTH,
            scope: Scope::Hosts,
            include: Vec::new(),
            exclude: Vec::new(),
            max_repeated_segment: frontier::ScopeRules::DEFAULT_MAX_REPEATED_SEGMENT,
            max_path_segments: frontier::ScopeRules::DEFAULT_MAX_PATH_SEGMENTS,
            per_host_pages: 0,
            per_domain_hosts: 0,
            per_domain_pages: 0,
            sitemaps: true,
            content_seen: true,
            follow_duplicates: true,
            page_requisites: None,
        }
    }
}

/// The frontier's politeness defaults are these too: `the_defaults_are_the_frontiers_own`
/// ties them (the frontier keeps them private to its builder).
impl Default for Politeness {
    fn default() -> Self {
        Politeness {
            connections_per_host: 1,
            delay: Duration::from_secs(1),
            address_connections: 8,
            address_delay: Duration::from_millis(100),
            robots: true,
            robots_max_age: ROBOTS_MAX_AGE,
            max_crawl_delay: Duration::from_secs(30),
            max_retry_after: Duration::from_secs(3600),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(600),
            max_consecutive_errors: 5,
            give_up_after: Duration::from_secs(1800),
            max_attempts: 3,
            contact: String::new(),
            user_agent: String::new(),
        }
    }
}

/// The default User-Agent of earlier versions, whose link led to someone else's crate: kept
/// in their state directories' crawl.toml and in files copied from their default.toml, it is
/// read as the built one.
const RETIRED_DEFAULT_USER_AGENT: &str =
    "crawler/0.1.0 (a Bloom-filter web crawler; +https://crates.io/crates/crawler)";

impl Politeness {
    /// The User-Agent to send: `user_agent` as written, or else the built one,
    /// `crawler/<version>`, followed by ` (+<contact>)` when there is a contact. The one
    /// definition: whatever sends requests or reads robots.txt uses this.
    pub(crate) fn user_agent(&self) -> String {
        let written = self.written_user_agent();
        if !written.is_empty() {
            return written.to_owned();
        }
        let built = concat!("crawler/", env!("CARGO_PKG_VERSION"));
        match self.contact.trim() {
            "" => built.to_owned(),
            contact => format!("{built} (+{contact})"),
        }
    }

    /// Whether a site owner has no way to reach whoever runs the crawl: no contact, and the
    /// built User-Agent (one written by hand may name its own).
    pub(crate) fn is_anonymous(&self) -> bool {
        self.contact.trim().is_empty() && self.written_user_agent().is_empty()
    }

    /// `user_agent` as written, or empty for the built one.
    fn written_user_agent(&self) -> &str {
        match self.user_agent.trim() {
            RETIRED_DEFAULT_USER_AGENT => "",
            written => written,
        }
    }
}

impl Default for Fetch {
    fn default() -> Self {
        Fetch {
            concurrency: 64,
            connect_timeout: Duration::from_secs(10),
            timeout: Duration::from_secs(30),
            max_body_bytes: 10 << 20,
            allow_private_addresses: false,
            proxy: String::new(),
            proxy_password_env: String::new(),
            headers: BTreeMap::new(),
            cookies: false,
            resolve: Vec::new(),
            dns_servers: Vec::new(),
            ca_file: PathBuf::new(),
        }
    }
}

impl Default for Extract {
    fn default() -> Self {
        Extract {
            max_links_per_page: 10_000,
            follow_nofollow: false,
            follow_frames: true,
        }
    }
}

impl Default for Frontier {
    fn default() -> Self {
        Frontier {
            seen_initial_capacity: 1_000_000,
            seen_false_positive_rate: 1e-6,
            memory_budget_mib: 32,
            spill_dir: PathBuf::new(),
        }
    }
}

impl Default for Output {
    fn default() -> Self {
        Output {
            file: PathBuf::new(),
            warc: PathBuf::new(),
            // 1 GB, as Heritrix's and most archives' files.
            warc_max_bytes: 1_000_000_000,
            warc_revisits: false,
            cdx: PathBuf::new(),
            wacz: PathBuf::new(),
            progress: Progress::Auto,
            status_interval: Duration::from_secs(10),
            metrics: String::new(),
            summary_json: PathBuf::new(),
            digest: true,
        }
    }
}

/// A configuration that could not be used, with what to fix.
#[derive(Debug)]
pub(crate) struct ConfigError(String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

impl Config {
    /// Reads a TOML file. Unknown keys, wrong types and bad values are errors naming the file
    /// and the key (and line).
    pub(crate) fn from_file(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| ConfigError(format!("cannot read config file {}: {e}", path.display())))?;
        Self::from_toml(&text)
            .map_err(|e| ConfigError(format!("config file {}: {}", path.display(), e.0)))
    }

    /// Parses TOML text.
    pub(crate) fn from_toml(text: &str) -> Result<Config, ConfigError> {
        toml::from_str(text).map_err(|e| {
            let shown = e.to_string().trim_end().to_owned();
            let message = e.message().trim_end();
            // The message is the last thing shown: it gets the key it is about in front, as
            // the other settings' messages have it (`politeness.delay: ...`).
            let key = e.span().and_then(|span| key_at(text, span.start));
            let hint = key.as_deref().and_then(misplaced).unwrap_or_default();
            match (key, shown.strip_suffix(message)) {
                (Some(key), Some(before)) => ConfigError(format!("{before}{key}: {message}{hint}")),
                _ => ConfigError(format!("{shown}{hint}")),
            }
        })
    }

    /// Checks values that parse but make no sense, naming the key. `[[hosts]]` and
    /// `fetch.headers` are compiled, and so checked, by `HostRules::new`.
    pub(crate) fn validate(&self) -> Result<(), ConfigError> {
        let bad = |key: &str, why: &str| Err(ConfigError(format!("{key}: {why}")));
        if !self.redis.url.is_empty() {
            if self
                .redis
                .buckets
                .is_some_and(|n| !(1..=16384).contains(&n))
            {
                return bad("redis.buckets", "must be between 1 and 16384");
            }
            if self.redis.seen_initial_capacity == 0 {
                return bad("redis.seen_initial_capacity", "must be at least 1");
            }
            if self.redis.buckets_by == BucketsBy::Address
                && (self.crawl.per_domain_hosts > 0 || self.crawl.per_domain_pages > 0)
            {
                // A domain's count is one script's, in one bucket: its names by address
                // would be in many.
                return bad(
                    "redis.buckets_by",
                    "\"address\" cannot count crawl.per_domain_hosts or per_domain_pages: \
                     use \"domain\" (set by default with them)",
                );
            }
            if self.redis.lease_time < Duration::from_secs(1) {
                return bad("redis.lease_time", "must be at least 1s");
            }
            let scheme = self.redis.url.split_once("://").map(|(scheme, _)| scheme);
            if !scheme.is_some_and(|s| REDIS_SCHEMES.contains(&s.to_ascii_lowercase().as_str())) {
                return bad(
                    "redis.url",
                    &format!(
                        "{:?} is not a Redis URL: use redis://HOST:PORT[/DB], \
                         rediss://HOST:PORT for TLS, or unix:///PATH/TO/redis.sock",
                        frontier::redact_url(&self.redis.url)
                    ),
                );
            }
        }
        if self.politeness.connections_per_host == 0 {
            return bad("politeness.connections_per_host", "must be at least 1");
        }
        if self.politeness.max_attempts == 0 {
            return bad("politeness.max_attempts", "must be at least 1");
        }
        if self.politeness.max_consecutive_errors == 0 {
            return bad("politeness.max_consecutive_errors", "must be at least 1");
        }
        let max_age = self.politeness.robots_max_age;
        if max_age.is_zero() || max_age > ROBOTS_MAX_AGE {
            return bad(
                "politeness.robots_max_age",
                "must be longer than 0 and at most 24h (RFC 9309: a robots.txt is not used \
                 for more than 24 hours)",
            );
        }
        let contact = self.politeness.contact.trim();
        if !contact.is_empty()
            && (contact.chars().any(|c| c.is_whitespace() || c.is_control())
                || !(contact.contains('@') || contact.contains("://")))
        {
            return bad(
                "politeness.contact",
                "must be a URL (https://example.com/crawler) or an e-mail address, without spaces",
            );
        }
        if self.politeness.user_agent.chars().any(char::is_control) {
            return bad("politeness.user_agent", "must not hold control characters");
        }
        if !(1..=100_000).contains(&self.fetch.concurrency) {
            return bad("fetch.concurrency", "must be between 1 and 100000");
        }
        if self.fetch.max_body_bytes == 0 {
            return bad("fetch.max_body_bytes", "must be at least 1");
        }
        if self.fetch.timeout.is_zero() {
            return bad("fetch.timeout", "must be longer than 0");
        }
        if self.fetch.connect_timeout.is_zero() {
            return bad("fetch.connect_timeout", "must be longer than 0");
        }
        if !self.fetch.proxy.is_empty() {
            let scheme_ok = url::Url::parse(&self.fetch.proxy).is_ok_and(|u| {
                matches!(u.scheme(), "http" | "https" | "socks5" | "socks5h") && u.has_host()
            });
            if !scheme_ok {
                return bad(
                    "fetch.proxy",
                    "must be a proxy URL: http://HOST:PORT, https://HOST:PORT or socks5://HOST:PORT",
                );
            }
        }
        crate::dns::check(&self.fetch.resolve, &self.fetch.dns_servers).map_err(ConfigError)?;
        if !self.fetch.proxy_password_env.is_empty() {
            if self.fetch.proxy.is_empty() {
                return bad("fetch.proxy_password_env", "set, but fetch.proxy is not");
            }
            if url::Url::parse(&self.fetch.proxy).is_ok_and(|u| u.username().is_empty()) {
                return bad(
                    "fetch.proxy_password_env",
                    "the proxy's user goes in fetch.proxy (http://USER@HOST:PORT)",
                );
            }
        }
        if !self.output.metrics.is_empty()
            && let Err(why) = metrics_address(&self.output.metrics)
        {
            return bad("output.metrics", &why);
        }
        if !self.output.cdx.as_os_str().is_empty() && self.output.warc.as_os_str().is_empty() {
            return bad(
                "output.cdx",
                "indexes the WARC files: set output.warc (--warc FILE) too",
            );
        }
        let rate = self.frontier.seen_false_positive_rate;
        if !(rate > 0.0 && rate < 1.0) {
            return bad(
                "frontier.seen_false_positive_rate",
                "must be between 0 and 1",
            );
        }
        if self.frontier.seen_initial_capacity == 0 {
            return bad("frontier.seen_initial_capacity", "must be at least 1");
        }
        Ok(())
    }
}

/// The address `--metrics` serves on: `HOST:PORT`, or a bare port (`9898`, `:9898`) on the
/// loopback address, so that metrics are not served to the network unless asked.
pub(crate) fn metrics_address(text: &str) -> Result<std::net::SocketAddr, String> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<std::net::SocketAddr>() {
        return Ok(addr);
    }
    match text.trim_start_matches(':').parse::<u16>() {
        Ok(port) => Ok(std::net::SocketAddr::from(([127, 0, 0, 1], port))),
        Err(_) => Err(format!(
            "{text:?} is not an address: give HOST:PORT (127.0.0.1:9898) or a port (9898)"
        )),
    }
}

/// Header names whose values are secrets, by a word in them: `X-Api-Key`, `X-Auth-Token`,
/// `Cookie`, `X-Session-Id`. What the settings store, messages show and `--explain-host` prints
/// hides these values.
pub(crate) fn is_secret_header(name: &str) -> bool {
    const WORDS: [&str; 9] = [
        "auth",
        "token",
        "key",
        "secret",
        "password",
        "passwd",
        "session",
        "cookie",
        "signature",
    ];
    let name = name.to_ascii_lowercase();
    WORDS.iter().any(|word| name.contains(word))
}

impl Config {
    /// Whether pages' requisites are fetched: `crawl.page_requisites`, or, left to the
    /// crawler, whether WARC files are written.
    pub(crate) fn page_requisites(&self) -> bool {
        self.crawl
            .page_requisites
            .unwrap_or(!self.output.warc.as_os_str().is_empty())
    }

    /// These settings as they may be kept `at` a place others can read (the state
    /// directory's `crawl.toml`, the shared crawl's record in Redis): never with a secret.
    /// The Redis URL (which may hold a password) is each process's own and is left out; a
    /// password written in `fetch.proxy`, or a header whose name says it is a secret, is
    /// refused, naming where it goes instead.
    pub(crate) fn storable(&self, at: &str) -> Result<Config, ConfigError> {
        let refuse = |key: &str, why: String| {
            Err(ConfigError(format!(
                "{key}: {why} (the crawl's settings are stored {at}, and a secret is never \
                 stored there)"
            )))
        };
        if url::Url::parse(&self.fetch.proxy).is_ok_and(|u| u.password().is_some()) {
            return refuse(
                "fetch.proxy",
                format!(
                    "{} holds a password: write the user alone in the URL and give the \
                     password with fetch.proxy_password_env (--proxy-password-env VAR)",
                    frontier::redact_url(&self.fetch.proxy)
                ),
            );
        }
        let entries = self
            .hosts
            .iter()
            .map(|e| (&e.headers, format!("[[hosts]] {:?}", e.pattern)));
        for (headers, key) in
            std::iter::once((&self.fetch.headers, "fetch.headers".to_owned())).chain(entries)
        {
            if let Some(name) = headers.keys().find(|name| is_secret_header(name)) {
                return refuse(
                    &key,
                    format!(
                        "{name} looks like a secret, and header values are stored with the \
                         settings: give a site's secret as [[hosts]] credentials (basic or \
                         bearer, read from the environment or a file at start), or crawl \
                         without --state-dir and --redis"
                    ),
                );
            }
        }
        let mut stored = self.clone();
        stored.redis.url = String::new();
        Ok(stored)
    }
}

/// The dotted key of the `key = value` line of TOML `text` that holds byte `offset`, under the
/// last table header before it: `politeness.delay`, `hosts.delay` in a `[[hosts]]` entry.
/// None off such a line (inline tables and values over several lines are not followed).
fn key_at(text: &str, offset: usize) -> Option<String> {
    let mut table = String::new();
    let mut start = 0;
    for line in text.split_inclusive('\n') {
        let end = start + line.len();
        let trimmed = line.trim();
        if offset < end {
            let key = trimmed.split_once('=')?.0.trim();
            if key.is_empty() || key.starts_with('#') {
                return None;
            }
            let key = key.replace(['"', '\''], "");
            return Some(if table.is_empty() {
                key
            } else {
                format!("{table}.{key}")
            });
        }
        if trimmed.starts_with('[') {
            let header = trimmed.split('#').next().unwrap_or_default().trim();
            table = header
                .trim_start_matches('[')
                .trim_end_matches(']')
                .trim()
                .to_owned();
        }
        start = end;
    }
    None
}

/// For a key that is not where it was written (`delay` at the top, or under `[fetch]`), the
/// table it belongs to: `"; did you mean politeness.delay (under [politeness])?"`.
fn misplaced(key: &str) -> Option<String> {
    let (table, name) = key.rsplit_once('.').unwrap_or(("", key));
    let defaults = toml::Table::try_from(Config::default()).ok()?;
    let (section, _) = defaults.iter().find(|(section, value)| {
        section.as_str() != table && value.as_table().is_some_and(|t| t.contains_key(name))
    })?;
    Some(format!(
        "; did you mean {section}.{name} (under [{section}])?"
    ))
}

/// The URL schemes the Redis client takes (`valkey` ones too, for Valkey servers).
const REDIS_SCHEMES: [&str; 7] = [
    "redis",
    "rediss",
    "redis+unix",
    "unix",
    "valkey",
    "valkeys",
    "valkey+unix",
];

/// Durations as text: a number and a unit, `ms`, `s`, `m` or `h` (`"250ms"`, `"1s"`,
/// `"10m"`); `"0"` for none.
pub(crate) mod duration {
    use std::time::Duration;

    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Duration, s: S) -> Result<S::Ok, S::Error> {
        // Milliseconds, or "0": exact for every duration the parser accepts to the millisecond.
        match d.as_millis() {
            0 => s.serialize_str("0"),
            ms => s.serialize_str(&format!("{ms}ms")),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Duration, D::Error> {
        d.deserialize_any(Text)
    }

    /// Takes a duration's text, and refuses a bare number with the text to write instead:
    /// `delay = 5` could mean seconds or milliseconds, so it is not guessed.
    struct Text;

    impl serde::de::Visitor<'_> for Text {
        type Value = Duration;

        fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str("a duration: a string with a unit, e.g. \"5s\" or \"500ms\"")
        }

        fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<Duration, E> {
            parse(text).map_err(E::custom)
        }

        fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<Duration, E> {
            Err(E::custom(bare_number(&n.to_string())))
        }

        fn visit_u64<E: serde::de::Error>(self, n: u64) -> Result<Duration, E> {
            Err(E::custom(bare_number(&n.to_string())))
        }

        fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<Duration, E> {
            Err(E::custom(bare_number(&n.to_string())))
        }
    }

    /// The message for a duration written as a bare number.
    fn bare_number(n: &str) -> String {
        format!(
            "a duration is a string with a unit, e.g. \"{n}s\" or \"{n}ms\" (ms, s, m or h), \
             not the bare number {n}"
        )
    }

    /// Parses `"250ms"`, `"1.5s"`, `"10m"`, `"1h"` or `"0"`.
    pub(crate) fn parse(text: &str) -> Result<Duration, String> {
        let text = text.trim();
        if text == "0" {
            return Ok(Duration::ZERO);
        }
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .ok_or_else(|| format!("{text:?}: a duration needs a unit: ms, s, m or h"))?;
        let (number, unit) = text.split_at(split);
        let number: f64 = number
            .parse()
            .map_err(|_| format!("{text:?}: not a duration like \"250ms\" or \"1s\""))?;
        let seconds = match unit.trim() {
            "ms" => number / 1000.0,
            "s" => number,
            "m" => number * 60.0,
            "h" => number * 3600.0,
            other => return Err(format!("{text:?}: unknown unit {other:?} (ms, s, m or h)")),
        };
        Duration::try_from_secs_f64(seconds).map_err(|_| format!("{text:?}: out of range"))
    }
}

/// An optional duration, as [`duration`] writes one; absent for none.
pub(crate) mod opt_duration {
    use std::time::Duration;

    use serde::{Deserializer, Serializer};

    pub(crate) fn serialize<S: Serializer>(d: &Option<Duration>, s: S) -> Result<S::Ok, S::Error> {
        match d {
            Some(d) => super::duration::serialize(d, s),
            None => s.serialize_none(),
        }
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(
        d: D,
    ) -> Result<Option<Duration>, D::Error> {
        super::duration::deserialize(d).map(Some)
    }
}

/// A setting that may be left to the crawler: its value (`true`, `64`...), or `"auto"`
/// (`None`).
pub(crate) mod auto {
    use serde::{Deserialize, Deserializer, Serialize, Serializer, de::Error};

    pub(crate) fn serialize<S: Serializer, T: Serialize>(
        v: &Option<T>,
        s: S,
    ) -> Result<S::Ok, S::Error> {
        match v {
            Some(v) => v.serialize(s),
            None => s.serialize_str("auto"),
        }
    }

    pub(crate) fn deserialize<'de, D, T>(d: D) -> Result<Option<T>, D::Error>
    where
        D: Deserializer<'de>,
        T: Deserialize<'de>,
    {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written<T> {
            Value(T),
            Text(String),
        }
        match Written::deserialize(d)? {
            Written::Value(v) => Ok(Some(v)),
            Written::Text(text) if text == "auto" => Ok(None),
            Written::Text(text) => Err(D::Error::custom(format!(
                "{text:?}: expected a value or \"auto\""
            ))),
        }
    }
}

/// Sizes in bytes: a plain integer, or a number and a unit, decimal (`KB`, `MB`, `GB`: powers
/// of 1,000) or binary (`KiB`, `MiB`, `GiB`: powers of 1,024); `K`, `M`, `G` are decimal too,
/// `B` is bytes; units in any case. Written back as an integer, which every version reads.
pub(crate) mod size {
    use serde::{Deserialize, Deserializer, Serializer};

    /// The forms accepted, for error messages.
    const FORMS: &str = "a number of bytes, or a number and a unit: B, K, KB, KiB, M, MB, MiB, \
                         G, GB or GiB (10MB = 10,000,000 bytes; 10MiB = 10,485,760)";

    pub(crate) fn serialize<S: Serializer>(n: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_u64(*n)
    }

    pub(crate) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        /// What the file may hold: an integer, or text with a unit.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Written {
            Bytes(u64),
            Text(String),
        }
        match Written::deserialize(d) {
            Ok(Written::Bytes(n)) => Ok(n),
            Ok(Written::Text(text)) => parse(&text).map_err(serde::de::Error::custom),
            // A negative or fractional number, a table...: the untagged error says nothing.
            Err(_) => Err(serde::de::Error::custom(format!("not a size: {FORMS}"))),
        }
    }

    /// Parses `"10485760"`, `"10MB"`, `"10 MiB"`, `"1.5g"`.
    pub(crate) fn parse(text: &str) -> Result<u64, String> {
        let text = text.trim();
        let split = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .unwrap_or(text.len());
        let (number, unit) = text.split_at(split);
        let bad = || format!("{text:?} is not a size: {FORMS}");
        let multiplier: u64 = match unit.trim().to_ascii_lowercase().as_str() {
            "" | "b" => 1,
            "k" | "kb" => 1_000,
            "kib" => 1 << 10,
            "m" | "mb" => 1_000_000,
            "mib" => 1 << 20,
            "g" | "gb" => 1_000_000_000,
            "gib" => 1 << 30,
            _ => return Err(bad()),
        };
        if let Ok(n) = number.parse::<u64>() {
            return n
                .checked_mul(multiplier)
                .ok_or_else(|| format!("{text:?}: out of range"));
        }
        let n: f64 = number.parse().map_err(|_| bad())?;
        let bytes = (n * multiplier as f64).round();
        if bytes.is_finite() && bytes < u64::MAX as f64 {
            Ok(bytes as u64)
        } else {
            Err(format!("{text:?}: out of range"))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_file_documents_exactly_the_defaults() {
        let file = include_str!("../../config/default.toml");
        assert_eq!(Config::from_toml(file).unwrap(), Config::default());
    }

    #[test]
    fn the_local_profile_parses_and_still_obeys_robots() {
        let local = Config::from_toml(include_str!("../../config/local.toml")).unwrap();
        local.validate().unwrap();
        assert!(local.politeness.robots);
        assert_eq!(local.politeness.delay, Duration::ZERO);
        assert!(local.fetch.concurrency > Config::default().fetch.concurrency);
    }

    #[test]
    fn unknown_keys_and_bad_values_name_the_key() {
        let err = Config::from_toml("[fetch]\nconcurency = 3\n").unwrap_err();
        assert!(err.to_string().contains("concurency"), "{err}");
        let err = Config::from_toml("[politeness]\ndelay = \"1 fortnight\"\n").unwrap_err();
        assert!(err.to_string().contains("delay"), "{err}");
        assert!(err.to_string().contains("line 2"), "{err}");
        let mut config = Config::default();
        config.fetch.concurrency = 0;
        assert!(
            config
                .validate()
                .unwrap_err()
                .to_string()
                .starts_with("fetch.concurrency")
        );
    }

    #[test]
    fn a_setting_left_to_the_crawler_reads_auto_or_its_value() {
        let buckets = |text: &str| Config::from_toml(&format!("[redis]\nbuckets = {text}\n"));
        assert_eq!(buckets("\"auto\"").unwrap().redis.buckets, None);
        assert_eq!(buckets("16").unwrap().redis.buckets, Some(16));
        let err = buckets("\"many\"").unwrap_err().to_string();
        assert!(err.contains("buckets") && err.contains("\"auto\""), "{err}");
        let mut config = Config::default();
        config.redis.url = "redis://127.0.0.1:6379".into();
        config.redis.buckets = Some(0);
        let err = config.validate().unwrap_err().to_string();
        assert!(err.starts_with("redis.buckets"), "{err}");
        config.redis.buckets = None;
        config.redis.buckets_by = BucketsBy::Address;
        config.validate().unwrap();
        config.crawl.per_domain_pages = 10;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.starts_with("redis.buckets_by"), "{err}");
        config.crawl.per_domain_pages = 0;
        // Written out as it was given.
        config.redis.buckets = Some(16);
        let text = toml::to_string(&config).unwrap();
        assert_eq!(Config::from_toml(&text).unwrap().redis.buckets, Some(16));
        let page_requisites = |text: &str| {
            Config::from_toml(&format!("[crawl]\npage_requisites = {text}\n"))
                .map(|c| c.crawl.page_requisites)
        };
        assert_eq!(page_requisites("\"auto\"").unwrap(), None);
        assert_eq!(page_requisites("false").unwrap(), Some(false));
        assert!(page_requisites("\"yes\"").is_err());
    }

    #[test]
    fn a_config_written_out_reads_back_the_same() {
        let mut config = Config::from_toml(include_str!("../../config/local.toml")).unwrap();
        config.crawl.exclude = vec![r"\.pdf$".into()];
        let text = toml::to_string(&config).unwrap();
        assert_eq!(Config::from_toml(&text).unwrap(), config);
    }

    #[test]
    fn hosts_and_headers_written_out_read_back_the_same() {
        // The state directory keeps the settings this way: where secrets are, never them.
        let config = Config::from_toml(
            r#"
            [fetch]
            cookies = true
            headers = { Accept-Language = "en" }
            [[hosts]]
            match = "*.example.com"
            delay = "250ms"
            connections = 4
            obey_robots = false
            cookies = false
            headers = { X-Team = "docs" }
            basic_user = "bot"
            basic_password_env = "DOCS_PASSWORD"
            [[hosts]]
            match = "api.example.org"
            bearer_token_file = "/run/secrets/token"
            "#,
        )
        .unwrap();
        assert_eq!(config.hosts.len(), 2);
        assert_eq!(config.hosts[0].delay, Some(Duration::from_millis(250)));
        let text = toml::to_string(&config).unwrap();
        assert_eq!(Config::from_toml(&text).unwrap(), config, "{text}");
        let err = Config::from_toml("[[hosts]]\nmatch = \"a\"\npassword = \"x\"\n").unwrap_err();
        assert!(err.to_string().contains("password"), "{err}");
        let err = Config::from_toml("[[hosts]]\ndelay = \"1s\"\n").unwrap_err();
        assert!(err.to_string().contains("match"), "{err}");
    }

    #[test]
    fn sizes_read_with_units_in_any_case() {
        assert_eq!(size::parse("10485760"), Ok(10_485_760));
        assert_eq!(size::parse("10MB"), Ok(10_000_000));
        assert_eq!(size::parse("10MiB"), Ok(10_485_760));
        assert_eq!(size::parse("10mib"), Ok(10_485_760));
        assert_eq!(size::parse("10 M"), Ok(10_000_000));
        assert_eq!(size::parse("2k"), Ok(2_000));
        assert_eq!(size::parse("2KiB"), Ok(2_048));
        assert_eq!(size::parse("1GB"), Ok(1_000_000_000));
        assert_eq!(size::parse("1GiB"), Ok(1 << 30));
        assert_eq!(size::parse("1.5KiB"), Ok(1_536));
        assert_eq!(size::parse("512B"), Ok(512));
        for bad in ["", "MB", "10 fortnights", "-1", "10TB", "99999999999GiB"] {
            let err = size::parse(bad).unwrap_err();
            assert!(err.contains(&format!("{bad:?}")), "{err}");
        }
        assert!(size::parse("10TB").unwrap_err().contains("KiB"));
    }

    #[test]
    fn max_body_bytes_reads_a_size_or_an_integer_and_writes_an_integer() {
        let config = Config::from_toml("[fetch]\nmax_body_bytes = \"10MiB\"\n").unwrap();
        assert_eq!(config.fetch.max_body_bytes, 10_485_760);
        let config = Config::from_toml("[fetch]\nmax_body_bytes = 5000\n").unwrap();
        assert_eq!(config.fetch.max_body_bytes, 5_000);
        let text = toml::to_string(&config).unwrap();
        assert!(text.contains("max_body_bytes = 5000\n"), "{text}");
        let err = Config::from_toml("[fetch]\nmax_body_bytes = \"ten\"\n").unwrap_err();
        assert!(err.to_string().contains("max_body_bytes"), "{err}");
        assert!(err.to_string().contains("MiB"), "{err}");
        let err = Config::from_toml("[fetch]\nmax_body_bytes = -1\n").unwrap_err();
        assert!(err.to_string().contains("MiB"), "{err}");
    }

    /// Regression: `delay = 5` said "invalid type: integer `5`, expected a string".
    #[test]
    fn a_key_in_the_wrong_table_is_pointed_to_its_own() {
        let err = Config::from_toml("delay = \"1s\"\n")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("did you mean politeness.delay (under [politeness])?"),
            "{err}"
        );
        let err = Config::from_toml("[fetch]\ndelay = \"1s\"\n")
            .unwrap_err()
            .to_string();
        assert!(err.contains("did you mean politeness.delay"), "{err}");
        let err = Config::from_toml("[fetch]\nnot_a_key = 1\n")
            .unwrap_err()
            .to_string();
        assert!(!err.contains("did you mean"), "{err}");
    }

    #[test]
    fn a_bare_number_for_a_duration_suggests_the_text_to_write() {
        let err = Config::from_toml("[politeness]\ndelay = 5\n").unwrap_err();
        let err = err.to_string();
        assert!(
            err.ends_with(
                "politeness.delay: a duration is a string with a unit, e.g. \"5s\" or \"5ms\" \
                 (ms, s, m or h), not the bare number 5"
            ),
            "{err}"
        );
        assert!(err.contains("line 2"), "{err}");
        let err = Config::from_toml("[fetch]\ntimeout = 0.5 # seconds\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("fetch.timeout: a duration is a string with a unit, e.g. \"0.5s\""),
            "{err}"
        );
        let err = Config::from_toml("[[hosts]]\nhost = \"a.example\"\ndelay = 2\n").unwrap_err();
        assert!(err.to_string().contains("hosts.delay: a duration"), "{err}");
        // Text still reads as before.
        let config = Config::from_toml("[politeness]\ndelay = \"5s\"\n").unwrap();
        assert_eq!(config.politeness.delay, Duration::from_secs(5));
    }

    #[test]
    fn the_key_of_a_line_is_found_under_its_table() {
        let text = "top = 1\n[a]\nx = 1\n[[b]] # c\n\"y\" = 2\n";
        assert_eq!(key_at(text, 2).as_deref(), Some("top"));
        assert_eq!(
            key_at(text, text.find("x =").unwrap()).as_deref(),
            Some("a.x")
        );
        assert_eq!(
            key_at(text, text.find("2").unwrap()).as_deref(),
            Some("b.y")
        );
        assert_eq!(key_at(text, text.find("[a]").unwrap()), None);
    }

    #[test]
    fn a_redis_url_must_have_a_redis_scheme() {
        let mut config = Config::default();
        for url in [
            "redis://h:6379/0",
            "rediss://h",
            "unix:///run/redis.sock",
            "REDIS://h",
        ] {
            config.redis.url = url.into();
            assert!(config.validate().is_ok(), "{url}");
        }
        for url in ["http://h:6379", "h:6379", "localhost"] {
            config.redis.url = url.into();
            let err = config.validate().unwrap_err().to_string();
            assert!(err.starts_with("redis.url: "), "{err}");
            assert!(err.contains("use redis://HOST:PORT"), "{err}");
        }
        config.redis.url = "http://:secret@h".into();
        let err = config.validate().unwrap_err().to_string();
        assert!(err.contains("\"http://:***@h\""), "{err}");
        assert!(!err.contains("secret"), "{err}");
    }

    #[test]
    fn a_zero_timeout_names_its_key_alone() {
        let mut config = Config::default();
        config.fetch.timeout = Duration::ZERO;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.starts_with("fetch.timeout:"), "{err}");
        let mut config = Config::default();
        config.fetch.connect_timeout = Duration::ZERO;
        let err = config.validate().unwrap_err().to_string();
        assert!(err.starts_with("fetch.connect_timeout:"), "{err}");
    }

    #[test]
    fn the_user_agent_is_built_with_the_contact_unless_written() {
        let version = env!("CARGO_PKG_VERSION");
        let mut p = Politeness::default();
        assert_eq!(p.user_agent(), format!("crawler/{version}"));
        assert!(p.is_anonymous());
        p.contact = "mailto:ops@example.org".into();
        assert_eq!(
            p.user_agent(),
            format!("crawler/{version} (+mailto:ops@example.org)")
        );
        assert!(!p.is_anonymous());
        p.user_agent = "MyBot/2.0 (+https://example.org/bot)".into();
        assert_eq!(p.user_agent(), "MyBot/2.0 (+https://example.org/bot)");
        // Never a link to something else: the default names nobody but the crawler, and the
        // old default, which linked to another crate, still saved in old state directories,
        // is read as the built one.
        assert!(!Politeness::default().user_agent().contains("http"));
        let old = Politeness {
            user_agent: RETIRED_DEFAULT_USER_AGENT.into(),
            ..Politeness::default()
        };
        assert_eq!(old.user_agent(), format!("crawler/{version}"));
        assert!(old.is_anonymous());
    }

    #[test]
    fn a_contact_must_be_a_url_or_an_address() {
        let mut config = Config::default();
        for good in ["https://example.org/crawl", "ops@example.org"] {
            config.politeness.contact = good.into();
            config.validate().unwrap();
        }
        for bad in ["call me", "example.org", "ops@example.org\r\nX: y"] {
            config.politeness.contact = bad.into();
            let err = config.validate().unwrap_err().to_string();
            assert!(err.starts_with("politeness.contact"), "{err}");
        }
    }

    #[test]
    fn a_bare_metrics_port_is_served_on_loopback() {
        let address = |text| metrics_address(text).map(|addr| addr.to_string());
        assert_eq!(address("9898").unwrap(), "127.0.0.1:9898");
        assert_eq!(address(":9898").unwrap(), "127.0.0.1:9898");
        assert_eq!(address("[::1]:7").unwrap(), "[::1]:7");
        assert_eq!(address("0.0.0.0:80").unwrap(), "0.0.0.0:80");
        assert!(address("localhost").unwrap_err().contains("HOST:PORT"));
    }

    #[test]
    fn durations_read_as_written() {
        assert_eq!(duration::parse("250ms"), Ok(Duration::from_millis(250)));
        assert_eq!(duration::parse("1.5s"), Ok(Duration::from_millis(1500)));
        assert_eq!(duration::parse("10m"), Ok(Duration::from_secs(600)));
        assert_eq!(duration::parse("0"), Ok(Duration::ZERO));
        assert!(duration::parse("10").is_err());
        assert!(duration::parse("-1s").is_err());
        assert!(duration::parse("1e300h").is_err());
    }

    #[test]
    fn the_defaults_are_the_frontiers_own() {
        let ours = Politeness::default();
        let frontier = frontier::Politeness::builder().build().unwrap();
        assert_eq!(ours.connections_per_host, frontier.connections_per_host());
        assert_eq!(ours.delay, frontier.delay());
        assert_eq!(ours.max_crawl_delay, frontier.max_crawl_delay());
        assert_eq!(ours.backoff_base, frontier.backoff_base());
        assert_eq!(ours.backoff_max, frontier.backoff_max());
        assert_eq!(ours.max_retry_after, frontier.max_retry_after());
        assert_eq!(
            ours.max_consecutive_errors,
            frontier.max_consecutive_errors()
        );
        assert_eq!(ours.give_up_after, frontier.give_up_after());
        assert_eq!(ours.max_attempts, frontier.max_attempts());
    }
}
