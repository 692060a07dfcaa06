//! The journal: what changed since the last checkpoint, so that a crash costs the work of
//! one sync interval instead of everything since that checkpoint.
//!
//! # What it holds
//!
//! One entry per URL admitted (its depth, the page whose link led to it when there is one,
//! and its canonical text) and one per URL done with (its fate: succeeded, failed,
//! exhausted, dropped with its host). Admissions journaled by versions before referrers
//! replay with their referrer unknown. Retries, crawl delays and
//! back-offs are not journaled: after a crash a retried URL is tried again with the attempt
//! count of the checkpoint, and hosts start with the politeness state the checkpoint held.
//!
//! # Files and order of writes
//!
//! `journal-G.log` in the checkpoint directory holds what happened after checkpoint
//! generation `G` (0: no checkpoint yet). Entries are appended in memory as they happen
//! and written by [`Frontier::write_journal`](crate::Frontier::write_journal), which
//! appends them to the file and flushes it to disk (`fdatasync`): group commit, at the
//! caller's interval. A checkpoint makes the journal before it obsolete: once its manifest
//! is on disk, new entries go to the next generation's file and the old file is deleted.
//! A batch taken before a checkpoint and written after it is dropped: the checkpoint holds
//! what it says.
//!
//! # Framing and damage
//!
//! Each write is one batch: `JRNB`, `length: u32 LE`, `CRC-32C of the entries: u32 LE`, then
//! the entries, each `length: u32 LE`, `CRC-32C of the payload: u32 LE`, the payload. A batch
//! is flushed to disk before the next is written, so only the last one can be damaged by a
//! crash or a power loss (cut short, or with blocks of zeros where the disk had not written
//! yet). On replay, batches are read in order up to the first that does not check out:
//!
//! * if no whole, good batch follows it, it is a *torn tail*: cut off, reported, and the
//!   journal goes on from there;
//! * otherwise good batches follow a bad one: the file was damaged after it was written, and
//!   [`DiskErrorKind::CorruptAt`] names the file and the offset; nothing is skipped silently.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, PoisonError};

use crate::codec::{Reader, le_u32, put_bytes, put_varint};
use crate::queues::Fate;
use crate::{DiskError, DiskErrorKind};

/// Bytes before each entry's payload: its length and checksum.
const HEADER: usize = 8;
/// What starts each batch, then its length and checksum.
const BATCH_MAGIC: &[u8; 4] = b"JRNB";
/// Bytes before a batch's entries.
const BATCH_HEADER: usize = 12;
/// The largest payload: a kind, a depth and a URL far longer than any canonical URL admitted.
const MAX_PAYLOAD: usize = 1 << 20;

/// An admission without a referrer: a seed, or an entry of a version before referrers.
const ADMIT: u8 = 1;
const DONE: u8 = 2;
/// An admission with the page whose link led to the URL.
const ADMIT_FROM: u8 = 3;
/// An admission with a memo (and a referrer when it has one): the memo, length-prefixed,
/// follows the depth, then the referrer's tag (0: none, 1: its text follows).
const ADMIT_MEMO: u8 = 4;

/// The journal file of checkpoint generation `generation`.
pub(crate) fn file_name(generation: u64) -> String {
    format!("journal-{generation}.log")
}

/// The generation of a journal file's name, if it is one.
pub(crate) fn parse_name(name: &str) -> Option<u64> {
    name.strip_prefix("journal-")?
        .strip_suffix(".log")?
        .parse()
        .ok()
}

/// One journal entry, borrowing its URL from the file's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Entry<'a> {
    /// A URL admitted as new, at this depth, found on page `from` if known, queued with
    /// `memo` if any.
    Admit {
        depth: u32,
        from: Option<&'a str>,
        memo: Option<&'a [u8]>,
        url: &'a str,
    },
    /// A URL done with, whatever became of it.
    Done { fate: Fate, url: &'a str },
}

/// Entries taken from a frontier's journal to be written: see
/// [`Frontier::journal_batch`](crate::Frontier::journal_batch).
#[derive(Debug, Default)]
#[must_use = "a batch is written by Frontier::write_journal; dropped, its entries are lost"]
pub struct JournalBatch {
    /// The checkpoint generation the entries follow.
    generation: u64,
    bytes: Vec<u8>,
    entries: u64,
}

impl JournalBatch {
    /// How many entries it holds.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// assert_eq!(frontier.journal_batch().len(), 0); // no journal: nothing to write
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn len(&self) -> u64 {
        self.entries
    }

