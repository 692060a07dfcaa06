//! The command line: seeds, a config file, and a flag for every config key, which overrides
//! the file.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::config::{self, Config, Progress, Scope};

/// A fast, polite web crawler. Fetches the seeds and every in-scope page they lead to, once
/// each, and writes one JSON line per URL.
///
/// Settings come from config/default.toml's defaults, then the --config file, then these
/// flags. Durations take a unit: 250ms, 1s, 10m, 1h.
///
/// ```
/// use clap::Parser;
/// let cli = crawler::Cli::try_parse_from(["crawler", "--seed", "https://example.com/"]);
/// assert!(cli.is_ok());
/// // A duration without its unit is refused, saying which units there are.
/// let err = crawler::Cli::try_parse_from(["crawler", "--delay", "5"]).unwrap_err();
/// assert!(err.to_string().contains("needs a unit"));
/// ```
#[derive(Debug, Parser)]
#[command(name = "crawler", version, about, long_about = None, max_term_width = 100)]
pub struct Cli {
    /// A URL to start from (repeatable).
    #[arg(long = "seed", value_name = "URL")]
    pub(crate) seeds: Vec<String>,
    /// A sitemap URL to read (repeatable): a seed whose body is read as a sitemap (XML,
    /// text, gzipped or not), whatever crawl.sitemaps says.
    #[arg(long = "sitemap", value_name = "URL")]
    pub(crate) sitemaps: Vec<String>,
    /// A file of seed URLs, one per line (blank lines and lines starting with # skipped).
    #[arg(long, value_name = "FILE")]
    pub(crate) seeds_file: Option<PathBuf>,
    /// Recrawl: the records of an earlier crawl (JSON Lines, gzipped or not; repeatable).
    /// Its URLs are queued again, and fetched only if they changed (If-None-Match,
    /// If-Modified-Since); each record says what became of its page (`revisit`). Without
    /// --seed, its seeds are the earlier crawl's.
    #[arg(long, value_name = "FILE")]
    pub(crate) since: Vec<PathBuf>,
    /// A TOML config file (see config/default.toml for every key).
    #[arg(long, value_name = "FILE")]
    pub(crate) config: Option<PathBuf>,
    /// Keep the crawl's state here: its settings, seeds and periodic checkpoints, so that it
    /// can be resumed after Ctrl-C or a crash. Must be empty or new, unless --resume.
    #[arg(long, value_name = "DIR")]
    pub(crate) state_dir: Option<PathBuf>,
    /// Resume the crawl in --state-dir, with its settings unless flags override them.
    #[arg(long, requires = "state_dir")]
    pub(crate) resume: bool,
    /// Print the settings a host gets with this config and flags (the `[[hosts]]` entries that
    /// match it, its delay, connections, robots.txt, cookies, headers, and where its
    /// credentials come from, never the secret), then exit without crawling. A host, a
    /// host:port or a URL.
    #[arg(long, value_name = "HOST")]
    pub(crate) explain_host: Option<String>,
    /// Join the shared crawl (--redis) even though this command's settings or seeds differ
    /// from those it was started with: its stored settings apply, and new seeds are added.
    #[arg(long, requires = "redis_url", help_heading = "Several processes")]
    pub(crate) join: bool,
    /// Remove every key of the shared crawl --crawl-name from the --redis server (or
    /// cluster), in batches, then exit without crawling. Refused while a process of the
    /// crawl is running.
    #[arg(long, requires = "redis_url", help_heading = "Several processes")]
    pub(crate) remove_crawl: bool,

