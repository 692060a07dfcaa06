//! Canonicalization: one spelling per page, so that two spellings of one page produce one
//! fetch. The rules are listed, with examples, on [`Canonicalizer`].
//!
//! The WHATWG parser in the `url` crate does the parts a browser does (scheme and host case,
//! IDNA, default ports, dot segments, IP address forms); this module adds what a browser
//! leaves alone but a crawler must not (trailing host dots, escape normalization, session ids,
//! tracking parameters, query order) and refuses what it will not fetch.

mod escape;
mod names;
mod query;
mod rejected;

use std::fmt;

use url::{Host, Position, Url};

use escape::Component;
use names::NameList;
use query::QueryRules;
pub use rejected::{RejectKind, Rejected};

/// Turns URLs into their canonical form, or rejects them with a reason.
///
/// Built once with [`Canonicalizer::new`] or [`Canonicalizer::builder`], then shared: it holds
/// only its configuration, and `canonicalize` takes `&self`.
///
/// # Rules
///
/// Applied in this order to every URL, from the seed list or from a page:
///
/// | rule | input | canonical |
/// |---|---|---|
/// | only `http` and `https`, scheme lower-cased | `HTTP://example.com/` | `http://example.com/` |
/// | host lower-cased | `http://Example.COM/` | `http://example.com/` |
/// | IDN host to punycode | `http://bücher.example/` | `http://xn--bcher-kva.example/` |
/// | trailing dots of the host removed | `http://example.com./` | `http://example.com/` |
/// | IP addresses in their standard form | `http://[0:0::1]/`, `http://0x7f.1/` | `http://[::1]/`, `http://127.0.0.1/` |
/// | default port removed, others kept | `https://example.com:443/`, `http://example.com:8080` | `https://example.com/`, `http://example.com:8080/` |
/// | fragment removed | `http://example.com/a#top` | `http://example.com/a` |
/// | empty path becomes `/` | `http://example.com` | `http://example.com/` |
/// | dot segments resolved | `http://example.com/a/./b/../c` | `http://example.com/a/c` |
/// | escapes of unreserved characters decoded | `http://example.com/%7Euser/%41` | `http://example.com/~user/A` |
/// | other escapes kept, hex upper-cased | `http://example.com/a%2fb?q=%e2%82%ac` | `http://example.com/a%2Fb?q=%E2%82%AC` |
/// | characters a URI may not carry raw escaped | `http://example.com/a\|b c` | `http://example.com/a%7Cb%20c` |
/// | a `%` that starts no escape escaped | `http://example.com/?off=100%` | `http://example.com/?off=100%25` |
/// | session-id path parameters removed | `http://example.com/a;jsessionid=0A1B` | `http://example.com/a` |
/// | session-id query parameters removed | `http://example.com/?PHPSESSID=9f&p=2` | `http://example.com/?p=2` |
/// | tracking parameters removed (off by default) | `http://example.com/?utm_source=x&id=7` | `http://example.com/?id=7` |
/// | query parameters sorted by key, then value (on by default) | `http://example.com/?b=2&a=1&a=0` | `http://example.com/?a=0&a=1&b=2` |
/// | empty parameters dropped | `http://example.com/?a=1&&b=2&` | `http://example.com/?a=1&b=2` |
/// | empty query removed | `http://example.com/?`, `http://example.com/?sid=1` | `http://example.com/` |
///
/// What is deliberately left alone:
///
/// * The path's case: `/A` and `/a` are different pages on most servers.
/// * Reserved characters in either form: `%2F` is not `/` in a path, and `%26` and `%3D` are
///   not separators in a query. Queries are split into parameters without decoding them.
/// * Parameters without a value, as written: `?a`, `?a=` and `?a=&b` stay distinct.
/// * `+` in a query, which only form decoding reads as a space.
/// * User information (`user:pass@`), which the parser keeps verbatim: its escapes are not
///   normalized, so `us%65r@` and `user@` stay two URLs. Links with credentials are rare and
///   fetching them twice is harmless.
///
/// Parameter names (session ids, tracking) are matched without regard to ASCII case, after
/// escape normalization (`%73id` is `sid`); a name ending in `*` matches every name starting
/// with the rest. The session-id list applies both to query parameters and to `;name=value`
/// path parameters.
///
/// # Rejections
///
/// A [`Rejected`] error says why: a scheme other than `http` and `https`
/// ([`RejectKind::UnsupportedScheme`]), input that is not a URL ([`RejectKind::Unparsable`]),
/// a host of dots only ([`RejectKind::NoHost`]), or a URL longer than the limit
/// ([`RejectKind::TooLong`]). The limit applies twice: to the input, before any parsing, so
/// that the work done on hostile input is bounded by the limit and not by the input's size;
/// and to the canonical result, which can be longer than its input (escaping triples a byte,
/// a relative link grows by its base). Untrusted input never causes a panic.
///
/// # Example
///
/// ```
/// use frontier::Canonicalizer;
///
/// let canon = Canonicalizer::new();
/// let a = canon.canonicalize("HTTP://Example.COM:80/a/../b?y=2&x=1#top")?;
/// let b = canon.canonicalize("http://example.com/b?x=1&y=2")?;
/// assert_eq!(a, b);
/// assert_eq!(a.as_str(), "http://example.com/b?x=1&y=2");
/// # Ok::<(), frontier::Rejected>(())
/// ```
#[derive(Clone, Debug)]
pub struct Canonicalizer {
    config: Config,
}

