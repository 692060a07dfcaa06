//! One host's state: its waiting URLs and its politeness bookkeeping.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use super::entry::Entry;
use super::spill::{RUN_URLS, RunRef, SpillStore};
use crate::DiskError;

/// One host's waiting URLs, first in, first out: a head in memory (`front`), then, once
/// some have spilled, a chain of runs on disk and a tail in memory (`back`).
#[derive(Debug, Default)]
pub(crate) struct HostQueue {
    pub(crate) front: VecDeque<Entry>,
    /// Boxed: most hosts never spill, and the box keeps them eight bytes bigger, not fifty.
    pub(crate) spilled: Option<Box<Spilled>>,
}

/// The part of a host's queue behind its in-memory head.
#[derive(Debug)]
pub(crate) struct Spilled {
    /// The first and last of the host's runs on disk, linked first to last.
    pub(crate) first: RunRef,
    pub(crate) last: RunRef,
    pub(crate) runs: u64,
    /// URLs in the runs.
    pub(crate) urls: u64,
    /// URLs queued after the runs were written, in memory until the next eviction.
    pub(crate) back: VecDeque<Entry>,
}

/// What an eviction will do to one host once its runs are written.
#[derive(Debug)]
pub(super) struct Eviction {
    /// URLs kept at the head of `front`.
    keep: usize,
    first: RunRef,
    last: RunRef,
    runs: u64,
    urls: u64,
    /// URLs moved to disk.
    pub(super) moved: u64,
    /// Bytes the URLs moved to disk took in memory.
    pub(super) bytes: usize,
}

impl HostQueue {
    pub(super) fn push_back(&mut self, entry: Entry) {
        match &mut self.spilled {
            Some(spilled) => spilled.back.push_back(entry),
            None => self.front.push_back(entry),
        }
    }

    /// Puts back a URL whose lease was abandoned: it was next in line.
    pub(super) fn push_front(&mut self, entry: Entry) {
        self.front.push_front(entry);
    }

    /// Takes the first URL in memory; `None` when the head is empty, though URLs may wait on
    /// disk ([`refill`](Self::refill) them).
    pub(super) fn pop_front(&mut self) -> Option<Entry> {
        self.front.pop_front()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.front.is_empty() && self.spilled.is_none()
    }

    /// URLs waiting in memory.
    pub(super) fn in_memory(&self) -> usize {
        self.front.len() + self.spilled.as_ref().map_or(0, |s| s.back.len())
    }

    /// Brings the first run on disk into the empty head, or, when no runs are left, the
    /// tail. Returns the bytes read into memory and, on failure, the error with the number
    /// of URLs lost: each run holds the link to the next, so when one cannot be read the
    /// URLs behind it cannot be reached any more. The tail is kept either way.
    pub(super) fn refill(&mut self, store: &mut SpillStore) -> (usize, Option<(DiskError, u64)>) {
        debug_assert!(self.front.is_empty());
        let Some(spilled) = &mut self.spilled else {
            return (0, None);
        };
        let mut loaded = Vec::new();
        let run = spilled.first;
        let read = store.read(run, &mut loaded).and_then(|next| {
            // A run holds at least one URL, and no more than the host has on disk: counts
            // that disagree mean the state was not written by these queues.
            if loaded.is_empty() || loaded.len() as u64 > spilled.urls {
                let path = SpillStore::segment_path(store.dir(), run.segment);
                return Err(DiskError::corrupt(
                    path,
                    "a run's URL count disagrees with the queue's",
                ));
            }
            Ok(next)
        });
        let next = match read {
            Ok(next) => next,
            Err(err) => {
                let lost = spilled.urls;
                self.front = std::mem::take(&mut spilled.back);
                self.spilled = None;
                return (0, Some((err, lost)));
            }
        };
        store.release(run);
        spilled.runs -= 1;
        spilled.urls -= loaded.len() as u64;
        let bytes: usize = loaded.iter().map(Entry::bytes).sum();
        self.front.extend(loaded);
        let failure = match next {
            _ if spilled.runs == 0 && spilled.urls > 0 => Some((
                DiskError::corrupt(
                    SpillStore::segment_path(store.dir(), run.segment),
                    "a host's last run ends before its URLs do",
                ),
                spilled.urls,
            )),
            _ if spilled.runs == 0 => None,
            Some(next) => {
                spilled.first = next;
                return (bytes, None);
            }
            // The file at fault is the one holding the run whose link is broken.
            None => Some((
                DiskError::corrupt(
                    SpillStore::segment_path(store.dir(), run.segment),
                    "a spilled run lost its link to the next",
                ),
                spilled.urls,
            )),
        };
        self.front.append(&mut spilled.back);
        self.spilled = None;
        (bytes, failure)
    }

