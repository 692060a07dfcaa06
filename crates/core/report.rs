//! What a person sees on standard error: live progress while the crawl runs, and the summary
//! at the end.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::{self, Output};
use crate::snapshot::{FailedHost, SLOW, Slow, Snapshot};

/// The live bar's layout: `{wide_msg}` takes the terminal's width left after the spinner and
/// the time, and truncates the status, so the line never wraps (a wrapped line is redrawn
/// one row lower each frame).
const BAR_TEMPLATE: &str = "{spinner} {elapsed_precise} {wide_msg}";

/// The live bar, while there is one, for the logs to print around (see [`LogWriter`]).
static LIVE_BAR: Mutex<Option<ProgressBar>> = Mutex::new(None);

/// Standard error for the logs (`tracing`): a warning printed while the bar is live goes
/// around it, like [`Printer::println`], rather than under its next frame.
pub(crate) struct LogWriter;

impl std::io::Write for LogWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // The subscriber writes each event whole, in one call: one event, one suspension.
        let bar = LIVE_BAR
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        match bar {
            Some(bar) => bar.suspend(|| std::io::stderr().write_all(buf))?,
            None => std::io::stderr().write_all(buf)?,
        }
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

/// What is logged when `RUST_LOG` says nothing: warnings, but the Redis client's only from
/// errors up, and none of the TLS and DNS clients'. During a cluster's failover or reshard
/// the Redis client warns of every node it fails to reach and every refresh of its slots
/// (hundreds of lines a minute), while the crawler says once that Redis is in trouble and
/// once that it answers again; the certificate verifier logs each certificate it refuses,
/// and the resolver each server that does not answer, which the crawler's records and
/// summary say once per host, with what to do.
const DEFAULT_LOG: &str = "warn,redis=error,rustls=off,rustls_platform_verifier=off,\
                           hickory_resolver=off,hickory_net=off,hickory_proto=off";

/// Sends the logs (`tracing`, filtered by `RUST_LOG`; without it, the crawler's warnings, the
/// Redis client's errors, and nothing of the TLS and DNS clients') to standard error, around the progress display, coloured on a
/// terminal that allows it.
///
/// ```no_run
/// crawler::log_to_stderr();
/// tracing::warn!("printed on standard error");
/// ```
pub fn log_to_stderr() {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(DEFAULT_LOG)),
        )
        .with_writer(|| LogWriter)
        .with_ansi(colour())
        .init();
}

/// Whether the logs are coloured: only on a terminal, and never with `NO_COLOR` set to
/// anything but the empty string (<https://no-color.org>), so that a log redirected to a file
/// or read by a program holds no escape codes.
fn colour() -> bool {
    colour_for(
        std::io::stderr().is_terminal(),
        std::env::var_os("NO_COLOR"),
    )
}

fn colour_for(terminal: bool, no_color: Option<std::ffi::OsString>) -> bool {
    terminal && no_color.is_none_or(|value| value.is_empty())
}

/// The progress display's task.
pub(crate) struct Progress {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
    /// Prints messages around the bar, if there is one.
    printer: Printer,
}

/// Prints messages on standard error while the progress display may be live: through the bar,
/// which clears itself, prints, and redraws, so that its next frame does not overwrite the
/// message. Cheap to clone (the bar is shared).
#[derive(Clone)]
pub(crate) struct Printer {
    bar: Option<ProgressBar>,
}

impl Printer {
    /// Prints `message` as its own lines.
    pub(crate) fn println(&self, message: &str) {
        match &self.bar {
            // `suspend` rather than `ProgressBar::println`, which prints nothing when the bar
            // is hidden (`--progress bar` without a terminal).
            Some(bar) => bar.suspend(|| eprintln!("{message}")),
            None => eprintln!("{message}"),
        }
    }
}

