//! The crawl's counters at one moment, as plain values: what the progress line, the summary,
//! `--summary-json` and `/metrics` render. The crawler takes them
//! (`Crawler::snapshot`); none of the renderers reads the crawler itself.

use std::collections::BTreeMap;
use std::time::Duration;

use frontier::FrontierStats;

use crate::errors::ErrorKind;

/// Upper bounds of the fetch latency histogram's buckets, in seconds (the last is `+Inf`).
pub(crate) const LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How long a URL is in flight before the progress line names it: longer than a page takes
/// on a working network, shorter than the timeouts (10 s to connect, 30 s in all), so that a
/// crawl that seems stuck says on what.
pub(crate) const SLOW: Duration = Duration::from_secs(5);

/// The counters of a crawl. Those of "this run" count since this process started; the
/// frontier's, in a resumed crawl, since the crawl began.
#[derive(Debug, Default)]
pub(crate) struct Snapshot {
    /// Since this run started.
    pub(crate) elapsed: Duration,
    /// Records written.
    pub(crate) records: u64,
    /// Records by status class: 1xx .. 5xx at 1 .. 5, no answer at 0.
    pub(crate) by_class: [u64; 6],
    /// Records by error kind.
    pub(crate) errors: BTreeMap<ErrorKind, u64>,
    /// Tries that failed and were retried.
    pub(crate) retries: u64,
    /// Body bytes read.
    pub(crate) bytes: u64,
    /// Links found on pages, and of those: from frames, not followed for nofollow, over
    /// `extract.max_links_per_page`.
    pub(crate) links: Links,
    /// How long the recorded fetches took.
    pub(crate) latency: Latency,
    /// The crawl stopped because `crawl.max_pages` URLs had their record.
    pub(crate) reached_max_pages: bool,
    /// `crawl.max_pages`, 0 for no limit.
    pub(crate) max_pages: u64,
    /// `extract.max_links_per_page`.
    pub(crate) max_links_per_page: usize,
    pub(crate) sitemaps: Sitemaps,
    /// The content-seen test's counts, with `crawl.content_seen`.
    pub(crate) duplicates: Option<Duplicates>,
    /// The frontier's counts: URLs, hosts, queues and the seen-test.
    pub(crate) frontier: FrontierStats,
    /// The whole shared crawl's, in a crawl shared through Redis.
    pub(crate) shared: Option<Shared>,
    /// The URL in flight the longest, if for long.
    pub(crate) slow: Option<Slow>,
    /// In a recrawl (`--since`), what became of the pages.
    pub(crate) recrawl: Option<Recrawl>,
    /// With `crawl.page_requisites`, the records of page requisites.
    pub(crate) requisites: Option<u64>,
}

/// What a recrawl found, in this run.
#[derive(Debug, Default)]
pub(crate) struct Recrawl {
    /// Records by what became of their page: unchanged, changed, new, gone (by
    /// `output::Revisit` as a number).
    pub(crate) by_kind: [u64; 4],
    /// Of the unchanged, those that answered 304 Not Modified.
    pub(crate) not_modified: u64,
    /// The bytes the earlier crawl read of those: what the 304s did not send again.
    pub(crate) bytes_unsent: u64,
}

/// Links found on pages.
#[derive(Debug, Default)]
pub(crate) struct Links {
    pub(crate) found: u64,
    /// Of those, from `<frame src>` and `<iframe src>`.
    pub(crate) frames: u64,
    pub(crate) nofollow: u64,
    pub(crate) over_cap: u64,
}

/// A histogram of the recorded fetches' times, by [`LATENCY_BUCKETS`].
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Records per bucket, then above the last.
    pub(crate) buckets: [u64; LATENCY_BUCKETS.len() + 1],
    pub(crate) sum: Duration,
}

/// Sitemaps read, and what they listed.
#[derive(Debug, Default)]
pub(crate) struct Sitemaps {
    pub(crate) read: u64,
    pub(crate) listed: u64,
    /// Entries past the protocol's limits, too long, or not URLs.
    pub(crate) dropped: u64,
    /// Sitemaps not taken: nested too deep, or too many for their host.
    pub(crate) refused: u64,
}

/// The content-seen test's counts (this run's).
#[derive(Debug, Default)]
pub(crate) struct Duplicates {
    /// Non-empty 2xx bodies tested.
    pub(crate) tested: u64,
    /// Of those, read before under another URL.
    pub(crate) duplicates: u64,
    /// The test is the shared crawl's, in Redis: no filter in this process.
    pub(crate) in_redis: bool,
    /// This process's filter.
    pub(crate) filter_bytes: usize,
    pub(crate) expected_false_duplicates: f64,
}

/// The shared crawl, as this process last read it.
#[derive(Debug, Default)]
pub(crate) struct Shared {
    /// The crawl's name.
    pub(crate) name: String,
    pub(crate) totals: shared::Totals,
    /// Requests this process sent to Redis.
    pub(crate) requests: u64,
    /// This process's completions that came after their lease had expired.
    pub(crate) late: u64,
    /// Leases this process gave back to wait for their address's turn.
    pub(crate) given_back: u64,
}

/// The oldest of the URLs in flight longer than asked.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Slow {
    pub(crate) url: String,
    /// How long it has been in flight.
    pub(crate) for_: Duration,
    /// How many others have been in flight that long too.
    pub(crate) others: usize,
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

impl Snapshot {
    /// Whether any record of this run had an HTTP answer.
    pub(crate) fn any_answer(&self) -> bool {
        self.by_class[1..].iter().any(|&n| n > 0)
    }

    /// Records with an error, in this run.
    pub(crate) fn error_count(&self) -> u64 {
        self.errors.values().sum()
    }

    /// Seconds since this run started, never 0 (a divisor).
    pub(crate) fn seconds(&self) -> f64 {
        self.elapsed.as_secs_f64().max(1e-3)
    }
}
