//! Live metrics (`--metrics ADDR`, Prometheus text format at `/metrics`) and the
//! machine-readable summary (`--summary-json FILE`): the same numbers as the summary, for the
//! tools operators already run.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::crawl::Crawler;

/// Upper bounds of the fetch latency histogram's buckets, in seconds (the last is `+Inf`).
pub(crate) const LATENCY_BUCKETS: [f64; 11] = [
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

/// How long the fetches of the records took (the last try, request to end of body).
#[derive(Debug, Default)]
pub(crate) struct Latency {
    /// Records per bucket of [`LATENCY_BUCKETS`], then above the last.
    buckets: [AtomicU64; LATENCY_BUCKETS.len() + 1],
    /// The sum of the times, in microseconds.
    sum_micros: AtomicU64,
}

impl Latency {
    pub(crate) fn observe(&self, took: Duration) {
        let seconds = took.as_secs_f64();
        let bucket = LATENCY_BUCKETS
            .iter()
            .position(|&le| seconds <= le)
            .unwrap_or(LATENCY_BUCKETS.len());
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
    }
}

/// The address `--metrics` serves on: `HOST:PORT`, or a bare port (`9898`, `:9898`) on the
/// loopback address, so that metrics are not served to the network unless asked.
pub(crate) fn address(text: &str) -> Result<SocketAddr, String> {
    let text = text.trim();
    if let Ok(addr) = text.parse::<SocketAddr>() {
        return Ok(addr);
    }
    match text.trim_start_matches(':').parse::<u16>() {
        Ok(port) => Ok(SocketAddr::from(([127, 0, 0, 1], port))),
        Err(_) => Err(format!(
            "{text:?} is not an address: give HOST:PORT (127.0.0.1:9898) or a port (9898)"
        )),
    }
}

/// The metrics in Prometheus text format (version 0.0.4).
pub(crate) fn render(crawler: &Crawler) -> String {
    let stats = &crawler.stats;
    let frontier = crawler.frontier().stats();
    let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
    let mut out = String::new();
    let o = &mut out;

    family(
        o,
        "crawler_records_total",
        "counter",
        "URLs recorded, by HTTP status class (none: no answer).",
    );
    for (class, n) in ["none", "1xx", "2xx", "3xx", "4xx", "5xx"]
        .iter()
        .zip(&stats.by_class)
    {
        let _ = writeln!(o, "crawler_records_total{{class=\"{class}\"}} {}", load(n));
    }
    family(
        o,
        "crawler_errors_total",
        "counter",
        "URLs recorded with an error, by the error kind of their record.",
    );
    if let Ok(by_kind) = stats.errors.lock() {
        for (kind, n) in by_kind.iter() {
            let _ = writeln!(o, "crawler_errors_total{{kind=\"{kind}\"}} {n}");
        }
    }
    let q = &frontier.queues;
    let seen = &frontier.admission.seen_set;
    let single: [(&str, &str, &str, String); 12] = [
        (
            "crawler_body_bytes_total",
            "counter",
            "Body bytes read, after decompression.",
            load(&stats.bytes).to_string(),
        ),
        (
            "crawler_retries_total",
            "counter",
            "Tries that failed and were retried.",
            load(&stats.retries).to_string(),
        ),
        (
            "crawler_links_total",
            "counter",
            "Links found on pages.",
            load(&stats.links).to_string(),
        ),
        (
            "crawler_queued_urls",
            "gauge",
            "URLs waiting to be fetched, in memory or on disk.",
            q.queued.to_string(),
        ),
        (
            "crawler_in_flight_urls",
            "gauge",
            "URLs being fetched.",
            q.in_flight.to_string(),
        ),
        ("crawler_hosts", "gauge", "Hosts seen.", q.hosts.to_string()),
        (
            "crawler_hosts_with_queued_urls",
            "gauge",
            "Hosts with URLs waiting.",
            q.hosts_queued.to_string(),
        ),
        (
            "crawler_hosts_given_up",
            "gauge",
            "Hosts given up after failing for politeness.give_up_after.",
            q.given_up_hosts.to_string(),
        ),
        (
            "crawler_urls_given_up",
            "gauge",
            "URLs recorded as host_given_up.",
            q.given_up_urls.to_string(),
        ),
        (
            "crawler_seen_urls",
            "gauge",
            "URLs the seen-test holds.",
            seen.urls.to_string(),
        ),
        (
            "crawler_seen_filter_bytes",
            "gauge",
            "Memory of the seen-test's Bloom filter.",
            seen.filter_bytes.to_string(),
        ),
        (
            "crawler_seen_false_positive_rate",
            "gauge",
            "The seen-test's estimated rate of new URLs wrongly taken for seen.",
            format!("{:e}", seen.estimated_rate),
        ),
    ];
    for (name, kind, help, value) in single {
        family(o, name, kind, help);
        let _ = writeln!(o, "{name} {value}");
    }
    family(
        o,
        "crawler_fetch_seconds",
        "histogram",
        "Time of each recorded fetch's last try, from request to end of body.",
    );
    let mut cumulative = 0;
    for (i, n) in stats.latency.buckets.iter().enumerate() {
        cumulative += load(n);
        let le = LATENCY_BUCKETS
            .get(i)
            .map_or_else(|| "+Inf".to_owned(), f64::to_string);
        let _ = writeln!(
            o,
            "crawler_fetch_seconds_bucket{{le=\"{le}\"}} {cumulative}"
        );
    }
    let sum = load(&stats.latency.sum_micros) as f64 / 1e6;
    let _ = writeln!(
        o,
        "crawler_fetch_seconds_sum {sum}\ncrawler_fetch_seconds_count {cumulative}"
    );
    out
}

/// A metric family's two header lines.
fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
}

