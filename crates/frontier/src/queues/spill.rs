//! Disk spill: queued URLs beyond the memory budget, in append-only segment files.
//!
//! # Why segment files and not an embedded store
//!
//! A spilled URL is written once, read once, in its host's order, and then never again: a
//! queue, not a table. An embedded key-value store (RocksDB, sled, redb) would index every
//! URL, rewrite it during compaction, and cost a large dependency, to answer lookups nobody
//! makes. Append-only segments write each URL once, read it back with one positional read
//! per run, and free space by deleting whole files.
//!
//! # Layout
//!
//! Each eviction writes, per host, a *run*: a few of the host's URLs, in order, at the end
//! of the active segment file. A host's runs form a linked list on disk, so memory holds
//! only the first and last run of each host, whatever the number of runs. A run is
//!
//! | bytes | field |
//! |------:|-------|
//! | 4 | body length, LE |
//! | 4 | URL count, LE |
//! | 4 | CRC-32C of the body |
//! | 4 | CRC-32C of the 12 bytes above |
//! | 16 | link to the host's next run: segment, size, offset (LE), zero until known |
//! | 4 | CRC-32C of the link |
//! | .. | body: per URL, varint length, text, varint depth, varint attempts, referrer |
//!
//! The URL count's top bit says that entries carry a referrer (the page whose link led to
//! the URL): a varint tag, 0 for none, 1 for the same as the entry before in the run, 2
//! followed by its length-prefixed text. Runs of versions before referrers lack the bit
//! and the field, and read as URLs whose referrer is unknown.
//!
//! A run appended behind a host's last run is linked by rewriting the last run's link in
//! place: the only write that is not an append. Runs that go *in front* of a host's runs
//! (its in-memory head spilled) carry their link from the start. A segment file is deleted
//! once every run in it has been read back.

use std::collections::BTreeMap;
use std::fs::{self, File, OpenOptions};
use std::io;
use std::path::{Path, PathBuf};

use super::entry::Entry;
use crate::codec::{Reader, le_u32, le_u64};
use crate::{DiskError, DiskErrorKind};

/// Bytes before a run's body.
pub(super) const RUN_HEADER: usize = 36;
/// The most URLs in one run: what one refill of a host brings back into memory.
pub(super) const RUN_URLS: usize = 64;
/// Set in a run's URL count when its entries carry their referrers, as runs have since
/// records gained `from`; a count without it is of an older version's run.
const WITH_REFERRERS: u32 = 1 << 31;
/// Staged bytes are written once this many have gathered.
const WRITE_CHUNK: usize = 1 << 20;
/// The file name suffix of segment files.
const SEGMENT_SUFFIX: &str = ".seg";

/// Where and when queued URLs spill to disk: the settings of
/// [`HostQueues::with_spill`](crate::HostQueues::with_spill).
///
/// When the URLs queued in memory take more than [`memory_budget`](Self::memory_budget)
/// bytes, the queues move URLs to segment files in [`dir`](Self::dir) until they take half
/// of it, keeping each host's first URLs in memory when there is room; they come back, in
/// order, when their host's turn comes. The directory must hold no segment files: the
/// queues delete their own when done (and when dropped), and never touch others'.
///
/// # Example
///
/// ```
/// use frontier::SpillSettings;
///
/// let spill = SpillSettings::new("/var/tmp/crawl/spill").memory_budget(256 << 20);
/// assert_eq!(spill.memory_budget_bytes(), 256 << 20);
/// assert_eq!(SpillSettings::new("x").memory_budget_bytes(), 32 << 20); // the default
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SpillSettings {
    dir: PathBuf,
    memory_budget: usize,
    segment_bytes: u64,
}

