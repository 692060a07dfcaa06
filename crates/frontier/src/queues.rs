//! Per-host queues and politeness: which admitted URL may be fetched now, and when the next
//! one may. The rules are listed on [`HostQueues`], the settings on [`Politeness`].
//!
//! Time is a parameter of every call: the frontier never reads the clock, so the caller
//! decides what "now" is and tests simulate it.

mod entry;
mod host;
mod lease;
mod policy;
mod politeness;
pub(crate) mod snapshot;
mod spill;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::fmt;
use std::hash::BuildHasher;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use crate::{Canonical, DiskError};
pub(crate) use entry::Entry;
use entry::Referrers;
use host::HostState;
pub use lease::{Completion, Fate, ForeignLease, Lease, Outcome};
pub(crate) use policy::later;
pub use policy::{HostRecord, Settled, Started, fate, known_fate};
pub use politeness::{
    HostPolicy, HostPoliteness, Politeness, PolitenessBuilder, PolitenessError, PolitenessErrorKind,
};
pub use spill::SpillSettings;
pub(crate) use spill::{SpillStore, link_or_copy};

/// Identities of [`HostQueues`], so that each one recognizes its own leases.
static NEXT_QUEUES_ID: AtomicU64 = AtomicU64::new(0);

/// Hosts staged per write during an eviction.
const EVICTION_BATCH: usize = 4096;

/// Ready-heap slack: stale entries are swept once they outnumber the live ones by this many,
/// so that sweeping stays rare on small frontiers.
const SWEEP_SLACK: usize = 64;

