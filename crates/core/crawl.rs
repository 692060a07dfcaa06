//! The crawl: fetch workers pulling leases from the frontier, and what they do with each.
//!
//! [`worker_tasks`] tasks each loop: take a lease (or wait for the instant the frontier
//! names, or for a lease to complete), check robots.txt, fetch, extract and push links,
//! complete the lease, and write the URL's record once its fate is final. Everything they ask
//! of the frontier goes through [`Backend`], the one seam to it. At most `fetch.concurrency`
//! of them fetch at once.
//!
//! Stopping: [`Crawler::run`] takes a [`Shutdown`]. Its `stop` token ends the taking of
//! leases (workers finish the one they hold); its `abort` token cancels the workers at once,
//! and each gives its lease back without a record. `crawl.max_pages` and a failure to write
//! records stop the crawl the same way from inside.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use frontier::{Canonical, Canonicalizer, Fate, Outcome, Push};
use tokio::sync::Notify;
use tokio::sync::futures::Notified;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;
use url::Url;

use crate::backend::{self, Backend, Lease, Next};
use crate::config::Config;
use crate::content::{ContentSeen, Digest, DigestText};
use crate::errors::ErrorKind;
use crate::fetch::{self, FetchError, Fetched, Fetcher};
use crate::guard::Guard;
use crate::hosts::HostRules;
use crate::output::{Record, Rfc3339, Sink};
use crate::robots::{self, RobotsCache, Rules, UNREACHABLE_TTL};
use crate::sitemap::{self, Sitemaps};
use crate::state::StateDir;
use crate::warc::{Exchange, Warc};
use links::{Extracted, Options, Page};

/// Pages and bodies from this size on are extracted and written to WARC off the async
/// workers' threads (`block_in_place`): a multi-megabyte page takes milliseconds of CPU,
/// which would hold up every other task on its thread.
const HEAVY_BYTES: usize = 256 << 10;

/// Sitemap entries read between two pushes: enough to make a push's await cheap, few enough
/// to keep a batch small (a few hundred KiB at most).
const SITEMAP_BATCH: usize = 1_000;

/// How long a crawl told to quit at once waits for the completions it is still sending.
const SETTLE_WHEN_QUITTING: Duration = Duration::from_secs(2);

/// The depth of the sitemaps robots.txt lists: one link from the host, as if its root linked
/// to them, so that `crawl.max_depth = 0` (exactly the seeds) reads none.
const ROBOTS_SITEMAP_DEPTH: u32 = 1;

/// Everything the workers share.
pub(crate) struct Crawler {
    config: Config,
    frontier: Backend,
    fetcher: Box<dyn Fetcher>,
    guard: Arc<Guard>,
    /// Each host's own settings (`[[hosts]]`): here, whether its robots.txt is obeyed.
    hosts: Arc<HostRules>,
    /// Where responses go as WARC records, if anywhere.
    warc: Option<Warc>,
    /// Whether bodies are digested: for the records (`output.digest`), the WARC file or the
    /// content-seen test. SHA-1 is the largest cost a page adds after its fetch.
    wants_digest: bool,
    robots: RobotsCache,
    sink: Sink,
    /// Woken when a lease completes: a host may have become ready, or links were pushed
    /// (see [`Backend::wake`]).
    wake: Arc<Notify>,
    /// Wakes one sleeping worker when leases wait for a worker (the shared frontier takes
    /// them for every idle worker at once). Only sleeping workers listen, not one that is
    /// asking or fetching, which would hold the wake-up until its fetch ended; with none
    /// asleep it is kept for the next to sleep, which wakes at once and asks again.
    leases_waiting: Notify,
    /// Leases still allowed by `crawl.max_pages` (`u64::MAX` without a limit): taken when a
    /// lease is taken, given back when it ends in a retry.
    budget: AtomicU64,
    /// Cancelled when the workers are to take no more leases: by the caller's
    /// [`Shutdown::stop`], `crawl.max_pages`, or records that cannot be written.
    stop: CancellationToken,
    /// Leases being worked on that hold a share of `budget`.
    outstanding: AtomicU64,
    /// The crawl stopped because `crawl.max_pages` URLs had their record, for the summary.
    reached_max_pages: AtomicBool,
    /// Records could not be written: the crawl stopped, and its exit code says so.
    pub(crate) sink_failed: AtomicBool,
    pub(crate) stats: Stats,
    pub(crate) started: Instant,
    seed_redirects: SeedRedirects,
    /// Which URLs are sitemaps, the `lastmod`s waiting for records, and their counts.
    pub(crate) sitemaps: Sitemaps,
    /// The content-seen test, with `crawl.content_seen`.
    pub(crate) content: Option<ContentSeen>,
    /// Which URL each worker is on, and since when: for the progress line to name a fetch
    /// that takes long.
    pub(crate) in_flight: InFlight,
    /// `fetch.concurrency` permits, one held by each fetch in flight (see [`worker_tasks`]).
    fetching: tokio::sync::Semaphore,
}

/// The URL each worker is on and since when. One slot per worker: marking one costs an
/// uncontended lock and a copy into the slot's buffer, kept from its last URL (no allocation
/// once the buffer is as long as the URLs), and the slots are read only when the progress
/// line is drawn.
pub(crate) struct InFlight {
    slots: Box<[Mutex<InFlightSlot>]>,
}

/// One worker's URL, while it is on one.
#[derive(Default)]
struct InFlightSlot {
    since: Option<Instant>,
    url: String,
}

/// The oldest of the URLs in flight longer than asked, from [`InFlight::slow`].
#[derive(Debug, PartialEq)]
pub(crate) struct Slow {
    pub(crate) url: String,
    /// How long it has been in flight.
    pub(crate) for_: Duration,
    /// How many others have been in flight that long too.
    pub(crate) others: usize,
}

/// How many worker tasks a crawl runs: `fetch.concurrency`, and, in a crawl shared through
/// Redis, half as many more. A shared crawl's page waits a round trip to Redis after its
/// fetch (the content-seen test): the extra tasks fetch meanwhile, so that a Redis
/// milliseconds away does not idle the fetches, which stay at most `fetch.concurrency`.
pub(crate) fn worker_tasks(concurrency: usize, shared: bool) -> usize {
    if shared {
        concurrency + concurrency.div_ceil(2)
    } else {
        concurrency
    }
}

impl InFlight {
    pub(crate) fn new(workers: usize) -> InFlight {
        InFlight {
            slots: (0..workers).map(|_| Mutex::default()).collect(),
        }
    }

