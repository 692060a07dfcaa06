//! The crawl: one dispatcher taking leases from the frontier, a task visiting each, and what
//! it does with it.
//!
//! The dispatcher (`worker`) takes a lease whenever one of [`worker_tasks`] slots is free,
//! or waits for the instant the frontier names, or for a lease to complete; each lease's task
//! checks robots.txt, fetches, extracts and pushes links, completes the lease, and writes the
//! URL's record once its fate is final. Everything they ask of the frontier goes through
//! [`Backend`], the one seam to it. At most `fetch.concurrency` of them fetch at once.
//!
//! Stopping: [`Crawler::run`] takes a [`Shutdown`]. Its `stop` token ends the taking of
//! leases (the visits in flight finish); its `abort` token cancels the visits at once, and
//! each gives its lease back without a record. `crawl.max_pages` and a failure to write
//! records stop the crawl the same way from inside.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::backend::{self, Backend};
use crate::config::Config;
use crate::content::ContentSeen;
use crate::fetch::Fetcher;
use crate::guard::Guard;
use crate::hosts::HostRules;
use crate::output::Sink;
use crate::requisite::Requisites;
use crate::robots::{RobotsCache, UNREACHABLE_TTL};
use crate::sitemap::Sitemaps;
use crate::snapshot::{self, FailedHost, Snapshot};
use crate::warc::Warc;

mod follow;
mod outputs;
mod pace;
mod record;
mod visit;
mod worker;

pub(crate) use follow::SeedRedirects;
use outputs::Outputs;
use pace::Pace;
pub(crate) use record::Stats;
use record::{Draft, LeaseRecord};
use visit::Fetching;
pub(crate) use worker::InFlight;

/// How long a crawl told to quit at once waits for the completions it is still sending.
const SETTLE_WHEN_QUITTING: Duration = Duration::from_secs(2);

/// What responses lead to besides their links, and the tests that decide it.
pub(crate) struct Leads {
    /// The targets of seeds' redirects, which are seeds too.
    seed_redirects: SeedRedirects,
    /// Which URLs are sitemaps, the `lastmod`s waiting for records, and their counts.
    pub(crate) sitemaps: Sitemaps,
    /// The content-seen test, with `crawl.content_seen`.
    pub(crate) content: Option<ContentSeen>,
    /// Pages' requisites, with `crawl.page_requisites` (or WARC files).
    pub(crate) requisites: Option<Requisites>,
}

/// Everything the workers share.
pub(crate) struct Crawler {
    /// The crawl's settings.
    config: Config,
    /// The frontier, embedded or shared through Redis: the one seam to it.
    frontier: Backend,
    /// What a visit fetches with: HTTP, the SSRF guard, robots.txt, the hosts' own rules.
    fetching: Fetching,
    /// The records and WARC files, and whether writing them failed.
    pub(crate) outputs: Outputs,
    /// Wakes the dispatcher, its one listener, when a lease completes: a host may have
    /// become ready, or links were pushed (see [`Backend::wake`]).
    wake: Arc<Notify>,
    /// The page budget, the leases out against it, and the stop.
    pace: Pace,
    /// Counts of the records, for the progress line and the summary.
    pub(crate) stats: Stats,
    /// When this run started.
    pub(crate) started: Instant,
    /// What responses lead to, and what decides it: seeds' redirects, sitemaps, the
    /// content-seen test, page requisites.
    pub(crate) leads: Leads,
    /// Which URL each worker is on, and since when: for the progress line to name a fetch
    /// that takes long.
    pub(crate) in_flight: InFlight,
    /// A recrawl (`--since`): each page queued with its earlier record (as its lease's memo)
    /// is asked for again only if it changed, and each record says what became of its page.
    /// Set at start by `--since` (or a recrawl's state directory), or by the first lease
    /// with an earlier record: a process that joins a shared recrawl without `--since`.
    recrawl: AtomicBool,
    /// How many times each URL was put off for want of this machine's resources (see
    /// `Crawler::may_put_off`).
    put_offs: std::sync::Mutex<std::collections::HashMap<Box<str>, u32>>,
}