/// The admitted URLs waiting to be fetched, one FIFO queue per host, handed out so that every
/// host is treated politely.
///
/// # Rules
///
/// What a lease's start and outcome do to its host and URL is defined once, by
/// [`HostRecord`] (the Redis store of `crates/shared` runs the same rules, and the table of
/// `frontier::conformance`, built with the `conformance` feature, holds both to them); in
/// short:
///
/// * A host is *ready* when its leases in flight are fewer than
///   [`connections_per_host`](Politeness::connections_per_host) and its next-allowed instant
///   has passed. A host never leased is ready at once.
/// * [`pop`](Self::pop) leases the oldest URL of the host that has been ready longest; hosts
///   ready at the same instant take turns. Within a host, URLs go first in, first out.
/// * A host's *delay* is the longer of [`Politeness::delay`] and its robots.txt
///   `Crawl-delay` ([`set_crawl_delay`](Self::set_crawl_delay), capped at
///   [`Politeness::max_crawl_delay`]). A host with its own politeness
///   ([`PolitenessBuilder::per_host`]) uses its own delay and connection limit in place of
///   the crawl's; the `Crawl-delay`, when longer, still wins.
/// * A lease start sets the host's next-allowed instant to now plus its delay, so two starts
///   on one host are always at least the delay apart.
/// * [`complete`](Self::complete) pushes the next-allowed instant to at least now plus the
///   delay after a success, and to at least now plus the longest of the delay, the back-off
///   ([`Politeness::backoff`] of the host's consecutive errors) and the capped
///   `Retry-After` after a failure. A success resets the count of consecutive errors.
/// * [`Outcome::ErrorAnswer`] (the server answered 5xx or 429) waits the longest of the
///   delay and the capped `Retry-After`, or [`Politeness::backoff_base`] without one, however
///   many errors came before: a server that answers is up, and its broken pages are their
///   own problem. It retries the URL and counts towards giving the host up like a failure.
/// * [`Outcome::Skipped`] (no request was made) puts the host's next-allowed instant back
///   where it was before the lease started, unless another lease of the host started since;
///   so does [`abandon_until`](Self::abandon_until) (the request waits for its address's
///   turn), before it holds the host off until then.
/// * A failure that asks for a retry queues the URL again at the back of its host's queue,
///   with one more attempt, unless it has had [`Politeness::max_attempts`]: then it is
///   exhausted. Retries skip admission: the URL is not seen-tested again.
/// * A host is given up when it has failed [`Politeness::max_consecutive_errors`] times in a
///   row *and* its first failure in the row is [`Politeness::give_up_after`] old: one
///   success in between starts the count and the clock again, so broken pages cost their
///   own retries, never their site; until then the growing back-off spaces its tries. A
///   given-up host's queued URLs, those pushed to it later and retries of its leases still
///   in flight are not fetched: they are handed out at once (no delay, no request) as
///   leases flagged [`Lease::host_given_up`], so that the caller records each, and are
///   counted in [`QueueStats::given_up_urls`]. [`Completion`] and [`Pushed`] say when it
///   happens: nothing is dropped silently.
///
/// Every URL pushed is, at any time, queued, in flight, or done in exactly one way:
/// `pushed = queued + in_flight + succeeded + failed + exhausted + given_up_urls + lost_urls`
/// (see [`QueueStats`]).
///
/// # Time
///
/// Every call that depends on time takes `now`: the queues never read the clock. The caller
/// passes [`Instant::now()`], or, in tests, a start instant plus simulated offsets. `now`
/// should never go backwards between calls; if it does, the queues stay polite (no host is
/// leased before its next-allowed instant), but a host may wait longer than it should.
///
/// # Cost and memory
///
/// `push`, `pop` and `complete` take amortized O(log h) time for h hosts with queued URLs:
/// ready hosts sit in a binary heap ordered by the instant they became ready, and an entry
/// made stale by a change of its host is skipped when it surfaces, or swept once stale
/// entries outnumber live ones.
///
/// A queued URL in memory takes 16 bytes in its host's queue (a pointer, depth and
/// attempts), up to twice that with the queue's growth slack, plus its parsed form and the
/// pointers to its referrer and its memo (112 bytes) and its text on the heap: a million
/// URLs of 60 characters take about 223 MB. A referrer's text is shared by the links of its page
/// pushed in a row ([`push_from`](Self::push_from)), so it adds about 8 bytes per URL for
/// a page with 10 new links, and 80 for a page with one.
/// Queues made
/// [`with_spill`](Self::with_spill) bound that: beyond a memory budget, URLs move to
/// append-only segment files on disk, and come back in order when their host's turn comes
/// (see [`SpillSettings`]). A URL on disk costs no memory; a host with URLs on disk keeps 80
/// bytes of links to them.
///
/// A host takes about 130 bytes of state (24 more with its own politeness), its name once on the heap with some 30 bytes in
/// the interning table, kept for the whole crawl, and 32 bytes per entry in the ready heap,
/// of which there are at most about two per host with queued URLs.
///
/// # Example
///
/// ```
/// use std::time::{Duration, Instant};
/// use frontier::{Canonicalizer, HostQueues, Outcome, Politeness, Next};
///
/// let canon = Canonicalizer::new();
/// let mut queues = HostQueues::new(Politeness::default()); // 1 connection, 1 s delay
/// let t0 = Instant::now();
/// for url in ["https://a.example/1", "https://a.example/2", "https://b.example/1"] {
///     queues.push(canon.canonicalize(url)?, 0, t0)?;
/// }
///
/// let Next::Lease(a1) = queues.pop(t0)? else { panic!() };
/// let Next::Lease(b1) = queues.pop(t0)? else { panic!() };
/// assert_eq!(queues.pop(t0)?, Next::Pending); // a.example is busy, b.example has no more
///
/// queues.complete(a1, Outcome::Success, t0 + Duration::from_millis(300)).unwrap();
/// // A start at t0 and a completion at t0 + 0.3 s: the next start waits for t0 + 1.3 s.
/// assert_eq!(queues.pop(t0 + Duration::from_millis(500))?, Next::WaitUntil(t0 + Duration::from_millis(1300)));
/// let Next::Lease(a2) = queues.pop(t0 + Duration::from_millis(1300))? else { panic!() };
/// assert_eq!(a2.url().as_str(), "https://a.example/2");
///
/// queues.complete(a2, Outcome::Success, t0 + Duration::from_secs(2)).unwrap();
/// queues.complete(b1, Outcome::Success, t0 + Duration::from_secs(2)).unwrap();
/// assert_eq!(queues.pop(t0 + Duration::from_secs(2))?, Next::Done);
/// assert_eq!(queues.stats().succeeded, 3);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub struct HostQueues {
    politeness: Politeness,
    /// This instance's identity, carried by its leases: a lease from other queues must not
    /// touch the state of a host that happens to have its index here.
    id: u64,
    /// Every host seen, indexed by the number `index` gives its key.
    hosts: Vec<HostState>,
    /// Host keys ([`Canonical::host_key`]), each stored once, to their index in `hosts`. Boxed
    /// strings rather than `String`s: they never grow, and a capacity field would cost eight
    /// bytes per host for nothing.
    index: HashMap<Box<str>, u32>,
    /// Hosts with queued URLs, not given up and below their connection limit, as
    /// (instant ready, sequence number, host index), earliest first. The sequence number
    /// breaks ties in the order hosts became ready, and tells the live entry (the one whose
    /// number the host holds) from stale ones.
    ready: BinaryHeap<Reverse<(Instant, u64, u32)>>,
    /// The sequence number of the next heap entry.
    next_seq: u64,
    /// Leases in flight, by id: what a checkpoint queues again.
    leased: HashMap<u64, InFlight>,
    /// Where URLs beyond the memory budget go, if anywhere.
    spill: Option<Spill>,
    /// Bytes the queued URLs in memory take ([`Entry::bytes`]).
    memory: usize,
    stats: QueueStats,
    /// URLs a replayed journal says are done though the checkpoint holds them queued (or in
    /// flight, queued again), by a keyed hash of their text, with their fate and text (for
    /// the next checkpoint's journal: see [`done_marks`](Self::done_marks)): dropped when
    /// their turn comes. Empty but after a replay, and it only shrinks.
    done: HashMap<u64, (Fate, Box<str>)>,
    /// The key of `done`'s hash, random: pages cannot make their URLs collide with these.
    done_keys: std::collections::hash_map::RandomState,
    /// The referrers of the URLs pushed lately, shared by the links of one page.
    referrers: Referrers,
}

/// The longest memo a queued URL keeps ([`HostQueues::push_with`]), in either store: a memo
/// is what a caller knew of a URL (a recrawl's, some fifty bytes), and each admission with
/// one is a journal entry, whose reader refuses any over a megabyte as damage.
///
/// # Example
///
/// ```
/// assert_eq!(frontier::MAX_MEMO_BYTES, 65_536);
/// ```
pub const MAX_MEMO_BYTES: usize = 64 << 10;

