//! Records: one JSON line per URL once its fetch ended, after its retries.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Serialize, Serializer};

use crate::errors::ErrorKind;

/// One URL's outcome, as written. Field names and meanings are the output contract (see
/// docs/guide.md, "Output").
#[derive(Debug, Serialize)]
pub(crate) struct Record<'a> {
    /// The canonical URL fetched.
    pub(crate) url: &'a str,
    /// Tries, the first included.
    pub(crate) attempts: u32,
    /// The HTTP status of the last try, if there was an answer.
    pub(crate) status: Option<u16>,
    /// Why there is no usable page; null otherwise.
    pub(crate) error: Option<ErrorKind>,
    /// Links followed from a seed.
    pub(crate) depth: u32,
    /// The page whose link led here (or the URL that redirected here, the sitemap or
    /// robots.txt that listed it); null for a seed, or when not known.
    pub(crate) from: Option<&'a str>,
    pub(crate) content_type: Option<&'a str>,
    /// Body bytes read (decompressed).
    pub(crate) bytes: u64,
    /// Links extracted from the page (followed or not).
    pub(crate) links: u64,
    /// Time of the last try, from request to end of body.
    pub(crate) elapsed_ms: u64,
    /// A redirect's target, resolved against the URL.
    pub(crate) redirect: Option<&'a str>,
    /// The page's `<link rel=canonical>`, resolved.
    pub(crate) canonical: Option<&'a str>,
    /// With an error, what exactly failed, in words (the OS error of a refused connection,
    /// the resolver's answer); null otherwise.
    pub(crate) error_detail: Option<&'a str>,
    /// The page's `lastmod` in the sitemap that listed it, as written there (a W3C
    /// datetime), or else its `Last-Modified` header, as sent (an HTTP date); null when
    /// neither gave one.
    pub(crate) lastmod: Option<&'a str>,
    /// When the last try started, in RFC 3339 (UTC, milliseconds).
    pub(crate) fetched_at: Rfc3339,
    /// `sha1:` and the base32 SHA-1 of the body as read, as WARC's `WARC-Payload-Digest`;
    /// null without an answer.
    pub(crate) digest: Option<&'a str>,
    /// A 2xx body read before under another URL (the content-seen test).
    pub(crate) duplicate: bool,
    /// The response's `Last-Modified` header, as sent; null without one. With `etag`, what
    /// a later crawl needs to ask for the page again only if it changed.
    pub(crate) last_modified: Option<&'a str>,
    /// The response's `ETag` header, as sent (quotes and `W/` included); null without one.
    pub(crate) etag: Option<&'a str>,
    /// In a recrawl (`--since`), what became of the page since the earlier crawl; null
    /// otherwise.
    pub(crate) revisit: Option<Revisit>,
    /// Fetched because a page needs it to render (`crawl.page_requisites`); `from` names
    /// that page (or the style sheet that loads it).
    pub(crate) requisite: bool,
}

/// What became of a URL since an earlier crawl (`--since`). Its number indexes the counts
/// of `snapshot::Recrawl::by_kind`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Revisit {
    /// It answered 304 Not Modified, or a body with the earlier digest.
    Unchanged,
    /// It answered a body with another digest, or another answer than before.
    Changed,
    /// The earlier crawl did not record it.
    New,
    /// It answered 404 or 410, where the earlier crawl had recorded it.
    Gone,
}

/// A time written as RFC 3339 in UTC with milliseconds (`2024-05-01T10:00:00.000Z`), without
/// an allocation.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Rfc3339(pub(crate) SystemTime);