/// The configuration shared by the builder and the canonicalizer it builds.
#[derive(Clone, Debug)]
struct Config {
    /// The longest input, and the longest canonical URL, accepted, in bytes. Default: 2,048,
    /// the limit of sitemaps.org and of old browsers that sites still design for; longer URLs
    /// rarely name a page worth crawling and often come from crawler traps.
    max_length: usize,
    /// Query and path parameters that carry a session id. Default:
    /// [`Canonicalizer::DEFAULT_SESSION_PARAMS`].
    session: NameList,
    /// Query parameters that only track a visit. Default:
    /// [`Canonicalizer::DEFAULT_TRACKING_PARAMS`], applied only if `remove_tracking`.
    tracking: NameList,
    /// Whether tracking parameters are removed. Default: false, because a few sites serve
    /// different content on them and removal is a choice about what to crawl.
    remove_tracking: bool,
    /// Whether query parameters are sorted. Default: true: servers that read the query as
    /// parameters, nearly all of them, ignore the order, and crawlers meet the same query in
    /// many orders.
    sort_query: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            max_length: Canonicalizer::DEFAULT_MAX_LENGTH,
            session: NameList::new(Canonicalizer::DEFAULT_SESSION_PARAMS),
            tracking: NameList::new(Canonicalizer::DEFAULT_TRACKING_PARAMS),
            remove_tracking: false,
            sort_query: true,
        }
    }
}

impl Canonicalizer {
    /// The default length limit, in bytes, for inputs and canonical URLs.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Canonicalizer;
    ///
    /// let long = format!("http://example.com/{}", "a".repeat(Canonicalizer::DEFAULT_MAX_LENGTH));
    /// assert_eq!(Canonicalizer::new().canonicalize(&long).unwrap_err().reason(), "too_long");
    /// ```
    pub const DEFAULT_MAX_LENGTH: usize = 2048;

