//! Scope and traps: which URLs the crawl is about, and which ones belong to the endless URL
//! spaces (calendars, relative links that loop, paths that grow without end) that would keep a
//! crawler busy forever. Each rule refuses with its own [`DropReason`], a counter key.
//!
//! The rules that need no memory of the crawl are in [`ScopeRules`]; the one that does, the
//! per-host page budget, is [`HostBudget`]; [`DropCounts`] counts the refusals of both.

mod budget;
mod error;
mod hosts;
mod path;
mod patterns;
mod reason;
mod shape;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{PoisonError, RwLock};

use url::{Host, Url};

use crate::Canonical;
pub use budget::{HostBudget, registrable_domain_of};
pub use error::{ScopeError, ScopeErrorKind};
use hosts::HostSet;
use patterns::Patterns;
pub use reason::{DropCounts, DropReason};

/// Which hosts are in scope, relative to the seeds. New modes may be added, so match with a
/// wildcard arm.
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, ScopeMode, ScopeRules};
///
/// let canon = Canonicalizer::new();
/// let seed = canon.canonicalize("https://www.example.co.uk/")?;
/// let shop = canon.canonicalize("https://shop.example.co.uk/cart")?;
///
/// let hosts = ScopeRules::builder().seed(&seed).build()?;
/// assert!(hosts.check(&shop, 1).is_err());
///
/// let domains = ScopeRules::builder().seed(&seed).mode(ScopeMode::SeedDomains).build()?;
/// assert!(domains.check(&shop, 1).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ScopeMode {
    /// Exactly the seeds' host keys ([`Canonical::host_key`]): the host and any port other than
    /// the scheme's default. A seed `http://example.com:8080/` admits
    /// `http://example.com:8080/a`, but neither `http://example.com/` nor
    /// `http://www.example.com:8080/`. The scheme is ignored: `http` and `https` on one host
    /// are one site. The default.
    #[default]
    SeedHosts,
    /// The seeds' registrable domains (one label above a public suffix, by the [Public Suffix
    /// List](https://publicsuffix.org)) and all their subdomains, on any port. A seed
    /// `https://www.example.co.uk/` admits `example.co.uk` and `shop.example.co.uk`, but
    /// neither `example.com` nor anything else under `co.uk`. A seed with no registrable
    /// domain (an IP address, `localhost`, a bare public suffix) admits its exact host key, as
    /// in [`SeedHosts`](Self::SeedHosts).
    SeedDomains,
    /// Every host: only the patterns and the trap rules limit the crawl.
    AnyHost,
}

/// The stateless scope and trap rules, applied to every URL before the seen-test.
///
/// Built once from the seeds with [`ScopeRules::builder`], then shared: [`check`](Self::check)
/// takes `&self` and, for a URL that passes, allocates nothing.
///
/// # Rules
///
/// Applied in this order; the first that fails names the [`DropReason`]:
///
/// | rule | default | dropped (seed `https://example.com/`) | reason |
/// |---|---|---|---|
/// | host in scope ([`ScopeMode`]) | the seeds' hosts | `https://other.example/` | `out_of_scope` |
/// | some include pattern matches, if there are any | none | with `/docs/`: `https://example.com/shop/` | `out_of_scope` |
/// | no exclude pattern matches | none | with `\.pdf$`: `https://example.com/a.pdf` | `out_of_scope` |
/// | depth at most the limit | 20 | a link 21 hops from a seed | `too_deep` |
/// | path segments at most the limit | 32 | `https://example.com/a/a1/a2/.../a32` | `too_many_segments` |
/// | no segment more often than the limit | 2 | `https://example.com/a/b/a/b/a/` | `repeated_segment` |
/// | a link deeper than the limit is not of its page's shape ([`check_link`](Self::check_link)) | 20 | `/cal/2026/8`, 21 hops away, from `/cal/2026/7` | `repeated_shape` |
///
/// Patterns are [`regex`](https://docs.rs/regex) expressions matched anywhere in the canonical
/// URL ([`Canonical::as_str`]); anchor them with `^` and `$` to match it whole. A URL is in
/// scope when its host is, some include pattern matches (or there are none), and no exclude
/// pattern does: exclusion wins.
///
/// A path's segments are the pieces between its slashes; a trailing slash ends the last one
/// rather than starting an empty one, so `/a/b/` has two segments and `/` none. Empty
/// segments (`/a//b`) count towards the limit on segments, as runs of slashes grow in loops of
/// relative links, but not towards repetition. Segments are compared exactly, in canonical
/// form, path parameters included.
///
/// The per-host page budget needs to remember what it admitted, so it is a separate
/// [`HostBudget`], obtained from [`host_budget`](Self::host_budget).
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, DropReason, ScopeRules};
///
/// let canon = Canonicalizer::new();
/// let seed = canon.canonicalize("https://example.com/")?;
/// let rules = ScopeRules::builder()
///     .seed(&seed)
///     .exclude(r"^https?://[^/]+/private/")
///     .max_depth(Some(5))
///     .build()?;
///
/// let check = |url: &str, depth| rules.check(&canon.canonicalize(url).unwrap(), depth);
/// assert_eq!(check("https://example.com/docs/", 1), Ok(()));
/// assert_eq!(check("https://example.org/docs/", 1), Err(DropReason::OutOfScope));
/// assert_eq!(check("https://example.com/private/x", 1), Err(DropReason::OutOfScope));
/// assert_eq!(check("https://example.com/docs/", 6), Err(DropReason::TooDeep));
/// assert_eq!(
///     check("https://example.com/2024/01/2024/01/2024/01/", 1),
///     Err(DropReason::RepeatedSegment)
/// );
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
pub struct ScopeRules {
    /// Host keys admitted exactly: every seed's in [`ScopeMode::SeedHosts`], those of seeds
    /// without a registrable domain in [`ScopeMode::SeedDomains`]. Keyed by
    /// [`Canonical::host_key`] so that a lookup borrows the URL's own text.
    hosts: HostSet,
    /// Registrable domains admitted with their subdomains ([`ScopeMode::SeedDomains`] only),
    /// without ports.
    domains: HostSet,
    /// The include patterns, compiled.
    includes: Patterns,
    /// The exclude patterns, compiled.
    excludes: Patterns,
    /// Seeds added while the crawl runs ([`ScopeRules::add_seed`]).
    added: Added,
    config: Config,
}

