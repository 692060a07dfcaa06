//! The crawl: fetch workers pulling leases from the frontier, and what they do with each.
//!
//! `fetch.concurrency` tasks each loop: pop a lease (or wait for the instant the frontier
//! names, or for a lease to complete), check robots.txt, fetch, extract and push links,
//! complete the lease, and write the URL's record once its fate is final. The frontier's
//! locks are std mutexes, never held across an await; they are held for microseconds, except
//! when a push or pop has to spill queued URLs to disk, which holds up the other workers for
//! that write.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use frontier::{Canonical, Canonicalizer, Fate, Frontier, Lease, Outcome, Pop};
use links::{Options, Page};
use reqwest::Client;
use tokio::sync::Notify;
use url::Url;

use crate::config::Config;
use crate::errors::ErrorKind;
use crate::fetch::{self, FetchError, Fetched};
use crate::guard::Guard;
use crate::output::{Record, Sink};
use crate::robots::{RobotsCache, Rules, UNREACHABLE_TTL};
use crate::state::StateDir;
use crate::warc::{Exchange, Warc};

/// Everything the workers share.
pub(crate) struct Crawler {
    config: Config,
    frontier: Frontier,
    client: Client,
    guard: Arc<Guard>,
    /// Where responses go as WARC records, if anywhere.
    warc: Option<Warc>,
    robots: RobotsCache,
    sink: Sink,
    /// Woken when a lease completes: a host may have become ready, or links were pushed.
    wake: Notify,
    /// Leases still allowed by `crawl.max_pages` (`u64::MAX` without a limit): taken when a
    /// lease is popped, given back when it ends in a retry.
    budget: AtomicU64,
    /// Set when the workers are to stop taking leases.
    stop: AtomicBool,
    /// Leases being worked on that hold a share of `budget`.
    outstanding: AtomicU64,
    /// Records could not be written: the crawl stopped, and its exit code says so.
    pub(crate) sink_failed: AtomicBool,
    /// Held shared by each "complete a lease, write its record" step, and exclusively by a
    /// checkpoint, which flushes the records then snapshots the frontier. A std lock: never
    /// held across an await.
    records: std::sync::RwLock<()>,
    /// The workers, to cancel when the grace period after Ctrl-C is over.
    workers: Mutex<Vec<tokio::task::AbortHandle>>,
    pub(crate) stats: Stats,
    pub(crate) started: Instant,
    seed_redirects: SeedRedirects,
}

/// Redirects followed from a seed before a target stops being a seed: enough for the usual
/// `http://` to `https://` to `www.` to `/en/` chains, few enough that a seed redirecting on
/// and on cannot widen the scope much.
const MAX_SEED_REDIRECTS: u8 = 5;

/// A seed's redirect target is a seed too (Heritrix: "seeds redirect new seeds"): in scope,
/// at depth 0, so that `example.com` answering with a redirect to `www.example.com` crawls
/// `www.example.com`, and a list of URLs crawled with `crawl.max_depth = 0` follows its
/// redirects. Not trusted by the SSRF guard: the seed's server chose the target.
pub(crate) struct SeedRedirects {
    canon: Canonicalizer,
    /// Each target, with its redirects from a seed the user gave. A std mutex: taken once per
    /// redirect of a depth-0 URL.
    hops: Mutex<HashMap<String, u8>>,
    /// Where the targets are kept for a resume, which puts them back in the scope.
    state: Option<StateDir>,
}

impl SeedRedirects {
    /// No targets yet, or those a resumed crawl had (`known`, each counted as one hop).
    pub(crate) fn new(canon: Canonicalizer, state: Option<StateDir>, known: &[String]) -> Self {
        let hops = known.iter().map(|url| (url.clone(), 1)).collect();
        SeedRedirects {
            canon,
            hops: Mutex::new(hops),
            state,
        }
    }

