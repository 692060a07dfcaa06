//! A queued URL: what a host's queue holds of it (its URL, depth, attempts, the page that
//! led to it, the caller's memo), and how it is written to spill files and checkpoints.

use std::sync::Arc;

use crate::Canonical;
use crate::codec::{Reader, put_bytes, put_varint};

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