    /// The worker tasks it has a slot for.
    pub(crate) fn workers(&self) -> usize {
        self.slots.len()
    }

    /// Marks `worker` as on `url` since `at`, until the returned mark is dropped (the visit
    /// ended, panicked or was cancelled).
    pub(crate) fn start(&self, worker: usize, url: &str, at: Instant) -> InFlightMark<'_> {
        if let Some(slot) = self.slots.get(worker) {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            slot.since = Some(at);
            slot.url.clear();
            slot.url.push_str(url);
        }
        InFlightMark {
            in_flight: self,
            worker,
        }
    }

    /// The URL in flight the longest, if it has been for `over` or more at `now`, and how
    /// many others have been too.
    pub(crate) fn slow(&self, now: Instant, over: Duration) -> Option<Slow> {
        let mut oldest: Option<Slow> = None;
        let mut count = 0;
        for slot in &*self.slots {
            let slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(since) = slot.since else { continue };
            let for_ = now.saturating_duration_since(since);
            if for_ < over {
                continue;
            }
            count += 1;
            if oldest.as_ref().is_none_or(|o| for_ > o.for_) {
                oldest = Some(Slow {
                    url: slot.url.clone(),
                    for_,
                    others: 0,
                });
            }
        }
        oldest.map(|slow| Slow {
            others: count - 1,
            ..slow
        })
    }
}

/// A worker's slot in [`InFlight`], emptied when dropped.
pub(crate) struct InFlightMark<'a> {
    in_flight: &'a InFlight,
    worker: usize,
}

impl Drop for InFlightMark<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.in_flight.slots.get(self.worker) {
            slot.lock().unwrap_or_else(PoisonError::into_inner).since = None;
        }
    }
}

/// How the caller of [`Crawler::run`] stops it.
#[derive(Clone, Debug, Default)]
pub(crate) struct Shutdown {
    /// Cancel to stop taking leases: workers finish the one they hold, then return.
    pub(crate) stop: CancellationToken,
    /// Cancel to give up the leases in flight at once: their URLs are queued again, without
    /// records.
    pub(crate) abort: CancellationToken,
}

/// Redirects followed from a seed before a target stops being a seed: enough for the usual
/// `http://` to `https://` to `www.` to `/en/` chains, few enough that a seed redirecting on
/// and on cannot widen the scope much.
const MAX_SEED_REDIRECTS: u8 = 5;

/// A seed's redirect target is a seed too (Heritrix: "seeds redirect new seeds"): in scope,
/// at depth 0, so that `example.com` answering with a redirect to `www.example.com` crawls
/// `www.example.com`, and a list of URLs crawled with `crawl.max_depth = 0` follows its
/// redirects. The SSRF guard trusts a target only where it is the same server as the URL
/// that redirected to it ([`Guard::trust_redirect`]): the seed's server chose the target.
pub(crate) struct SeedRedirects {
    canon: Canonicalizer,
    /// Each target, with its redirects from a seed the user gave, and the targets in the
    /// order they were met with the URL that redirected to each (unknown for those of a
    /// shared crawl's other processes, or of an older state). A std mutex: taken once per
    /// redirect of a depth-0 URL.
    met: Mutex<(HashMap<String, u8>, Vec<Redirect>)>,
    /// Where the targets are kept for a resume, which puts them back in the scope.
    state: Option<StateDir>,
}

/// A seed's redirect target, and the URL that redirected to it if known.
pub(crate) type Redirect = (String, Option<String>);

impl SeedRedirects {
    /// No targets yet, or those a resumed crawl had (`known`, each counted as one hop).
    pub(crate) fn new(canon: Canonicalizer, state: Option<StateDir>, known: &[Redirect]) -> Self {
        let hops = known.iter().map(|(url, _)| (url.clone(), 1)).collect();
        SeedRedirects {
            canon,
            met: Mutex::new((hops, known.to_vec())),
            state,
        }
    }

    /// The target of a redirect from `from` (a URL at depth 0) to `location`, if it is to be
    /// a seed: not too many redirects from a seed the user gave, and a URL we fetch.
    fn target(&self, from: &Url, location: &str) -> Option<Canonical> {
        let target = self.canon.canonicalize_relative(from, location).ok()?;
        let mut met = self.met.lock().unwrap_or_else(PoisonError::into_inner);
        let (hops, order) = &mut *met;
        let n = hops.get(from.as_str()).copied().unwrap_or(0) + 1;
        if n > MAX_SEED_REDIRECTS || hops.contains_key(target.as_str()) {
            return None;
        }
        hops.insert(target.as_str().to_owned(), n);
        order.push((target.as_str().to_owned(), Some(from.as_str().to_owned())));
        if let Some(state) = &self.state
            && let Err(err) = state.save_seed_redirects(order)
        {
            // The crawl goes on; a resume would only miss this target's host in scope.
            tracing::warn!("{err:#}");
        }
        Some(target)
    }
}

/// Counts for the progress display and the summary.
#[derive(Default)]
pub(crate) struct Stats {
    /// Records written.
    pub(crate) records: AtomicU64,
    /// Records by status class: 1xx .. 5xx at 1 .. 5, no answer at 0.
    pub(crate) by_class: [AtomicU64; 6],
    /// Records by error kind.
    pub(crate) errors: Mutex<BTreeMap<ErrorKind, u64>>,
    /// What each host's records say of it, for the hosts the summary lists as not crawled.
    /// A std mutex, held for one map lookup per record.
    pub(crate) hosts: Mutex<HashMap<Box<str>, HostTally>>,
    /// Body bytes read.
    pub(crate) bytes: AtomicU64,
    /// Links extracted, and of those not followed (nofollow) or over the per-page cap.
    pub(crate) links: AtomicU64,
    pub(crate) nofollow: AtomicU64,
    /// Of the links extracted, those from `<frame src>` and `<iframe src>`.
    pub(crate) frames: AtomicU64,
    pub(crate) over_cap: AtomicU64,
    /// Tries that failed and were retried.
    pub(crate) retries: AtomicU64,
    /// How long the recorded fetches took, for `--metrics`.
    pub(crate) latency: crate::metrics::Latency,
}

/// One host's records: enough to tell a host that never answered, and why.
#[derive(Debug, Default)]
pub(crate) struct HostTally {
    /// Records with an HTTP answer.
    pub(crate) answered: u64,
    /// Records without one.
    pub(crate) unanswered: u64,
    /// The last error of a record without an answer, and its detail.
    pub(crate) last_error: Option<(ErrorKind, String)>,
}