/// Hosts and domains of seeds added after the rules were built: a redirect of a seed makes
/// its target a seed. Looked up only when the built sets miss, and only once something was
/// added, so that a crawl without such seeds pays one relaxed load per URL out of scope.
#[derive(Debug, Default)]
struct Added {
    any: AtomicBool,
    /// Host keys and registrable domains, as in [`ScopeRules`]. A std lock: held for a
    /// lookup or an insert, and written a handful of times per crawl.
    sets: RwLock<(HostSet, HostSet)>,
}

impl Clone for ScopeRules {
    fn clone(&self) -> Self {
        let sets = self
            .added
            .sets
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        ScopeRules {
            hosts: self.hosts.clone(),
            domains: self.domains.clone(),
            includes: self.includes.clone(),
            excludes: self.excludes.clone(),
            added: Added {
                any: AtomicBool::new(self.added.any.load(Ordering::Acquire)),
                sets: RwLock::new(sets.clone()),
            },
            config: self.config.clone(),
        }
    }
}

/// The configuration shared by the builder and the rules it builds.
#[derive(Clone, Debug)]
struct Config {
    /// Which hosts are in scope. Default: [`ScopeMode::SeedHosts`], the narrowest: a crawl
    /// started from a site stays on it, and going wider is a choice.
    mode: ScopeMode,
    /// Patterns of which one must match. Default: none, which requires nothing.
    includes: Vec<String>,
    /// Patterns of which none may match. Default: none.
    excludes: Vec<String>,
    /// The deepest link admitted, in hops from a seed (seeds are at depth 0). Default:
    /// [`ScopeRules::DEFAULT_MAX_DEPTH`] (2,000): a far backstop. Real sites have long chains
    /// (a book of 600 chapters, each linking to the next; paginated archives), which
    /// Heritrix's 20 cuts; the shape rule below ends calendars instead.
    max_depth: Option<u32>,
    /// Beyond this depth, a link to a page of the same shape as the page linking to it is a
    /// trap. Default: [`ScopeRules::DEFAULT_MAX_SAME_SHAPE_DEPTH`] (20): a calendar ends
    /// where the old depth cap ended it, while chains of pages with their own names go on.
    max_same_shape_depth: Option<u32>,
    /// The most times one non-empty segment may occur in a path. Default:
    /// [`ScopeRules::DEFAULT_MAX_REPEATED_SEGMENT`] (2): sites do repeat a segment
    /// (`/docs/v2/api/v2/`), but a third time is almost always a relative link resolved
    /// against itself or a calendar walking on.
    max_repeated_segment: u32,
    /// The most segments a path may have. Default: [`ScopeRules::DEFAULT_MAX_PATH_SEGMENTS`]
    /// (32), several times the depth of real sites' paths, and a bound on the work of the
    /// repetition test.
    max_path_segments: u32,
    /// The most pages admitted per host, handed to [`HostBudget`]. Default: none, no limit:
    /// how much of a site to fetch is the crawl's choice, and the seen-test already ends
    /// every finite site.
    per_host_budget: Option<u64>,
    /// The most hosts admitted per registrable domain. Default: none.
    per_domain_hosts: Option<u64>,
    /// The most pages admitted per registrable domain. Default: none.
    per_domain_pages: Option<u64>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            mode: ScopeMode::default(),
            includes: Vec::new(),
            excludes: Vec::new(),
            max_depth: Some(ScopeRules::DEFAULT_MAX_DEPTH),
            max_same_shape_depth: Some(ScopeRules::DEFAULT_MAX_SAME_SHAPE_DEPTH),
            max_repeated_segment: ScopeRules::DEFAULT_MAX_REPEATED_SEGMENT,
            max_path_segments: ScopeRules::DEFAULT_MAX_PATH_SEGMENTS,
            per_host_budget: None,
            per_domain_hosts: None,
            per_domain_pages: None,
        }
    }
}