impl Progress {
    /// Starts showing progress as `output.progress` asks: a live bar on a terminal, or a
    /// status line every `output.status_interval`.
    pub(crate) fn start(
        snapshot: impl Fn() -> Snapshot + Send + 'static,
        output: &Output,
    ) -> Progress {
        let records_to_stdout =
            output.file.as_os_str().is_empty() || output.file == std::path::Path::new("-");
        let mode = display_mode(
            output.progress,
            std::io::stderr().is_terminal(),
            records_to_stdout && std::io::stdout().is_terminal(),
        );
        let (stop, mut stopped) = oneshot::channel();
        let interval = output.status_interval.max(Duration::from_millis(100));
        let mut printer = Printer { bar: None };
        let task = match mode {
            config::Progress::Off | config::Progress::Auto => None,
            config::Progress::Bar => {
                let bar = ProgressBar::new_spinner();
                bar.set_style(
                    ProgressStyle::with_template(BAR_TEMPLATE)
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                printer.bar = Some(bar.clone());
                *LIVE_BAR.lock().unwrap_or_else(PoisonError::into_inner) = Some(bar.clone());
                Some(tokio::spawn(async move {
                    loop {
                        bar.set_message(Status::of(&snapshot()).to_string());
                        bar.tick();
                        tokio::select! {
                            _ = &mut stopped => break,
                            () = tokio::time::sleep(Duration::from_millis(200)) => {}
                        }
                    }
                    LIVE_BAR
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take();
                    bar.finish_and_clear();
                }))
            }
            config::Progress::Lines => Some(tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        () = tokio::time::sleep(interval) => eprintln!("{}", Status::of(&snapshot())),
                    }
                }
            })),
        };
        Progress {
            stop: Some(stop),
            task,
            printer,
        }
    }

    /// Prints `message` on standard error without the progress display overwriting it.
    pub(crate) fn println(&self, message: &str) {
        self.printer.println(message);
    }

    /// Stops the display.
    pub(crate) async fn finish(mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(task) = self.task.take() {
            let _ = task.await;
        }
    }
}

/// The display `setting` comes to: `auto` is a bar on a terminal, unless records are written
/// to that terminal too, where each would begin on the bar's line and leave a frame of it
/// behind: status lines then, whole lines between records.
fn display_mode(
    setting: config::Progress,
    stderr_is_terminal: bool,
    records_to_terminal: bool,
) -> config::Progress {
    match setting {
        config::Progress::Auto if stderr_is_terminal && !records_to_terminal => {
            config::Progress::Bar
        }
        config::Progress::Auto => config::Progress::Lines,
        mode => mode,
    }
}

/// What the progress line shows; its text is kept short, to fit an 80-column terminal beside
/// the spinner and the time for a crawl of a few hundred thousand pages (the hosts and the
/// seen-test are in the summary).
#[derive(Debug, Default)]
struct Status {
    /// URLs with their record, in this run.
    pages: u64,
    /// Pages per second, in this run.
    rate: f64,
    queued: u64,
    in_flight: u64,
    /// Records with an error, in this run.
    errors: u64,
    /// The URL in flight the longest, if for [`SLOW`] or more.
    slow: Option<Slow>,
}

impl Status {
    /// The crawl's numbers in `snapshot`.
    fn of(snapshot: &Snapshot) -> Status {
        let queues = &snapshot.frontier.queues;
        Status {
            pages: snapshot.records,
            rate: snapshot.records as f64 / snapshot.seconds(),
            queued: queues.queued,
            in_flight: queues.in_flight,
            errors: snapshot.error_count(),
            slow: snapshot.slow.clone(),
        }
    }
}

impl std::fmt::Display for Status {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}, {}/s, {} queued, {} in flight, {}",
            plural(self.pages, "page", "pages"),
            count(self.rate.round() as u64),
            count(self.queued),
            count(self.in_flight),
            plural(self.errors, "error", "errors"),
        )?;
        // Last, so that a terminal too narrow cuts the URL rather than the counts.
        if let Some(slow) = &self.slow {
            write!(f, "; waiting {} s for {}", slow.for_.as_secs(), slow.url)?;
            if slow.others > 0 {
                write!(
                    f,
                    " and {} more over {} s",
                    count(slow.others as u64),
                    SLOW.as_secs()
                )?;
            }
        }
        Ok(())
    }
}

/// How a crawl that ran its course ended, for the summary to say.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Ending {
    /// Resumed from a checkpoint: the frontier's counts are the whole crawl's, not this run's.
    pub(crate) resumed: bool,
    /// A state directory keeps what is left queued for `--resume`.
    pub(crate) keeps_state: bool,
}

