//! [`SharedFrontier`]: what a crawler process asks of a crawl kept in Redis.

use std::collections::{HashMap, HashSet, VecDeque};
use std::fmt::Write as _;
use std::hash::Hasher;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};
use std::time::{Duration, Instant};

use frontier::{
    Canonical, Canonicalizer, Completion, Fate, FrontierStats, HostPoliteness, Outcome, Politeness,
    ScopeRules, SeenSet, Url,
};
use futures_util::future::join_all;
use siphasher::sip128::SipHasher13;
use tokio::sync::oneshot;

use crate::scripts::{self, FateCode, Scripts, millis};
use crate::seen::{Frozen, FrozenGen, Generation, Probes, Schedule};
use crate::store::{Layout, Store, Stored};
use crate::{Error, ErrorKind};

/// The most links one batch script takes (a step with more goes alone).
const MAX_BATCH: usize = 1000;

/// The most steps (completions, or links alone) one batch script takes.
const MAX_STEPS: usize = 128;

/// Buckets polled at once when a process looks for work.
const POLL_WIDTH: usize = 8;

/// Each script's answer says when its bucket's next host is ready, and a process asks the
/// bucket for leases then. Other processes change a bucket unseen: their completions free a
/// host's connection, their links give an empty bucket work. So, while it looks for work, a
/// process asks again a bucket with work but no host ready or waiting (all at their
/// connection limit) after this long...
const REPOLL: Duration = Duration::from_millis(100);

/// ...a bucket that had no work when last heard of after this long (a process whose links
/// give it work hears so in its script's answer, and asks it then)...
const REPOLL_EMPTY: Duration = Duration::from_millis(1000);

/// ...and a bucket whose next host waits for its delay after this long: only another
/// process's links to a new host can make it ready sooner than it said.
const REPOLL_WAITING: Duration = Duration::from_millis(1000);

/// Each bucket has an owner among the processes present, which asks it for leases the
/// instant it is ready; the others ask this much later, if still ready by what they know.
/// So a host ready at an instant is asked for by one process, not by every idle one, and
/// another takes it when its owner has no worker free. A bucket that gave a process all the
/// leases it asked for has more ready than its owner takes: that process asks again at once.
const STEAL_LAG: Duration = Duration::from_millis(50);

/// How often a process says it is present and learns who else is (and, every fifth time,
/// reads the crawl's totals).
const HEARTBEAT: Duration = Duration::from_secs(1);

/// A process not heard of for this long owns no bucket.
pub(crate) const PRESENT_FOR: Duration = Duration::from_secs(5);

/// A process finding no work checks whether the crawl is over (reading every bucket twice)
/// at once, then after waits that double from the shortest to the longest until it gets a
/// lease again: one idle while others finish the crawl's last hosts would otherwise read
/// every bucket many times a second.
const IDLE_CHECK_MIN: Duration = Duration::from_millis(50);
const IDLE_CHECK_MAX: Duration = Duration::from_secs(2);

/// The most leases one script hands out.
const LEASE_BATCH: usize = 64;

/// The fewest leases a script is asked for: from a bucket not known to have URLs queued, or
/// when few workers are idle, a few more than needed save the next ones a round trip, and
/// hold little from other processes.
const LEASE_MIN: usize = 4;

/// A URL a process may fetch now: leased in Redis until completed, abandoned, or its
/// deadline passes (then it goes back to the crawl for any process).
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
pub struct Lease {
    url: Canonical,
    referrer: Option<String>,
    depth: u32,
    attempts: u32,
    given_up: bool,
    bucket: u32,
    token: u64,
    /// Counts the lease as with a worker until it is completed or given back.
    working: Option<Working>,
}

impl Lease {
    /// The URL to fetch.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::Lease) { println!("{}", lease.url()); }
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
    /// # fn f(lease: shared::Lease) { println!("{:?}", lease.referrer()); }
    /// ```
    pub fn referrer(&self) -> Option<&str> {
        self.referrer.as_deref()
    }

    /// Links followed from a seed to reach the URL.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::Lease) { assert!(lease.depth() < 2000); }
    /// ```
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Which try of the URL this is: 1 the first time.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::Lease) { assert!(lease.attempts() >= 1); }
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// Whether the URL's host was given up: record the URL, do not fetch it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # fn f(lease: shared::Lease) { if lease.host_given_up() { println!("not fetched"); } }
    /// ```
    pub fn host_given_up(&self) -> bool {
        self.given_up
    }
}

/// What a process is to do next.
///
/// # Example
///
/// ```no_run
/// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
/// match frontier.next().await? {
///     shared::Next::Lease(lease) => frontier.abandon(lease).await?,
///     shared::Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
///     shared::Next::Done => println!("nothing queued or leased anywhere"),
/// }
/// # Ok(()) }
/// ```
#[derive(Debug)]
pub enum Next {
    /// Fetch this.
    Lease(Lease),
    /// Nothing can be leased before this instant, as far as this process knows.
    WaitUntil(Instant),
    /// Nothing is queued or leased in any bucket, by any process: the crawl is over.
    Done,
}

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
    /// URLs done with (fetched, failed, or dropped with their host).
    pub done: u64,
    /// Leases that expired and went back to the crawl (their process died or stalled).
    pub reaped: u64,
    /// Hosts given up.
    pub given_up_hosts: u64,
    /// Hosts pushed to.
    pub hosts: u64,
    /// Bits of the seen-test's filters, all buckets.
    pub seen_bits: u64,
    /// The most generations any bucket's seen-test has grown to.
    pub seen_generations: u64,
    /// New URLs refused by the per-host page budget (they stay seen).
    pub host_budget: u64,
    /// Changes made: two equal sums with nothing queued or leased prove the crawl over.
    ops: u64,
}

/// What this process knows of one bucket, from the last script that answered for it.
#[derive(Clone, Copy, Debug)]
struct View {
    /// When its first host may be leased (None: no host is ready or waiting).
    ready: Option<Instant>,
    queued: i64,
    leased: i64,
    /// When it was last heard of; None: never.
    heard: Option<Instant>,
    /// Whether this process owns it: asks it for leases the instant it is ready.
    owned: bool,
    /// Whether it gave this process all the leases last asked of it: more are likely ready,
    /// which its owner has no worker free for.
    plenty: bool,
}

impl View {
    /// When this process may ask for the bucket's ready host, if one is ready or waiting.
    fn ready_for_me(&self) -> Option<Instant> {
        let lag = if self.owned || self.plenty {
            Duration::ZERO
        } else {
            STEAL_LAG
        };
        self.ready.map(|at| at + lag)
    }
}

/// What [`SharedFrontier::mark_sitemap`] did.
///
/// # Example
///
/// See [`SharedFrontier::mark_sitemap`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SitemapMark {
    /// Taken as a sitemap by this process: push it.
    Taken,
    /// Known as one already (pushed by whoever took it).
    Known,
    /// Its host has the most sitemaps it may: not taken.
    OverCap,
}

/// One step of a bucket's batch: a lease to complete with its page's links of the bucket,
/// or links alone.
struct Step {
    lease: Option<Completing>,
    links: Vec<Link>,
    /// A body's probes for the content-seen test (then no lease and no links).
    body: Option<Probes>,
}

/// A lease to complete, as the batch script takes it: the URL goes with the token, so that a
/// token handed out again (Redis rolled back to a snapshot older than the lease) completes
/// nothing but the lease of that URL.
struct Completing {
    token: u64,
    url: String,
    outcome: Outcome,
}

/// Where a step's answer goes: its fate, next attempt, URLs waiting on a host given up now,
/// new links, and links the host's page budget refused (see the batch script).
type Answer = oneshot::Sender<Result<[i64; 5], Error>>;

/// The steps waiting for a bucket's next batch, and whether a batch is in flight.
#[derive(Default)]
struct Batch {
    waiting: Vec<(Step, Answer)>,
    flushing: bool,
}

