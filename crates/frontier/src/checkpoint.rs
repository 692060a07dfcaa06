//! Checkpoints: a [`Frontier`](crate::Frontier) written to a directory, and opened from it.
//!
//! # What a checkpoint holds
//!
//! Everything needed to go on as if the process had never stopped, except the settings,
//! which the caller passes again to [`Frontier::open`](crate::Frontier::open): the seen-test's
//! filter with its hash key; admission's counters and the per-host page budget; every host's
//! politeness state (back-off, crawl delay, time left before its next fetch, given up or
//! not); every queued URL, in order, in memory or spilled; the leases in flight, which are
//! queued again on open, since their fetches may not have finished; and the queues' counters.
//!
//! # Files
//!
//! | file | content |
//! |------|---------|
//! | `MANIFEST` | magic, version, generation, and the name, length and CRC-32C of each file below |
//! | `filter-G.bloom` | the seen-test's filter, in the `bloom` crate's format |
//! | `state-G.bin` | counters, budget, hosts, queued URLs, leases in flight |
//! | `NNNNNNNNNN-gG.seg` | spill segments, hard links to the spill directory's files where possible |
//!
//! # Atomicity
//!
//! A checkpoint writes generation G+1 beside generation G: each file goes to a temporary
//! name, is flushed to disk (`fsync`) and renamed; the manifest goes last, the same way,
//! and its rename is the moment the new checkpoint replaces the old. Files of older
//! generations are deleted only after that. A crash at any point leaves either the old
//! manifest with all its files, or the new one with all of its: [`read`] never sees a mix.
//! Spill segments are shared between generations and the running frontier through hard
//! links, so a checkpoint costs no copy of them. The running frontier only appends to a
//! segment and sets the link field of a host's last run when it spills more of the host's
//! URLs; a restore reads each host's runs from its first for as many runs as the checkpoint
//! counted, so it never follows the link of the last, and both changes are invisible to it.
//! [`read`] copies the segments it needs (and checks every run's checksums on the way),
//! so that the restored frontier has files of its own and only one process ever writes to
//! a segment file.

use std::fs::{self, File};
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::Path;
use std::time::Instant;

use crate::codec::{Reader, put_bytes, put_varint};
use crate::queues::{SpillStore, link_or_copy};
use crate::{
    Admission, Canonicalizer, DiskError, DiskErrorKind, HostQueues, Politeness, ScopeRules,
    SpillSettings,
};

/// The manifest's name: the checkpoint's entry point.
pub(crate) const MANIFEST: &str = "MANIFEST";
const MANIFEST_MAGIC: &[u8; 8] = b"FRNTCKPT";
const STATE_MAGIC: &[u8; 8] = b"FRNTSTAT";
/// The manifest's format version, which this build reads and writes.
const VERSION: u32 = 1;
/// The state file's format version this build writes: 2 since queued URLs carry their
/// referrers. It reads version 1 too, whose URLs come back with their referrer unknown.
const STATE_VERSION: u32 = 2;
const TMP: &str = ".tmp";

/// A file of a checkpoint, as the manifest records it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct FileRecord {
    name: String,
    len: u64,
    crc: u32,
}

/// A spill segment of a checkpoint.
#[derive(Clone, Debug, PartialEq, Eq)]
struct SegmentRecord {
    id: u32,
    name: String,
    /// Bytes the checkpoint's runs lie within.
    len: u64,
    /// Runs not yet read back.
    live: u64,
}

#[derive(Debug)]
struct Manifest {
    generation: u64,
    filter: FileRecord,
    state: FileRecord,
    segments: Vec<SegmentRecord>,
}