/// The final summary. This run's counts come from the crawler; the URLs', the hosts' and the
/// seen-test's from the frontier, which, `resumed` from a checkpoint, counts since the crawl
/// began: the summary then says which is which.
pub(crate) fn summary(snapshot: &Snapshot, ending: Ending) -> String {
    let resumed = ending.resumed;
    let seconds = snapshot.seconds();
    let pages = snapshot.records;
    let mut s = String::new();
    let _ = writeln!(
        s,
        "{}crawled {} in {seconds:.1} s, {} per second, and read {}",
        if resumed { "this run: " } else { "" },
        plural(pages, "URL", "URLs"),
        rate(pages as f64 / seconds),
        bytes(snapshot.bytes)
    );
    if snapshot.reached_max_pages {
        let _ = writeln!(s, "  {}", max_pages_line(snapshot, ending));
    }
    answers(&mut s, snapshot);
    links(&mut s, snapshot);
    bodies(&mut s, snapshot);
    if let Some(shared) = &snapshot.shared {
        whole_crawl(&mut s, shared, pages);
    }
    if resumed {
        let _ = writeln!(s, "since the crawl began, earlier runs included:");
    }
    urls_and_hosts(&mut s, snapshot);
    seen_test(&mut s, snapshot);
    s
}

/// The summary's lines on the answers: by status, errors and retries.
fn answers(s: &mut String, snapshot: &Snapshot) {
    let classes = ["with no answer", "1xx", "2xx", "3xx", "4xx", "5xx"];
    let by_class: Vec<String> = classes
        .iter()
        .zip(&snapshot.by_class)
        .filter(|(_, n)| **n > 0)
        .map(|(name, n)| format!("{} {name}", count(*n)))
        .collect();
    let _ = writeln!(s, "  by status: {}", join_or_none(&by_class));
    // The error names are the records' `error` values, to find them in the records.
    let errors: Vec<String> = snapshot
        .errors
        .iter()
        .map(|(k, n)| format!("{} {k}", count(*n)))
        .collect();
    let _ = writeln!(
        s,
        "  errors: {}; {}",
        join_or_none(&errors),
        plural(snapshot.retries, "retry", "retries")
    );
}

/// The summary's lines on links and sitemaps.
fn links(s: &mut String, snapshot: &Snapshot) {
    let links = &snapshot.links;
    // Named only when it cut some page short: the key is then the thing to know.
    let over_cap = match links.over_cap {
        0 => String::new(),
        n => format!(
            ", {} not followed because their page had more than \
             extract.max_links_per_page ({})",
            count(n),
            count(snapshot.max_links_per_page as u64)
        ),
    };
    let _ = writeln!(
        s,
        "  links: {} found ({} of frames), {} not followed because of nofollow{over_cap}",
        count(links.found),
        count(links.frames),
        count(links.nofollow),
    );
    if let Some(requisites) = snapshot.requisites {
        let _ = writeln!(
            s,
            "  page requisites: {} of the records (what pages need to render)",
            count(requisites)
        );
    }
    let sitemaps = &snapshot.sitemaps;
    // Only for crawls that met sitemaps: most summaries are of sites without one.
    if sitemaps.read > 0 || sitemaps.refused > 0 {
        let _ = writeln!(
            s,
            "  sitemaps: {} read, listing {}; {} dropped (past the protocol's limits, too \
             long, not URLs); {} not taken (nested too deep, or too many)",
            count(sitemaps.read),
            plural(sitemaps.listed, "URL", "URLs"),
            plural(sitemaps.dropped, "entry", "entries"),
            plural(sitemaps.refused, "sitemap", "sitemaps")
        );
    }
}

