//! WARC output (`output.warc`): for every response, a `response` record (the HTTP status
//! line, headers and body) and a `request` record (the request as sent), each its own gzip
//! member, as in any `.warc.gz` file (WARC 1.1, ISO 28500).
//!
//! The body is the one the crawler read: decompressed (the client decodes gzip, brotli and
//! deflate), so the stored headers drop `Content-Encoding` and carry the decoded
//! `Content-Length`; a body cut at `fetch.max_body_bytes` is marked `WARC-Truncated: length`.
//! The response record's `WARC-Payload-Digest` is the SHA-1 of that body (`sha1:BASE32`), the
//! records' `digest`; every record's `WARC-Block-Digest` is the SHA-1 of its block exactly as
//! written, so that `warcio check` and archive tools can verify each record on its own.
//!
//! Each file's first record of a run is a `warcinfo` record (what wrote the file, and how),
//! and every other record names it in `WARC-Warcinfo-ID`. With `output.warc_max_bytes` the
//! output is a numbered series of files (see [`numbered`]): a file is closed at the first
//! exchange after it reached the limit, and a run never writes into a file an earlier run
//! wrote. With `output.warc_revisits`, a 2xx body already stored whole in this run is stored
//! again only as a `revisit` record (headers, and where the body is). A recrawl's 304 is a
//! revisit of the earlier capture's identical payload, with no HTTP head of its own, so that
//! replay tools serve that capture for it (a 304 head would replay as an empty 304).

use std::cell::RefCell;
use std::collections::HashMap;
use std::fs::{File, OpenOptions};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use flate2::{Compress, Compression, Crc, FlushCompress, Status};
use reqwest::header::{CONTENT_ENCODING, CONTENT_LENGTH, HeaderMap, TRANSFER_ENCODING};
use url::Url;

use crate::config::Config;
use crate::content::Digest;
use crate::output::{Rfc3339, at};

/// The profile of a revisit record whose payload is the same as an earlier record's (WARC
/// 1.1, section 6.7.2).
const IDENTICAL_PAYLOAD: &str = "http://netpreserve.org/warc/1.1/revisit/identical-payload-digest";

/// The profile of a revisit record for a 304 Not Modified: the server said the page is the
/// one fetched before (WARC 1.1, section 6.7.2).
const SERVER_NOT_MODIFIED: &str = "http://netpreserve.org/warc/1.1/revisit/server-not-modified";

/// The suffix of numbered files: they are gzip-compressed WARC, whatever the configured name.
const SUFFIX: &str = ".warc.gz";

/// Digits of a file's number at least (`NAME-00000.warc.gz`), as wget writes them; more
/// after 99,999 files.
const NUMBER_DIGITS: usize = 5;

/// What the WARC output is to do, from the settings, before anything is written.
pub(crate) struct Settings {
    /// `output.warc`: the file, or with rotation the name the numbered files derive from.
    pub(crate) path: PathBuf,
    /// `output.warc_max_bytes`: a file is closed once it holds this many bytes; 0 for a
    /// single file, appended to.
    pub(crate) max_bytes: u64,
    /// `output.warc_revisits`: store a body already stored whole as a `revisit` record.
    pub(crate) revisits: bool,
    /// The block of each file's `warcinfo` record.
    pub(crate) info: Info,
    /// `output.cdx`: the CDXJ index of the captures, if one is asked for.
    pub(crate) cdx: Option<PathBuf>,
    /// `output.wacz`: the WACZ package of the files and their index, if one is asked for.
    pub(crate) wacz: Option<PathBuf>,
    /// Whether [`Warc::sync`] will be called (a state directory's journal or checkpoints):
    /// files closed by a rotation are then kept open until it makes them durable. Without,
    /// they are let go at once, rather than hold a descriptor each for the whole crawl.
    pub(crate) synced: bool,
}

/// The `warcinfo` record's block (`application/warc-fields`): what wrote the file and how,
/// for whoever reads it years later. Nothing secret: the User-Agent was sent to every site,
/// and the proxy (whose URL may hold credentials) is left out.
pub(crate) struct Info(String);

