//! [`Frontier`]: admission and the queues behind one thread-safe handle, with checkpoints.

use std::collections::HashMap;
use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard, PoisonError, RwLock};
use std::time::{Duration, Instant};

use url::Url;

use crate::admission::Repeat;
use crate::journal::{self, Journal, JournalBatch, Replayed};
use crate::page_links::PageLinks;
use crate::{
    Admission, AdmissionStats, Canonical, Canonicalizer, Completion, DiskError, DiskErrorKind,
    DropReason, Fate, ForeignLease, HostQueues, Lease, MAX_MEMO_BYTES, Next, Outcome, Politeness,
    Pushed, QueueStats, RejectKind, ScopeMode, ScopeRules, SeenSet, SeenSetBuilder, SpillSettings,
    Verdict,
};

/// A crawler's frontier: every URL goes through admission (canonical form, scope and traps,
/// the seen-test, the host budget) and, if new, into the per-host queues, from which workers
/// lease URLs politely. It can be checkpointed to a directory and opened from it.
///
/// All methods take `&self`: share it between worker threads (in an `Arc`). Pushes run
/// admission in parallel, on the lock-free seen-test; queueing, popping and completing
/// take a short lock on the queues.
///
/// # Example
///
/// ```
/// use std::time::Instant;
/// use frontier::{Frontier, Outcome, Next, Push};
///
/// let frontier = Frontier::builder().build()?;
/// let now = Instant::now();
/// assert_eq!(frontier.push("https://example.com/", 0, now)?, Push::Queued);
/// assert_eq!(frontier.push("https://EXAMPLE.com/#top", 0, now)?, Push::Seen);
///
/// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
/// assert_eq!(lease.url().as_str(), "https://example.com/");
/// // ... fetch it, push its links with `push_link`, then:
/// frontier.complete(lease, Outcome::Success, now)?;
/// assert_eq!(frontier.pop(now)?, Next::Done);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct Frontier {
    pub(crate) admission: Admission,
    pub(crate) queues: Mutex<HostQueues>,
    /// Held shared by every push, from admission to queueing, and exclusively by a
    /// checkpoint: a URL the seen-test has marked is always in the queues by the time a
    /// snapshot is taken, so no restored frontier can have seen a URL it never queued.
    pub(crate) gate: RwLock<()>,
    /// What changed since the last checkpoint, if the frontier keeps a journal.
    journal: Option<Journal>,
    /// What opening the frontier replayed from its journal.
    replayed: Option<Replayed>,
}

/// The settings of a [`Frontier`]; from [`Frontier::builder`].
///
/// Without settings: [`ScopeMode::AnyHost`] with the default trap rules, the default
/// canonicalizer, seen-test and politeness, and no disk spill.
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, Frontier, Politeness, ScopeRules, SeenSet, SpillSettings};
///
/// let canon = Canonicalizer::new();
/// let seed = canon.canonicalize("https://example.com/").unwrap();
/// let dir = std::env::temp_dir().join(format!("frontier-doc-builder-{}", std::process::id()));
/// let frontier = Frontier::builder()
///     .canonicalizer(canon)
///     .scope(ScopeRules::builder().seed(&seed).build()?)
///     .seen(SeenSet::builder().initial_capacity(1_000_000).false_positive_rate(1e-6))
///     .politeness(Politeness::default())
///     .spill(SpillSettings::new(&dir).memory_budget(64 << 20))
///     .build()?;
/// # drop(frontier);
/// # std::fs::remove_dir_all(&dir)?;
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug)]
#[must_use]
pub struct FrontierBuilder {
    canonicalizer: Canonicalizer,
    scope: Option<ScopeRules>,
    seen: SeenSetBuilder,
    politeness: Politeness,
    spill: Option<SpillSettings>,
    /// Where the journal goes, if one is kept: the checkpoint directory.
    journal: Option<PathBuf>,
}

/// What [`Frontier::push`] did with a URL.
///
/// # Example
///
/// ```
/// use frontier::{Frontier, Push};
///
/// let frontier = Frontier::builder().build()?;
/// let now = std::time::Instant::now();
/// assert_eq!(frontier.push("mailto:me@example.com", 0, now)?.reason(), "unsupported_scheme");
/// # Ok::<(), frontier::FrontierError>(())
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Push {
    /// New: queued behind its host's other URLs.
    Queued,
    /// New, but its host has been given up: queued all the same, to be handed out at once
    /// as a lease flagged [`Lease::host_given_up`](crate::Lease::host_given_up) and recorded,
    /// not fetched.
    HostGivenUp,
    /// Admitted before, or (at the seen-test's false-positive rate) taken for such.
    Seen,
    /// Dropped by a scope or trap rule, or by the host's page budget.
    Dropped(DropReason),
    /// Not a URL the crawler fetches.
    Invalid(RejectKind),
}

