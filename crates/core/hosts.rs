//! Per-host settings: the config's `[[hosts]]` entries, matched against a host and combined
//! with the crawl's own settings into what that host gets ([`HostSettings`]): its politeness
//! (for the frontier), robots.txt obedience, request headers, cookies and credentials. The one
//! place that decides what a host gets, so that every frontier backend and the fetcher ask
//! the same question and get the same answer.
//!
//! # Matching and precedence
//!
//! An entry's `match` is a host (`docs.example.com`, any port), a host and a port
//! (`docs.example.com:8080`, that port only), or a domain pattern (`*.example.com`: the
//! domain itself and every subdomain). Every entry that matches a host applies, and for each
//! setting the most specific entry that sets it wins: host and port, then host, then domain
//! patterns from the longest domain to the shortest, then the crawl's own setting. Headers
//! combine name by name the same way, over `fetch.headers`. Credentials are one setting: the
//! most specific entry that has some wins, whole.
//!
//! # Secrets
//!
//! Entries name where a secret is (an environment variable, a file), never the secret: the
//! config, which the state directory keeps, holds no secret. [`HostRules::new`] reads them
//! once, at start; the `Authorization` value built from them is marked sensitive (left out of
//! debug output) and is only ever sent to a host its entry matches: the HTTP client follows
//! no redirect itself (a redirect's target is fetched as its own URL, with its own host's
//! settings).
//!
//! # Cost
//!
//! Without entries every host shares one [`HostSettings`]. With entries, a host's settings
//! are worked out once and kept (for hosts an entry matches; the others share the crawl's,
//! found in a few hash lookups of the host's suffixes), so a request costs a hash lookup.

use std::collections::{HashMap, HashSet};
use std::fmt::{self, Write as _};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Duration;

use reqwest::cookie::{CookieStore, Jar};
use reqwest::header::{self, HeaderMap, HeaderName, HeaderValue};
use url::Url;

use crate::config::{Config, HostEntry};

/// What one host gets: the crawl's settings with every matching `[[hosts]]` entry applied.
#[derive(Clone, Debug)]
pub(crate) struct HostSettings {
    /// The entries that matched (indexes into the config's `hosts`), most specific first.
    pub(crate) matched: Vec<usize>,
    /// The host's own delay; `None` for `politeness.delay`.
    pub(crate) delay: Option<Duration>,
    /// The host's own connection limit; `None` for `politeness.connections_per_host`.
    pub(crate) connections: Option<u32>,
    /// Whether robots.txt is fetched and obeyed.
    pub(crate) obey_robots: bool,
    /// Whether the host's cookies are kept and sent back to it.
    pub(crate) cookies: bool,
    /// Extra request headers: `fetch.headers` with the entries' over them.
    pub(crate) headers: HeaderMap,
    /// The `Authorization` header, marked sensitive; `None` without credentials.
    pub(crate) authorization: Option<HeaderValue>,
    /// Whether `authorization` may go over plain `http://`: only when the entry that gave
    /// it says `http://` in its `match`. Otherwise it goes over `https://` alone, where no one
    /// on the way can read it.
    pub(crate) authorization_over_http: bool,
    /// The most specific matched entry with a CA of its own (`ca_file`), whose client the
    /// host's requests go through; `None` for the crawl's client.
    pub(crate) ca_entry: Option<usize>,
}

/// The `[[hosts]]` entries, compiled, and every host's settings worked out so far.
pub(crate) struct HostRules {
    /// One per entry, in the config's order.
    rules: Vec<Rule>,
    /// Entries matching a host (`host`) or a host and port (`host:port`, as a host key
    /// spells it), by that text.
    exact: HashMap<String, usize>,
    /// Entries matching a domain and its subdomains, by the domain.
    domains: HashMap<String, usize>,
    /// The settings of a host no entry matches.
    base: Arc<HostSettings>,
    /// The settings of hosts some entry matches, by host key. A std lock, held for one
    /// lookup or insertion, never across an await.
    cache: RwLock<HashMap<Box<str>, Arc<HostSettings>>>,
    /// Whether any host keeps cookies: without, no cookie store is installed at all.
    cookies_anywhere: bool,
    /// The hosts whose credentials were withheld from a plain `http://` request, warned about
    /// once each. A std mutex, taken only when credentials are withheld.
    withheld: Mutex<HashSet<Box<str>>>,
}

/// One compiled entry.
struct Rule {
    entry: HostEntry,
    pattern: Pattern,
    /// The entry's `match` begins with `http://`: its credentials may go over plain http.
    plain_http: bool,
    headers: Vec<(HeaderName, HeaderValue)>,
    /// `None` without credentials.
    credentials: Option<Credentials>,
}

