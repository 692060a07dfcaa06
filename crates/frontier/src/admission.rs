//! Admission: everything the frontier decides about a URL before it is queued, counted by
//! outcome.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

use url::{Position, Url};

use crate::codec::{Reader, put_bytes, put_varint};
use crate::scope::Parts;
use crate::{
    Canonical, Canonicalizer, DropCounts, DropReason, HostBudget, RejectKind, ScopeRules, SeenSet,
    SeenStats,
};

/// What admission decided about one URL.
///
/// # Example
///
/// ```
/// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet, Verdict};
/// # let canon = Canonicalizer::new();
/// # let seed = canon.canonicalize("https://example.com/").unwrap();
/// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
/// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
/// match admission.admit(seed, 0)? {
///     Verdict::New(url) => println!("queue {url}"),
///     other => println!("skip: {}", other.reason()),
/// }
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Verdict {
    /// Never admitted before: queue it.
    New(Canonical),
    /// Admitted before, or (at the seen-test's false-positive rate) taken for such.
    Seen,
    /// Dropped by a scope or trap rule, or by the host's page budget.
    Dropped(DropReason),
    /// Not a URL the crawler fetches.
    Invalid(RejectKind),
}

impl Verdict {
    /// A short, stable name for counters and logs: `new`, `seen`, a [`DropReason::reason`] or
    /// a [`Rejected::reason`](crate::Rejected::reason).
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::Verdict::Seen.reason(), "seen");
    /// ```
    pub fn reason(&self) -> &'static str {
        match self {
            Verdict::New(_) => "new",
            Verdict::Seen => "seen",
            Verdict::Dropped(reason) => reason.reason(),
            Verdict::Invalid(kind) => reject_reason(kind),
        }
    }
}

/// The counter key of a rejection, as [`Rejected::reason`](crate::Rejected::reason) gives it.
fn reject_reason(kind: &RejectKind) -> &'static str {
    INVALID_REASONS[reject_index(kind)]
}

/// Where a rejection is counted. Exhaustive on purpose: a new kind of rejection must get its
/// own counter here.
fn reject_index(kind: &RejectKind) -> usize {
    match kind {
        RejectKind::Unparsable => 0,
        RejectKind::UnsupportedScheme(_) => 1,
        RejectKind::TooLong { .. } => 2,
        RejectKind::NoHost => 3,
    }
}

/// What a link repeated on one page gets, decided by its first occurrence there: see
/// [`Admission::count_repeat`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// The first was admitted or found seen (or charged to its host's budget, after the
    /// seen-test marked it): the repeat is seen.
    Seen,
    /// A scope or trap rule dropped the first: it drops the repeat too.
    Dropped(DropReason),
    /// The first was invalid: the repeat is, for the same reason (its counter's index).
    Invalid(usize),
}

impl Repeat {
    /// The repeat of a link the frontier answered `first`.
    pub(crate) fn of(first: &crate::Push) -> Repeat {
        use crate::Push;
        match first {
            Push::Queued | Push::HostGivenUp | Push::Seen => Repeat::Seen,
            // The budgets are charged after the seen-test, which marked the first.
            Push::Dropped(
                DropReason::HostBudget | DropReason::DomainHosts | DropReason::DomainPages,
            ) => Repeat::Seen,
            Push::Dropped(reason) => Repeat::Dropped(*reason),
            Push::Invalid(kind) => Repeat::Invalid(reject_index(kind)),
        }
    }
}