/// A host no record of which had an answer, for the summary.
#[derive(Debug)]
pub(crate) struct FailedHost {
    pub(crate) host: String,
    /// Its records, all without an answer.
    pub(crate) urls: u64,
    /// The last error, with its detail.
    pub(crate) error: ErrorKind,
    pub(crate) detail: String,
}

impl Stats {
    fn count_error(&self, kind: ErrorKind) {
        *self
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(kind)
            .or_default() += 1;
    }

    /// Counts a record of `host`.
    fn tally(&self, host: &str, status: Option<u16>, error: Option<(ErrorKind, &str)>) {
        let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
        let tally = match hosts.get_mut(host) {
            Some(tally) => tally,
            None => hosts.entry(host.into()).or_default(),
        };
        if status.is_some() {
            tally.answered += 1;
        } else {
            tally.unanswered += 1;
            if let Some((kind, detail)) = error {
                tally.last_error = Some((kind, detail.to_owned()));
            }
        }
    }

    /// Whether any record of this run had an HTTP answer.
    pub(crate) fn any_answer(&self) -> bool {
        self.by_class[1..]
            .iter()
            .any(|n| n.load(Ordering::Relaxed) > 0)
    }

    /// The hosts none of whose records had an answer, most URLs first.
    pub(crate) fn failed_hosts(&self) -> Vec<FailedHost> {
        let hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
        let mut failed: Vec<FailedHost> = hosts
            .iter()
            .filter(|(_, t)| t.answered == 0)
            .filter_map(|(host, t)| {
                let (error, detail) = t.last_error.clone()?;
                Some(FailedHost {
                    host: host.to_string(),
                    urls: t.unanswered,
                    error,
                    detail,
                })
            })
            .collect();
        failed.sort_by(|a, b| b.urls.cmp(&a.urls).then_with(|| a.host.cmp(&b.host)));
        failed
    }
}

/// What an attempt at a URL produced, before the frontier says whether it is final.
struct Attempt<'a> {
    status: Option<u16>,
    error: Option<ErrorKind>,
    /// What exactly failed, in words (the OS error, the resolver's answer).
    detail: Option<String>,
    content_type: Option<&'a str>,
    bytes: u64,
    links: u64,
    redirect: Option<String>,
    canonical: Option<String>,
    /// The response's `Last-Modified` header.
    last_modified: Option<&'a str>,
    /// The body's digest, with an answer.
    digest: Option<DigestText>,
    /// The body was read before under another URL.
    duplicate: bool,
}