impl ScopeRules {
    /// The default depth limit, in links followed from a seed.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::ScopeRules;
    ///
    /// let rules = ScopeRules::builder().build()?;
    /// assert_eq!(rules.max_depth(), Some(ScopeRules::DEFAULT_MAX_DEPTH));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub const DEFAULT_MAX_DEPTH: u32 = 2000;

    /// The default depth beyond which links of their page's shape are traps.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::ScopeRules;
    ///
    /// let rules = ScopeRules::builder().build()?;
    /// assert_eq!(rules.max_same_shape_depth(), Some(ScopeRules::DEFAULT_MAX_SAME_SHAPE_DEPTH));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub const DEFAULT_MAX_SAME_SHAPE_DEPTH: u32 = 20;

    /// The default for how many times one path segment may occur: twice.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::ScopeRules;
    ///
    /// let rules = ScopeRules::builder().build()?;
    /// assert_eq!(rules.max_repeated_segment(), ScopeRules::DEFAULT_MAX_REPEATED_SEGMENT);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub const DEFAULT_MAX_REPEATED_SEGMENT: u32 = 2;

    /// The default limit on the number of path segments.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::ScopeRules;
    ///
    /// let rules = ScopeRules::builder().build()?;
    /// assert_eq!(rules.max_path_segments(), ScopeRules::DEFAULT_MAX_PATH_SEGMENTS);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub const DEFAULT_MAX_PATH_SEGMENTS: u32 = 32;