    /// Parameter names removed by default as session ids: Java (`jsessionid`, also as a path
    /// parameter), PHP, classic ASP (`ASPSESSIONID` followed by eight letters, hence the
    /// prefix), ColdFusion (`cfid`, `cftoken`) and the generic spellings.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Canonicalizer;
    ///
    /// assert!(Canonicalizer::DEFAULT_SESSION_PARAMS.contains(&"phpsessid"));
    /// // Extend the defaults rather than replace them:
    /// let canon = Canonicalizer::builder()
    ///     .session_params(Canonicalizer::DEFAULT_SESSION_PARAMS.iter().chain(&["zenid"]))
    ///     .build();
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/?zenid=1&sid=2&p=3")?.as_str(),
    ///     "http://example.com/?p=3"
    /// );
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub const DEFAULT_SESSION_PARAMS: &'static [&'static str] = &[
        "jsessionid",
        "phpsessid",
        "aspsessionid*",
        "sid",
        "sessionid",
        "session_id",
        "cfid",
        "cftoken",
    ];

    /// Parameter names removed as tracking parameters when
    /// [`remove_tracking`](CanonicalizerBuilder::remove_tracking) is on: campaign tags
    /// (`utm_*`, Mailchimp, HubSpot, Marketo) and the click ids of the large ad networks.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Canonicalizer;
    ///
    /// assert!(Canonicalizer::DEFAULT_TRACKING_PARAMS.contains(&"utm_*"));
    /// assert!(Canonicalizer::DEFAULT_TRACKING_PARAMS.contains(&"fbclid"));
    /// ```
    pub const DEFAULT_TRACKING_PARAMS: &'static [&'static str] = &[
        "utm_*",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "yclid",
        "twclid",
        "ttclid",
        "igshid",
        "li_fat_id",
        "mc_cid",
        "mc_eid",
        "_ga",
        "_gl",
        "_hsenc",
        "_hsmi",
        "mkt_tok",
    ];

    /// A canonicalizer with the default configuration: 2,048-byte limit, default session-id
    /// list, tracking parameters kept, query sorted.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::new();
    /// assert_eq!(canon.canonicalize("http://example.com")?.as_str(), "http://example.com/");
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn new() -> Self {
        Canonicalizer {
            config: Config::default(),
        }
    }

    /// A builder starting from the default configuration.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder()
    ///     .remove_tracking(true)
    ///     .sort_query(false)
    ///     .build();
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/?b=1&utm_medium=email&a=2")?.as_str(),
    ///     "http://example.com/?b=1&a=2"
    /// );
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn builder() -> CanonicalizerBuilder {
        CanonicalizerBuilder::new()
    }

    /// The length limit in bytes (see [`CanonicalizerBuilder::max_length`]).
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().max_length(4096).build();
    /// assert_eq!(canon.max_length(), 4096);
    /// ```
    pub fn max_length(&self) -> usize {
        self.config.max_length
    }

    /// Canonicalizes an absolute URL, such as a seed or a redirect target.
    ///
    /// # Errors
    ///
    /// [`Rejected`] when the input is longer than the limit, is not an absolute URL, has a
    /// scheme other than `http` or `https`, has a host of dots only, or has a canonical form
    /// longer than the limit.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, RejectKind};
    ///
    /// let canon = Canonicalizer::new();
    /// let url = canon.canonicalize("https://Bücher.example:443/%7Ekarl/./index.html#toc")?;
    /// assert_eq!(url.as_str(), "https://xn--bcher-kva.example/~karl/index.html");
    ///
    /// let err = canon.canonicalize("javascript:void(0)").unwrap_err();
    /// assert_eq!(err.kind(), &RejectKind::UnsupportedScheme("javascript".into()));
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn canonicalize(&self, input: &str) -> Result<Canonical, Rejected> {
        self.check_length(input.len())?;
        let url = Url::parse(input).map_err(Rejected::unparsable)?;
        self.finish(url)
    }

    /// Resolves a link found on a page against the page's base URL (RFC 3986 section 5, as
    /// browsers do it), then canonicalizes the result.
    ///
    /// The base is usually the page's own canonical URL ([`Canonical::as_url`]); when the
    /// page declares `<base href>`, the caller resolves that first and passes it here. The
    /// length limit applies to `href` and to the result. Surrounding whitespace and embedded
    /// tabs and newlines in `href`, common in HTML attributes, are ignored, as browsers do.
    ///
    /// # Errors
    ///
    /// As [`canonicalize`](Self::canonicalize); a reference that cannot be resolved (for
    /// example any relative reference against a `mailto:` base) is
    /// [`RejectKind::Unparsable`].
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::new();
    /// let page = canon.canonicalize("http://example.com/docs/guide/intro.html")?;
    ///
    /// let link = canon.canonicalize_relative(page.as_url(), "../api/?v=2#top")?;
    /// assert_eq!(link.as_str(), "http://example.com/docs/api/?v=2");
    ///
    /// let err = canon.canonicalize_relative(page.as_url(), "mailto:docs@example.com");
    /// assert_eq!(err.unwrap_err().reason(), "unsupported_scheme");
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn canonicalize_relative(&self, base: &Url, href: &str) -> Result<Canonical, Rejected> {
        self.check_length(href.len())?;
        let url = base.join(href).map_err(Rejected::unparsable)?;
        self.finish(url)
    }

    /// The canonical text of a link of the common plain forms, written into `out` without
    /// the URL parser: `true` when it was, and then it is exactly the text of
    /// [`canonicalize_relative`](Self::canonicalize_relative)`(base, href)`; `false` for
    /// any other link (`out` is then left in any state), which the caller resolves that way.
    ///
    /// Plain: a relative path (`b.html`, `../x/`, `./`) or an absolute path (`/x/y`) of
    /// letters, digits and `-._~/!$&()*+,=@` only, with any fragment (dropped), against an
    /// `http` or `https` base whose path is canonical already (no escapes, nothing to
    /// escape, no parameters) and whose host has no trailing dot. Such a link changes only
    /// the base's path, and no canonicalization rule changes the result: its dot segments
    /// are resolved here as the WHATWG path parser resolves them (`.` and `..`, the only
    /// spellings without `%`), and it has no query. Anything else (`:`, `;`, `%`, `?`, `\`,
    /// spaces, controls, non-ASCII, `//host`, an empty path) goes to the parser.
    pub(crate) fn resolve_plain(&self, base: &Url, href: &str, out: &mut String) -> bool {
        let max = self.config.max_length;
        let path = href.split_once('#').map_or(href, |(path, _)| path);
        if href.len() > max
            || path.is_empty()
            || path.starts_with("//")
            || !path.bytes().all(is_plain_link_byte)
            || !matches!(base.scheme(), "http" | "https")
        {
            return false;
        }
        match base.host() {
            Some(Host::Domain(domain)) if !domain.ends_with('.') => {}
            Some(Host::Ipv4(_) | Host::Ipv6(_)) => {}
            _ => return false,
        }
        let base_path = base.path();
        if base_path.contains(';') || !escape::is_plain(base_path, Component::Path) {
            return false;
        }
        out.clear();
        out.push_str(&base[..Position::BeforePath]);
        let path_start = out.len();
        let segments = match path.strip_prefix('/') {
            Some(absolute) => absolute,
            None => {
                // The base's directory: its path without the last segment.
                let directory = base_path.rfind('/').map_or("", |at| &base_path[..at]);
                out.push_str(directory);
                path
            }
        };
        let mut segments = segments.split('/').peekable();
        while let Some(segment) = segments.next() {
            let last = segments.peek().is_none();
            match segment {
                ".." => {
                    if let Some(at) = out[path_start..].rfind('/') {
                        out.truncate(path_start + at);
                    }
                    if last {
                        out.push('/');
                    }
                }
                "." => {
                    if last {
                        out.push('/');
                    }
                }
                _ => {
                    out.push('/');
                    out.push_str(segment);
                }
            }
        }
        if out.len() == path_start {
            out.push('/');
        }
        out.len() <= max
    }

    fn check_length(&self, len: usize) -> Result<(), Rejected> {
        let max = self.config.max_length;
        if len > max {
            return Err(RejectKind::TooLong { len, max }.into());
        }
        Ok(())
    }

    /// The rules that follow parsing, in the order of the table above.
    fn finish(&self, mut url: Url) -> Result<Canonical, Rejected> {
        // The parser has already lower-cased the scheme.
        if !matches!(url.scheme(), "http" | "https") {
            return Err(RejectKind::UnsupportedScheme(url.scheme().to_owned()).into());
        }
        // The parser has lower-cased the host, mapped IDNs to punycode, put IP addresses in
        // standard form and dropped a default port. It keeps trailing dots, but `example.com.`
        // and `example.com` are one DNS name, and a site answering under both would be
        // crawled twice.
        let trimmed = match url.host() {
            Some(Host::Domain(domain)) if domain.ends_with('.') => {
                Some(domain.trim_end_matches('.').to_owned())
            }
            Some(_) => None,
            None => return Err(RejectKind::NoHost.into()),
        };
        if let Some(domain) = trimmed {
            if domain.is_empty() {
                return Err(RejectKind::NoHost.into());
            }
            // `1.2.3.4.` was already an IPv4 address, but `1.2.3.4..` becomes one only here:
            // `set_host` parses it as one, so a second pass sees the same IPv4 host.
            url.set_host(Some(&domain)).map_err(Rejected::unparsable)?;
        }
        url.set_fragment(None);

        // Setting the path runs the parser's dot-segment resolution again, which matters when
        // removing a path parameter leaves a `..` behind (`..;jsessionid=1`), as servers that
        // strip path parameters also read it.
        if let Some(path) = self.canonical_path(url.path())
            && path != url.path()
        {
            url.set_path(&path);
        }

        if let Some(raw) = url.query() {
            let rules = QueryRules {
                session: &self.config.session,
                tracking: self.config.remove_tracking.then_some(&self.config.tracking),
                sort: self.config.sort_query,
            };
            let query = query::canonical_query(raw, &rules);
            if query.as_deref() != Some(raw) {
                url.set_query(query.as_deref());
            }
        }

        self.check_length(url.as_str().len())?;
        Ok(Canonical { url })
    }

    /// Normalizes escapes, then drops session-id path parameters segment by segment; `None`
    /// when the path has neither escapes, nor bytes to escape, nor parameters, as most have:
    /// it is canonical already, and nothing is allocated. The parser has already resolved dot
    /// segments (including `%2e` spellings) and turned an empty path into `/`.
    fn canonical_path(&self, path: &str) -> Option<String> {
        if !path.contains(';') && escape::is_plain(path, Component::Path) {
            return None;
        }
        let normalized = escape::normalize(path, Component::Path);
        if !normalized.contains(';') {
            return Some(normalized);
        }
        let mut out = String::with_capacity(normalized.len());
        for (i, segment) in normalized.split('/').enumerate() {
            if i > 0 {
                out.push('/');
            }
            let mut params = segment.split(';');
            // The first piece is the segment proper, the rest its parameters.
            out.push_str(params.next().unwrap_or_default());
            for param in params {
                let name = param.split_once('=').map_or(param, |(name, _)| name);
                if !self.config.session.contains(name) {
                    out.push(';');
                    out.push_str(param);
                }
            }
        }
        Some(out)
    }
}