    /// [crawl.max_pages] Stop once this many URLs have their record; 0: no limit.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    max_pages: Option<u64>,
    /// [crawl.max_depth] Links followed from a seed, at most (a far backstop).
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    max_depth: Option<u32>,
    /// [crawl.max_same_shape_depth] Depth beyond which a link of its page's shape is a trap.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    max_same_shape_depth: Option<u32>,
    /// [crawl.scope] Hosts in scope: the seeds' hosts, their domains, or any.
    #[arg(long, value_enum, help_heading = "Crawl")]
    scope: Option<Scope>,
    /// [crawl.include] A regex a URL must match (repeatable; replaces the file's list).
    #[arg(long, value_name = "REGEX", help_heading = "Crawl")]
    include: Vec<String>,
    /// [crawl.exclude] A regex no URL may match (repeatable; replaces the file's list).
    #[arg(long, value_name = "REGEX", help_heading = "Crawl")]
    exclude: Vec<String>,
    /// [crawl.max_repeated_segment] Times one path segment may repeat in a URL.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    max_repeated_segment: Option<u32>,
    /// [crawl.max_path_segments] Path segments in a URL, at most.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    max_path_segments: Option<u32>,
    /// [crawl.per_host_pages] Pages per host, at most; 0: no limit.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    per_host_pages: Option<u64>,
    /// [crawl.per_domain_hosts] Hosts per registrable domain, at most (a spam farm's
    /// subdomains); 0: no limit.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    per_domain_hosts: Option<u64>,
    /// [crawl.per_domain_pages] Pages per registrable domain, at most; 0: no limit.
    #[arg(long, value_name = "N", help_heading = "Crawl")]
    per_domain_pages: Option<u64>,
    /// [crawl.sitemaps] Read robots.txt's sitemaps and bodies that are sitemaps (true/false).
    #[arg(long = "sitemaps", value_name = "BOOL", help_heading = "Crawl")]
    read_sitemaps: Option<bool>,
    /// [crawl.content_seen] Record a 2xx body read before under another URL as a duplicate
    /// (true/false).
    #[arg(long, value_name = "BOOL", help_heading = "Crawl")]
    content_seen: Option<bool>,
    /// [crawl.follow_duplicates] Follow the links of duplicates (true/false; default true).
    /// false saves their extraction, and loses the pages only a copy's relative links reach.
    #[arg(long, value_name = "BOOL", help_heading = "Crawl")]
    follow_duplicates: Option<bool>,
    /// [crawl.page_requisites] Fetch what pages need to render: images, style sheets,
    /// scripts, media, even on other hosts, one hop (true/false; default: on when writing
    /// WARC files).
    #[arg(long, value_name = "BOOL", help_heading = "Crawl")]
    page_requisites: Option<bool>,

    /// [politeness.connections_per_host] Fetches in flight per host.
    #[arg(long, value_name = "N", help_heading = "Politeness")]
    connections_per_host: Option<u32>,
    /// [politeness.delay] Time between two requests to one host.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    delay: Option<Duration>,
    /// [politeness.address_connections] Fetches in flight at one IP address, across all the
    /// host names it serves (0: no limit).
    #[arg(long, value_name = "N", help_heading = "Politeness")]
    address_connections: Option<u32>,
    /// [politeness.address_delay] Time between two requests to one IP address, whichever
    /// host names they are for.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    address_delay: Option<Duration>,
    /// [politeness.robots] Obey robots.txt (true/false). Off only for your own sites.
    #[arg(long, value_name = "BOOL", help_heading = "Politeness")]
    robots: Option<bool>,
    /// [politeness.robots_max_age] How long robots.txt rules are used before the file is
    /// fetched again (at most 24h).
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    robots_max_age: Option<Duration>,
    /// [politeness.max_crawl_delay] The longest robots.txt Crawl-delay honoured.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    max_crawl_delay: Option<Duration>,
    /// [politeness.max_retry_after] The longest Retry-After honoured.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    max_retry_after: Option<Duration>,
    /// [politeness.backoff_base] Wait after an error; doubled per error in a row without answer.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    backoff_base: Option<Duration>,
    /// [politeness.backoff_max] The longest back-off.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    backoff_max: Option<Duration>,
    /// [politeness.max_consecutive_errors] Errors in a row before a host may be given up.
    #[arg(long, value_name = "N", help_heading = "Politeness")]
    max_consecutive_errors: Option<u32>,
    /// [politeness.give_up_after] How long a host must fail, every try, to be given up.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Politeness")]
    give_up_after: Option<Duration>,
    /// [politeness.max_attempts] Tries of one URL, the first included.
    #[arg(long, value_name = "N", help_heading = "Politeness")]
    max_attempts: Option<u32>,
    /// [politeness.contact] A URL or e-mail address where site owners can reach you; put in
    /// the User-Agent.
    #[arg(long, value_name = "URL|EMAIL", help_heading = "Politeness")]
    contact: Option<String>,
    /// [politeness.user_agent] The User-Agent sent, and matched against robots.txt; empty:
    /// crawler/VERSION (+CONTACT).
    #[arg(long, value_name = "TEXT", help_heading = "Politeness")]
    user_agent: Option<String>,