    /// Stages the runs that move the head beyond its first `keep_bytes` (counted by
    /// [`Entry::bytes`]), and the whole tail, to disk; [`apply`](Self::apply) the result once
    /// the store has committed. `None` when there is nothing to move.
    pub(super) fn stage_eviction(
        &self,
        keep_bytes: usize,
        store: &mut SpillStore,
    ) -> Result<Option<Eviction>, DiskError> {
        let mut kept = 0;
        let keep = self
            .front
            .iter()
            .take_while(|entry| {
                kept += entry.bytes();
                kept <= keep_bytes
            })
            .count();
        let head = self.front.len().saturating_sub(keep);
        let tail = self.spilled.as_ref().map_or(0, |s| s.back.len());
        if head == 0 && tail == 0 {
            return Ok(None);
        }
        let mut bytes = 0;
        let old = self.spilled.as_deref();
        // The tail's runs, last first, so that each knows its successor.
        let mut tail_first = None;
        let mut tail_last = None;
        let mut runs = 0u64;
        if let Some(spilled) = old {
            let back: Vec<&Entry> = spilled.back.iter().collect();
            for chunk in back.chunks(RUN_URLS).rev() {
                let run = store.stage(chunk.iter().copied(), tail_first)?;
                tail_last.get_or_insert(run);
                tail_first = Some(run);
                runs += 1;
                bytes += chunk.iter().map(|e| e.bytes()).sum::<usize>();
            }
            if let Some(first) = tail_first {
                store.link(spilled.last, first);
            }
        }
        // The head's runs go in front of everything on disk.
        let mut next = old.map(|s| s.first).or(tail_first);
        let mut head_last = None;
        let moved: Vec<&Entry> = self.front.iter().skip(keep).collect();
        for chunk in moved.chunks(RUN_URLS).rev() {
            let run = store.stage(chunk.iter().copied(), next)?;
            head_last.get_or_insert(run);
            next = Some(run);
            runs += 1;
            bytes += chunk.iter().map(|e| e.bytes()).sum::<usize>();
        }
        let first = next.expect("at least one run exists");
        let last = tail_last
            .or(old.map(|s| s.last))
            .or(head_last)
            .expect("at least one run exists");
        Ok(Some(Eviction {
            keep,
            first,
            last,
            runs: runs + old.map_or(0, |s| s.runs),
            urls: (head + tail) as u64 + old.map_or(0, |s| s.urls),
            moved: (head + tail) as u64,
            bytes,
        }))
    }

    /// Applies a committed eviction: the moved URLs leave memory.
    pub(super) fn apply(&mut self, eviction: Eviction) {
        self.front.truncate(eviction.keep);
        self.front.shrink_to_fit();
        self.spilled = Some(Box::new(Spilled {
            first: eviction.first,
            last: eviction.last,
            runs: eviction.runs,
            urls: eviction.urls,
            back: VecDeque::new(),
        }));
    }
}

/// Everything the frontier knows about one host.
#[derive(Debug, Default)]
pub(super) struct HostState {
    pub(super) queue: HostQueue,
    /// Leases of this host not yet completed.
    pub(super) in_flight: u32,
    /// When the host may be fetched next, and how its recent fetches went: the rules of
    /// [`HostRecord`](super::HostRecord).
    pub(super) record: super::HostRecord,
    /// The robots.txt `Crawl-delay`, already capped; zero when there is none.
    pub(super) crawl_delay: Duration,
    /// The host's own delay and connections, from the per-host policy; boxed, as most
    /// hosts have none and pay eight bytes for it.
    pub(super) own: Option<Box<super::HostPoliteness>>,
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
