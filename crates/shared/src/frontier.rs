//! [`SharedFrontier`]: what a crawler process asks of a crawl kept in Redis. Its jobs, one
//! file each:
//!
//! * here: the frontier's state ([`Inner`]), pushes, and a lease's life: handed to a worker
//!   ([`SharedFrontier::next`]), completed or given back;
//! * `owned.rs`: one bucket this process owns, scheduled in memory by frontier's host rule
//!   (no I/O), and the log its batches write;
//! * `owners.rs`: the buckets this process owns among those present (rendezvous hashing):
//!   taken, held, let go, loaded, and their batches' answers read;
//! * `batch.rs`: admission, completions and the owner's log, sent in each bucket's next
//!   batch script;
//! * `presence.rs`: the heartbeat (presence, buckets held, totals), the end of the crawl,
//!   and Redis found gone back to an older state;
//! * `sites.rs`: what the crawl knows of its sites (seeds' redirects, robots.txt, crawl
//!   delays, sitemaps);
//! * `content.rs`: the content-seen test, bodies read grouped by bucket;
//! * `group.rs`: group commit by bucket, for batches and content tests;
//! * `addresses.rs`: politeness per address: one process at a time holds a server;
//! * `places.rs`: which bucket a host goes to (by name, domain or address).

use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::hash::Hasher;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use frontier::{
    Canonical, Canonicalizer, Completion, Fate, FrontierStats, Outcome, PageLinks, Politeness,
    ScopeRules, SeenSet, Url,
};
use futures_util::future::join_all;
use siphasher::sip128::SipHasher13;
use tokio::sync::oneshot;

use crate::scripts::{self, Scripts, millis};
use crate::seen::{Frozen, FrozenGen, Generation, Probes, Schedule};
use crate::store::{BucketsBy, Layout, Share, Store, Stored};
use crate::{Error, ErrorKind};

mod addresses;
pub(crate) mod batch;
mod content;
mod group;
mod links;
pub(crate) mod owned;
mod owners;
mod places;
pub(crate) mod presence;
mod sites;

pub use addresses::{TERM_LEAST, TERM_STARTS, address_term};
use batch::*;
use group::{Groups, Reply, Sending};
use owners::{Counted, Owners, REPOLL, Search};
use places::Placed;
pub use places::{LOCATE_WAIT, Locate, Located, SystemLocator};
use presence::*;
pub use sites::{RobotsRead, SitemapMark};

/// URLs in a chunk of a list several processes share (see [`SharedFrontier::push_shared`]):
/// a claim and a word that it is done, two round trips, for some 60 ms of queuing.
pub const SHARE_CHUNK: usize = 4096;
/// How long a claim on a chunk holds: past it, another process takes a chunk whose claimer
/// died. A chunk takes well under a second to queue.
pub const SHARE_HOLD: Duration = Duration::from_secs(30);
/// How often a process whose share is done asks after the chunks others hold.
const SHARE_POLL: Duration = Duration::from_millis(200);

/// A URL of a list [`SharedFrontier::push_shared`] queues: the URL, its depth, its memo.
///
/// # Example
///
/// ```
/// let url = frontier::Canonicalizer::new().canonicalize("https://example.com/a")?;
/// let listed: shared::Listed = (url, 1, Some(b"etag".to_vec().into()));
/// # Ok::<(), frontier::Rejected>(())
/// ```
pub type Listed = (Canonical, u32, Option<Box<[u8]>>);

/// A URL a process may fetch now: in flight in Redis until completed or abandoned, or until
/// its bucket is taken over by another process (then it goes back to the crawl).
///
/// # Example
///
/// ```no_run
/// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
/// if let shared::Next::Lease(lease) = frontier.next().await? {
///     println!("fetch {} (try {})", lease.url(), lease.attempts());
///     frontier.complete(lease, frontier::Outcome::Success).await?;
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
#[must_use = "a lease holds one of its host's connections until it is completed"]
pub struct SharedLease {
    url: Canonical,
    referrer: Option<String>,
    memo: Option<Vec<u8>>,
    depth: u32,
    attempts: u32,
    given_up: bool,
    bucket: u32,
    token: u64,
    /// The epoch of this process's hold on the bucket when it handed the lease out: a
    /// lease of an earlier hold is refused.
    epoch: i64,
    /// Counts the lease as with a worker until it is completed or given back.
    working: Option<Counted>,
}

impl SharedLease {
    /// The token that names this lease in Redis.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { println!("{}", lease.token()); }
    /// ```
    pub fn token(&self) -> u64 {
        self.token
    }

    /// The URL to fetch.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { println!("{}", lease.url()); }
    /// ```
    pub fn url(&self) -> &Canonical {
        &self.url
    }

    /// The page whose link led here (or the redirect, or the sitemap), when known: `None`
    /// for a seed.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { println!("{:?}", lease.referrer()); }
    /// ```
    pub fn referrer(&self) -> Option<&str> {
        self.referrer.as_deref()
    }

    /// The memo queued with the URL ([`SharedFrontier::push_canonical_with`]), if any: the
    /// same bytes after retries, a lease that expired, and a Redis restart, as
    /// [`frontier::Lease::memo`] in one process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { println!("{:?}", lease.memo()); }
    /// ```
    pub fn memo(&self) -> Option<&[u8]> {
        self.memo.as_deref()
    }

    /// Links followed from a seed to reach the URL.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { assert!(lease.depth() < 2000); }
    /// ```
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Which try of the URL this is: 1 the first time.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { assert!(lease.attempts() >= 1); }
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether the URL's host was given up: record the URL, do not fetch it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::SharedLease) { if lease.host_given_up() { println!("not fetched"); } }
    /// ```
    pub fn host_given_up(&self) -> bool {
        self.given_up
    }
}

/// The links of a page leased to this process, waiting for its completion, and how many of
/// this process's leases are of that page: after a rollback, or a lease that expired while
/// its worker went on, the same URL can be leased to it twice, and the links one worker
/// pushed must reach Redis with whichever completion comes.
#[derive(Default)]
pub(super) struct Pending {
    holders: usize,
    links: Vec<Link>,
}