/// Writes a checkpoint of `admission` and `queues` to `dir`; the caller has stopped every
/// change to both. Returns the generation put in place, and whether the directory's last
/// flush after the manifest's rename worked: once renamed, the new generation is the one a
/// reader opens, even if that flush failed.
pub(crate) fn write(
    dir: &Path,
    admission: &Admission,
    queues: &mut HostQueues,
    now: Instant,
) -> Result<(u64, Result<(), DiskError>), DiskError> {
    fs::create_dir_all(dir).map_err(|e| DiskError::io(dir, e))?;
    if let Some(parent) = dir.parent() {
        // A directory just created exists for sure only once its parent is on disk too.
        let _ = sync_dir(parent);
    }
    let previous = match read_manifest(dir) {
        Ok(manifest) => Some(manifest),
        Err(err) if matches!(err.kind(), DiskErrorKind::Io(e) if e.kind() == io::ErrorKind::NotFound) => {
            None
        }
        // Never write over what we cannot read: it may be another program's, or the only
        // copy of a crawl someone wants to rescue.
        Err(err) => return Err(err),
    };
    let generation = match &previous {
        None => 1,
        Some(m) => m.generation.checked_add(1).ok_or_else(|| {
            DiskError::corrupt(dir.join(MANIFEST), "generation at its largest value")
        })?,
    };

    let filter = write_file(dir, &format!("filter-{generation}.bloom"), |out| {
        admission
            .seen_set()
            .filter()
            .write_to(out)
            .map_err(|e| io::Error::other(e.to_string()))
    })?;

    let mut state = Vec::new();
    state.extend_from_slice(STATE_MAGIC);
    put_varint(&mut state, STATE_VERSION.into());
    admission.encode(&mut state);
    queues.encode(now, &mut state);
    let state = write_file(dir, &format!("state-{generation}.bin"), |out| {
        out.write_all(&state)
    })?;

    let mut segments = Vec::new();
    if let Some(store) = queues.spill_store() {
        if same_dir(store.dir(), dir) {
            // Cleaning up old generations would delete the live segments.
            let err = io::Error::new(
                io::ErrorKind::InvalidInput,
                "the checkpoint directory is the spill directory; use two directories",
            );
            return Err(DiskError::io(dir, err));
        }
        store.sync()?;
        for (id, source, len, live) in store.segments() {
            let reuse = previous.as_ref().and_then(|m| {
                m.segments
                    .iter()
                    .find(|s| s.id == id && same_file(&dir.join(&s.name), &source))
            });
            let name = match reuse {
                Some(record) => record.name.clone(),
                None => {
                    let name = format!("{id:010}-g{generation}.seg");
                    let tmp = dir.join(format!("{name}{TMP}"));
                    let _ = fs::remove_file(&tmp);
                    link_or_copy(&source, &tmp, len)?;
                    rename(&tmp, &dir.join(&name))?;
                    name
                }
            };
            segments.push(SegmentRecord {
                id,
                name,
                len,
                live,
            });
        }
    }

    let manifest = Manifest {
        generation,
        filter,
        state,
        segments,
    };
    // The new files' names must be on disk before the manifest that names them.
    sync_dir(dir)?;
    write_file(dir, MANIFEST, |out| out.write_all(&manifest.encode()))?;
    // The new manifest is in place: whatever comes next, this generation is the one a
    // reader opens, so the caller must know it even if the last flush fails.
    let synced = sync_dir(dir);
    if synced.is_ok() {
        remove_unreferenced(dir, &manifest);
    }
    Ok((generation, synced))
}

/// What a frontier is made of besides its state: the settings a checkpoint is opened with.
pub(crate) type Settings = (Canonicalizer, ScopeRules, Politeness, Option<SpillSettings>);

/// Opens the checkpoint in `dir` with `settings`: its admission and queues, and its
/// generation; never changes `dir`.
pub(crate) fn read(
    dir: &Path,
    settings: Settings,
    now: Instant,
) -> Result<(Admission, HostQueues, u64), DiskError> {
    let manifest = read_manifest(dir)?;

    let filter_path = dir.join(&manifest.filter.name);
    let filter = {
        let file = File::open(&filter_path).map_err(|e| DiskError::io(&filter_path, e))?;
        let mut input = Checked::new(BufReader::new(file));
        let filter = bloom::AtomicScalableBloomFilter::read_from(&mut input)
            .map_err(|e| DiskError::new(&filter_path, DiskErrorKind::Filter(e)))?;
        // Anything after the filter, or a different checksum, means other bytes than written.
        io::copy(&mut input, &mut io::sink()).map_err(|e| DiskError::io(&filter_path, e))?;
        input.verify(&filter_path, &manifest.filter)?;
        filter
    };

    let state_path = dir.join(&manifest.state.name);
    let state = {
        let file = File::open(&state_path).map_err(|e| DiskError::io(&state_path, e))?;
        let mut input = Checked::new(BufReader::new(file));
        let mut bytes = Vec::new();
        input
            .by_ref()
            .take(manifest.state.len)
            .read_to_end(&mut bytes)
            .map_err(|e| DiskError::io(&state_path, e))?;
        io::copy(&mut input, &mut io::sink()).map_err(|e| DiskError::io(&state_path, e))?;
        input.verify(&state_path, &manifest.state)?;
        bytes
    };

    let (canon, scope, politeness, spill) = settings;
    let spill = match spill {
        Some(settings) => {
            let first = manifest
                .segments
                .iter()
                // Below u32::MAX: checked when the manifest was read.
                .map(|s| s.id + 1)
                .max()
                .unwrap_or(0);
            let mut store = SpillStore::create_at(&settings, first)?;
            for segment in &manifest.segments {
                store.adopt(
                    segment.id,
                    &dir.join(&segment.name),
                    segment.len,
                    segment.live,
                )?;
            }
            Some((settings, store))
        }
        None if manifest.segments.is_empty() => None,
        None => return Err(DiskError::new(dir, DiskErrorKind::SpillRequired)),
    };

    let corrupt = || DiskError::corrupt(&state_path, "state does not decode");
    let mut reader = Reader::new(&state);
    if reader.take(STATE_MAGIC.len()) != Some(STATE_MAGIC) {
        return Err(DiskError::new(&state_path, DiskErrorKind::Foreign));
    }
    let referrers = match reader.u32() {
        Some(1) => false,
        Some(STATE_VERSION) => true,
        Some(found) => {
            return Err(DiskError::new(
                &state_path,
                DiskErrorKind::Version {
                    found,
                    supported: STATE_VERSION,
                },
            ));
        }
        None => return Err(corrupt()),
    };
    let admission = Admission::decode(&mut reader, canon, scope, filter).ok_or_else(corrupt)?;
    let queues =
        HostQueues::decode(&mut reader, referrers, politeness, spill, now).ok_or_else(corrupt)?;
    if !reader.is_empty() {
        return Err(DiskError::corrupt(&state_path, "bytes after the state"));
    }
    Ok((admission, queues, manifest.generation))
}

