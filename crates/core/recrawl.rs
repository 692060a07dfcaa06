//! `--since FILE`: the records of an earlier crawl, for a recrawl that fetches in full only
//! what changed. Each URL the earlier crawl recorded is queued again at its depth (the scope
//! and the SSRF guard judge it as a link) with its last record as the URL's memo, which the
//! frontier keeps with it and its lease hands back ([`Known::from_memo`]); it is fetched
//! with the record's validators, so that an unchanged page answers 304 and costs no body.

use std::borrow::Cow;
use std::collections::HashSet;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use frontier::{Canonical, Canonicalizer};

use crate::fetch::Validators;

/// What an earlier crawl knew of a URL: what a conditional request, the comparison of a new
/// body, and a WARC revisit record need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Known {
    /// The HTTP status it answered, if it had an answer.
    pub(crate) status: Option<u16>,
    /// Its validators, when its last answer had any.
    pub(crate) validators: Validators,
    /// The SHA-1 of the body it answered, with a 2xx.
    pub(crate) digest: Option<[u8; 20]>,
    /// Body bytes it answered: what a 304 saves.
    pub(crate) bytes: u64,
    /// When it was fetched, for a WARC revisit record to refer to.
    pub(crate) fetched_at: Option<SystemTime>,
}

/// The first byte of a memo this version writes: another version's memo (another first
/// byte) is not read, and its URL is fetched as a new one.
const MEMO_FORMAT: u8 = 1;
/// The longest ETag kept: a server sends a few dozen bytes; a longer one is not sent back.
const MAX_ETAG: usize = 1024;
/// 10000-01-01T00:00:00Z in seconds since the Unix epoch: no date of a memo is this late.
const MAX_DATE_SECS: u64 = 253_402_300_800;

impl Known {
    /// What it tells, as the memo its URL is queued with ([`Known::from_memo`] reads it):
    /// the format, then flags of which fields follow, the status (2 bytes), the bytes read
    /// (8), the validators' date and the fetch's time (8 each, seconds and milliseconds since
    /// the Unix epoch), the digest (20), and the ETag's text to the end; numbers
    /// little-endian. About 50 bytes: it travels with the URL in every queue, in Redis too.
    pub(crate) fn memo(&self) -> Box<[u8]> {
        let etag = self
            .validators
            .etag
            .as_deref()
            .filter(|etag| !etag.is_empty() && etag.len() <= MAX_ETAG);
        let fetched_ms = self
            .fetched_at
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map(|since| u64::try_from(since.as_millis()).unwrap_or(u64::MAX));
        let flags = u8::from(self.status.is_some())
            | u8::from(self.validators.last_modified.is_some()) << 1
            | u8::from(fetched_ms.is_some()) << 2
            | u8::from(self.digest.is_some()) << 3
            | u8::from(etag.is_some()) << 4;
        let mut memo = Vec::with_capacity(48 + etag.map_or(0, str::len));
        memo.extend_from_slice(&[MEMO_FORMAT, flags]);
        memo.extend_from_slice(&self.status.unwrap_or(0).to_le_bytes());
        memo.extend_from_slice(&self.bytes.to_le_bytes());
        if let Some(secs) = self.validators.last_modified {
            memo.extend_from_slice(&secs.to_le_bytes());
        }
        if let Some(ms) = fetched_ms {
            memo.extend_from_slice(&ms.to_le_bytes());
        }
        if let Some(digest) = &self.digest {
            memo.extend_from_slice(digest);
        }
        if let Some(etag) = etag {
            memo.extend_from_slice(etag.as_bytes());
        }
        memo.into()
    }