/// How many leases a crawl visits at once (its slots): `fetch.concurrency`, and, in a crawl
/// shared through Redis, three times as many. A shared crawl's page waits round trips to Redis besides its
/// fetch (its lease when none is buffered, the content-seen test, its completion): with Redis
/// 4 ms away they take about as long as a 20 ms fetch, and the extra tasks fetch meanwhile,
/// so that the fetches, which stay at most `fetch.concurrency`, are not idle. A task waiting
/// for a fetch to end holds its lease: the others are queued at most one fetch time longer.
/// Why three: `RTT_MS=4 benches/shared.sh`, in docs/benchmarks.md ("three worker tasks a
/// fetch").
pub(crate) fn worker_tasks(concurrency: usize, shared: bool) -> usize {
    if shared { concurrency * 3 } else { concurrency }
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

/// Pages and bodies from this size on are extracted and written to WARC off the async
/// workers' threads (`block_in_place`): a multi-megabyte page takes milliseconds of CPU,
/// which would hold up every other task on its thread.
const HEAVY_BYTES: usize = 256 << 10;

/// Runs CPU-heavy work on `bytes` of a page: off the async worker's thread when they are
/// many, so that the other tasks of the thread move on meanwhile (a multi-threaded runtime
/// only; tests run a single thread, where it runs in place).
fn cpu_bound<R>(bytes: usize, work: impl FnOnce() -> R) -> R {
    use tokio::runtime::{Handle, RuntimeFlavor};
    let threaded = Handle::try_current()
        .is_ok_and(|runtime| runtime.runtime_flavor() == RuntimeFlavor::MultiThread);
    if bytes >= HEAVY_BYTES && threaded {
        tokio::task::block_in_place(work)
    } else {
        work()
    }
}

impl Crawler {
    #[expect(
        clippy::too_many_arguments,
        reason = "each is a part start-up builds and checks on its own before the crawl"
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
        let max_pages = config.crawl.max_pages;
        Crawler {
            leads: Leads {
                seed_redirects,
                sitemaps: Sitemaps::new(config.crawl.sitemaps),
                content,
                requisites: config.page_requisites().then(Requisites::new),
            },
            fetching: Fetching {
                fetcher,
                guard,
                hosts,
                robots: RobotsCache::new(
                    &config.politeness.user_agent,
                    config.politeness.max_retry_after.min(UNREACHABLE_TTL),
                )
                .with_max_age(config.politeness.robots_max_age)
                .with_shared(frontier.as_shared().cloned()),
                permits: tokio::sync::Semaphore::new(fetches),
            },
            config,
            frontier,
            outputs: Outputs::new(sink, warc, wants_digest),
            wake,
            pace: Pace::new(max_pages),
            stats: Stats::default(),
            started: Instant::now(),
            in_flight: InFlight::new(workers),
            recrawl: AtomicBool::new(false),
            put_offs: std::sync::Mutex::default(),
        }
    }

    /// Makes this crawl a recrawl: the pages queued with an earlier record (see
    /// [`recrawl::Earlier`](crate::recrawl::Earlier)) are fetched with their validators, and
    /// each record says what became of its page.
    pub(crate) fn recrawling(mut self) -> Self {
        // The digest tells an unchanged body from a changed one.
        self.outputs.wants_digest = true;
        self.recrawl = AtomicBool::new(true);
        self
    }

    /// Whether this crawl is a recrawl (see the field).
    pub(crate) fn recrawl(&self) -> bool {
        self.recrawl.load(Ordering::Relaxed)
    }

    /// The frontier, through its seam.
    pub(crate) fn frontier(&self) -> &Backend {
        &self.frontier
    }

    /// Whether the crawl stopped because `crawl.max_pages` URLs had their record.
    pub(crate) fn reached_max_pages(&self) -> bool {
        self.pace.reached_max_pages()
    }

    /// Checkpoints the frontier to `dir`, with the records of every URL it holds as done
    /// flushed first. Skipped (the previous checkpoint stays) when records could not be
    /// written: a checkpoint must never hold as done a URL whose record was lost.
    pub(crate) fn checkpoint(&self, dir: &std::path::Path) {
        let flushed = || {
            // Before the frontier: a sitemap it holds queued is read as one after a resume.
            if let Some(state) = &self.leads.seed_redirects.state
                && let Err(err) = state.save_sitemaps(&self.leads.sitemaps.known())
            {
                // A resume would read the sitemaps still queued only if they are XML.
                tracing::warn!("{err:#}");
            }
            // On disk, not only written: the checkpoint is about to hold their URLs as done.
            if let Err(err) = self.outputs.sync()
                && !self.outputs.failed()
            {
                tracing::error!("writing records: {err}");
                self.outputs.fail();
            }
            let ok = !self.outputs.failed();
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
        if self.outputs.failed() {
            // A record was lost: its completion, in the journal, must never reach the disk
            // (the URL would be held as done without a record). The crawl is stopping.
            return;
        }
        // Checked again with the batch taken (`sync` refuses once writing failed): a record
        // that failed before then has said so, as a record and its completion are one step.
        let durable = || self.outputs.sync();
        if let Err(err) = self.frontier.sync_journal(durable) {
            tracing::error!("{err}; a crash now would repeat the work since the last sync");
        }
    }

    /// Flushes the records written so far.
    pub(crate) fn flush(&self) {
        self.outputs.flush();
    }

    /// Runs the crawl until the frontier is done, `crawl.max_pages` is reached, or
    /// `shutdown` says to stop: one task takes the leases and starts a task for each (see
    /// `dispatch`). A visit that panics gives its lease back with a record (error
    /// `internal`), and the others go on.
    pub(crate) async fn run(self: &Arc<Self>, shutdown: Shutdown) {
        let mut visits = JoinSet::new();
        let mut aborted = {
            let stop = async {
                shutdown.stop.cancelled().await;
                self.stop();
                std::future::pending::<()>().await;
            };
            tokio::select! {
                () = self.dispatch(&mut visits) => false,
                () = stop => false,
                () = shutdown.abort.cancelled() => true,
            }
        };
        if aborted {
            self.stop();
            // Each cancelled visit gives its lease back (see `Visit`'s drop).
            visits.abort_all();
        }
        loop {
            tokio::select! {
                joined = visits.join_next() => match joined {
                    None => break,
                    Some(joined) => worker::report_panic(joined),
                },
                () = shutdown.abort.cancelled(), if !aborted => {
                    aborted = true;
                    self.stop();
                    visits.abort_all();
                }
            }
        }
        // Completions sent in the background; told to quit at once, before or while they are
        // waited for, they get a moment, and those not sent by then come back to the crawl
        // with their buckets' next owners.
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

    /// Stops taking leases; the visits in flight finish.
    fn stop(&self) {
        self.pace.stop();
    }

    /// The crawl's counters now: cheap enough for every frame of the progress display (the
    /// hosts not crawled, which take a pass over every host, are [`Crawler::failed_hosts`]).
    pub(crate) fn snapshot(&self) -> Snapshot {
        let s = &self.stats;
        let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
        let sitemaps = &self.leads.sitemaps;
        Snapshot {
            elapsed: self.started.elapsed(),
            records: load(&s.records),
            by_class: std::array::from_fn(|class| load(&s.by_class[class])),
            errors: s
                .errors
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .clone(),
            retries: load(&s.retries),
            bytes: load(&s.bytes),
            links: snapshot::Links {
                found: load(&s.links),
                frames: load(&s.frames),
                nofollow: load(&s.nofollow),
                over_cap: load(&s.over_cap),
            },
            latency: s.latency.snapshot(),
            reached_max_pages: self.reached_max_pages(),
            max_pages: self.config.crawl.max_pages,
            max_links_per_page: self.config.extract.max_links_per_page,
            sitemaps: snapshot::Sitemaps {
                read: load(&sitemaps.fetched),
                listed: load(&sitemaps.listed),
                dropped: load(&sitemaps.dropped),
                refused: load(&sitemaps.refused),
            },
            duplicates: self.leads.content.as_ref().map(|content| {
                let c = content.stats();
                snapshot::Duplicates {
                    tested: c.tested,
                    duplicates: c.duplicates,
                    in_redis: content.is_elsewhere(),
                    filter_bytes: c.filter_bytes,
                    expected_false_duplicates: c.expected_false_duplicates,
                }
            }),
            requisites: self.leads.requisites.as_ref().map(|r| load(&r.recorded)),
            frontier: self.frontier.stats(),
            shared: self.frontier.as_shared().map(|shared| snapshot::Shared {
                name: shared.store().name().to_owned(),
                totals: shared.last_totals(),
                requests: shared.store().requests(),
                late: shared.fenced(),
                given_back: self.frontier.given_back(),
            }),
            slow: self.in_flight.slow(backend::now(), snapshot::SLOW),
            recrawl: self.recrawl().then(|| snapshot::Recrawl {
                by_kind: std::array::from_fn(|kind| load(&s.revisits[kind])),
                not_modified: load(&s.not_modified),
                bytes_unsent: load(&s.bytes_unsent),
            }),
        }
    }

    /// The hosts none of whose records had an answer, most URLs first, for the summary.
    pub(crate) fn failed_hosts(&self) -> Vec<FailedHost> {
        self.stats.failed_hosts()
    }
}

#[cfg(test)]
mod tests;