    /// [fetch.concurrency] Fetches in flight across all hosts.
    #[arg(long, value_name = "N", help_heading = "Fetch")]
    concurrency: Option<usize>,
    /// [fetch.connect_timeout] Time allowed to connect.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Fetch")]
    connect_timeout: Option<Duration>,
    /// [fetch.timeout] Time allowed for a whole request, body included.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Fetch")]
    timeout: Option<Duration>,
    /// [fetch.max_body_bytes] The largest body read, after decompression: bytes, or 10MB,
    /// 10MiB...
    #[arg(long, value_name = "SIZE", value_parser = config::size::parse, help_heading = "Fetch")]
    max_body_bytes: Option<u64>,
    /// [fetch.allow_private_addresses] Follow links to non-public addresses (true/false).
    #[arg(long, value_name = "BOOL", help_heading = "Fetch")]
    allow_private_addresses: Option<bool>,
    /// [fetch.proxy] Send every request through this proxy (http://, https://, socks5://).
    #[arg(long, value_name = "URL", help_heading = "Fetch")]
    proxy: Option<String>,
    /// [fetch.proxy_password_env] The environment variable holding the proxy's password
    /// (its user goes in --proxy: http://USER@HOST:PORT); the variable's name is stored
    /// with the crawl, never the password.
    #[arg(long, value_name = "VAR", help_heading = "Fetch")]
    proxy_password_env: Option<String>,
    /// [fetch.headers] An extra request header for every host, "Name: value" (repeatable;
    /// replaces the file's header of that name). A host's own: `[[hosts]]` in the config file.
    #[arg(long = "header", value_name = "NAME: VALUE", value_parser = parse_header, help_heading = "Fetch")]
    headers: Vec<(String, String)>,
    /// [fetch.cookies] Keep each host's cookies and send them back to it alone (true/false).
    #[arg(long, value_name = "BOOL", help_heading = "Fetch")]
    cookies: Option<bool>,
    /// [fetch.resolve] Where a name lives, as curl's --resolve: NAME:PORT:ADDRESS[,ADDRESS]
    /// (repeatable; replaces the file's entry for that name; holds for every port of the
    /// name). The SSRF guard trusts the name at these addresses.
    #[arg(
        long = "resolve",
        value_name = "NAME:PORT:ADDRESS",
        help_heading = "Fetch"
    )]
    resolve: Vec<String>,
    /// [fetch.dns_servers] A DNS server to ask, ADDRESS or ADDRESS:PORT (repeatable;
    /// replaces the file's list). Default: the system's.
    #[arg(
        long = "dns-server",
        value_name = "ADDRESS[:PORT]",
        help_heading = "Fetch"
    )]
    dns_servers: Vec<String>,
    /// [fetch.ca_file] A PEM file of CA certificates to trust besides the system's (a
    /// private CA).
    #[arg(long = "ca-cert", value_name = "FILE", help_heading = "Fetch")]
    ca_file: Option<PathBuf>,

    /// [extract.max_links_per_page] Links followed per page, at most.
    #[arg(long, value_name = "N", help_heading = "Extract")]
    max_links_per_page: Option<usize>,
    /// [extract.follow_nofollow] Follow rel=nofollow links and meta robots nofollow pages.
    #[arg(long, value_name = "BOOL", help_heading = "Extract")]
    follow_nofollow: Option<bool>,
    /// [extract.follow_frames] Follow the src of frames and iframes as links (true/false).
    #[arg(long, value_name = "BOOL", help_heading = "Extract")]
    follow_frames: Option<bool>,

    /// [frontier.seen_initial_capacity] URLs the seen-test holds before it grows.
    #[arg(long, value_name = "N", help_heading = "Frontier")]
    seen_initial_capacity: Option<usize>,
    /// [frontier.seen_false_positive_rate] Share of new URLs wrongly taken for seen.
    #[arg(long, value_name = "RATE", help_heading = "Frontier")]
    seen_false_positive_rate: Option<f64>,
    /// [frontier.memory_budget_mib] Memory for queued URLs before they spill to disk.
    #[arg(long, value_name = "MIB", help_heading = "Frontier")]
    memory_budget_mib: Option<usize>,
    /// [frontier.spill_dir] Where queued URLs spill (default: a temporary directory).
    #[arg(long, value_name = "DIR", help_heading = "Frontier")]
    spill_dir: Option<PathBuf>,

    /// [output.file] The JSON Lines file of records; - for standard output.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    output: Option<PathBuf>,
    /// [output.warc] Also write every response and request to .warc.gz files named after
    /// this one: FILE-00000.warc.gz, then -00001 past --warc-max-bytes (0: FILE alone).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    warc: Option<PathBuf>,
    /// [output.warc_max_bytes] Start the next numbered WARC file past this size: bytes, or
    /// 1GB, 100MiB...; 0: one file.
    #[arg(long, value_name = "SIZE", value_parser = config::size::parse, help_heading = "Output")]
    warc_max_bytes: Option<u64>,
    /// [output.warc_revisits] Store a 2xx body already stored whole as a revisit record
    /// (true/false).
    #[arg(long, value_name = "BOOL", help_heading = "Output")]
    warc_revisits: Option<bool>,
    /// [output.cdx] Also write a CDXJ index of the WARC files' captures to FILE, as pywb's
    /// cdxj-indexer writes it (sorted, merged with what FILE holds; when the crawl ends).
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    cdx: Option<PathBuf>,
    /// [output.wacz] Also package the WARC files, their CDXJ index and the pages into a WACZ
    /// file (for ReplayWeb.page), when the crawl ends.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    wacz: Option<PathBuf>,
    /// [output.progress] Progress on standard error.
    #[arg(long, value_enum, help_heading = "Output")]
    progress: Option<Progress>,
    /// [output.metrics] Serve live metrics (Prometheus text, /metrics) at HOST:PORT or a port.
    #[arg(long, value_name = "ADDR", help_heading = "Output")]
    metrics: Option<String>,
    /// [output.summary_json] Write the summary as JSON to this file at the end.
    #[arg(long, value_name = "FILE", help_heading = "Output")]
    summary_json: Option<PathBuf>,
    /// [output.digest] Each record's digest (SHA-1 of the body); false saves its cost when
    /// no WARC file or content-seen test needs it.
    #[arg(long, value_name = "BOOL", help_heading = "Output")]
    digest: Option<bool>,
    /// [output.status_interval] Time between two status lines.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Output")]
    status_interval: Option<Duration>,

    /// [state.checkpoint_interval] Time between two checkpoints (with --state-dir).
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "State")]
    checkpoint_interval: Option<Duration>,
    /// [state.journal_sync_interval] Time between two journal writes to disk; 0: no journal.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "State")]
    journal_sync_interval: Option<Duration>,
    /// [state.shutdown_grace] After Ctrl-C, time for fetches in flight to finish.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "State")]
    shutdown_grace: Option<Duration>,

    /// [redis.url] Share the crawl with other processes through this Redis server (or
    /// cluster node), redis://HOST:PORT[/DB]: starts the crawl, or joins it (then seeds are
    /// optional).
    #[arg(long = "redis", value_name = "URL", help_heading = "Several processes")]
    redis_url: Option<String>,
    /// [redis.crawl_name] The shared crawl's name: crawls of other names on the same server
    /// are apart.
    #[arg(long, value_name = "NAME", help_heading = "Several processes")]
    crawl_name: Option<String>,
    /// [redis.lease_time] How long the buckets of a process that died (and their URLs in
    /// flight) wait before the others take them over: 20 s if shorter.
    #[arg(long, value_name = "DURATION", value_parser = config::duration::parse, help_heading = "Several processes")]
    lease_time: Option<Duration>,
    /// [redis.buckets] Buckets hosts are hashed into (when the crawl is created).
    #[arg(long, value_name = "N", help_heading = "Several processes")]
    redis_buckets: Option<u32>,
    /// [redis.buckets_by] What hosts are hashed into buckets by (when the crawl is created):
    /// a bucket's hosts are scheduled by one process.
    #[arg(long, value_name = "BY", help_heading = "Several processes")]
    redis_buckets_by: Option<config::BucketsBy>,
    /// [redis.seen_initial_capacity] URLs the shared seen-test holds before it first grows
    /// (when the crawl is created).
    #[arg(long, value_name = "N", help_heading = "Several processes")]
    redis_seen_initial_capacity: Option<u64>,
}