/// What [`SharedFrontier::push_links`] decided for a link's first occurrence on a page,
/// which its repeats are counted as.
#[derive(Clone, Copy)]
enum Judged {
    Invalid(&'static str),
    Dropped(&'static str),
    /// Queued (a repeat is then seen), or seen already.
    Seen,
}

/// What a process is to do next: the frontier crate's answer, with a [`SharedLease`]. It is
/// never [`Pending`](frontier::Next::Pending): a process that finds nothing to lease is told
/// when to ask again, as leases of other processes complete out of its sight.
///
/// # Example
///
/// ```no_run
/// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
/// match frontier.next().await? {
///     shared::Next::Lease(lease) => frontier.abandon(lease).await?,
///     shared::Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
///     shared::Next::Pending => unreachable!("a shared frontier says when to ask"),
///     shared::Next::Done => println!("nothing queued or leased anywhere"),
/// }
/// # Ok(()) }
/// ```
pub type Next = frontier::Next<SharedLease>;

/// The counts of the whole crawl, summed over its buckets.
///
/// # Example
///
/// ```no_run
/// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
/// let totals = frontier.totals().await?;
/// println!("{} seen, {} queued, {} leased, {} done", totals.seen, totals.queued, totals.leased, totals.done);
/// # Ok(()) }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Totals {
    /// URLs the seen-test took for new.
    pub seen: u64,
    /// URLs waiting in host queues.
    pub queued: u64,
    /// URLs leased to a process now.
    pub leased: u64,
    /// Links waiting for their bucket's owner to seen-test them (sent by other processes).
    pub links: u64,
    /// URLs done with (fetched, failed, or dropped with their host).
    pub done: u64,
    /// URLs in flight that went back to the crawl when their bucket was taken over (their
    /// process died, stalled, or lost track of it).
    pub reaped: u64,
    /// Hosts given up.
    pub given_up_hosts: u64,
    /// Hosts pushed to.
    pub hosts: u64,
    /// Bits of the seen-test's fingerprints, all buckets (32 or 64 a URL).
    pub seen_bits: u64,
    /// The most generations any bucket's seen-test has grown to.
    pub seen_generations: u64,
    /// New URLs refused by the per-host page budget (they stay seen).
    pub host_budget: u64,
    /// New URLs refused by the per-domain budget of hosts (they stay seen).
    pub domain_hosts: u64,
    /// New URLs refused by the per-domain page budget (they stay seen).
    pub domain_pages: u64,
    /// Changes made: two equal sums with nothing queued or leased prove the crawl over.
    ops: u64,
}

/// A crawl's frontier shared by several processes through Redis: the seen-test, the host
/// queues and their politeness, and the leases live there; each process canonicalizes and
/// scopes its own links, as every process of the crawl was given the same seeds and rules.
///
/// Cheap to clone: clones share one connection and one view of the crawl.
///
/// # Example
///
/// ```no_run
/// use std::time::Duration;
/// use frontier::{Canonicalizer, Politeness, ScopeRules};
///
/// # async fn f() -> Result<(), Box<dyn std::error::Error>> {
/// let store = shared::Store::connect("redis://127.0.0.1:6379", "crawl").await?;
/// let crawl = store.create(shared::Layout::default(), "", &[]).await?;
/// let seed = Canonicalizer::new().canonicalize("https://example.com/")?;
/// let scope = ScopeRules::builder().seed(&seed).build()?;
/// let frontier = shared::SharedFrontier::new(store, &crawl, Canonicalizer::new(), scope,
///     Politeness::default(), Duration::from_secs(30))?;
/// frontier.push_seeds(vec![seed]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedFrontier {
    inner: Arc<Inner>,
}

/// How this process maps the crawl onto its keys: hosts to buckets, URLs to the seen-test's
/// probes, and its copies of the seen-test's frozen generations.
pub(super) struct Keys {
    /// Buckets the hosts are hashed into.
    pub(super) buckets: u32,
    /// The sizes a bucket's seen-test grows by.
    pub(super) schedule: Schedule,
    /// Copies of the seen-test's frozen generations, to look URLs up in here.
    pub(super) frozen: Frozen,
    /// The seen-test's target false-positive rate.
    pub(super) seen_rate: f64,
    /// The crawl's SipHash key, which hosts and URLs are hashed with.
    pub(super) sip_key: [u8; 16],
    /// The crawl's layout: to make `pushed` anew, and whether hosts go to buckets by domain.
    pub(super) layout: Layout,
}

/// The crawl's rules, the same in every process: each applies them to its own links and
/// leases, or sends them with its scripts.
struct Rules {
    /// The canonical form of the links this process pushes.
    canon: Canonicalizer,
    /// The crawl's scope and trap rules, which this process applies to its links.
    scope: ScopeRules,
    /// The crawl's politeness, sent with the scripts.
    politeness: Politeness,
    /// How long a process's hold on its buckets lasts unless renewed.
    lease_time: Duration,
}

/// What a [`SharedFrontier`]'s clones share, in parts by job.
struct Inner {
    /// The connection to Redis, and the crawl's record.
    store: Store,
    /// This process among the crawl's: random, so that two never share one.
    id: String,
    /// The scripts, loaded once.
    scripts: Scripts,
    /// The crawl's rules this process applies or sends with its scripts.
    rules: Rules,
    /// This process's counts, and the crawl's totals as last read.
    counts: Counts,
    /// How hosts map to buckets and URLs to the seen-test's probes.
    keys: Keys,
    /// The workers holding a lease.
    search: Search,
    /// This process among the others: the heartbeat, the end, Redis going back.
    presence: Presence,
    /// The buckets this process owns, each scheduled in its memory.
    owners: Owners,
    /// What this process sends: batches, links sent and being sent, content tests.
    sent: Sent,
    /// The addresses this process holds or asks for (politeness per address).
    holds: addresses::Holds,
    /// The buckets of the hosts this process met, in a crawl bucketed by address.
    places: places::Places,
}