    /// The target of a redirect from `from` (a URL at depth 0) to `location`, if it is to be
    /// a seed: not too many redirects from a seed the user gave, and a URL we fetch.
    fn target(&self, from: &Url, location: &str) -> Option<Canonical> {
        let target = self.canon.canonicalize_relative(from, location).ok()?;
        let mut hops = self.hops.lock().unwrap_or_else(PoisonError::into_inner);
        let n = hops.get(from.as_str()).copied().unwrap_or(0) + 1;
        if n > MAX_SEED_REDIRECTS || hops.contains_key(target.as_str()) {
            return None;
        }
        hops.insert(target.as_str().to_owned(), n);
        if let Some(state) = &self.state {
            let mut targets: Vec<String> = hops.keys().cloned().collect();
            targets.sort();
            if let Err(err) = state.save_seed_redirects(&targets) {
                // The crawl goes on; a resume would only miss this target's host in scope.
                tracing::warn!("{err:#}");
            }
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
    pub(crate) over_cap: AtomicU64,
    /// Tries that failed and were retried.
    pub(crate) retries: AtomicU64,
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

/// What a try produced, before the frontier says whether it is final.
struct Try<'a> {
    status: Option<u16>,
    error: Option<ErrorKind>,
    /// What exactly failed, in words (the OS error, the resolver's answer).
    detail: Option<String>,
    content_type: Option<&'a str>,
    bytes: u64,
    links: u64,
    redirect: Option<String>,
    canonical: Option<String>,
}

impl Crawler {
    pub(crate) fn new(
        config: Config,
        frontier: Frontier,
        client: Client,
        guard: Arc<Guard>,
        sink: Sink,
        warc: Option<Warc>,
        seed_redirects: SeedRedirects,
    ) -> Self {
        let budget = match config.crawl.max_pages {
            0 => u64::MAX,
            n => n,
        };
        Crawler {
            robots: RobotsCache::new(
                &config.politeness.user_agent,
                config.politeness.max_retry_after.min(UNREACHABLE_TTL),
            ),
            config,
            frontier,
            client,
            guard,
            warc,
            sink,
            wake: Notify::new(),
            budget: AtomicU64::new(budget),
            stop: AtomicBool::new(false),
            outstanding: AtomicU64::new(0),
            sink_failed: AtomicBool::new(false),
            records: std::sync::RwLock::new(()),
            workers: Mutex::new(Vec::new()),
            stats: Stats::default(),
            started: Instant::now(),
            seed_redirects,
        }
    }

    pub(crate) fn frontier(&self) -> &Frontier {
        &self.frontier
    }

    /// Cancels the workers at once: each puts its lease back in line, without a record.
    pub(crate) fn abort(&self) {
        self.stop();
        for worker in self
            .workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
        {
            worker.abort();
        }
    }

    /// Stops taking leases: workers finish the one they hold and return.
    pub(crate) fn stop(&self) {
        self.stop.store(true, Ordering::Relaxed);
        self.wake.notify_waiters();
    }

    /// Checkpoints the frontier to `dir`, with the records of every URL it holds as done
    /// flushed first. Skipped (the previous checkpoint stays) when records could not be
    /// written: a checkpoint must never hold as done a URL whose record was lost.
    pub(crate) fn checkpoint(&self, dir: &std::path::Path) {
        let _steps = self.records.write().unwrap_or_else(PoisonError::into_inner);
        self.flush();
        if self.sink_failed.load(Ordering::Relaxed) {
            tracing::error!("records could not be written: no checkpoint, the previous one stays");
            return;
        }
        if let Err(err) = self.frontier.checkpoint(dir, Instant::now()) {
            tracing::error!("checkpoint failed (the previous one is intact): {err}");
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

    /// Runs the workers until the frontier is done or `max_pages` is reached.
    pub(crate) async fn run(self: &Arc<Self>) {
        let workers: Vec<_> = (0..self.config.fetch.concurrency)
            .map(|_| {
                let crawler = Arc::clone(self);
                tokio::spawn(async move { crawler.work().await })
            })
            .collect();
        self.workers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .extend(workers.iter().map(tokio::task::JoinHandle::abort_handle));
        for worker in workers {
            // A worker that panicked gave its lease back (see `Visit`); the others go on.
            match worker.await {
                Err(err) if !err.is_cancelled() => tracing::error!("a fetch worker failed: {err}"),
                _ => {}
            }
        }
        self.flush();
    }

    async fn work(&self) {
        loop {
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            // Registered before popping, so that a completion between the pop and the wait
            // is not missed.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            match self.frontier.pop(Instant::now()) {
                Ok(Pop::Lease(lease)) => {
                    // Counted before the budget is taken, so that a worker finding the budget
                    // spent never sees no lease in flight while this one is set up.
                    let outstanding = Outstanding::count(&self.outstanding);
                    if !self.take_budget() {
                        drop(outstanding);
                        // `max_pages` is spent, unless a lease in flight ends in a retry and
                        // gives its share back: wait for those, then stop.
                        self.abandon(lease);
                        if self.outstanding.load(Ordering::Acquire) == 0 {
                            self.stop.store(true, Ordering::Relaxed);
                            self.wake.notify_waiters();
                            return;
                        }
                        woken.await;
                        continue;
                    }
                    self.visit(lease).await;
                    // Uncounted before the wake-up, so that a woken worker waiting for the
                    // leases in flight sees this one gone.
                    drop(outstanding);
                    self.wake.notify_waiters();
                }
                Ok(Pop::WaitUntil(at)) => {
                    let at = tokio::time::Instant::from_std(at);
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = &mut woken => {}
                    }
                }
                Ok(Pop::Pending) => woken.await,
                Ok(Pop::Done) => {
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

    fn give_back_budget(&self) {
        if self.config.crawl.max_pages != 0 {
            self.budget.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Puts a lease back in line without a try.
    fn abandon(&self, lease: Lease) {
        if let Err(err) = self.frontier.abandon(lease, Instant::now()) {
            tracing::error!("{err}");
        }
    }

    /// Everything done with one lease.
    async fn visit(&self, lease: Lease) {
        let mut visit = Visit {
            crawler: self,
            lease: Some(lease),
            started: Instant::now(),
        };
        if visit.lease().host_given_up() {
            // Handed out only to be recorded: the frontier gave its host up.
            let why = "its host failed for too long and was given up; not fetched";
            return visit.finish(
                Outcome::Skipped,
                Try::failed(ErrorKind::HostGivenUp, why.to_owned()),
            );
        }
        let url = visit.lease().url().as_url().clone();
        if !self.guard.permits(&url).await {
            // Our policy, not the host's failure, and no request was made: no back-off, no
            // retry, and the host's delay is not spent.
            return visit.finish(Outcome::Skipped, Try::error(ErrorKind::SsrfBlocked));
        }
        if self.config.politeness.robots {
            let host = visit.lease().url().host().to_owned();
            let (rules, known, fresh) = self
                .robots
                .rules(&self.client, &self.guard, &host, &url, visit.started)
                .await;
            // Leases that waited for the robots.txt another lease of the host was fetching
            // started before its rules were known.
            let waited = !fresh && visit.started < known;
            if let Some(delay) = rules.crawl_delay()
                && fresh
            {
                self.frontier.set_crawl_delay(&host, delay);
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
                    let retry = Outcome::Failure {
                        retry: true,
                        retry_after: Some(self.robots.unreachable_ttl()),
                    };
                    let why = format!("robots.txt answered {status}");
                    return visit.finish(retry, Try::failed(ErrorKind::RobotsUnreachable, why));
                }
                Rules::Unanswered(err) => {
                    // The host cannot be reached: the page's own fetch would fail the same.
                    let retry = Outcome::Failure {
                        retry: true,
                        retry_after: None,
                    };
                    let why = format!("fetching robots.txt: {}", err.detail);
                    return visit.finish(retry, Try::failed(err.kind, why));
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
                return visit.finish(outcome, Try::error(ErrorKind::RobotsDenied));
            }
        }
        let keep_headers = self.warc.is_some();
        match fetch::get(
            &self.client,
            &url,
            self.config.fetch.max_body_bytes,
            keep_headers,
        )
        .await
        {
            Err(FetchError {
                kind: ErrorKind::SsrfBlocked,
                ..
            }) => {
                visit.finish(Outcome::Skipped, Try::error(ErrorKind::SsrfBlocked));
            }
            Err(err) => {
                let retry = Outcome::Failure {
                    // A malformed answer would be as malformed again.
                    retry: err.kind != ErrorKind::Http,
                    retry_after: None,
                };
                visit.finish(retry, Try::failed(err.kind, err.detail));
            }
            Ok(fetched) => {
                let outcome = match fetched.status {
                    429 | 500..=599 => Outcome::Failure {
                        retry: true,
                        retry_after: fetched.retry_after,
                    },
                    _ => Outcome::Success,
                };
                if let (Some(warc), Some(headers)) = (&self.warc, &fetched.headers) {
                    let exchange = Exchange {
                        url: &url,
                        user_agent: &self.config.politeness.user_agent,
                        status: fetched.status,
                        headers,
                        body: &fetched.body,
                        truncated: fetched.too_large,
                    };
                    if let Err(err) = warc.write(&exchange) {
                        // Not done with: back in line, for a resumed crawl to fetch again.
                        tracing::error!("writing the WARC file: {err}; stopping");
                        self.sink_failed.store(true, Ordering::Relaxed);
                        self.stop();
                        self.abandon(visit.take());
                        return;
                    }
                }
                let result = self.follow(visit.lease(), &url, &fetched);
                visit.finish(outcome, result);
            }
        }
    }

    /// Pushes what a response leads to (its redirect target, its page's links) and
    /// describes it for the record.
    fn follow<'a>(&self, lease: &Lease, url: &Url, fetched: &'a Fetched) -> Try<'a> {
        let now = Instant::now();
        let mut result = Try {
            status: Some(fetched.status),
            error: fetched.too_large.then_some(ErrorKind::TooLarge),
            detail: None,
            content_type: fetched.content_type.as_deref(),
            bytes: fetched.body.len() as u64,
            links: 0,
            redirect: None,
            canonical: None,
        };
        if (300..400).contains(&fetched.status)
            && let Some(location) = &fetched.location
        {
            result.redirect = url.join(location).ok().map(String::from);
            let seed = (lease.depth() == 0)
                .then(|| self.seed_redirects.target(url, location))
                .flatten();
            match seed {
                Some(target) => {
                    tracing::info!("{url} redirects to {target}: a seed too, its host in scope");
                    self.frontier.add_seed(&target);
                    if let Err(err) = self.frontier.push_canonical(target, 0, now) {
                        tracing::warn!("pushing {location}: {err}");
                    }
                }
                // One link further, like any link: a chain of redirects ends at the depth
                // limit.
                None => self.push(url, location, lease.depth() + 1, now),
            }
        }
        let html = fetch::is_html(fetched.content_type.as_deref())
            || (fetched.content_type.is_none() && fetch::sniff_html(&fetched.body));
        if (200..300).contains(&fetched.status) && html && !fetched.too_large {
            let page = Page {
                url,
                body: &fetched.body,
                content_type: fetched.content_type.as_deref(),
            };
            let options = Options {
                max_links: self.config.extract.max_links_per_page,
                follow_nofollow: self.config.extract.follow_nofollow,
            };
            let extracted = links::extract(&page, &options);
            let found = extracted.links.len() + extracted.nofollow + extracted.over_cap;
            result.links = found as u64;
            self.stats.links.fetch_add(found as u64, Ordering::Relaxed);
            self.stats
                .nofollow
                .fetch_add(extracted.nofollow as u64, Ordering::Relaxed);
            self.stats
                .over_cap
                .fetch_add(extracted.over_cap as u64, Ordering::Relaxed);
            result.canonical = extracted.canonical;
            for href in &extracted.links {
                self.push(&extracted.base, href, lease.depth() + 1, now);
            }
        }
        result
    }

    fn push(&self, base: &Url, href: &str, depth: u32, now: Instant) {
        if let Err(err) = self.frontier.push_link(base, href, depth, now) {
            // The seen-test could not grow (memory), or spilling failed (the URL is queued
            // in memory all the same): worth a word, not the crawl.
            tracing::warn!("pushing {href}: {err}");
        }
    }

    /// Completes the lease and, when its URL is done with, writes its record.
    fn finish(&self, lease: Lease, outcome: Outcome, mut result: Try<'_>, started: Instant) {
        // Completing the lease and writing its record are one step for a checkpoint (see
        // `checkpoint`): a URL the checkpoint holds as done has its record flushed.
        let _step = self.records.read().unwrap_or_else(PoisonError::into_inner);
        let url = lease.url().as_str().to_owned();
        let host = lease.url().host().to_owned();
        // A lease is the try numbered `attempts`, unless it was handed out only to be
        // recorded: then no try was made.
        let attempts = lease.attempts() - u32::from(lease.host_given_up());
        let depth = lease.depth();
        let completion = match self.frontier.complete(lease, outcome, Instant::now()) {
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
                "giving up {host}: every try failed for politeness.give_up_after (last: {last}); \
                 its {waiting} queued URLs get records with error host_given_up"
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
        let record = Record {
            url: &url,
            attempts,
            status: result.status,
            error,
            depth,
            content_type: result.content_type,
            bytes: result.bytes,
            links: result.links,
            elapsed_ms: started.elapsed().as_millis() as u64,
            redirect: result.redirect.as_deref(),
            canonical: result.canonical.as_deref(),
            error_detail: error.and(result.detail.as_deref()),
        };
        let class = result.status.map_or(0, |s| usize::from(s / 100).min(5));
        self.stats.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(result.bytes, Ordering::Relaxed);
        if let Some(kind) = error {
            self.stats.count_error(kind);
        }
        let failure = error.map(|kind| (kind, result.detail.as_deref().unwrap_or_default()));
        self.stats.tally(&host, result.status, failure);
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        if let Err(err) = self.sink.write(&record) {
            tracing::error!("writing records: {err}; stopping");
            self.sink_failed.store(true, Ordering::Relaxed);
            self.stop.store(true, Ordering::Relaxed);
            self.wake.notify_waiters();
        }
    }

    /// Seconds since the crawl started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
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

    fn finish(mut self, outcome: Outcome, result: Try<'_>) {
        let lease = self.take();
        self.crawler.finish(lease, outcome, result, self.started);
    }
}

impl Drop for Visit<'_> {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        if std::thread::panicking() {
            tracing::error!("a fetch worker panicked on {}", lease.url());
            let outcome = Outcome::Failure {
                retry: false,
                retry_after: None,
            };
            self.crawler.finish(
                lease,
                outcome,
                Try::error(ErrorKind::Internal),
                self.started,
            );
        } else {
            // Cancelled (the crawl stopped after its grace period): no fetch ended, so no
            // record; the URL goes back in line, and a checkpoint holds it as queued.
            self.crawler.abandon(lease);
        }
        self.crawler.wake.notify_waiters();
    }
}

impl Try<'_> {
    /// No answer, for a reason the kind says all of.
    fn error(kind: ErrorKind) -> Self {
        Try {
            status: None,
            error: Some(kind),
            detail: None,
            content_type: None,
            bytes: 0,
            links: 0,
            redirect: None,
            canonical: None,
        }
    }

    /// No answer, with what exactly failed.
    fn failed(kind: ErrorKind, detail: String) -> Self {
        Try {
            detail: Some(detail),
            ..Try::error(kind)
        }
    }
}