/// What an entry's `match` matches.
#[derive(Debug, PartialEq, Eq)]
enum Pattern {
    /// A host, on any port (`port: None`) or one port.
    Host { host: String, port: Option<u16> },
    /// A domain and its subdomains.
    Domain(String),
}

/// Credentials read at start.
struct Credentials {
    /// `basic` or `bearer`.
    scheme: &'static str,
    /// The basic user.
    user: Option<String>,
    /// Where the secret came from, to say so (never the secret).
    source: Source,
    /// The `Authorization` value, marked sensitive.
    header: HeaderValue,
}

/// Where a secret is.
enum Source {
    Env(String),
    File(PathBuf),
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Source::Env(var) => write!(f, "env {var}"),
            Source::File(path) => write!(f, "file {}", path.display()),
        }
    }
}

impl HostRules {
    /// Compiles the entries and reads their secrets. Errors name the entry (or
    /// `fetch.headers`) and what to fix.
    pub(crate) fn new(config: &Config) -> Result<HostRules, String> {
        let mut headers = HeaderMap::new();
        for (name, value) in &config.fetch.headers {
            let (name, value) =
                header_pair(name, value).map_err(|why| format!("fetch.headers: {why}"))?;
            if headers.insert(name.clone(), value).is_some() {
                return Err(format!("fetch.headers: {name} is given twice"));
            }
        }
        let mut rules = Vec::with_capacity(config.hosts.len());
        let mut exact = HashMap::new();
        let mut domains = HashMap::new();
        for (i, entry) in config.hosts.iter().enumerate() {
            let rule = Rule::compile(entry).map_err(|why| format!("{}: {why}", name(i, entry)))?;
            let (map, key) = match &rule.pattern {
                Pattern::Host { host, port: None } => (&mut exact, host.clone()),
                Pattern::Host {
                    host,
                    port: Some(port),
                } => (&mut exact, format!("{host}:{port}")),
                Pattern::Domain(domain) => (&mut domains, domain.clone()),
            };
            if let Some(&first) = map.get(&key) {
                return Err(format!(
                    "{}: matches what {} matches already: merge the two",
                    name(i, entry),
                    name(first, &config.hosts[first])
                ));
            }
            map.insert(key, i);
            rules.push(rule);
        }
        let cookies_anywhere =
            config.fetch.cookies || config.hosts.iter().any(|e| e.cookies == Some(true));
        let base = HostSettings {
            matched: Vec::new(),
            delay: None,
            connections: None,
            obey_robots: config.politeness.robots,
            cookies: config.fetch.cookies,
            headers,
            authorization: None,
            authorization_over_http: false,
            ca_entry: None,
        };
        Ok(HostRules {
            rules,
            exact,
            domains,
            base: Arc::new(base),
            cache: RwLock::new(HashMap::new()),
            cookies_anywhere,
            withheld: Mutex::new(HashSet::new()),
        })
    }

    /// The settings of a host, by its host key (`host` or `host:port`, as
    /// `Canonical::host_key` spells it).
    pub(crate) fn for_host(&self, key: &str) -> Arc<HostSettings> {
        if self.rules.is_empty() {
            return Arc::clone(&self.base);
        }
        let cached = self.cache.read().unwrap_or_else(PoisonError::into_inner);
        if let Some(settings) = cached.get(key) {
            return Arc::clone(settings);
        }
        drop(cached);
        let matched = self.matches(key);
        if matched.is_empty() {
            return Arc::clone(&self.base);
        }
        let settings = Arc::new(self.combine(matched));
        let mut cache = self.cache.write().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(cache.entry(key.into()).or_insert(settings))
    }

    /// The settings of a URL's host.
    pub(crate) fn for_url(&self, url: &Url) -> Arc<HostSettings> {
        self.for_host(host_key(url))
    }

    /// The host's own politeness, for the frontier.
    pub(crate) fn politeness(&self, key: &str) -> frontier::HostPoliteness {
        let settings = self.for_host(key);
        let mut own = frontier::HostPoliteness::new();
        if let Some(delay) = settings.delay {
            own = own.delay(delay);
        }
        if let Some(connections) = settings.connections {
            own = own.connections(connections);
        }
        own
    }

    /// The most connections any host may have: for the client's pool of idle ones.
    pub(crate) fn max_connections(&self, crawl: u32) -> u32 {
        self.rules
            .iter()
            .filter_map(|rule| rule.entry.connections)
            .fold(crawl, u32::max)
    }

    /// A cookie store keeping a jar per host, if any host keeps cookies.
    pub(crate) fn cookie_store(self: &Arc<Self>) -> Option<Arc<HostJars>> {
        self.cookies_anywhere.then(|| {
            Arc::new(HostJars {
                rules: Arc::clone(self),
                jars: RwLock::new(HashMap::new()),
            })
        })
    }