    /// Whether it holds no entry.
    ///
    /// # Example
    ///
    /// ```
    /// let frontier = frontier::Frontier::builder().build()?;
    /// assert!(frontier.journal_batch().is_empty());
    /// # Ok::<(), frontier::FrontierError>(())
    /// ```
    pub fn is_empty(&self) -> bool {
        self.entries == 0
    }
}

/// What opening a frontier found in its journal.
///
/// # Example
///
/// ```
/// let frontier = frontier::Frontier::builder().build()?;
/// assert_eq!(frontier.replayed(), None); // no journal
/// # Ok::<(), frontier::FrontierError>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct Replayed {
    /// The journal file read.
    pub path: PathBuf,
    /// Entries replayed.
    pub entries: u64,
    /// Of those, URLs admitted, and URLs done with.
    pub admitted: u64,
    /// URLs done with.
    pub done: u64,
    /// Bytes of a torn last entry cut off the end (a crash in the middle of a write).
    pub torn_bytes: u64,
}

/// The journal of a frontier.
#[derive(Debug)]
pub(crate) struct Journal {
    dir: PathBuf,
    /// Entries appended since the last batch was taken.
    pending: Mutex<JournalBatch>,
    /// The file batches go to, with its generation; opened when first written to.
    file: Mutex<Option<(u64, File)>>,
}

impl Journal {
    /// A journal in `dir` following checkpoint generation `generation`.
    pub(crate) fn new(dir: PathBuf, generation: u64) -> Journal {
        Journal {
            dir,
            pending: Mutex::new(JournalBatch {
                generation,
                ..JournalBatch::default()
            }),
            file: Mutex::new(None),
        }
    }

    /// The directory of the journal's files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// Appends an entry, to be written with the next batch.
    pub(crate) fn append(&self, entry: Entry<'_>) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        encode(entry, &mut pending.bytes);
        pending.entries += 1;
    }

    /// Takes the entries appended so far.
    pub(crate) fn take(&self) -> JournalBatch {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        let generation = pending.generation;
        std::mem::replace(
            &mut *pending,
            JournalBatch {
                generation,
                ..JournalBatch::default()
            },
        )
    }

    /// Starts the journal of a new checkpoint generation: entries pending belong to the
    /// checkpoint just written, which holds their effects.
    pub(crate) fn rotate(&self, generation: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        *pending = JournalBatch {
            generation,
            ..JournalBatch::default()
        };
    }

    /// Puts a batch back in front of the entries appended since it was taken, to be written
    /// with the next one: its entries must not be skipped while later ones are written (a
    /// completion on disk without the admissions before it would lose those URLs). A batch of
    /// an older generation is dropped: the checkpoint after it holds it.
    pub(crate) fn put_back(&self, batch: JournalBatch) {
        let mut pending = self.pending.lock().unwrap_or_else(PoisonError::into_inner);
        if batch.generation != pending.generation || batch.bytes.is_empty() {
            return;
        }
        let mut bytes = batch.bytes;
        bytes.extend_from_slice(&pending.bytes);
        pending.bytes = bytes;
        pending.entries += batch.entries;
    }

    /// Appends a batch to its generation's file and flushes it to disk. A batch of a
    /// generation older than the current one is dropped: the checkpoint after it holds it.
    /// On failure the file is cut back to where it was and the batch put back, so that the
    /// next write tries it again and the file never holds a broken entry before good ones.
    pub(crate) fn write(&self, batch: JournalBatch) -> Result<(), DiskError> {
        let current = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .generation;
        if batch.generation < current || batch.bytes.is_empty() {
            return Ok(());
        }
        let mut file = self.file.lock().unwrap_or_else(PoisonError::into_inner);
        let path = self.dir.join(file_name(batch.generation));
        if file.as_ref().is_none_or(|(g, _)| *g != batch.generation) {
            fs::create_dir_all(&self.dir).map_err(|e| DiskError::io(&self.dir, e))?;
            let opened = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&path)
                .map_err(|e| DiskError::io(&path, e))?;
            // The file's name must be on disk with its first entries.
            sync_dir(&self.dir)?;
            *file = Some((batch.generation, opened));
        }
        let (_, out) = file.as_mut().expect("opened above");
        let before = out.metadata().map(|m| m.len());
        let written = out
            .write_all(&frame(&batch.bytes))
            .and_then(|()| out.sync_data());
        if let Err(err) = written {
            if let Ok(len) = before {
                // Best effort: a file that cannot be cut is reopened and checked on resume.
                let _ = out.set_len(len);
            } else {
                *file = None;
            }
            drop(file);
            self.put_back(batch);
            return Err(DiskError::io(&path, err));
        }
        Ok(())
    }
}

fn sync_dir(dir: &Path) -> Result<(), DiskError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| DiskError::io(dir, e))
}