/// The bytes of a link [`Canonicalizer::resolve_plain`] resolves on its own: unreserved
/// characters, `/`, and the sub-delimiters that neither the parser nor the canonical rules
/// touch in a path (not `'`, escaped by some parsers, nor `;`, which starts a parameter).
fn is_plain_link_byte(b: u8) -> bool {
    escape::is_unreserved(b)
        || matches!(
            b,
            b'/' | b'!' | b'$' | b'&' | b'(' | b')' | b'*' | b'+' | b',' | b'=' | b'@'
        )
}

impl Default for Canonicalizer {
    fn default() -> Self {
        Canonicalizer::new()
    }
}

/// Configures and builds a [`Canonicalizer`]; obtained from [`Canonicalizer::builder`].
///
/// # Example
///
/// ```
/// use frontier::Canonicalizer;
///
/// let canon = Canonicalizer::builder()
///     .max_length(4096)
///     .remove_tracking(true)
///     .build();
/// let url = canon.canonicalize("http://example.com/?utm_source=feed&fbclid=x&id=1")?;
/// assert_eq!(url.as_str(), "http://example.com/?id=1");
/// # Ok::<(), frontier::Rejected>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct CanonicalizerBuilder {
    config: Config,
}

impl CanonicalizerBuilder {
    /// A builder with the default configuration; the same as [`Canonicalizer::builder`].
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::CanonicalizerBuilder::new().build();
    /// assert_eq!(canon.max_length(), frontier::Canonicalizer::DEFAULT_MAX_LENGTH);
    /// ```
    pub fn new() -> Self {
        CanonicalizerBuilder::default()
    }