impl Rfc3339 {
    /// The text, in a fixed-size buffer (24 bytes; years before 1970 are written as 1970).
    pub(crate) fn text(self) -> [u8; 24] {
        let since = self.0.duration_since(UNIX_EPOCH).unwrap_or_default();
        let secs = since.as_secs();
        let (year, month, day) = civil(secs / 86_400);
        let of_day = secs % 86_400;
        let fields = [
            (year, 4),
            (u64::from(month), 2),
            (u64::from(day), 2),
            (of_day / 3600, 2),
            (of_day / 60 % 60, 2),
            (of_day % 60, 2),
            (u64::from(since.subsec_millis()), 3),
        ];
        let mut out = *b"0000-00-00T00:00:00.000Z";
        let mut at = 0;
        for (value, width) in fields {
            let mut v = value.min(10u64.pow(width) - 1);
            for i in (0..width as usize).rev() {
                out[at + i] = b'0' + (v % 10) as u8;
                v /= 10;
            }
            at += width as usize + 1;
        }
        out
    }
}

impl Serialize for Rfc3339 {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        let text = self.text();
        serializer.serialize_str(std::str::from_utf8(&text).unwrap_or_default())
    }
}

/// The proleptic Gregorian (year, month, day) of a count of days since 1970-01-01 (Howard
/// Hinnant's `civil_from_days`).
/// The instant a record's `fetched_at` (this crawler's RFC 3339 form, `Rfc3339::text`)
/// names, if it is one.
pub(crate) fn parse_rfc3339(text: &str) -> Option<SystemTime> {
    let b = text.as_bytes();
    if b.len() != 24 || b[4] != b'-' || b[10] != b'T' || b[19] != b'.' || b[23] != b'Z' {
        return None;
    }
    let number = |from: usize, to: usize| text.get(from..to)?.parse::<u64>().ok();
    let (year, month, day) = (number(0, 4)?, number(5, 7)?, number(8, 10)?);
    let (hour, minute, second) = (number(11, 13)?, number(14, 16)?, number(17, 19)?);
    let millis = number(20, 23)?;
    if !(1..=12).contains(&month) || !(1..=31).contains(&day) || hour > 23 || minute > 59 {
        return None;
    }
    // Days from the civil date (the inverse of `civil`).
    let (y, m) = if month <= 2 {
        (year - 1, month + 9)
    } else {
        (year, month - 3)
    };
    let era = y / 400;
    let yoe = y % 400;
    let doy = (153 * m + 2) / 5 + day - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = (era * 146_097 + doe).checked_sub(719_468)?;
    let secs = days * 86_400 + hour * 3600 + minute * 60 + second.min(60);
    Some(UNIX_EPOCH + std::time::Duration::from_millis(secs * 1000 + millis))
}

fn civil(days: u64) -> (u64, u8, u8) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u8;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u8;
    let year = yoe + era * 400 + u64::from(month <= 2);
    (year, month, day)
}

/// Checks that records can be written to `path` (empty or `-`: standard output) before
/// anything else is written: opens it for appending, creating it if need be, without
/// truncating what a crawl wrote there before.
pub(crate) fn check_writable(path: &Path) -> io::Result<()> {
    if path.as_os_str().is_empty() || path == Path::new("-") {
        return Ok(());
    }
    std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map(drop)
}

/// Whether `file` is a regular file, the kind `fdatasync` applies to: a character device
/// (`/dev/null`) or a pipe answers it with EINVAL, and has nothing to make durable anyway.
pub(crate) fn is_regular(file: &std::fs::File) -> bool {
    file.metadata().is_ok_and(|m| m.file_type().is_file())
}

/// Where records go: a buffered file or standard output, shared by the workers.
pub(crate) struct Sink {
    /// A std mutex: a record is one short write into a buffer, never held across an await.
    out: Mutex<Box<dyn Write + Send>>,
    /// Flush after every record: for a person watching a terminal, who would otherwise see
    /// records 64 KiB at a time, or only at exit, and for a shared crawl (see
    /// [`Sink::flushing_each_record`]). Otherwise files and pipes keep the buffer: writing
    /// records is the crawl's hot path.
    flush_each_line: bool,
    /// The file records go to (a second handle), to flush to disk: `None` for standard
    /// output, and for what is not a regular file (`/dev/null`, a pipe), which cannot be.
    file: Option<std::fs::File>,
}