/// A lease in flight as a checkpoint records it: its URL goes back in its host's queue when
/// the checkpoint is opened.
#[derive(Debug)]
struct InFlight {
    host: u32,
    url: Box<str>,
    /// The page whose link led to the URL, if known.
    from: Option<Arc<str>>,
    memo: Option<entry::Memo>,
    depth: u32,
    attempts: u32,
}

/// Disk spill: its settings and its files.
#[derive(Debug)]
struct Spill {
    settings: SpillSettings,
    store: SpillStore,
}

/// What a frontier answers when asked for work: [`HostQueues::pop`] and [`Frontier::pop`](crate::Frontier::pop)
/// here, and the Redis frontier's `next` with its own lease type.
///
/// # Example
///
/// ```
/// use std::time::Instant;
/// use frontier::{HostQueues, Politeness, Next};
///
/// let mut queues = HostQueues::new(Politeness::default());
/// match queues.pop(Instant::now())? {
///     Next::Lease(lease) => println!("fetch {}", lease.url()),
///     Next::WaitUntil(when) => println!("sleep until {when:?}, or until a lease completes"),
///     Next::Pending => println!("wait for a lease to complete"),
///     Next::Done => println!("the crawl is over"),
/// }
/// # Ok::<(), frontier::DiskError>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a popped lease must be completed"]
pub enum Next<L = Lease> {
    /// A URL to fetch now: a [`Lease`] of the embedded frontier, or the lease of another
    /// store of it (the Redis frontier's).
    Lease(L),
    /// No host is ready now; the first becomes ready at this instant. A lease completed
    /// before then may make a host ready sooner.
    WaitUntil(Instant),
    /// Nothing can be leased until a lease in flight completes: nothing is queued, or every
    /// host with queued URLs is at its connection limit.
    Pending,
    /// Nothing is queued and nothing is in flight: the crawl is over, unless the caller
    /// pushes more.
    Done,
}

impl<L> Next<L> {
    /// The same answer with its lease turned into another type: a store's lease wrapped in
    /// its caller's, say.
    ///
    /// ```
    /// use frontier::Next;
    /// let next: Next<u32> = Next::Lease(7);
    /// assert_eq!(next.map(|n| n * 2), Next::Lease(14));
    /// assert_eq!(Next::<u32>::Done.map(|n| n * 2), Next::Done);
    /// ```
    pub fn map<M>(self, f: impl FnOnce(L) -> M) -> Next<M> {
        match self {
            Next::Lease(lease) => Next::Lease(f(lease)),
            Next::WaitUntil(at) => Next::WaitUntil(at),
            Next::Pending => Next::Pending,
            Next::Done => Next::Done,
        }
    }
}

/// What [`HostQueues::push`] did with a URL.
///
/// # Example
///
/// ```
/// # use std::time::Instant;
/// use frontier::{Canonicalizer, HostQueues, Politeness, Pushed};
///
/// let mut queues = HostQueues::new(Politeness::default());
/// let url = Canonicalizer::new().canonicalize("https://example.com/")?;
/// assert_eq!(queues.push(url, 0, Instant::now())?, Pushed::Queued);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Pushed {
    /// Queued behind its host's other URLs.
    Queued,
    /// Queued, but its host has been given up: it will be handed out at once as a lease
    /// flagged [`Lease::host_given_up`], to be recorded rather than fetched.
    HostGivenUp,
}

/// Counts of the queues' contents and of everything that happened to them; all exact.
///
/// `pushed = queued + in_flight + succeeded + failed + exhausted + given_up_urls + lost_urls`
/// at all times.
///
/// # Example
///
/// ```
/// # use std::time::Instant;
/// use frontier::{Canonicalizer, HostQueues, Politeness};
///
/// let mut queues = HostQueues::new(Politeness::default());
/// let now = Instant::now();
/// queues.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
/// let stats = queues.stats();
/// assert_eq!((stats.pushed, stats.queued, stats.hosts, stats.hosts_queued), (1, 1, 1, 1));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct QueueStats {
    /// URLs pushed, whether queued or dropped with their host.
    pub pushed: u64,
    /// URLs waiting in queues, retries included.
    pub queued: u64,
    /// Hosts known: pushed to, or given a crawl delay.
    pub hosts: u64,
    /// Hosts with at least one queued URL.
    pub hosts_queued: u64,
    /// Leases issued and not yet completed.
    pub in_flight: u64,
    /// Leases issued, retries included.
    pub leases: u64,
    /// URLs queued again after a failure.
    pub retries: u64,
    /// Leases completed with [`Outcome::Success`].
    pub succeeded: u64,
    /// Leases completed with a failure that asked for no retry.
    pub failed: u64,
    /// URLs whose retry was refused because they had had all their attempts.
    pub exhausted: u64,
    /// Hosts given up after too many consecutive errors.
    pub given_up_hosts: u64,
    /// URLs dropped because their host was given up: queued when it was, pushed after, or
    /// asking for a retry after.
    pub given_up_urls: u64,
    /// Queued URLs spilled to disk (part of `queued`).
    pub on_disk: u64,
    /// Bytes the queued URLs in memory take, as the spill budget counts them.
    pub memory_bytes: u64,
    /// Bytes of spill segment files on disk, read-back runs included until their file goes.
    pub disk_bytes: u64,
    /// Evictions: times URLs were moved to disk because memory was over budget.
    pub evictions: u64,
    /// URLs lost because a spill file could not be read back; each loss was also reported
    /// as an error by [`HostQueues::pop`].
    pub lost_urls: u64,
}

