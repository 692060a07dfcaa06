//! The CDXJ index of the WARC files (`output.cdx`): one line per capture (each response and
//! revisit record), `SURT-KEY TIMESTAMP {json}`, sorted, as pywb's `cdxj-indexer` writes it,
//! so that pywb and other replay tools find a capture without reading the WARC files
//! through. The WARC writer hands each capture's line here as it writes the record (it
//! knows the record's offset and length); the file is written, sorted and merged with the
//! lines an earlier run left in it, when the crawl's outputs are flushed at its end.

use std::collections::BTreeSet;
use std::fs;
use std::io::{self, BufRead, Write};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};
use std::time::SystemTime;

use url::{Host, Url};

use crate::output::{Rfc3339, at};

/// One capture, as its index line tells it.
pub(crate) struct Capture<'a> {
    pub(crate) url: &'a Url,
    pub(crate) date: SystemTime,
    /// The response's media type (without parameters); `None` for a revisit record.
    pub(crate) mime: Option<&'a str>,
    /// The HTTP status, when the record holds an HTTP head.
    pub(crate) status: Option<u16>,
    /// `WARC-Payload-Digest` (`sha1:BASE32`), when the record has one.
    pub(crate) digest: Option<String>,
    /// The record's gzip member: where it starts in its file, and its bytes.
    pub(crate) offset: u64,
    pub(crate) length: u64,
    /// The WARC file's name (its last component: replay tools look it up in their archive
    /// directory).
    pub(crate) filename: &'a str,
}

/// The index being gathered, and where it goes.
pub(crate) struct Index {
    /// `output.cdx`; `None` when the index is gathered for the WACZ file alone.
    path: Option<PathBuf>,
    lines: Mutex<Vec<String>>,
}

impl Index {
    /// An index to be written to `path`, if given.
    pub(crate) fn new(path: Option<PathBuf>) -> Index {
        Index {
            path,
            lines: Mutex::new(Vec::new()),
        }
    }

    /// Adds a capture's line.
    pub(crate) fn add(&self, capture: &Capture<'_>) {
        let line = line(capture);
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(line);
    }