    /// A builder with the default configuration and no seeds.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, ScopeMode, ScopeRules};
    ///
    /// let seed = Canonicalizer::new().canonicalize("https://example.com/")?;
    /// let rules = ScopeRules::builder()
    ///     .seed(&seed)
    ///     .mode(ScopeMode::SeedDomains)
    ///     .max_depth(None)
    ///     .build()?;
    /// assert_eq!(rules.mode(), ScopeMode::SeedDomains);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> ScopeRulesBuilder {
        ScopeRulesBuilder::new()
    }

    /// Checks a URL found `depth` links away from a seed (a seed is at depth 0) against the
    /// rules, in the order of the table on [`ScopeRules`].
    ///
    /// # Errors
    ///
    /// The [`DropReason`] of the first rule the URL fails: [`DropReason::OutOfScope`],
    /// [`DropReason::TooDeep`], [`DropReason::TooManySegments`] or
    /// [`DropReason::RepeatedSegment`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("http://example.com/")?)
    ///     .build()?;
    ///
    /// let page = canon.canonicalize("http://example.com/a/b/a/b/")?;
    /// assert_eq!(rules.check(&page, 3), Ok(())); // twice each is fine
    /// let trap = canon.canonicalize_relative(page.as_url(), "a/")?;
    /// assert_eq!(rules.check(&trap, 4), Err(DropReason::RepeatedSegment));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check(&self, url: &Canonical, depth: u32) -> Result<(), DropReason> {
        self.check_parts(&Parts::of(url), depth)
    }

    /// [`check`](Self::check) on a canonical URL's parts.
    pub(crate) fn check_parts(&self, url: &Parts<'_>, depth: u32) -> Result<(), DropReason> {
        if !self.host_in_scope(url) || !self.patterns_admit(url.text) {
            return Err(DropReason::OutOfScope);
        }
        if self.config.max_depth.is_some_and(|max| depth > max) {
            return Err(DropReason::TooDeep);
        }
        path::check(
            url.path,
            self.config.max_path_segments,
            self.config.max_repeated_segment,
        )
    }

    /// Checks a link found on `page`, `depth` links away from a seed: the rules of
    /// [`check`](Self::check), then the shape rule: beyond
    /// [`max_same_shape_depth`](ScopeRulesBuilder::max_same_shape_depth), a link to a page
    /// of the same shape as `page` (its path with numbers and ids generalized, its query's
    /// parameter names) is a trap. A calendar's next month is one; the next chapter of a
    /// book, with a name of its own, is not.
    ///
    /// # Errors
    ///
    /// As [`check`](Self::check), and [`DropReason::RepeatedShape`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder().seed(&canon.canonicalize("https://example.com/")?).build()?;
    /// let link = |page: &str, href: &str, depth| {
    ///     let page = canon.canonicalize(page).unwrap();
    ///     rules.check_link(page.as_url(), &canon.canonicalize(href).unwrap(), depth)
    /// };
    /// let (ch1, ch2) = ("https://example.com/book/intro.html", "https://example.com/book/ownership.html");
    /// assert_eq!(link(ch1, ch2, 500), Ok(()));
    /// let (july, august) = ("https://example.com/cal/2026/7", "https://example.com/cal/2026/8");
    /// assert_eq!(link(july, august, 20), Ok(()));
    /// assert_eq!(link(july, august, 21), Err(DropReason::RepeatedShape));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_link(&self, page: &Url, url: &Canonical, depth: u32) -> Result<(), DropReason> {
        self.check_link_parts(page, &Parts::of(url), depth)
    }

    /// [`check_link`](Self::check_link) on a canonical URL's parts.
    pub(crate) fn check_link_parts(
        &self,
        page: &Url,
        url: &Parts<'_>,
        depth: u32,
    ) -> Result<(), DropReason> {
        self.check_parts(url, depth)?;
        if self
            .config
            .max_same_shape_depth
            .is_some_and(|max| depth > max)
            && shape::same_shape(&shape::Parts::of(page), &url.shape())
        {
            return Err(DropReason::RepeatedShape);
        }
        Ok(())
    }

    /// Checks a page requisite (an image, a style sheet, a script a page needs to render):
    /// the rules a browser loading the page would not skip a URL for are skipped too, so
    /// that a page is archived whole. Not applied: the host's scope (a requisite on a CDN is
    /// fetched, one hop: its own links are not followed), the include patterns and the depth
    /// limit (a page at the limit needs its images too). Applied: the exclude patterns (the
    /// user's word), and the path rules, which stop a server that makes up URLs forever.
    ///
    /// # Errors
    ///
    /// [`DropReason::OutOfScope`] for an excluded URL, [`DropReason::TooManySegments`] or
    /// [`DropReason::RepeatedSegment`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("https://example.com/")?)
    ///     .exclude(r"\.mp4$")
    ///     .build()?;
    /// let cdn = canon.canonicalize("https://cdn.example.net/site.css")?;
    /// assert_eq!(rules.check(&cdn, 1), Err(DropReason::OutOfScope));
    /// assert_eq!(rules.check_requisite(&cdn), Ok(()));
    /// let video = canon.canonicalize("https://cdn.example.net/intro.mp4")?;
    /// assert_eq!(rules.check_requisite(&video), Err(DropReason::OutOfScope));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn check_requisite(&self, url: &Canonical) -> Result<(), DropReason> {
        let url = Parts::of(url);
        if self.excludes.is_match(url.text) {
            return Err(DropReason::OutOfScope);
        }
        path::check(
            url.path,
            self.config.max_path_segments,
            self.config.max_repeated_segment,
        )
    }

    fn host_in_scope(&self, url: &Parts<'_>) -> bool {
        match self.config.mode {
            ScopeMode::AnyHost => true,
            ScopeMode::SeedHosts | ScopeMode::SeedDomains => {
                self.hosts.contains(url.host_key)
                    || in_domains(&self.domains, url)
                    || self.in_added(url)
            }
        }
    }

    /// Whether the URL's host is that of a seed added since the rules were built.
    fn in_added(&self, url: &Parts<'_>) -> bool {
        if !self.added.any.load(Ordering::Acquire) {
            return false;
        }
        let sets = self
            .added
            .sets
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        let (hosts, domains) = &*sets;
        hosts.contains(url.host_key) || in_domains(domains, url)
    }

    /// Adds a seed while the crawl runs: its host (or registrable domain, by the
    /// [mode](ScopeRulesBuilder::mode)) is in scope from now on, as if it had been given to
    /// the builder. This is how a seed's redirect becomes a seed (`example.com` redirecting
    /// to `www.example.com`). Each call adds at most one entry: callers bound how many they
    /// make, since the pages that redirect are written by strangers.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder().seed(&canon.canonicalize("https://example.com/")?).build()?;
    /// let www = canon.canonicalize("https://www.example.com/")?;
    /// assert_eq!(rules.check(&www, 0), Err(DropReason::OutOfScope));
    /// rules.add_seed(&www);
    /// assert_eq!(rules.check(&www, 0), Ok(()));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_seed(&self, url: &Canonical) {
        let mut sets = self
            .added
            .sets
            .write()
            .unwrap_or_else(PoisonError::into_inner);
        let (hosts, domains) = &mut *sets;
        match self.config.mode {
            ScopeMode::AnyHost => return,
            ScopeMode::SeedHosts => {
                hosts.insert(Box::from(url.host_key()));
            }
            ScopeMode::SeedDomains => match registrable_domain(url) {
                Some(domain) => {
                    domains.insert(Box::from(domain));
                }
                None => {
                    hosts.insert(Box::from(url.host_key()));
                }
            },
        }
        self.added.any.store(true, Ordering::Release);
    }
}