fn encode(entry: Entry<'_>, out: &mut Vec<u8>) {
    let start = out.len();
    out.extend_from_slice(&[0; HEADER]);
    match entry {
        Entry::Admit {
            depth,
            from,
            memo: None,
            url,
        } => {
            out.push(if from.is_some() { ADMIT_FROM } else { ADMIT });
            put_varint(out, depth.into());
            if let Some(from) = from {
                put_bytes(out, from.as_bytes());
            }
            out.extend_from_slice(url.as_bytes());
        }
        Entry::Admit {
            depth,
            from,
            memo: Some(memo),
            url,
        } => {
            out.push(ADMIT_MEMO);
            put_varint(out, depth.into());
            put_bytes(out, memo);
            match from {
                None => out.push(0),
                Some(from) => {
                    out.push(1);
                    put_bytes(out, from.as_bytes());
                }
            }
            out.extend_from_slice(url.as_bytes());
        }
        Entry::Done { fate, url } => {
            out.push(DONE);
            out.push(fate_code(fate));
            out.extend_from_slice(url.as_bytes());
        }
    }
    let payload = &out[start + HEADER..];
    let len = u32::try_from(payload.len()).expect("a URL under 4 GiB");
    let crc = crc32c::crc32c(payload);
    out[start..start + 4].copy_from_slice(&len.to_le_bytes());
    out[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
}

fn fate_code(fate: Fate) -> u8 {
    match fate {
        Fate::Succeeded => 1,
        Fate::Failed => 2,
        Fate::Exhausted => 3,
        // Retries are not journaled; any other final fate is the host's.
        _ => 4,
    }
}

fn fate_of(code: u8) -> Option<Fate> {
    Some(match code {
        1 => Fate::Succeeded,
        2 => Fate::Failed,
        3 => Fate::Exhausted,
        4 => Fate::DroppedWithHost,
        _ => return None,
    })
}

fn decode(payload: &[u8]) -> Option<Entry<'_>> {
    let (&kind, rest) = payload.split_first()?;
    match kind {
        ADMIT | ADMIT_FROM | ADMIT_MEMO => {
            let mut reader = Reader::new(rest);
            let depth = u32::try_from(reader.varint()?).ok()?;
            let (from, memo) = match kind {
                ADMIT_FROM => (Some(reader.str()?), None),
                ADMIT_MEMO => {
                    let memo = reader.bytes()?;
                    let from = match reader.take(1)? {
                        [0] => None,
                        [1] => Some(reader.str()?),
                        _ => return None,
                    };
                    (from, Some(memo))
                }
                _ => (None, None),
            };
            let url = std::str::from_utf8(reader.take(reader.remaining())?).ok()?;
            Some(Entry::Admit {
                depth,
                from,
                memo,
                url,
            })
        }
        DONE => {
            let (&code, url) = rest.split_first()?;
            Some(Entry::Done {
                fate: fate_of(code)?,
                url: std::str::from_utf8(url).ok()?,
            })
        }
        _ => None,
    }
}

/// A batch's entries with the batch header before them.
fn frame(entries: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(BATCH_HEADER + entries.len());
    out.extend_from_slice(BATCH_MAGIC);
    let len = u32::try_from(entries.len()).expect("a batch under 4 GiB");
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(entries).to_le_bytes());
    out.extend_from_slice(entries);
    out
}

/// The entries of the batch at `at`, and the offset after it, if it checks out.
fn batch_at(bytes: &[u8], at: usize) -> Option<(&[u8], usize)> {
    let header = bytes.get(at..at + BATCH_HEADER)?;
    if &header[..4] != BATCH_MAGIC {
        return None;
    }
    let len = le_u32(header, 4) as usize;
    let entries = bytes.get(at + BATCH_HEADER..(at + BATCH_HEADER).checked_add(len)?)?;
    (crc32c::crc32c(entries) == le_u32(header, 8)).then_some((entries, at + BATCH_HEADER + len))
}

/// The entries of a journal file's bytes, and where the good ones end: a torn tail after
/// that offset is for the caller to cut.
///
/// # Errors
///
/// [`DiskErrorKind::CorruptAt`] when a batch that does not check out has a good batch after
/// it: not what a crash leaves.
pub(crate) fn read<'b>(path: &Path, bytes: &'b [u8]) -> Result<(Vec<Entry<'b>>, usize), DiskError> {
    let mut entries = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some((batch, next)) = batch_at(bytes, at) else {
            // A crash leaves damage in the last batch only.
            let later = (at + 1..bytes.len()).any(|from| batch_at(bytes, from).is_some());
            if later {
                return Err(DiskError::new(
                    path,
                    DiskErrorKind::CorruptAt {
                        offset: at as u64,
                        what: "a journal batch that does not check out, with good ones after it",
                    },
                ));
            }
            return Ok((entries, at));
        };
        entries.extend(read_entries(path, batch, at + BATCH_HEADER)?);
        at = next;
    }
    Ok((entries, at))
}

