//! HTTP: one shared client, and a GET that reads at most a capped number of body bytes.

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, SystemTime};

use reqwest::header::{
    AUTHORIZATION, CONTENT_TYPE, ETAG, IF_MODIFIED_SINCE, IF_NONE_MATCH, LAST_MODIFIED, LOCATION,
    RETRY_AFTER,
};
use reqwest::{Client, redirect};
use url::Url;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::Instant;

use crate::config::Config;
use crate::dns::Unresolved;
use crate::errors::ErrorKind;
use crate::guard::{Blocked, Guard, GuardedResolver};
use crate::hosts::HostRules;

/// The one client every fetch shares: connection pools, keep-alive and HTTP/2 are per
/// client, so one client means reused connections.
///
/// Redirects are not followed: a redirect's target is a link like any other, pushed through
/// the frontier to be canonicalized, deduplicated, scoped and fetched politely; and fetched
/// with its own host's headers and credentials, so that a host's credentials never reach
/// another host through a redirect.
///
/// Cookies, when a host keeps them, go to a jar of that host's own (see `HostJars`).
///
/// A `[[hosts]]` entry that trusts a CA of its own (`ca_file`) gets a client of its own, the
/// same but for that CA: what one site's private CA signs is trusted for that site alone.
pub(crate) fn clients(
    config: &Config,
    guard: Arc<Guard>,
    hosts: &Arc<HostRules>,
    proxy: Option<reqwest::Proxy>,
) -> Result<Clients, String> {
    let crawl_ca = ca_certificates(&config.fetch.ca_file)
        .map_err(|e| format!("bad setting: fetch.ca_file: {e}"))?
        .unwrap_or_default();
    let build = |extra: Vec<reqwest::Certificate>| {
        client(config, Arc::clone(&guard), hosts, proxy.clone(), extra)
    };
    let mut by_entry = std::collections::HashMap::new();
    for (i, entry) in config.hosts.iter().enumerate() {
        if let Some(path) = &entry.ca_file {
            let own = ca_certificates(path)
                .map_err(|e| format!("bad setting: [[hosts]] {:?} ca_file: {e}", entry.pattern))?
                .unwrap_or_default();
            by_entry.insert(i, build([crawl_ca.clone(), own].concat())?);
        }
    }
    Ok(Clients {
        crawl: build(crawl_ca)?,
        by_entry,
    })
}

/// The crawl's client, and those of `[[hosts]]` entries with a CA of their own.
pub(crate) struct Clients {
    /// Every host's but those below.
    pub(crate) crawl: Client,
    /// The client of each entry (its index in `hosts`) that trusts a CA of its own.
    pub(crate) by_entry: std::collections::HashMap<usize, Client>,
}

/// One client: the crawl's settings, trusting `ca` besides the system's roots.
fn client(
    config: &Config,
    guard: Arc<Guard>,
    hosts: &Arc<HostRules>,
    proxy: Option<reqwest::Proxy>,
    ca: Vec<reqwest::Certificate>,
) -> Result<Client, String> {
    // No proxy from the environment: through one, the resolver would see the proxy's name,
    // not the target's, and the SSRF guard's second check would be gone. An explicit one is
    // the user's choice (an explicit proxy also turns the environment's off); the guard's
    // check before each fetch remains.
    let builder = match proxy {
        None => Client::builder().no_proxy(),
        Some(proxy) => Client::builder().proxy(proxy),
    };
    let builder = match hosts.cookie_store() {
        Some(jars) => builder.cookie_provider(jars),
        None => builder,
    };
    let builder = if ca.is_empty() {
        builder
    } else {
        builder.tls_certs_merge(ca)
    };
    let connections = hosts.max_connections(config.politeness.connections_per_host);
    builder
        .dns_resolver(GuardedResolver(guard))
        .user_agent(&config.politeness.user_agent)
        .redirect(redirect::Policy::none())
        .connect_timeout(config.fetch.connect_timeout)
        .timeout(config.fetch.timeout)
        .pool_max_idle_per_host(connections as usize)
        .tcp_nodelay(true)
        .build()
        .map_err(|e| {
            let mut text = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(cause) = source {
                text = format!("{text}: {cause}");
                source = cause.source();
            }
            format!(
                "cannot set up the HTTP client: {text} (is politeness.user_agent a valid \
                 header value?)"
            )
        })
}