impl Info {
    /// The fields for a crawl with `config`, sending `user_agent`, from `seeds` seeds.
    pub(crate) fn new(config: &Config, user_agent: &str, seeds: usize) -> Info {
        let robots = if config.politeness.robots {
            "obey"
        } else {
            "ignore"
        };
        let scope = match config.crawl.scope {
            crate::config::Scope::Hosts => "hosts",
            crate::config::Scope::Domains => "domains",
            crate::config::Scope::Any => "any",
        };
        let mut text = format!(
            "software: crawler/{}\r\n\
             format: WARC File Format 1.1\r\n\
             conformsTo: http://iipc.github.io/warc-specifications/specifications/warc-format/warc-1.1/\r\n\
             http-header-user-agent: {user_agent}\r\n\
             robots: {robots}\r\n\
             seeds: {seeds}\r\n\
             scope: {scope}\r\n\
             max-body-bytes: {}\r\n",
            env!("CARGO_PKG_VERSION"),
            config.fetch.max_body_bytes,
        );
        if config.output.warc_revisits {
            text.push_str("revisits: identical-payload-digest\r\n");
        }
        Info(text)
    }
}

/// The WARC output, shared by the workers.
pub(crate) struct Warc {
    /// A std mutex, never held across an await: each exchange is compressed before the
    /// lock, and written in one go under it.
    current: Mutex<Current>,
    /// `output.warc` as configured: the numbered files' names derive from it.
    base: PathBuf,
    /// `output.warc_max_bytes`; 0 for one file.
    max_bytes: u64,
    info: Info,
    /// See [`Settings::synced`]; false too for what cannot be synced (`/dev/null`, a pipe),
    /// whose [`Warc::sync`] only flushes.
    synced: bool,
    /// With `output.warc_revisits`, the response record that stored each payload whole:
    /// what a revisit record points at. In memory, for this run only.
    originals: Option<Mutex<HashMap<[u8; 20], Original>>>,
    /// Hand every exchange to the operating system as it is written: for a crawl shared
    /// through Redis, as the records are (see `Sink::flushing_each_record`).
    flush_each: bool,
    /// The CDXJ index of the captures written (`output.cdx`, or for the WACZ file).
    index: Option<crate::cdx::Index>,
    /// `output.wacz`.
    wacz: Option<PathBuf>,
}

/// The file being written, and what the next sync owes the disk.
struct Current {
    out: BufWriter<File>,
    /// The same file, to make durable without holding the lock.
    file: Arc<File>,
    path: PathBuf,
    /// Bytes in the file, what earlier runs wrote included: the measure of rotation.
    bytes: u64,
    /// The file's number in the series (0 without rotation). Records name their file's
    /// `warcinfo`, so records built for one file are written only to that one.
    number: u64,
    /// The record ID of this run's `warcinfo` record in the file.
    info_id: Arc<str>,
    /// The `warcinfo` record is still to be written, before the file's first record: a
    /// run that writes nothing leaves nothing but an empty file.
    info_pending: bool,
    /// Files closed by a rotation since the last sync, whose last records are still to be
    /// made durable.
    closed: Vec<Arc<File>>,
    /// A file was created since the last sync: its directory entry must reach the disk too.
    created: bool,
}

/// Where a payload was first stored whole: what a revisit record refers to.
#[derive(Clone)]
struct Original {
    uri: Box<str>,
    date: SystemTime,
    record_id: Box<str>,
}

/// One fetch, as the WARC file keeps it.
pub(crate) struct Exchange<'a> {
    pub(crate) url: &'a Url,
    pub(crate) user_agent: &'a str,
    pub(crate) status: u16,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
    pub(crate) truncated: bool,
    /// The body's digest, for `WARC-Payload-Digest` and revisits.
    pub(crate) digest: Digest,
    /// When the try started: the records' `WARC-Date`, the same instant as the record's
    /// `fetched_at`.
    pub(crate) fetched_at: SystemTime,
    /// For a 304 to a recrawl's conditional request: when the earlier crawl fetched the
    /// page (its record's `fetched_at`), if known.
    pub(crate) earlier_fetch: Option<SystemTime>,
    /// For a 304: the digest of the body the earlier crawl stored, if known.
    pub(crate) earlier_digest: Option<Digest>,
}

impl Exchange<'_> {
    /// Whether the body may be stored once and referred to after: a whole 2xx body. Error
    /// pages and cut bodies are stored each time, as they are.
    fn revisitable(&self) -> bool {
        (200..300).contains(&self.status) && !self.truncated && !self.body.is_empty()
    }
}