/// The entries of one batch (whose checksum held), found at `offset` in the file.
fn read_entries<'b>(
    path: &Path,
    bytes: &'b [u8],
    offset: usize,
) -> Result<Vec<Entry<'b>>, DiskError> {
    let mut entries = Vec::new();
    let mut at = 0;
    while at < bytes.len() {
        let Some((entry, next)) = entry_at(bytes, at) else {
            // The batch's checksum held: these are the bytes written, and they are wrong.
            return Err(DiskError::new(
                path,
                DiskErrorKind::CorruptAt {
                    offset: (offset + at) as u64,
                    what: "a journal entry this version cannot read",
                },
            ));
        };
        entries.push(entry);
        at = next;
    }
    Ok(entries)
}

/// The entry at `at` and the offset after it, if it checks out.
fn entry_at(bytes: &[u8], at: usize) -> Option<(Entry<'_>, usize)> {
    let header = bytes.get(at..at + HEADER)?;
    let len = le_u32(header, 0) as usize;
    let crc = le_u32(header, 4);
    if len == 0 || len > MAX_PAYLOAD {
        return None;
    }
    let payload = bytes.get(at + HEADER..at + HEADER + len)?;
    if crc32c::crc32c(payload) != crc {
        return None;
    }
    Some((decode(payload)?, at + HEADER + len))
}