impl SpillSettings {
    /// Spill to `dir` (created if missing), with a 32 MiB memory budget and 64 MiB segments.
    ///
    /// # Example
    ///
    /// ```
    /// let spill = frontier::SpillSettings::new("spill");
    /// assert_eq!(spill.dir(), std::path::Path::new("spill"));
    /// ```
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        SpillSettings {
            dir: dir.into(),
            memory_budget: 32 << 20,
            segment_bytes: 64 << 20,
        }
    }

    /// The most bytes queued URLs may take in memory before some spill: the URL text plus
    /// about 100 bytes of bookkeeping per URL. Zero spills everything.
    ///
    /// The budget is enforced when a URL is pushed or leased, and brings memory down to half
    /// of it. Retries and abandoned leases may go over it until the next push or lease.
    ///
    /// # Example
    ///
    /// ```
    /// let spill = frontier::SpillSettings::new("spill").memory_budget(1 << 30);
    /// assert_eq!(spill.memory_budget_bytes(), 1 << 30);
    /// ```
    pub fn memory_budget(mut self, bytes: usize) -> Self {
        self.memory_budget = bytes;
        self
    }

    /// The size at which a segment file is closed and the next one started. Smaller
    /// segments free disk space sooner; each costs one open file.
    ///
    /// # Example
    ///
    /// ```
    /// let spill = frontier::SpillSettings::new("spill").segment_bytes(16 << 20);
    /// assert_eq!(spill.segment_size(), 16 << 20);
    /// ```
    pub fn segment_bytes(mut self, bytes: u64) -> Self {
        self.segment_bytes = bytes.max(1);
        self
    }

    /// The directory of the segment files.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::SpillSettings::new("/tmp/s").dir().to_str(), Some("/tmp/s"));
    /// ```
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The size at which segment files are closed.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::SpillSettings::new("s").segment_size(), 64 << 20);
    /// ```
    pub fn segment_size(&self) -> u64 {
        self.segment_bytes
    }

    /// The memory budget in bytes.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::SpillSettings::new("s").memory_budget_bytes(), 32 << 20);
    /// ```
    pub fn memory_budget_bytes(&self) -> usize {
        self.memory_budget
    }
}

/// Where a run is: what a host keeps in memory of its spilled URLs, twice.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RunRef {
    pub(crate) segment: u32,
    /// Header and body, in bytes.
    pub(crate) size: u32,
    pub(crate) offset: u64,
}

impl RunRef {
    fn link_bytes(&self) -> [u8; 20] {
        let mut link = [0u8; 20];
        link[..4].copy_from_slice(&self.segment.to_le_bytes());
        link[4..8].copy_from_slice(&self.size.to_le_bytes());
        link[8..16].copy_from_slice(&self.offset.to_le_bytes());
        let crc = crc32c::crc32c(&link[..16]);
        link[16..].copy_from_slice(&crc.to_le_bytes());
        link
    }
}

/// One segment file.
#[derive(Debug)]
struct Segment {
    file: File,
    /// Bytes written, and the offset of the next run.
    len: u64,
    /// Runs not yet read back (or staged in the current batch).
    live: u64,
    /// Written since the last `sync`.
    dirty: bool,
}

/// The segment files of one [`HostQueues`](crate::HostQueues).
///
/// Writes come in batches: [`stage`](Self::stage) and [`link`](Self::link) as many runs as
/// an eviction needs, then [`commit`](Self::commit). A batch that fails to commit is undone
/// as far as the store's bookkeeping goes, and its caller keeps the URLs in memory, so a
/// failed write loses nothing.
#[derive(Debug)]
pub(crate) struct SpillStore {
    dir: PathBuf,
    segment_bytes: u64,
    segments: BTreeMap<u32, Segment>,
    /// The segment runs are appended to.
    active: u32,
    /// Staged bytes, to be written at the end of the active segment.
    pending: Vec<u8>,
    /// Links to rewrite at commit: (run, the run it is to point to).
    links: Vec<(RunRef, RunRef)>,
    /// Runs staged since the last commit, undone if it fails.
    staged: Vec<RunRef>,
    /// A buffer for reads, reused.
    buf: Vec<u8>,
}

impl SpillStore {
    /// A store writing to `dir`, which must hold no segment files.
    pub(crate) fn create(settings: &SpillSettings) -> Result<Self, DiskError> {
        Self::create_at(settings, 0)
    }