impl Warc {
    /// The WARC output `settings` ask for. Without rotation, the file is appended to (a
    /// resumed crawl goes on in it). With rotation, the run starts a file numbered after
    /// the highest one present, or reuses that one if it is empty: it never writes into a
    /// file that holds records. The file is created now, so that a path that cannot be
    /// written is known before the crawl starts; its `warcinfo` record is written with its
    /// first exchange.
    pub(crate) fn open(settings: Settings) -> io::Result<Warc> {
        let (path, number, file) = if settings.max_bytes == 0 {
            let file = OpenOptions::new()
                .create(true)
                .append(true)
                .open(&settings.path)
                .map_err(|e| at(&settings.path, e))?;
            (settings.path.clone(), 0, file)
        } else {
            let highest = highest_number(&settings.path)?;
            next_file(&settings.path, highest.unwrap_or(0))?
        };
        let bytes = file.metadata().map_err(|e| at(&path, e))?.len();
        // `/dev/null` or a pipe: nothing to make durable, and fdatasync would refuse.
        let synced = settings.synced && crate::output::is_regular(&file);
        Ok(Warc {
            current: Mutex::new(Current {
                file: Arc::new(file.try_clone().map_err(|e| at(&path, e))?),
                out: BufWriter::with_capacity(1 << 16, file),
                path,
                bytes,
                number,
                info_id: new_record_id().into(),
                info_pending: true,
                closed: Vec::new(),
                // Made by `open` or already there: the first sync makes sure of its entry.
                created: true,
            }),
            base: settings.path,
            max_bytes: settings.max_bytes,
            info: settings.info,
            synced,
            originals: settings.revisits.then(|| Mutex::new(HashMap::new())),
            flush_each: false,
            index: (settings.cdx.is_some() || settings.wacz.is_some())
                .then(|| crate::cdx::Index::new(settings.cdx)),
            wacz: settings.wacz,
        })
    }

    /// This output, handing every exchange to the operating system as it is written.
    pub(crate) fn flushing_each_record(mut self) -> Warc {
        self.flush_each = true;
        self
    }

    /// Writes the records of one fetch: its response (or a revisit of the response that
    /// stored the same body) and its request, in the same file.
    pub(crate) fn write(&self, exchange: &Exchange<'_>) -> io::Result<()> {
        let revisitable = self.originals.is_some() && exchange.revisitable();
        let original = match &self.originals {
            Some(originals) if revisitable => {
                lock(originals).get(exchange.digest.as_bytes()).cloned()
            }
            _ => None,
        };
        loop {
            let (number, info_id) = {
                let mut current = self.lock();
                self.rotate_if_full(&mut current)?;
                (current.number, Arc::clone(&current.info_id))
            };
            let (bytes, response_id, response_bytes) =
                exchange_records(exchange, &info_id, original.as_ref())?;
            let mut current = self.lock();
            if current.number != number {
                // Another exchange rotated the file meanwhile: these records name the last
                // file's warcinfo. Built again for the new file (once per file at most).
                continue;
            }
            if current.info_pending {
                let info = info_record(&current, &self.info.0)?;
                current.append(&info)?;
                current.info_pending = false;
            }
            if let Some(index) = &self.index {
                let filename = current
                    .path
                    .file_name()
                    .unwrap_or_default()
                    .to_string_lossy();
                index.add(&capture(
                    exchange,
                    original.is_some(),
                    &filename,
                    current.bytes,
                    response_bytes,
                ));
            }
            current.append(&bytes)?;
            if self.flush_each {
                current.out.flush()?;
            }
            drop(current);
            // Only once written: a revisit never points at a record that is not in a file.
            if let Some(originals) = &self.originals
                && revisitable
                && original.is_none()
            {
                lock(originals)
                    .entry(*exchange.digest.as_bytes())
                    .or_insert_with(|| Original {
                        uri: exchange.url.as_str().into(),
                        date: exchange.fetched_at,
                        record_id: response_id.into(),
                    });
            }
            return Ok(());
        }
    }

