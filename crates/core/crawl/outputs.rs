//! Where a crawl's results go: the records, the WARC files, and whether writing them failed
//! (the crawl then stops, and no checkpoint or journal holds as done a URL whose record was
//! lost).

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::output::{Record, Sink};
use crate::warc::Warc;

/// The crawl's outputs.
pub(crate) struct Outputs {
    /// Where records go.
    sink: Sink,
    /// Where responses go as WARC records, if anywhere.
    pub(crate) warc: Option<Warc>,
    /// Whether bodies are digested: for the records (`output.digest`), the WARC file or the
    /// content-seen test. SHA-1 is the largest cost a page adds after its fetch.
    pub(crate) wants_digest: bool,
    /// Records or WARC records could not be written: the crawl stopped, and its exit code
    /// says so.
    failed: AtomicBool,
}

impl Outputs {
    pub(crate) fn new(sink: Sink, warc: Option<Warc>, wants_digest: bool) -> Outputs {
        Outputs {
            sink,
            warc,
            wants_digest,
            failed: AtomicBool::new(false),
        }
    }

    /// Whether writing failed.
    pub(crate) fn failed(&self) -> bool {
        self.failed.load(Ordering::Relaxed)
    }

    /// Writing failed (said by the caller).
    pub(crate) fn fail(&self) {
        self.failed.store(true, Ordering::Relaxed);
    }

    /// Writes a record; false (and failed from then on) when it could not be.
    pub(crate) fn write(&self, record: &Record<'_>) -> bool {
        if let Err(err) = self.sink.write(record) {
            tracing::error!("writing records: {err}; stopping");
            self.fail();
            return false;
        }
        true
    }

    /// Makes what was written durable, records and WARC files: refused once writing failed.
    pub(crate) fn sync(&self) -> io::Result<()> {
        if self.failed() {
            return Err(io::Error::other("records could not be written"));
        }
        self.sink.sync()?;
        self.warc.as_ref().map_or(Ok(()), Warc::sync)
    }

    /// Flushes what was written so far; a failure is said and remembered.
    pub(crate) fn flush(&self) {
        let warc = self.warc.as_ref().map_or(Ok(()), Warc::flush);
        if let Err(err) = self.sink.flush().and(warc) {
            tracing::error!("writing records: {err}");
            self.fail();
        }
    }
}
