//! Records: one JSON line per URL once its fetch ended, after its retries.

use std::io::{self, BufWriter, IsTerminal, Write};
use std::path::Path;
use std::sync::{Mutex, PoisonError};

use serde::Serialize;

use crate::errors::ErrorKind;

/// One URL's outcome, as written. Field names and meanings are the output contract (see
/// README.md, "Output").
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
    /// datetime); null when no sitemap gave one.
    pub(crate) lastmod: Option<&'a str>,
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

/// Where records go: a buffered file or standard output, shared by the workers.
pub(crate) struct Sink {
    /// A std mutex: a record is one short write into a buffer, never held across an await.
    out: Mutex<Box<dyn Write + Send>>,
    /// Flush after every record: for a person watching a terminal, who would otherwise see
    /// records 64 KiB at a time, or only at exit. Files and pipes keep the buffer: writing
    /// records is the crawl's hot path.
    flush_each_line: bool,
    /// The file records go to (a second handle), to flush to disk: `None` for standard output.
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
            handle = Some(file.try_clone()?);
            Box::new(BufWriter::with_capacity(1 << 16, file))
        };
        Ok(Sink {
            out: Mutex::new(out),
            flush_each_line: to_stdout && io::stdout().is_terminal(),
            file: handle,
        })
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
            content_type: Some("text/html"),
            bytes: 0,
            links: 0,
            elapsed_ms: 3,
            redirect: Some("http://a.example/b"),
            canonical: None,
            error_detail: None,
            lastmod: Some("2024-05-01"),
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
            "content_type",
            "bytes",
            "links",
            "elapsed_ms",
            "redirect",
            "canonical",
            "error_detail",
            "lastmod",
        ] {
            assert!(value.get(key).is_some(), "{key} missing in {text}");
        }
        assert_eq!(value["error"], serde_json::Value::Null);
        assert_eq!(value["redirect"], "http://a.example/b");
    }
}