    /// What [`Known::memo`] wrote; `None` for bytes it did not write (another version's).
    pub(crate) fn from_memo(memo: &[u8]) -> Option<Known> {
        let (&[format, flags], rest) = memo.split_first_chunk::<2>()?;
        if format != MEMO_FORMAT || flags >> 5 != 0 {
            return None;
        }
        let (status, rest) = rest.split_first_chunk::<2>()?;
        let (bytes, mut rest) = rest.split_first_chunk::<8>()?;
        let mut u64_if = |bit: u8| -> Option<Option<u64>> {
            if flags & bit == 0 {
                return Some(None);
            }
            let (n, tail) = rest.split_first_chunk::<8>()?;
            rest = tail;
            Some(Some(u64::from_le_bytes(*n)))
        };
        // Dates past the year 9999 are no HTTP or RFC 3339 date: a memo holding one was not
        // written by `memo` (a damaged or hostile queue entry).
        let last_modified = u64_if(1 << 1)?.filter(|&secs| secs < MAX_DATE_SECS);
        let fetched_ms = u64_if(1 << 2)?.filter(|&ms| ms / 1000 < MAX_DATE_SECS);
        if (flags & 1 << 1 != 0 && last_modified.is_none())
            || (flags & 1 << 2 != 0 && fetched_ms.is_none())
        {
            return None;
        }
        let digest = if flags & 1 << 3 != 0 {
            let (digest, tail) = rest.split_first_chunk::<20>()?;
            rest = tail;
            Some(*digest)
        } else {
            None
        };
        let etag = match flags & 1 << 4 {
            0 if rest.is_empty() => None,
            0 => return None,
            _ => Some(std::str::from_utf8(rest).ok()?.into()),
        };
        Some(Known {
            status: (flags & 1 != 0).then_some(u16::from_le_bytes(*status)),
            validators: Validators {
                etag,
                last_modified,
            },
            digest,
            bytes: u64::from_le_bytes(*bytes),
            fetched_at: fetched_ms.map(|ms| UNIX_EPOCH + std::time::Duration::from_millis(ms)),
        })
    }
}

/// The URLs of earlier crawls, each once with what its last record told as a memo (see
/// [`Known::memo`]), to be queued with it: the frontier keeps the memo with the URL (spilled
/// with it, in checkpoints and the journal, and in Redis for a shared crawl), and hands it
/// back with the URL's lease. Nothing of them is kept here once they are queued.
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    /// Every record read whose URL this crawler fetches, in the order read, until
    /// [`Earlier::dedup`] keeps the last of each URL.
    listed: Vec<Parsed>,
    /// Records whose URL is not one this crawler fetches (another scheme, say).
    unreadable: u64,
}

/// The URLs of earlier crawls, each with its depth and its earlier record as a memo.
#[derive(Debug, Default)]
pub(crate) struct Listed {
    pub(crate) pages: Vec<shared::Listed>,
    /// Those recorded as page requisites.
    pub(crate) requisites: Vec<shared::Listed>,
}

/// The fields of a record this reads; the others are skipped. Texts are borrowed from the
/// line unless JSON escapes in them (an ETag's quotes) need a copy.
#[derive(Deserialize)]
struct Line<'a> {
    #[serde(borrow)]
    url: Text<'a>,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    depth: u32,
    #[serde(default, borrow)]
    etag: Option<Text<'a>>,
    #[serde(default, borrow)]
    last_modified: Option<Text<'a>>,
    #[serde(default, borrow)]
    digest: Option<Text<'a>>,
    #[serde(default)]
    bytes: u64,
    #[serde(default, borrow)]
    fetched_at: Option<Text<'a>>,
    #[serde(default)]
    requisite: bool,
}

/// A JSON string, borrowed where it can be (inside an `Option` a bare `Cow` never is).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// One URL's record, parsed: its canonical form, its depth, what it tells as a memo.
#[derive(Debug)]
struct Parsed {
    url: Canonical,
    depth: u32,
    memo: Box<[u8]>,
    /// Its record says it was a page requisite.
    requisite: bool,
}

/// How much of a records file is parsed at a time, split between the cores: large enough
/// that the threads' start is nothing beside it, small enough that a file of any size
/// costs a few of these in memory.
const WINDOW: usize = 16 << 20;