impl Drop for Inner {
    fn drop(&mut self) {
        let heartbeat = self.presence.heartbeat.get_mut();
        if let Some(task) = heartbeat.unwrap_or_else(PoisonError::into_inner).take() {
            task.abort();
        }
    }
}

/// This process's own counts.
#[derive(Default)]
struct Counts {
    new: AtomicU64,
    seen: AtomicU64,
    leases: AtomicU64,
    retries: AtomicU64,
    succeeded: AtomicU64,
    failed: AtomicU64,
    exhausted: AtomicU64,
    given_up_urls: AtomicU64,
    fenced: AtomicU64,
    dropped: Mutex<HashMap<&'static str, u64>>,
    invalid: Mutex<HashMap<&'static str, u64>>,
    totals: Mutex<Totals>,
}

impl SharedFrontier {
    /// A frontier on the crawl `stored` in `store`. `scope` must be built from the crawl's
    /// seeds (`stored.seeds` and this process's); `politeness` holds for every host across
    /// processes; `lease_time` is how long this process's hold on its buckets lasts unless
    /// renewed (a process that dies has its buckets, and their URLs in flight, taken over
    /// after it, or after 20 s unheard). Spawns the task that holds this process's buckets:
    /// call it within a tokio runtime.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier`].
    pub fn new(
        store: Store,
        stored: &Stored,
        canon: Canonicalizer,
        scope: ScopeRules,
        politeness: Politeness,
        lease_time: Duration,
    ) -> Result<SharedFrontier, Error> {
        let layout = &stored.layout;
        // The tags of the crawl given, whichever store read it.
        store.use_layout(layout);
        if scope.per_domain_budget() != (None, None) && layout.buckets_by != BucketsBy::Domain {
            return Err(ErrorKind::BadLayout(format!(
                "the crawl keeps hosts by {}, not by domain, so it cannot count pages and \
                 hosts per domain: it was created without crawl.per_domain_hosts, \
                 crawl.per_domain_pages or redis.buckets_by = \"domain\"; start another under \
                 a new crawl name to use them",
                layout.buckets_by.as_str()
            ))
            .into());
        }
        let pushed = new_pushed(layout)?;
        let forwarded = new_pushed(layout)?;
        let mut id = [0; 8];
        // Without the system's randomness, the time: ids need only differ.
        if getrandom::fill(&mut id).is_err() {
            id = u64::try_from(
                std::time::UNIX_EPOCH
                    .elapsed()
                    .unwrap_or_default()
                    .as_nanos(),
            )
            .unwrap_or(0)
            .to_be_bytes();
        }
        let cluster = store.is_cluster();
        let server_changes = store.server_changes();
        let inner = Arc::new(Inner {
            store,
            id: format!("{}-{:016x}", std::process::id(), u64::from_be_bytes(id)),
            scripts: Scripts::new(cluster),
            rules: Rules {
                canon,
                scope,
                politeness,
                lease_time,
            },
            counts: Counts::default(),
            keys: Keys {
                buckets: layout.buckets,
                schedule: Schedule::with_content(
                    layout.seen_initial_capacity,
                    layout.seen_rate,
                    layout.buckets,
                    layout.content_buckets,
                )?,
                frozen: Frozen::default(),
                seen_rate: layout.seen_rate,
                sip_key: layout.key,
                layout: layout.clone(),
            },
            search: Search {
                working: Arc::new(AtomicUsize::new(0)),
            },
            presence: Presence {
                idle_check: Mutex::new((Instant::now(), Duration::ZERO)),
                over: AtomicBool::new(false),
                left: AtomicBool::new(false),
                server_changes: AtomicU64::new(server_changes),
                ops_seen: Mutex::new(vec![(0, 0); layout.buckets as usize]),
                epoch: AtomicI64::new(-1),
                forgets: AtomicU64::new(0),
                said_went_back: Mutex::new(None),
                redirect_targets: AtomicUsize::new(0),
                heartbeat: Mutex::new(None),
                present: Mutex::new(Vec::new()),
                noted: Mutex::new(HashMap::new()),
            },
            owners: Owners::default(),
            holds: addresses::Holds::default(),
            places: places::Places::default(),
            sent: Sent {
                pending: Mutex::new(HashMap::new()),
                pushed: RwLock::new(pushed),
                forwarded: RwLock::new(forwarded),
                requests_sent: AtomicU64::new(0),
                batches: Groups::default(),
                bodies: Groups::default(),
                addresses: Groups::default(),
                policies: Mutex::new(HashSet::new()),
                sending: Mutex::new(HashSet::new()),
                completing: Arc::new(AtomicUsize::new(0)),
                ticks_from: tokio::time::Instant::now(),
                paced_at: AtomicU64::new(0),
                runtime: tokio::runtime::Handle::current(),
            },
        });
        let heartbeat = tokio::spawn(renew(Arc::downgrade(&inner)));
        *inner
            .presence
            .heartbeat
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = Some(heartbeat.abort_handle());
        Ok(SharedFrontier { inner })
    }

    /// Gives the frontier the crawler's [`Locate`], which a crawl bucketed by address
    /// ([`crate::BucketsBy::Address`]) places new hosts with: the answers its fetches
    /// connect to, so that the names a server's limits count together are one bucket's.
    /// Without it, the system's resolver ([`SystemLocator`]). Set once, before the first
    /// push; a second is ignored. Other layouts never ask.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(frontier: shared::SharedFrontier) {
    /// let frontier = frontier.with_locator(std::sync::Arc::new(shared::SystemLocator));
    /// # }
    /// ```
    pub fn with_locator(self, locator: Arc<dyn Locate>) -> SharedFrontier {
        if !self.inner.places.set_locator(locator) {
            tracing::debug!("a second locator, ignored");
        }
        self
    }

    /// The store the crawl lives in.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(frontier: shared::SharedFrontier) { println!("{} requests", frontier.store().requests()); }
    /// ```
    pub fn store(&self) -> &Store {
        &self.inner.store
    }