    /// Says, once per host, that its credentials were not sent with a plain `http://`
    /// request: the entry did not say `http://`, and a password sent in the clear can be read
    /// by anyone on the way.
    pub(crate) fn withheld_over_http(&self, url: &Url) {
        let key = host_key(url);
        let mut withheld = self.withheld.lock().unwrap_or_else(PoisonError::into_inner);
        if withheld.insert(key.into()) {
            tracing::warn!(
                "{key}: credentials not sent over plain http:// (from {url}); write the \
                 [[hosts]] entry's match as \"http://{key}\" to send them in the clear"
            );
        }
    }

    /// The entries matching a host key, most specific first.
    fn matches(&self, key: &str) -> Vec<usize> {
        let (host, port) = split_key(key);
        let mut matched = Vec::new();
        if port.is_some()
            && let Some(&i) = self.exact.get(key)
        {
            matched.push(i);
        }
        if let Some(&i) = self.exact.get(host) {
            matched.push(i);
        }
        if !self.domains.is_empty() && !is_ip(host) {
            let mut rest = host;
            loop {
                if let Some(&i) = self.domains.get(rest) {
                    matched.push(i);
                }
                match rest.split_once('.') {
                    Some((_, parent)) => rest = parent,
                    None => break,
                }
            }
        }
        matched
    }

    /// The crawl's settings with the matched entries applied, least specific first, so that
    /// the most specific one's settings are the ones left.
    fn combine(&self, matched: Vec<usize>) -> HostSettings {
        let mut settings = (*self.base).clone();
        for &i in matched.iter().rev() {
            let rule = &self.rules[i];
            let entry = &rule.entry;
            settings.delay = entry.delay.or(settings.delay);
            settings.connections = entry.connections.or(settings.connections);
            settings.obey_robots = entry.obey_robots.unwrap_or(settings.obey_robots);
            settings.cookies = entry.cookies.unwrap_or(settings.cookies);
            for (name, value) in &rule.headers {
                settings.headers.insert(name.clone(), value.clone());
            }
            if let Some(credentials) = &rule.credentials {
                settings.authorization = Some(credentials.header.clone());
                settings.authorization_over_http = rule.plain_http;
            }
            if entry.ca_file.is_some() {
                settings.ca_entry = Some(i);
            }
        }
        settings.matched = matched;
        settings
    }

    /// The effective settings of `key`'s host, in words, for `--explain-host`: which entries
    /// matched, and each setting with where it comes from. Credentials say where their
    /// secret is, never what it is.
    pub(crate) fn explain(&self, config: &Config, key: &str) -> String {
        let settings = self.for_host(key);
        let entry = |i: usize| name(i, &config.hosts[i]);
        // The most specific matched entry that sets a field, or the crawl's key.
        let from = |set: &dyn Fn(&HostEntry) -> bool, key: &str| {
            settings
                .matched
                .iter()
                .find(|&&i| set(&config.hosts[i]))
                .map_or_else(|| key.to_owned(), |&i| entry(i))
        };
        let p = &config.politeness;
        let mut out = String::new();
        let _ = writeln!(out, "host: {key}");
        if settings.matched.is_empty() {
            let _ = writeln!(out, "matched: no [[hosts]] entry; the crawl's settings");
        } else {
            let list: Vec<String> = settings.matched.iter().map(|&i| entry(i)).collect();
            let _ = writeln!(out, "matched (most specific first): {}", list.join(", "));
        }
        let delay = settings.delay.unwrap_or(p.delay);
        let _ = write!(
            out,
            "delay: {} ({})",
            show_duration(delay),
            from(&|e| e.delay.is_some(), "politeness.delay")
        );
        if settings.obey_robots {
            let _ = write!(
                out,
                "; a longer robots.txt Crawl-delay (up to {}) wins",
                show_duration(p.max_crawl_delay)
            );
        }
        out.push('\n');
        let _ = writeln!(
            out,
            "connections: {} ({})",
            settings.connections.unwrap_or(p.connections_per_host),
            from(
                &|e| e.connections.is_some(),
                "politeness.connections_per_host"
            )
        );
        let _ = writeln!(
            out,
            "robots.txt: {} ({})",
            if settings.obey_robots {
                "obeyed"
            } else {
                "not fetched, not obeyed"
            },
            from(&|e| e.obey_robots.is_some(), "politeness.robots")
        );
        let _ = writeln!(
            out,
            "cookies: {} ({})",
            if settings.cookies {
                "kept, in a jar of this host's own"
            } else {
                "off"
            },
            from(&|e| e.cookies.is_some(), "fetch.cookies")
        );
        if settings.headers.is_empty() {
            let _ = writeln!(out, "headers: none besides the crawler's own");
        } else {
            let _ = writeln!(out, "headers:");
            for (name, value) in &settings.headers {
                let source = from(
                    &|e| {
                        e.headers
                            .keys()
                            .any(|n| n.eq_ignore_ascii_case(name.as_str()))
                    },
                    "fetch.headers",
                );
                let value = if crate::config::is_secret_header(name.as_str()) {
                    "*** (hidden: its name says it is a secret)".into()
                } else {
                    String::from_utf8_lossy(value.as_bytes())
                };
                let _ = writeln!(out, "  {name}: {value} ({source})");
            }
        }
        let credentials = settings
            .matched
            .iter()
            .find_map(|&i| self.rules[i].credentials.as_ref().map(|c| (i, c)));
        match credentials {
            None => {
                let _ = writeln!(out, "credentials: none");
            }
            Some((i, c)) => {
                let user = c
                    .user
                    .as_ref()
                    .map(|user| format!(", user {user:?}"))
                    .unwrap_or_default();
                let over = if self.rules[i].plain_http {
                    "over https:// and plain http:// (its match says http://)"
                } else {
                    "over https:// only"
                };
                let _ = writeln!(
                    out,
                    "credentials: {}{user}, secret from {} ({}); sent only to the hosts that \
                     entry matches, {over}, never on a redirect to another",
                    c.scheme,
                    c.source,
                    entry(i)
                );
            }
        }
        let ca = match settings.ca_entry {
            Some(i) => format!(
                "{} and the system's ({})",
                config.hosts[i]
                    .ca_file
                    .as_deref()
                    .unwrap_or(std::path::Path::new(""))
                    .display(),
                entry(i)
            ),
            None if !config.fetch.ca_file.as_os_str().is_empty() => format!(
                "{} and the system's (fetch.ca_file)",
                config.fetch.ca_file.display()
            ),
            None => "the system's".to_owned(),
        };
        let _ = writeln!(out, "certificates trusted: {ca}");
        out
    }
}