impl Earlier {
    /// Reads the records in `paths` (JSON Lines, gzipped or not). A URL recorded in several
    /// keeps its last record. A last line cut off (no newline: a crawl killed while writing
    /// it) is skipped; any other line that is not a record is an error naming its file and
    /// line.
    pub(crate) fn load(paths: &[PathBuf]) -> Result<Earlier> {
        let mut earlier = Earlier::default();
        for path in paths {
            earlier
                .read(path, WINDOW)
                .with_context(|| format!("--since {}", path.display()))?;
        }
        earlier.dedup();
        Ok(earlier)
    }

    /// Keeps the last record of each URL, where it was read: the frontier's seen-test would
    /// keep the first one queued.
    fn dedup(&mut self) {
        let keep: Vec<bool> = {
            let mut seen = HashSet::with_capacity(self.listed.len());
            let mut keep: Vec<bool> = (self.listed.iter().rev())
                .map(|parsed| seen.insert(parsed.url.as_str()))
                .collect();
            keep.reverse();
            keep
        };
        let mut keep = keep.into_iter();
        self.listed.retain(|_| keep.next().unwrap_or(true));
    }

    /// Reads one file a window at a time, each window's lines parsed on every core (JSON is
    /// most of a recrawl's start: 100,000 records took 0.3 s on one core), then taken in
    /// order, so that the last record of a URL still wins.
    fn read(&mut self, path: &Path, window_size: usize) -> Result<()> {
        let mut file = BufReader::new(std::fs::File::open(path).context("cannot open it")?);
        // Gzip's magic, peeked at without reading past it.
        let gzipped = file
            .fill_buf()
            .context("cannot read it")?
            .starts_with(&[0x1f, 0x8b]);
        let mut reader: Box<dyn BufRead> = if gzipped {
            Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(8));
        let mut window = Vec::with_capacity(window_size + 4096);
        let mut first_line = 1;
        loop {
            window.clear();
            // Whole lines, to a little past the window's size.
            let mut line = first_line;
            let cannot = |line: usize| format!("line {line}: cannot read it");
            while window.len() < window_size {
                let read = reader.read_until(b'\n', &mut window);
                if read.with_context(|| cannot(line))? == 0 {
                    break;
                }
                line += 1;
            }
            let last = reader.fill_buf().with_context(|| cannot(line))?.is_empty();
            // A byte order mark, as some editors save JSON Lines with.
            if first_line == 1 && window.starts_with(b"\xEF\xBB\xBF") {
                window.drain(..3);
            }
            let parts = split_lines(&window, threads);
            let parsed: Vec<Result<Part>> = std::thread::scope(|scope| {
                let mut line = first_line;
                let handles: Vec<_> = parts
                    .iter()
                    .enumerate()
                    .map(|(i, part)| {
                        let from = line;
                        line += part.iter().filter(|&&b| b == b'\n').count();
                        let torn_ok = last && i + 1 == parts.len();
                        scope.spawn(move || parse_part(part, from, torn_ok))
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
                    .collect()
            });
            first_line += window.iter().filter(|&&b| b == b'\n').count();
            for part in parsed {
                let Part { parsed: part, torn } = part?;
                if let Some(n) = torn {
                    tracing::warn!(
                        "--since {}: line {n}, the last, is cut off (a crawl killed while \
                         writing it): skipped",
                        path.display()
                    );
                }
                self.listed.reserve(part.len());
                for parsed in part {
                    match parsed {
                        Some(parsed) => self.listed.push(parsed),
                        None => self.unreadable += 1,
                    }
                }
            }
            if last {
                return Ok(());
            }
        }
    }

    /// Every URL recorded, once, with its depth and its memo, in the order read: the
    /// pages, then the page requisites. They are not kept after.
    pub(crate) fn take_listed(&mut self) -> Listed {
        let mut listed = Listed::default();
        for parsed in std::mem::take(&mut self.listed) {
            let url = (parsed.url, parsed.depth, Some(parsed.memo));
            match parsed.requisite {
                true => listed.requisites.push(url),
                false => listed.pages.push(url),
            }
        }
        listed
    }

    /// The URLs recorded at depth 0: the earlier crawl's seeds (and their redirects'
    /// targets), in the order read.
    pub(crate) fn seeds(&self) -> Vec<String> {
        self.listed
            .iter()
            .filter(|parsed| parsed.depth == 0)
            .map(|parsed| parsed.url.as_str().to_owned())
            .collect()
    }

    /// How many records had a URL this crawler does not fetch (not queued).
    pub(crate) fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// How many URLs were recorded.
    pub(crate) fn len(&self) -> usize {
        self.listed.len()
    }
}

/// The 20 bytes of a record's `digest` (`sha1:` and 32 base32 characters), if it is one.
fn sha1(text: &str) -> Option<[u8; 20]> {
    let bytes = data_encoding::BASE32_NOPAD
        .decode(text.strip_prefix("sha1:")?.as_bytes())
        .ok()?;
    bytes.try_into().ok()
}

/// `bytes` cut into about `n` parts of whole lines.
fn split_lines(bytes: &[u8], n: usize) -> Vec<&[u8]> {
    let mut parts = Vec::with_capacity(n);
    let mut rest = bytes;
    for i in (1..n).rev() {
        let target = rest.len() / (i + 1);
        let Some(nl) = rest[target..].iter().position(|&b| b == b'\n') else {
            break;
        };
        let (part, tail) = rest.split_at(target + nl + 1);
        parts.push(part);
        rest = tail;
    }
    parts.push(rest);
    parts
}

/// The records of a part of a file, and the number of its last line if that was cut off.
struct Part {
    /// `None` for a record whose URL this crawler does not fetch.
    parsed: Vec<Option<Parsed>>,
    torn: Option<usize>,
}

/// The records in `part`, whose first line is line number `first` of its file. A last line
/// cut off is skipped if `torn_ok` (the part ends the file).
fn parse_part(part: &[u8], first: usize, torn_ok: bool) -> Result<Part> {
    let canon = Canonicalizer::new();
    let mut parsed = Vec::with_capacity(part.len() / 256);
    let mut lines = part.split(|&b| b == b'\n').enumerate().peekable();
    while let Some((i, line)) = lines.next() {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let n = first + i;
        let record: Line<'_> = match serde_json::from_slice(line) {
            Ok(record) => record,
            // The last line of a crawl killed while writing it: the one line without its
            // newline, so nothing follows it.
            Err(_) if torn_ok && lines.peek().is_none() => {
                return Ok(Part {
                    parsed,
                    torn: Some(n),
                });
            }
            Err(err) => bail!("line {n}: not a record of this crawler: {}", describe(&err)),
        };
        let ok = record.status.is_some_and(|s| (200..300).contains(&s));
        let known = Known {
            status: record.status,
            validators: Validators {
                etag: record.etag.map(|t| t.0.into()),
                // A date that is not an HTTP date is not sent: the ETag still is.
                last_modified: record
                    .last_modified
                    .and_then(|date| httpdate::parse_http_date(&date.0).ok())
                    .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
                    .map(|since| since.as_secs()),
            },
            digest: record.digest.filter(|_| ok).and_then(|text| sha1(&text.0)),
            bytes: record.bytes,
            fetched_at: record
                .fetched_at
                .and_then(|at| crate::output::parse_rfc3339(&at.0)),
        };
        // In the canonical form the lease will have, whatever spelling the record has (an
        // earlier version's, or another tool's).
        let url = canon.canonicalize(&record.url.0).ok();
        parsed.push(url.map(|url| Parsed {
            url,
            depth: record.depth,
            memo: known.memo(),
            requisite: record.requisite,
        }));
    }
    Ok(Part { parsed, torn: None })
}

/// A JSON error without its "at line 1 column N", which names the line's line, not the
/// file's.
fn describe(err: &serde_json::Error) -> String {
    let text = err.to_string();
    match text.rsplit_once(" at line ") {
        Some((what, _)) => format!("{what} (column {})", err.column()),
        None => text,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str, gzip: bool) -> PathBuf {
        let path = dir.join(name);
        if gzip {
            use std::io::Write;
            let file = std::fs::File::create(&path).unwrap();
            let mut encoder = flate2::write::GzEncoder::new(file, flate2::Compression::fast());
            encoder.write_all(text.as_bytes()).unwrap();
            encoder.finish().unwrap();
        } else {
            std::fs::write(&path, text).unwrap();
        }
        path
    }

    #[test]
    fn records_plain_and_gzipped_are_read_the_last_one_of_a_url_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = write(
            dir.path(),
            "a.jsonl",
            concat!(
                r#"{"url":"http://a.test/","status":200,"depth":0,"etag":"\"1\"","digest":"sha1:X","bytes":10}"#,
                "\n",
                r#"{"url":"http://a.test/gone","status":404,"depth":1,"digest":"sha1:Y","bytes":3,"etag":"W/\"g\""}"#,
                "\n",
                r#"{"url":"http://cdn.test/a.png","status":200,"depth":1,"requisite":true}"#,
                "\n",
            ),
            false,
        );
        let b = write(
            dir.path(),
            "b.jsonl.gz",
            concat!(
                r#"{"url":"http://a.test/","status":200,"depth":0,"last_modified":"Wed, 01 May 2024 10:00:00 GMT","digest":"sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ","bytes":12}"#,
                "\n",
                r#"{"url":"http://a.test/torn","sta"#,
            ),
            true,
        );
        let mut earlier = Earlier::load(&[a, b]).unwrap();
        assert_eq!(earlier.len(), 3);
        assert_eq!(earlier.seeds(), ["http://a.test/"]);
        let Listed {
            pages: listed,
            requisites,
        } = earlier.take_listed();
        // A requisite is listed apart, to be queued by the requisite rules.
        assert_eq!(requisites.len(), 1);
        assert_eq!(requisites[0].0.as_str(), "http://cdn.test/a.png");
        // Each URL once, where its last record was read, with what that record told.
        let urls: Vec<_> = listed.iter().map(|(u, d, _)| (u.as_str(), *d)).collect();
        assert_eq!(urls, [("http://a.test/gone", 1), ("http://a.test/", 0)]);
        let known = |i: usize| Known::from_memo(listed[i].2.as_deref().unwrap()).unwrap();
        let root = known(1);
        assert_eq!(root.validators.etag, None);
        // Wed, 01 May 2024 10:00:00 GMT
        assert_eq!(root.validators.last_modified, Some(1_714_557_600));
        let empty = crate::content::Digest::of(b"");
        assert_eq!((root.digest, root.bytes), (Some(*empty.as_bytes()), 12));
        // Not a page: no digest to compare a new body with.
        let gone = known(0);
        assert_eq!((gone.status, gone.digest), (Some(404), None));
        assert_eq!(gone.validators.etag.as_deref(), Some("W/\"g\""));
        assert!(earlier.take_listed().pages.is_empty());
    }

