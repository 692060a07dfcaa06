//! What a person sees on standard error: live progress while the crawl runs, and the summary
//! at the end.

use std::fmt::Write as _;
use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::config::{self, Output};
use crate::crawl::Crawler;

/// The progress display's task.
pub(crate) struct Progress {
    stop: Option<oneshot::Sender<()>>,
    task: Option<JoinHandle<()>>,
}

impl Progress {
    /// Starts showing progress as `output.progress` asks: a live bar on a terminal, or a
    /// status line every `output.status_interval`.
    pub(crate) fn start(crawler: &Arc<Crawler>, output: &Output) -> Progress {
        let mode = match output.progress {
            config::Progress::Auto if std::io::stderr().is_terminal() => config::Progress::Bar,
            config::Progress::Auto => config::Progress::Lines,
            mode => mode,
        };
        let (stop, mut stopped) = oneshot::channel();
        let crawler = Arc::clone(crawler);
        let interval = output.status_interval.max(Duration::from_millis(100));
        let task = match mode {
            config::Progress::Off | config::Progress::Auto => None,
            config::Progress::Bar => Some(tokio::spawn(async move {
                let bar = ProgressBar::new_spinner();
                bar.set_style(
                    ProgressStyle::with_template("{spinner} {elapsed_precise} {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
                loop {
                    bar.set_message(status(&crawler));
                    bar.tick();
                    tokio::select! {
                        _ = &mut stopped => break,
                        () = tokio::time::sleep(Duration::from_millis(200)) => {}
                    }
                }
                bar.finish_and_clear();
            })),
            config::Progress::Lines => Some(tokio::spawn(async move {
                loop {
                    tokio::select! {
                        _ = &mut stopped => break,
                        () = tokio::time::sleep(interval) => eprintln!("{}", status(&crawler)),
                    }
                }
            })),
        };
        Progress {
            stop: Some(stop),
            task,
        }
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

/// One line: pages, rate, queue, hosts, errors, filter fill.
fn status(crawler: &Crawler) -> String {
    let stats = &crawler.stats;
    let pages = stats.records.load(Ordering::Relaxed);
    let seconds = crawler.elapsed().as_secs_f64().max(1e-3);
    let frontier = crawler.frontier().stats();
    let errors: u64 = stats
        .errors
        .lock()
        .map(|e| e.values().sum())
        .unwrap_or_default();
    let seen = &frontier.admission.seen_set;
    format!(
        "{pages} pages, {:.0} pages/s, {} queued, {} in flight, {} hosts, {errors} errors, \
         seen-test {} URLs in {:.1} MB",
        pages as f64 / seconds,
        frontier.queues.queued,
        frontier.queues.in_flight,
        frontier.queues.hosts,
        seen.urls,
        seen.filter_bytes as f64 / 1e6,
    )
}

/// The final summary.
pub(crate) fn summary(crawler: &Crawler) -> String {
    let stats = &crawler.stats;
    let frontier = crawler.frontier().stats();
    let seconds = crawler.elapsed().as_secs_f64().max(1e-3);
    let pages = stats.records.load(Ordering::Relaxed);
    let mut s = String::new();
    let _ = writeln!(
        s,
        "crawled {pages} URLs in {seconds:.1} s ({:.0} per second), {} bytes",
        pages as f64 / seconds,
        stats.bytes.load(Ordering::Relaxed)
    );
    let classes = ["no answer", "1xx", "2xx", "3xx", "4xx", "5xx"];
    let by_class: Vec<String> = classes
        .iter()
        .zip(&stats.by_class)
        .filter_map(|(name, n)| {
            let n = n.load(Ordering::Relaxed);
            (n > 0).then(|| format!("{name}: {n}"))
        })
        .collect();
    let _ = writeln!(s, "  by status: {}", join_or_none(&by_class));
    let errors: Vec<String> = stats
        .errors
        .lock()
        .map(|e| e.iter().map(|(k, n)| format!("{k}: {n}")).collect())
        .unwrap_or_default();
    let _ = writeln!(
        s,
        "  errors: {} ({} retries)",
        join_or_none(&errors),
        stats.retries.load(Ordering::Relaxed)
    );
    let _ = writeln!(
        s,
        "  links: {} found, {} not followed (nofollow), {} over the per-page cap",
        stats.links.load(Ordering::Relaxed),
        stats.nofollow.load(Ordering::Relaxed),
        stats.over_cap.load(Ordering::Relaxed)
    );
    let a = &frontier.admission;
    let dropped: Vec<String> = a
        .dropped
        .iter()
        .chain(&a.invalid)
        .map(|(reason, n)| format!("{reason}: {n}"))
        .collect();
    let _ = writeln!(
        s,
        "  URLs: {} new, {} already seen; dropped: {}",
        a.new,
        a.seen,
        join_or_none(&dropped)
    );
    let q = &frontier.queues;
    let _ = writeln!(
        s,
        "  queues: {} hosts, {} left queued, {} hosts given up ({} URLs dropped with them, \
         recorded only if in flight)",
        q.hosts, q.queued, q.given_up_hosts, q.given_up_urls
    );
    let seen = &a.seen_set;
    let _ = writeln!(
        s,
        "  seen-test: {} URLs in {:.1} MB ({} sub-filters), estimated false-positive rate \
         {:.1e} (target {:.0e}), expected wrongly dropped URLs {:.2}",
        seen.urls,
        seen.filter_bytes as f64 / 1e6,
        seen.sub_filters,
        seen.estimated_rate,
        seen.target_rate,
        seen.expected_wrongly_dropped
    );
    s
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
pub(crate) fn failed_hosts(crawler: &Crawler) -> String {
    const MAX_FAILED_HOSTS: usize = 10;
    let failed = crawler.stats.failed_hosts();
    let mut s = String::new();
    if failed.is_empty() {
        return s;
    }
    let _ = writeln!(s, "  hosts that could not be crawled: {}", failed.len());
    for host in failed.iter().take(MAX_FAILED_HOSTS) {
        let urls = if host.urls == 1 { "URL" } else { "URLs" };
        let _ = writeln!(
            s,
            "    {} ({} {urls}): {}: {}",
            host.host, host.urls, host.error, host.detail
        );
    }
    if failed.len() > MAX_FAILED_HOSTS {
        let _ = writeln!(
            s,
            "    and {} more (see the records' error_detail)",
            failed.len() - MAX_FAILED_HOSTS
        );
    }
    s
}