impl Manifest {
    fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        out.extend_from_slice(MANIFEST_MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        put_varint(&mut out, self.generation);
        for file in [&self.filter, &self.state] {
            put_bytes(&mut out, file.name.as_bytes());
            put_varint(&mut out, file.len);
            put_varint(&mut out, file.crc.into());
        }
        put_varint(&mut out, self.segments.len() as u64);
        for segment in &self.segments {
            put_varint(&mut out, segment.id.into());
            put_bytes(&mut out, segment.name.as_bytes());
            put_varint(&mut out, segment.len);
            put_varint(&mut out, segment.live);
        }
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(bytes: &[u8], path: &Path) -> Result<Manifest, DiskError> {
        if bytes.get(..8) != Some(MANIFEST_MAGIC) {
            return Err(DiskError::new(path, DiskErrorKind::Foreign));
        }
        if bytes.len() < 16 {
            return Err(DiskError::corrupt(path, "manifest truncated"));
        }
        let found = u32::from_le_bytes(bytes[8..12].try_into().expect("4 bytes"));
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        if crc32c::crc32c(body).to_le_bytes() != crc {
            return Err(DiskError::corrupt(path, "manifest checksum mismatch"));
        }
        if found != VERSION {
            return Err(DiskError::new(
                path,
                DiskErrorKind::Version {
                    found,
                    supported: VERSION,
                },
            ));
        }
        let mut r = Reader::new(&body[12..]);
        let manifest = (|| {
            let generation = r.varint()?;
            let mut files = Vec::new();
            for kind in [FileKind::Filter, FileKind::State] {
                let name = r.str()?;
                if kind.parse(name)? != generation {
                    return None;
                }
                files.push(FileRecord {
                    name: name.to_owned(),
                    len: r.varint()?,
                    crc: r.u32()?,
                });
            }
            let mut segments: Vec<SegmentRecord> = Vec::new();
            for _ in 0..r.varint()? {
                let id = r.u32()?;
                let name = r.str()?;
                let (named, made) = parse_segment_name(name)?;
                let fresh = segments.iter().all(|s| s.id != id);
                if named != id || made > generation || id == u32::MAX || !fresh {
                    return None;
                }
                segments.push(SegmentRecord {
                    id,
                    name: name.to_owned(),
                    len: r.varint()?,
                    live: r.varint()?,
                });
            }
            let state = files.pop()?;
            let filter = files.pop()?;
            r.is_empty().then_some(Manifest {
                generation,
                filter,
                state,
                segments,
            })
        })();
        manifest.ok_or_else(|| DiskError::corrupt(path, "manifest does not decode"))
    }
}

/// The two files of one generation besides segments.
#[derive(Clone, Copy)]
enum FileKind {
    Filter,
    State,
}

impl FileKind {
    /// The generation in a name of this kind, if the name is one: exact names only, so a
    /// manifest can never point outside the directory nor clean up others' files.
    fn parse(self, name: &str) -> Option<u64> {
        let (prefix, suffix) = match self {
            FileKind::Filter => ("filter-", ".bloom"),
            FileKind::State => ("state-", ".bin"),
        };
        digits(name.strip_prefix(prefix)?.strip_suffix(suffix)?)
    }
}

/// The segment id and generation in a name `NNNNNNNNNN-gG.seg`.
fn parse_segment_name(name: &str) -> Option<(u32, u64)> {
    let (id, generation) = name.strip_suffix(".seg")?.split_once("-g")?;
    let id = (id.len() == 10).then(|| digits(id))??;
    Some((u32::try_from(id).ok()?, digits(generation)?))
}

/// A number written in decimal digits only (no sign, no spaces), as this module writes them.
fn digits(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn read_manifest(dir: &Path) -> Result<Manifest, DiskError> {
    let path = dir.join(MANIFEST);
    let bytes = fs::read(&path).map_err(|e| DiskError::io(&path, e))?;
    Manifest::decode(&bytes, &path)
}

/// Writes `name` in `dir` atomically: to a temporary file, flushed to disk, then renamed.
fn write_file(
    dir: &Path,
    name: &str,
    fill: impl FnOnce(&mut Checked<BufWriter<File>>) -> io::Result<()>,
) -> Result<FileRecord, DiskError> {
    let tmp = dir.join(format!("{name}{TMP}"));
    let file = File::create(&tmp).map_err(|e| DiskError::io(&tmp, e))?;
    let mut out = Checked::new(BufWriter::new(file));
    fill(&mut out).map_err(|e| DiskError::io(&tmp, e))?;
    let (writer, len, crc) = out.finish();
    let file = writer
        .into_inner()
        .map_err(|e| DiskError::io(&tmp, e.into_error()))?;
    file.sync_all().map_err(|e| DiskError::io(&tmp, e))?;
    drop(file);
    rename(&tmp, &dir.join(name))?;
    Ok(FileRecord {
        name: name.to_owned(),
        len,
        crc,
    })
}

fn rename(from: &Path, to: &Path) -> Result<(), DiskError> {
    fs::rename(from, to).map_err(|e| DiskError::io(to, e))
}

/// Flushes the directory's entries (the renames) to disk.
fn sync_dir(dir: &Path) -> Result<(), DiskError> {
    #[cfg(unix)]
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|e| DiskError::io(dir, e))?;
    #[cfg(not(unix))]
    let _ = dir;
    Ok(())
}

/// Deletes the files of older generations and leftovers of interrupted checkpoints. Only
/// the exact names this module writes are touched (`filter-G.bloom`, `state-G.bin`,
/// `NNNNNNNNNN-gG.seg`, and those with `.tmp` added); a file that cannot be deleted costs
/// only space.
fn remove_unreferenced(dir: &Path, manifest: &Manifest) {
    let Ok(entries) = fs::read_dir(dir) else {
        return;
    };
    let keep: Vec<&str> = [manifest.filter.name.as_str(), manifest.state.name.as_str()]
        .into_iter()
        .chain(manifest.segments.iter().map(|s| s.name.as_str()))
        .collect();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        let file = name.strip_suffix(TMP).unwrap_or(name);
        // The journal of the generation before is obsolete: this checkpoint holds it.
        let old_journal = crate::journal::parse_name(file).is_some_and(|g| g < manifest.generation);
        let ours = file == MANIFEST
            || FileKind::Filter.parse(file).is_some()
            || FileKind::State.parse(file).is_some()
            || parse_segment_name(file).is_some()
            || old_journal;
        if ours && name != MANIFEST && !keep.contains(&name) {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Whether two paths name the same directory.
pub(crate) fn same_dir(a: &Path, b: &Path) -> bool {
    match (fs::canonicalize(a), fs::canonicalize(b)) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Whether two paths are the same file (hard links of one inode).
fn same_file(a: &Path, b: &Path) -> bool {
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        match (fs::metadata(a), fs::metadata(b)) {
            (Ok(a), Ok(b)) => a.dev() == b.dev() && a.ino() == b.ino(),
            _ => false,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = (a, b);
        false
    }
}

/// A reader or writer that counts bytes and computes their CRC-32C on the way.
struct Checked<T> {
    inner: T,
    len: u64,
    crc: u32,
}

impl<T> Checked<T> {
    fn new(inner: T) -> Self {
        Checked {
            inner,
            len: 0,
            crc: 0,
        }
    }

    fn finish(self) -> (T, u64, u32) {
        (self.inner, self.len, self.crc)
    }

    fn verify(&self, path: &Path, record: &FileRecord) -> Result<(), DiskError> {
        if self.len != record.len {
            return Err(DiskError::corrupt(
                path,
                "length differs from the manifest's",
            ));
        }
        if self.crc != record.crc {
            return Err(DiskError::corrupt(
                path,
                "checksum differs from the manifest's",
            ));
        }
        Ok(())
    }
}

impl<W: Write> Write for Checked<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.len += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

impl<R: Read> Read for Checked<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.crc = crc32c::crc32c_append(self.crc, &buf[..n]);
        self.len += n as u64;
        Ok(n)
    }
}