    /// Pushes the seeds at depth 0; a seed another process pushed already is seen. Answers
    /// how many were new.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier`].
    pub async fn push_seeds(&self, seeds: Vec<Canonical>) -> Result<u64, Error> {
        // By address, a long list's hosts are looked up a few hundred at a time: each part
        // queued once placed, so that the crawl begins after the first lookups, not the last.
        let part = match self.inner.keys.layout.buckets_by {
            BucketsBy::Address => places::LOCATING,
            BucketsBy::Host | BucketsBy::Domain => seeds.len().max(1),
        };
        let mut new = 0;
        let mut seeds = seeds.into_iter().peekable();
        while seeds.peek().is_some() {
            let seeds: Vec<Canonical> = seeds.by_ref().take(part).collect();
            let placed = self.inner.place(&seeds).await?;
            let links = seeds
                .into_iter()
                .map(|seed| self.inner.link(seed, 0, None, None, &placed))
                .collect::<Vec<_>>();
            new += self.inner.admit(links).await?;
        }
        Ok(new)
    }

    /// Pushes one URL already canonical, which `from` (a redirect, a sitemap) led to, if
    /// known; answers whether it was new.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let url = frontier::Canonicalizer::new().canonicalize("https://example.com/a")?;
    /// let new = frontier.push_canonical(url, Some("https://example.com/"), 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_canonical(
        &self,
        url: Canonical,
        from: Option<&str>,
        depth: u32,
    ) -> Result<bool, Error> {
        self.push_canonical_with(url, from, None, depth).await
    }

    /// [`push_canonical`](Self::push_canonical) with a memo, bytes of the caller's that come
    /// back with the URL's lease ([`SharedLease::memo`]), whichever process leases it: they
    /// travel in its queue entry (base64, after the URL), through retries and leases that
    /// expire, as [`frontier::Frontier::push_canonical_with`]'s in one process (one longer
    /// than [`frontier::MAX_MEMO_BYTES`] is not kept). A URL seen before keeps the memo it was
    /// queued with, if any.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let url = frontier::Canonicalizer::new().canonicalize("https://example.com/a")?;
    /// let new = frontier.push_canonical_with(url, None, Some(b"etag"), 0).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_canonical_with(
        &self,
        url: Canonical,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
    ) -> Result<bool, Error> {
        let checked = self.inner.admits(&url, depth, false);
        self.push_checked(checked, url, from, memo, depth).await
    }

    /// Pushes a page requisite (an image, style sheet or script that page `from` needs to
    /// render), admitted by [`frontier::ScopeRules::check_requisite`]'s rules rather than
    /// the scope's, with a memo as [`push_canonical_with`](Self::push_canonical_with) keeps
    /// one; answers whether it was new. As [`frontier::Frontier::push_requisite`] in one
    /// process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let css = frontier::Canonicalizer::new().canonicalize("https://cdn.example.net/a.css")?;
    /// let new = frontier.push_requisite(css, Some("https://example.com/"), None, 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_requisite(
        &self,
        url: Canonical,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
    ) -> Result<bool, Error> {
        let checked = self.inner.admits(&url, depth, true);
        self.push_checked(checked, url, from, memo, depth).await
    }

    /// The requisites a page needs (see [`push_requisite`](Self::push_requisite)), as one
    /// batch, each with `memo`; those this process sent before are not sent again.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let page = frontier::Url::parse("https://example.com/")?;
    /// let css = frontier::Canonicalizer::new().canonicalize("https://cdn.example.net/a.css")?;
    /// frontier.push_requisites(&page, vec![css], None, 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_requisites(
        &self,
        page: &Url,
        urls: Vec<Canonical>,
        memo: Option<&[u8]>,
        depth: u32,
    ) -> Result<(), Error> {
        let inner = &self.inner;
        inner.check_server();
        let from: Arc<str> = Arc::from(page.as_str());
        let memo = memo.filter(|memo| memo.len() <= frontier::MAX_MEMO_BYTES);
        let mut admitted = Vec::with_capacity(urls.len());
        for url in urls {
            match inner.rules.scope.check_requisite(&url) {
                Err(reason) => inner.count_drop(reason.reason()),
                Ok(()) => admitted.push(url),
            }
        }
        // Before they are noted as being sent, which only their answer undoes.
        let placed = inner.place(&admitted).await?;
        let links = admitted
            .into_iter()
            .filter(|url| inner.first_send(url))
            .map(|url| inner.link(url, depth, Some(Arc::clone(&from)), memo, &placed))
            .collect();
        inner.admit(links).await.map(drop)
    }

    /// Pushes one URL the scope's rules (or the requisite rules) judged `checked`.
    async fn push_checked(
        &self,
        checked: Result<(), frontier::DropReason>,
        url: Canonical,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
    ) -> Result<bool, Error> {
        if let Err(reason) = checked {
            self.inner.count_drop(reason.reason());
            return Ok(false);
        }
        // The embedded frontier's limit, so that both stores keep the same memos.
        let memo = memo.filter(|memo| memo.len() <= frontier::MAX_MEMO_BYTES);
        let placed = self.inner.place([&url]).await?;
        let link = vec![
            self.inner
                .link(url, depth, from.map(Arc::from), memo, &placed),
        ];
        self.inner.admit(link).await.map(|new| new > 0)
    }

    /// Queues a list of URLs, each at its depth and with its memo if any (see
    /// [`push_canonical_with`](Self::push_canonical_with)), that several processes of the
    /// crawl may be given (an earlier crawl's records, for a recrawl), each process taking
    /// its share:
    /// the list is cut in chunks of [`SHARE_CHUNK`] URLs, and a process queues a chunk only
    /// once it has claimed it in Redis (`NAME:shares`), so that processes given the same
    /// list queue it once between them rather than each all of it (the seen-test would drop
    /// the copies, each at a script's cost). A chunk claimed by a process that died is
    /// claimed again [`SHARE_HOLD`] later. Answers once every chunk is queued, by whichever
    /// process, how many URLs this process queued; `list` names the list, the same in every
    /// process given it. With `requisites`, the URLs are page requisites an earlier crawl
    /// fetched, admitted by the requisite rules ([`push_requisite`](Self::push_requisite)).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let canon = frontier::Canonicalizer::new();
    /// let urls = vec![(canon.canonicalize("https://example.com/a")?, 1, None)];
    /// let queued = frontier.push_shared("yesterday", urls, false).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_shared(
        &self,
        list: &str,
        urls: Vec<Listed>,
        requisites: bool,
    ) -> Result<u64, Error> {
        let mut chunks: Vec<(usize, Vec<Listed>)> = Vec::new();
        let mut urls = urls.into_iter();
        loop {
            let chunk: Vec<_> = urls.by_ref().take(SHARE_CHUNK).collect();
            if chunk.is_empty() {
                break;
            }
            chunks.push((chunks.len(), chunk));
        }
        let mut queued = 0;
        while !chunks.is_empty() {
            let mut taken = Vec::new();
            for (k, chunk) in chunks {
                let share = format!("{list}:{k}");
                match self
                    .inner
                    .store
                    .claim_share(&share, &self.inner.id, SHARE_HOLD)
                    .await?
                {
                    Share::Done => {}
                    Share::Taken => taken.push((k, chunk)),
                    Share::Mine => {
                        // Their hosts placed at once (by address), not each by its URL's push.
                        let admitted = chunk.iter().filter(|(url, depth, _)| {
                            self.inner.admits(url, *depth, requisites).is_ok()
                        });
                        self.inner.place(admitted.map(|(url, _, _)| url)).await?;
                        // A few hundred at a time, so that they go in batch scripts.
                        let mut chunk = chunk.into_iter();
                        loop {
                            let pushes: Vec<_> = chunk
                                .by_ref()
                                .take(512)
                                .map(|(url, depth, memo)| async move {
                                    let memo = memo.as_deref();
                                    if requisites {
                                        self.push_requisite(url, None, memo, depth).await
                                    } else {
                                        self.push_canonical_with(url, None, memo, depth).await
                                    }
                                })
                                .collect();
                            if pushes.is_empty() {
                                break;
                            }
                            for new in join_all(pushes).await {
                                queued += u64::from(new?);
                            }
                        }
                        self.inner.store.share_done(&share).await?;
                    }
                }
            }
            chunks = taken;
            if !chunks.is_empty() {
                // Another process is queuing them, or died doing it: asked again soon.
                tokio::time::sleep(SHARE_POLL).await;
            }
        }
        Ok(queued)
    }

    /// Pushes the links found on `page` (resolved against `base`), `depth` links from a
    /// seed. When `page` is a lease of this process, its links wait for the lease's
    /// completion, and this answers without sending them (it waits only to store the own
    /// politeness of a host with `[[hosts]]` settings, once per host): the completion admits
    /// the links to other buckets (a step of each one's next batch script), then those of the
    /// page's own bucket in the same step as the completion, so that a page whose links stay
    /// on its site costs no round trip of its own for them, and a failure to admit them fails
    /// the completion, whose page is fetched again. Other pages' links are admitted now. In
    /// a crawl bucketed by address, a link's host this process has not met is placed first
    /// (its place read from Redis, or looked up and written: see [`Locate`]), a lease's
    /// links when it completes, once its own host is free.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let page = frontier::Url::parse("https://example.com/")?;
    /// frontier.push_links(&page, &page, &["/a".into(), "/b".into()], 1).await?;
    /// # Ok(()) }
    /// ```
    pub async fn push_links(
        &self,
        page: &Url,
        base: &Url,
        hrefs: &[String],
        depth: u32,
    ) -> Result<(), Error> {
        let inner = &self.inner;
        inner.check_server();
        let from: Arc<str> = Arc::from(page.as_str());
        let mut admitted = Vec::with_capacity(hrefs.len());
        // A link repeated on the page is judged once: its repeats count as its first
        // occurrence decided, a queued one's as seen, by the embedded frontier's rule.
        let mut judged = PageLinks::new(inner.rules.canon.max_length(), hrefs.len());
        for href in hrefs {
            if let Some(first) = judged.first_of(href) {
                match first {
                    Judged::Invalid(reason) => inner.count_invalid(reason),
                    Judged::Dropped(reason) => inner.count_drop(reason),
                    Judged::Seen => {
                        inner.counts.seen.fetch_add(1, Ordering::Relaxed);
                    }
                }
                continue;
            }
            let url = match inner.rules.canon.canonicalize_relative(base, href) {
                Ok(url) => url,
                Err(rejected) => {
                    inner.count_invalid(rejected.reason());
                    judged.judged(href, Judged::Invalid(rejected.reason()));
                    continue;
                }
            };
            if let Err(reason) = inner.rules.scope.check_link(page, &url, depth) {
                inner.count_drop(reason.reason());
                judged.judged(href, Judged::Dropped(reason.reason()));
                continue;
            }
            judged.judged(href, Judged::Seen);
            admitted.push(url);
        }
        // A lease's links wait for its completion, which places their hosts once it has
        // freed its own (by address, a host new to the crawl is looked up first); others'
        // are placed now, before they are noted as being sent, which only an answer undoes.
        let held = inner.is_pending(page.as_str());
        let placed = match held {
            true => Placed::default(),
            false => inner.place(&admitted).await?,
        };
        let mut links = Vec::with_capacity(admitted.len());
        for url in admitted {
            if !inner.first_send(&url) {
                tracing::trace!(%url, %page, "link not sent: sent before");
                continue;
            }
            links.push(inner.link(url, depth, Some(Arc::clone(&from)), None, &placed));
        }
        {
            let mut pending = inner
                .sent
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if let Some(held) = pending.get_mut(page.as_str()) {
                held.links.append(&mut links);
            }
        }
        if held && let Err(err) = inner.place_links(&mut links).await {
            // Its lease ended meanwhile: they go now, placed.
            inner.not_sending(&links);
            return Err(err);
        }
        inner.admit(links).await.map(drop)
    }

    /// The crawl's politeness, as this process sends it with its scripts.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(frontier: shared::SharedFrontier) {
    /// println!("{} attempts per URL", frontier.politeness().max_attempts());
    /// # }
    /// ```
    pub fn politeness(&self) -> &Politeness {
        &self.inner.rules.politeness
    }

    /// URLs this process took for its owned buckets' hosts that no worker has leased yet:
    /// they come in a batch for several workers, and the worker that leased first may wake
    /// the others.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// if let shared::Next::Lease(lease) = frontier.next().await? {
    ///     if frontier.buffered() > 0 {
    ///         println!("more leases are here for other workers");
    ///     }
    ///     frontier.complete(lease, frontier::Outcome::Success).await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub fn buffered(&self) -> usize {
        self.inner
            .owners
            .buckets()
            .values()
            .map(owned::Owned::untaken)
            .sum()
    }

    /// The next lease, or when to ask again, or that the crawl is over.
    ///
    /// # Example
    ///
    /// See [`Next`].
    pub async fn next(&self) -> Result<Next, Error> {
        let inner = &self.inner;
        if inner.presence.over.load(Ordering::Relaxed) {
            return Ok(Next::Done);
        }
        let now = Instant::now();
        let mut earliest: Option<Instant> = None;
        let mut wanting = Vec::new();
        let mut quiet = Vec::new();
        let mut busy = false;
        let picked = {
            let mut buckets = inner.owners.buckets();
            let mut numbers: Vec<u32> = buckets.keys().copied().collect();
            numbers.sort_unstable();
            let start = inner.owners.cursor.fetch_add(1, Ordering::Relaxed);
            let n = numbers.len();
            if n > 0 {
                numbers.rotate_left(start % n);
            }
            // First the bucket whose next host's turn (its place: its next start allowed)
            // came first, ties in turn: each host has its turn whatever its bucket, as the
            // embedded frontier's earliest ready host has. Taken a bucket at a time, a bucket
            // after empty ones had their turns too, and one of several servers' names the
            // turns of one: hosts bucketed by domain, some servers had one request at a time
            // while others' lines were full (docs/benchmarks.md, 2026-12-07, late morning).
            let first = numbers
                .iter()
                .enumerate()
                .filter_map(|(i, bucket)| Some((buckets.get(bucket)?.next_place(now)?, i)))
                .min();
            if let Some((_, i)) = first {
                numbers[..=i].rotate_right(1);
            }
            let mut picked = None;
            for bucket in numbers {
                let owned = buckets.get_mut(&bucket).expect("listed");
                busy |= owned.is_busy();
                match owned.pick(now) {
                    owned::Pick::Lease(taken) => {
                        picked = Some((bucket, owned.epoch, taken));
                        break;
                    }
                    owned::Pick::WaitUntil(at) if at <= now => wanting.push(bucket),
                    owned::Pick::WaitUntil(at) => {
                        earliest = Some(earliest.map_or(at, |e: Instant| e.min(at)));
                    }
                    owned::Pick::Nothing => {}
                }
                if owned.is_quiet(now, REPOLL) {
                    quiet.push(bucket);
                }
            }
            picked
        };
        if let Some((bucket, epoch, taken)) = picked {
            // Working again: once idle, it checks whether the crawl is over at once.
            inner.presence.check_soon();
            let token = taken.token;
            return match inner.lease_of(bucket, epoch, taken) {
                Ok(lease) => {
                    // A URL out of this process's scope was in another's: a seed's redirect
                    // target it met a moment ago, or a page of one, which this process may
                    // lease before its next heartbeat reads the targets. Its scope takes
                    // them in before the page's links are judged.
                    let outside = inner.rules.scope.check(&lease.url, lease.depth)
                        == Err(frontier::DropReason::OutOfScope);
                    if outside {
                        inner.widen_scope().await;
                    }
                    Ok(Next::Lease(lease))
                }
                Err(err) => {
                    inner.drop_unread(bucket, epoch, token).await;
                    Err(err)
                }
            };
        }
        // URLs to take: the buckets' next batches bring them.
        for &bucket in &wanting {
            inner.nudge(bucket);
        }
        if !quiet.is_empty() {
            inner.poll_inboxes(quiet);
        }
        if !busy && wanting.is_empty() && inner.is_over().await? {
            return Ok(Next::Done);
        }
        let soon = now + Duration::from_millis(5);
        let until = match wanting.is_empty() {
            true => earliest.unwrap_or(now + REPOLL).clamp(soon, now + REPOLL),
            false => soon,
        };
        if wanting.is_empty() && earliest.is_some() {
            // Its hosts have URLs, not their turns yet.
            inner.note_paced();
        }
        Ok(Next::WaitUntil(until))
    }

    /// Completes a lease with its fetch's outcome, after admitting the page's links to other
    /// buckets, and with those of its own bucket in the same step of the bucket's next batch
    /// script. `Ok(None)` when the lease was no longer held: its bucket went to another
    /// process (this one stalled past its hold, or Redis went back), which leases the URL
    /// again; its record is that process's to write. On an error the bucket is given up by
    /// this process, and taken over anew: its URLs in flight come back to the crawl.
    ///
    /// # Example
    ///
    /// See [`SharedLease`].
    pub async fn complete(
        &self,
        mut lease: SharedLease,
        outcome: Outcome,
    ) -> Result<Option<Completion>, Error> {
        let inner = &self.inner;
        let _under_way = Counted::new(&inner.sent.completing);
        // Its worker is free for another lease while this one's completion is sent.
        drop(lease.working.take());
        // Ended in memory first (the rule is frontier's HostRecord), as the request ended:
        // its host's connection free and its next start counted from now, not from the end
        // of the sends below, which wait for the batches of other buckets (their linger,
        // their round trip). Its end is written by the batch that queues the page's links of
        // this bucket, never before them; on an error the bucket is given up, this with it.
        let ended = {
            let mut buckets = inner.owners.buckets();
            buckets
                .get_mut(&lease.bucket)
                .filter(|owned| owned.epoch == lease.epoch)
                .and_then(|owned| owned.complete(lease.token, outcome, Instant::now()))
        };
        let mut links = inner.let_go_pending(lease.url.as_str(), true);
        if let Err(err) = inner.place_links(&mut links).await {
            inner.not_sending(&links);
            inner.give_up_bucket_of(&lease);
            return Err(err);
        }
        // The links to other buckets first: a process dying between the two scripts leaves
        // the page leased, so it is fetched again, rather than done with links never queued.
        let (links, others): (Vec<Link>, Vec<Link>) =
            links.into_iter().partition(|l| l.bucket == lease.bucket);
        // Which Redis the links to other buckets reach: if the completion reaches another
        // (a restart from an older snapshot, a failover), they may be lost with the first's
        // state while the page is done in the second's, and are sent again (below).
        let reached = (
            inner.store.server_changes(),
            inner.presence.forgets.load(Ordering::Relaxed),
        );
        let resend = others.clone();
        // Those to buckets this process does not own go to their owners' lists.
        let admitted = inner.admit_or_forward(others, true).await;
        if let Err(err) = admitted {
            inner.not_sending(&links);
            inner.give_up_bucket_of(&lease);
            return Err(err);
        }
        let sent = links.len();
        let step = Step {
            ended: ended.as_ref().map(|e| (lease.epoch, e.lease.clone())),
            ..Step::links(links)
        };
        let answer = Arc::clone(inner).submit(lease.bucket, step).await;
        let now = (
            inner.store.server_changes(),
            inner.presence.forgets.load(Ordering::Relaxed),
        );
        if now != reached && !resend.is_empty() {
            // The seen-test drops those the second Redis holds: sending again is harmless.
            if let Err(err) = inner.admit(resend).await {
                tracing::warn!(
                    "sending again the links of {} after Redis changed: {err}",
                    lease.url
                );
            }
        }
        let batch::StepAnswer {
            admitted,
            refused,
            ended: written,
            ..
        } = answer?;
        // A bucket being let go ends its hold once its last lease is written, not at the
        // next heartbeat: the process it goes to starts on it a beat sooner.
        let drained = inner
            .owners
            .buckets()
            .get(&lease.bucket)
            .is_some_and(|o| o.epoch == lease.epoch && o.letting_go() && o.leases_out() == 0);
        if drained {
            let (inner, bucket, epoch) = (Arc::clone(inner), lease.bucket, lease.epoch);
            tokio::spawn(async move {
                if let Err(err) = inner.release(bucket, epoch).await {
                    tracing::debug!("letting bucket {bucket} go: {err}");
                }
            });
        }
        inner.count_admitted(sent, admitted, refused);
        let c = &inner.counts;
        let (Some(ended), Some((true, queued))) = (ended, written) else {
            // Not this process's to end: its bucket went to another, which leases it again.
            c.fenced.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        };
        let fate = ended.fate;
        match fate {
            Fate::Succeeded => &c.succeeded,
            Fate::Failed => &c.failed,
            Fate::Retried { .. } => &c.retries,
            Fate::Exhausted => &c.exhausted,
            _ => &c.given_up_urls,
        }
        .fetch_add(1, Ordering::Relaxed);
        let given_up = ended
            .lease
            .gave_up_host
            .then(|| u64::try_from(queued).unwrap_or(0) + ended.taken as u64);
        Ok(Some(Completion::new(fate, given_up)))
    }

    /// Gives a lease back unfetched: its URL goes to the front of its host's queue.
    ///
    /// # Example
    ///
    /// See [`Next`].
    pub async fn abandon(&self, lease: SharedLease) -> Result<(), Error> {
        self.give_back(lease, Duration::ZERO).await
    }

    /// Gives a lease back as [`abandon`](Self::abandon) does, its host not leased again for
    /// `wait` (the turn of the host's address, say: see
    /// [`enter_address`](Self::enter_address)).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier, lease: shared::SharedLease) -> Result<(), shared::Error> {
    /// frontier.abandon_for(lease, std::time::Duration::from_millis(300)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn abandon_for(&self, lease: SharedLease, wait: Duration) -> Result<(), Error> {
        self.give_back(lease, wait).await
    }

    /// Gives a lease back in its bucket's next batch script: many a page at an address
    /// whose line is full (see the crawler's `AddressWaits`), where a script of its own
    /// each was some 12 Redis commands.
    async fn give_back(&self, mut lease: SharedLease, wait: Duration) -> Result<(), Error> {
        let inner = &self.inner;
        drop(lease.working.take());
        // Kept for another lease of the same URL, if this process holds one: its worker
        // completes the page with them.
        let links = inner.let_go_pending(lease.url.as_str(), false);
        inner.not_sending(&links);
        let now = Instant::now();
        let until = (wait > Duration::ZERO).then(|| now + wait);
        if until.is_some() {
            inner.note_paced();
        }
        // In memory only: the URL stays in flight in Redis under its token, first of its
        // host's again in this process's memory.
        let mut buckets = inner.owners.buckets();
        if let Some(owned) = buckets
            .get_mut(&lease.bucket)
            .filter(|owned| owned.epoch == lease.epoch)
        {
            owned.give_back(lease.token, now, until);
        }
        Ok(())
    }

    /// Hands this process's part of the crawl to the others, for a process that stops
    /// before the crawl is over: the URLs its buckets took and no worker leased go back to
    /// their queues, and its buckets go to the other processes now, rather than once it is
    /// no longer heard from. Leases still out are refused after (their URLs come back with
    /// the buckets' next owners): complete them first. Answers how many URLs went back.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// let given_back = frontier.hand_over().await?;
    /// println!("{given_back} URLs given back");
    /// # Ok(()) }
    /// ```
    pub async fn hand_over(&self) -> Result<usize, Error> {
        let inner = &self.inner;
        inner.presence.left.store(true, Ordering::Relaxed);
        let held: Vec<(u32, i64, usize)> = inner
            .owners
            .buckets()
            .iter_mut()
            .map(|(&bucket, owned)| (bucket, owned.epoch, owned.give_back_untaken()))
            .collect();
        let count = held.iter().map(|&(_, _, n)| n).sum();
        let releases = held
            .into_iter()
            .map(|(bucket, epoch, _)| Arc::clone(inner).release(bucket, epoch));
        let results = join_all(releases).await;
        inner.leave().await;
        results.into_iter().collect::<Result<Vec<()>, Error>>()?;
        Ok(count)
    }

    /// The whole crawl's counts, read from every bucket now.
    ///
    /// # Example
    ///
    /// See [`Totals`].
    pub async fn totals(&self) -> Result<Totals, Error> {
        let totals = self.inner.read_totals().await?;
        *self
            .inner
            .counts
            .totals
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = totals;
        Ok(totals)
    }

    /// This process's admission and completion counts, with the whole crawl's queue counts
    /// as last read (by [`totals`](Self::totals), which a background task calls each second),
    /// in the embedded frontier's shape, so that one report serves both.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(frontier: shared::SharedFrontier) { println!("{} queued", frontier.stats().queues.queued); }
    /// ```
    pub fn stats(&self) -> FrontierStats {
        let c = &self.inner.counts;
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let totals = *c.totals.lock().unwrap_or_else(PoisonError::into_inner);
        let mut stats = FrontierStats::default();
        let a = &mut stats.admission;
        a.new = load(&c.new);
        a.seen = load(&c.seen);
        let sorted = |map: &Mutex<HashMap<&'static str, u64>>| {
            let mut v: Vec<_> = map
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .iter()
                .map(|(k, v)| (*k, *v))
                .collect();
            v.sort_unstable();
            v
        };
        a.dropped = sorted(&c.dropped);
        a.invalid = sorted(&c.invalid);
        let s = &mut a.seen_set;
        s.urls = totals.seen;
        s.filter_bytes = usize::try_from(totals.seen_bits / 8).unwrap_or(usize::MAX);
        s.sub_filters = usize::try_from(totals.seen_generations).unwrap_or(usize::MAX);
        s.target_rate = self.inner.keys.seen_rate;
        // The filters are sized so that a test's rate stays below the target, at any size:
        // the target is the estimate reported, a bound.
        s.estimated_rate = s.target_rate;
        s.expected_wrongly_dropped = (a.new + a.seen) as f64 * s.target_rate;
        let q = &mut stats.queues;
        q.pushed = a.new;
        q.queued = totals.queued;
        q.in_flight = totals.leased;
        q.leases = load(&c.leases);
        q.retries = load(&c.retries);
        q.succeeded = load(&c.succeeded);
        q.failed = load(&c.failed);
        q.exhausted = load(&c.exhausted);
        q.given_up_hosts = totals.given_up_hosts;
        q.hosts = totals.hosts;
        q.given_up_urls = load(&c.given_up_urls);
        stats
    }

    /// The whole crawl's counts as last read (each second, and by [`totals`](Self::totals)).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(frontier: shared::SharedFrontier) { println!("{} done", frontier.last_totals().done); }
    /// ```
    pub fn last_totals(&self) -> Totals {
        *self
            .inner
            .counts
            .totals
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Completions refused because the lease's bucket was taken over by another process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(frontier: shared::SharedFrontier) { assert_eq!(frontier.fenced(), 0); }
    /// ```
    pub fn fenced(&self) -> u64 {
        self.inner.counts.fenced.load(Ordering::Relaxed)
    }
}

