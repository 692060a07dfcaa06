//! One host's state: its waiting URLs and its politeness bookkeeping.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::spill::{RUN_URLS, RunRef, SpillStore};
use crate::codec::{Reader, put_bytes, put_varint};
use crate::{Canonical, DiskError};

/// A URL waiting in its host's queue.
#[derive(Debug)]
pub(crate) struct Entry {
    /// Boxed, so that a queue's spare capacity costs 8 bytes a slot rather than 112: hosts
    /// with a URL or two in memory are the common case. Kept parsed, because parsing again
    /// at each lease would cost about 300 ns, a third of the URL's whole time in the
    /// frontier.
    pub(crate) item: Box<Item>,
    /// Links followed from a seed, handed back with the lease.
    pub(crate) depth: u32,
    /// The attempt its next lease is: 1 for a URL never tried.
    pub(crate) attempts: u32,
}

/// What an [`Entry`] keeps behind its box: the URL and the page that led to it.
#[derive(Debug)]
pub(crate) struct Item {
    pub(crate) url: Canonical,
    /// The page whose link led here; `None` for a seed, or when not known (a URL queued by
    /// a version that did not keep it). Shared: a page's links hold one copy of its URL
    /// between them (see [`Referrers`]), so a queued URL pays 16 bytes for it, not a text.
    pub(crate) from: Option<Arc<str>>,
    /// What the caller queued with the URL, handed back with its lease (see
    /// [`HostQueues::push_with`](crate::HostQueues::push_with)); shared with the lease's
    /// record for checkpoints.
    pub(crate) memo: Option<Memo>,
}

/// A memo behind a thin pointer: every queued URL pays 8 bytes for the memos of a few (a
/// recrawl's), not the 16 of a slice's pointer and length.
pub(crate) type Memo = Arc<Box<[u8]>>;

/// A memo as queued.
pub(crate) fn memo_of(bytes: &[u8]) -> Memo {
    Arc::new(bytes.into())
}

impl Entry {
    pub(crate) fn new(
        url: Canonical,
        from: Option<Arc<str>>,
        memo: Option<Memo>,
        depth: u32,
        attempts: u32,
    ) -> Entry {
        Entry {
            item: Box::new(Item { url, from, memo }),
            depth,
            attempts,
        }
    }

    /// What the entry takes in memory, as the spill budget counts it: itself, the parsed
    /// URL, the pointer to its referrer and its text, its memo (its bytes, its box and its
    /// count: about 64 besides), and the allocator's usual 16 bytes for each allocation. The referrer's text is shared by the links of a page, and
    /// not counted: a count that depended on how many hold it would change while queued.
    pub(crate) fn bytes(&self) -> usize {
        std::mem::size_of::<Entry>()
            + std::mem::size_of::<Item>()
            + self.item.url.as_str().len()
            + 32
            + self.item.memo.as_ref().map_or(0, |memo| memo.len() + 64)
    }

    /// Appends the entry's encoding: URL (length-prefixed), depth, attempts, referrer and
    /// memo (see [`encode_from`]).
    pub(crate) fn encode(&self, out: &mut Vec<u8>, previous: &mut Option<Arc<str>>) {
        encode_parts(out, self.item.url.as_str(), self.depth, self.attempts);
        encode_from(
            out,
            self.item.from.as_ref(),
            self.item.memo.as_deref().map(|memo| &**memo),
            previous,
        );
    }

    /// Reads an entry [`encode`](Self::encode) wrote; `None` if the bytes are not one, or
    /// not a canonical URL, or (when `host` is given) a URL of another host. `previous` is
    /// `None` for bytes written before entries carried referrers (their referrer is
    /// unknown), else the referrer of the entry before in the same sequence.
    pub(crate) fn decode(
        reader: &mut Reader<'_>,
        host: Option<&str>,
        previous: Option<&mut Option<Arc<str>>>,
    ) -> Option<Entry> {
        let text = reader.str()?;
        let url = Canonical::from_stored(text)?;
        if host.is_some_and(|host| url.host_key() != host) {
            return None;
        }
        let depth = reader.u32()?;
        let attempts = reader.u32()?;
        let (from, memo) = match previous {
            Some(previous) => decode_from(reader, previous)?,
            None => (None, None),
        };
        Some(Entry::new(url, from, memo, depth, attempts))
    }
}

