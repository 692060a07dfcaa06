//! `--since FILE`: the records of an earlier crawl, for a recrawl that fetches in full only
//! what changed. Each URL the earlier crawl recorded is queued again at its depth (the scope
//! and the SSRF guard judge it as a link), and fetched with its validators, so that an
//! unchanged page answers 304 and costs no body.

use std::collections::HashMap;
use std::hash::{BuildHasher, RandomState};
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::time::{SystemTime, UNIX_EPOCH};

use anyhow::{Context, Result, bail};
use serde::Deserialize;

use crate::fetch::Validators;

/// What an earlier crawl knew of a URL, in a few dozen bytes: what a conditional request,
/// the comparison of a new body, and a WARC revisit record need.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct Known {
    /// Links followed from a seed to it.
    pub(crate) depth: u32,
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

/// The URLs of earlier crawls. Each is kept by a 128-bit keyed hash of its canonical text
/// rather than the text itself: about a third of the memory, and two URLs share a hash
/// with a chance of one in 2^64 or so for a billion of them. The texts are kept only until
/// they are queued ([`Earlier::take_urls`]).
#[derive(Debug, Default)]
pub(crate) struct Earlier {
    by_url: HashMap<u128, Known>,
    urls: Vec<(Box<str>, u32)>,
    keys: (RandomState, RandomState),
}

/// The fields of a record this reads; the others are not needed.
#[derive(Deserialize)]
struct Line {
    url: String,
    #[serde(default)]
    status: Option<u16>,
    #[serde(default)]
    depth: u32,
    #[serde(default)]
    etag: Option<String>,
    #[serde(default)]
    last_modified: Option<String>,
    #[serde(default)]
    digest: Option<String>,
    #[serde(default)]
    bytes: u64,
    #[serde(default)]
    fetched_at: Option<String>,
}

impl Earlier {
    /// Reads the records in `paths` (JSON Lines, gzipped or not). A URL recorded in several
    /// keeps its last record. A torn last line (a crawl killed while writing) is skipped; any
    /// other line that is not a record is an error naming its file and line.
    pub(crate) fn load(paths: &[PathBuf]) -> Result<Earlier> {
        let mut earlier = Earlier::default();
        for path in paths {
            earlier
                .read(path)
                .with_context(|| format!("--since {}", path.display()))?;
        }
        Ok(earlier)
    }

    fn read(&mut self, path: &Path) -> Result<()> {
        let mut file = BufReader::new(std::fs::File::open(path).context("cannot open it")?);
        // Gzip's magic, peeked at without reading past it.
        let gzipped = file
            .fill_buf()
            .context("cannot read it")?
            .starts_with(&[0x1f, 0x8b]);
        let reader: Box<dyn BufRead> = if gzipped {
            Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(file)))
        } else {
            Box::new(file)
        };
        let mut lines = reader.lines().enumerate().peekable();
        while let Some((n, line)) = lines.next() {
            let line = line.with_context(|| format!("line {}: cannot read it", n + 1))?;
            if line.trim().is_empty() {
                continue;
            }
            let record: Line = match serde_json::from_str(&line) {
                Ok(record) => record,
                // The last line of a crawl killed while writing it.
                Err(_) if lines.peek().is_none() && !line.ends_with('}') => continue,
                Err(err) => bail!("line {}: not a record of this crawler: {err}", n + 1),
            };
            let ok = record.status.is_some_and(|s| (200..300).contains(&s));
            let known = Known {
                depth: record.depth,
                status: record.status,
                validators: Validators {
                    etag: record.etag.map(String::into_boxed_str),
                    // A date that is not an HTTP date is not sent: the ETag still is.
                    last_modified: record
                        .last_modified
                        .and_then(|date| httpdate::parse_http_date(&date).ok())
                        .and_then(|at| at.duration_since(UNIX_EPOCH).ok())
                        .map(|since| since.as_secs()),
                },
                digest: record.digest.filter(|_| ok).and_then(|text| sha1(&text)),
                bytes: record.bytes,
                fetched_at: record
                    .fetched_at
                    .and_then(|at| crate::output::parse_rfc3339(&at)),
            };
            let key = self.key(&record.url);
            if self.by_url.insert(key, known).is_none() {
                self.urls.push((record.url.into_boxed_str(), record.depth));
            }
        }
        Ok(())
    }

    fn key(&self, url: &str) -> u128 {
        (u128::from(self.keys.0.hash_one(url)) << 64) | u128::from(self.keys.1.hash_one(url))
    }

    /// What the earlier crawls knew of `url`, if they recorded it.
    pub(crate) fn get(&self, url: &str) -> Option<&Known> {
        self.by_url.get(&self.key(url))
    }

    /// Every URL recorded, with its depth, once each; their texts are not kept after.
    pub(crate) fn take_urls(&mut self) -> Vec<(Box<str>, u32)> {
        std::mem::take(&mut self.urls)
    }

    /// The URLs recorded at depth 0: the earlier crawl's seeds (and their redirects'
    /// targets), in the order read.
    pub(crate) fn seeds(&self) -> Vec<String> {
        self.urls
            .iter()
            .filter(|(_, depth)| *depth == 0)
            .map(|(url, _)| url.to_string())
            .collect()
    }

    /// How many URLs were recorded.
    pub(crate) fn len(&self) -> usize {
        self.by_url.len()
    }
}

/// The 20 bytes of a record's `digest` (`sha1:` and 32 base32 characters), if it is one.
fn sha1(text: &str) -> Option<[u8; 20]> {
    let bytes = data_encoding::BASE32_NOPAD
        .decode(text.strip_prefix("sha1:")?.as_bytes())
        .ok()?;
    bytes.try_into().ok()
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
                r#"{"url":"http://a.test/gone","status":404,"depth":1,"digest":"sha1:Y","bytes":3}"#,
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
        assert_eq!((gone.depth, gone.digest), (1, None));
        assert_eq!(earlier.take_urls().len(), 2);
        assert!(earlier.take_urls().is_empty());
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
        assert!(err.contains("bad.jsonl") && err.contains("line 2"), "{err}");
        let missing = dir.path().join("missing.jsonl");
        let err = format!("{:#}", Earlier::load(&[missing]).unwrap_err());
        assert!(
            err.contains("missing.jsonl") && err.contains("cannot open"),
            "{err}"
        );
    }
}