/// Whether the URL's host is one of the registrable `domains` or below one. Looks up the
/// host and each of its parent domains in turn, so the cost grows with the host's labels,
/// not with the number of seeds.
/// What the rules read of a canonical URL, whether it is held as a [`Canonical`] or only as
/// its text (a link tested before a [`Canonical`] is built for it: see
/// `Admission::admit_link_fast`).
#[derive(Clone, Debug)]
pub(crate) struct Parts<'a> {
    /// The canonical URL.
    pub(crate) text: &'a str,
    /// [`Canonical::host_key`].
    pub(crate) host_key: &'a str,
    /// The host.
    pub(crate) host: Option<Host<&'a str>>,
    /// The port, if not the scheme's default.
    pub(crate) port: Option<u16>,
    /// The path.
    pub(crate) path: &'a str,
    /// The query, without its `?`.
    pub(crate) query: Option<&'a str>,
}

impl<'a> Parts<'a> {
    /// The parts of a URL held as such.
    pub(crate) fn of(url: &'a Canonical) -> Parts<'a> {
        let parsed = url.as_url();
        Parts {
            text: url.as_str(),
            host_key: url.host_key(),
            host: parsed.host(),
            port: parsed.port(),
            path: parsed.path(),
            query: parsed.query(),
        }
    }

    /// What the shape rule reads.
    fn shape(&self) -> shape::Parts<'a> {
        shape::Parts {
            host: self.host.as_ref().map(|host| match host {
                Host::Domain(name) => *name,
                // The host's text as the URL writes it (IPv6 in brackets), as `host_str`.
                Host::Ipv4(_) | Host::Ipv6(_) => self.host_text(),
            }),
            port: self.port,
            path: self.path,
            query: self.query,
        }
    }

    /// The host as written in the URL: the host key without its port.
    fn host_text(&self) -> &'a str {
        match self.port {
            Some(_) => self
                .host_key
                .rsplit_once(':')
                .map_or(self.host_key, |(host, _)| host),
            None => self.host_key,
        }
    }
}

fn in_domains(domains: &HostSet, url: &Parts<'_>) -> bool {
    if domains.is_empty() {
        return false;
    }
    // An IP address is no name under a domain, whatever its dotted form looks like.
    let Some(Host::Domain(mut name)) = url.host else {
        return false;
    };
    loop {
        if domains.contains(name) {
            return true;
        }
        match name.split_once('.') {
            Some((_, parent)) => name = parent,
            None => return false,
        }
    }
}

impl ScopeRules {
    fn patterns_admit(&self, url: &str) -> bool {
        (self.includes.is_empty() || self.includes.is_match(url)) && !self.excludes.is_match(url)
    }