impl Crawler {
    #[expect(
        clippy::too_many_arguments,
        reason = "each is a part main.rs builds and checks on its own before the crawl"
    )]
    pub(crate) fn new(
        config: Config,
        frontier: Backend,
        fetcher: Box<dyn Fetcher>,
        guard: Arc<Guard>,
        hosts: Arc<HostRules>,
        sink: Sink,
        warc: Option<Warc>,
        seed_redirects: SeedRedirects,
    ) -> Self {
        let wake = frontier.wake();
        let fetches = config.fetch.concurrency;
        let workers = worker_tasks(fetches, frontier.as_shared().is_some());
        let budget = match config.crawl.max_pages {
            0 => u64::MAX,
            n => n,
        };
        let content = config.crawl.content_seen.then(|| {
            // A crawl shared through Redis has the shared frontier's (see `seen_body`).
            if frontier.as_shared().is_some() {
                return Some(ContentSeen::elsewhere());
            }
            let f = &config.frontier;
            ContentSeen::new(f.seen_initial_capacity, f.seen_false_positive_rate)
                .inspect_err(|err| tracing::warn!("no content-seen test: {err}"))
                .ok()
        });
        let content = content.flatten();
        let wants_digest = config.output.digest || warc.is_some() || content.is_some();
        Crawler {
            wants_digest,
            content,
            robots: RobotsCache::new(
                &config.politeness.user_agent,
                config.politeness.max_retry_after.min(UNREACHABLE_TTL),
            )
            .with_shared(frontier.as_shared().cloned()),
            sitemaps: Sitemaps::new(config.crawl.sitemaps),
            config,
            frontier,
            fetcher,
            guard,
            hosts,
            warc,
            sink,
            wake,
            leases_waiting: Notify::new(),
            budget: AtomicU64::new(budget),
            stop: CancellationToken::new(),
            outstanding: AtomicU64::new(0),
            reached_max_pages: AtomicBool::new(false),
            sink_failed: AtomicBool::new(false),
            stats: Stats::default(),
            started: Instant::now(),
            seed_redirects,
            in_flight: InFlight::new(workers),
            fetching: tokio::sync::Semaphore::new(fetches),
        }
    }

    /// The frontier, through its seam.
    pub(crate) fn frontier(&self) -> &Backend {
        &self.frontier
    }

    /// The settings the crawl runs with, for the summary to name them.
    pub(crate) fn config(&self) -> &Config {
        &self.config
    }

    /// Whether the crawl stopped because `crawl.max_pages` URLs had their record.
    pub(crate) fn reached_max_pages(&self) -> bool {
        self.reached_max_pages.load(Ordering::Relaxed)
    }

    /// Checkpoints the frontier to `dir`, with the records of every URL it holds as done
    /// flushed first. Skipped (the previous checkpoint stays) when records could not be
    /// written: a checkpoint must never hold as done a URL whose record was lost.
    pub(crate) fn checkpoint(&self, dir: &std::path::Path) {
        let flushed = || {
            // Before the frontier: a sitemap it holds queued is read as one after a resume.
            if let Some(state) = &self.seed_redirects.state
                && let Err(err) = state.save_sitemaps(&self.sitemaps.known())
            {
                // A resume would read the sitemaps still queued only if they are XML.
                tracing::warn!("{err:#}");
            }
            // On disk, not only written: the checkpoint is about to hold their URLs as done.
            let durable = self
                .sink
                .sync()
                .and_then(|()| self.warc.as_ref().map_or(Ok(()), Warc::sync));
            if let Err(err) = durable {
                tracing::error!("writing records: {err}");
                self.sink_failed.store(true, Ordering::Relaxed);
            }
            let ok = !self.sink_failed.load(Ordering::Relaxed);
            if !ok {
                tracing::error!(
                    "records could not be written: no checkpoint, the previous one stays"
                );
            }
            ok
        };
        if let Err(err) = self.frontier.checkpoint(dir, flushed) {
            tracing::error!("checkpoint failed (the previous one is intact): {err}");
        }
    }

    /// Makes the journal durable, records first (see `Backend::sync_journal`). A failure is
    /// logged: the crawl goes on, and a crash would repeat the work not journaled.
    pub(crate) fn sync_journal(&self) {
        if self.sink_failed.load(Ordering::Relaxed) {
            // A record was lost: its completion, in the journal, must never reach the disk
            // (the URL would be held as done without a record). The crawl is stopping.
            return;
        }
        let durable = || {
            // Checked again with the batch taken: a record that failed before then has set
            // it, as a record and its completion are one step.
            if self.sink_failed.load(Ordering::Relaxed) {
                return Err(std::io::Error::other("records could not be written"));
            }
            self.sink.sync()?;
            self.warc.as_ref().map_or(Ok(()), Warc::sync)
        };
        if let Err(err) = self.frontier.sync_journal(durable) {
            tracing::error!("{err}; a crash now would repeat the work since the last sync");
        }
    }

    /// Flushes the records written so far.
    pub(crate) fn flush(&self) {
        let warc = self.warc.as_ref().map_or(Ok(()), Warc::flush);
        if let Err(err) = self.sink.flush().and(warc) {
            tracing::error!("writing records: {err}");
            self.sink_failed.store(true, Ordering::Relaxed);
        }
    }

    /// Runs the workers until the frontier is done, `crawl.max_pages` is reached, or
    /// `shutdown` says to stop. A worker that panics gives its lease back with a record
    /// (error `internal`), and the others go on.
    pub(crate) async fn run(self: &Arc<Self>, shutdown: Shutdown) {
        let mut workers = JoinSet::new();
        for worker in 0..self.in_flight.workers() {
            let crawler = Arc::clone(self);
            workers.spawn(async move { crawler.work(worker).await });
        }
        let mut aborted = false;
        loop {
            tokio::select! {
                joined = workers.join_next() => match joined {
                    None => break,
                    Some(Err(err)) if err.is_panic() => {
                        tracing::error!("a fetch worker failed: {err}");
                    }
                    Some(_) => {}
                },
                () = shutdown.stop.cancelled(), if !self.stop.is_cancelled() => self.stop(),
                () = shutdown.abort.cancelled(), if !aborted => {
                    aborted = true;
                    self.stop();
                    // Each cancelled worker gives its lease back (see `Visit`'s drop).
                    workers.abort_all();
                }
            }
        }
        // Completions sent in the background; told to quit at once, before or while they are
        // waited for, they get a moment, and those not sent by then come back to the crawl
        // when their leases expire.
        let settle = self.frontier.settle();
        tokio::pin!(settle);
        let settled = tokio::select! {
            () = &mut settle => true,
            () = shutdown.abort.cancelled() => false,
        };
        if !settled {
            let _ = tokio::time::timeout(SETTLE_WHEN_QUITTING, settle).await;
        }
        self.flush();
    }

    /// Stops taking leases; workers waiting for one return.
    fn stop(&self) {
        self.stop.cancel();
    }

    /// The loop of worker number `worker`, which takes leases until there are none.
    async fn work(&self, worker: usize) {
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            // Registered before asking, so that a completion between the answer and the
            // wait is not missed.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.budget.load(Ordering::Relaxed) == 0 {
                // A lease taken now would only be given back (a round trip each on a shared
                // crawl).
                if self.wait_while_spent(woken).await {
                    return;
                }
                continue;
            }
            match self.frontier.next().await {
                Ok(Next::Lease(lease)) => {
                    if self.frontier.has_waiting_leases() {
                        // Taken for the workers waiting too: one of them takes the next, and
                        // wakes another if more are left.
                        self.leases_waiting.notify_one();
                    }
                    // Counted before the budget is taken, so that a worker finding the budget
                    // spent never sees no lease in flight while this one is set up.
                    let outstanding = Outstanding::count(&self.outstanding);
                    if !self.take_budget() {
                        drop(outstanding);
                        self.abandon(lease);
                        if self.wait_while_spent(woken).await {
                            return;
                        }
                        continue;
                    }
                    self.visit(worker, lease).await;
                    // Uncounted before the wake-up, so that a woken worker waiting for the
                    // leases in flight sees this one gone.
                    drop(outstanding);
                    self.wake.notify_waiters();
                }
                Ok(Next::WaitUntil(at)) => {
                    let at = tokio::time::Instant::from_std(at);
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = &mut woken => {}
                        () = self.leases_waiting.notified() => {}
                        () = self.stop.cancelled() => {}
                    }
                }
                Ok(Next::Pending) => {
                    tokio::select! {
                        () = &mut woken => {}
                        () = self.stop.cancelled() => {}
                    }
                }
                Ok(Next::Done) => {
                    self.wake.notify_waiters();
                    return;
                }
                Err(err) => {
                    // Spilled URLs could not be read back: they are lost (and counted); the
                    // crawl goes on with the rest.
                    tracing::error!("frontier: {err}");
                }
            }
        }
    }

    fn take_budget(&self) -> bool {
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// `max_pages` is spent, unless a lease in flight ends in a retry and gives its share
    /// back: waits for one to end (`woken`), then answers whether the crawl stops, which it
    /// does (waking the other workers) when none is in flight and the budget is still spent.
    async fn wait_while_spent(&self, woken: std::pin::Pin<&mut Notified<'_>>) -> bool {
        if self.outstanding.load(Ordering::Acquire) == 0 {
            // Read again: a retry gives its share back before its lease stops counting as
            // in flight, so a share given back by the last one is seen here.
            if self.budget.load(Ordering::Relaxed) > 0 {
                return false;
            }
            self.reached_max_pages.store(true, Ordering::Relaxed);
            self.stop();
            self.wake.notify_waiters();
            return true;
        }
        tokio::select! {
            () = woken => {}
            () = self.stop.cancelled() => {}
        }
        false
    }

    fn give_back_budget(&self) {
        if self.config.crawl.max_pages != 0 {
            self.budget.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Puts a lease back in line without a try.
    fn abandon(&self, lease: Lease) {
        if let Err(err) = lease.abandon() {
            tracing::error!("{err}");
        }
    }

    /// Everything done with one lease, by worker number `worker`.
    async fn visit(&self, worker: usize, lease: Lease) {
        let started = backend::now();
        let _in_flight = self.in_flight.start(worker, lease.url().as_str(), started);
        let mut visit = Visit {
            crawler: self,
            lease: Some(lease),
            started,
            fetched_at: SystemTime::now(),
        };
        if visit.lease().host_given_up() {
            // Handed out only to be recorded: the frontier gave its host up.
            let why = "its host failed for too long and was given up; not fetched";
            return visit
                .finish(
                    Outcome::Skipped,
                    Attempt::failed(ErrorKind::HostGivenUp, why.to_owned()),
                )
                .await;
        }
        let url = visit.lease().url().as_url().clone();
        if !self.guard.allows_url(&url).await {
            // Our policy, not the host's failure, and no request was made: no back-off, no
            // retry, and the host's delay is not spent.
            let result = Attempt::failed(ErrorKind::SsrfBlocked, ssrf_detail(&url));
            return visit.finish(Outcome::Skipped, result).await;
        }
        if self
            .hosts
            .for_host(visit.lease().url().host_key())
            .obey_robots
        {
            let host = visit.lease().url().host_key().to_owned();
            let robots::Answer {
                rules,
                known,
                fetched_here: fresh,
            } = self
                .robots
                .rules(&*self.fetcher, &self.guard, &host, &url, visit.started)
                .await;
            // Leases that waited for the robots.txt another lease of the host was fetching
            // started before its rules were known.
            let waited = !fresh && visit.started < known;
            if let Some(delay) = rules.crawl_delay()
                && fresh
            {
                self.frontier.set_crawl_delay(&host, delay).await;
            }
            if fresh
                && self.sitemaps.enabled
                && let Rules::Parsed(robot) = &*rules
                && !robot.sitemaps.is_empty()
            {
                // Once per fetch of the host's robots.txt; a sitemap seen before is dropped
                // by the seen-test, so a robots.txt fetched again reads none twice.
                let listed: Vec<sitemap::Entry> = robot
                    .sitemaps
                    .iter()
                    .map(|loc| sitemap::Entry {
                        loc: loc.clone(),
                        lastmod: None,
                    })
                    .collect();
                let robots_txt = url.join("/robots.txt").ok();
                let from = robots_txt.as_ref().map(Url::as_str);
                self.push_listed(&url, from, &listed, ROBOTS_SITEMAP_DEPTH, Some(0))
                    .await;
            }
            let failed = matches!(*rules, Rules::Unreachable(_) | Rules::Unanswered(_));
            if waited && (rules.crawl_delay().is_some() || failed) {
                // Back in line: to start when the Crawl-delay allows, or, when robots.txt
                // could not be had, after the back-off the fetching lease's failure sets,
                // so that it counts as one error of the host, not one per connection.
                self.abandon(visit.take());
                self.give_back_budget();
                return;
            }
            match &*rules {
                Rules::Unreachable(status) => {
                    let retry = Outcome::ErrorAnswer {
                        retry_after: Some(self.robots.unreachable_ttl()),
                    };
                    let why = format!("robots.txt answered {status}");
                    let result = Attempt::failed(ErrorKind::RobotsUnreachable, why);
                    return visit.finish(retry, result).await;
                }
                Rules::Unanswered(err) => {
                    // The host cannot be reached: the page's own fetch would fail the same.
                    let retry = Outcome::Failure {
                        retry: true,
                        retry_after: None,
                    };
                    let why = format!("fetching robots.txt: {}", err.detail);
                    return visit.finish(retry, Attempt::failed(err.kind, why)).await;
                }
                _ => {}
            }
            if !rules.allows(&url) {
                // No request made for the page: the host's delay is not spent on it, so that
                // thousands of disallowed links do not take thousands of delays. Unless this
                // lease fetched robots.txt, which was a request.
                let outcome = if fresh {
                    Outcome::Success
                } else {
                    Outcome::Skipped
                };
                return visit
                    .finish(outcome, Attempt::error(ErrorKind::RobotsDenied))
                    .await;
            }
        }
        let keep_headers = self.warc.is_some();
        let fetched = {
            // Never closed: always a permit.
            let _fetching = self.fetching.acquire().await.ok();
            self.fetcher
                .get(&url, self.config.fetch.max_body_bytes, keep_headers)
                .await
        };
        match fetched {
            Err(FetchError {
                kind: ErrorKind::SsrfBlocked,
                ..
            }) => {
                // The resolver's refusal: the name resolved to a public address for the
                // check before, and to a non-public one for the connection.
                let result = Attempt::failed(ErrorKind::SsrfBlocked, ssrf_detail(&url));
                visit.finish(Outcome::Skipped, result).await;
            }
            Err(err) => {
                let retry = Outcome::Failure {
                    // A malformed answer would be as malformed again.
                    retry: err.kind != ErrorKind::Http,
                    retry_after: None,
                };
                visit
                    .finish(retry, Attempt::failed(err.kind, err.detail))
                    .await;
            }
            Ok(fetched) => {
                // Once per body, for the record, the WARC file and the content-seen test; not
                // at all when none of them wants it (`output.digest` off, no WARC, no test).
                let digest = self
                    .wants_digest
                    .then(|| heavy(fetched.body.len(), || Digest::of(&fetched.body)));
                let outcome = match fetched.status {
                    429 | 500..=599 => Outcome::ErrorAnswer {
                        retry_after: fetched.retry_after,
                    },
                    _ => Outcome::Success,
                };
                if let (Some(warc), Some(headers), Some(digest)) =
                    (&self.warc, &fetched.headers, digest)
                {
                    let exchange = Exchange {
                        url: &url,
                        user_agent: &self.config.politeness.user_agent,
                        status: fetched.status,
                        headers,
                        body: &fetched.body,
                        truncated: fetched.too_large,
                        digest,
                        fetched_at: visit.fetched_at,
                    };
                    if let Err(err) = heavy(fetched.body.len(), || warc.write(&exchange)) {
                        // Not done with: back in line, for a resumed crawl to fetch again.
                        tracing::error!("writing the WARC file: {err}; stopping");
                        self.sink_failed.store(true, Ordering::Relaxed);
                        self.stop();
                        self.abandon(visit.take());
                        return;
                    }
                }
                let depth = visit.lease().depth();
                let result = self.follow(depth, &url, &fetched, digest).await;
                visit.finish(outcome, result).await;
            }
        }
    }

    /// Pushes what a response leads to (its redirect target, its page's links) and
    /// describes it for the record.
    async fn follow<'a>(
        &self,
        depth: u32,
        url: &Url,
        fetched: &'a Fetched,
        digest: Option<Digest>,
    ) -> Attempt<'a> {
        let mut result = Attempt {
            status: Some(fetched.status),
            error: fetched.too_large.then_some(ErrorKind::TooLarge),
            detail: fetched.too_large.then(|| {
                format!(
                    "the body is larger than fetch.max_body_bytes ({}); only its first {} were \
                     read, and no links were taken from it",
                    crate::report::bytes(self.config.fetch.max_body_bytes),
                    crate::report::bytes(fetched.body.len() as u64)
                )
            }),
            content_type: fetched.content_type.as_deref(),
            bytes: fetched.body.len() as u64,
            links: 0,
            redirect: None,
            canonical: None,
            last_modified: fetched.last_modified.as_deref(),
            digest: digest
                .as_ref()
                .filter(|_| self.config.output.digest)
                .map(Digest::text),
            duplicate: false,
        };
        if (300..400).contains(&fetched.status)
            && let Some(location) = &fetched.location
        {
            result.redirect = url.join(location).ok().map(String::from);
            let seed = (depth == 0)
                .then(|| self.seed_redirects.target(url, location))
                .flatten();
            match seed {
                Some(target) => {
                    tracing::info!("{url} redirects to {target}: a seed too, its host in scope");
                    if self.guard.trust_redirect(url, target.as_url()).await {
                        tracing::info!(
                            "{target} is the same server as {url}: trusted by the SSRF guard \
                             at its addresses"
                        );
                    }
                    self.frontier.add_seed(&target).await;
                    let pushed = self.frontier.push_canonical(target, Some(url.as_str()), 0);
                    if let Err(err) = pushed.await {
                        tracing::warn!("pushing {location}: {err}");
                    }
                }
                // One link further, like any link: a chain of redirects ends at the depth
                // limit.
                None => {
                    self.push(url, url, std::slice::from_ref(location), depth + 1)
                        .await
                }
            }
        }
        let ok = (200..300).contains(&fetched.status);
        let tested = ok && !fetched.body.is_empty();
        let seen_before = async {
            match &digest {
                Some(digest) if tested => self.seen_body(digest).await,
                _ => false,
            }
        };
        if self.config.crawl.follow_duplicates {
            // The answer is the record's only: the links are followed either way, so a test
            // kept in Redis adds no round trip before them.
            let (duplicate, (links, canonical)) =
                tokio::join!(seen_before, self.follow_links(depth, url, fetched, ok));
            (result.duplicate, result.links, result.canonical) = (duplicate, links, canonical);
        } else if seen_before.await {
            // Its links were followed from the first copy: not extracted again.
            result.duplicate = true;
        } else {
            (result.links, result.canonical) = self.follow_links(depth, url, fetched, ok).await;
        }
        result
    }

    /// Pushes the links of a 2xx (`ok`) sitemap or HTML page: how many it has, and its
    /// canonical URL, if it names one.
    async fn follow_links(
        &self,
        depth: u32,
        url: &Url,
        fetched: &Fetched,
        ok: bool,
    ) -> (u64, Option<String>) {
        if ok && let Some(nesting) = self.sitemap_nesting(url, fetched).await {
            // A sitemap cut at the body cap is read as far as it goes.
            return (
                self.read_sitemap(url, &fetched.body, depth, nesting).await,
                None,
            );
        }
        let html = fetch::is_html(fetched.content_type.as_deref())
            || (fetched.content_type.is_none() && fetch::sniff_html(&fetched.body));
        if !(ok && html && !fetched.too_large) {
            return (0, None);
        }
        let extracted = heavy(fetched.body.len(), || self.extract(url, fetched));
        // Frames not followed are found all the same.
        let unfollowed_frames = if self.config.extract.follow_frames {
            0
        } else {
            extracted.frames
        };
        let found =
            extracted.links.len() + extracted.nofollow + extracted.over_cap + unfollowed_frames;
        self.stats.links.fetch_add(found as u64, Ordering::Relaxed);
        self.stats
            .nofollow
            .fetch_add(extracted.nofollow as u64, Ordering::Relaxed);
        self.stats
            .over_cap
            .fetch_add(extracted.over_cap as u64, Ordering::Relaxed);
        if extracted.frames > 0 {
            self.stats
                .frames
                .fetch_add(extracted.frames as u64, Ordering::Relaxed);
        }
        // The trap rules compare links with this page, not with its `<base href>`.
        self.push(url, &extracted.base, &extracted.links, depth + 1)
            .await;
        (found as u64, extracted.canonical)
    }

    /// The content-seen test: whether a body was read before under another URL, in this
    /// process's filter, or, in a crawl shared through Redis, by any of its processes.
    async fn seen_body(&self, digest: &Digest) -> bool {
        let Some(content) = &self.content else {
            return false;
        };
        let Some(shared) = self.frontier.as_shared().filter(|_| content.is_elsewhere()) else {
            return content.seen_before(digest);
        };
        let seen = shared
            .seen_body(digest.as_bytes())
            .await
            .unwrap_or_else(|err| {
                tracing::warn!("the content-seen test: {err}; the body is taken as new");
                false
            });
        content.note(seen);
        seen
    }

    /// The index nesting of a response that is a sitemap: a URL known as one, or, with
    /// `crawl.sitemaps`, a body whose root is `<urlset>` or `<sitemapindex>` (then at 0).
    /// HTML pages of a crawl without sitemaps cost one atomic load.
    ///
    /// In a crawl shared through Redis, a sitemap another process took is known there: a
    /// body that looks like one asks for its level (one request, for sitemaps only).
    async fn sitemap_nesting(&self, url: &Url, fetched: &Fetched) -> Option<u8> {
        if let Some(level) = self.sitemaps.nesting(url.as_str()) {
            return Some(level);
        }
        let looks = sitemap::may_be_sitemap(fetched.content_type.as_deref())
            && sitemap::sniff(&fetched.body);
        if !looks {
            return None;
        }
        if let Some(shared) = self.frontier.as_shared()
            && let Some(url) = self.sitemaps.canonicalize(url, url.as_str())
        {
            match shared.sitemap_level(&url).await {
                Ok(Some(level)) => return Some(level),
                Ok(None) => {}
                Err(err) => tracing::warn!("asking whether {url} is a sitemap: {err}"),
            }
        }
        self.sitemaps.enabled.then_some(0)
    }

    /// Takes `url` as a sitemap at `level`, in this process and, in a crawl shared through
    /// Redis, for the crawl (where a host's cap is counted): whether to push it.
    async fn mark_sitemap(&self, url: &Canonical, level: u8) -> bool {
        if !self.sitemaps.mark(url, level) {
            return false;
        }
        let Some(shared) = self.frontier.as_shared() else {
            return true;
        };
        match shared.mark_sitemap(url, level, sitemap::MAX_PER_HOST).await {
            Ok(frontier_redis::SitemapMark::Taken) => true,
            // Pushed by the process that took it; known here at the level it was given.
            Ok(frontier_redis::SitemapMark::Known) => false,
            Ok(frontier_redis::SitemapMark::OverCap) => {
                self.sitemaps.unmark(url);
                self.sitemaps.refused.fetch_add(1, Ordering::Relaxed);
                false
            }
            Err(err) => {
                // Pushed all the same: a sitemap read by this process only is not lost.
                tracing::warn!("taking {url} as a sitemap of the crawl: {err}");
                true
            }
        }
    }

    /// Reads a sitemap's entries and pushes them, a batch at a time, one link deeper than
    /// the sitemap; the sitemaps an index lists are taken as sitemaps one level deeper.
    /// Returns the entries read.
    async fn read_sitemap(&self, url: &Url, body: &[u8], depth: u32, nesting: u8) -> u64 {
        let mut reader = sitemap::Reader::new(body);
        let mut listed = 0;
        loop {
            let batch = heavy(body.len(), || {
                let mut batch = Vec::new();
                while batch.len() < SITEMAP_BATCH
                    && let Some(entry) = reader.next_entry()
                {
                    batch.push(entry);
                }
                batch
            });
            if batch.is_empty() {
                break;
            }
            listed += batch.len() as u64;
            let children = (reader.kind() == Some(sitemap::Kind::Index)).then_some(nesting + 1);
            self.push_listed(url, Some(url.as_str()), &batch, depth + 1, children)
                .await;
        }
        let stats = &self.sitemaps;
        stats.fetched.fetch_add(1, Ordering::Relaxed);
        stats.listed.fetch_add(listed, Ordering::Relaxed);
        stats.dropped.fetch_add(reader.dropped, Ordering::Relaxed);
        if reader.dropped > 0 || reader.error.is_some() {
            tracing::info!(
                "sitemap {url}: {listed} URLs read, {} dropped{}",
                reader.dropped,
                reader.error.map(|e| format!("; {e}")).unwrap_or_default()
            );
        }
        listed
    }

    /// Pushes URLs a sitemap or robots.txt (`from`) lists, at `depth`: pages (with their
    /// `lastmod` kept for their records), or, with `nesting`, sitemaps at that index level.
    async fn push_listed(
        &self,
        base: &Url,
        from: Option<&str>,
        entries: &[sitemap::Entry],
        depth: u32,
        nesting: Option<u8>,
    ) {
        let stats = &self.sitemaps;
        for entry in entries {
            let Some(target) = stats.canonicalize(base, &entry.loc) else {
                stats.dropped.fetch_add(1, Ordering::Relaxed);
                continue;
            };
            // Marked before the push, so that no worker leases it unmarked.
            if let Some(level) = nesting
                && !self.mark_sitemap(&target, level).await
            {
                // Known already (an index listing itself), or over a bound (counted).
                continue;
            }
            let kept = nesting.is_none()
                && entry
                    .lastmod
                    .as_deref()
                    .is_some_and(|lastmod| stats.keep_lastmod(&target, lastmod));
            let pushed = self
                .frontier
                .push_canonical(target.clone(), from, depth)
                .await;
            if !matches!(pushed, Ok(Push::Queued | Push::HostGivenUp)) {
                // Seen before, or out of scope: not fetched for this listing.
                if nesting.is_some() {
                    stats.unmark(&target);
                    if let Some(shared) = self.frontier.as_shared()
                        && let Err(err) = shared.unmark_sitemap(&target).await
                    {
                        tracing::warn!("forgetting the sitemap {target}: {err}");
                    }
                }
                if kept {
                    stats.take_lastmod(target.as_str());
                }
            }
            if let Err(err) = pushed {
                tracing::warn!("pushing {} from {base}: {err}", entry.loc);
            }
        }
    }

    /// The links of an HTML page.
    fn extract(&self, url: &Url, fetched: &Fetched) -> Extracted {
        let page = Page {
            url,
            body: &fetched.body,
            content_type: fetched.content_type.as_deref(),
        };
        let options = Options {
            max_links: self.config.extract.max_links_per_page,
            follow_nofollow: self.config.extract.follow_nofollow,
            follow_frames: self.config.extract.follow_frames,
        };
        links::extract(&page, &options)
    }

    /// Pushes the links of `page` (or a redirect's target), resolved against `base`, as one
    /// batch.
    async fn push(&self, page: &Url, base: &Url, hrefs: &[String], depth: u32) {
        if let Err(err) = self.frontier.push_links(page, base, hrefs, depth).await {
            // The seen-test could not grow (memory), or spilling failed (the URLs are queued
            // in memory all the same): worth a word, not the crawl.
            tracing::warn!("pushing the links of {base}: {err}");
        }
    }

    /// Writes the record of a lease that has been completed, if its URL is done with: what
    /// [`Lease::complete`](crate::backend::Lease::complete) runs with the completion, as one step with it.
    fn record(
        &self,
        lease: &LeaseFacts,
        completion: Result<frontier::Completion, frontier::ForeignLease>,
        mut result: Attempt<'_>,
        started: Instant,
        fetched_at: SystemTime,
    ) {
        let completion = match completion {
            Ok(completion) => completion,
            Err(err) => {
                tracing::error!("{err}");
                return;
            }
        };
        if let Some(waiting) = completion.host_given_up {
            let last = match (&result.error, &result.detail) {
                (Some(kind), Some(detail)) => format!("{kind}: {detail}"),
                (Some(kind), None) => kind.to_string(),
                (None, _) => format!("HTTP {}", result.status.unwrap_or_default()),
            };
            tracing::warn!(
                "giving up {}: every try failed for politeness.give_up_after (last: {last}); \
                 its {waiting} queued URLs get records with error host_given_up",
                lease.host
            );
        }
        let error = match completion.fate {
            Fate::Retried { .. } => {
                self.stats.retries.fetch_add(1, Ordering::Relaxed);
                self.give_back_budget();
                return;
            }
            Fate::DroppedWithHost => {
                if result.detail.is_none() {
                    result.detail = Some(match result.status {
                        Some(status) => format!("answered {status}, and its host was given up"),
                        None => "its host was given up".to_owned(),
                    });
                }
                result.error.or(Some(ErrorKind::HostGivenUp))
            }
            _ => result.error,
        };
        let lastmod = self.sitemaps.take_lastmod(&lease.url);
        let took = backend::now().saturating_duration_since(started);
        let digest = result.digest.as_ref().map(DigestText::as_str);
        let record = Record {
            url: &lease.url,
            attempts: lease.attempts,
            status: result.status,
            error,
            depth: lease.depth,
            from: lease.from.as_deref(),
            content_type: result.content_type,
            bytes: result.bytes,
            links: result.links,
            elapsed_ms: took.as_millis() as u64,
            redirect: result.redirect.as_deref(),
            canonical: result.canonical.as_deref(),
            error_detail: error.and(result.detail.as_deref()),
            lastmod: lastmod.as_deref().or(result.last_modified),
            fetched_at: Rfc3339(fetched_at),
            digest,
            duplicate: result.duplicate,
        };
        let class = result.status.map_or(0, |s| usize::from(s / 100).min(5));
        self.stats.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(result.bytes, Ordering::Relaxed);
        if let Some(kind) = error {
            self.stats.count_error(kind);
        }
        let failure = error.map(|kind| (kind, result.detail.as_deref().unwrap_or_default()));
        self.stats.tally(&lease.host, result.status, failure);
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        if result.status.is_some() {
            self.stats.latency.observe(took);
        }
        if let Err(err) = self.sink.write(&record) {
            tracing::error!("writing records: {err}; stopping");
            self.sink_failed.store(true, Ordering::Relaxed);
            self.stop();
        }
    }

    /// Seconds since the crawl started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

/// Runs CPU-heavy work on `bytes` of a page: off the async worker's thread when they are
/// many, so that the other tasks of the thread move on meanwhile (a multi-threaded runtime
/// only; tests run a single thread, where it runs in place).
fn heavy<R>(bytes: usize, work: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let threaded = Handle::try_current()
        .is_ok_and(|runtime| runtime.runtime_flavor() == RuntimeFlavor::MultiThread);
    if bytes >= HEAVY_BYTES && threaded {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

/// Why the SSRF guard refused `url`, and how to let the crawl fetch it, for the record's
/// `error_detail` and the summary's hosts not crawled.
fn ssrf_detail(url: &Url) -> String {
    use std::net::IpAddr;
    let host = url.host_str().unwrap_or_default();
    let why = match url.host() {
        Some(url::Host::Ipv4(ip)) => format!("{ip} is {}", address_kind(IpAddr::V4(ip))),
        Some(url::Host::Ipv6(ip)) => format!("{ip} is {}", address_kind(IpAddr::V6(ip))),
        _ => format!("{host} resolves to an address that is not public"),
    };
    format!(
        "{why}, and links to such addresses are not fetched (the seeds' hosts excepted); \
         --allow-private-addresses true (fetch.allow_private_addresses) allows them"
    )
}

/// What kind of address the guard refuses `ip` as, in words.
fn address_kind(ip: std::net::IpAddr) -> &'static str {
    use std::net::IpAddr;
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        _ if ip.is_loopback() => "a loopback address (this machine)",
        _ if ip.is_unspecified() => "the unspecified address",
        _ if ip.is_multicast() => "a multicast address",
        IpAddr::V4(v4) if v4.is_private() => "a private address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address",
        IpAddr::V6(v6) if v6.segments()[0] & 0xfe00 == 0xfc00 => "a unique-local address",
        IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80 => "a link-local address",
        _ => "not a public address",
    }
}

/// What a record needs of a lease, kept when the lease goes back to the frontier.
struct LeaseFacts {
    url: String,
    host: String,
    /// Tries made: the lease's attempt number, unless it was handed out only to be
    /// recorded, when no try was made.
    attempts: u32,
    depth: u32,
    /// The page whose link led here, if known.
    from: Option<String>,
}

impl LeaseFacts {
    fn of(lease: &Lease) -> Self {
        LeaseFacts {
            url: lease.url().as_str().to_owned(),
            host: lease.url().host_key().to_owned(),
            attempts: lease.attempts() - u32::from(lease.host_given_up()),
            depth: lease.depth(),
            from: lease.referrer().map(str::to_owned),
        }
    }
}

/// One lease in `Crawler::outstanding`, for as long as it lives, even through a panic.
struct Outstanding<'a>(&'a AtomicU64);