/// Serves `/metrics` on `listener` until `stop` is cancelled. One request per connection;
/// anything but `GET /metrics` is answered 404.
pub(crate) async fn serve(listener: TcpListener, crawler: Arc<Crawler>, stop: CancellationToken) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let crawler = Arc::clone(&crawler);
        tokio::spawn(async move {
            // A client that never finishes its request is dropped.
            let _ = tokio::time::timeout(Duration::from_secs(10), answer(stream, &crawler)).await;
        });
    }
}

async fn answer(mut stream: TcpStream, crawler: &Crawler) -> std::io::Result<()> {
    let mut request = Vec::new();
    let mut buf = [0; 1024];
    // Up to the end of the headers, at most 8 KiB.
    while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
        let n = stream.read(&mut buf).await?;
        if n == 0 {
            break;
        }
        request.extend_from_slice(&buf[..n]);
    }
    let line = request.split(|&b| b == b'\n').next().unwrap_or_default();
    let wanted = line.starts_with(b"GET /metrics ") || line.starts_with(b"GET /metrics?");
    let (status, body) = if wanted {
        ("200 OK", render(crawler))
    } else {
        (
            "404 Not Found",
            "not found: metrics are at /metrics\n".to_owned(),
        )
    };
    let head = format!(
        "HTTP/1.1 {status}\r\ncontent-type: text/plain; version=0.0.4; charset=utf-8\r\n\
         content-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).await?;
    stream.write_all(body.as_bytes()).await?;
    stream.shutdown().await
}