    /// Starts the next numbered file if the current one reached the limit.
    fn rotate_if_full(&self, current: &mut Current) -> io::Result<()> {
        if self.max_bytes == 0 || current.bytes < self.max_bytes {
            return Ok(());
        }
        current.out.flush().map_err(|e| at(&current.path, e))?;
        let (path, number, file) = next_file(&self.base, current.number + 1)?;
        let closed = std::mem::replace(
            &mut current.file,
            Arc::new(file.try_clone().map_err(|e| at(&path, e))?),
        );
        if self.synced {
            current.closed.push(closed);
        }
        current.out = BufWriter::with_capacity(1 << 16, file);
        current.path = path;
        current.bytes = 0;
        current.number = number;
        current.info_id = new_record_id().into();
        current.info_pending = true;
        current.created = true;
        Ok(())
    }

    /// Hands what is buffered to the OS.
    pub(crate) fn flush(&self) -> io::Result<()> {
        let mut current = self.lock();
        current.out.flush().map_err(|e| at(&current.path, e))?;
        drop(current);
        let Some(index) = &self.index else {
            return Ok(());
        };
        let lines = index.lines()?;
        index.write(&lines)?;
        match &self.wacz {
            Some(wacz) => crate::wacz::write(wacz, &self.files()?, &lines),
            None => Ok(()),
        }
    }

    /// The files of this output: the one file, or every numbered file of the series (an
    /// earlier run's too, as the index holds them).
    fn files(&self) -> io::Result<Vec<PathBuf>> {
        if self.max_bytes == 0 {
            return Ok(vec![self.base.clone()]);
        }
        let highest = highest_number(&self.base)?.unwrap_or(0);
        let mut files = Vec::new();
        for n in 0..=highest {
            let path = numbered(&self.base, n)?;
            if path.exists() {
                files.push(path);
            }
        }
        Ok(files)
    }

    /// Flushes what is buffered and makes it durable (`fdatasync`), in the files closed
    /// since the last sync too, and their directory entries: the journal and checkpoints
    /// count on every record written before this call surviving a crash.
    pub(crate) fn sync(&self) -> io::Result<()> {
        let (file, path, closed, created) = {
            let mut current = self.lock();
            current.out.flush().map_err(|e| at(&current.path, e))?;
            if !self.synced {
                return Ok(());
            }
            (
                Arc::clone(&current.file),
                current.path.clone(),
                std::mem::take(&mut current.closed),
                std::mem::take(&mut current.created),
            )
        };
        // Outside the lock, as for the records: workers go on writing meanwhile.
        let synced = closed
            .iter()
            .try_for_each(|file| file.sync_data())
            .and_then(|()| file.sync_data())
            .and_then(|()| if created { sync_dir(&path) } else { Ok(()) })
            .map_err(|e| at(&path, e));
        if synced.is_err() {
            // Owed still: the next sync tries again.
            let mut current = self.lock();
            current.closed.extend(closed);
            current.created |= created;
        }
        synced
    }

    fn lock(&self) -> MutexGuard<'_, Current> {
        lock(&self.current)
    }
}

/// A poisoned lock is taken all the same: a panic mid-write can at worst leave a partial
/// gzip member, which readers report as such; the records after it still belong.
fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Current {
    /// Appends whole records.
    fn append(&mut self, bytes: &[u8]) -> io::Result<()> {
        self.out.write_all(bytes).map_err(|e| at(&self.path, e))?;
        self.bytes += bytes.len() as u64;
        Ok(())
    }
}

/// Flushes the directory of `file` to disk: a new file's entry survives a crash.
fn sync_dir(file: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        let dir = match file.parent() {
            Some(dir) if !dir.as_os_str().is_empty() => dir,
            _ => Path::new("."),
        };
        File::open(dir)?.sync_all()?;
    }
    #[cfg(not(unix))]
    let _ = file;
    Ok(())
}

/// The directory, and the name before the number, of the files numbered after `base`:
/// `NAME.warc.gz`, `NAME.warc` and `NAME` all give `NAME`.
fn series(base: &Path) -> io::Result<(&Path, &str)> {
    let name = base
        .file_name()
        .and_then(|name| name.to_str())
        .filter(|name| !name.is_empty())
        .ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                format!(
                    "{}: output.warc needs a file name in UTF-8 to number the files after",
                    base.display()
                ),
            )
        })?;
    let stem = name
        .strip_suffix(SUFFIX)
        .or_else(|| name.strip_suffix(".warc"))
        .unwrap_or(name);
    let dir = match base.parent() {
        Some(dir) if !dir.as_os_str().is_empty() => dir,
        _ => Path::new("."),
    };
    Ok((dir, stem))
}