impl Sink {
    /// Records to `path` (appended to it when `append`, as a resumed crawl does), or to
    /// standard output for an empty path or `-`.
    pub(crate) fn open(path: &Path, append: bool) -> io::Result<Sink> {
        let to_stdout = path.as_os_str().is_empty() || path == Path::new("-");
        let mut handle = None;
        let out: Box<dyn Write + Send> = if to_stdout {
            Box::new(BufWriter::with_capacity(1 << 16, io::stdout()))
        } else {
            let file = std::fs::OpenOptions::new()
                .create(true)
                .write(true)
                .append(append)
                .truncate(!append)
                .open(path)?;
            if is_regular(&file) {
                handle = Some(file.try_clone()?);
            }
            Box::new(BufWriter::with_capacity(1 << 16, file))
        };
        Ok(Sink {
            out: Mutex::new(out),
            flush_each_line: to_stdout && io::stdout().is_terminal(),
            file: handle,
        })
    }

    /// This sink, handing every record to the operating system as it is written: for a crawl
    /// shared through Redis, where a completion is in Redis the moment it is made, so that a
    /// process killed then loses no record still in its buffer (the system keeps what was
    /// written, whatever becomes of the process).
    pub(crate) fn flushing_each_record(mut self) -> Sink {
        self.flush_each_line = true;
        self
    }

    /// A sink writing into memory, for tests.
    #[cfg(test)]
    pub(crate) fn to_writer(out: impl Write + Send + 'static) -> Sink {
        Sink {
            out: Mutex::new(Box::new(out)),
            flush_each_line: false,
            file: None,
        }
    }

    /// Writes one record as a line.
    pub(crate) fn write(&self, record: &Record<'_>) -> io::Result<()> {
        let mut line = serde_json::to_vec(record).map_err(io::Error::other)?;
        line.push(b'\n');
        self.write_line(&line)
    }

    /// Writes one line, and flushes it at once on a terminal.
    fn write_line(&self, line: &[u8]) -> io::Result<()> {
        let mut out = self.lock();
        out.write_all(line)?;
        if self.flush_each_line {
            out.flush()?;
        }
        Ok(())
    }

    /// Flushes what is buffered.
    pub(crate) fn flush(&self) -> io::Result<()> {
        self.lock().flush()
    }

