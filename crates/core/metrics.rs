//! Live metrics (`--metrics ADDR`, Prometheus text format at `/metrics`) and the
//! machine-readable summary (`--summary-json FILE`): the same numbers as the summary, for the
//! tools operators already run.

use std::fmt::Write as _;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::snapshot::{FailedHost, LATENCY_BUCKETS, Snapshot};

/// The metrics in Prometheus text format (version 0.0.4).
pub(crate) fn render(snapshot: &Snapshot) -> String {
    let frontier = &snapshot.frontier;
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
        .zip(&snapshot.by_class)
    {
        let _ = writeln!(o, "crawler_records_total{{class=\"{class}\"}} {n}");
    }
    family(
        o,
        "crawler_errors_total",
        "counter",
        "URLs recorded with an error, by the error kind of their record.",
    );
    for (kind, n) in &snapshot.errors {
        let _ = writeln!(o, "crawler_errors_total{{kind=\"{kind}\"}} {n}");
    }
    let q = &frontier.queues;
    let seen = &frontier.admission.seen_set;
    let single: [(&str, &str, &str, String); 12] = [
        (
            "crawler_body_bytes_total",
            "counter",
            "Body bytes read, after decompression.",
            snapshot.bytes.to_string(),
        ),
        (
            "crawler_retries_total",
            "counter",
            "Tries that failed and were retried.",
            snapshot.retries.to_string(),
        ),
        (
            "crawler_links_total",
            "counter",
            "Links found on pages.",
            snapshot.links.found.to_string(),
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
    for (i, n) in snapshot.latency.buckets.iter().enumerate() {
        cumulative += n;
        let le = LATENCY_BUCKETS
            .get(i)
            .map_or_else(|| "+Inf".to_owned(), f64::to_string);
        let _ = writeln!(
            o,
            "crawler_fetch_seconds_bucket{{le=\"{le}\"}} {cumulative}"
        );
    }
    let sum = snapshot.latency.sum.as_secs_f64();
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
pub(crate) async fn serve(
    listener: TcpListener,
    snapshot: impl Fn() -> Snapshot + Send + Sync + 'static,
    stop: CancellationToken,
) {
    let snapshot = Arc::new(snapshot);
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            () = stop.cancelled() => return,
        };
        let Ok((stream, _)) = accepted else { continue };
        let snapshot = Arc::clone(&snapshot);
        tokio::spawn(async move {
            // A client that never finishes its request is dropped.
            let answered = answer(stream, || snapshot());
            let _ = tokio::time::timeout(Duration::from_secs(10), answered).await;
        });
    }
}

async fn answer(mut stream: TcpStream, snapshot: impl Fn() -> Snapshot) -> std::io::Result<()> {
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
        ("200 OK", render(&snapshot()))
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
pub(crate) fn summary_json(
    snapshot: &Snapshot,
    failed_hosts: &[FailedHost],
    resumed: bool,
) -> serde_json::Value {
    let frontier = &snapshot.frontier;
    let classes = ["none", "1xx", "2xx", "3xx", "4xx", "5xx"];
    let by_class: serde_json::Map<String, serde_json::Value> = classes
        .iter()
        .zip(&snapshot.by_class)
        .map(|(class, n)| ((*class).to_owned(), json!(n)))
        .collect();
    let errors: serde_json::Map<String, serde_json::Value> = snapshot
        .errors
        .iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    let dropped: serde_json::Map<String, serde_json::Value> = frontier
        .admission
        .dropped
        .iter()
        .chain(&frontier.admission.invalid)
        .map(|(reason, n)| ((*reason).to_owned(), json!(n)))
        .collect();
    let failed_hosts: Vec<serde_json::Value> = failed_hosts
        .iter()
        .map(|h| json!({"host": h.host, "urls": h.urls, "error": h.error, "detail": h.detail}))
        .collect();
    let q = &frontier.queues;
    let seen = &frontier.admission.seen_set;
    let sitemaps = &snapshot.sitemaps;
    // Null without the content-seen test (`crawl.content_seen` off), as the text summary
    // then has no line for it.
    let duplicates = snapshot.duplicates.as_ref().map(|c| {
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
            "records": snapshot.records,
            "seconds": snapshot.elapsed.as_secs_f64(),
            "by_status_class": by_class,
            "errors": errors,
            "retries": snapshot.retries,
            "body_bytes": snapshot.bytes,
            "links": snapshot.links.found,
            "links_from_frames": snapshot.links.frames,
            "links_nofollow": snapshot.links.nofollow,
            "links_over_cap": snapshot.links.over_cap,
            // Null unless the crawl fetches page requisites.
            "requisites": snapshot.requisites,
            "hosts_not_crawled": failed_hosts,
            "stopped_at_max_pages": snapshot.reached_max_pages,
            "duplicates": duplicates,
            // Null unless a recrawl (`--since`).
            "recrawl": snapshot.recrawl.as_ref().map(|r| {
                let [unchanged, changed, new, gone] = r.by_kind;
                json!({
                    "unchanged": unchanged,
                    "changed": changed,
                    "new": new,
                    "gone": gone,
                    "not_modified": r.not_modified,
                    "bytes_not_sent_again": r.bytes_unsent,
                })
            }),
            "sitemaps": {
                "read": sitemaps.read,
                "urls_listed": sitemaps.listed,
                "entries_dropped": sitemaps.dropped,
                "not_taken": sitemaps.refused,
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