impl<'a> Outstanding<'a> {
    fn count(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        Outstanding(counter)
    }
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

/// A lease being worked on. If the work panics, dropping this gives the lease back as a
/// failure with a record, so that its host's connection is freed and the crawl can end: a
/// lease that is simply lost would keep the frontier from ever being done. If the work is
/// cancelled, the lease is abandoned: queued again, without a record.
struct Visit<'c> {
    crawler: &'c Crawler,
    lease: Option<Lease>,
    started: Instant,
    /// When the try started, for the record.
    fetched_at: SystemTime,
}

impl Visit<'_> {
    fn lease(&self) -> &Lease {
        self.lease
            .as_ref()
            .expect("the lease is held until finished")
    }

    fn take(&mut self) -> Lease {
        self.lease.take().expect("the lease is held until finished")
    }

    /// Completes the lease and, when its URL is done with, writes its record.
    async fn finish(mut self, outcome: Outcome, result: Attempt<'_>) {
        let lease = self.take();
        let facts = LeaseFacts::of(&lease);
        let crawler = self.crawler;
        let (started, fetched_at) = (self.started, self.fetched_at);
        lease
            .complete(outcome, |completion| {
                crawler.record(&facts, completion, result, started, fetched_at);
            })
            .await;
    }
}

impl Drop for Visit<'_> {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        let crawler = self.crawler;
        if std::thread::panicking() {
            tracing::error!("a fetch worker panicked on {}", lease.url());
            let outcome = Outcome::Failure {
                retry: false,
                retry_after: None,
            };
            let facts = LeaseFacts::of(&lease);
            let (started, fetched_at) = (self.started, self.fetched_at);
            lease.complete_now(outcome, |completion| {
                let result = Attempt::error(ErrorKind::Internal);
                crawler.record(&facts, completion, result, started, fetched_at);
            });
        } else {
            // Cancelled (the crawl stopped after its grace period): no fetch ended, so no
            // record; the URL goes back in line, and a checkpoint holds it as queued.
            crawler.abandon(lease);
        }
        crawler.wake.notify_waiters();
    }
}

impl Attempt<'_> {
    /// No answer, for a reason the kind says all of.
    fn error(kind: ErrorKind) -> Self {
        Attempt {
            status: None,
            error: Some(kind),
            detail: None,
            content_type: None,
            bytes: 0,
            links: 0,
            redirect: None,
            canonical: None,
            last_modified: None,
            digest: None,
            duplicate: false,
        }
    }

    /// No answer, with what exactly failed.
    fn failed(kind: ErrorKind, detail: String) -> Self {
        Attempt {
            detail: Some(detail),
            ..Attempt::error(kind)
        }
    }
}

#[cfg(test)]
mod tests;