    /// Which hosts are in scope (see [`ScopeRulesBuilder::mode`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().build()?;
    /// assert_eq!(rules.mode(), frontier::ScopeMode::SeedHosts);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn mode(&self) -> ScopeMode {
        self.config.mode
    }

    /// The depth beyond which links of their page's shape are traps, `None` for no such
    /// rule (see [`ScopeRulesBuilder::max_same_shape_depth`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().max_same_shape_depth(None).build()?;
    /// assert_eq!(rules.max_same_shape_depth(), None);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn max_same_shape_depth(&self) -> Option<u32> {
        self.config.max_same_shape_depth
    }

    /// The depth limit, `None` for none (see [`ScopeRulesBuilder::max_depth`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().max_depth(None).build()?;
    /// assert_eq!(rules.max_depth(), None);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn max_depth(&self) -> Option<u32> {
        self.config.max_depth
    }

    /// How many times one path segment may occur (see
    /// [`ScopeRulesBuilder::max_repeated_segment`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().max_repeated_segment(3).build()?;
    /// assert_eq!(rules.max_repeated_segment(), 3);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn max_repeated_segment(&self) -> u32 {
        self.config.max_repeated_segment
    }

    /// The limit on path segments (see [`ScopeRulesBuilder::max_path_segments`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().max_path_segments(16).build()?;
    /// assert_eq!(rules.max_path_segments(), 16);
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn max_path_segments(&self) -> u32 {
        self.config.max_path_segments
    }

    /// The per-host page budget, `None` for none (see
    /// [`ScopeRulesBuilder::per_host_budget`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().per_host_budget(Some(1000)).build()?;
    /// assert_eq!(rules.per_host_budget(), Some(1000));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn per_host_budget(&self) -> Option<u64> {
        self.config.per_host_budget
    }

    /// The limits per registrable domain: hosts, then pages, `None` for none (see
    /// [`ScopeRulesBuilder::per_domain_budget`]).
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRules::builder().per_domain_budget(Some(100), None).build()?;
    /// assert_eq!(rules.per_domain_budget(), (Some(100), None));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn per_domain_budget(&self) -> (Option<u64>, Option<u64>) {
        (self.config.per_domain_hosts, self.config.per_domain_pages)
    }

    /// A new, empty [`HostBudget`] with the configured limits, for one crawl.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropReason, ScopeRules};
    ///
    /// let budget = ScopeRules::builder().per_host_budget(Some(1)).build()?.host_budget();
    /// assert_eq!(budget.charge("example.com"), Ok(()));
    /// assert_eq!(budget.charge("example.com"), Err(DropReason::HostBudget));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn host_budget(&self) -> HostBudget {
        HostBudget::new(self.config.per_host_budget)
            .with_domain_limits(self.config.per_domain_hosts, self.config.per_domain_pages)
    }
}

/// Configures and builds [`ScopeRules`]; obtained from [`ScopeRules::builder`].
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, ScopeMode, ScopeRules};
///
/// let canon = Canonicalizer::new();
/// let seeds = [
///     canon.canonicalize("https://example.com/")?,
///     canon.canonicalize("https://blog.example.org/")?,
/// ];
/// let rules = ScopeRules::builder()
///     .seeds(&seeds)
///     .mode(ScopeMode::SeedDomains)
///     .include(r"^https://")
///     .exclude(r"\.(?:jpe?g|png|gif|zip)$")
///     .max_depth(Some(10))
///     .max_repeated_segment(2)
///     .max_path_segments(24)
///     .per_host_budget(Some(10_000))
///     .build()?;
/// assert!(rules.check(&canon.canonicalize("https://www.example.org/")?, 1).is_ok());
/// assert!(rules.check(&canon.canonicalize("http://www.example.org/")?, 1).is_err());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct ScopeRulesBuilder {
    config: Config,
    /// The seeds, kept whole until `build` because the mode decides what to take from them.
    seeds: Vec<Canonical>,
}