    /// Sets the longest input, and the longest canonical URL, accepted, in bytes; longer ones
    /// are rejected with [`RejectKind::TooLong`]. Default:
    /// [`Canonicalizer::DEFAULT_MAX_LENGTH`] (2,048).
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().max_length(20).build();
    /// assert!(canon.canonicalize("http://example.com/").is_ok()); // 19 bytes
    /// // 19 bytes of input, but 23 once the spaces are escaped: the result is checked too.
    /// assert_eq!(canon.canonicalize("http://ex.com/a b c").unwrap_err().reason(), "too_long");
    /// ```
    pub fn max_length(mut self, bytes: usize) -> Self {
        self.config.max_length = bytes;
        self
    }

    /// Replaces the list of session-id parameter names, removed from queries and from path
    /// parameters (`;name=value`). Names match without regard to ASCII case; a trailing `*`
    /// makes a name a prefix. An empty list keeps every parameter. Default:
    /// [`Canonicalizer::DEFAULT_SESSION_PARAMS`].
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().session_params(["token"]).build();
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/a;TOKEN=1?sid=2")?.as_str(),
    ///     "http://example.com/a?sid=2"
    /// );
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn session_params<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.config.session = NameList::new(names);
        self
    }

    /// Turns the removal of tracking query parameters on or off. Default: off.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().remove_tracking(true).build();
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/?UTM_Campaign=spring&gclid=x")?.as_str(),
    ///     "http://example.com/"
    /// );
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn remove_tracking(mut self, yes: bool) -> Self {
        self.config.remove_tracking = yes;
        self
    }

    /// Replaces the list of tracking parameter names, used when
    /// [`remove_tracking`](Self::remove_tracking) is on. Matching works as for
    /// [`session_params`](Self::session_params). Default:
    /// [`Canonicalizer::DEFAULT_TRACKING_PARAMS`].
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder()
    ///     .remove_tracking(true)
    ///     .tracking_params(["ref", "src_*"])
    ///     .build();
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/?ref=hn&src_a=1&utm_source=x")?.as_str(),
    ///     "http://example.com/?utm_source=x"
    /// );
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn tracking_params<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: AsRef<str>,
    {
        self.config.tracking = NameList::new(names);
        self
    }

    /// Turns the sorting of query parameters (by key, then value, comparing the escaped
    /// text) on or off. Default: on.
    ///
    /// Sorting merges URLs whose parameters differ only in order, including the order of a
    /// repeated key (`?a=2&a=1`); turn it off for sites known to care.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().sort_query(false).build();
    /// assert_eq!(
    ///     canon.canonicalize("http://example.com/?b=1&a=2")?.as_str(),
    ///     "http://example.com/?b=1&a=2"
    /// );
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn sort_query(mut self, yes: bool) -> Self {
        self.config.sort_query = yes;
        self
    }

    /// Builds the canonicalizer. Every configuration is valid: a limit of zero rejects every
    /// URL, empty lists remove nothing.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().sort_query(true).build();
    /// assert!(canon.canonicalize("https://example.com/").is_ok());
    /// ```
    pub fn build(self) -> Canonicalizer {
        Canonicalizer {
            config: self.config,
        }
    }
}