/// The admission pipeline: canonical form, scope and trap rules, the seen-test, then the
/// per-host page budget. Every outcome is counted.
///
/// The order matters. Scope and traps are cheap and need no memory, so they run first. The
/// budget runs after the seen-test so that only new URLs are charged to it; a URL the budget
/// refuses stays marked as seen and is counted once, as `host_budget`.
///
/// All methods take `&self`: workers admit links concurrently, and a URL pushed by several at
/// once is [`Verdict::New`] for exactly one of them.
///
/// # Example
///
/// ```
/// use frontier::{Admission, Canonicalizer, DropReason, ScopeRules, SeenSet, Verdict};
///
/// let canon = Canonicalizer::new();
/// let seed = canon.canonicalize("https://example.com/").unwrap();
/// let scope = ScopeRules::builder().seed(&seed).build().unwrap();
/// let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(1_000).build()?);
///
/// assert!(matches!(admission.admit(seed.clone(), 0)?, Verdict::New(_)));
/// let base = seed.as_url();
/// assert_eq!(admission.admit_link(base, "/#top", 1)?, Verdict::Seen);
/// assert_eq!(
///     admission.admit_link(base, "https://elsewhere.example/", 1)?,
///     Verdict::Dropped(DropReason::OutOfScope)
/// );
/// assert_eq!(admission.admit_link(base, "mailto:me@example.com", 1)?.reason(), "unsupported_scheme");
/// assert_eq!(admission.stats().new, 1);
/// # Ok::<(), bloom::Error>(())
/// ```
pub struct Admission {
    canon: Canonicalizer,
    scope: ScopeRules,
    budget: HostBudget,
    seen: SeenSet,
    new: AtomicU64,
    seen_again: AtomicU64,
    dropped: DropCounts,
    /// Rejections, indexed by `reject_index`.
    invalid: [AtomicU64; INVALID_REASONS.len()],
}

const INVALID_REASONS: [&str; 4] = ["unparsable", "unsupported_scheme", "too_long", "no_host"];

/// Counts of every admission outcome so far, and the seen-test's statistics.
///
/// # Example
///
/// ```
/// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet};
/// # let canon = Canonicalizer::new();
/// # let seed = canon.canonicalize("https://example.com/").unwrap();
/// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
/// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
/// admission.admit_str("not a url", 0)?;
/// let stats = admission.stats();
/// assert_eq!(stats.invalid, [("unparsable", 1)]);
/// assert_eq!(stats.total(), 1);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct AdmissionStats {
    /// URLs admitted as new.
    pub new: u64,
    /// URLs found seen.
    pub seen: u64,
    /// Drops by scope, trap or budget rule, by [`DropReason::reason`]; rules that dropped
    /// nothing are left out.
    pub dropped: Vec<(&'static str, u64)>,
    /// Rejected URLs by [`Rejected::reason`](crate::Rejected::reason); reasons that rejected
    /// nothing are left out.
    pub invalid: Vec<(&'static str, u64)>,
    /// The seen-test's size, accuracy and expected wrongly dropped URLs.
    pub seen_set: SeenStats,
}

impl AdmissionStats {
    /// Every URL that went through admission.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// admission.admit(seed.clone(), 0)?;
    /// admission.admit(seed, 0)?;
    /// assert_eq!(admission.stats().total(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn total(&self) -> u64 {
        let dropped: u64 = self.dropped.iter().map(|(_, n)| n).sum();
        let invalid: u64 = self.invalid.iter().map(|(_, n)| n).sum();
        self.new + self.seen + dropped + invalid
    }
}