    /// As [`create`](Self::create), numbering new segments from `first_segment`.
    pub(crate) fn create_at(
        settings: &SpillSettings,
        first_segment: u32,
    ) -> Result<Self, DiskError> {
        let dir = settings.dir.clone();
        fs::create_dir_all(&dir).map_err(|e| DiskError::io(&dir, e))?;
        for entry in fs::read_dir(&dir).map_err(|e| DiskError::io(&dir, e))? {
            let entry = entry.map_err(|e| DiskError::io(&dir, e))?;
            if entry
                .file_name()
                .to_string_lossy()
                .ends_with(SEGMENT_SUFFIX)
            {
                return Err(DiskError::new(&dir, DiskErrorKind::InUse));
            }
        }
        let mut store = SpillStore {
            dir,
            segment_bytes: settings.segment_bytes,
            segments: BTreeMap::new(),
            active: first_segment,
            pending: Vec::new(),
            links: Vec::new(),
            staged: Vec::new(),
            buf: Vec::new(),
        };
        store.open_segment(first_segment)?;
        Ok(store)
    }

    /// The directory of the segment files.
    pub(crate) fn dir(&self) -> &Path {
        &self.dir
    }

    /// The path of segment `id` in `dir`.
    pub(crate) fn segment_path(dir: &Path, id: u32) -> PathBuf {
        dir.join(format!("{id:010}{SEGMENT_SUFFIX}"))
    }

    fn open_segment(&mut self, id: u32) -> Result<(), DiskError> {
        let path = Self::segment_path(&self.dir, id);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(&path)
            .map_err(|e| DiskError::io(&path, e))?;
        self.segments.insert(
            id,
            Segment {
                file,
                len: 0,
                live: 0,
                dirty: false,
            },
        );
        self.active = id;
        Ok(())
    }

    /// Adds segment `id` from a checkpoint: a private copy of the first `len` bytes of
    /// `source`, holding `live` runs not yet read. Every run in the copy is checked (header,
    /// body and link checksums) on the way, so damage is found now and named by `source`.
    ///
    /// A copy, not a hard link: this store rewrites links inside its segments, and a file
    /// shared with the checkpoint, or with another frontier opened from it, would have two
    /// writers.
    pub(crate) fn adopt(
        &mut self,
        id: u32,
        source: &Path,
        len: u64,
        live: u64,
    ) -> Result<(), DiskError> {
        let path = Self::segment_path(&self.dir, id);
        let result = copy_checked(source, &path, len);
        let file = result.and_then(|()| {
            OpenOptions::new()
                .read(true)
                .write(true)
                .open(&path)
                .map_err(|e| DiskError::io(&path, e))
        });
        let file = match file {
            Ok(file) => file,
            Err(err) => {
                // Whatever was copied is of no use, and would make the directory look in use.
                let _ = fs::remove_file(&path);
                return Err(err);
            }
        };
        self.segments.insert(
            id,
            Segment {
                file,
                len,
                live,
                dirty: false,
            },
        );
        Ok(())
    }

    /// Whether `run` lies within a segment of this store.
    pub(crate) fn holds(&self, run: RunRef) -> bool {
        self.segments.get(&run.segment).is_some_and(|segment| {
            run.size as usize >= RUN_HEADER
                && run
                    .offset
                    .checked_add(u64::from(run.size))
                    .is_some_and(|end| end <= segment.len)
        })
    }