/// A URL in canonical form: the only way to get one is from a [`Canonicalizer`], so holding
/// one means the rules have been applied.
///
/// Two `Canonical`s are equal when their text is equal, which is what the rules aim at: two
/// spellings of one page give equal values, and equal bytes for hashing.
///
/// # Example
///
/// ```
/// let canon = frontier::Canonicalizer::new();
/// let url = canon.canonicalize("HTTPS://Example.com:8443/a?b#c")?;
/// assert_eq!(url.as_str(), "https://example.com:8443/a?b");
/// assert_eq!(url.host_key(), "example.com:8443");
/// assert_eq!(url.to_string(), url.as_str());
/// # Ok::<(), frontier::Rejected>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Canonical {
    url: Url,
}

impl Canonical {
    /// The canonical URL as text.
    ///
    /// # Example
    ///
    /// ```
    /// let url = frontier::Canonicalizer::new().canonicalize("http://EXAMPLE.com")?;
    /// assert_eq!(url.as_str(), "http://example.com/");
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn as_str(&self) -> &str {
        self.url.as_str()
    }

    /// The canonical URL's bytes: what the seen-test hashes.
    ///
    /// # Example
    ///
    /// ```
    /// let url = frontier::Canonicalizer::new().canonicalize("http://example.com/")?;
    /// assert_eq!(url.as_bytes(), b"http://example.com/");
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn as_bytes(&self) -> &[u8] {
        self.url.as_str().as_bytes()
    }