impl Rule {
    fn compile(entry: &HostEntry) -> Result<Rule, String> {
        let text = entry.pattern.trim();
        let (plain_http, text) = match text.strip_prefix("http://") {
            Some(rest) => (true, rest),
            None => (false, text.strip_prefix("https://").unwrap_or(text)),
        };
        let pattern = Pattern::parse(text.strip_suffix('/').unwrap_or(text))?;
        if entry.connections == Some(0) {
            return Err("connections: must be at least 1".into());
        }
        if entry
            .delay
            .is_some_and(|d| d > frontier::Politeness::MAX_DURATION)
        {
            return Err("delay: longer than a year".into());
        }
        let mut headers = Vec::with_capacity(entry.headers.len());
        for (name, value) in &entry.headers {
            let (name, value) =
                header_pair(name, value).map_err(|why| format!("headers: {why}"))?;
            // Names differ in case only: one would silently replace the other.
            if headers.iter().any(|(seen, _)| *seen == name) {
                return Err(format!("headers: {name} is given twice"));
            }
            headers.push((name, value));
        }
        let credentials = credentials(entry)?;
        Ok(Rule {
            entry: entry.clone(),
            pattern,
            plain_http,
            headers,
            credentials,
        })
    }
}

impl Pattern {
    /// Parses `host`, `host:port`, `[v6]:port` or `*.domain`; hosts are lowercased and
    /// internationalized names put in their ASCII form, as URLs' hosts are.
    fn parse(text: &str) -> Result<Pattern, String> {
        let text = text.trim();
        let hint = "write a host (docs.example.com), a host and port (docs.example.com:8080) \
                    or a domain pattern (*.example.com)";
        if text.is_empty() {
            return Err(format!("match: empty; {hint}"));
        }
        if text.contains("://") || text.contains('/') {
            return Err(format!("match: {text:?} is not a host; {hint}"));
        }
        if let Some(domain) = text.strip_prefix("*.") {
            let bad = || format!("match: {text:?}: *. must be followed by a domain name; {hint}");
            if domain.contains(['*', ':']) {
                return Err(bad());
            }
            return match url::Host::parse(domain) {
                Ok(url::Host::Domain(domain)) if !domain.is_empty() => {
                    Ok(Pattern::Domain(domain.trim_end_matches('.').to_owned()))
                }
                _ => Err(bad()),
            };
        }
        if text.contains('*') {
            return Err(format!(
                "match: {text:?}: a * is only allowed as the first label (*.example.com); {hint}"
            ));
        }
        let (host, port) = match text.strip_prefix('[') {
            Some(rest) => {
                let (inside, after) = rest
                    .split_once(']')
                    .ok_or_else(|| format!("match: {text:?}: no closing ]"))?;
                let port = match after {
                    "" => None,
                    _ => Some(after.strip_prefix(':').ok_or_else(|| {
                        format!("match: {text:?}: a port follows the ] after a colon")
                    })?),
                };
                (&text[..inside.len() + 2], port)
            }
            None => match text.split_once(':') {
                Some((_, after)) if after.contains(':') => {
                    return Err(format!(
                        "match: {text:?}: write an IPv6 address in brackets: [::1]"
                    ));
                }
                Some((host, port)) => (host, Some(port)),
                None => (text, None),
            },
        };
        let port = port
            .map(|port| {
                port.parse::<u16>()
                    .map_err(|_| format!("match: {text:?}: {port:?} is not a port"))
            })
            .transpose()?;
        let host = match url::Host::parse(host) {
            Ok(url::Host::Domain(domain)) if domain.is_empty() => {
                return Err(format!("match: {text:?}: no host; {hint}"));
            }
            Ok(host) => host.to_string().trim_end_matches('.').to_owned(),
            Err(err) => return Err(format!("match: {text:?}: not a host name ({err}); {hint}")),
        };
        Ok(Pattern::Host { host, port })
    }
}