    /// Stages a run of `entries` (at most [`RUN_URLS`]) linked to `next`, and returns where
    /// it will be once committed.
    pub(super) fn stage<'e>(
        &mut self,
        entries: impl Iterator<Item = &'e Entry>,
        next: Option<RunRef>,
    ) -> Result<RunRef, DiskError> {
        let start = self.pending.len();
        self.pending.extend_from_slice(&[0; RUN_HEADER]);
        let mut count = 0u32;
        let mut previous = None;
        for entry in entries {
            entry.encode(&mut self.pending, &mut previous);
            count += 1;
        }
        let body_len = self.pending.len() - start - RUN_HEADER;
        let Ok(size) = u32::try_from(RUN_HEADER + body_len) else {
            // Only URLs of tens of megabytes, far beyond any length limit, get here.
            self.pending.truncate(start);
            let err = io::Error::new(io::ErrorKind::InvalidInput, "a run over 4 GiB");
            return Err(DiskError::io(&self.dir, err));
        };
        let body_crc = crc32c::crc32c(&self.pending[start + RUN_HEADER..]);
        let header = &mut self.pending[start..start + RUN_HEADER];
        header[..4].copy_from_slice(&(body_len as u32).to_le_bytes());
        header[4..8].copy_from_slice(&(count | WITH_REFERRERS).to_le_bytes());
        header[8..12].copy_from_slice(&body_crc.to_le_bytes());
        let header_crc = crc32c::crc32c(&header[..12]);
        header[12..16].copy_from_slice(&header_crc.to_le_bytes());
        if let Some(next) = next {
            header[16..].copy_from_slice(&next.link_bytes());
        }

        // A run goes to the next segment when this one is full; it never straddles two.
        let active_len = self.segments[&self.active].len;
        if active_len + start as u64 > 0
            && active_len + self.pending.len() as u64 > self.segment_bytes
        {
            let run: Vec<u8> = self.pending.drain(start..).collect();
            self.write_pending()?;
            let closed = self.active;
            let next = closed.checked_add(1).ok_or_else(|| {
                let err = io::Error::other("four billion segment files");
                DiskError::io(&self.dir, err)
            })?;
            self.open_segment(next)?;
            if self.segments[&closed].live == 0 {
                // Every run it held has been read back already.
                self.segments.remove(&closed);
                let _ = fs::remove_file(Self::segment_path(&self.dir, closed));
            }
            self.pending = run;
        }
        let segment = self.segments.get_mut(&self.active).expect("active");
        let run = RunRef {
            segment: self.active,
            size,
            offset: segment.len + (self.pending.len() - size as usize) as u64,
        };
        segment.live += 1;
        self.staged.push(run);
        if self.pending.len() >= WRITE_CHUNK {
            self.write_pending()?;
        }
        Ok(run)
    }

    /// Makes committed run `run` point to `next` once the batch commits.
    pub(super) fn link(&mut self, run: RunRef, next: RunRef) {
        self.links.push((run, next));
    }

    /// Writes the staged runs and links. On failure the batch is undone: its runs are not
    /// live, and the caller must not refer to them.
    pub(super) fn commit(&mut self) -> Result<(), DiskError> {
        let result = self.write_pending().and_then(|()| {
            for (run, next) in std::mem::take(&mut self.links) {
                let segment = self.segments.get_mut(&run.segment).ok_or_else(|| {
                    DiskError::corrupt(&self.dir, "link to a run of a deleted segment")
                })?;
                let path = Self::segment_path(&self.dir, run.segment);
                write_at(&segment.file, &next.link_bytes(), run.offset + 16)
                    .map_err(|e| DiskError::io(path, e))?;
                segment.dirty = true;
            }
            Ok(())
        });
        if result.is_err() {
            self.abort();
        }
        self.staged.clear();
        result
    }

    /// Undoes the batch staged since the last commit: its runs are not live, and the caller
    /// must not refer to them.
    pub(super) fn abort(&mut self) {
        self.pending.clear();
        self.links.clear();
        for run in std::mem::take(&mut self.staged) {
            self.release(run);
        }
    }

    fn write_pending(&mut self) -> Result<(), DiskError> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let segment = self.segments.get_mut(&self.active).expect("active");
        let path = Self::segment_path(&self.dir, self.active);
        write_at(&segment.file, &self.pending, segment.len).map_err(|e| DiskError::io(path, e))?;
        segment.len += self.pending.len() as u64;
        segment.dirty = true;
        self.pending.clear();
        Ok(())
    }

    /// Reads a committed run back, appending its URLs to `out`, and returns its link to the
    /// next run if it has been set. The run stays live until [`release`](Self::release)d.
    pub(super) fn read(
        &mut self,
        run: RunRef,
        out: &mut Vec<Entry>,
    ) -> Result<Option<RunRef>, DiskError> {
        let path = Self::segment_path(&self.dir, run.segment);
        let Some(segment) = self.segments.get(&run.segment) else {
            return Err(DiskError::corrupt(
                path,
                "a run points to a missing segment",
            ));
        };
        let end = run.offset.checked_add(u64::from(run.size));
        if (run.size as usize) < RUN_HEADER || end.is_none_or(|end| end > segment.len) {
            return Err(DiskError::corrupt(
                path,
                "a run points past the segment's end",
            ));
        }
        self.buf.resize(run.size as usize, 0);
        read_at(&segment.file, &mut self.buf, run.offset).map_err(|e| DiskError::io(&path, e))?;
        let bytes = &self.buf[..];
        if le_u32(bytes, 12) != crc32c::crc32c(&bytes[..12]) {
            return Err(DiskError::corrupt(path, "run header checksum mismatch"));
        }
        let body = &bytes[RUN_HEADER..];
        if le_u32(bytes, 0) as usize != body.len() {
            return Err(DiskError::corrupt(
                path,
                "run length differs from its reference",
            ));
        }
        if le_u32(bytes, 8) != crc32c::crc32c(body) {
            return Err(DiskError::corrupt(path, "run body checksum mismatch"));
        }
        let count = le_u32(bytes, 4);
        // Runs written before entries carried referrers (a checkpoint of an older version)
        // read as URLs whose referrer is unknown.
        let mut previous = None;
        let mut with_referrers = (count & WITH_REFERRERS != 0).then_some(&mut previous);
        let count = count & !WITH_REFERRERS;
        let mut reader = Reader::new(body);
        let before = out.len();
        for _ in 0..count {
            match Entry::decode(&mut reader, None, with_referrers.as_deref_mut()) {
                Some(entry) => out.push(entry),
                None => {
                    out.truncate(before);
                    return Err(DiskError::corrupt(path, "a spilled URL does not decode"));
                }
            }
        }
        if !reader.is_empty() {
            out.truncate(before);
            return Err(DiskError::corrupt(path, "bytes after a run's last URL"));
        }
        let link = &bytes[16..RUN_HEADER];
        let next =
            (le_u32(link, 16) == crc32c::crc32c(&link[..16]) && link != [0; 20]).then(|| RunRef {
                segment: le_u32(link, 0),
                size: le_u32(link, 4),
                offset: le_u64(link, 8),
            });
        Ok(next)
    }

    /// Marks a run as read back (or dropped); a closed segment whose runs are all gone is
    /// deleted.
    pub(super) fn release(&mut self, run: RunRef) {
        let Some(segment) = self.segments.get_mut(&run.segment) else {
            return;
        };
        segment.live = segment.live.saturating_sub(1);
        if segment.live == 0 && run.segment != self.active {
            self.segments.remove(&run.segment);
            // A file that cannot be deleted only costs disk space; the URLs are safe.
            let _ = fs::remove_file(Self::segment_path(&self.dir, run.segment));
        }
    }

    /// Makes every committed byte durable.
    pub(crate) fn sync(&mut self) -> Result<(), DiskError> {
        for (&id, segment) in &mut self.segments {
            if segment.dirty {
                segment
                    .file
                    .sync_data()
                    .map_err(|e| DiskError::io(Self::segment_path(&self.dir, id), e))?;
                segment.dirty = false;
            }
        }
        Ok(())
    }

    /// The live segments: (id, path, committed length, live runs).
    pub(crate) fn segments(&self) -> impl Iterator<Item = (u32, PathBuf, u64, u64)> + '_ {
        self.segments
            .iter()
            .filter(|(_, s)| s.live > 0)
            .map(|(&id, s)| (id, Self::segment_path(&self.dir, id), s.len, s.live))
    }

    /// Bytes in segment files on disk.
    pub(crate) fn disk_bytes(&self) -> u64 {
        self.segments.values().map(|s| s.len).sum()
    }
}