/// The file number `n` of the series `base` names: `NAME-0000n.warc.gz` beside it.
pub(crate) fn numbered(base: &Path, n: u64) -> io::Result<PathBuf> {
    let (dir, stem) = series(base)?;
    Ok(dir.join(format!("{stem}-{n:0NUMBER_DIGITS$}{SUFFIX}")))
}

/// The number in `name` if it is a file of the series named `stem`.
fn number_in(name: &str, stem: &str) -> Option<u64> {
    let digits = name
        .strip_prefix(stem)?
        .strip_prefix('-')?
        .strip_suffix(SUFFIX)?;
    if digits.len() < NUMBER_DIGITS || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    digits.parse().ok()
}

/// The highest number of the series `base` names present in its directory, if any.
fn highest_number(base: &Path) -> io::Result<Option<u64>> {
    let (dir, stem) = series(base)?;
    let mut highest = None;
    for entry in std::fs::read_dir(dir).map_err(|e| at(dir, e))? {
        let entry = entry.map_err(|e| at(dir, e))?;
        if let Some(n) = entry.file_name().to_str().and_then(|n| number_in(n, stem)) {
            highest = highest.max(Some(n));
        }
    }
    Ok(highest)
}

/// Opens the first file of the series numbered `from` or after that is new or empty:
/// never one that holds records.
fn next_file(base: &Path, from: u64) -> io::Result<(PathBuf, u64, File)> {
    let mut n = from;
    loop {
        let path = numbered(base, n)?;
        match OpenOptions::new().append(true).create_new(true).open(&path) {
            Ok(file) => return Ok((path, n, file)),
            Err(err) if err.kind() == io::ErrorKind::AlreadyExists => {
                let file = OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| at(&path, e))?;
                if file.metadata().map_err(|e| at(&path, e))?.len() == 0 {
                    return Ok((path, n, file));
                }
            }
            Err(err) => return Err(at(&path, err)),
        }
        n = n
            .checked_add(1)
            .ok_or_else(|| io::Error::other(format!("{}: no file number left", base.display())))?;
    }
}

/// A new `WARC-Record-ID` (a random UUID URN).
fn new_record_id() -> String {
    warc::Record::<warc::BufferedBody>::generate_record_id()
}

/// A `WARC-Date`: RFC 3339 in UTC with milliseconds, as WARC 1.1 allows, the same text as the
/// record's `fetched_at`.
fn warc_date(at: SystemTime) -> String {
    String::from_utf8_lossy(&Rfc3339(at).text()).into_owned()
}

/// Appends one record to `out`, as its own gzip member: the named fields, then
/// `WARC-Block-Digest` and `Content-Length` of the block, which is the concatenation of
/// `block`'s parts (written without first being copied together).
fn record(out: &mut Vec<u8>, fields: &[(&str, &str)], block: &[&[u8]]) -> io::Result<()> {
    let length: usize = block.iter().map(|part| part.len()).sum();
    let digest = Digest::of_parts(block).text();
    let mut head = String::with_capacity(512);
    head.push_str("WARC/1.1\r\n");
    for (name, value) in fields {
        push_field(&mut head, name, value);
    }
    push_field(&mut head, "WARC-Block-Digest", digest.as_str());
    push_field(&mut head, "Content-Length", &length.to_string());
    head.push_str("\r\n");
    let mut parts = Vec::with_capacity(block.len() + 2);
    parts.push(head.as_bytes());
    parts.extend_from_slice(block);
    parts.push(b"\r\n\r\n");
    gzip_member(out, &parts)
}

/// The header of every gzip member written (RFC 1952): deflate, no flags, no time, unknown
/// OS.
const GZIP_HEADER: [u8; 10] = [0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff];

thread_local! {
    /// This thread's deflate compressor, reset for each record. A new one allocates and
    /// zeroes some hundreds of KiB of tables, which the kernel maps afresh each time: with
    /// a compressor per record, that cost more than four times the compression of the page
    /// itself (measured with perf on the crawl benchmark).
    static DEFLATE: RefCell<Compress> = RefCell::new(Compress::new(Compression::fast(), false));
}