impl QueueStats {
    /// Every URL pushed, counted where it is now: queued, in flight, or done in one of the
    /// ways a URL ends. Equal to [`pushed`](Self::pushed) at all times; the one definition of
    /// that law, for checks and for restoring checkpoints. `None` if the sum overflows (only
    /// counters from a damaged checkpoint can).
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness};
    ///
    /// let mut queues = HostQueues::new(Politeness::default());
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, Instant::now())?;
    /// let stats = queues.stats();
    /// assert_eq!(stats.accounted_for(), Some(stats.pushed));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn accounted_for(&self) -> Option<u64> {
        [
            self.in_flight,
            self.succeeded,
            self.failed,
            self.exhausted,
            self.given_up_urls,
            self.lost_urls,
        ]
        .into_iter()
        .try_fold(self.queued, u64::checked_add)
    }
}

impl HostQueues {
    /// Empty queues with the given politeness settings.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{HostQueues, Politeness};
    ///
    /// let queues = HostQueues::new(Politeness::default());
    /// assert_eq!(queues.stats().queued, 0);
    /// ```
    pub fn new(politeness: Politeness) -> Self {
        HostQueues {
            politeness,
            id: NEXT_QUEUES_ID.fetch_add(1, Ordering::Relaxed),
            hosts: Vec::new(),
            index: HashMap::new(),
            ready: BinaryHeap::new(),
            next_seq: 0,
            leased: HashMap::new(),
            spill: None,
            memory: 0,
            stats: QueueStats::default(),
            done: HashMap::new(),
            done_keys: std::collections::hash_map::RandomState::new(),
            referrers: Referrers::default(),
        }
    }