impl Inner {
    /// Notes a lease of `url`: its page's links wait for a completion.
    pub(super) fn hold_pending(&self, url: &str) {
        let mut pending = self
            .sent
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        pending.entry(url.to_owned()).or_default().holders += 1;
    }

    /// Whether the scope admits `url` pushed at `depth`, by the requisite rules for a
    /// `requisite` (see [`SharedFrontier::push_requisite`]).
    fn admits(
        &self,
        url: &Canonical,
        depth: u32,
        requisite: bool,
    ) -> Result<(), frontier::DropReason> {
        match requisite {
            true => self.rules.scope.check_requisite(url),
            false => self.rules.scope.check(url, depth),
        }
    }

    /// Whether `url` is a page this process holds a lease of (its links wait for it).
    fn is_pending(&self, url: &str) -> bool {
        self.sent
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .contains_key(url)
    }

    /// A lease of `url` ends: its completion takes the page's links (`completing`), or it is
    /// abandoned, and the links go with it only when no other lease of the page is held.
    fn let_go_pending(&self, url: &str, completing: bool) -> Vec<Link> {
        let mut pending = self
            .sent
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(held) = pending.get_mut(url) else {
            return Vec::new();
        };
        held.holders = held.holders.saturating_sub(1);
        if held.holders == 0 {
            return pending
                .remove(url)
                .map(|held| held.links)
                .unwrap_or_default();
        }
        if completing {
            std::mem::take(&mut held.links)
        } else {
            Vec::new()
        }
    }