impl Push {
    /// A short, stable name for counters and logs: `queued`, `host_given_up`, `seen`, a
    /// [`DropReason::reason`] or a [`Rejected::reason`](crate::Rejected::reason).
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::Push::Queued.reason(), "queued");
    /// ```
    pub fn reason(&self) -> &'static str {
        match self {
            Push::Queued => "queued",
            Push::HostGivenUp => "host_given_up",
            Push::Seen => Verdict::Seen.reason(),
            Push::Dropped(reason) => reason.reason(),
            Push::Invalid(kind) => Verdict::Invalid(kind.clone()).reason(),
        }
    }
}

/// Why the frontier could not take or hand out a URL.
///
/// # Example
///
/// ```
/// use frontier::{Frontier, FrontierError};
///
/// match Frontier::builder().seen(frontier::SeenSet::builder().initial_capacity(0)).build() {
///     Err(FrontierError::Filter(err)) => println!("bad seen-test settings: {err}"),
///     Err(other) => println!("{other}"),
///     Ok(_) => unreachable!("a capacity of 0 is refused"),
/// }
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub enum FrontierError {
    /// The seen-test's filter: bad settings, or it had to grow and could not.
    Filter(bloom::Error),
    /// A spill file could not be written or read (see [`HostQueues::push`] and
    /// [`HostQueues::pop`] for what that means for the URLs).
    Disk(DiskError),
}

impl fmt::Display for FrontierError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FrontierError::Filter(err) => write!(f, "seen-test filter: {err}"),
            FrontierError::Disk(err) => write!(f, "disk spill: {err}"),
        }
    }
}

impl std::error::Error for FrontierError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            FrontierError::Filter(err) => Some(err),
            FrontierError::Disk(err) => Some(err),
        }
    }
}

impl From<bloom::Error> for FrontierError {
    fn from(err: bloom::Error) -> Self {
        FrontierError::Filter(err)
    }
}

impl From<DiskError> for FrontierError {
    fn from(err: DiskError) -> Self {
        FrontierError::Disk(err)
    }
}

/// Counts of everything the frontier did: admission outcomes and the seen-test's accuracy,
/// and the queues' contents and history.
///
/// # Example
///
/// ```
/// use frontier::Frontier;
///
/// let frontier = Frontier::builder().build()?;
/// frontier.push("https://example.com/", 0, std::time::Instant::now())?;
/// let stats = frontier.stats();
/// assert_eq!((stats.admission.new, stats.queues.queued), (1, 1));
/// # Ok::<(), frontier::FrontierError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct FrontierStats {
    /// Admission outcomes, drops by reason, and the seen-test's size and accuracy.
    pub admission: AdmissionStats,
    /// Queued, in flight, done, spilled.
    pub queues: QueueStats,
}

impl Default for FrontierBuilder {
    fn default() -> Self {
        FrontierBuilder {
            canonicalizer: Canonicalizer::new(),
            scope: None,
            seen: SeenSet::builder(),
            politeness: Politeness::default(),
            spill: None,
            journal: None,
        }
    }
}

impl FrontierBuilder {
    /// How URLs are put in canonical form.
    ///
    /// # Example
    ///
    /// ```
    /// let canon = frontier::Canonicalizer::builder().sort_query(false).build();
    /// let frontier = frontier::Frontier::builder().canonicalizer(canon).build()?;
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn canonicalizer(mut self, canonicalizer: Canonicalizer) -> Self {
        self.canonicalizer = canonicalizer;
        self
    }