/// Appends the concatenation of `parts` to `out` as one gzip member.
fn gzip_member(out: &mut Vec<u8>, parts: &[&[u8]]) -> io::Result<()> {
    DEFLATE.with(|deflate| {
        let mut deflate = deflate
            .try_borrow_mut()
            .map_err(|_| io::Error::other("the compressor is in use"))?;
        // From a clean state, whatever an earlier error left.
        deflate.reset();
        out.extend_from_slice(&GZIP_HEADER);
        let mut crc = Crc::new();
        for part in parts {
            crc.update(part);
            deflate_into(&mut deflate, part, out, FlushCompress::None)?;
        }
        deflate_into(&mut deflate, &[], out, FlushCompress::Finish)?;
        out.extend_from_slice(&crc.sum().to_le_bytes());
        out.extend_from_slice(&crc.amount().to_le_bytes());
        Ok(())
    })
}

/// Compresses all of `input` into `out`, growing it as needed; with `Finish`, ends the
/// stream.
fn deflate_into(
    deflate: &mut Compress,
    mut input: &[u8],
    out: &mut Vec<u8>,
    flush: FlushCompress,
) -> io::Result<()> {
    let finish = flush == FlushCompress::Finish;
    loop {
        if !finish && input.is_empty() {
            return Ok(());
        }
        // Room for the input stored uncompressed, at worst, and the stream's end.
        out.reserve(input.len() + 64);
        let before = deflate.total_in();
        let status = deflate
            .compress_vec(input, out, flush)
            .map_err(io::Error::other)?;
        let taken = usize::try_from(deflate.total_in() - before).unwrap_or(input.len());
        input = input.get(taken..).unwrap_or_default();
        if status == Status::StreamEnd {
            return Ok(());
        }
    }
}

fn push_field(head: &mut String, name: &str, value: &str) {
    head.push_str(name);
    head.push_str(": ");
    head.push_str(value);
    head.push_str("\r\n");
}

/// The `warcinfo` record that starts this run's part of `current`'s file.
fn info_record(current: &Current, info: &str) -> io::Result<Vec<u8>> {
    let filename = current
        .path
        .file_name()
        .map(|name| name.to_string_lossy())
        .unwrap_or_default();
    let mut out = Vec::new();
    record(
        &mut out,
        &[
            ("WARC-Type", "warcinfo"),
            ("WARC-Record-ID", &current.info_id),
            ("WARC-Date", &warc_date(SystemTime::now())),
            ("WARC-Filename", &filename),
            ("Content-Type", "application/warc-fields"),
        ],
        &[info.as_bytes()],
    )?;
    Ok(out)
}

