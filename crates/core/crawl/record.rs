//! A URL's record, written once its fate is final, and the counts the records add up to.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};

use frontier::Fate;

use crate::backend::{self, Lease};
use crate::content::DigestText;
use crate::errors::ErrorKind;
use crate::output::{Record, Rfc3339};
use crate::requisite::Memo;

use super::*;
use crate::output::Revisit;
use crate::snapshot::{self, FailedHost, LATENCY_BUCKETS};

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
    pub(crate) latency: Latency,
    /// In a recrawl, records by what became of their page, by [`Revisit`] as a number.
    pub(crate) revisits: [AtomicU64; 4],
    /// Pages that answered 304 Not Modified, and the bytes the earlier crawl read of them.
    pub(crate) not_modified: AtomicU64,
    pub(crate) bytes_unsent: AtomicU64,
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

/// How long the recorded fetches took (the last try, request to end of body), by
/// [`LATENCY_BUCKETS`].
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Records per bucket, then above the last.
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    /// The sum of the times, in microseconds.
    sum_micros: AtomicU64,
}

impl Latency {
    pub(crate) fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|&le| seconds <= le)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }

    /// The histogram now.
    pub(crate) fn snapshot(&self) -> snapshot::Latency {
        snapshot::Latency {
            buckets: std::array::from_fn(|i| self.buckets[i].load(Ordering::Relaxed)),
            sum: Duration::from_micros(self.sum_micros.load(Ordering::Relaxed)),
        }
    }
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

/// A draft of a URL's record: what an attempt at it produced, before the frontier says whether
/// the attempt is final (a retry gets no record).
pub(super) struct Draft<'a> {
    pub(super) status: Option<u16>,
    pub(super) error: Option<ErrorKind>,
    /// What exactly failed, in words (the OS error, the resolver's answer).
    pub(super) detail: Option<String>,
    pub(super) content_type: Option<&'a str>,
    pub(super) bytes: u64,
    pub(super) links: u64,
    pub(super) redirect: Option<String>,
    pub(super) canonical: Option<String>,
    /// The response's `Last-Modified` header.
    pub(super) last_modified: Option<&'a str>,
    /// The response's `ETag` header.
    pub(super) etag: Option<&'a str>,
    /// In a recrawl, what became of the page since the earlier crawl.
    pub(super) revisit: Option<Revisit>,
    /// A 304's: the earlier crawl's digest of the body not sent again, and its bytes.
    pub(super) unsent: Option<(Option<DigestText>, u64)>,
    /// The body's digest, with an answer.
    pub(super) digest: Option<DigestText>,
    /// The body was read before under another URL.
    pub(super) duplicate: bool,
}

impl Draft<'_> {
    /// No answer, for a reason the kind says all of.
    pub(super) fn error(kind: ErrorKind) -> Self {
        Draft {
            status: None,
            error: Some(kind),
            detail: None,
            content_type: None,
            bytes: 0,
            links: 0,
            redirect: None,
            canonical: None,
            last_modified: None,
            etag: None,
            revisit: None,
            unsent: None,
            digest: None,
            duplicate: false,
        }
    }

    /// No answer, with what exactly failed.
    pub(super) fn failed(kind: ErrorKind, detail: String) -> Self {
        Draft {
            detail: Some(detail),
            ..Draft::error(kind)
        }
    }
}

/// What a record needs of a lease, kept when the lease goes back to the frontier.
pub(super) struct LeaseRecord {
    url: String,
    host: String,
    /// Tries made: the lease's attempt number, unless it was handed out only to be
    /// recorded, when no try was made.
    attempts: u32,
    depth: u32,
    /// The page whose link led here, if known.
    from: Option<String>,
    /// A page requisite (fetched because a page needs it to render).
    requisite: bool,
}

impl LeaseRecord {
    pub(super) fn of(lease: &Lease) -> Self {
        LeaseRecord {
            url: lease.url().as_str().to_owned(),
            host: lease.url().host_key().to_owned(),
            attempts: lease.attempts() - u32::from(lease.host_given_up()),
            depth: lease.depth(),
            from: lease.referrer().map(str::to_owned),
            requisite: Memo::is_requisite(lease.memo()),
        }
    }
}

impl Crawler {
    /// Writes the record of a lease that has been completed, if its URL is done with: what
    /// [`Lease::complete`](crate::backend::Lease::complete) runs with the completion, as one step with it.
    pub(super) fn record(
        &self,
        lease: &LeaseRecord,
        completion: Result<frontier::Completion, frontier::ForeignLease>,
        mut result: Draft<'_>,
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
                self.pace.give_back();
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
        let lastmod = self.leads.sitemaps.take_lastmod(&lease.url);
        let took = backend::now().saturating_duration_since(started);
        let digest = result.digest.as_ref().map(DigestText::as_str);
        // A page not sent again keeps the digest of the body the earlier crawl read.
        let digest = digest.or(result
            .unsent
            .as_ref()
            .and_then(|(digest, _)| digest.as_ref())
            .filter(|_| self.config.output.digest)
            .map(DigestText::as_str));
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
            last_modified: result.last_modified,
            etag: result.etag,
            revisit: result.revisit,
            fetched_at: Rfc3339(fetched_at),
            digest,
            duplicate: result.duplicate,
            requisite: lease.requisite,
        };
        if lease.requisite
            && let Some(requisites) = &self.leads.requisites
        {
            requisites.note_recorded();
        }
        let class = result.status.map_or(0, |s| usize::from(s / 100).min(5));
        self.stats.by_class[class].fetch_add(1, Ordering::Relaxed);
        self.stats.bytes.fetch_add(result.bytes, Ordering::Relaxed);
        if let Some(kind) = error {
            self.stats.count_error(kind);
        }
        let failure = error.map(|kind| (kind, result.detail.as_deref().unwrap_or_default()));
        self.stats.tally(&lease.host, result.status, failure);
        self.stats.records.fetch_add(1, Ordering::Relaxed);
        if let Some(revisit) = result.revisit {
            self.stats.revisits[revisit as usize].fetch_add(1, Ordering::Relaxed);
        }
        if let Some((_, bytes)) = &result.unsent {
            let bytes = *bytes;
            self.stats.not_modified.fetch_add(1, Ordering::Relaxed);
            self.stats.bytes_unsent.fetch_add(bytes, Ordering::Relaxed);
        }
        if result.status.is_some() {
            self.stats.latency.observe(took);
        }
        if !self.outputs.write(&record) {
            self.stop();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latencies_fall_in_their_buckets() {
        let latency = Latency::default();
        latency.observe(Duration::from_millis(3));
        latency.observe(Duration::from_millis(80));
        latency.observe(Duration::from_secs(60));
        let counts = latency.snapshot();
        assert_eq!(counts.buckets[0], 1); // <= 5 ms
        assert_eq!(counts.buckets[4], 1); // <= 100 ms
        assert_eq!(counts.buckets[LATENCY_BUCKETS.len()], 1); // +Inf
        assert_eq!(counts.buckets.iter().sum::<u64>(), 3);
        assert_eq!(counts.sum, Duration::from_micros(60_083_000));
    }
}