    /// The host key: the host, followed by `:port` when the port is not the scheme's default.
    /// IPv6 addresses keep their brackets.
    ///
    /// The scheme is not part of the key: `http://example.com/` and `https://example.com/`
    /// reach the same server, and politeness is owed to the server.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::new();
    /// assert_eq!(canon.canonicalize("https://user@Example.com:443/")?.host_key(), "example.com");
    /// assert_eq!(canon.canonicalize("http://example.com:8080/")?.host_key(), "example.com:8080");
    /// assert_eq!(canon.canonicalize("http://[::1]:8080/")?.host_key(), "[::1]:8080");
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn host_key(&self) -> &str {
        &self.url[Position::BeforeHost..Position::AfterPort]
    }

    /// The canonical URL as a parsed [`Url`], for resolving the page's links with
    /// [`Canonicalizer::canonicalize_relative`] or for reading its parts.
    ///
    /// # Example
    ///
    /// ```
    /// let url = frontier::Canonicalizer::new().canonicalize("http://example.com/a?b=1")?;
    /// assert_eq!(url.as_url().path(), "/a");
    /// assert_eq!(url.as_url().query(), Some("b=1"));
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn as_url(&self) -> &Url {
        &self.url
    }

    /// Gives up the wrapper, returning the parsed [`Url`].
    ///
    /// # Example
    ///
    /// ```
    /// let url = frontier::Canonicalizer::new().canonicalize("http://example.com/")?;
    /// let url: frontier::Url = url.into_url();
    /// assert_eq!(url.scheme(), "http");
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn into_url(self) -> Url {
        self.url
    }

    /// Rebuilds a canonical URL from the text of one ([`as_str`](Self::as_str)) that was
    /// stored (spill segments, checkpoints, a shared frontier's queues), without applying
    /// a canonicalizer's rules again: a URL parse, not the rules' work. `None` unless the
    /// text parses back to itself, so a damaged store cannot smuggle in a URL that is not
    /// in canonical form.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonical, Canonicalizer};
    ///
    /// let url = Canonicalizer::new().canonicalize("HTTP://Example.com:80/a/./b")?;
    /// let again = Canonical::from_stored(url.as_str()).expect("stored as written");
    /// assert_eq!(again, url);
    /// // Text that is not a URL's canonical form is refused.
    /// assert!(Canonical::from_stored("HTTP://Example.com/").is_none());
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn from_stored(text: &str) -> Option<Canonical> {
        let url = Url::parse(text).ok()?;
        (url.as_str() == text && url.has_host()).then_some(Canonical { url })
    }
}

