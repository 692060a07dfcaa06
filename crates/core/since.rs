//! `--since FILE`: the records of an earlier crawl, for a recrawl that fetches in full only
//! what changed. Each URL the earlier crawl recorded is queued again at its depth (the scope
//! and the SSRF guard judge it as a link), and fetched with its validators, so that an
//! unchanged page answers 304 and costs no body.

use std::borrow::Cow;
use std::hash::{BuildHasher, RandomState};
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

/// A [`Known`] packed in 64 bytes with its key, its ETag's text in [`Earlier::etags`]: no
/// allocation per URL, and no hash table's spare slots.
#[derive(Clone, Copy, Debug)]
struct Packed {
    key: u128,
    digest: [u8; 20],
    /// Milliseconds since the Unix epoch; 0: not known.
    fetched_ms: u64,
    /// Where its ETag is in `etags` (the high 48 bits) and its length (the low 16); 0: none.
    etag: u64,
    /// Saturated: a body over 4 GiB counts as 4 GiB saved.
    bytes: u32,
    /// Seconds since the Unix epoch (to 2106); 0: none.
    last_modified: u32,
    /// 0: no answer.
    status: u16,
    has_digest: bool,
}

/// The URLs of earlier crawls. Each is kept by a 128-bit keyed hash of its canonical text
/// rather than the text itself, two URLs sharing a hash with a chance of one in 2^64 or so
/// for a billion of them, in a [`Packed`] record: 64 bytes and its ETag's text a URL, found
/// by a binary search. The URLs themselves are kept only until they are queued
/// ([`Earlier::take_urls`]).
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    /// By key, one a URL, once loaded; in the order read while loading.
    packed: Vec<Packed>,
    /// The ETags' texts, one after the other.
    etags: Vec<u8>,
    /// Every URL read, with its depth, in the order read (a URL recorded twice, twice).
    urls: Vec<(Canonical, u32)>,
    /// Records whose URL is not one this crawler fetches (another scheme, say).
    unreadable: u64,
    keys: (RandomState, RandomState),
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
}

/// A JSON string, borrowed where it can be (inside an `Option` a bare `Cow` never is).
#[derive(Deserialize)]
struct Text<'a>(#[serde(borrow)] Cow<'a, str>);

/// One URL's record, parsed: its key, what it tells, its depth, its canonical form (`None`
/// if it has none).
struct Parsed {
    key: u128,
    known: Known,
    depth: u32,
    url: Option<Canonical>,
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
        earlier.index();
        Ok(earlier)
    }

    /// Sorts the records by key, the last read of each key kept.
    fn index(&mut self) {
        // Stable: records of one key stay in the order read.
        self.packed.sort_by_key(|p| p.key);
        let mut kept = 0;
        for i in 0..self.packed.len() {
            let last_of_key = self
                .packed
                .get(i + 1)
                .is_none_or(|next| next.key != self.packed[i].key);
            if last_of_key {
                self.packed[kept] = self.packed[i];
                kept += 1;
            }
        }
        self.packed.truncate(kept);
        self.packed.shrink_to_fit();
    }

    /// Packs what a record told, its ETag's text appended to `etags`.
    fn pack(&mut self, key: u128, known: &Known) -> Packed {
        let etag = match known.validators.etag.as_deref() {
            // An ETag longer than 64 KiB is not one a server sends; not kept.
            Some(text) if !text.is_empty() && text.len() <= usize::from(u16::MAX) => {
                let at = self.etags.len() as u64;
                self.etags.extend_from_slice(text.as_bytes());
                (at << 16) | text.len() as u64
            }
            _ => 0,
        };
        let fetched_ms = known
            .fetched_at
            .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
            .map_or(0, |since| {
                u64::try_from(since.as_millis()).unwrap_or(u64::MAX)
            });
        Packed {
            key,
            digest: known.digest.unwrap_or_default(),
            fetched_ms,
            etag,
            bytes: u32::try_from(known.bytes).unwrap_or(u32::MAX),
            last_modified: known
                .validators
                .last_modified
                .and_then(|secs| u32::try_from(secs).ok())
                .unwrap_or(0),
            status: known.status.unwrap_or(0),
            has_digest: known.digest.is_some(),
        }
    }

    fn unpack(&self, p: &Packed) -> Known {
        let etag = (p.etag != 0).then(|| {
            let (at, len) = ((p.etag >> 16) as usize, (p.etag & 0xffff) as usize);
            String::from_utf8_lossy(&self.etags[at..at + len]).into()
        });
        Known {
            status: (p.status != 0).then_some(p.status),
            validators: Validators {
                etag,
                last_modified: (p.last_modified != 0).then_some(u64::from(p.last_modified)),
            },
            digest: p.has_digest.then_some(p.digest),
            bytes: u64::from(p.bytes),
            fetched_at: (p.fetched_ms != 0)
                .then(|| UNIX_EPOCH + std::time::Duration::from_millis(p.fetched_ms)),
        }
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
                        let (from, keys) = (line, &self.keys);
                        line += part.iter().filter(|&&b| b == b'\n').count();
                        let torn_ok = last && i + 1 == parts.len();
                        scope.spawn(move || parse_part(part, from, torn_ok, keys))
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
                self.packed.reserve(part.len());
                for Parsed {
                    key,
                    known,
                    depth,
                    url,
                } in part
                {
                    let Some(url) = url else {
                        self.unreadable += 1;
                        continue;
                    };
                    let packed = self.pack(key, &known);
                    self.packed.push(packed);
                    self.urls.push((url, depth));
                }
            }
            if last {
                return Ok(());
            }
        }
    }

    fn key(&self, url: &str) -> u128 {
        key(&self.keys, url)
    }

    /// What the earlier crawls knew of `url`, if they recorded it.
    pub(crate) fn get(&self, url: &str) -> Option<Known> {
        let key = self.key(url);
        let at = self.packed.binary_search_by_key(&key, |p| p.key).ok()?;
        Some(self.unpack(&self.packed[at]))
    }

    /// Every URL recorded, with its depth, in the order read (one recorded twice comes
    /// twice: the seen-test drops the second); they are not kept after.
    pub(crate) fn take_urls(&mut self) -> Vec<(Canonical, u32)> {
        std::mem::take(&mut self.urls)
    }

    /// The URLs recorded at depth 0: the earlier crawl's seeds (and their redirects'
    /// targets), in the order read.
    pub(crate) fn seeds(&self) -> Vec<String> {
        let mut seen = std::collections::HashSet::new();
        self.urls
            .iter()
            .filter(|(url, depth)| *depth == 0 && seen.insert(url.as_str()))
            .map(|(url, _)| url.as_str().to_owned())
            .collect()
    }

    /// How many records had a URL this crawler does not fetch (not queued).
    pub(crate) fn unreadable(&self) -> u64 {
        self.unreadable
    }

    /// How many URLs were recorded.
    pub(crate) fn len(&self) -> usize {
        self.packed.len()
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
    parsed: Vec<Parsed>,
    torn: Option<usize>,
}