/// The CA certificates of a PEM file (`fetch.ca_file`, an entry's `ca_file`), if one is
/// set: read at start, so that a missing or unreadable file stops the crawler before it
/// fetches anything.
fn ca_certificates(path: &std::path::Path) -> Result<Option<Vec<reqwest::Certificate>>, String> {
    if path.as_os_str().is_empty() {
        return Ok(None);
    }
    let bad = |why: String| format!("{}: {why}", path.display());
    let pem = std::fs::read(path).map_err(|e| bad(e.to_string()))?;
    let certificates =
        reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| bad(e.to_string()))?;
    if certificates.is_empty() {
        return Err(bad(
            "holds no PEM certificate (-----BEGIN CERTIFICATE-----)".into(),
        ));
    }
    Ok(Some(certificates))
}

/// What fetches a URL for the workers and the robots.txt cache: the HTTP client, or in
/// tests a fake site.
pub(crate) trait Fetcher: Send + Sync {
    /// GETs `url`, reading at most `max_body` bytes of its (decompressed) body, and keeping
    /// every header if `keep_headers`; with `validators`, conditionally (`If-None-Match`,
    /// `If-Modified-Since`), so that an unchanged page answers 304 without a body.
    fn get<'a>(
        &'a self,
        url: &'a Url,
        max_body: u64,
        keep_headers: bool,
        validators: Option<&'a Validators>,
    ) -> Pin<Box<dyn Future<Output = Result<Fetched, FetchError>> + Send + 'a>>;
}

/// The validators of an earlier answer for a URL.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Validators {
    /// Its `ETag` header, as sent.
    pub(crate) etag: Option<Box<str>>,
    /// Its `Last-Modified` header, in seconds since the Unix epoch.
    pub(crate) last_modified: Option<u64>,
}

/// The HTTP client as a [`Fetcher`], sending each host its own headers and credentials.
pub(crate) struct Http {
    /// The clients now (see [`clients`]).
    clients: RwLock<Arc<Clients>>,
    /// The same, built ahead to take their place (see [`Http::shed_idle`]): building them
    /// reads the system's CA certificates, a file it could not open then.
    spare: Arc<Mutex<Option<Clients>>>,
    /// Builds them anew, with the same settings.
    rebuild: Arc<dyn Fn() -> Result<Clients, String> + Send + Sync>,
    /// Whether a spare is being built.
    building: Arc<AtomicBool>,
    /// When they were last built anew.
    shed_at: Mutex<Option<Instant>>,
    /// Requests that failed for want of this machine's resources since the last warning,
    /// and when that was.
    local_failures: Mutex<(u64, Option<Instant>)>,
    /// Each host's headers and credentials, added to each request for its URL's host alone.
    hosts: Arc<HostRules>,
}

/// How often, at most, the clients give way to a spare to drop their idle connections.
const SHED_EVERY: Duration = Duration::from_secs(1);

impl Http {
    /// The fetcher of `clients`, which `rebuild` builds again with the same settings.
    pub(crate) fn new(
        clients: Clients,
        rebuild: impl Fn() -> Result<Clients, String> + Send + Sync + 'static,
        hosts: Arc<HostRules>,
    ) -> Http {
        let spare = rebuild()
            .inspect_err(|err| tracing::warn!("building a spare HTTP client: {err}"))
            .ok();
        Http {
            clients: RwLock::new(Arc::new(clients)),
            spare: Arc::new(Mutex::new(spare)),
            rebuild: Arc::new(rebuild),
            building: Arc::new(AtomicBool::new(false)),
            shed_at: Mutex::new(None),
            local_failures: Mutex::new((0, None)),
            hosts,
        }
    }