impl fmt::Display for Canonical {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl AsRef<str> for Canonical {
    fn as_ref(&self) -> &str {
        self.as_str()
    }
}

impl AsRef<[u8]> for Canonical {
    fn as_ref(&self) -> &[u8] {
        self.as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use url::Url;

    use super::Canonicalizer;

    /// Bases of every kind `resolve_plain` must take or leave to the parser: plain paths,
    /// escapes, parameters, a trailing-dot host, IP hosts, user information, ports, a query
    /// and a fragment, other schemes.
    const BASES: &[&str] = &[
        "http://example.com/",
        "https://example.com/a/b/c.html",
        "https://example.com/a/b/",
        "http://example.com/a//b/c",
        "https://example.com/docs/%7Euser/x",
        "https://example.com/docs/a%2Fb/x",
        "https://example.com/a;jsessionid=1/b",
        "https://example.com./a/b",
        "http://127.0.0.1:8080/std/vec/struct.Vec.html",
        "http://[::1]:81/a/",
        "https://user:pw@example.com:8443/a/b?q=1#top",
        "ftp://example.com/a/b",
        "mailto:someone@example.com",
        "http://example.com/a'b/c",
    ];

    fn check(canon: &Canonicalizer, base: &str, href: &str) -> Result<(), TestCaseError> {
        let base = Url::parse(base).unwrap();
        let mut out = String::from("left over");
        if canon.resolve_plain(&base, href, &mut out) {
            let parsed = canon.canonicalize_relative(&base, href);
            prop_assert_eq!(
                Some(out.as_str()),
                parsed.as_ref().ok().map(|url| url.as_str()),
                "base {} href {:?}",
                base,
                href
            );
        }
        Ok(())
    }

    /// Hrefs made of the plain bytes, the dots and slashes of path segments, and a few
    /// hostile ones (`:`, `;`, `%`, `?`, `\`, spaces, tabs, non-ASCII), with fragments.
    fn href() -> impl Strategy<Value = String> {
        let segment = prop_oneof![
            Just(".".to_owned()),
            Just("..".to_owned()),
            Just(String::new()),
            "[a-zA-Z0-9._~!$&()*+,=@-]{1,6}",
            "[a-z:;%?\\\\ \t\u{e9}'|#.]{1,4}",
        ];
        (
            prop_oneof![Just(""), Just("/"), Just("//"), Just("./"), Just("../")],
            prop::collection::vec(segment, 0..7),
            prop_oneof![
                Just(""),
                Just("/"),
                Just("#"),
                Just("#x y"),
                Just("#a/../b")
            ],
        )
            .prop_map(|(start, segments, end)| format!("{start}{}{end}", segments.join("/")))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(3000))]

        /// The shortcut gives the parser's canonical text whenever it answers at all.
        #[test]
        fn plain_links_resolve_as_the_parser_resolves_them(
            href in href(),
            base in proptest::sample::select(BASES),
            max in prop_oneof![Just(2048usize), 20usize..60],
        ) {
            let canon = Canonicalizer::builder().max_length(max).build();
            check(&canon, base, &href)?;
        }

        /// Arbitrary text: never a panic, and the parser's text whenever it answers.
        #[test]
        fn any_text_resolves_as_the_parser_or_not_at_all(
            href in "\\PC{0,40}",
            base in proptest::sample::select(BASES),
        ) {
            check(&Canonicalizer::new(), base, &href)?;
        }
    }

    #[test]
    fn the_common_forms_take_the_shortcut() {
        let canon = Canonicalizer::new();
        let base = Url::parse("http://127.0.0.1:8080/std/vec/struct.Vec.html").unwrap();
        let mut out = String::new();
        for (href, expected) in [
            (
                "../../core/option/enum.Option.html#variant.None",
                "http://127.0.0.1:8080/core/option/enum.Option.html",
            ),
            (
                "struct.IntoIter.html",
                "http://127.0.0.1:8080/std/vec/struct.IntoIter.html",
            ),
            ("./", "http://127.0.0.1:8080/std/vec/"),
            ("..", "http://127.0.0.1:8080/std/"),
            ("/index.html", "http://127.0.0.1:8080/index.html"),
            ("/../../a/./b/.", "http://127.0.0.1:8080/a/b/"),
        ] {
            assert!(canon.resolve_plain(&base, href, &mut out), "{href}");
            assert_eq!(out, expected);
        }
        for href in [
            "?q=1",
            "#top",
            "//other.example/",
            "a:b",
            "%7E",
            "a b",
            "a\\b",
            ";x",
        ] {
            assert!(!canon.resolve_plain(&base, href, &mut out), "{href}");
        }
    }
}