    /// Which URLs are in scope, and the trap rules.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Frontier, Push, DropReason, ScopeRules};
    ///
    /// let seed = frontier::Canonicalizer::new().canonicalize("https://example.com/").unwrap();
    /// let frontier = Frontier::builder().scope(ScopeRules::builder().seed(&seed).build()?).build()?;
    /// let now = std::time::Instant::now();
    /// assert_eq!(frontier.push("https://elsewhere.example/", 1, now)?, Push::Dropped(DropReason::OutOfScope));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn scope(mut self, scope: ScopeRules) -> Self {
        self.scope = Some(scope);
        self
    }

    /// The seen-test's initial capacity, false-positive rate and key. Ignored by
    /// [`Frontier::open`], which restores the checkpoint's filter.
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().initial_capacity(50_000_000).key([7; 16]);
    /// let frontier = frontier::Frontier::builder().seen(seen).build()?;
    /// assert_eq!(frontier.stats().admission.seen_set.capacity, 50_000_000);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn seen(mut self, seen: SeenSetBuilder) -> Self {
        self.seen = seen;
        self
    }

    /// Connections, delays, back-off and retries per host.
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::Politeness::builder().connections_per_host(2).build()?;
    /// let frontier = frontier::Frontier::builder().politeness(polite).build()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn politeness(mut self, politeness: Politeness) -> Self {
        self.politeness = politeness;
        self
    }

    /// Spill queued URLs beyond a memory budget to disk (see [`SpillSettings`]).
    ///
    /// # Example
    ///
    /// ```
    /// let builder = frontier::Frontier::builder()
    ///     .spill(frontier::SpillSettings::new("/var/tmp/crawl-spill").memory_budget(128 << 20));
    /// ```
    pub fn spill(mut self, spill: SpillSettings) -> Self {
        self.spill = Some(spill);
        self
    }

    /// Keep a journal in `dir`, the directory the frontier is
    /// [checkpointed](Frontier::checkpoint) to: every URL admitted and every URL done with
    /// is recorded, to be written to disk by [`Frontier::write_journal`] at the caller's
    /// pace (group commit), and replayed on top of the last checkpoint by
    /// [`Frontier::open`] (or by [`build`](Self::build) when there is no checkpoint yet).
    /// A crash then costs what was not yet written, not everything since the checkpoint.
    /// Default: no journal. See the crate's README for the format and guarantees.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Frontier, Next, Push};
    ///
    /// let dir = std::env::temp_dir().join(format!("frontier-doc-journal-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let now = Instant::now();
    /// let frontier = Frontier::builder().journal(&dir).build()?;
    /// frontier.push("https://example.com/", 0, now)?;
    /// frontier.sync_journal()?; // on disk
    /// drop(frontier); // a crash: no checkpoint was ever written
    ///
    /// let again = Frontier::builder().journal(&dir).build()?;
    /// assert_eq!(again.replayed().map(|r| r.admitted), Some(1));
    /// assert_eq!(again.push("https://example.com/", 0, now)?, Push::Seen);
    /// assert!(matches!(again.pop(Instant::now())?, Next::Lease(_)));
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn journal(mut self, dir: impl Into<PathBuf>) -> Self {
        self.journal = Some(dir.into());
        self
    }

    /// An empty frontier.
    ///
    /// # Errors
    ///
    /// [`FrontierError::Filter`] for seen-test settings the filter refuses;
    /// [`FrontierError::Disk`] when the spill directory cannot be used.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// assert_eq!(frontier.stats().queues.queued, 0);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn build(self) -> Result<Frontier, FrontierError> {
        let journal = self.journal.clone();
        let (canon, scope, politeness, spill, seen) = self.into_parts();
        let seen = seen.build()?;
        let queues = match spill {
            Some(spill) => HostQueues::with_spill(politeness, spill)?,
            None => HostQueues::new(politeness),
        };
        let mut frontier = Frontier::from_parts(Admission::new(canon, scope, seen), queues);
        frontier.attach_journal(journal, 0, Instant::now())?;
        Ok(frontier)
    }

    /// The settings: canonicalizer, scope, politeness, spill, and the seen-test's, which
    /// a checkpoint replaces.
    pub(crate) fn into_parts(
        self,
    ) -> (
        Canonicalizer,
        ScopeRules,
        Politeness,
        Option<SpillSettings>,
        SeenSetBuilder,
    ) {
        let scope = self.scope.unwrap_or_else(|| {
            ScopeRules::builder()
                .mode(ScopeMode::AnyHost)
                .build()
                .expect("rules without patterns build")
        });
        (
            self.canonicalizer,
            scope,
            self.politeness,
            self.spill,
            self.seen,
        )
    }
}