/// The summary's lines on bodies: duplicates, and what a recrawl found changed.
fn bodies(s: &mut String, snapshot: &Snapshot) {
    if let Some(c) = &snapshot.duplicates {
        // This run's: a resumed crawl starts with an empty content-seen test.
        let tested = plural(c.tested, "non-empty 2xx body", "non-empty 2xx bodies");
        if c.in_redis {
            let _ = writeln!(
                s,
                "  duplicates: {} of {tested} had been read before under another URL, by a \
                 process of the crawl (the test is kept in Redis, with the seen-test)",
                count(c.duplicates),
            );
        } else {
            let _ = writeln!(
                s,
                "  duplicates: {} of {tested} had been read before under another URL ({} of \
                 them expected to be new bodies wrongly taken for one); their fingerprints \
                 take {} of memory",
                count(c.duplicates),
                expected(c.expected_false_duplicates),
                bytes(c.filter_bytes as u64)
            );
        }
    }
    if let Some(r) = &snapshot.recrawl {
        let [unchanged, changed, new, gone] = r.by_kind;
        let _ = writeln!(
            s,
            "  since the earlier crawl (--since): {} unchanged ({} answered 304 Not Modified, \
             {} not sent again), {} changed, {} new, {} gone",
            count(unchanged),
            count(r.not_modified),
            bytes(r.bytes_unsent),
            count(changed),
            count(new),
            count(gone),
        );
    }
}

/// The summary's lines on the whole of a shared crawl, of which this process recorded
/// `pages`.
fn whole_crawl(s: &mut String, shared: &crate::snapshot::Shared, pages: u64) {
    let t = &shared.totals;
    let _ = writeln!(
        s,
        "  whole crawl {:?}, all its processes: {} done, {} seen, {} queued, {} leased; \
         {} came back from processes that stopped; this process sent {}{}",
        shared.name,
        plural(t.done, "URL", "URLs"),
        count(t.seen),
        count(t.queued),
        count(t.leased),
        plural(t.reaped, "lease", "leases"),
        plural(shared.requests, "Redis request", "Redis requests"),
        // A process that recorded nothing still asked for work: no ratio to give.
        if pages > 0 {
            format!(
                ", {:.2} per URL recorded",
                shared.requests as f64 / pages as f64
            )
        } else {
            String::new()
        }
    );
    if shared.given_back > 0 {
        let _ = writeln!(
            s,
            "  this process gave back {} to wait for their address's turn (held off in its \
             memory; see the guide's limits per address)",
            plural(shared.given_back, "lease", "leases")
        );
    }
    if shared.late > 0 {
        // Each said in a warning when it happened; the count, for the whole run.
        let _ = writeln!(
            s,
            "  {} of this process's came too late: their leases had expired, and \
             another process fetches their URLs again",
            plural(shared.late, "completion", "completions")
        );
    }
}

/// The summary's lines on the frontier's URLs and hosts.
fn urls_and_hosts(s: &mut String, snapshot: &Snapshot) {
    let frontier = &snapshot.frontier;
    let a = &frontier.admission;
    let dropped: Vec<String> = a
        .dropped
        .iter()
        .chain(&a.invalid)
        .map(|(reason, n)| format!("{} {}", count(*n), reason.replace('_', " ")))
        .collect();
    let _ = writeln!(
        s,
        "  URLs: {} new, {} already seen; skipped: {}",
        count(a.new),
        count(a.seen),
        join_or_none(&dropped)
    );
    let q = &frontier.queues;
    let given_up = match q.given_up_hosts {
        0 => "none given up".to_owned(),
        hosts => format!(
            "{} given up after failing for politeness.give_up_after, with {} recorded as \
             host_given_up",
            count(hosts),
            plural(q.given_up_urls, "URL", "URLs")
        ),
    };
    let _ = writeln!(
        s,
        "  hosts: {}, {given_up}; {} left queued",
        count(q.hosts),
        plural(q.queued, "URL", "URLs")
    );
}