    /// Empty queues that keep the URLs they hold in memory within
    /// [`SpillSettings::memory_budget`], spilling the rest to segment files in
    /// [`SpillSettings::dir`].
    ///
    /// # Errors
    ///
    /// When the directory cannot be created or read, or already holds segment files
    /// ([`DiskErrorKind::InUse`](crate::DiskErrorKind::InUse)).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next, SpillSettings};
    ///
    /// let dir = std::env::temp_dir().join(format!("frontier-doc-spill-{}", std::process::id()));
    /// let spill = SpillSettings::new(&dir).memory_budget(0); // everything to disk
    /// let mut queues = HostQueues::with_spill(Politeness::default(), spill)?;
    /// let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
    /// assert_eq!((queues.stats().queued, queues.stats().on_disk), (1, 1));
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.url().as_str(), "https://example.com/");
    /// # drop(queues);
    /// # std::fs::remove_dir_all(&dir)?;
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn with_spill(politeness: Politeness, spill: SpillSettings) -> Result<Self, DiskError> {
        let store = SpillStore::create(&spill)?;
        let mut queues = Self::new(politeness);
        queues.spill = Some(Spill {
            settings: spill,
            store,
        });
        Ok(queues)
    }

    /// The politeness settings.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{HostQueues, Politeness};
    ///
    /// let queues = HostQueues::new(Politeness::default());
    /// assert_eq!(queues.politeness().connections_per_host(), 1);
    /// ```
    pub fn politeness(&self) -> &Politeness {
        &self.politeness
    }

    /// Queues an admitted URL, found `depth` links from a seed, behind the other URLs of its
    /// host. The caller has run admission: the queues do no seen-test, and a URL pushed twice
    /// is fetched twice.
    ///
    /// # Errors
    ///
    /// With disk spill, when memory went over budget and the spill files could not be
    /// written. The URL is queued all the same and nothing is lost: the URLs stay in memory,
    /// over budget, until a later push spills them.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    ///
    /// let canon = Canonicalizer::new();
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let now = Instant::now();
    /// queues.push(canon.canonicalize("https://example.com/first")?, 0, now)?;
    /// queues.push(canon.canonicalize("https://example.com/second")?, 1, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.url().as_str(), "https://example.com/first");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push(&mut self, url: Canonical, depth: u32, now: Instant) -> Result<Pushed, DiskError> {
        self.push_from(url, None, depth, now)
    }

    /// [`push`](Self::push) with the page whose link led to the URL (`None` for a seed), to
    /// be handed back by [`Lease::referrer`] when the URL is leased: the record of a broken
    /// link names the page that has it. The links of one page pushed in a row share one
    /// copy of its URL, so a queued URL pays 16 bytes for its referrer.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    ///
    /// let canon = Canonicalizer::new();
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let now = Instant::now();
    /// let link = canon.canonicalize("https://example.com/missing")?;
    /// queues.push_from(link, Some("https://example.com/"), 1, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.referrer(), Some("https://example.com/"));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_from(
        &mut self,
        url: Canonical,
        referrer: Option<&str>,
        depth: u32,
        now: Instant,
    ) -> Result<Pushed, DiskError> {
        self.push_with(url, referrer, None, depth, now)
    }

    /// [`push_from`](Self::push_from) with a memo: bytes of the caller's, kept with the URL
    /// through retries, spill runs, checkpoints and the journal, and handed back by
    /// [`Lease::memo`]. What a caller knew of the URL when it queued it travels with it
    /// rather than in a map beside the queues: a recrawl queues each earlier URL with what
    /// its conditional request needs, and the queues spill that to disk with the URL. A memo
    /// longer than [`MAX_MEMO_BYTES`] is not kept: the URL is queued without it.
    ///
    /// # Errors
    ///
    /// As [`push`](Self::push).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    ///
    /// let canon = Canonicalizer::new();
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let now = Instant::now();
    /// let url = canon.canonicalize("https://example.com/")?;
    /// queues.push_with(url, None, Some(b"etag \"v1\""), 0, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.memo(), Some(&b"etag \"v1\""[..]));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn push_with(
        &mut self,
        url: Canonical,
        referrer: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
        now: Instant,
    ) -> Result<Pushed, DiskError> {
        let h = self.intern(url.host_key());
        self.stats.pushed += 1;
        let given_up = self.hosts[h as usize].record.given_up;
        let from = referrer.map(|from| self.referrers.share(from));
        let memo = memo
            .filter(|memo| memo.len() <= MAX_MEMO_BYTES)
            .map(entry::memo_of);
        self.enqueue(h, Entry::new(url, from, memo, depth, 1), now);
        self.evict_if_over_budget()?;
        Ok(if given_up {
            Pushed::HostGivenUp
        } else {
            Pushed::Queued
        })
    }

    /// Moves URLs to disk when those in memory take more than the budget, until they take
    /// half of it, so that the sweep over every host, O(hosts), happens once per half a
    /// budget of pushes.
    ///
    /// Each host keeps the same share of half the budget for its first URLs, so that a
    /// host's next lease rarely waits for a read; its other URLs, and every URL queued
    /// behind URLs on disk, are written as runs. The runs are staged for
    /// all hosts, written, and only then do the hosts let go of the URLs: a failed write
    /// leaves every URL where it was.
    fn evict_if_over_budget(&mut self) -> Result<(), DiskError> {
        let Some(spill) = &mut self.spill else {
            return Ok(());
        };
        let budget = spill.settings.memory_budget_bytes();
        if self.memory <= budget {
            return Ok(());
        }
        let hosts_in_memory = self
            .hosts
            .iter()
            .filter(|host| host.queue.in_memory() > 0)
            .count()
            .max(1);
        let keep_bytes = budget / 2 / hosts_in_memory;
        let store = &mut spill.store;
        // In batches of hosts, so that the plan stays small: a batch that fails leaves its
        // hosts as they were, and the batches before it are done, so nothing is lost.
        let mut plan = Vec::new();
        for batch in (0..self.hosts.len()).step_by(EVICTION_BATCH) {
            let end = (batch + EVICTION_BATCH).min(self.hosts.len());
            for h in batch..end {
                match self.hosts[h].queue.stage_eviction(keep_bytes, store) {
                    Ok(Some(eviction)) => plan.push((h, eviction)),
                    Ok(None) => {}
                    Err(err) => {
                        store.abort();
                        return Err(err);
                    }
                }
            }
            store.commit()?;
            for (h, eviction) in plan.drain(..) {
                self.memory -= eviction.bytes;
                self.stats.on_disk += eviction.moved;
                self.hosts[h].queue.apply(eviction);
            }
        }
        self.stats.evictions += 1;
        Ok(())
    }

    /// Leases the next URL of the host ready longest, or says how long to wait.
    ///
    /// # Errors
    ///
    /// With disk spill, when the next URLs of the host whose turn it is could not be read
    /// back. Those URLs, and the ones behind them on disk, are lost and counted in
    /// [`QueueStats::lost_urls`]; the host keeps its other URLs and the next call goes on.
    /// Treat it as fatal (a disk that loses files), and resume from the last checkpoint.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{Canonicalizer, HostQueues, Outcome, Politeness, Next};
    ///
    /// let canon = Canonicalizer::new();
    /// let mut queues = HostQueues::new(Politeness::builder().connections_per_host(2).build()?);
    /// let t0 = Instant::now();
    /// for path in ["/1", "/2", "/3"] {
    ///     queues.push(canon.canonicalize(&format!("https://example.com{path}")).unwrap(), 0, t0)?;
    /// }
    /// let Next::Lease(first) = queues.pop(t0)? else { unreachable!() };
    /// // Two connections, but starts are still a delay (1 s) apart.
    /// let t1 = t0 + Duration::from_secs(1);
    /// assert_eq!(queues.pop(t0)?, Next::WaitUntil(t1));
    /// let Next::Lease(second) = queues.pop(t1)? else { unreachable!() };
    /// // Both connections are taken.
    /// assert_eq!(queues.pop(t1 + Duration::from_secs(5))?, Next::Pending);
    /// # let _ = (first, second);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn pop(&mut self, now: Instant) -> Result<Next, DiskError> {
        while let Some(&Reverse((at, seq, h))) = self.ready.peek() {
            if !self.hosts[h as usize].holds(seq) {
                self.ready.pop();
                continue;
            }
            if at > now {
                return Ok(Next::WaitUntil(at));
            }
            self.ready.pop();
            if !self.done.is_empty() && !self.drop_done_head(h, now)? {
                continue;
            }
            let lease = self.start(h, now)?;
            // What the lease brought back from disk counts against the budget too. A failed
            // eviction loses nothing (the URLs stay in memory) and the next push reports it;
            // the lease must reach its caller.
            let _ = self.evict_if_over_budget();
            return Ok(Next::Lease(lease));
        }
        if self.stats.in_flight > 0 {
            Ok(Next::Pending)
        } else {
            debug_assert_eq!(
                self.stats.queued, 0,
                "a host with queued URLs is unscheduled"
            );
            Ok(Next::Done)
        }
    }

    /// Gives back a lease with the outcome of its fetch, at `now`: sets when its host may be
    /// fetched next, counts the outcome, queues a retry or gives the host up. The rules are
    /// listed on [`HostQueues`].
    ///
    /// # Errors
    ///
    /// [`ForeignLease`] when the lease was issued by other queues: nothing is changed, and
    /// the error hands the lease back.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{Canonicalizer, Fate, HostQueues, Outcome, Politeness, Next};
    ///
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let t0 = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/").unwrap(), 0, t0)?;
    /// let Next::Lease(lease) = queues.pop(t0)? else { unreachable!() };
    ///
    /// // 503 with `Retry-After: 120`: tried again in two minutes.
    /// let throttled = Outcome::Failure { retry: true, retry_after: Some(Duration::from_secs(120)) };
    /// let done = queues.complete(lease, throttled, t0)?;
    /// assert_eq!(done.fate, Fate::Retried { attempts: 2 });
    /// assert_eq!(queues.pop(t0)?, Next::WaitUntil(t0 + Duration::from_secs(120)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn complete(
        &mut self,
        lease: Lease,
        outcome: Outcome,
        now: Instant,
    ) -> Result<Completion, ForeignLease> {
        if lease.queues != self.id {
            return Err(ForeignLease {
                lease: Box::new(lease),
            });
        }
        self.leased.remove(&lease.id);
        let h = lease.host;
        let delay = self.host_delay(h);
        let policy = &self.politeness;
        let host = &mut self.hosts[h as usize];
        host.in_flight -= 1;
        self.stats.in_flight -= 1;
        let settled = host
            .record
            .settle(&lease.start, outcome, now, delay, policy);
        let mut host_given_up = None;
        if settled.gave_up_host {
            self.stats.given_up_hosts += 1;
            let on_disk = host.queue.spilled.as_ref().map_or(0, |s| s.urls);
            host_given_up = Some(host.queue.in_memory() as u64 + on_disk);
        }
        if outcome == Outcome::Skipped && host.record.next_allowed == lease.start.before.0 {
            // Its heap entry, if any, waits for the instant given back: replace it.
            host.entry = None;
        }
        let fate = settled.fate;
        match fate {
            Fate::Succeeded => self.stats.succeeded += 1,
            Fate::Failed => self.stats.failed += 1,
            Fate::Exhausted => self.stats.exhausted += 1,
            Fate::DroppedWithHost => self.stats.given_up_urls += 1,
            Fate::Retried { attempts } => {
                self.stats.retries += 1;
                let entry = Entry::new(lease.url, lease.from, lease.memo, lease.depth, attempts);
                self.enqueue(h, entry, now);
            }
        }
        self.schedule(h, now);
        Ok(Completion {
            fate,
            host_given_up,
        })
    }

    /// Sets a host's robots.txt `Crawl-delay`, cut to [`Politeness::max_crawl_delay`], and
    /// returns the delay applied. The host's delay becomes the longer of it and
    /// [`Politeness::delay`]; if a lease of the host started less than that long ago, the
    /// next start waits for the new delay. `host` is a host key as [`Canonical::host_key`]
    /// spells it.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{Canonicalizer, HostQueues, Outcome, Politeness, Next};
    ///
    /// let canon = Canonicalizer::new();
    /// let mut queues = HostQueues::new(Politeness::default()); // caps Crawl-delay at 30 s
    /// assert_eq!(queues.set_crawl_delay("example.com", Duration::from_secs(3600)), Duration::from_secs(30));
    ///
    /// let t0 = Instant::now();
    /// queues.push(canon.canonicalize("https://example.com/a")?, 0, t0)?;
    /// queues.push(canon.canonicalize("https://example.com/b")?, 0, t0)?;
    /// let Next::Lease(a) = queues.pop(t0)? else { unreachable!() };
    /// queues.complete(a, Outcome::Success, t0).unwrap();
    /// assert_eq!(queues.pop(t0)?, Next::WaitUntil(t0 + Duration::from_secs(30)));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn set_crawl_delay(&mut self, host: &str, delay: Duration) -> Duration {
        let delay = delay.min(self.politeness.max_crawl_delay());
        let h = self.intern(host);
        self.hosts[h as usize].crawl_delay = delay;
        let delay_now = self.host_delay(h);
        let host = &mut self.hosts[h as usize];
        if host.record.space_starts(delay_now) {
            // A host waiting in the heap under an earlier instant must move to the new one.
            if let (Some((at, _)), Some(spaced)) = (host.entry, host.record.next_allowed)
                && at < spaced
            {
                self.schedule(h, at);
            }
        }
        delay
    }

    /// Counts of the queues' contents and history.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    ///
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
    /// let Next::Lease(_lease) = queues.pop(now)? else { unreachable!() };
    /// let stats = queues.stats();
    /// assert_eq!((stats.queued, stats.in_flight, stats.leases), (0, 1, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn stats(&self) -> QueueStats {
        QueueStats {
            memory_bytes: self.memory as u64,
            disk_bytes: self.spill.as_ref().map_or(0, |s| s.store.disk_bytes()),
            ..self.stats
        }
    }

    /// The host's index, interning its key on first sight.
    fn intern(&mut self, host: &str) -> u32 {
        if let Some(&h) = self.index.get(host) {
            return h;
        }
        // Four billion hosts would take hundreds of gigabytes long before this fails.
        let h = u32::try_from(self.hosts.len()).expect("fewer than 2^32 hosts");
        self.index.insert(host.into(), h);
        let own = self.politeness.host(host);
        self.hosts.push(HostState {
            own: (!own.is_default()).then(|| Box::new(own)),
            ..HostState::default()
        });
        self.stats.hosts += 1;
        h
    }

    /// The host's delay: its own or the crawl's, or its crawl delay if longer.
    fn host_delay(&self, h: u32) -> Duration {
        let host = &self.hosts[h as usize];
        host.own
            .as_ref()
            .and_then(|own| own.delay)
            .unwrap_or(self.politeness.delay())
            .max(host.crawl_delay)
    }

    /// Appends a URL to its host's queue, scheduling the host if the queue was empty.
    fn enqueue(&mut self, h: u32, entry: Entry, now: Instant) {
        let host = &mut self.hosts[h as usize];
        let was_empty = host.queue.is_empty();
        self.memory += entry.bytes();
        host.queue.push_back(entry);
        self.stats.queued += 1;
        if was_empty {
            self.stats.hosts_queued += 1;
            self.schedule(h, now);
        }
    }

    /// Gives back a lease whose fetch did not happen (a worker stopped, the crawl is shutting
    /// down): its URL goes back to the front of its host's queue with the same attempt count,
    /// and it counts as neither a success nor a failure. A lease that is simply dropped keeps
    /// one of its host's connections taken for good; abandon it instead.
    ///
    /// # Errors
    ///
    /// [`ForeignLease`] when the lease was issued by other queues: nothing is changed.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    ///
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/").unwrap(), 0, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// queues.abandon(lease, now)?;
    /// assert_eq!(queues.stats().queued, 1);
    /// assert_eq!(queues.stats().in_flight, 0);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abandon(&mut self, lease: Lease, now: Instant) -> Result<(), ForeignLease> {
        self.give_back(lease, now, None)
    }

    /// [`abandon`](Self::abandon), and no lease of its host before `not_before` (the turn
    /// of the host's address, say: see [`AddressRecord`](crate::AddressRecord)).
    ///
    /// # Errors
    ///
    /// [`ForeignLease`] when the lease was issued by other queues: nothing is changed.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    ///
    /// let mut queues = HostQueues::new(Politeness::builder().delay(Duration::ZERO).build()?);
    /// let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/").unwrap(), 0, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// let later = now + Duration::from_millis(300);
    /// queues.abandon_until(lease, now, later)?;
    /// assert_eq!(queues.pop(now)?, Next::WaitUntil(later));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn abandon_until(
        &mut self,
        lease: Lease,
        now: Instant,
        not_before: Instant,
    ) -> Result<(), ForeignLease> {
        self.give_back(lease, now, Some(not_before))
    }

    fn give_back(
        &mut self,
        lease: Lease,
        now: Instant,
        not_before: Option<Instant>,
    ) -> Result<(), ForeignLease> {
        if lease.queues != self.id {
            return Err(ForeignLease {
                lease: Box::new(lease),
            });
        }
        self.leased.remove(&lease.id);
        let h = lease.host;
        let host = &mut self.hosts[h as usize];
        host.in_flight -= 1;
        self.stats.in_flight -= 1;
        if host.queue.is_empty() {
            self.stats.hosts_queued += 1;
        }
        let entry = Entry::new(
            lease.url,
            lease.from,
            lease.memo,
            lease.depth,
            lease.attempts,
        );
        self.memory += entry.bytes();
        host.queue.push_front(entry);
        self.stats.queued += 1;
        if let Some(at) = not_before {
            // No request was made: the delay the lease's start took goes back, as a skipped
            // lease's does (its host waits for its address's turn, not for its own delay
            // besides: with many names on one address, each turn missed cost a delay).
            let delay = self.host_delay(h);
            let host = &mut self.hosts[h as usize];
            host.record.give_back_start(&lease.start, delay);
            host.record.next_allowed = Some(host.record.next_allowed.map_or(at, |t| t.max(at)));
            // Its place in line taken anew: the host may be ready sooner than it was.
            host.entry = None;
        }
        self.schedule(h, now);
        Ok(())
    }

    /// The spill store, if the queues spill: for a checkpoint.
    pub(crate) fn spill_store(&mut self) -> Option<&mut SpillStore> {
        self.spill.as_mut().map(|spill| &mut spill.store)
    }

    /// Brings a host's next URLs back from disk into its empty head.
    fn refill(&mut self, h: u32, now: Instant) -> Result<(), DiskError> {
        let spill = self
            .spill
            .as_mut()
            .expect("only queues with a spill store have URLs on disk");
        let host = &mut self.hosts[h as usize];
        let before = host.queue.spilled.as_ref().map_or(0, |s| s.urls);
        let (bytes, failure) = host.queue.refill(&mut spill.store);
        let after = host.queue.spilled.as_ref().map_or(0, |s| s.urls);
        self.memory += bytes;
        self.stats.on_disk -= before - after;
        let Some((err, lost)) = failure else {
            return Ok(());
        };
        self.stats.queued -= lost;
        self.stats.lost_urls += lost;
        if host.queue.is_empty() {
            self.stats.hosts_queued -= 1;
        }
        // `pop` took the host's entry off the heap: it goes back if it has URLs left.
        host.entry = None;
        self.schedule(h, now);
        Err(err)
    }

    /// Counts a URL done with, as a replayed journal says, though it was never queued here:
    /// admitted and done since the checkpoint.
    pub(crate) fn count_replayed(&mut self, fate: Fate) {
        self.stats.pushed += 1;
        self.count_fate(fate);
    }

    /// Marks a URL the checkpoint holds queued as done, as a replayed journal says: it is
    /// dropped, not leased, when its turn comes.
    pub(crate) fn mark_done(&mut self, url: &str, fate: Fate) {
        let key = self.done_keys.hash_one(url);
        self.done.insert(key, (fate, url.into()));
    }

    /// The URLs marked done and not yet dropped: a checkpoint still holds them queued, so
    /// the journal after it must say again that they are done.
    pub(crate) fn done_marks(&self) -> impl Iterator<Item = (&str, Fate)> {
        self.done.values().map(|(fate, url)| (&**url, *fate))
    }

    fn count_fate(&mut self, fate: Fate) {
        match fate {
            Fate::Succeeded => self.stats.succeeded += 1,
            Fate::Failed => self.stats.failed += 1,
            Fate::Exhausted => self.stats.exhausted += 1,
            _ => self.stats.given_up_urls += 1,
        }
    }

    /// Drops the URLs at the head of host `h`'s queue that a replayed journal says are done.
    /// Whether URLs are left to lease; if not, the host leaves the ready heap.
    fn drop_done_head(&mut self, h: u32, now: Instant) -> Result<bool, DiskError> {
        loop {
            let host = &self.hosts[h as usize];
            if host.queue.is_empty() {
                self.hosts[h as usize].entry = None;
                return Ok(false);
            }
            if host.queue.front.is_empty() {
                self.refill(h, now)?;
                continue;
            }
            let url = host
                .queue
                .front
                .front()
                .expect("not empty")
                .item
                .url
                .as_str();
            let key = self.done_keys.hash_one(url);
            let Some((fate, _)) = self.done.remove(&key) else {
                return Ok(true);
            };
            let host = &mut self.hosts[h as usize];
            let entry = host.queue.pop_front().expect("not empty");
            self.memory -= entry.bytes();
            self.stats.queued -= 1;
            if host.queue.is_empty() {
                self.stats.hosts_queued -= 1;
            }
            self.count_fate(fate);
        }
    }

    /// Starts a lease of the host's first URL at `now`.
    fn start(&mut self, h: u32, now: Instant) -> Result<Lease, DiskError> {
        if self.hosts[h as usize].queue.front.is_empty() {
            self.refill(h, now)?;
        }
        let delay = self.host_delay(h);
        let host = &mut self.hosts[h as usize];
        let entry = host
            .queue
            .pop_front()
            .expect("a host in the ready heap has queued URLs");
        self.memory -= entry.bytes();
        // `pop` took the host's entry off the heap.
        host.entry = None;
        host.in_flight += 1;
        let start = host.record.start(now, delay, entry.attempts);
        if host.queue.is_empty() {
            self.stats.hosts_queued -= 1;
        }
        self.stats.queued -= 1;
        self.stats.in_flight += 1;
        let id = self.stats.leases;
        self.stats.leases += 1;
        self.schedule(h, now);
        let entry::Item { url, from, memo } = *entry.item;
        self.leased.insert(
            id,
            InFlight {
                host: h,
                url: url.as_str().into(),
                from: from.clone(),
                memo: memo.clone(),
                depth: entry.depth,
                attempts: entry.attempts,
            },
        );
        let lease = Lease {
            url,
            from,
            memo,
            depth: entry.depth,
            attempts: entry.attempts,
            id,
            host: h,
            queues: self.id,
            start,
        };
        Ok(lease)
    }

    /// Gives the host an entry in the ready heap if it can be leased at some point without a
    /// completion, and none otherwise. An old entry with another instant becomes stale.
    ///
    /// The entry's instant is when the host became ready: its next-allowed instant, or
    /// `now` if that has passed, so that a host that had nothing to do does not jump ahead
    /// of hosts that have been waiting.
    fn schedule(&mut self, h: u32, now: Instant) {
        let host = &mut self.hosts[h as usize];
        let connections = host
            .own
            .as_ref()
            .and_then(|own| own.connections)
            .unwrap_or(self.politeness.connections_per_host());
        if host.queue.is_empty() || host.in_flight >= connections {
            host.entry = None;
            return;
        }
        // A given-up host's URLs go out at once, to be recorded: no request, no delay.
        let not_before = if host.record.given_up {
            None
        } else {
            host.record.next_allowed
        };
        if let Some((live, _)) = host.entry
            && not_before.is_none_or(|t| t <= live || t <= now)
            && (!host.record.given_up || live <= now)
        {
            // Its entry is still right (the host has been ready since `live`, or the new
            // "not before" is already past, as with no delay): keeping it keeps its place in
            // line.
            return;
        }
        let at = not_before.map_or(now, |t| t.max(now));
        let seq = self.next_seq;
        self.next_seq += 1;
        host.entry = Some((at, seq));
        self.ready.push(Reverse((at, seq, h)));
        if self.ready.len() > 2 * self.stats.hosts_queued as usize + SWEEP_SLACK {
            let hosts = &self.hosts;
            self.ready
                .retain(|&Reverse((_, seq, h))| hosts[h as usize].holds(seq));
        }
    }
}

impl fmt::Debug for HostQueues {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostQueues")
            .field("politeness", &self.politeness)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