    #[test]
    fn a_memo_gives_back_what_it_was_made_of_and_refuses_other_bytes() {
        let full = Known {
            status: Some(304),
            validators: Validators {
                etag: Some("W/\"\u{e9}t\u{e9}\"".into()),
                last_modified: Some(1_714_557_600),
            },
            digest: Some([7; 20]),
            bytes: 1 << 40,
            fetched_at: Some(UNIX_EPOCH + std::time::Duration::from_millis(1_764_000_000_123)),
        };
        let empty = Known::default();
        for known in [&full, &empty] {
            let memo = known.memo();
            assert_eq!(Known::from_memo(&memo).as_ref(), Some(known));
            // Cut anywhere but after the ETag's whole text, or another format: not read.
            for cut in 0..memo.len() {
                let read = Known::from_memo(&memo[..cut]);
                assert!(read.is_none() || read.unwrap().validators.etag != full.validators.etag);
            }
            let mut other = memo.to_vec();
            other[0] = 2;
            assert_eq!(Known::from_memo(&other), None);
        }
        assert_eq!(empty.memo().len(), 12);
        // An ETag no server sends is not kept (nor sent back).
        let long = Known {
            validators: Validators {
                etag: Some("x".repeat(MAX_ETAG + 1).into()),
                last_modified: None,
            },
            ..Known::default()
        };
        assert_eq!(Known::from_memo(&long.memo()), Some(Known::default()));
        assert_eq!(Known::from_memo(b"\x01\x01"), None);
        // A date no server sends (past the year 9999) is refused, not carried to a request.
        let late = Known {
            validators: Validators {
                etag: None,
                last_modified: Some(MAX_DATE_SECS),
            },
            ..Known::default()
        };
        assert_eq!(Known::from_memo(&late.memo()), None);
        let late = Known {
            fetched_at: Some(UNIX_EPOCH + std::time::Duration::from_secs(MAX_DATE_SECS)),
            ..Known::default()
        };
        assert_eq!(Known::from_memo(&late.memo()), None);
    }