impl Frontier {
    /// Settings for a new frontier, or for [`open`](Self::open)ing a checkpoint.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn builder() -> FrontierBuilder {
        FrontierBuilder::default()
    }

    pub(crate) fn from_parts(admission: Admission, queues: HostQueues) -> Self {
        Frontier {
            admission,
            queues: Mutex::new(queues),
            gate: RwLock::new(()),
            journal: None,
            replayed: None,
        }
    }

    /// Starts the journal in `dir` after checkpoint `generation`, replaying what it holds
    /// first (a torn tail is cut off the file).
    fn attach_journal(
        &mut self,
        dir: Option<PathBuf>,
        generation: u64,
        now: Instant,
    ) -> Result<(), DiskError> {
        let Some(dir) = dir else {
            return Ok(());
        };
        if let Some((path, bytes, torn)) = journal::load(&dir, generation)? {
            let (entries, _) = journal::read(&path, &bytes)?;
            self.replay(&path, &entries, now)?;
            let admitted = entries
                .iter()
                .filter(|e| matches!(e, journal::Entry::Admit { .. }))
                .count() as u64;
            self.replayed = Some(Replayed {
                path,
                entries: entries.len() as u64,
                admitted,
                done: entries.len() as u64 - admitted,
                torn_bytes: torn,
            });
        }
        self.journal = Some(Journal::new(dir, generation));
        Ok(())
    }

    /// Applies a journal's entries: URLs admitted are seen and queued, unless done since;
    /// URLs done that the checkpoint holds queued are dropped when their turn comes.
    fn replay(
        &self,
        path: &Path,
        entries: &[journal::Entry<'_>],
        now: Instant,
    ) -> Result<(), DiskError> {
        let mut done: HashMap<&str, Fate> = entries
            .iter()
            .filter_map(|entry| match *entry {
                journal::Entry::Done { fate, url } => Some((url, fate)),
                journal::Entry::Admit { .. } => None,
            })
            .collect();
        let mut queues = self.lock_queues();
        for entry in entries {
            let journal::Entry::Admit {
                depth,
                from,
                memo,
                url,
            } = *entry
            else {
                continue;
            };
            // Canonical when written; if this version spells it otherwise, it is still the
            // URL the crawl admitted.
            let Ok(canonical) = self.admission.canonicalizer().canonicalize(url) else {
                continue;
            };
            self.admission
                .readmit(&canonical)
                .map_err(|e| DiskError::new(path, DiskErrorKind::Filter(e)))?;
            match done.remove(url) {
                Some(fate) => queues.count_replayed(fate),
                None => {
                    queues.push_with(canonical, from, memo, depth, now)?;
                }
            }
        }
        for (url, fate) in done {
            queues.mark_done(url, fate);
        }
        Ok(())
    }

    /// Admits a URL (a seed, or a link already resolved), found `depth` links from a seed,
    /// and queues it if new.
    ///
    /// # Errors
    ///
    /// [`FrontierError::Filter`] when the seen-test had to grow and could not: the URL was
    /// neither admitted nor counted. [`FrontierError::Disk`] when spilling failed: the URL
    /// is queued all the same, in memory (see [`HostQueues::push`]).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Frontier, Push};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// assert_eq!(frontier.push("https://example.com/a?b=1&a=2", 0, now)?, Push::Queued);
    /// assert_eq!(frontier.push("https://example.com/a?a=2&b=1", 0, now)?, Push::Seen);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn push(&self, url: &str, depth: u32, now: Instant) -> Result<Push, FrontierError> {
        let _gate = self.read_gate();
        let verdict = self.admission.admit_str(url, depth)?;
        self.queue(verdict, None, None, depth, now)
    }

    /// Admits a link found on page `base` (resolved against it) and queues it if new, with
    /// the page as its [referrer](Lease::referrer).
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Frontier, Push};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// let page = frontier::Url::parse("https://example.com/docs/").unwrap();
    /// assert_eq!(frontier.push_link(&page, "intro.html#part-2", 1, now)?, Push::Queued);
    /// assert_eq!(frontier.push("https://example.com/docs/intro.html", 0, now)?, Push::Seen);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn push_link(
        &self,
        base: &Url,
        href: &str,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        self.push_link_on(base, base, href, depth, now)
    }

    /// [`push_link`](Self::push_link) for a page whose links resolve against another URL
    /// (its `<base href>`): see [`Admission::admit_link_on`]. The lease of the link names
    /// `page` as its [referrer](Lease::referrer).
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Frontier, Push};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// let page = frontier::Url::parse("https://example.com/docs/a.html").unwrap();
    /// let base = frontier::Url::parse("https://example.com/").unwrap();
    /// assert_eq!(frontier.push_link_on(&page, &base, "b.html", 1, now)?, Push::Queued);
    /// assert_eq!(frontier.push("https://example.com/b.html", 0, now)?, Push::Seen);
    /// let frontier::Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.referrer(), Some("https://example.com/docs/a.html"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_link_on(
        &self,
        page: &Url,
        base: &Url,
        href: &str,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        let _gate = self.read_gate();
        let verdict = self.admission.admit_link_on(page, base, href, depth)?;
        self.queue(verdict, Some(page.as_str()), None, depth, now)
    }

    /// [`push_link_on`](Self::push_link_on) for each of a page's links, in order. A link
    /// repeated on the page (the same text before its `#`) is resolved once: its repeats are
    /// counted as that first one decides, as pushing them would have (seen, or dropped or
    /// invalid for the same reason), without being resolved, canonicalized or hashed again.
    /// Pages repeat about half their links (a table of contents and a body that link to
    /// the same sections).
    ///
    /// Returns how many links were queued.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push): the first error met. A link that fails does not keep the
    /// others out.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Frontier;
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// let page = frontier::Url::parse("https://example.com/docs/a.html").unwrap();
    /// let hrefs = ["b.html#one", "b.html#two", "c.html", "mailto:x@example.com", "b.html"];
    /// assert_eq!(frontier.push_links_on(&page, &page, &hrefs, 1, now)?, 2);
    /// let stats = frontier.stats().admission;
    /// assert_eq!((stats.new, stats.seen), (2, 2));
    /// assert_eq!(stats.invalid, [("unsupported_scheme", 1)]);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn push_links_on<S: AsRef<str>>(
        &self,
        page: &Url,
        base: &Url,
        hrefs: &[S],
        depth: u32,
        now: Instant,
    ) -> Result<usize, FrontierError> {
        let max = self.admission.canonicalizer().max_length();
        let mut firsts: PageLinks<'_, Repeat> = PageLinks::new(max, hrefs.len());
        let mut queued = 0;
        let mut first_error = None;
        let mut buffer = String::new();
        for href in hrefs {
            let href = href.as_ref();
            if let Some(first) = firsts.first_of(href) {
                self.admission.count_repeat(&first);
                continue;
            }
            let pushed = {
                let _gate = self.read_gate();
                self.admission
                    .admit_link_buffered(page, base, href, depth, &mut buffer)
                    .map_err(FrontierError::from)
                    .and_then(|verdict| self.queue(verdict, Some(page.as_str()), None, depth, now))
            };
            match pushed {
                Ok(push) => {
                    queued += usize::from(matches!(push, Push::Queued | Push::HostGivenUp));
                    firsts.judged(href, Repeat::of(&push));
                }
                Err(err) => {
                    first_error.get_or_insert(err);
                }
            }
        }
        first_error.map_or(Ok(queued), Err)
    }

    /// Admits a URL already in canonical form and queues it if new: the cheapest push, for
    /// callers that canonicalize in parallel elsewhere.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, Frontier, Push};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let url = Canonicalizer::new().canonicalize("https://example.com/").unwrap();
    /// assert_eq!(frontier.push_canonical(url, 0, std::time::Instant::now())?, Push::Queued);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn push_canonical(
        &self,
        url: Canonical,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        self.push_canonical_from(url, None, depth, now)
    }

    /// [`push_canonical`](Self::push_canonical) with the URL that led to it, for what is
    /// not a link on a page: the URL whose redirect points here, the sitemap that lists it.
    /// `None` for a seed.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, Frontier, Next, Push};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// let target = Canonicalizer::new().canonicalize("https://www.example.com/")?;
    /// let pushed = frontier.push_canonical_from(target, Some("https://example.com/"), 0, now)?;
    /// assert_eq!(pushed, Push::Queued);
    /// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.referrer(), Some("https://example.com/"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_canonical_from(
        &self,
        url: Canonical,
        referrer: Option<&str>,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        self.push_canonical_with(url, referrer, None, depth, now)
    }

    /// [`push_canonical_from`](Self::push_canonical_from) with a memo, the caller's bytes
    /// handed back with the URL's lease ([`Lease::memo`]) and kept with it through retries,
    /// spill runs, checkpoints and the journal (see [`HostQueues::push_with`]; one longer than
    /// [`MAX_MEMO_BYTES`] is not kept). A URL seen before keeps the memo it was queued with,
    /// if any: this one is dropped with it.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, Frontier, Next, Push};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// let url = Canonicalizer::new().canonicalize("https://example.com/")?;
    /// let pushed = frontier.push_canonical_with(url, None, Some(b"v1"), 0, now)?;
    /// assert_eq!(pushed, Push::Queued);
    /// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.memo(), Some(&b"v1"[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_canonical_with(
        &self,
        url: Canonical,
        referrer: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        let _gate = self.read_gate();
        let verdict = self.admission.admit(url, depth)?;
        // Not journaled either: the journal's reader would take it for damage.
        let memo = memo.filter(|memo| memo.len() <= MAX_MEMO_BYTES);
        self.queue(verdict, referrer, memo, depth, now)
    }

    /// Queues a page requisite (an image, style sheet or script that page `from` needs to
    /// render; `None` when not known), admitted by [`Admission::admit_requisite`]'s rules rather than the scope's,
    /// with a memo as [`push_canonical_with`](Self::push_canonical_with) keeps one (the
    /// caller's mark that its lease is a requisite's).
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, Frontier, Next, Push, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let seed = canon.canonicalize("https://example.com/")?;
    /// let frontier = Frontier::builder().scope(ScopeRules::builder().seed(&seed).build()?).build()?;
    /// let now = std::time::Instant::now();
    /// let css = canon.canonicalize("https://cdn.example.net/site.css")?;
    /// assert!(matches!(frontier.push_canonical(css.clone(), 1, now)?, Push::Dropped(_)));
    /// let page = "https://example.com/";
    /// assert_eq!(frontier.push_requisite(css, Some(page), Some(b"r"), 1, now)?, Push::Queued);
    /// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// assert_eq!((lease.referrer(), lease.memo()), (Some(page), Some(&b"r"[..])));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_requisite(
        &self,
        url: Canonical,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        let _gate = self.read_gate();
        let verdict = self.admission.admit_requisite(url)?;
        let memo = memo.filter(|memo| memo.len() <= MAX_MEMO_BYTES);
        self.queue(verdict, from, memo, depth, now)
    }

    /// Queues a new URL, found on page `from`, with `memo`; the gate must be held from its
    /// admission on.
    fn queue(
        &self,
        verdict: Verdict,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
        now: Instant,
    ) -> Result<Push, FrontierError> {
        Ok(match verdict {
            Verdict::New(url) => match self
                .journaled(&url, from, memo, depth)
                .push_with(url, from, memo, depth, now)?
            {
                Pushed::Queued => Push::Queued,
                Pushed::HostGivenUp => Push::HostGivenUp,
            },
            Verdict::Seen => Push::Seen,
            Verdict::Dropped(reason) => Push::Dropped(reason),
            Verdict::Invalid(kind) => Push::Invalid(kind),
        })
    }

    /// Leases the next URL to fetch, or says how long to wait: see [`HostQueues::pop`].
    ///
    /// # Errors
    ///
    /// [`FrontierError::Disk`] when spilled URLs could not be read back: see
    /// [`HostQueues::pop`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Frontier, Next};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// assert_eq!(frontier.pop(std::time::Instant::now())?, Next::Done);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn pop(&self, now: Instant) -> Result<Next, FrontierError> {
        Ok(self.lock_queues().pop(now)?)
    }

    /// Gives back a lease with its fetch's outcome: see [`HostQueues::complete`].
    ///
    /// # Errors
    ///
    /// [`ForeignLease`] for a lease of another frontier: nothing is changed.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Fate, Frontier, Outcome, Next};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// frontier.push("https://example.com/", 0, now)?;
    /// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// assert_eq!(frontier.complete(lease, Outcome::Success, now)?.fate, Fate::Succeeded);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn complete(
        &self,
        lease: Lease,
        outcome: Outcome,
        now: Instant,
    ) -> Result<Completion, ForeignLease> {
        let url = self
            .journal
            .as_ref()
            .map(|_| lease.url().as_str().to_owned());
        let mut queues = self.lock_queues();
        let completion = queues.complete(lease, outcome, now)?;
        if let (Some(journal), Some(url)) = (&self.journal, url)
            && !matches!(completion.fate, Fate::Retried { .. })
        {
            // Under the queues' lock, so that a checkpoint (which holds it) either holds
            // this completion or comes before the entry.
            journal.append(journal::Entry::Done {
                fate: completion.fate,
                url: &url,
            });
        }
        Ok(completion)
    }

    /// Takes the journal entries recorded since the last batch was taken, to be written by
    /// [`write_journal`](Self::write_journal). Empty without a journal. Taking a batch and
    /// writing it are two steps so that a caller can make its own writes durable in
    /// between: whatever the caller did before a completion reached the batch (a record of
    /// the fetch, say) is then on disk before the completion is.
    ///
    /// # Example
    ///
    /// See [`FrontierBuilder::journal`].
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("frontier-doc-batch-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let frontier = frontier::Frontier::builder().journal(&dir).build()?;
    /// frontier.push("https://example.com/", 0, std::time::Instant::now())?;
    /// let batch = frontier.journal_batch();
    /// assert_eq!(batch.len(), 1);
    /// // ... make the caller's own writes durable, then:
    /// frontier.write_journal(batch)?;
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn journal_batch(&self) -> JournalBatch {
        self.journal
            .as_ref()
            .map_or_else(JournalBatch::default, Journal::take)
    }

    /// Appends a batch to the journal file and flushes it to disk (`fdatasync`). A batch
    /// taken before a checkpoint is dropped: the checkpoint holds it.
    ///
    /// # Errors
    ///
    /// [`DiskError`] when the file cannot be written: the file is cut back to where it was
    /// and the batch put back, to be written with the next one; a crash meanwhile repeats
    /// the batch's work. The frontier goes on.
    ///
    /// # Example
    ///
    /// See [`journal_batch`](Self::journal_batch).
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// frontier.write_journal(frontier.journal_batch())?; // no journal: nothing to do
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn write_journal(&self, batch: JournalBatch) -> Result<(), DiskError> {
        match &self.journal {
            Some(journal) => journal.write(batch),
            None => Ok(()),
        }
    }

    /// Puts a batch taken by [`journal_batch`](Self::journal_batch) back, in front of the
    /// entries recorded since, for a caller that could not make its own writes durable and
    /// so must not write the batch yet. Entries are never skipped: the next batch holds them.
    ///
    /// # Example
    ///
    /// ```
    /// let dir = std::env::temp_dir().join(format!("frontier-doc-put-back-{}", std::process::id()));
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// let frontier = frontier::Frontier::builder().journal(&dir).build()?;
    /// frontier.push("https://example.com/", 0, std::time::Instant::now())?;
    /// let batch = frontier.journal_batch();
    /// frontier.put_back_journal(batch); // the caller's records could not be written
    /// assert_eq!(frontier.journal_batch().len(), 1);
    /// # let _ = std::fs::remove_dir_all(&dir);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn put_back_journal(&self, batch: JournalBatch) {
        if let Some(journal) = &self.journal {
            journal.put_back(batch);
        }
    }

    /// Writes the journal entries recorded so far and flushes them to disk:
    /// [`journal_batch`](Self::journal_batch) then [`write_journal`](Self::write_journal).
    ///
    /// # Errors
    ///
    /// As [`write_journal`](Self::write_journal).
    ///
    /// # Example
    ///
    /// See [`FrontierBuilder::journal`].
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// frontier.sync_journal()?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn sync_journal(&self) -> Result<(), DiskError> {
        self.write_journal(self.journal_batch())
    }

    /// What opening the frontier replayed from its journal, if it keeps one and there was
    /// something to replay.
    ///
    /// # Example
    ///
    /// See [`FrontierBuilder::journal`].
    ///
    /// ```
    /// assert_eq!(frontier::Frontier::builder().build()?.replayed(), None);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn replayed(&self) -> Option<&Replayed> {
        self.replayed.as_ref()
    }

    /// Gives back a lease whose fetch did not happen: see [`HostQueues::abandon`].
    ///
    /// # Errors
    ///
    /// [`ForeignLease`] for a lease of another frontier: nothing is changed.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Frontier, Next};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// frontier.push("https://example.com/", 0, now)?;
    /// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// frontier.abandon(lease, now)?;
    /// assert_eq!(frontier.stats().queues.queued, 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abandon(&self, lease: Lease, now: Instant) -> Result<(), ForeignLease> {
        self.lock_queues().abandon(lease, now)
    }

    /// Gives a lease back as [`abandon`](Self::abandon) does, its host not leased again
    /// before `not_before`: see [`HostQueues::abandon_until`].
    ///
    /// # Errors
    ///
    /// [`ForeignLease`] for a lease of another frontier: nothing is changed.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// use frontier::{Frontier, Next};
    ///
    /// let frontier = Frontier::builder().build()?;
    /// let now = std::time::Instant::now();
    /// frontier.push("https://example.com/", 0, now)?;
    /// let Next::Lease(lease) = frontier.pop(now)? else { unreachable!() };
    /// frontier.abandon_until(lease, now, now + Duration::from_secs(5))?;
    /// assert_eq!(frontier.pop(now)?, Next::WaitUntil(now + Duration::from_secs(5)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abandon_until(
        &self,
        lease: Lease,
        now: Instant,
        not_before: Instant,
    ) -> Result<(), ForeignLease> {
        self.lock_queues().abandon_until(lease, now, not_before)
    }

    /// Sets a host's robots.txt `Crawl-delay`: see [`HostQueues::set_crawl_delay`].
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let frontier = frontier::Frontier::builder().build()?;
    /// assert_eq!(frontier.set_crawl_delay("example.com", Duration::from_secs(5)), Duration::from_secs(5));
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn set_crawl_delay(&self, host: &str, delay: Duration) -> Duration {
        self.lock_queues().set_crawl_delay(host, delay)
    }

    /// Adds a seed while the crawl runs: its host (or domain) joins the scope, as
    /// [`ScopeRules::add_seed`] says. The URL itself is not pushed: push it too, at depth 0.
    /// Not kept by [`checkpoint`](Self::checkpoint): the scope is the caller's to rebuild,
    /// so a caller that resumes must add it to the builder's seeds again.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, Frontier, Push, ScopeRules};
    ///
    /// let canon = Canonicalizer::new();
    /// let seed = canon.canonicalize("https://example.com/")?;
    /// let frontier = Frontier::builder()
    ///     .scope(ScopeRules::builder().seed(&seed).build()?)
    ///     .build()?;
    /// let now = std::time::Instant::now();
    /// // example.com answered with a redirect to www.example.com: a seed too.
    /// let www = canon.canonicalize("https://www.example.com/")?;
    /// frontier.add_seed(&www);
    /// assert_eq!(frontier.push_canonical(www, 0, now)?, Push::Queued);
    /// assert_eq!(frontier.push("https://www.example.com/about", 1, now)?, Push::Queued);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn add_seed(&self, url: &Canonical) {
        self.admission.scope().add_seed(url);
    }

    /// Counts of everything so far.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// frontier.push("not a url", 0, std::time::Instant::now())?;
    /// assert_eq!(frontier.stats().admission.invalid, [("unparsable", 1)]);
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn stats(&self) -> FrontierStats {
        FrontierStats {
            admission: self.admission.stats(),
            queues: self.lock_queues().stats(),
        }
    }

    /// Writes a consistent snapshot of the frontier to `dir`: the seen-test's filter and
    /// key, admission's counters and host budget, every host's politeness state, every
    /// queued URL (spilled ones through hard links to their segment files, or copies when
    /// `dir` is on another file system), the leases in flight, and the counters.
    ///
    /// The write is atomic: the new generation's files go beside the old ones, each to a
    /// temporary name, flushed to disk and renamed, and the `MANIFEST` last, the same way;
    /// its rename is the moment the new checkpoint replaces the old, and only then are the
    /// old files deleted. A crash at any point leaves one complete checkpoint.
    ///
    /// Pushes, pops and completions wait while it runs: a crawler checkpoints every few
    /// minutes, and the time is about that of writing the filter.
    ///
    /// # Errors
    ///
    /// [`DiskError`] naming the file that could not be written, or a `dir` holding state
    /// that is not a frontier checkpoint. The previous checkpoint in `dir`, if any, is left
    /// usable.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Frontier, Next, Push};
    ///
    /// let dir = std::env::temp_dir().join(format!("frontier-doc-checkpoint-{}", std::process::id()));
    /// let now = Instant::now();
    /// let frontier = Frontier::builder().build()?;
    /// frontier.push("https://example.com/", 0, now)?;
    /// frontier.checkpoint(&dir, now)?;
    ///
    /// let restored = Frontier::open(&dir, Frontier::builder(), now)?;
    /// assert_eq!(restored.push("https://example.com/", 0, now)?, Push::Seen);
    /// let Next::Lease(lease) = restored.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.url().as_str(), "https://example.com/");
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn checkpoint(&self, dir: impl AsRef<Path>, now: Instant) -> Result<(), DiskError> {
        let dir = dir.as_ref();
        let _gate = self.gate.write().unwrap_or_else(PoisonError::into_inner);
        // Queues a panic left half-updated may not add up: better no checkpoint than one
        // that replaces a good one and then cannot be opened.
        let mut queues = self.queues.lock().map_err(|_| {
            DiskError::corrupt(dir, "the frontier panicked while updating its queues")
        })?;
        let (generation, synced) =
            crate::checkpoint::write(dir, &self.admission, &mut queues, now)?;
        if let Some(journal) = &self.journal
            && crate::checkpoint::same_dir(journal.dir(), dir)
        {
            // Still under the gate and the queues' lock: every entry pending is in this
            // checkpoint, and every later one goes to the next generation's journal.
            journal.rotate(generation);
            // URLs a replay found done that the checkpoint still holds queued: the new
            // journal says so again, or a crash after it would fetch them once more.
            for (url, fate) in queues.done_marks() {
                journal.append(journal::Entry::Done { fate, url });
            }
        }
        synced
    }

    /// Opens the checkpoint in `dir` with the settings a checkpoint does not hold (the
    /// canonicalizer, scope, politeness and spill settings of `builder`; its seen-test
    /// settings are ignored: the filter is restored). Leases that were in flight are queued
    /// again, at the front of their hosts' queues.
    ///
    /// # Errors
    ///
    /// [`DiskError`] naming the missing, corrupt, partial or foreign file. `dir` is only
    /// read: spilled URLs are copied (and every run checked on the way) into the new spill
    /// directory, which must hold no segment files. A failed open leaves nothing behind.
    ///
    /// # Example
    ///
    /// See [`checkpoint`](Self::checkpoint).
    ///
    /// ```
    /// let err = frontier::Frontier::open("/no/such/dir", frontier::Frontier::builder(), std::time::Instant::now());
    /// assert!(err.is_err());
    /// ```
    pub fn open(
        dir: impl AsRef<Path>,
        builder: FrontierBuilder,
        now: Instant,
    ) -> Result<Frontier, DiskError> {
        let journal = builder.journal.clone();
        let (canon, scope, politeness, spill, _seen) = builder.into_parts();
        let settings = (canon, scope, politeness, spill);
        let (admission, queues, generation) = crate::checkpoint::read(dir.as_ref(), settings, now)?;
        let mut frontier = Frontier::from_parts(admission, queues);
        frontier.attach_journal(journal, generation, now)?;
        Ok(frontier)
    }

    /// The queues, locked, with a new URL's admission journaled first.
    fn journaled(
        &self,
        url: &Canonical,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
    ) -> MutexGuard<'_, HostQueues> {
        if let Some(journal) = &self.journal {
            journal.append(journal::Entry::Admit {
                depth,
                from,
                memo,
                url: url.as_str(),
            });
        }
        self.lock_queues()
    }

    fn read_gate(&self) -> std::sync::RwLockReadGuard<'_, ()> {
        // The gate guards no data: a panic elsewhere cannot have left it inconsistent.
        self.gate.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_queues(&self) -> MutexGuard<'_, HostQueues> {
        // The queues panic only on a broken invariant, a bug; other workers carrying on
        // (to finish their leases and checkpoint) beats a cascade of panics.
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for Frontier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Frontier")
            .field("admission", &self.admission)
            .field("queues", &*self.lock_queues())
            .finish_non_exhaustive()
    }
}