    /// The index: the lines gathered so far and those its file holds already (an earlier
    /// run's), sorted.
    pub(crate) fn lines(&self) -> io::Result<Vec<String>> {
        let mut lines: BTreeSet<String> = self
            .lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect();
        if let Some(path) = &self.path {
            match fs::File::open(path) {
                Ok(file) => {
                    for line in io::BufReader::new(file).lines() {
                        lines.insert(line?);
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::NotFound => {}
                Err(e) => return Err(at(path, e)),
            }
        }
        Ok(lines.into_iter().collect())
    }

    /// Writes `lines` (see [`Index::lines`]) to the index's file, if it has one, through a
    /// temporary file renamed over it, so that a reader never sees half.
    pub(crate) fn write(&self, lines: &[String]) -> io::Result<()> {
        let Some(path) = &self.path else {
            return Ok(());
        };
        let tmp = path.with_extension("cdxj.tmp");
        let mut out = io::BufWriter::new(fs::File::create(&tmp).map_err(|e| at(&tmp, e))?);
        for line in lines {
            writeln!(out, "{line}").map_err(|e| at(&tmp, e))?;
        }
        out.flush().map_err(|e| at(&tmp, e))?;
        drop(out);
        fs::rename(&tmp, path).map_err(|e| at(path, e))
    }
}

/// A capture's index line.
fn line(c: &Capture<'_>) -> String {
    let mut fields: Vec<(&str, String)> = vec![
        ("url", c.url.as_str().to_owned()),
        ("mime", c.mime.unwrap_or("warc/revisit").to_owned()),
    ];
    if let Some(status) = c.status {
        fields.push(("status", status.to_string()));
    }
    if let Some(digest) = &c.digest {
        fields.push(("digest", digest.clone()));
    }
    fields.extend([
        ("length", c.length.to_string()),
        ("offset", c.offset.to_string()),
        ("filename", c.filename.to_owned()),
    ]);
    // pywb's own spelling: `, ` and `: ` between fields, in this order.
    let json: Vec<String> = fields
        .iter()
        .map(|(name, value)| format!("\"{name}\": {}", serde_json::Value::from(value.as_str())))
        .collect();
    format!(
        "{} {} {{{}}}",
        surt(c.url),
        timestamp(c.date),
        json.join(", ")
    )
}

/// `YYYYMMDDhhmmss` in UTC: the WARC date to the second.
fn timestamp(at: SystemTime) -> String {
    let text = Rfc3339(at).text();
    let text = String::from_utf8_lossy(&text);
    text.chars().filter(char::is_ascii_digit).take(14).collect()
}

/// The SURT key of `url` (Sort-friendly URI Reordering Transform), as the `surt` library
/// pywb's indexer uses writes it: the scheme dropped; the host's labels reversed and joined
/// by commas (a leading `www`, `www2`... dropped; an IPv4 address's numbers reversed too);
/// the port unless it is the scheme's own; `)`; the path without a trailing slash but the
/// root's; the query's parameters sorted; all lower-case.
///
/// ```text
/// http://www.Example.com:80/Path/?b=2&a=1  ->  com,example)/path?a=1&b=2
/// ```
pub(crate) fn surt(url: &Url) -> String {
    let host = match url.host() {
        Some(Host::Ipv4(ip)) => {
            let mut octets = ip.octets();
            octets.reverse();
            octets.map(|o| o.to_string()).join(",")
        }
        Some(Host::Ipv6(ip)) => ip.to_string(),
        Some(Host::Domain(name)) => {
            let name = name.to_ascii_lowercase();
            let name = match name.split_once('.') {
                Some((first, rest))
                    if first.starts_with("www")
                        && first[3..].bytes().all(|b| b.is_ascii_digit()) =>
                {
                    rest.to_owned()
                }
                _ => name,
            };
            let mut labels: Vec<&str> = name.split('.').collect();
            labels.reverse();
            labels.join(",")
        }
        None => String::new(),
    };
    let mut key = host;
    if let Some(port) = url.port() {
        key.push_str(&format!(":{port}"));
    }
    key.push(')');
    let path = url.path().to_ascii_lowercase();
    key.push_str(match path.strip_suffix('/') {
        Some(stripped) if !stripped.is_empty() => stripped,
        _ => &path,
    });
    if let Some(query) = url.query().filter(|q| !q.is_empty()) {
        let query = query.to_ascii_lowercase();
        let mut params: Vec<&str> = query.split('&').collect();
        params.sort_unstable();
        key.push('?');
        key.push_str(&params.join("&"));
    }
    key
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_surt_librarys() {
        // What Python's `surt.surt` answers for each (surt 0.3.1, pywb 2.10's).
        for (url, key) in [
            (
                "http://www.Example.com:80/Path?b=2&a=1",
                "com,example)/path?a=1&b=2",
            ),
            ("https://example.com/", "com,example)/"),
            (
                "https://example.com:8443/a/B/?z=1&y",
                "com,example:8443)/a/b?y&z=1",
            ),
            ("http://127.0.0.1:18555/p/1", "1,0,0,127:18555)/p/1"),
            ("http://www2.example.com/x", "com,example)/x"),
            (
                "https://sub.example.co.uk/A%20B?Q=X",
                "uk,co,example,sub)/a%20b?q=x",
            ),
            ("http://[::1]:8080/x", "::1:8080)/x"),
            (
                "http://example.com/a?b=1&a=2&a=1",
                "com,example)/a?a=1&a=2&b=1",
            ),
            ("http://example.com/?", "com,example)/"),
        ] {
            assert_eq!(surt(&Url::parse(url).unwrap()), key, "{url}");
        }
    }

    #[test]
    fn a_line_is_pywbs() {
        let url = Url::parse("http://127.0.0.1:18555/p/16").unwrap();
        let date = SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_795_248_787);
        let capture = Capture {
            url: &url,
            date,
            mime: Some("text/html"),
            status: Some(200),
            digest: Some("sha1:QMRN3GYWSLMM6QAJOCUBZUKT624YP5S3".to_owned()),
            offset: 59739,
            length: 3296,
            filename: "a-00000.warc.gz",
        };
        assert_eq!(
            line(&capture),
            "1,0,0,127:18555)/p/16 20261121081307 {\"url\": \"http://127.0.0.1:18555/p/16\", \
             \"mime\": \"text/html\", \"status\": \"200\", \"digest\": \
             \"sha1:QMRN3GYWSLMM6QAJOCUBZUKT624YP5S3\", \"length\": \"3296\", \"offset\": \
             \"59739\", \"filename\": \"a-00000.warc.gz\"}"
        );
    }
}