    /// Flushes what is buffered and, for a file, makes it durable (`fdatasync`): records
    /// written before this call survive a crash or a power loss.
    pub(crate) fn sync(&self) -> io::Result<()> {
        self.lock().flush()?;
        // Outside the lock: workers go on writing records while the disk catches up, and
        // what was flushed above is on disk when this returns.
        match &self.file {
            Some(file) => file.sync_data(),
            None => Ok(()),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Box<dyn Write + Send>> {
        // A panic mid-write can at worst leave a partial line; later records still belong.
        self.out.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// An I/O error that names its file, of the same kind: what the output files' errors say.
pub(crate) fn at(path: &std::path::Path, err: std::io::Error) -> std::io::Error {
    std::io::Error::new(err.kind(), format!("{}: {err}", path.display()))
}
#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    #[derive(Clone, Default)]
    struct Shared(Arc<Mutex<Vec<u8>>>);

    impl Write for Shared {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            self.0.lock().unwrap().write(buf)
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    /// A sink buffered as `Sink::open` buffers, over `buf`.
    fn buffered(buf: &Shared, flush_each_line: bool) -> Sink {
        Sink {
            out: Mutex::new(Box::new(BufWriter::with_capacity(1 << 16, buf.clone()))),
            flush_each_line,
            file: None,
        }
    }

    #[test]
    fn fetched_at_reads_back_as_the_instant_it_was_written_from() {
        for millis in [0, 1_714_557_600_042, 1_767_225_599_999, 4_102_444_800_000] {
            let at = UNIX_EPOCH + std::time::Duration::from_millis(millis);
            let text = Rfc3339(at).text();
            let text = std::str::from_utf8(&text).unwrap();
            assert_eq!(parse_rfc3339(text), Some(at), "{text}");
        }
        for bad in [
            "",
            "2024-05-01",
            "2024-13-01T10:00:00.000Z",
            "2024-05-01T10:00:00.000+02",
        ] {
            assert_eq!(parse_rfc3339(bad), None, "{bad}");
        }
    }

    #[test]
    fn a_terminal_sees_each_record_at_once_and_a_file_in_blocks() {
        // Records on a terminal showed only at exit, 64 KiB at a time.
        let line = b"{\"url\":\"http://a.example/\"}\n";
        let terminal = Shared::default();
        let sink = buffered(&terminal, true);
        sink.write_line(line).unwrap();
        assert_eq!(*terminal.0.lock().unwrap(), line);
        let file = Shared::default();
        let sink = buffered(&file, false);
        sink.write_line(line).unwrap();
        assert!(file.0.lock().unwrap().is_empty());
        sink.flush().unwrap();
        assert_eq!(*file.0.lock().unwrap(), line);
    }

    #[test]
    fn a_record_is_one_json_line_with_every_contract_field() {
        let buf = Shared::default();
        let sink = Sink::to_writer(buf.clone());
        sink.write(&Record {
            url: "http://a.example/",
            attempts: 2,
            status: Some(301),
            error: None,
            depth: 1,
            from: Some("http://a.example/index.html"),
            content_type: Some("text/html"),
            bytes: 0,
            links: 0,
            elapsed_ms: 3,
            redirect: Some("http://a.example/b"),
            canonical: None,
            error_detail: None,
            lastmod: Some("2024-05-01"),
            fetched_at: Rfc3339(UNIX_EPOCH + std::time::Duration::from_millis(1_714_557_600_042)),
            digest: Some("sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"),
            duplicate: false,
            last_modified: Some("Wed, 01 May 2024 10:00:00 GMT"),
            etag: Some("W/\"v1\""),
            revisit: Some(Revisit::Unchanged),
            requisite: false,
        })
        .unwrap();
        sink.flush().unwrap();
        let text = String::from_utf8(buf.0.lock().unwrap().clone()).unwrap();
        assert!(text.ends_with('\n') && text.lines().count() == 1);
        let value: serde_json::Value = serde_json::from_str(&text).unwrap();
        for key in [
            "url",
            "attempts",
            "status",
            "error",
            "depth",
            "from",
            "content_type",
            "bytes",
            "links",
            "elapsed_ms",
            "redirect",
            "canonical",
            "error_detail",
            "lastmod",
            "fetched_at",
            "digest",
            "duplicate",
            "last_modified",
            "etag",
            "revisit",
            "requisite",
        ] {
            assert!(value.get(key).is_some(), "{key} missing in {text}");
        }
        assert_eq!(value["error"], serde_json::Value::Null);
        assert_eq!(value["redirect"], "http://a.example/b");
        assert_eq!(value["from"], "http://a.example/index.html");
        assert_eq!(value["fetched_at"], "2024-05-01T10:00:00.042Z");
        assert_eq!(value["duplicate"], false);
    }

    #[test]
    fn times_are_written_as_rfc_3339_in_utc() {
        let at = |secs: u64, millis: u64| {
            let time = UNIX_EPOCH + std::time::Duration::from_millis(secs * 1000 + millis);
            String::from_utf8(Rfc3339(time).text().to_vec()).unwrap()
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        assert_eq!(at(951_782_400, 999), "2000-02-29T00:00:00.999Z");
        assert_eq!(at(4_107_542_399, 1), "2100-02-28T23:59:59.001Z");
        // Against httpdate's calendar, a day at a time over 400 years (every leap rule).
        for day in (0..146_097u64).step_by(7) {
            let secs = day * 86_400 + 3_723;
            let ours = at(secs, 0);
            let http = httpdate::fmt_http_date(UNIX_EPOCH + std::time::Duration::from_secs(secs));
            // "Thu, 01 Jan 1970 01:02:03 GMT"
            let months = [
                "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
            ];
            let month = months.iter().position(|m| *m == &http[8..11]).unwrap() + 1;
            let expected = format!(
                "{}-{month:02}-{}T{}.000Z",
                &http[12..16],
                &http[5..7],
                &http[17..25]
            );
            assert_eq!(ours, expected);
        }
    }
}