/// A header from the config, checked: a valid name and value, and not one the crawler sets
/// itself.
fn header_pair(name: &str, value: &str) -> Result<(HeaderName, HeaderValue), String> {
    let parsed = HeaderName::from_bytes(name.trim().as_bytes())
        .map_err(|_| format!("{name:?} is not a valid header name"))?;
    if let Some(why) = managed(&parsed) {
        return Err(format!("{name:?} cannot be set here: {why}"));
    }
    let value = HeaderValue::from_str(value.trim()).map_err(|_| {
        format!("{name}: {value:?} is not a valid header value (no control characters)")
    })?;
    Ok((parsed, value))
}

/// Why a header is not the config's to set, if it is not.
fn managed(name: &HeaderName) -> Option<&'static str> {
    Some(match *name {
        header::USER_AGENT => "set politeness.user_agent (robots.txt rules are matched against it)",
        header::AUTHORIZATION => {
            "give credentials in a [[hosts]] entry (basic_user with basic_password_env or \
             basic_password_file, or bearer_token_env or bearer_token_file), so that the \
             secret stays out of the config"
        }
        header::PROXY_AUTHORIZATION => "put the proxy's credentials in fetch.proxy",
        header::HOST
        | header::CONTENT_LENGTH
        | header::TRANSFER_ENCODING
        | header::CONNECTION
        | header::TE
        | header::TRAILER
        | header::UPGRADE
        | header::ACCEPT_ENCODING => "the HTTP client sets it",
        _ if name.as_str() == "keep-alive" => "the HTTP client sets it",
        _ => return None,
    })
}

/// The entry's credentials, checked and read.
fn credentials(entry: &HostEntry) -> Result<Option<Credentials>, String> {
    let basic = entry.basic_user.is_some()
        || entry.basic_password_env.is_some()
        || entry.basic_password_file.is_some();
    let bearer = entry.bearer_token_env.is_some() || entry.bearer_token_file.is_some();
    if basic && bearer {
        return Err("both basic and bearer credentials: give one kind".into());
    }
    let source = |env: &Option<String>, file: &Option<PathBuf>, what: &str| match (env, file) {
        (Some(_), Some(_)) => Err(format!(
            "both {what}_env and {what}_file: give one place for the secret"
        )),
        (Some(var), None) => {
            if var.is_empty() || var.contains(['=', '\0']) {
                Err(format!(
                    "{what}_env: {var:?} is not an environment variable name"
                ))
            } else {
                Ok(Some(Source::Env(var.clone())))
            }
        }
        (None, Some(path)) => Ok(Some(Source::File(path.clone()))),
        (None, None) => Ok(None),
    };
    let (scheme, user, source, key) = if basic {
        let Some(user) = &entry.basic_user else {
            return Err("basic_password_env or basic_password_file without basic_user".into());
        };
        if user.contains(':') || user.chars().any(char::is_control) {
            return Err(format!(
                "basic_user: {user:?} may hold no colon and no control characters"
            ));
        }
        let Some(source) = source(
            &entry.basic_password_env,
            &entry.basic_password_file,
            "basic_password",
        )?
        else {
            return Err(
                "basic_user without a password: set basic_password_env or basic_password_file"
                    .into(),
            );
        };
        ("basic", Some(user.clone()), source, "basic_password")
    } else if bearer {
        let source = source(
            &entry.bearer_token_env,
            &entry.bearer_token_file,
            "bearer_token",
        )?
        .expect("one of the two is set");
        ("bearer", None, source, "bearer_token")
    } else {
        return Ok(None);
    };
    let secret = read_secret(&source).map_err(|why| match &source {
        Source::Env(_) => format!("{key}_env: {why}"),
        Source::File(_) => format!("{key}_file: {why}"),
    })?;
    let text = match &user {
        Some(user) => {
            let pair = format!("{user}:{secret}");
            format!("Basic {}", data_encoding::BASE64.encode(pair.as_bytes()))
        }
        None => format!("Bearer {secret}"),
    };
    let mut header = HeaderValue::from_str(&text).map_err(|_| {
        format!("{key}: the secret read from {source} holds characters a header cannot carry")
    })?;
    header.set_sensitive(true);
    Ok(Some(Credentials {
        scheme,
        user,
        source,
        header,
    }))
}