impl Cli {
    /// The file's settings (or the defaults) with this command line's flags applied.
    pub(crate) fn apply(&self, mut c: Config) -> Config {
        fn set<T: Clone>(target: &mut T, value: &Option<T>) {
            if let Some(value) = value {
                *target = value.clone();
            }
        }
        set(&mut c.crawl.max_pages, &self.max_pages);
        set(&mut c.crawl.max_depth, &self.max_depth);
        set(
            &mut c.crawl.max_same_shape_depth,
            &self.max_same_shape_depth,
        );
        set(&mut c.crawl.scope, &self.scope);
        if !self.include.is_empty() {
            c.crawl.include = self.include.clone();
        }
        if !self.exclude.is_empty() {
            c.crawl.exclude = self.exclude.clone();
        }
        set(
            &mut c.crawl.max_repeated_segment,
            &self.max_repeated_segment,
        );
        set(&mut c.crawl.max_path_segments, &self.max_path_segments);
        set(&mut c.crawl.per_host_pages, &self.per_host_pages);
        set(&mut c.crawl.per_domain_hosts, &self.per_domain_hosts);
        set(&mut c.crawl.per_domain_pages, &self.per_domain_pages);
        set(&mut c.crawl.sitemaps, &self.read_sitemaps);
        set(&mut c.crawl.content_seen, &self.content_seen);
        set(&mut c.crawl.follow_duplicates, &self.follow_duplicates);
        if let Some(on) = self.page_requisites {
            c.crawl.page_requisites = Some(on);
        }
        let p = &mut c.politeness;
        set(&mut p.connections_per_host, &self.connections_per_host);
        set(&mut p.delay, &self.delay);
        set(&mut p.address_connections, &self.address_connections);
        set(&mut p.address_delay, &self.address_delay);
        set(&mut p.robots, &self.robots);
        set(&mut p.robots_max_age, &self.robots_max_age);
        set(&mut p.max_crawl_delay, &self.max_crawl_delay);
        set(&mut p.max_retry_after, &self.max_retry_after);
        set(&mut p.backoff_base, &self.backoff_base);
        set(&mut p.backoff_max, &self.backoff_max);
        set(&mut p.max_consecutive_errors, &self.max_consecutive_errors);
        set(&mut p.give_up_after, &self.give_up_after);
        set(&mut p.max_attempts, &self.max_attempts);
        set(&mut p.contact, &self.contact);
        set(&mut p.user_agent, &self.user_agent);
        set(&mut c.fetch.concurrency, &self.concurrency);
        set(&mut c.fetch.connect_timeout, &self.connect_timeout);
        set(&mut c.fetch.timeout, &self.timeout);
        set(&mut c.fetch.max_body_bytes, &self.max_body_bytes);
        set(
            &mut c.fetch.allow_private_addresses,
            &self.allow_private_addresses,
        );
        set(&mut c.fetch.proxy, &self.proxy);
        set(&mut c.fetch.proxy_password_env, &self.proxy_password_env);
        for (name, value) in &self.headers {
            // One header per name, whatever its case: the flag's replaces the file's.
            c.fetch
                .headers
                .retain(|old, _| !old.eq_ignore_ascii_case(name));
            c.fetch.headers.insert(name.clone(), value.clone());
        }
        set(&mut c.fetch.cookies, &self.cookies);
        for entry in &self.resolve {
            // The flag's entry for a name replaces the file's.
            let name = |e: &str| e.split(':').next().unwrap_or("").to_ascii_lowercase();
            c.fetch.resolve.retain(|old| name(old) != name(entry));
            c.fetch.resolve.push(entry.clone());
        }
        if !self.dns_servers.is_empty() {
            c.fetch.dns_servers.clone_from(&self.dns_servers);
        }
        set(&mut c.fetch.ca_file, &self.ca_file);
        set(&mut c.extract.max_links_per_page, &self.max_links_per_page);
        set(&mut c.extract.follow_nofollow, &self.follow_nofollow);
        set(&mut c.extract.follow_frames, &self.follow_frames);
        set(
            &mut c.frontier.seen_initial_capacity,
            &self.seen_initial_capacity,
        );
        set(
            &mut c.frontier.seen_false_positive_rate,
            &self.seen_false_positive_rate,
        );
        set(&mut c.frontier.memory_budget_mib, &self.memory_budget_mib);
        set(&mut c.frontier.spill_dir, &self.spill_dir);
        set(&mut c.output.file, &self.output);
        set(&mut c.output.warc, &self.warc);
        set(&mut c.output.warc_max_bytes, &self.warc_max_bytes);
        set(&mut c.output.warc_revisits, &self.warc_revisits);
        set(&mut c.output.cdx, &self.cdx);
        set(&mut c.output.wacz, &self.wacz);
        set(&mut c.output.progress, &self.progress);
        set(&mut c.output.status_interval, &self.status_interval);
        set(&mut c.output.metrics, &self.metrics);
        set(&mut c.output.summary_json, &self.summary_json);
        set(&mut c.output.digest, &self.digest);
        set(&mut c.state.checkpoint_interval, &self.checkpoint_interval);
        set(&mut c.state.shutdown_grace, &self.shutdown_grace);
        set(
            &mut c.state.journal_sync_interval,
            &self.journal_sync_interval,
        );
        set(&mut c.redis.url, &self.redis_url);
        set(&mut c.redis.crawl_name, &self.crawl_name);
        set(&mut c.redis.lease_time, &self.lease_time);
        if let Some(n) = self.redis_buckets {
            c.redis.buckets = Some(n);
        }
        set(&mut c.redis.buckets_by, &self.redis_buckets_by);
        set(
            &mut c.redis.seen_initial_capacity,
            &self.redis_seen_initial_capacity,
        );
        c
    }
}