/// Counts a lease as with a worker until dropped: when the worker completes it or gives it
/// back, or drops it.
#[derive(Debug)]
struct Working(Arc<AtomicUsize>);

impl Working {
    fn new(count: &Arc<AtomicUsize>) -> Working {
        count.fetch_add(1, Ordering::Relaxed);
        Working(Arc::clone(count))
    }
}

impl Drop for Working {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A link on its way to Redis: its seen-test probes, host and entry.
struct Link {
    bucket: u32,
    probes: Probes,
    host: String,
    depth: u32,
    url: Canonical,
    /// The page whose link this is, shared by its links; `None` for a seed.
    from: Option<Arc<str>>,
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
///     Politeness::default(), Duration::from_secs(30), 16)?;
/// frontier.push_seeds(vec![seed]).await?;
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct SharedFrontier {
    inner: Arc<Inner>,
}

struct Inner {
    store: Store,
    /// This process among the crawl's: random, so that two never share one.
    id: String,
    /// When this process, finding no work, may next check whether the crawl is over, and
    /// the wait after that.
    idle_check: Mutex<(Instant, Duration)>,
    /// Set once the crawl is over: every worker is told so without reading Redis again.
    over: AtomicBool,
    scripts: Scripts,
    buckets: u32,
    /// The sizes a bucket's seen-test grows by.
    schedule: Schedule,
    /// Copies of the seen-test's frozen generations, to look URLs up in here.
    frozen: Frozen,
    /// The seen-test's target false-positive rate.
    seen_rate: f64,
    sip_key: [u8; 16],
    canon: Canonicalizer,
    scope: ScopeRules,
    politeness: Politeness,
    lease_time: Duration,
    views: Mutex<Vec<View>>,
    /// The fetch workers that ask for leases...
    workers: usize,
    /// ...and how many of them hold one: a search for work takes leases for the others.
    working: Arc<AtomicUsize>,
    /// Leases handed out by Redis not yet taken by a worker.
    buffer: Mutex<VecDeque<Lease>>,
    /// One search for work at a time: the others wait for its leases.
    search: tokio::sync::Mutex<()>,
    /// Where the next search starts, so that every bucket is polled in turn.
    cursor: AtomicUsize,
    /// Leases held by this process, by bucket and token: renewed until completed.
    held: Mutex<HashMap<(u32, u64), ()>>,
    /// The links of each page leased to this process, sent when it is completed: those to
    /// other buckets first, those of its own bucket with the completion (one round trip).
    pending: Mutex<HashMap<String, Vec<Link>>>,
    /// The URLs this process has had admitted (new or seen) in Redis: a link met again is
    /// not sent again. Most links of a page lead where earlier pages led, so this saves
    /// most of the seen-test's work in Redis and its round trips. Replaced by an empty one
    /// when Redis goes back to an older state ([`Inner::went_back`]); a std lock, read once
    /// per link and written only then.
    pushed: RwLock<SeenSet>,
    /// The crawl's layout, to make `pushed` anew.
    layout: Layout,
    /// Each bucket's count of changes as last heard, and when by the server's clock (ms):
    /// fewer at a later instant means Redis went back.
    ops_seen: Mutex<Vec<(i64, i64)>>,
    /// The crawl's epoch as last read (-1 before the first heartbeat): bumped by a process
    /// that finds Redis went back, so that the others forget what they sent too.
    epoch: AtomicI64,
    /// Scripts that change the crawl sent so far: their request ids.
    requests_sent: AtomicU64,
    /// How many times this process forgot the links it sent (see [`Inner::forget_sent`]).
    forgets: AtomicU64,
    /// The seeds' redirect targets this process has in its scope: another process's join
    /// it at the next heartbeat.
    redirect_targets: AtomicUsize,
    /// Hosts whose own politeness (`[[hosts]]`) this process has made sure Redis holds.
    policies: Mutex<HashSet<String>>,
    /// Each bucket's next batch of completions and links.
    batches: Mutex<HashMap<u32, Batch>>,
    /// Links sent (or waiting to go with their page's completion) and not yet answered:
    /// the pages in flight link to one another, and one of them sends each.
    sending: Mutex<HashSet<String>>,
    counts: Counts,
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
    /// processes; a lease not completed or renewed within `lease_time` goes back to the
    /// crawl; `workers` is how many tasks of this process ask for leases, as a search for
    /// work takes leases for those idle. Spawns the task that renews this process's leases:
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
        workers: usize,
    ) -> Result<SharedFrontier, Error> {
        let layout = &stored.layout;
        let pushed = new_pushed(layout)?;
        let views = vec![
            View {
                ready: None,
                queued: 0,
                leased: 0,
                heard: None,
                // Until the first heartbeat says who else is there.
                owned: true,
                plenty: false,
            };
            layout.buckets as usize
        ];
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
        let inner = Arc::new(Inner {
            store,
            id: format!("{}-{:016x}", std::process::id(), u64::from_be_bytes(id)),
            idle_check: Mutex::new((Instant::now(), Duration::ZERO)),
            over: AtomicBool::new(false),
            scripts: Scripts::new(),
            buckets: layout.buckets,
            schedule: Schedule::new(
                layout.seen_initial_capacity,
                layout.seen_rate,
                layout.buckets,
            )?,
            frozen: Frozen::default(),
            seen_rate: layout.seen_rate,
            sip_key: layout.key,
            canon,
            scope,
            politeness,
            lease_time,
            views: Mutex::new(views),
            workers: workers.max(1),
            working: Arc::new(AtomicUsize::new(0)),
            buffer: Mutex::new(VecDeque::new()),
            search: tokio::sync::Mutex::new(()),
            cursor: AtomicUsize::new(0),
            held: Mutex::new(HashMap::new()),
            pending: Mutex::new(HashMap::new()),
            pushed: RwLock::new(pushed),
            layout: layout.clone(),
            ops_seen: Mutex::new(vec![(0, 0); layout.buckets as usize]),
            epoch: AtomicI64::new(-1),
            requests_sent: AtomicU64::new(0),
            forgets: AtomicU64::new(0),
            redirect_targets: AtomicUsize::new(0),
            batches: Mutex::new(HashMap::new()),
            policies: Mutex::new(HashSet::new()),
            sending: Mutex::new(HashSet::new()),
            counts: Counts::default(),
        });
        tokio::spawn(renew(Arc::downgrade(&inner)));
        Ok(SharedFrontier { inner })
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
        let links = seeds
            .into_iter()
            .map(|seed| self.inner.link(seed, 0, None))
            .collect::<Vec<_>>();
        self.inner.set_policies(&links).await?;
        self.inner.admit(links).await
    }

    /// Makes `url`, a seed's redirect target, a seed of the scope: its host (or domain) joins
    /// this process's scope, and the crawl's list of redirect targets, which processes that
    /// join later put in their scope ([`Stored::redirect_targets`]), never among the seeds a
    /// user gave.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let moved = frontier::Canonicalizer::new().canonicalize("https://www.example.com/")?;
    /// frontier.add_seed(&moved).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_seed(&self, url: &Canonical) -> Result<(), Error> {
        self.inner.scope.add_seed(url);
        self.inner
            .store
            .add_redirect_targets(&[url.as_str().to_owned()])
            .await
    }

