//! The crawl: fetch workers pulling leases from the frontier, and what they do with each.
//!
//! `fetch.concurrency` tasks each loop: pop a lease (or wait for the instant the frontier
//! names, or for a lease to complete), check robots.txt, fetch, extract and push links,
//! complete the lease, and write the URL's record once its fate is final. The frontier's
//! locks are std mutexes held for microseconds, never across an await.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use frontier::{Fate, Frontier, Lease, Outcome, Pop};
use reqwest::Client;
use tokio::sync::Notify;
use url::Url;

use crate::config::Config;
use crate::extract::{self, Options, Page};
use crate::fetch::{self, FetchError, Fetched};
use crate::output::{Record, Sink};
use crate::robots::{RobotsCache, Rules, UNREACHABLE_TTL};

/// Everything the workers share.
pub(crate) struct Crawler {
    config: Config,
    frontier: Frontier,
    client: Client,
    robots: RobotsCache,
    sink: Sink,
    /// Woken when a lease completes: a host may have become ready, or links were pushed.
    wake: Notify,
    /// Leases still allowed by `crawl.max_pages` (`u64::MAX` without a limit): taken when a
    /// lease is popped, given back when it ends in a retry.
    budget: AtomicU64,
    /// Set when the workers are to stop taking leases.
    stop: AtomicBool,
    pub(crate) stats: Stats,
    pub(crate) started: Instant,
}

/// Counts for the progress display and the summary.
#[derive(Default)]
pub(crate) struct Stats {
    /// Records written.
    pub(crate) records: AtomicU64,
    /// Records by status class: 1xx .. 5xx at 1 .. 5, no answer at 0.
    pub(crate) by_class: [AtomicU64; 6],
    /// Records by error kind.
    pub(crate) errors: Mutex<BTreeMap<&'static str, u64>>,
    /// Body bytes read.
    pub(crate) bytes: AtomicU64,
    /// Links extracted, and of those not followed (nofollow) or over the per-page cap.
    pub(crate) links: AtomicU64,
    pub(crate) nofollow: AtomicU64,
    pub(crate) over_cap: AtomicU64,
    /// Tries that failed and were retried.
    pub(crate) retries: AtomicU64,
}

impl Stats {
    fn count_error(&self, kind: &'static str) {
        *self
            .errors
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry(kind)
            .or_default() += 1;
    }
}

/// What a try produced, before the frontier says whether it is final.
struct Try<'a> {
    status: Option<u16>,
    error: Option<&'static str>,
    content_type: Option<&'a str>,
    bytes: u64,
    links: u64,
    redirect: Option<String>,
    canonical: Option<String>,
}

impl Crawler {
    pub(crate) fn new(config: Config, frontier: Frontier, client: Client, sink: Sink) -> Self {
        let budget = match config.crawl.max_pages {
            0 => u64::MAX,
            n => n,
        };
        Crawler {
            robots: RobotsCache::new(&config.politeness.user_agent),
            config,
            frontier,
            client,
            sink,
            wake: Notify::new(),
            budget: AtomicU64::new(budget),
            stop: AtomicBool::new(false),
            stats: Stats::default(),
            started: Instant::now(),
        }
    }

    pub(crate) fn frontier(&self) -> &Frontier {
        &self.frontier
    }