/// The records of one exchange, compressed, and the response (or revisit) record's ID.
/// The records of one exchange, as gzip members; the response's (or revisit's) record ID,
/// and the bytes of its member, the first.
fn exchange_records(
    e: &Exchange<'_>,
    info_id: &str,
    original: Option<&Original>,
) -> io::Result<(Vec<u8>, String, u64)> {
    let response_id = new_record_id();
    let date = warc_date(e.fetched_at);
    let payload = e.digest.text();
    let head = http_head(e);
    let mut fields = vec![
        ("WARC-Type", "response"),
        ("WARC-Record-ID", response_id.as_str()),
        ("WARC-Date", &date),
        ("WARC-Target-URI", e.url.as_str()),
        ("WARC-Warcinfo-ID", info_id),
        ("Content-Type", "application/http; msgtype=response"),
        ("WARC-Payload-Digest", payload.as_str()),
    ];
    let mut out = Vec::new();
    match original {
        None if e.status == 304
            && let (Some(earlier), Some(at)) = (e.earlier_digest, e.earlier_fetch) =>
        {
            // The page is the one the earlier crawl stored: a revisit of the identical
            // payload, pointing at that capture, with no HTTP head of its own, so that a
            // replay (pywb, ReplayWeb.page) serves the earlier capture's status, headers
            // and body for this date; the 304's own head would replay as an empty 304.
            let earlier_digest = earlier.text();
            let earlier_date = warc_date(at);
            fields[0].1 = "revisit";
            fields.truncate(5);
            fields.extend([
                ("WARC-Payload-Digest", earlier_digest.as_str()),
                ("WARC-Profile", IDENTICAL_PAYLOAD),
                ("WARC-Refers-To-Target-URI", e.url.as_str()),
                ("WARC-Refers-To-Date", &earlier_date),
            ]);
            record(&mut out, &fields, &[])?;
        }
        None if e.status == 304 => {
            // No payload: the headers as read, pointing at the page fetched before.
            fields[0].1 = "revisit";
            fields.pop();
            fields.extend([
                ("WARC-Profile", SERVER_NOT_MODIFIED),
                ("WARC-Refers-To-Target-URI", e.url.as_str()),
            ]);
            let earlier = e.earlier_fetch.map(warc_date);
            if let Some(date) = &earlier {
                fields.push(("WARC-Refers-To-Date", date));
            }
            record(&mut out, &fields, &[&head])?;
        }
        None => {
            if e.truncated {
                fields.push(("WARC-Truncated", "length"));
            }
            record(&mut out, &fields, &[&head, e.body])?;
        }
        Some(original) => {
            // The headers as read, the body left out: it is in the original's record.
            let original_date = warc_date(original.date);
            fields[0].1 = "revisit";
            fields.extend([
                ("WARC-Profile", IDENTICAL_PAYLOAD),
                ("WARC-Refers-To", &original.record_id),
                ("WARC-Refers-To-Target-URI", &original.uri),
                ("WARC-Refers-To-Date", &original_date),
            ]);
            record(&mut out, &fields, &[&head])?;
        }
    }
    let response_bytes = out.len() as u64;
    let request_id = new_record_id();
    record(
        &mut out,
        &[
            ("WARC-Type", "request"),
            ("WARC-Record-ID", &request_id),
            ("WARC-Date", &date),
            ("WARC-Target-URI", e.url.as_str()),
            ("WARC-Warcinfo-ID", info_id),
            ("WARC-Concurrent-To", &response_id),
            ("Content-Type", "application/http; msgtype=request"),
        ],
        &[&http_request(e)],
    )?;
    Ok((out, response_id, response_bytes))
}

/// The index's view of an exchange's first record, written at `offset` of `filename` in
/// `length` bytes: a response, or a revisit (of an earlier identical body, `revisit`, or of
/// the earlier crawl's capture, for a 304).
fn capture<'a>(
    e: &'a Exchange<'_>,
    revisit: bool,
    filename: &'a str,
    offset: u64,
    length: u64,
) -> crate::cdx::Capture<'a> {
    let revisit = revisit || e.status == 304;
    let mime = e
        .headers
        .get(reqwest::header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .map(str::trim)
        .filter(|v| !v.is_empty())
        .unwrap_or("unk");
    // A 304's revisit names the earlier body, when known; every other record this body.
    let digest = match (e.status, e.earlier_digest) {
        (304, earlier) => earlier.map(|d| d.text().as_str().to_owned()),
        _ => Some(e.digest.text().as_str().to_owned()),
    };
    crate::cdx::Capture {
        url: e.url,
        date: e.fetched_at,
        mime: (!revisit).then_some(mime),
        // As the record's HTTP head says: a 304's revisit of the earlier capture has none.
        status: (e.status != 304 || e.earlier_digest.is_none() || e.earlier_fetch.is_none())
            .then_some(e.status),
        digest,
        offset,
        length,
        filename,
    }
}