    /// What the crawl knows of a robots.txt (`key`: `scheme://host:port` of host `host`), as
    /// a process stored it ([`SharedFrontier::put_robots`]): how long ago it was stored (by
    /// this machine's clock against that process's stamp) and its text. So that a host's robots.txt is
    /// fetched once for the crawl, not once per process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// let key = "https://example.com";
    /// if frontier.robots(key, "example.com").await?.is_none()
    ///     && frontier.claim_robots(key, "example.com", std::time::Duration::from_secs(60)).await?
    /// {
    ///     // Fetch it, then:
    ///     frontier.put_robots(key, "example.com", b"200\nUser-agent: *\nDisallow: /private").await?;
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn robots(
        &self,
        key: &str,
        host: &str,
    ) -> Result<Option<(Duration, Vec<u8>)>, Error> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.inner.robots_key(host)).arg(key);
        let stored: Option<Vec<u8>> = self.inner.store.query(&cmd).await?;
        Ok(stored.and_then(|s| {
            // Bytes, as sent: a file need not be UTF-8.
            let space = s.iter().position(|&b| b == b' ')?;
            let at: u64 = std::str::from_utf8(&s[..space]).ok()?.parse().ok()?;
            let age = Duration::from_millis(crate::store::unix_millis().saturating_sub(at));
            Some((age, s[space + 1..].to_vec()))
        }))
    }

    /// Claims the fetch of a robots.txt for `ttl`: true for the one process that is to fetch
    /// it now; the others wait for what it stores. A process that dies holding the claim
    /// holds it until `ttl` passes.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier::robots`].
    pub async fn claim_robots(&self, key: &str, host: &str, ttl: Duration) -> Result<bool, Error> {
        // A claim already this process's is its own: a claim sent again after its answer was
        // lost must not take this process for another and wait for itself.
        let mut invocation = self.inner.scripts.claim_robots.prepare_invoke();
        invocation.key(format!("{}:{key}", self.inner.robots_key(host)));
        invocation.arg(&self.inner.id).arg(millis(ttl).max(1));
        let claimed: i64 = self.inner.store.invoke(&invocation).await?;
        Ok(claimed == 1)
    }

    /// Stores what a robots.txt said (see [`SharedFrontier::robots`]), stamped with this
    /// process's clock, and lets go of the claim on it.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier::robots`].
    pub async fn put_robots(&self, key: &str, host: &str, text: &[u8]) -> Result<(), Error> {
        let at = crate::store::unix_millis();
        let robots = self.inner.robots_key(host);
        let mut value = format!("{at} ").into_bytes();
        value.extend_from_slice(text);
        let mut set = redis::cmd("HSET");
        set.arg(&robots).arg(key).arg(value);
        let mut release = redis::cmd("DEL");
        release.arg(format!("{robots}:{key}"));
        self.inner.store.query::<i64>(&set).await?;
        self.inner.store.query::<i64>(&release).await.map(drop)
    }

    /// Lets go of the claim on a robots.txt without storing anything (its fetch had no
    /// answer): the others fetch it themselves rather than wait for the claim to pass.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// frontier.release_robots("https://example.com", "example.com").await?;
    /// # Ok(()) }
    /// ```
    pub async fn release_robots(&self, key: &str, host: &str) -> Result<(), Error> {
        let mut release = redis::cmd("DEL");
        release.arg(format!("{}:{key}", self.inner.robots_key(host)));
        self.inner.store.query::<i64>(&release).await.map(drop)
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
        if let Err(reason) = self.inner.scope.check(&url, depth) {
            self.inner.count_drop(reason.reason());
            return Ok(false);
        }
        let link = vec![self.inner.link(url, depth, from.map(Arc::from))];
        self.inner.set_policies(&link).await?;
        self.inner.admit(link).await.map(|new| new > 0)
    }

    /// Pushes the links found on `page` (resolved against `base`), `depth` links from a
    /// seed. When `page` is a lease of this process, its links wait for the lease's
    /// completion, and this answers without sending them (it waits only to store the own
    /// politeness of a host with `[[hosts]]` settings, once per host): the completion admits
    /// the links to other buckets (a step of each one's next batch script), then those of the
    /// page's own bucket in the same step as the completion, so that a page whose links stay
    /// on its site costs no round trip of its own for them, and a failure to admit them fails
    /// the completion, whose page is fetched again. Other pages' links are admitted now.
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
        let from: Arc<str> = Arc::from(page.as_str());
        let mut links = Vec::with_capacity(hrefs.len());
        for href in hrefs {
            let url = match inner.canon.canonicalize_relative(base, href) {
                Ok(url) => url,
                Err(rejected) => {
                    inner.count_invalid(rejected.reason());
                    continue;
                }
            };
            if let Err(reason) = inner.scope.check_link(page, &url, depth) {
                inner.count_drop(reason.reason());
                continue;
            }
            if inner
                .pushed
                .read()
                .unwrap_or_else(PoisonError::into_inner)
                .contains(&url)
                || !inner
                    .sending
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .insert(url.as_str().to_owned())
            {
                inner.counts.seen.fetch_add(1, Ordering::Relaxed);
                continue;
            }
            links.push(inner.link(url, depth, Some(Arc::clone(&from))));
        }
        if let Err(err) = inner.set_policies(&links).await {
            inner.forget(&links);
            return Err(err);
        }
        {
            let mut pending = inner.pending.lock().unwrap_or_else(PoisonError::into_inner);
            if let Some(held) = pending.get_mut(page.as_str()) {
                held.append(&mut links);
            }
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
        &self.inner.politeness
    }

    /// Leases this process holds that no worker has taken yet: a search for work takes
    /// leases for every idle worker, and the worker that searched should wake the others.
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
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// The next lease, or when to ask again, or that the crawl is over.
    ///
    /// # Example
    ///
    /// See [`Next`].
    pub async fn next(&self) -> Result<Next, Error> {
        let inner = &self.inner;
        loop {
            if let Some(lease) = inner.take_buffered() {
                return Ok(Next::Lease(lease));
            }
            let _searching = inner.search.lock().await;
            if let Some(lease) = inner.take_buffered() {
                return Ok(Next::Lease(lease));
            }
            // Over for good (see is_over): the workers that waited for this lock are told at
            // once, rather than each after a sweep of every bucket.
            if inner.over.load(Ordering::Relaxed) {
                return Ok(Next::Done);
            }
            // Until a lease comes, or every bucket has been asked lately and none is ready,
            // or this search asked as many buckets as there are: a sweep of many buckets far
            // away (thousands, a round trip of milliseconds) outlasts the time after which the
            // first ones are due again, and would go on for ever.
            let (mut got, mut asked_here) = (0, 0);
            loop {
                let (asked, leased) = inner.poll().await?;
                got += leased;
                asked_here += asked;
                if got > 0 || asked == 0 || asked_here >= inner.buckets as usize {
                    break;
                }
            }
            if got > 0 {
                continue;
            }
            let now = Instant::now();
            let (next_ready, idle) = {
                let views = inner.views.lock().unwrap_or_else(PoisonError::into_inner);
                let next_ready = views.iter().filter_map(View::ready_for_me).min();
                let idle = views
                    .iter()
                    .all(|v| v.heard.is_some() && v.queued <= 0 && v.leased <= 0);
                (next_ready, idle)
            };
            if idle && inner.is_over().await? {
                return Ok(Next::Done);
            }
            let until = next_ready
                .unwrap_or(now + REPOLL)
                .clamp(now + Duration::from_millis(5), now + REPOLL);
            return Ok(Next::WaitUntil(until));
        }
    }

    /// Completes a lease with its fetch's outcome, after admitting the page's links to other
    /// buckets, and with those of its own bucket in the same step of the bucket's next batch
    /// script. `Ok(None)` when the lease was no longer held: it expired (this process
    /// stalled past its deadline) and went back to the crawl, where another process may have
    /// fetched it; its record is that process's to write. On an error the lease is no longer
    /// renewed: it expires, and its URL comes back to the crawl.
    ///
    /// # Example
    ///
    /// See [`Lease`].
    pub async fn complete(
        &self,
        mut lease: Lease,
        outcome: Outcome,
    ) -> Result<Option<Completion>, Error> {
        let inner = &self.inner;
        // Its worker is free for another lease while this one's completion is sent.
        drop(lease.working.take());
        let links = inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(lease.url.as_str())
            .unwrap_or_default();
        // The links to other buckets first: a process dying between the two scripts leaves
        // the page leased, so it is fetched again, rather than done with links never queued.
        let (links, others): (Vec<Link>, Vec<Link>) =
            links.into_iter().partition(|l| l.bucket == lease.bucket);
        let admitted = inner.admit(others).await;
        if let Err(err) = admitted {
            inner.forget(&links);
            inner.let_go(&lease);
            return Err(err);
        }
        let sent = links.len();
        let step = Step {
            lease: Some(Completing {
                token: lease.token,
                url: lease.url.as_str().to_owned(),
                outcome,
            }),
            links,
            body: None,
        };
        let answer = Arc::clone(inner).submit(lease.bucket, step).await;
        inner.let_go(&lease);
        let [fate, next_attempt, given_up, admitted, refused] = answer?;
        inner.count_admitted(sent, admitted, refused);
        let c = &inner.counts;
        let fate = match FateCode::fate(fate, next_attempt) {
            Ok(Some(fate)) => fate,
            Ok(None) => {
                c.fenced.fetch_add(1, Ordering::Relaxed);
                return Ok(None);
            }
            Err(err) => return Err(ErrorKind::Server(err).into()),
        };
        match fate {
            Fate::Succeeded => &c.succeeded,
            Fate::Failed => &c.failed,
            Fate::Retried { .. } => &c.retries,
            Fate::Exhausted => &c.exhausted,
            _ => &c.given_up_urls,
        }
        .fetch_add(1, Ordering::Relaxed);
        let given_up = u64::try_from(given_up).ok();
        Ok(Some(Completion::new(fate, given_up)))
    }

    /// Gives a lease back unfetched: its URL goes to the front of its host's queue.
    ///
    /// # Example
    ///
    /// See [`Next`].
    pub async fn abandon(&self, mut lease: Lease) -> Result<(), Error> {
        let inner = &self.inner;
        drop(lease.working.take());
        let pending = inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(lease.url.as_str());
        if let Some(links) = pending {
            inner.forget(&links);
        }
        let tag = inner.store.tag(lease.bucket);
        let mut invocation = inner.scripts.abandon.prepare_invoke();
        for key in ["ready", "hosts", "counts", "leases", "due"] {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(&tag)
            .arg(inner.politeness.connections_per_host())
            .arg(lease.token)
            .arg(lease.url.as_str());
        let answer = inner.store.invoke::<i64>(&invocation).await;
        // Not given back: it expires, and comes back all the same.
        inner.let_go(&lease);
        answer.map(drop)
    }

    /// Gives back the leases no worker took (see [`buffered`](Self::buffered)): for a
    /// process that stops before the crawl is over, so that other processes have them now
    /// rather than when they expire. Answers how many.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// let given_back = frontier.give_back_buffered().await?;
    /// println!("{given_back} leases given back");
    /// # Ok(()) }
    /// ```
    pub async fn give_back_buffered(&self) -> Result<usize, Error> {
        let leases: Vec<Lease> = self
            .inner
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain(..)
            .collect();
        let count = leases.len();
        for answer in join_all(leases.into_iter().map(|lease| self.abandon(lease))).await {
            answer?;
        }
        Ok(count)
    }

    /// Takes `url` as a sitemap of the crawl at index level `level` (0 for a sitemap listed
    /// by robots.txt or given as a seed, one more for each index above it), unless it is
    /// known already or its host has `max_per_host` sitemaps: so that the process that
    /// leases it reads it as one, at its level, and a host's cap holds for the crawl.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let sitemap = frontier::Canonicalizer::new().canonicalize("https://example.com/sitemap.xml")?;
    /// if frontier.mark_sitemap(&sitemap, 0, 1000).await? == shared::SitemapMark::Taken {
    ///     frontier.push_seeds(vec![sitemap.clone()]).await?;
    /// }
    /// assert_eq!(frontier.sitemap_level(&sitemap).await?, Some(0));
    /// # Ok(()) }
    /// ```
    pub async fn mark_sitemap(
        &self,
        url: &Canonical,
        level: u8,
        max_per_host: u32,
    ) -> Result<SitemapMark, Error> {
        let inner = &self.inner;
        let host = url.host_key();
        let tag = inner.store.tag(inner.bucket_of(host));
        let mut invocation = inner.scripts.mark_sitemap.prepare_invoke();
        invocation
            .key(format!("{tag}:sitemaps"))
            .key(format!("{tag}:sitemap-hosts"))
            .arg(&tag)
            .arg(url.as_str())
            .arg(host)
            .arg(level)
            .arg(max_per_host)
            .arg(&inner.id);
        Ok(match inner.store.invoke::<i64>(&invocation).await? {
            1 => SitemapMark::Taken,
            0 => SitemapMark::Known,
            _ => SitemapMark::OverCap,
        })
    }

    /// Forgets a sitemap [marked](Self::mark_sitemap) whose push was not admitted (seen
    /// before, or out of scope), so that it does not count against its host.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), Box<dyn std::error::Error>> {
    /// let sitemap = frontier::Canonicalizer::new().canonicalize("https://example.com/s.xml")?;
    /// frontier.mark_sitemap(&sitemap, 0, 1000).await?;
    /// frontier.unmark_sitemap(&sitemap).await?;
    /// assert_eq!(frontier.sitemap_level(&sitemap).await?, None);
    /// # Ok(()) }
    /// ```
    pub async fn unmark_sitemap(&self, url: &Canonical) -> Result<(), Error> {
        let inner = &self.inner;
        let host = url.host_key();
        let tag = inner.store.tag(inner.bucket_of(host));
        let mut invocation = inner.scripts.unmark_sitemap.prepare_invoke();
        invocation
            .key(format!("{tag}:sitemaps"))
            .key(format!("{tag}:sitemap-hosts"))
            .arg(&tag)
            .arg(url.as_str())
            .arg(host);
        inner.store.invoke::<i64>(&invocation).await.map(drop)
    }

    /// The index level of `url` if a process of the crawl [took](Self::mark_sitemap) it as a
    /// sitemap.
    ///
    /// # Example
    ///
    /// See [`SharedFrontier::mark_sitemap`].
    pub async fn sitemap_level(&self, url: &Canonical) -> Result<Option<u8>, Error> {
        let inner = &self.inner;
        let tag = inner.store.tag(inner.bucket_of(url.host_key()));
        let mut cmd = redis::cmd("HGET");
        cmd.arg(format!("{tag}:sitemaps")).arg(url.as_str());
        let stored: Option<String> = inner.store.query(&cmd).await?;
        Ok(stored.and_then(|s| s.split(' ').next()?.parse().ok()))
    }

    /// The content-seen test of the whole crawl: whether a body with this digest (a SHA-1,
    /// say) was read before by any process, marking it read. Of several processes asking
    /// for one digest at once, exactly one hears `false`. The bodies' fingerprints sit in the
    /// seen-test beside the URLs' (hashed from a text no URL can be, so they never meet but
    /// by the seen-test's false-positive rate), in the bucket the digest picks: no other
    /// structure to size, and the request joins that bucket's next batch.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// let digest = [0x5a; 20];
    /// assert!(!frontier.seen_body(&digest).await?);
    /// assert!(frontier.seen_body(&digest).await?);
    /// # Ok(()) }
    /// ```
    pub async fn seen_body(&self, digest: &[u8]) -> Result<bool, Error> {
        let inner = &self.inner;
        let mut key = String::with_capacity(2 + 2 * digest.len());
        // NUL opens no URL: a body's text never equals a URL's.
        key.push_str("\0#");
        for byte in digest {
            let _ = write!(key, "{byte:02x}");
        }
        let bucket = {
            let mut sip = SipHasher13::new_with_key(&inner.sip_key);
            sip.write(key.as_bytes());
            (sip.finish() % u64::from(inner.buckets)) as u32
        };
        let mut probes = inner.schedule.probes(&inner.sip_key, &key);
        if inner.frozen.holds(bucket, &mut probes) {
            return Ok(true);
        }
        let step = Step {
            lease: None,
            links: Vec::new(),
            body: Some(probes),
        };
        let [_, _, _, new, _] = Arc::clone(inner).submit(bucket, step).await?;
        Ok(new == 0)
    }

    /// Sets a host's robots.txt `Crawl-delay` (capped as the politeness settings say), for
    /// every process.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// frontier.set_crawl_delay("example.com", std::time::Duration::from_secs(5)).await?;
    /// # Ok(()) }
    /// ```
    pub async fn set_crawl_delay(&self, host: &str, delay: Duration) -> Result<(), Error> {
        let inner = &self.inner;
        let own = inner.politeness.host(host).delay;
        let delay = delay
            .min(inner.politeness.max_crawl_delay())
            .max(own.unwrap_or(inner.politeness.delay()));
        let tag = inner.store.tag(inner.bucket_of(host));
        let invocation = inner
            .scripts
            .crawl_delay_call(&tag, host, delay, &inner.politeness);
        inner.store.invoke::<i64>(&invocation).await.map(drop)
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
        s.target_rate = self.inner.seen_rate;
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

    /// Completions refused because the lease had expired and gone back to the crawl.
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
    fn count_drop(&self, reason: &'static str) {
        bump(&self.counts.dropped, reason);
    }

    fn count_invalid(&self, reason: &'static str) {
        bump(&self.counts.invalid, reason);
    }

    /// Counts what a step's links became: new and queued, refused by the host's page
    /// budget (new, but over it), or seen before.
    fn count_admitted(&self, sent: usize, new: i64, refused: i64) {
        let new = u64::try_from(new).unwrap_or(0);
        let refused = u64::try_from(refused).unwrap_or(0);
        self.counts.new.fetch_add(new, Ordering::Relaxed);
        for _ in 0..refused {
            self.count_drop(frontier::DropReason::HostBudget.reason());
        }
        self.counts.seen.fetch_add(
            (sent as u64).saturating_sub(new + refused),
            Ordering::Relaxed,
        );
    }

    /// Makes sure Redis holds the own politeness (`[[hosts]]` delay and connections) of the
    /// links' hosts before their first links are admitted, so that a host's limits hold from
    /// its first lease. One request per host with settings of its own, once per process.
    async fn set_policies(&self, links: &[Link]) -> Result<(), Error> {
        let todo: Vec<(u32, String, HostPoliteness)> = {
            let mut done = self.policies.lock().unwrap_or_else(PoisonError::into_inner);
            let mut todo = Vec::new();
            for link in links {
                if done.contains(&link.host) {
                    continue;
                }
                done.insert(link.host.clone());
                let own = self.politeness.host(&link.host);
                if !own.is_default() {
                    todo.push((link.bucket, link.host.clone(), own));
                }
            }
            todo
        };
        let requests = todo.iter().map(|(bucket, host, own)| {
            let tag = self.store.tag(*bucket);
            let mut invocation = self.scripts.host_policy.prepare_invoke();
            invocation
                .key(format!("{tag}:hosts"))
                .key(format!("{tag}:counts"))
                .arg(&tag)
                .arg(host)
                .arg(own.delay.map_or(-1, millis))
                .arg(own.connections.map_or(-1, i64::from));
            async move { self.store.invoke::<i64>(&invocation).await }
        });
        let mut failed = None;
        for (result, (_, host, _)) in join_all(requests).await.into_iter().zip(&todo) {
            if let Err(err) = result {
                // Not held: asked again with the host's next links.
                self.policies
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .remove(host);
                failed.get_or_insert(err);
            }
        }
        failed.map_or(Ok(()), Err)
    }

    /// Stops renewing a lease: completed, given back, or its completion failed, when it
    /// expires and its URL comes back to the crawl (it may have been done after all: then
    /// the lease is gone already).
    fn let_go(&self, lease: &Lease) {
        self.held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&(lease.bucket, lease.token));
    }

    /// Notes links as admitted in Redis: this process sends them no more.
    fn remember(&self, links: &[Link]) {
        let pushed = self.pushed.read().unwrap_or_else(PoisonError::into_inner);
        for link in links {
            // A filter that cannot grow (memory) only costs round trips: Redis still knows.
            let _ = pushed.insert(&link.url);
        }
        self.forget(links);
    }

    /// Takes links off the list of those being sent: answered, or not sent after all (their
    /// page is fetched again, and sends them again).
    fn forget(&self, links: &[Link]) {
        let mut sending = self.sending.lock().unwrap_or_else(PoisonError::into_inner);
        for link in links {
            sending.remove(link.url.as_str());
        }
    }

    /// The hash of the robots.txt files of `host`'s bucket (its claims are keys beside it).
    fn robots_key(&self, host: &str) -> String {
        format!("{}:robots", self.store.tag(self.bucket_of(host)))
    }

    fn bucket_of(&self, host: &str) -> u32 {
        let mut sip = SipHasher13::new_with_key(&self.sip_key);
        sip.write(host.as_bytes());
        (sip.finish() % u64::from(self.buckets)) as u32
    }

    fn link(&self, url: Canonical, depth: u32, from: Option<Arc<str>>) -> Link {
        let host = url.host_key().to_owned();
        Link {
            bucket: self.bucket_of(&host),
            probes: self.schedule.probes(&self.sip_key, url.as_str()),
            host,
            depth,
            url,
            from,
        }
    }

    /// Admits links: a step (of at most [`MAX_BATCH`] links) of each bucket's next batch,
    /// all at once. Answers how many were new.
    async fn admit(self: &Arc<Self>, links: Vec<Link>) -> Result<u64, Error> {
        if links.is_empty() {
            return Ok(0);
        }
        let mut by_bucket: HashMap<u32, Vec<Link>> = HashMap::new();
        for link in links {
            by_bucket.entry(link.bucket).or_default().push(link);
        }
        // A script blocks the server while it runs: a page's links are one step, a long
        // seed list many of bounded size.
        let mut steps = Vec::new();
        for (bucket, mut links) in by_bucket {
            while links.len() > MAX_BATCH {
                let rest = links.split_off(MAX_BATCH);
                steps.push((bucket, links));
                links = rest;
            }
            steps.push((bucket, links));
        }
        let requests = steps.into_iter().map(|(bucket, links)| {
            let sent = links.len();
            let inner = Arc::clone(self);
            async move {
                let step = Step {
                    lease: None,
                    links,
                    body: None,
                };
                let [_, _, _, new, refused] = Arc::clone(&inner).submit(bucket, step).await?;
                inner.count_admitted(sent, new, refused);
                Ok::<u64, Error>(u64::try_from(new).unwrap_or(0))
            }
        });
        let mut new = 0;
        for answer in join_all(requests).await {
            new += answer?;
        }
        Ok(new)
    }

    /// Adds a step to its bucket's next batch and waits for the answer. The first step of a
    /// bucket with no batch in flight starts a task that sends batches until none waits:
    /// steps that come while one is in flight go together in the next (group commit, no
    /// timer), so a busy bucket costs one script for many pages.
    async fn submit(self: Arc<Self>, bucket: u32, step: Step) -> Result<[i64; 5], Error> {
        let (answer, answered) = oneshot::channel();
        let start = {
            let mut batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
            let batch = batches.entry(bucket).or_default();
            batch.waiting.push((step, answer));
            !std::mem::replace(&mut batch.flushing, true)
        };
        if start {
            tokio::spawn(Arc::clone(&self).flush(bucket));
        }
        answered.await.unwrap_or_else(|_| {
            Err(ErrorKind::Server("a batch was dropped unanswered".into()).into())
        })
    }

    /// Sends the waiting steps of a bucket, batch after batch, until none waits.
    async fn flush(self: Arc<Self>, bucket: u32) {
        loop {
            let steps = {
                let mut batches = self.batches.lock().unwrap_or_else(PoisonError::into_inner);
                let batch = batches.entry(bucket).or_default();
                if batch.waiting.is_empty() {
                    batch.flushing = false;
                    return;
                }
                let mut links = 0;
                let mut take = 0;
                for (step, _) in &batch.waiting {
                    if take > 0 && (links + step.links.len() > MAX_BATCH || take == MAX_STEPS) {
                        break;
                    }
                    links += step.links.len();
                    take += 1;
                }
                batch.waiting.drain(..take).collect::<Vec<_>>()
            };
            // Links sent before Redis is found to have gone back are not to be remembered
            // after: their answer may come from the state that was lost.
            let forgets = self.forgets.load(Ordering::Relaxed);
            let result = self.send_batch(bucket, &steps).await;
            match result {
                Ok((answers, generations)) => {
                    let remember = self.forgets.load(Ordering::Relaxed) == forgets;
                    let bytes = |index| self.schedule.bytes(bucket, index);
                    if let Some(index) = self.frozen.wanted(bucket, generations, bytes) {
                        tokio::spawn(Arc::clone(&self).copy_generation(bucket, index));
                    }
                    for ((step, answer), got) in steps.into_iter().zip(answers) {
                        if remember {
                            self.remember(&step.links);
                        } else {
                            self.forget(&step.links);
                        }
                        let _ = answer.send(Ok(got));
                    }
                }
                Err(err) => {
                    for (step, answer) in steps {
                        self.forget(&step.links);
                        let _ = answer.send(Err(err.clone()));
                    }
                }
            }
        }
    }

    /// Copies generation `index` of a bucket's seen-test, which no script writes any more.
    async fn copy_generation(self: Arc<Self>, bucket: u32, index: usize) {
        let copy = self.read_generation(bucket, index).await;
        // Not copied: URLs are looked up in Redis, and the copy is tried again later.
        self.frozen.add(bucket, index, copy.ok());
    }

    async fn read_generation(&self, bucket: u32, index: usize) -> Result<FrozenGen, Error> {
        let tag = self.store.tag(bucket);
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(format!("{tag}:seen"))
            .arg(format!("g{index}"))
            .arg("bits")
            .arg(format!("v{index}"));
        let (geometry, bits, stash): (Option<String>, Option<u32>, Option<String>) =
            self.store.query(&cmd).await?;
        let bad = || ErrorKind::BadLayout(format!("generation {index} of bucket {tag} is missing"));
        let geometry = geometry.ok_or_else(bad)?;
        let chunks = Generation::parse(&geometry).ok_or_else(bad)?.chunks;
        let reads: Vec<redis::Cmd> = (0..chunks)
            .map(|c| {
                let mut cmd = redis::cmd("GET");
                cmd.arg(format!("{tag}:s{index}:{c}"));
                cmd
            })
            .collect();
        let chunks: Vec<Option<Vec<u8>>> = self.store.query_each(&reads).await?;
        FrozenGen::new(
            &geometry,
            bits.ok_or_else(bad)?,
            stash.as_deref(),
            chunks.into_iter().map(Option::unwrap_or_default).collect(),
        )
    }

    /// One batch script: its steps' completions and links, in order. Answers each step's
    /// five numbers, and how many generations the bucket's seen-test has (-1: not read).
    async fn send_batch(
        &self,
        bucket: u32,
        steps: &[(Step, Answer)],
    ) -> Result<(Vec<[i64; 5]>, i64), Error> {
        let tag = self.store.tag(bucket);
        let mut invocation = self.scripts.batch_call(
            &tag,
            &self.politeness,
            self.schedule.text(bucket),
            &self.request_id(),
            self.scope.per_host_budget().unwrap_or(0),
        );
        for (step, _) in steps {
            if let Some(probes) = &step.body {
                scripts::body(&mut invocation, &probes[..]);
                continue;
            }
            // Links a copy of a frozen generation knows are seen, and not sent.
            let mut sent = Vec::with_capacity(step.links.len());
            for link in &step.links {
                let mut probes = link.probes;
                if !self.frozen.holds(bucket, &mut probes) {
                    sent.push((link, probes));
                }
            }
            let lease = step.lease.as_ref();
            let lease = lease.map(|c| (c.token.to_string(), c.url.as_str(), c.outcome));
            let lease = lease.as_ref().map(|(t, url, o)| (t.as_str(), *url, *o));
            scripts::completion(&mut invocation, lease, sent.len());
            for (link, probes) in sent {
                scripts::link(
                    &mut invocation,
                    &probes[..],
                    &link.host,
                    link.depth,
                    link.url.as_str(),
                    link.from.as_deref(),
                );
            }
        }
        let answer: Vec<i64> = self.store.invoke(&invocation).await?;
        if answer.len() != steps.len() * 5 + 6 {
            return Err(ErrorKind::Server(format!(
                "unexpected answer to a batch of {}: {} numbers",
                steps.len(),
                answer.len()
            ))
            .into());
        }
        let (answers, view) = answer.split_at(steps.len() * 5);
        self.see(bucket, [view[0], view[1], view[2], view[3], view[4]]);
        let answers = answers
            .chunks(5)
            .map(|a| [a[0], a[1], a[2], a[3], a[4]])
            .collect();
        Ok((answers, view[5]))
    }

    /// Notes what a script said of a bucket: [ready-at, server now, queued, leased, ops].
    /// A bucket whose count of changes went down is older than what this process saw of
    /// it: Redis went back to an older state (see [`Inner::went_back`]).
    fn see(&self, bucket: u32, view: [i64; 5]) {
        let [ready_at, server_now, queued, leased, ops] = view;
        // Answers of scripts in flight together may come in another order than they ran:
        // only one that ran later by the server's clock, with fewer changes, shows that
        // Redis went back; a clock a second behind is another server.
        let went_back = {
            let mut seen = self.ops_seen.lock().unwrap_or_else(PoisonError::into_inner);
            let (earlier_ops, earlier_at) = seen[bucket as usize];
            let back =
                (server_now > earlier_at && ops < earlier_ops) || server_now + 1_000 < earlier_at;
            if server_now >= earlier_at || back {
                seen[bucket as usize] = (ops, server_now);
            }
            back.then(|| {
                format!("bucket {bucket} had {earlier_ops} changes, and {ops} at a later instant")
            })
        };
        if let Some(why) = went_back {
            self.went_back(why);
        }
        let now = Instant::now();
        let ready = (ready_at >= 0).then(|| {
            now + Duration::from_millis(u64::try_from(ready_at - server_now).unwrap_or(0))
        });
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        let view = &mut views[bucket as usize];
        view.ready = ready;
        view.queued = queued;
        view.leased = leased;
        view.heard = Some(now);
    }

    /// Redis went back to an older state: restarted from an older snapshot, or failed over
    /// to a replica that lagged. What this process remembers of the crawl may be newer than
    /// the crawl: links it sent (and would not send again) and copies of seen-test
    /// generations may hold URLs the crawl has forgotten. Both go; the crawl's epoch is
    /// bumped so that the other processes learn it at their next heartbeat, and do the same.
    fn went_back(&self, why: String) {
        self.forget_sent();
        tracing::warn!(
            "Redis went back to an older state ({why}: a restart from an older snapshot, or a \
             failover): this process forgets the links it sent; pages the crawl lost are \
             fetched again"
        );
        let store = self.store.clone();
        tokio::spawn(async move {
            if let Err(err) = store.bump_epoch().await {
                tracing::debug!("telling the other processes that Redis went back: {err}");
            }
        });
    }

    /// Forgets the links sent, the copies of frozen generations and the hosts whose
    /// politeness it set (see [`Inner::went_back`]).
    fn forget_sent(&self) {
        self.forgets.fetch_add(1, Ordering::Relaxed);
        match new_pushed(&self.layout) {
            Ok(fresh) => *self.pushed.write().unwrap_or_else(PoisonError::into_inner) = fresh,
            Err(err) => tracing::warn!("{err}"),
        }
        self.frozen.clear();
        self.policies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Puts the seeds' redirect targets other processes met in this process's scope (not
    /// among its trusted seeds: that is the caller's SSRF guard's business, which never sees
    /// them).
    async fn widen_scope(&self) {
        let known = self.redirect_targets.load(Ordering::Relaxed);
        let Ok(Some(targets)) = self.store.redirect_targets_beyond(known).await else {
            return;
        };
        for target in &targets {
            if let Ok(url) = self.canon.canonicalize(target) {
                self.scope.add_seed(&url);
            }
        }
        self.redirect_targets
            .store(targets.len(), Ordering::Relaxed);
    }

    /// Reads the crawl's epoch; a change since the last read (up, or down with Redis) means
    /// a process found that Redis went back: this one forgets what it sent too.
    async fn check_epoch(&self) {
        let Ok(epoch) = self.store.epoch().await else {
            return;
        };
        let known = self.epoch.swap(epoch, Ordering::Relaxed);
        if known >= 0 && known != epoch {
            self.forget_sent();
            tracing::warn!(
                "another process found that Redis went back to an older state: this process \
                 forgets the links it sent; pages the crawl lost are fetched again"
            );
        }
    }

    /// A new request id: a script sent again with it after its answer was lost (a timeout,
    /// a dropped connection) answers what its first run did, and changes nothing.
    fn request_id(&self) -> String {
        format!(
            "{}:{}",
            self.id,
            self.requests_sent.fetch_add(1, Ordering::Relaxed)
        )
    }

    fn take_buffered(&self) -> Option<Lease> {
        let mut lease = self
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front()?;
        lease.working = Some(Working::new(&self.working));
        Some(lease)
    }

    /// Asks the buckets most likely to have work for leases: those ready by now, and those
    /// not heard of for a while. Answers how many buckets were asked, and how many leases
    /// came.
    async fn poll(&self) -> Result<(usize, usize), Error> {
        let now = Instant::now();
        let n = self.buckets as usize;
        let start = self.cursor.load(Ordering::Relaxed);
        let buffered = self
            .buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len();
        // Leases for every idle worker, not only those asking now: the others wait for a
        // time, and a search for each would cost a round trip where one does.
        let idle = self
            .workers
            .saturating_sub(self.working.load(Ordering::Relaxed) + buffered)
            .max(1);
        let chosen: Vec<(u32, usize)> = {
            let views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
            let due: Vec<usize> = (0..n)
                .map(|i| (start + i) % n)
                .filter(|&b| {
                    let v = views[b];
                    let repoll = if v.ready.is_some() {
                        REPOLL_WAITING
                    } else if v.queued > 0 || v.leased > 0 {
                        REPOLL
                    } else {
                        REPOLL_EMPTY
                    };
                    v.ready_for_me().is_some_and(|at| at <= now)
                        || v.heard
                            .is_none_or(|heard| now.duration_since(heard) >= repoll)
                })
                .take(POLL_WIDTH)
                .collect();
            // The idle workers' share of each bucket last heard to have URLs queued; a few
            // from each of the others, in case.
            let with_work = due.iter().filter(|&&b| views[b].queued > 0).count();
            let share = idle
                .div_ceil(with_work.max(1))
                .clamp(LEASE_MIN, LEASE_BATCH);
            due.into_iter()
                .map(|b| {
                    let want = if views[b].queued > 0 {
                        share
                    } else {
                        LEASE_MIN
                    };
                    (b as u32, want)
                })
                .collect()
        };
        if let Some(&(last, _)) = chosen.last() {
            self.cursor.store(last as usize + 1, Ordering::Relaxed);
        }
        let asked = chosen.len();
        let answers = join_all(
            chosen
                .into_iter()
                .map(|(bucket, want)| self.lease_from(bucket, want)),
        )
        .await;
        let mut got = 0;
        for answer in answers {
            got += answer?;
        }
        if got > 0 {
            *self
                .idle_check
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = (now, Duration::ZERO);
        }
        Ok((asked, got))
    }

    /// Leases from one bucket into the buffer.
    async fn lease_from(&self, bucket: u32, max: usize) -> Result<usize, Error> {
        let tag = self.store.tag(bucket);
        let invocation = self.scripts.lease_call(
            &tag,
            &self.politeness,
            max,
            self.lease_time,
            &self.request_id(),
        );
        let answer: Vec<redis::Value> = self.store.invoke(&invocation).await?;
        let bad = || Error::from(ErrorKind::Server("unexpected answer to a lease".into()));
        let int = |v: &redis::Value| match v {
            redis::Value::Int(n) => Ok(*n),
            // Tokens come as text: formatted as integers, never as floats, in the script.
            redis::Value::BulkString(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or_else(bad),
            _ => Err(bad()),
        };
        let text = |v: &redis::Value| match v {
            redis::Value::BulkString(b) => String::from_utf8(b.clone()).map_err(|_| bad()),
            _ => Err(bad()),
        };
        if answer.len() < 6 || !(answer.len() - 6).is_multiple_of(4) {
            return Err(bad());
        }
        let view = [
            int(&answer[0])?,
            int(&answer[1])?,
            int(&answer[2])?,
            int(&answer[3])?,
            int(&answer[4])?,
        ];
        self.see(bucket, view);
        let mut leases = Vec::new();
        for group in answer[6..].chunks(4) {
            let token = u64::try_from(int(&group[0])?).map_err(|_| bad())?;
            let entry = text(&group[2])?;
            let given_up = int(&group[3])? == 1;
            let mut parts = entry.splitn(4, ' ');
            let (Some(attempts), Some(depth), Some(url)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad());
            };
            let referrer = parts.next().map(str::to_owned);
            let attempts: u32 = attempts.parse().map_err(|_| bad())?;
            let depth: u32 = depth.parse().map_err(|_| bad())?;
            // Canonical already when pushed: parsing again gives it back as it was.
            let url = match self.canon.canonicalize(url) {
                Ok(url) => url,
                Err(_) => return Err(bad()),
            };
            leases.push(Lease {
                url,
                referrer,
                depth,
                attempts: attempts + 1,
                given_up,
                bucket,
                token,
                working: None,
            });
        }
        // A URL out of this process's scope was in another's: a seed's redirect target it
        // met a moment ago, or a page of one. This process's scope takes the targets in
        // before it judges the page's links.
        let outside = leases.iter().any(|lease| {
            self.scope.check(&lease.url, lease.depth) == Err(frontier::DropReason::OutOfScope)
        });
        if outside {
            self.widen_scope().await;
        }
        let got = leases.len();
        self.views.lock().unwrap_or_else(PoisonError::into_inner)[bucket as usize].plenty =
            got == max;
        self.counts.leases.fetch_add(got as u64, Ordering::Relaxed);
        {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
            for lease in &leases {
                held.insert((lease.bucket, lease.token), ());
                pending.insert(lease.url.as_str().to_owned(), Vec::new());
            }
        }
        self.buffer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(leases);
        Ok(got)
    }

    async fn read_totals(&self) -> Result<Totals, Error> {
        self.read_counts().await.map(|(totals, _)| totals)
    }

    /// The crawl's totals, and which buckets have URLs queued or leased.
    async fn read_counts(&self) -> Result<(Totals, Vec<bool>), Error> {
        let reads: Vec<redis::Cmd> = (0..self.buckets)
            .map(|b| {
                let mut cmd = redis::cmd("HMGET");
                cmd.arg(format!("{}:counts", self.store.tag(b))).arg(&[
                    "seen",
                    "queued",
                    "leased",
                    "done",
                    "reaped",
                    "given_up_hosts",
                    "hosts",
                    "bits",
                    "generations",
                    "ops",
                    "host_budget",
                ]);
                cmd
            })
            .collect();
        let answers = self.store.query_each::<Vec<Option<i64>>>(&reads).await?;
        let mut totals = Totals::default();
        let mut busy = Vec::with_capacity(self.buckets as usize);
        for answer in answers {
            let v: Vec<u64> = answer
                .into_iter()
                .map(|n| u64::try_from(n.unwrap_or(0)).unwrap_or(0))
                .collect();
            let [
                seen,
                queued,
                leased,
                done,
                reaped,
                given_up_hosts,
                hosts,
                bits,
                generations,
                ops,
                host_budget,
            ] = v[..]
            else {
                return Err(ErrorKind::Server("unexpected answer to HMGET".into()).into());
            };
            busy.push(queued > 0 || leased > 0);
            totals.seen += seen;
            totals.queued += queued;
            totals.leased += leased;
            totals.done += done;
            totals.reaped += reaped;
            totals.given_up_hosts += given_up_hosts;
            totals.hosts += hosts;
            totals.seen_bits += bits;
            totals.seen_generations = totals.seen_generations.max(generations);
            totals.ops += ops;
            totals.host_budget += host_budget;
        }
        Ok((totals, busy))
    }

    /// Says this process is present and takes the buckets it owns: each bucket goes to the
    /// process present whose id hashes highest with it (rendezvous hashing), so that a
    /// process coming or going moves only its share.
    async fn present(&self) -> Result<(), Error> {
        let mut invocation = self.scripts.present.prepare_invoke();
        invocation
            .key(self.store.procs_key())
            .arg("")
            .arg(&self.id)
            .arg(millis(PRESENT_FOR))
            .arg(millis(PRESENT_FOR * 60));
        let present: Vec<String> = self.store.invoke(&invocation).await?;
        let owned = owned(&self.id, &present, self.buckets, &self.sip_key);
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        for (view, owned) in views.iter_mut().zip(owned) {
            view.owned = owned;
        }
        Ok(())
    }

    /// Says this process has left, so that its buckets go to the others now rather than
    /// when it is no longer counted present.
    async fn leave(&self) {
        let mut cmd = redis::cmd("ZREM");
        cmd.arg(self.store.procs_key()).arg(&self.id);
        if let Err(err) = self.store.query::<i64>(&cmd).await {
            tracing::debug!("saying this process left: {err}");
        }
    }

    /// Whether nothing is queued or leased anywhere: two reads of every bucket, with
    /// nothing queued or leased and no change between them, prove that at one instant
    /// between the two the whole crawl held no work, and none can appear after.
    async fn is_over(&self) -> Result<bool, Error> {
        if !self
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_empty()
        {
            return Ok(false);
        }
        if self.over.load(Ordering::Relaxed) {
            return Ok(true);
        }
        {
            let now = Instant::now();
            let mut check = self
                .idle_check
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (next, wait) = &mut *check;
            if *next > now {
                return Ok(false);
            }
            *wait = (*wait * 2).clamp(IDLE_CHECK_MIN, IDLE_CHECK_MAX);
            *next = now + *wait;
        }
        let (first, busy) = self.read_counts().await?;
        if first.queued > 0 || first.leased > 0 {
            self.forget_views(&busy);
            return Ok(false);
        }
        let second = self.read_totals().await?;
        *self
            .counts
            .totals
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = second;
        let over = second == first;
        if over && !self.over.swap(true, Ordering::Relaxed) {
            // Told to a later run of the same command, which would otherwise crawl nothing.
            if let Err(err) = self.store.mark_finished().await {
                tracing::debug!("marking the crawl finished: {err}");
            }
            self.leave().await;
        }
        Ok(over)
    }

    /// Makes the `busy` buckets due for a poll: the crawl has work there this process's
    /// views did not show.
    fn forget_views(&self, busy: &[bool]) {
        let mut views = self.views.lock().unwrap_or_else(PoisonError::into_inner);
        for (view, &busy) in views.iter_mut().zip(busy) {
            if busy {
                view.heard = None;
            }
        }
    }
}

/// Counts one more of `reason`.
fn bump(counts: &Mutex<HashMap<&'static str, u64>>, reason: &'static str) {
    *counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(reason)
        .or_default() += 1;
}

/// Which of `buckets` process `me` owns among `present` (itself counted present): those
/// for which its id hashes highest (rendezvous hashing).
fn owned(me: &str, present: &[String], buckets: u32, key: &[u8; 16]) -> Vec<bool> {
    let rank = |id: &str, bucket: u32| {
        let mut sip = SipHasher13::new_with_key(key);
        sip.write(id.as_bytes());
        sip.write_u32(bucket);
        sip.finish()
    };
    (0..buckets)
        .map(|bucket| {
            let mine = rank(me, bucket);
            present
                .iter()
                .all(|other| other == me || rank(other, bucket) < mine)
        })
        .collect()
}

/// The local list of links sent ([`Inner::pushed`]): at a tenth of the crawl's rate, as a
/// false positive here drops a new URL too, and the two rates add up.
fn new_pushed(layout: &Layout) -> Result<SeenSet, Error> {
    SeenSet::builder()
        .initial_capacity(usize::try_from(layout.seen_initial_capacity).unwrap_or(usize::MAX))
        .false_positive_rate(layout.seen_rate / 10.0)
        .build()
        .map_err(|err| ErrorKind::BadLayout(format!("the local seen-test: {err}")).into())
}

/// Says each second that this process is present (and learns which buckets it owns),
/// reads the crawl's totals every fifth second, and renews this process's leases every
/// third of their time, until the frontier is dropped.
async fn renew(inner: std::sync::Weak<Inner>) {
    let mut last_renew = Instant::now();
    for beat in 0u64.. {
        {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            if let Err(err) = inner.present().await {
                tracing::debug!("saying this process is present: {err}");
            }
            inner.check_epoch().await;
            inner.widen_scope().await;
        }
        tokio::time::sleep(HEARTBEAT).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if beat % 5 == 0
            && let Ok(totals) = inner.read_totals().await
        {
            *inner
                .counts
                .totals
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = totals;
        }
        if last_renew.elapsed() < inner.lease_time / 3 {
            continue;
        }
        last_renew = Instant::now();
        let mut by_bucket: HashMap<u32, Vec<u64>> = HashMap::new();
        for &(bucket, token) in inner
            .held
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .keys()
        {
            by_bucket.entry(bucket).or_default().push(token);
        }
        let renewals = by_bucket.into_iter().map(|(bucket, tokens)| {
            let inner = &inner;
            async move {
                let tag = inner.store.tag(bucket);
                let mut invocation = inner.scripts.renew.prepare_invoke();
                invocation
                    .key(format!("{tag}:leases"))
                    .key(format!("{tag}:due"))
                    .arg(&tag)
                    .arg(millis(inner.lease_time))
                    .arg(tokens);
                inner.store.invoke::<i64>(&invocation).await
            }
        });
        for result in join_all(renewals).await {
            if let Err(err) = result {
                tracing::warn!("renewing leases: {err}");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bucket_has_one_owner_and_a_process_leaving_moves_only_its_own() {
        let key = [3; 16];
        let ids: Vec<String> = (0..4).map(|i| format!("process-{i}")).collect();
        let of_all: Vec<Vec<bool>> = ids.iter().map(|me| owned(me, &ids, 64, &key)).collect();
        for bucket in 0..64 {
            assert_eq!(
                of_all.iter().filter(|o| o[bucket]).count(),
                1,
                "bucket {bucket}"
            );
        }
        assert!(of_all.iter().all(|o| o.iter().filter(|&&b| b).count() >= 4));
        // Alone (or not yet in the list it read): everything.
        assert!(owned("process-9", &[], 64, &key).iter().all(|&b| b));
        // Process 3 leaves: the others keep what they had and share its buckets.
        let rest = &ids[..3];
        for (me, before) in rest.iter().zip(&of_all) {
            let after = owned(me, rest, 64, &key);
            for bucket in 0..64 {
                assert!(!before[bucket] || after[bucket]);
                assert_eq!(
                    after[bucket],
                    before[bucket] || (of_all[3][bucket] && after[bucket])
                );
            }
        }
    }
}