/// Appends what [`Entry::encode`] writes first, from its parts.
pub(crate) fn encode_parts(out: &mut Vec<u8>, url: &str, depth: u32, attempts: u32) {
    put_bytes(out, url.as_bytes());
    put_varint(out, depth.into());
    put_varint(out, attempts.into());
}

/// No referrer.
const FROM_NONE: u64 = 0;
/// The referrer of the entry before, in the same run or checkpoint queue.
const FROM_SAME: u64 = 1;
/// A referrer's text follows, length-prefixed.
const FROM_TEXT: u64 = 2;
/// Added to the tag when a memo follows the referrer, length-prefixed. Entries written
/// before memos existed have none: their tags are the three above.
const WITH_MEMO: u64 = 4;

/// Appends a referrer and a memo: a tag, then the referrer's text unless the entry before
/// had the same one (the links of one page usually queue one after another, so a run of
/// them writes the page's URL once), then the memo if there is one. `previous` is the
/// referrer of the entry written before, updated.
pub(crate) fn encode_from(
    out: &mut Vec<u8>,
    from: Option<&Arc<str>>,
    memo: Option<&[u8]>,
    previous: &mut Option<Arc<str>>,
) {
    let with_memo = if memo.is_some() { WITH_MEMO } else { 0 };
    match from {
        None => put_varint(out, FROM_NONE | with_memo),
        Some(from) if previous.as_deref() == Some(&**from) => {
            put_varint(out, FROM_SAME | with_memo);
        }
        Some(from) => {
            put_varint(out, FROM_TEXT | with_memo);
            put_bytes(out, from.as_bytes());
            *previous = Some(Arc::clone(from));
        }
    }
    if let Some(memo) = memo {
        put_bytes(out, memo);
    }
}

/// A referrer and a memo, as queued.
type Tail = (Option<Arc<str>>, Option<Memo>);

/// Reads what [`encode_from`] wrote, sharing one text between entries that repeat it.
pub(crate) fn decode_from(
    reader: &mut Reader<'_>,
    previous: &mut Option<Arc<str>>,
) -> Option<Tail> {
    let tag = reader.varint()?;
    let from = match tag & !WITH_MEMO {
        FROM_NONE => None,
        FROM_SAME => Some(Arc::clone(previous.as_ref()?)),
        FROM_TEXT => {
            let from: Arc<str> = reader.str()?.into();
            *previous = Some(Arc::clone(&from));
            Some(from)
        }
        _ => return None,
    };
    let memo = match tag & WITH_MEMO {
        0 => None,
        _ => Some(memo_of(reader.bytes()?)),
    };
    Some((from, memo))
}

/// The referrers of the URLs pushed lately, so that the links of one page share one copy of
/// its URL however many of them are queued: pushes of one page's links come one after
/// another, interleaved at most with those of the other pages being worked on.
#[derive(Debug, Default)]
pub(crate) struct Referrers {
    recent: [Option<Arc<str>>; RECENT_REFERRERS],
    /// The slot the next new referrer takes.
    next: usize,
}

/// Referrers remembered: about the pages whose links are being pushed at once.
const RECENT_REFERRERS: usize = 16;

impl Referrers {
    /// `from` as a shared text: a copy already held when it is recent, else a new one.
    pub(crate) fn share(&mut self, from: &str) -> Arc<str> {
        // The most recent first: it is almost always the one.
        for i in 0..RECENT_REFERRERS {
            let slot = (self.next + RECENT_REFERRERS - 1 - i) % RECENT_REFERRERS;
            if let Some(known) = &self.recent[slot]
                && **known == *from
            {
                return Arc::clone(known);
            }
        }
        let shared: Arc<str> = from.into();
        self.recent[self.next] = Some(Arc::clone(&shared));
        self.next = (self.next + 1) % RECENT_REFERRERS;
        shared
    }
}

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

#[cfg(test)]
mod tests {
    /// What every queued URL pays in memory beside its parsed form and text: 16 bytes for its
    /// referrer's pointer (a text's), 8 for its memo's (a thin one); the README's figures.
    #[test]
    fn a_queued_url_pays_24_bytes_for_its_referrer_and_memo() {
        let canonical = std::mem::size_of::<crate::Canonical>();
        assert_eq!(std::mem::size_of::<super::Item>(), canonical + 24);
        assert_eq!(std::mem::size_of::<super::Entry>(), 16);
    }
}