    /// Gives up a lease's bucket when its completion cannot be sent: its URL comes back to
    /// the crawl with the bucket's next owner (this process again, at a heartbeat that
    /// reaches Redis). Leased again at once, it would be fetched again and again while
    /// Redis refused.
    fn give_up_bucket_of(&self, lease: &SharedLease) {
        self.drop_bucket(lease.bucket, lease.epoch, "a completion could not be sent");
    }

    /// Calls a function of the frontier's library (see [`crate::scripts`]).
    async fn call<T: redis::FromRedisValue>(
        &self,
        call: &crate::scripts::Call<'_>,
    ) -> Result<T, Error> {
        self.store.invoke(call, &self.scripts.library).await
    }

    /// A new request id: a script sent again with it after its answer was lost (a timeout,
    /// a dropped connection) answers what its first run did, and changes nothing.
    fn request_id(&self) -> String {
        format!(
            "{}:{}",
            self.id,
            self.sent.requests_sent.fetch_add(1, Ordering::Relaxed)
        )
    }
}

/// The local list of links sent ([`Sent::pushed`]): at a tenth of the crawl's rate, as a
/// false positive here drops a new URL too, and the two rates add up.
fn new_pushed(layout: &Layout) -> Result<SeenSet, Error> {
    SeenSet::builder()
        .initial_capacity(usize::try_from(layout.seen_initial_capacity).unwrap_or(usize::MAX))
        .false_positive_rate(layout.seen_rate / 10.0)
        .build()
        .map_err(|err| ErrorKind::BadLayout(format!("the local seen-test: {err}")).into())
}