impl Admission {
    /// A pipeline from its parts; the scope's per-host budget, if any, starts empty.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet};
    /// let canon = Canonicalizer::new();
    /// let seed = canon.canonicalize("https://example.com/").unwrap();
    /// let scope = ScopeRules::builder().seed(&seed).per_host_budget(Some(10)).build().unwrap();
    /// let admission = Admission::new(canon, scope, SeenSet::builder().build()?);
    /// assert_eq!(admission.stats().new, 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(canon: Canonicalizer, scope: ScopeRules, seen: SeenSet) -> Self {
        Self::with_budget(canon, scope, seen, None)
    }

    fn with_budget(
        canon: Canonicalizer,
        scope: ScopeRules,
        seen: SeenSet,
        budget: Option<HostBudget>,
    ) -> Self {
        Admission {
            budget: budget.unwrap_or_else(|| scope.host_budget()),
            canon,
            scope,
            seen,
            new: AtomicU64::new(0),
            seen_again: AtomicU64::new(0),
            dropped: DropCounts::new(),
            invalid: Default::default(),
        }
    }

    /// Decides about a URL already in canonical form, found `depth` links from a seed. The hot
    /// path: canonicalize in the workers that extract links, in parallel, and admit here.
    ///
    /// # Errors
    ///
    /// When the seen-test must grow and cannot (see [`SeenSet::insert`]); the URL is then
    /// neither admitted nor counted.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet, Verdict};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// assert!(matches!(admission.admit(seed.clone(), 0)?, Verdict::New(_)));
    /// assert_eq!(admission.admit(seed, 0)?, Verdict::Seen);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn admit(&self, url: Canonical, depth: u32) -> Result<Verdict, bloom::Error> {
        self.admit_checked(url, |url| self.scope.check(url, depth))
    }

    /// [`admit`](Self::admit) for a page requisite: [`ScopeRules::check_requisite`]'s rules
    /// instead of the scope's, then the seen-test and the host's budget as for any URL.
    ///
    /// # Errors
    ///
    /// As [`admit`](Self::admit).
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet, Verdict};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon.clone(), scope, SeenSet::builder().initial_capacity(100).build()?);
    /// let font = canon.canonicalize("https://fonts.example.net/a.woff2").unwrap();
    /// assert!(matches!(admission.admit(font.clone(), 1)?, Verdict::Dropped(_)));
    /// assert!(matches!(admission.admit_requisite(font.clone())?, Verdict::New(_)));
    /// assert_eq!(admission.admit_requisite(font)?, Verdict::Seen);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn admit_requisite(&self, url: Canonical) -> Result<Verdict, bloom::Error> {
        self.admit_checked(url, |url| self.scope.check_requisite(url))
    }

    /// [`admit`](Self::admit), with `rules` for the scope and trap rules.
    fn admit_checked(
        &self,
        url: Canonical,
        rules: impl FnOnce(&Canonical) -> Result<(), DropReason>,
    ) -> Result<Verdict, bloom::Error> {
        if let Err(reason) = rules(&url) {
            self.dropped.count(reason);
            return Ok(Verdict::Dropped(reason));
        }
        if !self.seen.insert(&url)? {
            self.seen_again.fetch_add(1, Ordering::Relaxed);
            return Ok(Verdict::Seen);
        }
        if let Err(reason) = self.budget.charge(url.host_key()) {
            self.dropped.count(reason);
            return Ok(Verdict::Dropped(reason));
        }
        self.new.fetch_add(1, Ordering::Relaxed);
        Ok(Verdict::New(url))
    }

    /// The canonicalizer, for URLs read back from a journal.
    pub(crate) fn canonicalizer(&self) -> &Canonicalizer {
        &self.canon
    }

    /// Admits a URL a replayed journal says was admitted: marks it seen and charges its
    /// host's budget, whatever the seen-test says now (a false positive then would have
    /// kept it out of the journal).
    pub(crate) fn readmit(&self, url: &Canonical) -> Result<(), bloom::Error> {
        self.seen.insert(url)?;
        let _ = self.budget.charge(url.host_key());
        self.new.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Canonicalizes `url` (a seed, say), then decides as [`admit`](Self::admit).
    ///
    /// # Errors
    ///
    /// As [`admit`](Self::admit).
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet, Verdict};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// assert!(matches!(admission.admit_str("HTTPS://EXAMPLE.COM:443/", 0)?, Verdict::New(_)));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn admit_str(&self, url: &str, depth: u32) -> Result<Verdict, bloom::Error> {
        match self.canon.canonicalize(url) {
            Ok(url) => self.admit(url, depth),
            Err(rejected) => Ok(self.count_invalid(rejected.kind().clone())),
        }
    }

    /// Resolves a link found on the page at `base` (its `href` as written), canonicalizes it
    /// and decides as [`admit`](Self::admit).
    ///
    /// # Errors
    ///
    /// As [`admit`](Self::admit).
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet, Verdict};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/a/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// let verdict = admission.admit_link(seed.as_url(), "../b?utm_x=1", 1)?;
    /// assert!(matches!(verdict, Verdict::New(url) if url.as_str().starts_with("https://example.com/b")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn admit_link(&self, base: &Url, href: &str, depth: u32) -> Result<Verdict, bloom::Error> {
        self.admit_link_on(base, base, href, depth)
    }

    /// [`admit_link`](Self::admit_link) for a page whose links resolve against another URL
    /// (its `<base href>`): the trap rules compare the link with `page`, the page that holds
    /// it, and `href` is resolved against `base`.
    ///
    /// # Errors
    ///
    /// As [`admit`](Self::admit).
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet, Verdict};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// let page = url::Url::parse("https://example.com/cal/2026/7").unwrap();
    /// let base = url::Url::parse("https://example.com/").unwrap(); // <base href=/>
    /// let verdict = admission.admit_link_on(&page, &base, "cal/2026/8", 21)?;
    /// assert_eq!(verdict, Verdict::Dropped(frontier::DropReason::RepeatedShape));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn admit_link_on(
        &self,
        page: &Url,
        base: &Url,
        href: &str,
        depth: u32,
    ) -> Result<Verdict, bloom::Error> {
        match self.canon.canonicalize_relative(base, href) {
            Ok(url) => self.admit_checked(url, |url| self.scope.check_link(page, url, depth)),
            Err(rejected) => Ok(self.count_invalid(rejected.kind().clone())),
        }
    }

    /// Counts a link repeated on one page, whose first occurrence was `first`, as admitting
    /// it again would have: its scope and trap rules and its canonical form are those of the
    /// first, and the first marked it seen unless a rule dropped it or it was invalid. So a
    /// page's repeats are neither resolved nor hashed, and every counter stays as it was.
    pub(crate) fn count_repeat(&self, first: &Repeat) {
        match first {
            Repeat::Seen => {
                self.seen_again.fetch_add(1, Ordering::Relaxed);
            }
            Repeat::Dropped(reason) => self.dropped.count(*reason),
            Repeat::Invalid(index) => {
                self.invalid[*index].fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// [`admit_link_on`](Self::admit_link_on), with `buffer` to write a plain link's
    /// canonical text into (see `Canonicalizer::resolve_plain`): such a link is judged by
    /// the scope and trap rules and the seen-test on that text, and parsed into a
    /// [`Canonical`] only if it is new. Most links on a page were seen before; they cost
    /// neither a parse nor an allocation. The verdict, the counters and the order of the
    /// rules are those of `admit_link_on`.
    pub(crate) fn admit_link_buffered(
        &self,
        page: &Url,
        base: &Url,
        href: &str,
        depth: u32,
        buffer: &mut String,
    ) -> Result<Verdict, bloom::Error> {
        if !self.canon.resolve_plain(base, href, buffer) {
            return self.admit_link_on(page, base, href, depth);
        }
        let host_key = &base[Position::BeforeHost..Position::AfterPort];
        let parts = Parts {
            text: buffer,
            host_key,
            host: base.host(),
            port: base.port(),
            path: &buffer[base[..Position::BeforePath].len()..],
            query: None,
        };
        if let Err(reason) = self.scope.check_link_parts(page, &parts, depth) {
            self.dropped.count(reason);
            return Ok(Verdict::Dropped(reason));
        }
        if !self.seen.insert_canonical_text(buffer.as_bytes())? {
            self.seen_again.fetch_add(1, Ordering::Relaxed);
            return Ok(Verdict::Seen);
        }
        if let Err(reason) = self.budget.charge(host_key) {
            self.dropped.count(reason);
            return Ok(Verdict::Dropped(reason));
        }
        self.new.fetch_add(1, Ordering::Relaxed);
        // The text is canonical, so it parses back to itself; should it not, the parser's
        // resolution is the one kept (the two are tested equal on hostile links).
        let url = Canonical::from_stored(buffer)
            .or_else(|| self.canon.canonicalize_relative(base, href).ok());
        Ok(url.map_or(Verdict::Seen, Verdict::New))
    }

    fn count_invalid(&self, kind: RejectKind) -> Verdict {
        self.invalid[reject_index(&kind)].fetch_add(1, Ordering::Relaxed);
        Verdict::Invalid(kind)
    }

    /// Counts of every outcome so far, with the seen-test's statistics.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// admission.admit_str("https://other.example/", 0)?;
    /// assert_eq!(admission.stats().dropped, [("out_of_scope", 1)]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn stats(&self) -> AdmissionStats {
        AdmissionStats {
            new: self.new.load(Ordering::Relaxed),
            seen: self.seen_again.load(Ordering::Relaxed),
            dropped: DropReason::ALL
                .iter()
                .map(|&r| (r.reason(), self.dropped.get(r)))
                .filter(|&(_, n)| n > 0)
                .collect(),
            invalid: INVALID_REASONS
                .iter()
                .zip(&self.invalid)
                .map(|(&r, n)| (r, n.load(Ordering::Relaxed)))
                .filter(|&(_, n)| n > 0)
                .collect(),
            seen_set: self.seen.stats(),
        }
    }

    /// The seen-test, to checkpoint its filter.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeRules, SeenSet};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// let bytes = admission.seen_set().filter().to_bytes();
    /// assert!(!bytes.is_empty());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn seen_set(&self) -> &SeenSet {
        &self.seen
    }

    /// The scope and trap rules URLs are checked against; see [`ScopeRules::add_seed`] to
    /// widen them while the crawl runs.
    ///
    /// # Example
    ///
    /// ```
    /// # use frontier::{Admission, Canonicalizer, ScopeMode, ScopeRules, SeenSet};
    /// # let canon = Canonicalizer::new();
    /// # let seed = canon.canonicalize("https://example.com/").unwrap();
    /// # let scope = ScopeRules::builder().seed(&seed).build().unwrap();
    /// # let admission = Admission::new(canon, scope, SeenSet::builder().initial_capacity(100).build()?);
    /// assert_eq!(admission.scope().mode(), ScopeMode::SeedHosts);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn scope(&self) -> &ScopeRules {
        &self.scope
    }
}