    /// Windows of a few lines, each split between threads: the last record of a URL still
    /// wins across windows, an error names its line in a later window, and a torn last
    /// line is skipped only at the end of the file.
    #[test]
    fn records_read_a_window_at_a_time_are_read_as_one_file() {
        let dir = tempfile::tempdir().unwrap();
        let mut text = String::new();
        for i in 0..40 {
            let (status, url) = (200 + i % 2, format!("http://a.test/{}", i % 25));
            text.push_str(&format!(
                "{{\"url\":\"{url}\",\"status\":{status},\"depth\":{i},\"bytes\":{i}}}\n"
            ));
        }
        let torn = write(
            dir.path(),
            "t.jsonl",
            &format!("{text}{{\"url\":\"http://a"),
            false,
        );
        for window in [1, 60, 150, 1 << 20] {
            let mut earlier = Earlier::default();
            earlier.read(&torn, window).unwrap();
            earlier.dedup();
            assert_eq!(earlier.len(), 25, "window {window}");
            let listed = earlier.take_listed().pages;
            // http://a.test/3 was recorded at lines 4 and 29: the second wins, and the URLs
            // come in the order of their last records (lines 16 to 40: URLs 15 to 24, 0 to 14).
            let (url, depth, memo) = &listed[13];
            assert_eq!((url.as_str(), *depth), ("http://a.test/3", 28));
            let known = Known::from_memo(memo.as_deref().unwrap()).unwrap();
            assert_eq!((known.status, known.bytes), (Some(200), 28));
            assert_eq!(listed[0].0.as_str(), "http://a.test/15");
        }
        let bad = write(
            dir.path(),
            "b.jsonl",
            &format!("{text}not json\n{text}"),
            false,
        );
        for window in [1, 150, 1 << 20] {
            let err = format!("{:#}", Earlier::default().read(&bad, window).unwrap_err());
            assert!(err.contains("line 41:"), "window {window}: {err}");
        }
    }