/// The HTTP response's head as read: status line, headers (the body's encoding and length
/// as stored), blank line.
fn http_head(e: &Exchange<'_>) -> Vec<u8> {
    let reason = reqwest::StatusCode::from_u16(e.status)
        .ok()
        .and_then(|s| s.canonical_reason())
        .unwrap_or("");
    let mut out = format!("HTTP/1.1 {} {reason}\r\n", e.status).into_bytes();
    for (name, value) in e.headers {
        if name == CONTENT_ENCODING || name == CONTENT_LENGTH || name == TRANSFER_ENCODING {
            continue;
        }
        out.extend_from_slice(name.as_str().as_bytes());
        out.extend_from_slice(b": ");
        out.extend_from_slice(value.as_bytes());
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(format!("content-length: {}\r\n\r\n", e.body.len()).as_bytes());
    out
}

/// The request as the client sends it.
fn http_request(e: &Exchange<'_>) -> Vec<u8> {
    let path = &e.url[url::Position::BeforePath..url::Position::AfterQuery];
    let host = &e.url[url::Position::BeforeHost..url::Position::AfterPort];
    format!(
        "GET {path} HTTP/1.1\r\nhost: {host}\r\nuser-agent: {}\r\naccept: */*\r\n\
         accept-encoding: gzip, br, deflate\r\n\r\n",
        e.user_agent
    )
    .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_files_derive_from_the_configured_name() {
        let n = |base: &str, n| numbered(Path::new(base), n).unwrap();
        assert_eq!(
            n("out/crawl.warc.gz", 0),
            Path::new("out/crawl-00000.warc.gz")
        );
        assert_eq!(n("crawl.warc", 7), Path::new("./crawl-00007.warc.gz"));
        assert_eq!(n("crawl", 123_456), Path::new("./crawl-123456.warc.gz"));
        for bad in ["", "/", "out/.."] {
            assert!(numbered(Path::new(bad), 0).is_err(), "{bad:?}");
        }
        assert_eq!(number_in("crawl-00042.warc.gz", "crawl"), Some(42));
        assert_eq!(number_in("crawl-123456.warc.gz", "crawl"), Some(123_456));
        for other in [
            "crawl.warc.gz",
            "crawl-42.warc.gz",
            "crawl-2024-00001.warc.gz",
            "crawl-00001.warc",
            "crawler-00001.warc.gz",
            "crawl-+0001.warc.gz",
        ] {
            assert_eq!(number_in(other, "crawl"), None, "{other}");
        }
    }

    #[test]
    fn a_run_numbers_its_first_file_after_the_last_one_holding_records() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("c.warc.gz");
        let first = || {
            let highest = highest_number(&base).unwrap();
            next_file(&base, highest.unwrap_or(0)).unwrap().1
        };
        assert_eq!(first(), 0);
        // Empty, as a run that wrote nothing leaves it: taken again.
        assert_eq!(first(), 0);
        std::fs::write(numbered(&base, 0).unwrap(), b"x").unwrap();
        assert_eq!(first(), 1);
        std::fs::write(numbered(&base, 3).unwrap(), b"x").unwrap();
        std::fs::write(dir.path().join("c-99999999999999999999999.warc.gz"), b"x").unwrap();
        std::fs::write(dir.path().join("other-00009.warc.gz"), b"x").unwrap();
        assert_eq!(first(), 4);
        assert_eq!(std::fs::read(numbered(&base, 3).unwrap()).unwrap(), b"x");
    }

    #[test]
    fn info_names_the_software_and_the_settings_but_no_proxy() {
        let mut config = Config::default();
        config.fetch.proxy = "http://user:secret@proxy.example:3128".into();
        config.politeness.robots = false;
        let info = Info::new(&config, "crawler/x (+ops@example.org)", 3).0;
        assert!(info.starts_with("software: crawler/"), "{info}");
        assert!(info.contains("format: WARC File Format 1.1\r\n"), "{info}");
        assert!(info.contains("http-header-user-agent: crawler/x (+ops@example.org)\r\n"));
        assert!(info.contains("robots: ignore\r\n") && info.contains("seeds: 3\r\n"));
        assert!(
            !info.contains("secret") && !info.contains("proxy"),
            "{info}"
        );
    }

    #[test]
    fn members_from_a_reused_compressor_read_back_whole() {
        use std::io::Read as _;
        // Noise past the reserve's guess, then text, then nothing: each one member.
        let noise: Vec<u8> = (0..300_000u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .collect();
        let text = b"<p>hello</p>".repeat(10_000);
        let mut out = Vec::new();
        for parts in [&[&noise[..], b"tail"][..], &[&text[..]], &[], &[b""]] {
            gzip_member(&mut out, parts).unwrap();
        }
        let mut read = Vec::new();
        flate2::read::MultiGzDecoder::new(&out[..])
            .read_to_end(&mut read)
            .unwrap();
        assert_eq!(read, [&noise[..], b"tail", &text[..]].concat());
        // Four members, each checked (CRC and length) by the decoder.
        let members = out.windows(3).filter(|w| *w == [0x1f, 0x8b, 8]).count();
        assert!(members >= 4);
    }
}