/// The summary as JSON: this run's counts, and the whole crawl's.
pub(crate) fn summary_json(crawler: &Crawler, resumed: bool) -> serde_json::Value {
    let stats = &crawler.stats;
    let frontier = crawler.frontier().stats();
    let load = |n: &AtomicU64| n.load(Ordering::Relaxed);
    let classes = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"];
    let by_class: serde_json::Map<String, serde_json::Value> = classes
        .iter()
        .zip(&stats.by_class)
        .map(|(class, n)| ((*class).to_owned(), json!(load(n))))
        .collect();
    let errors: serde_json::Map<String, serde_json::Value> = stats
        .errors
        .lock()
        .map(|e| e.iter().map(|(k, n)| (k.to_string(), json!(n))).collect())
        .unwrap_or_default();
    let dropped: serde_json::Map<String, serde_json::Value> = frontier
        .admission
        .dropped
        .iter()
        .chain(&frontier.admission.invalid)
        .map(|(reason, n)| ((*reason).to_owned(), json!(n)))
        .collect();
    let failed_hosts: Vec<serde_json::Value> = stats
        .failed_hosts()
        .into_iter()
        .map(|h| json!({"host": h.host, "urls": h.urls, "error": h.error, "detail": h.detail}))
        .collect();
    let q = &frontier.queues;
    let seen = &frontier.admission.seen_set;
    let sitemaps = &crawler.sitemaps;
    // Null without the content-seen test (`crawl.content_seen` off), as the text summary
    // then has no line for it.
    let duplicates = crawler.content.as_ref().map(|content| {
        let c = content.stats();
        json!({
            "bodies_tested": c.tested,
            "duplicates": c.duplicates,
            "expected_false_duplicates": c.expected_false_duplicates,
            "filter_bytes": c.filter_bytes,
        })
    });
    json!({
        "resumed": resumed,
        "this_run": {
            "records": load(&stats.records),
            "seconds": crawler.elapsed().as_secs_f64(),
            "by_status_class": by_class,
            "errors": errors,
            "retries": load(&stats.retries),
            "body_bytes": load(&stats.bytes),
            "links": load(&stats.links),
            "links_from_frames": load(&stats.frames),
            "links_nofollow": load(&stats.nofollow),
            "links_over_cap": load(&stats.over_cap),
            "hosts_not_crawled": failed_hosts,
            "stopped_at_max_pages": crawler.reached_max_pages(),
            "duplicates": duplicates,
            "sitemaps": {
                "read": load(&sitemaps.fetched),
                "urls_listed": load(&sitemaps.listed),
                "entries_dropped": load(&sitemaps.dropped),
                "not_taken": load(&sitemaps.refused),
            },
        },
        "crawl": {
            "urls_new": frontier.admission.new,
            "urls_seen_again": frontier.admission.seen,
            "urls_dropped": dropped,
            "hosts": q.hosts,
            "hosts_given_up": q.given_up_hosts,
            "urls_given_up": q.given_up_urls,
            "queued": q.queued,
            "seen_test": {
                "urls": seen.urls,
                "filter_bytes": seen.filter_bytes,
                "estimated_false_positive_rate": seen.estimated_rate,
                "target_false_positive_rate": seen.target_rate,
                "expected_wrongly_skipped": seen.expected_wrongly_dropped,
            },
        },
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bare_port_is_served_on_loopback() {
        assert_eq!(address("9898").unwrap().to_string(), "127.0.0.1:9898");
        assert_eq!(address(":9898").unwrap().to_string(), "127.0.0.1:9898");
        assert_eq!(address("[::1]:7").unwrap().to_string(), "[::1]:7");
        assert_eq!(address("0.0.0.0:80").unwrap().to_string(), "0.0.0.0:80");
        assert!(address("localhost").unwrap_err().contains("HOST:PORT"));
    }

    #[test]
    fn latencies_fall_in_their_buckets() {
        let latency = Latency::default();
        latency.observe(Duration::from_millis(3));
        latency.observe(Duration::from_millis(80));
        latency.observe(Duration::from_secs(60));
        let counts: Vec<u64> = latency
            .buckets
            .iter()
            .map(|n| n.load(Ordering::Relaxed))
            .collect();
        assert_eq!(counts[0], 1); // <= 5 ms
        assert_eq!(counts[4], 1); // <= 100 ms
        assert_eq!(counts[LATENCY_BUCKETS.len()], 1); // +Inf
        assert_eq!(latency.sum_micros.load(Ordering::Relaxed), 60_083_000);
    }
}