/// The records in `part`, whose first line is line number `first` of its file. A last line
/// cut off is skipped if `torn_ok` (the part ends the file).
fn parse_part(
    part: &[u8],
    first: usize,
    torn_ok: bool,
    keys: &(RandomState, RandomState),
) -> Result<Part> {
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
        // Keyed by the canonical form the lease will have, whatever spelling the record
        // has (an earlier version's, or another tool's).
        let url = canon.canonicalize(&record.url.0).ok();
        parsed.push(Parsed {
            key: key(keys, url.as_ref().map_or(&*record.url.0, Canonical::as_str)),
            known,
            depth: record.depth,
            url,
        });
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

fn key(keys: &(RandomState, RandomState), url: &str) -> u128 {
    (u128::from(keys.0.hash_one(url)) << 64) | u128::from(keys.1.hash_one(url))
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
        assert_eq!(earlier.len(), 2);
        let root = earlier.get("http://a.test/").unwrap();
        assert_eq!(root.validators.etag, None);
        // Wed, 01 May 2024 10:00:00 GMT
        assert_eq!(root.validators.last_modified, Some(1_714_557_600));
        let empty = crate::content::Digest::of(b"");
        assert_eq!((root.digest, root.bytes), (Some(*empty.as_bytes()), 12));
        // Not a page: no digest to compare a new body with.
        let gone = earlier.get("http://a.test/gone").unwrap();
        assert_eq!((gone.status, gone.digest), (Some(404), None));
        assert_eq!(gone.validators.etag.as_deref(), Some("W/\"g\""));
        assert_eq!(earlier.seeds(), ["http://a.test/"]);
        let urls = earlier.take_urls();
        let urls: Vec<_> = urls.iter().map(|(u, d)| (u.as_str(), *d)).collect();
        assert_eq!(
            urls,
            [
                ("http://a.test/", 0),
                ("http://a.test/gone", 1),
                ("http://a.test/", 0)
            ]
        );
        assert!(earlier.take_urls().is_empty());
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
            earlier.index();
            assert_eq!(earlier.len(), 25, "window {window}");
            // http://a.test/3 was recorded at lines 4 and 29: the second wins.
            let known = earlier.get("http://a.test/3").unwrap();
            assert_eq!((known.status, known.bytes), (Some(200), 28));
            let urls = earlier.take_urls();
            assert_eq!(urls.len(), 40);
            // In the order read, each with its depth.
            assert_eq!((urls[3].0.as_str(), urls[3].1), ("http://a.test/3", 3));
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
