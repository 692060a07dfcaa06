//! One host's state: its waiting URLs and its politeness bookkeeping.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::Canonical;

/// A URL waiting in its host's queue.
#[derive(Debug)]
pub(super) struct Entry {
    pub(super) url: Canonical,
    /// Links followed from a seed, handed back with the lease.
    pub(super) depth: u32,
    /// The attempt its next lease is: 1 for a URL never tried.
    pub(super) attempts: u32,
}

/// One host's waiting URLs, first in, first out.
///
/// A type of its own, with only the operations the scheduler needs, so that spilling the
/// tail of a long queue to disk can be added here without touching the scheduling.
#[derive(Debug, Default)]
pub(super) struct HostQueue {
    urls: VecDeque<Entry>,
}

impl HostQueue {
    pub(super) fn push_back(&mut self, entry: Entry) {
        self.urls.push_back(entry);
    }

    /// Puts back a URL whose lease was abandoned: it was next in line.
    pub(super) fn push_front(&mut self, entry: Entry) {
        self.urls.push_front(entry);
    }

    pub(super) fn pop_front(&mut self) -> Option<Entry> {
        self.urls.pop_front()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.urls.is_empty()
    }

    /// Drops every waiting URL and frees the queue's memory, returning how many there were.
    pub(super) fn clear(&mut self) -> u64 {
        let n = self.urls.len() as u64;
        self.urls = VecDeque::new();
        n
    }
}

/// Everything the frontier knows about one host.
#[derive(Debug, Default)]
pub(super) struct HostState {
    pub(super) queue: HostQueue,
    /// Leases of this host not yet completed.
    pub(super) in_flight: u32,
    /// Failures since the last success; drives the back-off and giving up.
    pub(super) consecutive_errors: u32,
    /// Set once the host failed too often in a row; for good, as nothing tells the frontier
    /// that it came back.
    pub(super) given_up: bool,
    /// The earliest instant of the next lease start; `None` until the first lease.
    pub(super) next_allowed: Option<Instant>,
    /// When the last lease started, so that a longer `Crawl-delay` learnt while it is in
    /// flight still spaces the next start from it.
    pub(super) last_start: Option<Instant>,
    /// The robots.txt `Crawl-delay`, already capped; zero when there is none.
    pub(super) crawl_delay: Duration,
    /// The instant and sequence number of the host's live entry in the ready heap, if it
    /// has one. Entries carrying another number are stale: the lazy deletion of a binary
    /// heap. The instant lets a longer crawl delay move the entry without a search.
    pub(super) entry: Option<(Instant, u64)>,
}

impl HostState {
    /// Whether the heap entry numbered `seq` is the host's live one.
    pub(super) fn holds(&self, seq: u64) -> bool {
        self.entry.is_some_and(|(_, live)| live == seq)
    }
}