    /// Drops every idle connection, the spare clients taking the place of the clients: a
    /// client's pool keeps a connection to each host it fetched from for a while (90 s), one
    /// open file each, and a crawl of thousands of hosts can hold more than the process may
    /// open; a request then fails for want of a file (see [`FetchError::local`]). The old
    /// clients' pool, and the idle connections in it, close once the requests under way on
    /// them have ended (a fetch's timeout at most). Once a second at most.
    fn shed_idle(&self, err: &FetchError) {
        self.warn_local(err);
        {
            let mut at = self.shed_at.lock().unwrap_or_else(PoisonError::into_inner);
            if at.is_some_and(|at| at.elapsed() < SHED_EVERY) {
                return;
            }
            *at = Some(Instant::now());
        }
        let spare = self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        match spare {
            Some(clients) => {
                *self.clients.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(clients);
                tracing::debug!("out of open files: idle connections closed");
            }
            None => tracing::debug!("out of open files, and no spare client yet"),
        }
    }

    /// Builds spare clients in the background if there are none (see
    /// [`shed_idle`](Self::shed_idle)): after a request that could be made, as files are
    /// to be had again.
    fn build_spare(&self) {
        if self
            .spare
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_some()
            || self.building.swap(true, Ordering::Relaxed)
        {
            return;
        }
        let (spare, rebuild, building) = (
            Arc::clone(&self.spare),
            Arc::clone(&self.rebuild),
            Arc::clone(&self.building),
        );
        /// Says no spare is being built any more, however the building ends (a panic too).
        struct Built(Arc<AtomicBool>);
        impl Drop for Built {
            fn drop(&mut self) {
                self.0.store(false, Ordering::Relaxed);
            }
        }
        tokio::task::spawn_blocking(move || {
            let _built = Built(building);
            match rebuild() {
                Ok(clients) => {
                    *spare.lock().unwrap_or_else(PoisonError::into_inner) = Some(clients);
                }
                Err(err) => tracing::debug!("building a spare HTTP client: {err}"),
            }
        });
    }

    /// Says, once a minute at most, that requests fail for want of this machine's
    /// resources, and how many.
    fn warn_local(&self, err: &FetchError) {
        let mut failures = self
            .local_failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        failures.0 += 1;
        if failures
            .1
            .is_some_and(|at| at.elapsed() < LOCAL_WARNING_EVERY)
        {
            return;
        }
        tracing::warn!(
            "{} request(s) could not be made for want of this machine's resources ({}): their \
             URLs go back in line and are fetched again in a moment, and the idle connections \
             are closed. To keep more connections open, raise the limit on open files \
             (ulimit -n; LimitNOFILE= in a systemd unit).",
            failures.0,
            err.detail
        );
        *failures = (0, Some(Instant::now()));
    }
}

/// How often, at most, [`Http::warn_local`] warns.
const LOCAL_WARNING_EVERY: Duration = Duration::from_secs(60);

impl Fetcher for Http {
    fn get<'a>(
        &'a self,
        url: &'a Url,
        max_body: u64,
        keep_headers: bool,
        validators: Option<&'a Validators>,
    ) -> Pin<Box<dyn Future<Output = Result<Fetched, FetchError>> + Send + 'a>> {
        let settings = self.hosts.for_url(url);
        let clients = Arc::clone(&self.clients.read().unwrap_or_else(PoisonError::into_inner));
        let client = settings
            .ca_entry
            .and_then(|i| clients.by_entry.get(&i))
            .unwrap_or(&clients.crawl);
        // A `Url` as it is: its text would be parsed again (a copy costs a tenth of that).
        let mut request = client.get(url.clone());
        if let Some(validators) = validators {
            // Both when both are known: a server that does not compare ETags may still
            // compare dates (RFC 9110 has it ignore the date when it does).
            if let Some(etag) = &validators.etag {
                request = request.header(IF_NONE_MATCH, &**etag);
            }
            if let Some(secs) = validators.last_modified {
                let date = std::time::UNIX_EPOCH + Duration::from_secs(secs);
                request = request.header(IF_MODIFIED_SINCE, httpdate::fmt_http_date(date));
            }
        }
        if !settings.headers.is_empty() {
            request = request.headers(settings.headers.clone());
        }
        if let Some(authorization) = &settings.authorization {
            if url.scheme() == "https" || settings.authorization_over_http {
                request = request.header(AUTHORIZATION, authorization.clone());
            } else {
                self.hosts.withheld_over_http(url);
            }
        }
        Box::pin(async move {
            let fetched = get(request, max_body, keep_headers).await;
            match &fetched {
                Err(err) if err.local => self.shed_idle(err),
                Ok(_) => self.build_spare(),
                Err(_) => {}
            }
            fetched
        })
    }
}