    #[test]
    fn a_line_that_is_not_a_record_is_an_error_naming_its_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "bad.jsonl",
            "{\"url\":\"http://a.test/\"}\nnot json\n{\"url\":\"http://a.test/b\"}\n",
            false,
        );
        let err = format!("{:#}", Earlier::load(&[path]).unwrap_err());
        assert!(
            err.contains("bad.jsonl") && err.contains("line 2:"),
            "{err}"
        );
        // The line's column, not serde's "line 1" beside the file's line.
        assert!(
            err.contains("(column 2)") && !err.contains("at line"),
            "{err}"
        );
        // A last line with its newline was written whole: not a torn one, an error.
        let last = write(
            dir.path(),
            "last.jsonl",
            "{\"url\":\"http://a.test/\"}\ngarbage\n\n",
            false,
        );
        let err = format!("{:#}", Earlier::load(&[last]).unwrap_err());
        assert!(err.contains("line 2:"), "{err}");
        // A byte order mark before the first record is not part of it.
        let bom = write(
            dir.path(),
            "bom.jsonl",
            "\u{feff}{\"url\":\"http://a.test/\"}\n",
            false,
        );
        assert_eq!(Earlier::load(&[bom]).unwrap().len(), 1);
        let missing = dir.path().join("missing.jsonl");
        let err = format!("{:#}", Earlier::load(&[missing]).unwrap_err());
        assert!(
            err.contains("missing.jsonl") && err.contains("cannot open"),
            "{err}"
        );
    }
}