/// A secret, from where it is: the variable's value, or the file's text without its final
/// line break. Empty is an error: a secret left unset by mistake.
fn read_secret(source: &Source) -> Result<String, String> {
    let secret = match source {
        Source::Env(var) => std::env::var(var).map_err(|err| match err {
            std::env::VarError::NotPresent => {
                format!("the environment variable {var} is not set")
            }
            std::env::VarError::NotUnicode(_) => {
                format!("the environment variable {var} is not valid UTF-8")
            }
        })?,
        Source::File(path) => {
            let mut text = std::fs::read_to_string(path)
                .map_err(|err| format!("cannot read {}: {err}", path.display()))?;
            if text.ends_with('\n') {
                text.pop();
                if text.ends_with('\r') {
                    text.pop();
                }
            }
            text
        }
    };
    if secret.is_empty() {
        return Err(format!("{source} is empty"));
    }
    Ok(secret)
}

/// How an entry is named in messages: its place (from 1) and its `match`.
fn name(i: usize, entry: &HostEntry) -> String {
    format!("[[hosts]] #{} (match = {:?})", i + 1, entry.pattern)
}

/// A URL's host key: host and port, as `Canonical::host_key` spells it for a canonical URL.
pub(crate) fn host_key(url: &Url) -> &str {
    &url[url::Position::BeforeHost..url::Position::AfterPort]
}

/// A host key's host and port.
fn split_key(key: &str) -> (&str, Option<&str>) {
    let colon = match key.rfind(']') {
        Some(bracket) => key[bracket..].find(':').map(|c| bracket + c),
        None => key.rfind(':'),
    };
    match colon {
        Some(c) => (&key[..c], Some(&key[c + 1..])),
        None => (key, None),
    }
}

/// Whether a host is an IP address, which no domain pattern matches.
fn is_ip(host: &str) -> bool {
    host.starts_with('[') || host.parse::<std::net::Ipv4Addr>().is_ok()
}

/// A duration as the config writes it.
pub(crate) fn show_duration(d: Duration) -> String {
    match d.as_millis() {
        0 => "0".to_owned(),
        ms if ms.is_multiple_of(1000) => format!("{}s", ms / 1000),
        ms => format!("{ms}ms"),
    }
}

/// Cookies, a jar per host: what a host sets is sent back to that host alone (host and
/// port, the host key politeness counts by), whatever `Domain` attribute it gives. Stricter
/// than RFC 6265, where `Domain=example.com` set by `a.example.com` would also go to
/// `b.example.com`: a crawler visits many hosts of a domain, and one host's session should
/// not leak into another's requests. Within a jar, reqwest's [`Jar`] keeps to the cookies'
/// paths, expiry and `Secure`.
pub(crate) struct HostJars {
    rules: Arc<HostRules>,
    /// A std lock, held for one lookup or insertion, never across an await.
    jars: RwLock<HashMap<Box<str>, Arc<Jar>>>,
}

impl CookieStore for HostJars {
    fn set_cookies(&self, cookie_headers: &mut dyn Iterator<Item = &HeaderValue>, url: &Url) {
        let key = host_key(url);
        if !self.rules.for_host(key).cookies {
            return;
        }
        let jar = {
            let jars = self.jars.read().unwrap_or_else(PoisonError::into_inner);
            jars.get(key).cloned()
        };
        let jar = jar.unwrap_or_else(|| {
            let mut jars = self.jars.write().unwrap_or_else(PoisonError::into_inner);
            Arc::clone(jars.entry(key.into()).or_default())
        });
        jar.set_cookies(cookie_headers, url);
    }