/// The proxy of `fetch.proxy`, if any, with its password read from the environment variable
/// `fetch.proxy_password_env` names: read at start, with the other secrets, so that a missing
/// one stops the crawler before it writes anything.
pub(crate) fn proxy(config: &Config) -> Result<Option<reqwest::Proxy>, String> {
    let fetch = &config.fetch;
    if fetch.proxy.is_empty() {
        return Ok(None);
    }
    let bad = |why: String| format!("fetch.proxy: {why}");
    let mut url = Url::parse(&fetch.proxy).map_err(|e| bad(e.to_string()))?;
    let user = url.username().to_owned();
    let password = match (fetch.proxy_password_env.as_str(), url.password()) {
        ("", None) => None,
        ("", Some(password)) => Some(percent_decoded(password)),
        (var, _) => Some(std::env::var(var).map_err(|_| {
            format!(
                "fetch.proxy_password_env: the environment variable {var} is not set (or not \
                 UTF-8)"
            )
        })?),
    };
    // The credentials go to reqwest apart, so that the URL it may show holds none.
    let _ = url.set_username("");
    let _ = url.set_password(None);
    let proxy = reqwest::Proxy::all(url.as_str()).map_err(|e| bad(e.to_string()))?;
    Ok(Some(match password {
        Some(password) => proxy.basic_auth(&percent_decoded(&user), &password),
        None if !user.is_empty() => proxy.basic_auth(&percent_decoded(&user), ""),
        None => proxy,
    }))
}

/// A URL's user or password as written (percent-encoded), as sent.
fn percent_decoded(text: &str) -> String {
    // Form decoding, with `+` kept (it is a plus in a URL's user info, not a space).
    url::form_urlencoded::parse(format!("x={}", text.replace('+', "%2B")).as_bytes())
        .next()
        .map_or_else(|| text.to_owned(), |(_, value)| value.into_owned())
}

/// A response, with its body read up to the cap.
#[derive(Debug)]
pub(crate) struct Fetched {
    pub(crate) status: u16,
    pub(crate) content_type: Option<String>,
    /// The `Location` header of a redirect, as sent.
    pub(crate) location: Option<String>,
    pub(crate) retry_after: Option<Duration>,
    /// The `Last-Modified` header, as sent.
    pub(crate) last_modified: Option<String>,
    /// The `ETag` header, as sent.
    pub(crate) etag: Option<String>,
    /// The body, decompressed, at most the cap.
    pub(crate) body: Vec<u8>,
    /// The body went past the cap: what is in `body` is its beginning.
    pub(crate) too_large: bool,
    /// Every response header, when asked for (for WARC output).
    pub(crate) headers: Option<reqwest::header::HeaderMap>,
}

/// Why a fetch got no response: the kind records carry, and what exactly failed, for the
/// record's `error_detail` and the log (the OS error of a refused connection, the resolver's
/// answer, the TLS alert).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct FetchError {
    pub(crate) kind: ErrorKind,
    pub(crate) detail: String,
    /// The request could not be made for want of this machine's own resources (open files:
    /// see `open_files::is_local`): not the host's failure, and nothing reached it.
    pub(crate) local: bool,
}