    /// Runs the workers until the frontier is done or `max_pages` is reached.
    pub(crate) async fn run(self: &Arc<Self>) {
        let workers: Vec<_> = (0..self.config.fetch.concurrency)
            .map(|_| {
                let crawler = Arc::clone(self);
                tokio::spawn(async move { crawler.work().await })
            })
            .collect();
        for worker in workers {
            // A worker that panicked has lost at most its lease; the others finish the crawl.
            if let Err(err) = worker.await {
                tracing::error!("a fetch worker failed: {err}");
            }
        }
        if let Err(err) = self.sink.flush() {
            tracing::error!("writing records: {err}");
        }
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
            if !self.take_budget() {
                self.stop.store(true, Ordering::Relaxed);
                self.wake.notify_waiters();
                return;
            }
            let popped = self.frontier.pop(Instant::now());
            match popped {
                Ok(Pop::Lease(lease)) => {
                    self.visit(lease).await;
                    self.wake.notify_waiters();
                }
                Ok(Pop::WaitUntil(at)) => {
                    self.give_back_budget();
                    let at = tokio::time::Instant::from_std(at);
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = &mut woken => {}
                    }
                }
                Ok(Pop::Pending) => {
                    self.give_back_budget();
                    woken.await;
                }
                Ok(Pop::Done) => {
                    self.give_back_budget();
                    self.wake.notify_waiters();
                    return;
                }
                Err(err) => {
                    // Spilled URLs could not be read back: they are lost (and counted); the
                    // crawl goes on with the rest.
                    self.give_back_budget();
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

    /// Everything done with one lease.
    async fn visit(&self, lease: Lease) {
        let url = lease.url().as_url().clone();
        let started = Instant::now();
        if self.config.politeness.robots {
            let host = lease.url().host().to_owned();
            let (rules, known, fresh) = self.robots.rules(&self.client, &host, &url).await;
            if let Some(delay) = rules.crawl_delay() {
                if fresh {
                    self.frontier.set_crawl_delay(&host, delay);
                } else if started < known {
                    // Leased before the host's Crawl-delay was known, alongside the lease
                    // that fetched robots.txt: back in line, to start when the delay allows.
                    if let Err(err) = self.frontier.abandon(lease, Instant::now()) {
                        tracing::error!("{err}");
                    }
                    self.give_back_budget();
                    return;
                }
            }
            if matches!(*rules, Rules::Unreachable) {
                let retry = Outcome::Failure {
                    retry: true,
                    retry_after: Some(UNREACHABLE_TTL),
                };
                let result = Try::error("robots_unreachable");
                return self.finish(lease, retry, result, started);
            }
            if !rules.allows(&url) {
                // Not the host's fault: no back-off.
                return self.finish(
                    lease,
                    Outcome::Success,
                    Try::error("robots_denied"),
                    started,
                );
            }
        }
        match fetch::get(&self.client, &url, self.config.fetch.max_body_bytes).await {
            Err(err) => {
                let retry = Outcome::Failure {
                    retry: err != FetchError::Http,
                    retry_after: None,
                };
                self.finish(lease, retry, Try::error(err.kind()), started);
            }
            Ok(fetched) => {
                let outcome = match fetched.status {
                    429 | 500..=599 => Outcome::Failure {
                        retry: true,
                        retry_after: fetched.retry_after,
                    },
                    _ => Outcome::Success,
                };
                let result = self.follow(&lease, &url, &fetched);
                self.finish(lease, outcome, result, started);
            }
        }
    }

    /// Pushes what a response leads to (its redirect target, its page's links) and
    /// describes it for the record.
    fn follow<'a>(&self, lease: &Lease, url: &Url, fetched: &'a Fetched) -> Try<'a> {
        let now = Instant::now();
        let mut result = Try {
            status: Some(fetched.status),
            error: fetched.too_large.then_some("too_large"),
            content_type: fetched.content_type.as_deref(),
            bytes: fetched.body.len() as u64,
            links: 0,
            redirect: None,
            canonical: None,
        };
        if (300..400).contains(&fetched.status)
            && let Some(location) = &fetched.location
        {
            // A redirect is a link of the same depth: the target stands for this page.
            result.redirect = url.join(location).ok().map(String::from);
            self.push(url, location, lease.depth(), now);
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
            let extracted = extract::extract(&page, &options);
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
    fn finish(&self, lease: Lease, outcome: Outcome, result: Try<'_>, started: Instant) {
        let url = lease.url().as_str().to_owned();
        let (attempts, depth) = (lease.attempts(), lease.depth());
        let completion = match self.frontier.complete(lease, outcome, Instant::now()) {
            Ok(completion) => completion,
            Err(err) => {
                tracing::error!("{err}");
                return;
            }
        };
        if let Some(dropped) = completion.host_given_up {
            tracing::info!(
                "gave up a host after repeated errors, dropping {dropped} queued URLs ({url})"
            );
        }
        let error = match completion.fate {
            Fate::Retried { .. } => {
                self.stats.retries.fetch_add(1, Ordering::Relaxed);
                self.give_back_budget();
                return;
            }
            Fate::DroppedWithHost => result.error.or(Some("host_given_up")),
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
        };
        let class = result.status.map_or(0, |s| usize::from(s / 100).min(5));
        self.stats.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(result.bytes, Ordering::Relaxed);
        if let Some(kind) = error {
            self.stats.count_error(kind);
        }
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        if let Err(err) = self.sink.write(&record) {
            tracing::error!("writing records: {err}; stopping");
            self.stop.store(true, Ordering::Relaxed);
        }
    }

    /// Seconds since the crawl started.
    pub(crate) fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }
}

impl Try<'_> {
    fn error(kind: &'static str) -> Self {
        Try {
            status: None,
            error: Some(kind),
            content_type: None,
            bytes: 0,
            links: 0,
            redirect: None,
            canonical: None,
        }
    }
}
