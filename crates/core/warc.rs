//! WARC output (`output.warc`): for every response, a `response` record (the HTTP status
//! line, headers and body) and a `request` record (the request as sent), each its own gzip
//! member, as in any `.warc.gz` file (WARC 1.1, ISO 28500).
//!
//! The body is the one the crawler read: decompressed (the client decodes gzip, brotli and
//! deflate), so the stored headers drop `Content-Encoding` and carry the decoded
//! `Content-Length`; a body cut at `fetch.max_body_bytes` is marked `WARC-Truncated: length`.
//! The response record's `WARC-Payload-Digest` is the SHA-1 of that body (`sha1:BASE32`), the
//! records' `digest`.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use flate2::Compression;
use flate2::write::GzEncoder;
use reqwest::header::{CONTENT_ENCODING, CONTENT_LENGTH, HeaderMap, TRANSFER_ENCODING};
use url::Url;
use warc::{Record, RecordType, WarcHeader, WarcWriter};

/// The WARC file, shared by the workers.
pub(crate) struct Warc {
    /// A std mutex: each exchange is compressed before the lock, and written in one go.
    out: Mutex<BufWriter<File>>,
    /// The same file, to flush to disk without holding the lock.
    file: File,
}

/// One fetch, as the WARC file keeps it.
pub(crate) struct Exchange<'a> {
    pub(crate) url: &'a Url,
    pub(crate) user_agent: &'a str,
    pub(crate) status: u16,
    pub(crate) headers: &'a HeaderMap,
    pub(crate) body: &'a [u8],
    pub(crate) truncated: bool,
    /// The body's digest (`sha1:BASE32`), for `WARC-Payload-Digest`.
    pub(crate) digest: crate::content::DigestText,
}

impl Warc {
    /// A WARC file at `path`, appended to (a resumed crawl goes on in the same file).
    pub(crate) fn open(path: &Path) -> io::Result<Warc> {
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)?;
        Ok(Warc {
            file: file.try_clone()?,
            out: Mutex::new(BufWriter::with_capacity(1 << 16, file)),
        })
    }

    /// Writes the response and request records of one fetch.
    pub(crate) fn write(&self, exchange: &Exchange<'_>) -> io::Result<()> {
        let mut bytes = Vec::new();
        let response_id = Record::<warc::BufferedBody>::generate_record_id();
        let mut record = Record::<warc::BufferedBody>::with_body(http_response(exchange));
        record.set_warc_version("1.1");
        record.set_warc_type(RecordType::Response);
        record.set_warc_id(response_id.clone());
        set(&mut record, WarcHeader::TargetURI, exchange.url.as_str())?;
        set(
            &mut record,
            WarcHeader::ContentType,
            "application/http; msgtype=response",
        )?;
        set(
            &mut record,
            WarcHeader::PayloadDigest,
            exchange.digest.as_str(),
        )?;
        if exchange.truncated {
            set(&mut record, WarcHeader::Truncated, "length")?;
        }
        gzip_member(&mut bytes, &record)?;

        let mut record = Record::<warc::BufferedBody>::with_body(http_request(exchange));
        record.set_warc_version("1.1");
        record.set_warc_type(RecordType::Request);
        set(&mut record, WarcHeader::TargetURI, exchange.url.as_str())?;
        set(
            &mut record,
            WarcHeader::ContentType,
            "application/http; msgtype=request",
        )?;
        set(&mut record, WarcHeader::ConcurrentTo, &response_id)?;
        gzip_member(&mut bytes, &record)?;

        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .write_all(&bytes)
    }

    pub(crate) fn flush(&self) -> io::Result<()> {
        self.out
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush()
    }

    /// Flushes what is buffered and makes it durable (`fdatasync`).
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.flush()?;
        // Outside the lock, as for the records.
        self.file.sync_data()
    }
}

fn set(record: &mut Record<warc::BufferedBody>, header: WarcHeader, value: &str) -> io::Result<()> {
    record
        .set_header(header, value)
        .map(|_| ())
        .map_err(|e| io::Error::other(e.to_string()))
}

/// Appends `record` to `out` as one gzip member.
fn gzip_member(out: &mut Vec<u8>, record: &Record<warc::BufferedBody>) -> io::Result<()> {
    // Serialized into memory first: the WARC writer does not retry short writes, and a
    // gzip encoder takes only what fits its buffer per write; a Vec takes everything.
    let mut plain = Vec::new();
    WarcWriter::new(&mut plain).write(record)?;
    let mut gz = GzEncoder::new(out, Compression::fast());
    gz.write_all(&plain)?;
    gz.finish().map(|_| ())
}

/// The HTTP response as read: status line, headers (the body's encoding and length as
/// stored), blank line, body.
fn http_response(e: &Exchange<'_>) -> Vec<u8> {
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
    out.extend_from_slice(e.body);
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