    fn cookies(&self, url: &Url) -> Option<HeaderValue> {
        let key = host_key(url);
        if !self.rules.for_host(key).cookies {
            return None;
        }
        let jar = {
            let jars = self.jars.read().unwrap_or_else(PoisonError::into_inner);
            jars.get(key).cloned()
        }?;
        jar.cookies(url)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config(toml: &str) -> Config {
        Config::from_toml(toml).unwrap()
    }

    fn error(toml: &str) -> String {
        let config = Config::from_toml(toml).unwrap();
        HostRules::new(&config).err().expect("refused")
    }

    #[test]
    fn patterns_read_hosts_ports_and_domains() {
        let host = |h: &str, port| Pattern::Host {
            host: h.into(),
            port,
        };
        assert_eq!(
            Pattern::parse("Docs.Example.com"),
            Ok(host("docs.example.com", None))
        );
        assert_eq!(
            Pattern::parse("docs.example.com:8080"),
            Ok(host("docs.example.com", Some(8080)))
        );
        assert_eq!(Pattern::parse("127.0.0.1"), Ok(host("127.0.0.1", None)));
        assert_eq!(Pattern::parse("[::1]:80"), Ok(host("[::1]", Some(80))));
        assert_eq!(
            Pattern::parse("bücher.example"),
            Ok(host("xn--bcher-kva.example", None))
        );
        assert_eq!(
            Pattern::parse("*.Example.com"),
            Ok(Pattern::Domain("example.com".into()))
        );
        for bad in [
            "",
            "*",
            "*.",
            "https://example.com/",
            "example.com/x",
            "a.*.example.com",
            "*.example.com:80",
            "*.127.0.0.1",
            "::1",
            "example.com:http",
            "a b",
            "[::1",
        ] {
            assert!(Pattern::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_most_specific_entry_wins_setting_by_setting() {
        let rules = HostRules::new(&config(
            r#"
            [politeness]
            delay = "1s"
            [fetch.headers]
            Accept-Language = "en"
            X-Crawl = "global"
            [[hosts]]
            match = "*.example.com"
            delay = "2s"
            connections = 2
            headers = { X-Crawl = "domain", X-Team = "all" }
            [[hosts]]
            match = "docs.example.com"
            delay = "250ms"
            headers = { X-Crawl = "docs" }
            [[hosts]]
            match = "docs.example.com:8443"
            obey_robots = false
            "#,
        ))
        .unwrap();
        let docs = rules.for_host("docs.example.com:8443");
        assert_eq!(docs.matched, [2, 1, 0]);
        assert_eq!(docs.delay, Some(Duration::from_millis(250)));
        assert_eq!(docs.connections, Some(2));
        assert!(!docs.obey_robots);
        assert_eq!(docs.headers["x-crawl"], "docs");
        assert_eq!(docs.headers["x-team"], "all");
        assert_eq!(docs.headers["accept-language"], "en");
        // Another port of the host: not the port's entry.
        assert!(rules.for_host("docs.example.com").obey_robots);
        // The domain itself and a deeper subdomain.
        for host in ["example.com", "a.b.example.com"] {
            let s = rules.for_host(host);
            assert_eq!(s.matched, [0], "{host}");
            assert_eq!(s.delay, Some(Duration::from_secs(2)));
        }
        // Not a suffix at a label boundary, and an IP address: the crawl's settings.
        for host in ["notexample.com", "example.com.evil", "127.0.0.1:8080"] {
            let s = rules.for_host(host);
            assert!(s.matched.is_empty(), "{host}");
            assert_eq!(s.delay, None);
            assert_eq!(s.headers["x-crawl"], "global");
        }
        assert_eq!(rules.max_connections(1), 2);
        assert_eq!(
            rules.politeness("example.com"),
            frontier::HostPoliteness::new()
                .delay(Duration::from_secs(2))
                .connections(2)
        );
    }

    #[test]
    fn credentials_come_from_the_environment_or_a_file_and_stay_secret() {
        let dir = tempfile::tempdir().unwrap();
        let token = dir.path().join("token");
        std::fs::write(&token, "t0ken\n").unwrap();
        // A variable every environment has, rather than one set here: setting one is unsafe
        // with other tests' threads running.
        let path = std::env::var("PATH").expect("PATH is set");
        let rules = HostRules::new(&config(&format!(
            r#"
            [[hosts]]
            match = "a.example"
            basic_user = "bot"
            basic_password_env = "PATH"
            [[hosts]]
            match = "b.example"
            bearer_token_file = {token:?}
            "#
        )))
        .unwrap();
        let a = rules.for_host("a.example");
        let encoded = data_encoding::BASE64.encode(format!("bot:{path}").as_bytes());
        assert_eq!(
            a.authorization.as_ref().unwrap(),
            format!("Basic {encoded}").as_str()
        );
        assert!(a.authorization.as_ref().unwrap().is_sensitive());
        assert!(!format!("{a:?}").contains(&encoded));
        assert_eq!(
            rules.for_host("b.example").authorization.as_ref().unwrap(),
            "Bearer t0ken"
        );
        assert!(rules.for_host("c.example").authorization.is_none());
    }

    #[test]
    fn bad_entries_are_named_with_what_to_fix() {
        let cases = [
            (
                "[[hosts]]\nmatch = \"a.example\"\nconnections = 0\n",
                "connections",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nheaders = { \"Bad Name\" = \"x\" }\n",
                "not a valid header name",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nheaders = { X = \"a\\nb\" }\n",
                "not a valid header value",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nheaders = { Authorization = \"x\" }\n",
                "bearer_token_env",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nbasic_user = \"u\"\nbasic_password_env = \"X\"\nbearer_token_env = \"Y\"\n",
                "both basic and bearer",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nbasic_user = \"u\"\n",
                "without a password",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nbearer_token_env = \"A\"\nbearer_token_file = \"/x\"\n",
                "both bearer_token_env and bearer_token_file",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nbasic_user = \"u\"\nbasic_password_env = \"CRAWLER_TEST_SURELY_UNSET\"\n",
                "CRAWLER_TEST_SURELY_UNSET is not set",
            ),
            (
                "[[hosts]]\nmatch = \"a.example\"\nbearer_token_file = \"/surely/not/here\"\n",
                "cannot read /surely/not/here",
            ),
            ("[[hosts]]\nmatch = \"a.*.example\"\n", "first label"),
            (
                "[[hosts]]\nmatch = \"A.example\"\n[[hosts]]\nmatch = \"a.example\"\n",
                "#1",
            ),
            ("[fetch.headers]\nUser-Agent = \"x\"\n", "fetch.headers"),
            (
                "[[hosts]]\nmatch = \"a.example\"\nheaders = { X-A = \"1\", x-a = \"2\" }\n",
                "x-a is given twice",
            ),
            ("[fetch.headers]\nX-A = \"1\"\nx-a = \"2\"\n", "given twice"),
        ];
        for (toml, expected) in cases {
            let err = error(toml);
            assert!(err.contains(expected), "{toml}: {err}");
            if toml.contains("[[hosts]]") {
                assert!(err.starts_with("[[hosts]] #"), "{err}");
            }
        }
    }

    #[test]
    fn explaining_names_the_sources_and_hides_the_secret() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("pw");
        std::fs::write(&file, "hunter2").unwrap();
        let config = config(&format!(
            r#"
            [fetch.headers]
            Accept-Language = "en"
            [[hosts]]
            match = "*.example.com"
            connections = 4
            [[hosts]]
            match = "docs.example.com"
            delay = "250ms"
            cookies = true
            headers = {{ X-Team = "docs" }}
            basic_user = "bot"
            basic_password_file = {file:?}
            "#
        ));
        let rules = HostRules::new(&config).unwrap();
        let text = rules.explain(&config, "docs.example.com");
        for expected in [
            "[[hosts]] #2 (match = \"docs.example.com\"), [[hosts]] #1",
            "delay: 250ms ([[hosts]] #2",
            "connections: 4 ([[hosts]] #1",
            "robots.txt: obeyed (politeness.robots)",
            "cookies: kept",
            "accept-language: en (fetch.headers)",
            "x-team: docs ([[hosts]] #2",
            "credentials: basic, user \"bot\", secret from file",
        ] {
            assert!(text.contains(expected), "{expected:?} in\n{text}");
        }
        assert!(!text.contains("hunter2"), "{text}");
        let other = rules.explain(&config, "example.org");
        assert!(other.contains("no [[hosts]] entry"), "{other}");
        assert!(other.contains("credentials: none"), "{other}");
    }

    #[test]
    fn host_keys_split_into_host_and_port() {
        assert_eq!(split_key("a.example"), ("a.example", None));
        assert_eq!(split_key("a.example:8080"), ("a.example", Some("8080")));
        assert_eq!(split_key("[::1]"), ("[::1]", None));
        assert_eq!(split_key("[::1]:8080"), ("[::1]", Some("8080")));
    }

    #[test]
    fn cookies_go_back_to_the_host_that_set_them_alone() {
        let rules = Arc::new(
            HostRules::new(&config(
                "[[hosts]]\nmatch = \"*.example.com\"\ncookies = true\n",
            ))
            .unwrap(),
        );
        let jars = rules.cookie_store().expect("cookies somewhere");
        let a = Url::parse("http://a.example.com/").unwrap();
        let b = Url::parse("http://b.example.com/").unwrap();
        let other = Url::parse("http://other.example/").unwrap();
        let set = HeaderValue::from_static("session=1; Domain=example.com; Path=/");
        jars.set_cookies(&mut std::iter::once(&set), &a);
        assert_eq!(jars.cookies(&a).unwrap(), "session=1");
        // The same domain, by RFC 6265 a match: not here, another host's jar.
        assert!(jars.cookies(&b).is_none());
        // A host without cookies keeps none.
        let set = HeaderValue::from_static("x=1");
        jars.set_cookies(&mut std::iter::once(&set), &other);
        assert!(jars.cookies(&other).is_none());
        let off = Arc::new(HostRules::new(&Config::default()).unwrap());
        assert!(off.cookie_store().is_none());
    }
}