impl Drop for SpillStore {
    fn drop(&mut self) {
        for &id in self.segments.keys() {
            let _ = fs::remove_file(Self::segment_path(&self.dir, id));
        }
    }
}

/// Makes `to` a hard link of `from`, or, where the file system cannot (another device, no
/// link support), a copy of its first `len` bytes.
pub(crate) fn link_or_copy(from: &Path, to: &Path, len: u64) -> Result<(), DiskError> {
    if fs::hard_link(from, to).is_ok() {
        return Ok(());
    }
    let mut source = File::open(from).map_err(|e| DiskError::io(from, e))?;
    let mut target = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(|e| DiskError::io(to, e))?;
    let copied = io::copy(&mut io::Read::take(&mut source, len), &mut target)
        .map_err(|e| DiskError::io(to, e))?;
    if copied < len {
        return Err(DiskError::corrupt(from, "segment shorter than recorded"));
    }
    target.sync_data().map_err(|e| DiskError::io(to, e))
}

/// Copies the first `len` bytes of segment file `from` to a new file `to`, checking every
/// run on the way; errors name `from`.
fn copy_checked(from: &Path, to: &Path, len: u64) -> Result<(), DiskError> {
    let source = File::open(from).map_err(|e| DiskError::io(from, e))?;
    let mut input = io::BufReader::with_capacity(1 << 20, io::Read::take(source, len));
    let target = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(to)
        .map_err(|e| DiskError::io(to, e))?;
    let mut output = io::BufWriter::with_capacity(1 << 20, target);
    let mut run = Vec::new();
    let mut copied = 0u64;
    while copied < len {
        run.resize(RUN_HEADER, 0);
        io::Read::read_exact(&mut input, &mut run)
            .map_err(|_| DiskError::corrupt(from, "segment shorter than recorded"))?;
        if le_u32(&run, 12) != crc32c::crc32c(&run[..12]) {
            return Err(DiskError::corrupt(from, "run header checksum mismatch"));
        }
        let link = &run[16..RUN_HEADER];
        if link != [0; 20] && le_u32(link, 16) != crc32c::crc32c(&link[..16]) {
            return Err(DiskError::corrupt(from, "run link checksum mismatch"));
        }
        let body_len = u64::from(le_u32(&run, 0));
        if copied + RUN_HEADER as u64 + body_len > len {
            return Err(DiskError::corrupt(from, "a run crosses the recorded end"));
        }
        let body_crc = le_u32(&run, 8);
        run.resize(RUN_HEADER + body_len as usize, 0);
        io::Read::read_exact(&mut input, &mut run[RUN_HEADER..])
            .map_err(|_| DiskError::corrupt(from, "segment shorter than recorded"))?;
        if body_crc != crc32c::crc32c(&run[RUN_HEADER..]) {
            return Err(DiskError::corrupt(from, "run body checksum mismatch"));
        }
        io::Write::write_all(&mut output, &run).map_err(|e| DiskError::io(to, e))?;
        copied += run.len() as u64;
    }
    let target = output
        .into_inner()
        .map_err(|e| DiskError::io(to, e.into_error()))?;
    target.sync_data().map_err(|e| DiskError::io(to, e))
}

#[cfg(unix)]
fn write_at(file: &File, bytes: &[u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::write_all_at(file, bytes, offset)
}

#[cfg(unix)]
fn read_at(file: &File, buf: &mut [u8], offset: u64) -> io::Result<()> {
    std::os::unix::fs::FileExt::read_exact_at(file, buf, offset)
}

#[cfg(windows)]
fn write_at(file: &File, mut bytes: &[u8], mut offset: u64) -> io::Result<()> {
    while !bytes.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_write(file, bytes, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::WriteZero.into());
        }
        bytes = &bytes[n..];
        offset += n as u64;
    }
    Ok(())
}

#[cfg(windows)]
fn read_at(file: &File, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        let n = std::os::windows::fs::FileExt::seek_read(file, buf, offset)?;
        if n == 0 {
            return Err(io::ErrorKind::UnexpectedEof.into());
        }
        buf = &mut buf[n..];
        offset += n as u64;
    }
    Ok(())
}