/// Reads the journal of `generation` in `dir`, cutting a torn tail off the file. `None`
/// when there is no such file.
pub(crate) fn load(
    dir: &Path,
    generation: u64,
) -> Result<Option<(PathBuf, Vec<u8>, u64)>, DiskError> {
    let path = dir.join(file_name(generation));
    let bytes = match fs::read(&path) {
        Ok(bytes) => bytes,
        Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
        Err(err) => return Err(DiskError::io(&path, err)),
    };
    let (_, good) = read(&path, &bytes)?;
    let torn = (bytes.len() - good) as u64;
    if torn > 0 {
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(|e| DiskError::io(&path, e))?;
        file.set_len(good as u64)
            .and_then(|()| file.sync_all())
            .map_err(|e| DiskError::io(&path, e))?;
    }
    let mut bytes = bytes;
    bytes.truncate(good);
    Ok(Some((path, bytes, torn)))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A journal file of `entries`, one batch each, as one sync per entry writes it.
    fn journal(entries: &[Entry<'_>]) -> Vec<u8> {
        let mut bytes = Vec::new();
        for &entry in entries {
            let mut batch = Vec::new();
            encode(entry, &mut batch);
            bytes.extend_from_slice(&frame(&batch));
        }
        bytes
    }

    const ENTRIES: [Entry<'static>; 3] = [
        Entry::Admit {
            depth: 3,
            from: None,
            memo: None,
            url: "http://a.example/x",
        },
        Entry::Done {
            fate: Fate::Exhausted,
            url: "http://a.example/x",
        },
        Entry::Admit {
            depth: 1,
            from: Some("https://b.example/"),
            memo: None,
            url: "https://b.example/c",
        },
    ];

    #[test]
    fn admissions_with_memos_read_back_as_written() {
        let entries = [
            Entry::Admit {
                depth: 0,
                from: None,
                memo: Some(b"\x00etag \"1\""),
                url: "https://c.example/",
            },
            Entry::Admit {
                depth: 2,
                from: Some("https://c.example/"),
                memo: Some(b""),
                url: "https://c.example/d",
            },
        ];
        let bytes = journal(&entries);
        let (read_back, end) = read(Path::new("j"), &bytes).unwrap();
        assert_eq!(read_back, entries);
        assert_eq!(end, bytes.len());
    }

    #[test]
    fn entries_read_back_as_written() {
        let bytes = journal(&ENTRIES);
        let (read_back, end) = read(Path::new("j"), &bytes).unwrap();
        assert_eq!(read_back, ENTRIES);
        assert_eq!(end, bytes.len());
    }

    #[test]
    fn a_tail_cut_at_any_byte_is_torn_and_the_entries_before_it_stay() {
        let bytes = journal(&ENTRIES);
        let whole_two = journal(&ENTRIES[..2]).len();
        for cut in whole_two..bytes.len() {
            let (read_back, end) = read(Path::new("j"), &bytes[..cut]).unwrap();
            assert_eq!(read_back, ENTRIES[..2], "cut at {cut}");
            assert_eq!(end, whole_two);
        }
        // Zeros after the good entries, as a crash can leave a file extended but unwritten.
        let mut zeros = journal(&ENTRIES[..2]);
        zeros.extend_from_slice(&[0; 100]);
        assert_eq!(read(Path::new("j"), &zeros).unwrap().1, whole_two);
    }

    #[test]
    fn a_flipped_byte_before_the_tail_is_refused_with_its_offset() {
        let bytes = journal(&ENTRIES);
        let second = journal(&ENTRIES[..1]).len();
        let mut damaged = bytes.clone();
        damaged[second + BATCH_HEADER + HEADER + 2] ^= 0x40;
        let err = read(Path::new("journal-7.log"), &damaged).unwrap_err();
        assert_eq!(err.path(), Path::new("journal-7.log"));
        assert!(
            matches!(err.kind(), DiskErrorKind::CorruptAt { offset, .. } if *offset == second as u64),
            "{err}"
        );
        // The same damage in the last entry is a torn tail.
        let last = journal(&ENTRIES[..2]).len();
        let mut tail = bytes;
        tail[last + BATCH_HEADER + HEADER + 2] ^= 0x40;
        assert_eq!(read(Path::new("j"), &tail).unwrap().1, last);
    }

    /// Regression (review): a power loss can leave zeros in the middle of the last write,
    /// with its later bytes on disk. That is a torn tail, not damage: no good batch follows.
    #[test]
    fn zeros_inside_the_last_batch_are_a_torn_tail() {
        let mut batch = Vec::new();
        for &entry in &ENTRIES {
            encode(entry, &mut batch);
        }
        let mut bytes = journal(&ENTRIES[..1]);
        let good = bytes.len();
        let mut last = frame(&batch);
        last[BATCH_HEADER..BATCH_HEADER + 20].fill(0);
        bytes.extend_from_slice(&last);
        let (entries, end) = read(Path::new("j"), &bytes).unwrap();
        assert_eq!((entries.len(), end), (1, good));
        // A block of zeros where the last batch's header was, its entries after it.
        let mut bytes = journal(&ENTRIES[..1]);
        let mut last = frame(&batch);
        last[..BATCH_HEADER].fill(0);
        bytes.extend_from_slice(&last);
        assert_eq!(read(Path::new("j"), &bytes).unwrap().1, good);
    }

    /// A batch that could not be written goes back before the entries appended since, so
    /// that no completion is ever written before the admissions that came before it.
    #[test]
    fn a_batch_put_back_is_written_first_next_time() {
        let journal = Journal::new(PathBuf::from("unused"), 3);
        journal.append(ENTRIES[0]);
        let batch = journal.take();
        journal.append(ENTRIES[1]);
        journal.put_back(batch);
        let next = journal.take();
        assert_eq!(next.len(), 2);
        let entries = read_entries(Path::new("j"), &next.bytes, 0).unwrap();
        assert_eq!(entries, ENTRIES[..2]);
        // A batch of an older generation is covered by the checkpoint after it: dropped.
        journal.append(ENTRIES[2]);
        let old = journal.take();
        journal.rotate(4);
        journal.put_back(old);
        assert!(journal.take().is_empty());
    }

    /// Journals written before admissions carried referrers still replay: their entries
    /// (kind 1: depth, then the URL) read as admissions whose referrer is unknown.
    #[test]
    fn an_admission_without_a_referrer_reads_as_older_versions_wrote_it() {
        let mut payload = vec![ADMIT];
        put_varint(&mut payload, 7);
        payload.extend_from_slice(b"http://a.example/old");
        let mut batch = vec![0; HEADER];
        batch.extend_from_slice(&payload);
        batch[..4].copy_from_slice(&(payload.len() as u32).to_le_bytes());
        batch[4..8].copy_from_slice(&crc32c::crc32c(&payload).to_le_bytes());
        let file = frame(&batch);
        let (entries, _) = read(Path::new("j"), &file).unwrap();
        let old = Entry::Admit {
            depth: 7,
            from: None,
            memo: None,
            url: "http://a.example/old",
        };
        assert_eq!(entries, [old]);
        // And this version writes a seed's admission the same way.
        let mut again = Vec::new();
        encode(old, &mut again);
        assert_eq!(again, batch);
    }

    #[test]
    fn names_carry_the_generation() {
        assert_eq!(parse_name(&file_name(42)), Some(42));
        assert_eq!(parse_name("journal-x.log"), None);
        assert_eq!(parse_name("state-3.bin"), None);
    }
}