impl fmt::Display for FetchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

impl FetchError {
    /// Classifies a client error by what its chain of causes holds: the guard's and the
    /// resolver's own errors, a TLS error, or what reqwest says of it.
    fn of(err: &reqwest::Error) -> FetchError {
        let mut kind = None;
        let mut detail = None;
        let mut local = false;
        let mut source: Option<&(dyn std::error::Error + 'static)> = Some(err);
        while let Some(e) = source {
            local |= carried(e).any(crate::open_files::is_local);
            // The innermost cause is the most specific words: "Connection refused (os error
            // 111)" rather than "error sending request for url (...)".
            detail = Some(e.to_string());
            if e.is::<Blocked>() {
                kind = kind.or(Some(ErrorKind::SsrfBlocked));
            } else if let Some(unresolved) = e.downcast_ref::<Unresolved>() {
                kind = kind.or(Some(ErrorKind::Dns));
                local |= unresolved.local;
            } else if is_tls(e) || (err.is_connect() && is_eof(e)) {
                kind = kind.or(Some(ErrorKind::Tls));
            }
            source = e.source();
        }
        let kind = kind.unwrap_or(if err.is_timeout() {
            ErrorKind::Timeout
        } else if err.is_connect() {
            ErrorKind::Connect
        } else if err.is_body() || err.is_decode() {
            ErrorKind::Body
        } else {
            ErrorKind::Http
        });
        let mut detail = detail.unwrap_or_default();
        if kind == ErrorKind::Tls && detail.contains("UnknownIssuer") {
            detail.push_str(
                " (signed by a CA this machine does not trust: a private CA's certificate is \
                 trusted with --ca-cert FILE, fetch.ca_file)",
            );
        }
        FetchError {
            kind,
            detail,
            local,
        }
    }
}

/// An error and the errors I/O errors carry inside it, which their `source` skips (the
/// connector nests them: an `Other` I/O error around an `InvalidData` one around rustls's).
fn carried<'e>(
    e: &'e (dyn std::error::Error + 'static),
) -> impl Iterator<Item = &'e (dyn std::error::Error + 'static)> {
    std::iter::successors(Some(e), |e| {
        e.downcast_ref::<std::io::Error>()
            .and_then(std::io::Error::get_ref)
            .map(|inner| inner as &(dyn std::error::Error + 'static))
    })
}

/// Whether an error is TLS's own.
fn is_tls(e: &(dyn std::error::Error + 'static)) -> bool {
    carried(e).any(|e| e.is::<rustls::Error>())
}

/// Whether an error is a connection closed early. While connecting, only the TLS handshake
/// reads from the server: the other end closed it without speaking TLS.
fn is_eof(e: &(dyn std::error::Error + 'static)) -> bool {
    carried(e).any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::UnexpectedEof)
    })
}

/// Sends a GET, reading at most `max_body` bytes of its (decompressed) body, and keeping
/// every header if `keep_headers`.
pub(crate) async fn get(
    request: reqwest::RequestBuilder,
    max_body: u64,
    keep_headers: bool,
) -> Result<Fetched, FetchError> {
    let mut response = request.send().await.map_err(|e| FetchError::of(&e))?;
    let header = |name| {
        response
            .headers()
            .get(name)
            .and_then(|v: &reqwest::header::HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let content_type = header(CONTENT_TYPE);
    let location = header(LOCATION);
    let last_modified = header(LAST_MODIFIED);
    let etag = header(ETAG);
    let retry_after = header(RETRY_AFTER).and_then(|v| retry_after(&v, SystemTime::now()));
    let status = response.status().as_u16();
    let headers = keep_headers.then(|| response.headers().clone());
    // Sized once from Content-Length (a lie costs address space up to the cap, not memory:
    // untouched pages are not resident): a body grown by doubling copies itself at each step
    // and holds up to twice its size.
    let announced = response.content_length().unwrap_or(0).min(max_body);
    let mut body = Vec::with_capacity(usize::try_from(announced).unwrap_or(0));
    let mut too_large = false;
    // The cap counts decompressed bytes, so a small compressed body cannot expand past it.
    while let Some(chunk) = response.chunk().await.map_err(|e| FetchError::of(&e))? {
        let room = max_body.saturating_sub(body.len() as u64) as usize;
        if chunk.len() > room {
            body.extend_from_slice(&chunk[..room]);
            too_large = true;
            break;
        }
        body.extend_from_slice(&chunk);
    }
    Ok(Fetched {
        status,
        content_type,
        location,
        retry_after,
        last_modified,
        etag,
        body,
        too_large,
        headers,
    })
}

/// A `Retry-After` value: seconds, or an HTTP date (the wait until then, zero if past).
pub(crate) fn retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if let Ok(seconds) = value.parse::<u64>() {
        return Some(Duration::from_secs(seconds));
    }
    let at = httpdate::parse_http_date(value).ok()?;
    Some(at.duration_since(now).unwrap_or(Duration::ZERO))
}

/// Whether a Content-Type is a page whose links we follow.
pub(crate) fn is_html(content_type: Option<&str>) -> bool {
    content_type.map(essence).is_some_and(|essence| {
        essence.eq_ignore_ascii_case("text/html")
            || essence.eq_ignore_ascii_case("application/xhtml+xml")
    })
}

/// A Content-Type's media type, without its parameters (`text/css; charset=utf-8` is
/// `text/css`); compare it ASCII case-insensitively.
pub(crate) fn essence(content_type: &str) -> &str {
    content_type.split(';').next().unwrap_or("").trim()
}

/// Whether a body without a Content-Type looks like HTML: its first bytes, past a BOM and
/// whitespace, open a doctype or an `<html>` (or `<head>`, `<body>`) tag.
pub(crate) fn sniff_html(body: &[u8]) -> bool {
    let body = body.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(body);
    let start = body
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(body.len());
    let head = &body[start..body.len().min(start + 16)];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    [&b"<!doctype html"[..], b"<html", b"<head", b"<body"]
        .iter()
        .any(|tag| lower.starts_with(tag))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn an_io_error_nested_in_another_is_found_as_the_connector_nests_them() {
        use std::io::Error;
        let nested = |code| Error::other(Error::from_raw_os_error(code));
        let local = |e: &Error| carried(e).any(crate::open_files::is_local);
        assert!(local(&nested(libc::EMFILE)));
        assert!(!local(&nested(libc::ECONNREFUSED)));
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        let now = httpdate::parse_http_date("Sun, 22 Nov 2026 12:00:00 GMT").unwrap();
        assert_eq!(retry_after("120", now), Some(Duration::from_secs(120)));
        assert_eq!(
            retry_after("Sun, 22 Nov 2026 12:01:30 GMT", now),
            Some(Duration::from_secs(90))
        );
        assert_eq!(
            retry_after("Sun, 22 Nov 2026 11:00:00 GMT", now),
            Some(Duration::ZERO)
        );
        assert_eq!(retry_after("soon", now), None);
    }

    #[test]
    fn html_is_told_by_its_media_type() {
        assert!(is_html(Some("text/html; charset=windows-1252")));
        assert!(is_html(Some("TEXT/HTML")));
        assert!(is_html(Some("application/xhtml+xml")));
        assert!(!is_html(Some("text/plain")));
        assert!(!is_html(Some("image/png")));
        assert!(!is_html(None));
    }

    #[test]
    fn html_without_a_content_type_is_sniffed() {
        assert!(sniff_html(b"\xEF\xBB\xBF  <!DOCTYPE html><p>"));
        assert!(sniff_html(b"\n<HTML lang=en>"));
        assert!(!sniff_html(b"%PDF-1.7 <html>"));
        assert!(!sniff_html(b""));
    }
}