/// The summary's lines on the seen-test: its memory and its false-positive rate.
fn seen_test(s: &mut String, snapshot: &Snapshot) {
    let seen = &snapshot.frontier.admission.seen_set;
    // The shared frontier's seen-test is Redis's (the whole crawl's), sets of fingerprints;
    // the local one a Bloom filter that adds a larger one each time it fills.
    let (memory, filter) = match snapshot.shared {
        Some(_) => ("Redis memory", "sets of fingerprints"),
        None => ("memory", "a Bloom filter"),
    };
    let grown = match seen.sub_filters {
        0 | 1 => String::new(),
        2 => "; it has grown once as URLs came".to_owned(),
        n => format!(
            "; it has grown {} as URLs came",
            plural(n as u64 - 1, "time", "times")
        ),
    };
    let _ = writeln!(
        s,
        "  seen URLs: {} remembered in {} of {memory} ({filter}{grown})",
        count(seen.urls),
        bytes(seen.filter_bytes as u64),
    );
    // An estimate of 0 is a rate too small for a float, not a promise.
    let now = one_in(seen.estimated_rate.max(f64::MIN_POSITIVE));
    let now = if now.starts_with("well under") {
        now
    } else {
        format!("about {now}")
    };
    let _ = writeln!(
        s,
        "  chance that a new URL is wrongly taken for a seen one, and skipped: {now} now \
         (frontier.seen_false_positive_rate: {}); URLs expected to be so skipped so far: {}",
        one_in(seen.target_rate),
        expected(seen.expected_wrongly_dropped)
    );
}

/// What stopping at `crawl.max_pages` did, and what becomes of the URLs left queued.
fn max_pages_line(snapshot: &Snapshot, ending: Ending) -> String {
    let queued = snapshot.frontier.queues.queued;
    let left = match (queued, snapshot.shared.is_some()) {
        (0, _) => "nothing was left queued".to_owned(),
        (n, true) => format!(
            "the {} left queued stay in Redis for this crawl's other processes, or the next \
             to join it",
            plural(n, "URL", "URLs")
        ),
        (n, false) if ending.keeps_state => format!(
            "the {} left queued are kept in the state directory: --resume crawls on from them \
             (up to crawl.max_pages more; --max-pages 0 for all)",
            plural(n, "URL", "URLs")
        ),
        (n, false) => format!(
            "the {} left queued were not fetched (with --state-dir they are kept for --resume)",
            plural(n, "URL", "URLs")
        ),
    };
    format!(
        "stopped: crawl.max_pages (--max-pages) is {}, and that many URLs have their record; \
         {left}",
        count(snapshot.max_pages)
    )
}

/// An expected count of mistakes: `"fewer than 0.01"` rather than a bare `0.00`, which reads
/// as a promise of none; else to two decimals.
fn expected(n: f64) -> String {
    if n < 0.005 {
        "fewer than 0.01".to_owned()
    } else {
        format!("about {n:.2}")
    }
}

/// Pages per second: whole above 10, else to one decimal, so that a slow crawl does not read
/// "0 per second".
fn rate(per_second: f64) -> String {
    if per_second >= 10.0 {
        count(per_second.round() as u64)
    } else {
        format!("{per_second:.1}")
    }
}

/// `n` and the noun, in the singular for 1: `"1 URL"`, `"0 URLs"`, `"12,345 URLs"`.
pub(crate) fn plural(n: u64, one: &str, many: &str) -> String {
    format!("{} {}", count(n), if n == 1 { one } else { many })
}

fn join_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

/// The hosts no record of which had an answer, and why, at most `MAX_FAILED_HOSTS` of them:
/// empty when every host answered at least once.
pub(crate) fn failed_hosts(failed: &[FailedHost]) -> String {
    const MAX_FAILED_HOSTS: usize = 10;
    let mut s = String::new();
    if failed.is_empty() {
        return s;
    }
    let _ = writeln!(
        s,
        "  hosts that could not be crawled: {}",
        count(failed.len() as u64)
    );
    for host in failed.iter().take(MAX_FAILED_HOSTS) {
        let _ = writeln!(
            s,
            "    {} ({}): {}",
            host.host,
            plural(host.urls, "URL", "URLs"),
            why_failed(host)
        );
    }
    if failed.len() > MAX_FAILED_HOSTS {
        let _ = writeln!(
            s,
            "    and {} more (see the records' error_detail)",
            count((failed.len() - MAX_FAILED_HOSTS) as u64)
        );
    }
    s
}

/// Why a host could not be crawled: its last error, and the detail when there is one.
fn why_failed(host: &FailedHost) -> String {
    if host.detail.is_empty() {
        host.error.to_string()
    } else {
        format!("{}: {}", host.error, host.detail)
    }
}