impl ScopeRulesBuilder {
    /// A builder with the default configuration and no seeds; the same as
    /// [`ScopeRules::builder`].
    ///
    /// # Example
    ///
    /// ```
    /// let rules = frontier::ScopeRulesBuilder::new().build()?;
    /// assert_eq!(rules.max_depth(), Some(frontier::ScopeRules::DEFAULT_MAX_DEPTH));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn new() -> Self {
        ScopeRulesBuilder::default()
    }

    /// Adds a seed, whose host (or registrable domain, by the [mode](Self::mode)) is in
    /// scope. Without seeds no host is in scope, unless the mode is [`ScopeMode::AnyHost`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("http://example.com/")?)
    ///     .seed(&canon.canonicalize("http://example.com:8080/")?)
    ///     .build()?;
    /// assert!(rules.check(&canon.canonicalize("http://example.com:8080/a")?, 1).is_ok());
    /// assert!(rules.check(&canon.canonicalize("http://example.com:8081/a")?, 1).is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seed(mut self, url: &Canonical) -> Self {
        self.seeds.push(url.clone());
        self
    }

    /// Adds several seeds, as [`seed`](Self::seed) does one.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let seeds: Vec<_> = ["http://a.example/", "http://b.example/"]
    ///     .iter()
    ///     .map(|s| canon.canonicalize(s))
    ///     .collect::<Result<_, _>>()?;
    /// let rules = ScopeRules::builder().seeds(&seeds).build()?;
    /// assert!(rules.check(&canon.canonicalize("http://b.example/x")?, 1).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn seeds<'a, I>(mut self, urls: I) -> Self
    where
        I: IntoIterator<Item = &'a Canonical>,
    {
        self.seeds.extend(urls.into_iter().cloned());
        self
    }

    /// Sets which hosts are in scope; see [`ScopeMode`]. Default: [`ScopeMode::SeedHosts`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, ScopeMode, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder().mode(ScopeMode::AnyHost).build()?;
    /// assert!(rules.check(&canon.canonicalize("http://anywhere.example/")?, 1).is_ok());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn mode(mut self, mode: ScopeMode) -> Self {
        self.config.mode = mode;
        self
    }

    /// Adds an include pattern: when there is at least one, a URL is in scope only if one of
    /// them matches somewhere in its canonical text, on top of the host rule. Default: none.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("https://example.com/")?)
    ///     .include(r"^https://example\.com/(?:docs|blog)/")
    ///     .build()?;
    /// assert!(rules.check(&canon.canonicalize("https://example.com/docs/a")?, 1).is_ok());
    /// let shop = canon.canonicalize("https://example.com/shop/a")?;
    /// assert_eq!(rules.check(&shop, 1), Err(DropReason::OutOfScope));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn include(mut self, pattern: impl Into<String>) -> Self {
        self.config.includes.push(pattern.into());
        self
    }

    /// Adds an exclude pattern: a URL it matches anywhere in its canonical text is out of
    /// scope, even when an include pattern matches too. Default: none.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("https://example.com/")?)
    ///     .exclude(r"[?&]print=1(?:&|$)")
    ///     .build()?;
    /// let print = canon.canonicalize("https://example.com/a?print=1")?;
    /// assert_eq!(rules.check(&print, 1), Err(DropReason::OutOfScope));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn exclude(mut self, pattern: impl Into<String>) -> Self {
        self.config.excludes.push(pattern.into());
        self
    }

    /// Sets the deepest link admitted, in links followed from a seed (seeds are at depth 0);
    /// `None` removes the limit. Default: `Some(`[`ScopeRules::DEFAULT_MAX_DEPTH`]`)`, 2,000.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let seed = canon.canonicalize("https://example.com/")?;
    /// let rules = ScopeRules::builder().seed(&seed).max_depth(Some(2)).build()?;
    /// assert_eq!(rules.check(&seed, 2), Ok(()));
    /// assert_eq!(rules.check(&seed, 3), Err(DropReason::TooDeep));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_depth(mut self, max: Option<u32>) -> Self {
        self.config.max_depth = max;
        self
    }

    /// Sets the depth beyond which a link to a page of the same shape as the page linking
    /// to it is a trap ([`ScopeRules::check_link`]); `None` turns the rule off. Default:
    /// `Some(`[`ScopeRules::DEFAULT_MAX_SAME_SHAPE_DEPTH`]`)`, 20.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("https://example.com/")?)
    ///     .max_same_shape_depth(Some(3))
    ///     .build()?;
    /// let page = canon.canonicalize("https://example.com/cal/2026/7")?;
    /// let next = canon.canonicalize("https://example.com/cal/2026/8")?;
    /// assert_eq!(rules.check_link(page.as_url(), &next, 3), Ok(()));
    /// assert_eq!(rules.check_link(page.as_url(), &next, 4), Err(DropReason::RepeatedShape));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_same_shape_depth(mut self, max: Option<u32>) -> Self {
        self.config.max_same_shape_depth = max;
        self
    }

    /// Sets how many times one non-empty path segment may occur anywhere in a path; one more
    /// is a trap. Default: [`ScopeRules::DEFAULT_MAX_REPEATED_SEGMENT`], 2.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("https://example.com/")?)
    ///     .max_repeated_segment(1)
    ///     .build()?;
    /// let twice = canon.canonicalize("https://example.com/en/docs/en/")?;
    /// assert_eq!(rules.check(&twice, 1), Err(DropReason::RepeatedSegment));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_repeated_segment(mut self, max: u32) -> Self {
        self.config.max_repeated_segment = max;
        self
    }

    /// Sets the most segments a path may have, empty ones included. Default:
    /// [`ScopeRules::DEFAULT_MAX_PATH_SEGMENTS`], 32.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let rules = ScopeRules::builder()
    ///     .seed(&canon.canonicalize("https://example.com/")?)
    ///     .max_path_segments(3)
    ///     .build()?;
    /// assert!(rules.check(&canon.canonicalize("https://example.com/a/b/c/")?, 1).is_ok());
    /// let deep = canon.canonicalize("https://example.com/a/b/c/d")?;
    /// assert_eq!(rules.check(&deep, 1), Err(DropReason::TooManySegments));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_path_segments(mut self, max: u32) -> Self {
        self.config.max_path_segments = max;
        self
    }

    /// Sets the most pages admitted per host key ([`Canonical::host_key`]), counted by the
    /// [`HostBudget`] that [`ScopeRules::host_budget`] makes; `None` removes the limit.
    /// Default: `None`.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropReason, ScopeRules};
    ///
    /// let rules = ScopeRules::builder().per_host_budget(Some(2)).build()?;
    /// let budget = rules.host_budget();
    /// assert_eq!(budget.charge("example.com"), Ok(()));
    /// assert_eq!(budget.charge("example.com"), Ok(()));
    /// assert_eq!(budget.charge("example.com"), Err(DropReason::HostBudget));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn per_host_budget(mut self, pages: Option<u64>) -> Self {
        self.config.per_host_budget = pages;
        self
    }

    /// Sets the most hosts and the most pages admitted per registrable domain (see
    /// [`HostBudget::with_domain_limits`]); `None` removes a limit. Default: none. A spam
    /// farm's endless subdomains (`a1.farm.example`, `a2.farm.example`, ...) each pass a
    /// per-host budget; a budget of hosts per domain stops them.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropReason, ScopeRules};
    ///
    /// let rules = ScopeRules::builder().per_domain_budget(Some(1), None).build()?;
    /// let budget = rules.host_budget();
    /// assert_eq!(budget.charge("www.example.com"), Ok(()));
    /// assert_eq!(budget.charge("spam.example.com"), Err(DropReason::DomainHosts));
    /// # Ok::<(), frontier::ScopeError>(())
    /// ```
    pub fn per_domain_budget(mut self, hosts: Option<u64>, pages: Option<u64>) -> Self {
        self.config.per_domain_hosts = hosts;
        self.config.per_domain_pages = pages;
        self
    }

    /// Compiles the patterns and builds the rules.
    ///
    /// # Errors
    ///
    /// [`ScopeError`] when an include or exclude pattern is not a valid regular expression,
    /// naming the pattern, with the regex crate's error as its source.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{ScopeErrorKind, ScopeRules};
    ///
    /// let err = ScopeRules::builder().exclude("(unclosed").build().unwrap_err();
    /// assert_eq!(err.kind(), &ScopeErrorKind::InvalidExclude("(unclosed".into()));
    /// ```
    pub fn build(self) -> Result<ScopeRules, ScopeError> {
        let includes = Patterns::compile(&self.config.includes, ScopeErrorKind::InvalidInclude)?;
        let excludes = Patterns::compile(&self.config.excludes, ScopeErrorKind::InvalidExclude)?;
        let mut hosts = HostSet::default();
        let mut domains = HostSet::default();
        for seed in &self.seeds {
            match self.config.mode {
                ScopeMode::AnyHost => {}
                ScopeMode::SeedHosts => {
                    hosts.insert(Box::from(seed.host_key()));
                }
                ScopeMode::SeedDomains => match registrable_domain(seed) {
                    Some(domain) => {
                        domains.insert(Box::from(domain));
                    }
                    None => {
                        hosts.insert(Box::from(seed.host_key()));
                    }
                },
            }
        }
        Ok(ScopeRules {
            hosts,
            domains,
            includes,
            excludes,
            added: Added::default(),
            config: self.config,
        })
    }
}

/// The registrable domain of a URL's host, `None` for IP addresses and for names that are
/// public suffixes or have no label above one (`localhost`, `co.uk`).
fn registrable_domain(url: &Canonical) -> Option<&str> {
    match url.as_url().host()? {
        Host::Domain(name) => psl::domain_str(name),
        Host::Ipv4(_) | Host::Ipv6(_) => None,
    }
}