impl Admission {
    /// Appends the counters, the seen-test's counters and the host budget to `out`, for a
    /// checkpoint; the filter itself is written apart.
    pub(crate) fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.new.load(Ordering::Relaxed));
        put_varint(out, self.seen_again.load(Ordering::Relaxed));
        put_varint(out, DropReason::ALL.len() as u64);
        for (_, n) in self.dropped.iter() {
            put_varint(out, n);
        }
        put_varint(out, self.invalid.len() as u64);
        for n in &self.invalid {
            put_varint(out, n.load(Ordering::Relaxed));
        }
        let (admitted, expected) = self.seen.counters();
        put_varint(out, admitted);
        put_varint(out, expected.to_bits());
        let budget = self.budget.entries();
        put_varint(out, budget.len() as u64);
        for (host, pages) in budget {
            put_bytes(out, host.as_bytes());
            put_varint(out, pages);
        }
    }

    /// Rebuilds admission from [`encode`](Self::encode)'s bytes and the checkpoint's
    /// filter; `None` when the bytes do not decode.
    pub(crate) fn decode(
        reader: &mut Reader<'_>,
        canon: Canonicalizer,
        scope: ScopeRules,
        filter: bloom::AtomicScalableBloomFilter,
    ) -> Option<Admission> {
        let new = reader.varint()?;
        let seen_again = reader.varint()?;
        // New reasons are added at the end of `ALL`: a checkpoint written before one was
        // added has fewer counts, the first ones.
        let reasons = usize::try_from(reader.varint()?).ok()?;
        if reasons > DropReason::ALL.len() {
            return None;
        }
        let dropped = DropCounts::new();
        for reason in &DropReason::ALL[..reasons] {
            dropped.add(*reason, reader.varint()?);
        }
        if reader.varint()? != INVALID_REASONS.len() as u64 {
            return None;
        }
        let invalid: [AtomicU64; INVALID_REASONS.len()] = Default::default();
        for n in &invalid {
            n.store(reader.varint()?, Ordering::Relaxed);
        }
        let admitted = reader.varint()?;
        let expected = f64::from_bits(reader.varint()?);
        if !(expected.is_finite() && expected >= 0.0) {
            return None;
        }
        let budget = scope.host_budget();
        for _ in 0..reader.varint()? {
            let host = reader.str()?;
            budget.restore(host, reader.varint()?);
        }
        let seen = SeenSet::restore(filter, admitted, expected);
        let mut admission = Self::with_budget(canon, scope, seen, Some(budget));
        admission.new = AtomicU64::new(new);
        admission.seen_again = AtomicU64::new(seen_again);
        admission.dropped = dropped;
        admission.invalid = invalid;
        Some(admission)
    }
}

impl fmt::Debug for Admission {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Admission")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