/// `12345` as `"12,345"`.
pub(crate) fn count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, digit) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i).is_multiple_of(3) {
            out.push(',');
        }
        out.push(digit);
    }
    out
}

/// A byte count in binary units, to two or three significant digits: `"512 bytes"`,
/// `"1.2 MiB"`, `"483 MiB"`.
pub(crate) fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["bytes", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = n as f64;
    let mut unit = 0;
    // Compared after rounding, so that 1,048,575 bytes is "1.0 MiB", not "1024 KiB".
    while unit + 1 < UNITS.len() && rounded(value) >= 1024.0 {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{n} bytes")
    } else if rounded(value) < 10.0 {
        format!("{value:.1} {}", UNITS[unit])
    } else {
        format!("{value:.0} {}", UNITS[unit])
    }
}

/// `value` as [`bytes()`] prints it.
fn rounded(value: f64) -> f64 {
    if value < 10.0 {
        (value * 10.0).round() / 10.0
    } else {
        value.round()
    }
}

/// A rate as one in so many, to two significant digits: `1e-6` is `"1 in 1,000,000"`,
/// `3.2e-7` is `"1 in 3,100,000"`; below one in a billion, `"well under 1 in a billion"`.
/// Rates of 1 or more are `"all"`, of 0 `"none"`.
pub(crate) fn one_in(rate: f64) -> String {
    /// Beyond this, the number says nothing a person acts on, and its digits are noise: the
    /// estimate is not that precise.
    const FEWEST: f64 = 1e9;
    if rate.is_nan() || rate <= 0.0 {
        return "none".to_owned();
    }
    if rate >= 1.0 {
        return "all".to_owned();
    }
    let n = 1.0 / rate;
    if n > FEWEST {
        return "well under 1 in a billion".to_owned();
    }
    let scale = 10f64.powi(n.log10().floor() as i32 - 1).max(1.0);
    format!("1 in {}", count(((n / scale).round() * scale) as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_have_thousands_separators() {
        assert_eq!(count(0), "0");
        assert_eq!(count(999), "999");
        assert_eq!(count(1_000), "1,000");
        assert_eq!(count(12_345), "12,345");
        assert_eq!(count(506_596_031), "506,596,031");
        assert_eq!(count(u64::MAX), "18,446,744,073,709,551,615");
    }

    #[test]
    fn bytes_take_binary_units() {
        assert_eq!(bytes(0), "0 bytes");
        assert_eq!(bytes(1023), "1023 bytes");
        assert_eq!(bytes(1024), "1.0 KiB");
        assert_eq!(bytes(1_258_291), "1.2 MiB");
        assert_eq!(bytes(506_596_031), "483 MiB");
        assert_eq!(bytes(1_048_575), "1.0 MiB");
        assert_eq!(bytes(10 << 30), "10 GiB");
        assert_eq!(bytes(u64::MAX), "16384 PiB");
    }

    #[test]
    fn rates_read_as_one_in_so_many() {
        assert_eq!(one_in(1e-6), "1 in 1,000,000");
        assert_eq!(one_in(3.2e-7), "1 in 3,100,000");
        assert_eq!(one_in(0.5), "1 in 2");
        assert_eq!(one_in(0.07), "1 in 14");
        assert_eq!(one_in(1.0), "all");
        assert_eq!(one_in(0.0), "none");
        assert_eq!(one_in(1e-9), "1 in 1,000,000,000");
        // What a seen-test far from full estimates: not a 16-digit number.
        assert_eq!(one_in(1e-12), "well under 1 in a billion");
        assert_eq!(one_in(1e-40), "well under 1 in a billion");
    }

    #[test]
    fn small_expectations_and_slow_rates_do_not_read_as_zero() {
        assert_eq!(expected(0.0), "fewer than 0.01");
        assert_eq!(expected(0.004), "fewer than 0.01");
        assert_eq!(expected(0.25), "about 0.25");
        assert_eq!(rate(0.49), "0.5");
        assert_eq!(rate(12_345.4), "12,345");
    }

    #[test]
    fn counts_agree_with_their_noun() {
        assert_eq!(plural(0, "URL", "URLs"), "0 URLs");
        assert_eq!(plural(1, "URL", "URLs"), "1 URL");
        assert_eq!(plural(2, "retry", "retries"), "2 retries");
        assert_eq!(plural(1, "retry", "retries"), "1 retry");
        assert_eq!(plural(12_345, "URL", "URLs"), "12,345 URLs");
    }

    /// Regression: the offline demo sat 20 s on "1 in flight" with no word of
    /// which URL.
    #[test]
    fn a_url_in_flight_long_is_named_in_the_status() {
        let in_flight = crate::crawl::InFlight::new(3);
        let t0 = std::time::Instant::now();
        let s = Duration::from_secs;
        let hang = in_flight.start(0, "http://127.0.0.1:9/hang", t0);
        let _quick = in_flight.start(1, "http://127.0.0.1:9/quick", t0 + s(9));
        assert_eq!(in_flight.slow(t0 + s(4), SLOW), None);
        let slow = in_flight.slow(t0 + s(12), SLOW).unwrap();
        assert_eq!(slow.url, "http://127.0.0.1:9/hang");
        assert_eq!(slow.for_, s(12));
        assert_eq!(slow.others, 0);
        let status = Status {
            pages: 10_004,
            in_flight: 2,
            slow: Some(slow),
            ..Status::default()
        };
        assert_eq!(
            status.to_string(),
            "10,004 pages, 0/s, 0 queued, 2 in flight, 0 errors; waiting 12 s for \
             http://127.0.0.1:9/hang"
        );
        // Both over: the oldest is named, the other counted.
        let slow = in_flight.slow(t0 + s(15), SLOW).unwrap();
        assert_eq!(
            (slow.url.as_str(), slow.others),
            ("http://127.0.0.1:9/hang", 1)
        );
        // A visit that ends leaves no trace.
        drop(hang);
        let slow = in_flight.slow(t0 + s(15), SLOW).unwrap();
        assert_eq!(
            (slow.url.as_str(), slow.others),
            ("http://127.0.0.1:9/quick", 0)
        );
    }

    #[test]
    fn logs_are_written_whole_around_a_live_bar() {
        use std::io::Write;
        *LIVE_BAR.lock().unwrap() = Some(ProgressBar::hidden());
        let line = b"a log line the test writes to standard error\n";
        assert_eq!(LogWriter.write(line).unwrap(), line.len());
        LIVE_BAR.lock().unwrap().take();
        assert_eq!(LogWriter.write(line).unwrap(), line.len());
    }

    #[test]
    fn logs_are_coloured_only_on_a_terminal_without_no_color() {
        assert!(colour_for(true, None));
        assert!(colour_for(true, Some("".into())));
        assert!(!colour_for(true, Some("1".into())));
        assert!(!colour_for(false, None));
    }

    #[test]
    fn auto_shows_a_bar_only_on_a_terminal_free_of_records() {
        use config::Progress::{Auto, Bar, Lines, Off};
        assert_eq!(display_mode(Auto, true, false), Bar);
        assert_eq!(display_mode(Auto, true, true), Lines);
        assert_eq!(display_mode(Auto, false, false), Lines);
        assert_eq!(display_mode(Bar, true, true), Bar);
        assert_eq!(display_mode(Off, true, false), Off);
    }

    #[test]
    fn the_status_fits_an_80_column_terminal() {
        // The benchmark's crawl at its end: 100,000 pages at 26,000 pages/s.
        let status = Status {
            pages: 100_000,
            rate: 25_840.4,
            queued: 66_413,
            in_flight: 128,
            errors: 12,
            slow: None,
        };
        let text = status.to_string();
        assert_eq!(
            text,
            "100,000 pages, 25,840/s, 66,413 queued, 128 in flight, 12 errors"
        );
        // The spinner, a space, the time (00:00:04) and a space go before it.
        assert!(2 + 8 + 1 + text.chars().count() <= 80, "{text}");
        // Longer ones are cut to the terminal's width rather than wrapped.
        assert!(BAR_TEMPLATE.ends_with("{wide_msg}"));
        ProgressStyle::with_template(BAR_TEMPLATE).unwrap();
    }
}