/// A `--header` value: `Name: value`, the name a valid header name (the value, and whether
/// the name is the config's to set, are checked with the config).
fn parse_header(text: &str) -> Result<(String, String), String> {
    let (name, value) = text
        .split_once(':')
        .ok_or_else(|| format!("{text:?}: expected \"Name: value\""))?;
    let name = name.trim();
    reqwest::header::HeaderName::from_bytes(name.as_bytes())
        .map_err(|_| format!("{name:?} is not a valid header name"))?;
    Ok((name.to_owned(), value.trim().to_owned()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_override_the_file() {
        let cli = Cli::try_parse_from([
            "crawler",
            "--seed",
            "http://a.example/",
            "--delay",
            "250ms",
            "--robots",
            "false",
            "--scope",
            "domains",
            "--exclude",
            "x",
        ])
        .unwrap();
        let config = cli.apply(Config::default());
        assert_eq!(config.politeness.delay, Duration::from_millis(250));
        assert!(!config.politeness.robots);
        assert_eq!(config.crawl.scope, Scope::Domains);
        assert_eq!(config.crawl.exclude, ["x"]);
        assert_eq!(config.fetch, Config::default().fetch);
    }

    #[test]
    fn a_bad_duration_names_the_flag() {
        let err = Cli::try_parse_from(["crawler", "--timeout", "5"]).unwrap_err();
        assert!(err.to_string().contains("--timeout"), "{err}");
    }

    #[test]
    fn sizes_take_units_and_the_contact_builds_the_user_agent() {
        let cli = Cli::try_parse_from([
            "crawler",
            "--max-body-bytes",
            "10MB",
            "--contact",
            "ops@example.org",
        ])
        .unwrap();
        let config = cli.apply(Config::default());
        assert_eq!(config.fetch.max_body_bytes, 10_000_000);
        assert_eq!(config.politeness.contact, "ops@example.org");
        assert!(
            config
                .politeness
                .user_agent()
                .ends_with(" (+ops@example.org)")
        );
        let cli = Cli::try_parse_from(["crawler", "--max-body-bytes", "10MiB"]).unwrap();
        assert_eq!(cli.apply(Config::default()).fetch.max_body_bytes, 10 << 20);
        let err = Cli::try_parse_from(["crawler", "--max-body-bytes", "ten"]).unwrap_err();
        assert!(err.to_string().contains("--max-body-bytes"), "{err}");
        assert!(err.to_string().contains("MiB"), "{err}");
    }

    #[test]
    fn headers_are_added_by_name_over_the_files() {
        let mut file = Config::default();
        file.fetch
            .headers
            .insert("accept-language".into(), "de".into());
        file.fetch.headers.insert("X-Keep".into(), "1".into());
        let cli = Cli::try_parse_from([
            "crawler",
            "--header",
            "Accept-Language: en, fr;q=0.5",
            "--header",
            "X-Token:abc",
            "--cookies",
            "true",
        ])
        .unwrap();
        let config = cli.apply(file);
        let headers: Vec<(&str, &str)> = config
            .fetch
            .headers
            .iter()
            .map(|(k, v)| (k.as_str(), v.as_str()))
            .collect();
        assert_eq!(
            headers,
            [
                ("Accept-Language", "en, fr;q=0.5"),
                ("X-Keep", "1"),
                ("X-Token", "abc")
            ]
        );
        assert!(config.fetch.cookies);
        for bad in ["no colon", "Bad Name: x"] {
            let err = Cli::try_parse_from(["crawler", "--header", bad]).unwrap_err();
            assert!(err.to_string().contains("--header"), "{err}");
        }
    }

    #[test]
    fn the_command_line_is_well_formed() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
