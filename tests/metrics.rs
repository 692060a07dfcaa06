use std::io::{BufRead, BufReader, Read, Write};
use std::process::{Command, Stdio};
use std::time::Duration;

use prometheus_parse::{Scrape, Value};
use testweb::{HostConfig, SiteConfig};

use crate::util::{Site, fast, ms, wait_or_kill};

fn scrape(addr: &str) -> Scrape {
    let mut stream = std::net::TcpStream::connect(addr).unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nhost: x\r\n\r\n")
        .unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let (head, body) = response.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap()
}

fn value(scrape: &Scrape, name: &str, label: Option<(&str, &str)>) -> f64 {
    let sample = scrape
        .samples
        .iter()
        .find(|s| s.metric == name && label.is_none_or(|(k, v)| s.labels.get(k) == Some(v)))
        .unwrap_or_else(|| panic!("no {name} {label:?}"));
    match &sample.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{name}: {other:?}"),
    }
}

/// `--metrics` serves Prometheus text while the crawl runs, parsed here as Prometheus would;
/// `--summary-json` writes the summary's numbers at the end.
#[test]
fn metrics_are_served_while_crawling_and_the_summary_written_as_json() {
    let site = Site::start(SiteConfig {
        pages_per_host: 150,
        host_configs: vec![HostConfig {
            latency: ms(20),
            ..HostConfig::default()
        }],
        ..SiteConfig::default()
    });
    let tmp = tempfile::tempdir().unwrap();
    let summary = tmp.path().join("summary.json");
    let mut args = fast();
    args.extend(
        [
            "--seed",
            &site.web.seeds()[0],
            "--connections-per-host",
            "2",
            "--metrics",
            "127.0.0.1:0",
            "--summary-json",
            summary.to_str().unwrap(),
            "--output",
            tmp.path().join("records.jsonl").to_str().unwrap(),
        ]
        .map(String::from),
    );
    let mut child = Command::new(env!("CARGO_BIN_EXE_crawler"))
        .args(&args)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap());
    let mut line = String::new();
    let addr = loop {
        line.clear();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "no metrics address"
        );
        if let Some(rest) = line.trim().strip_prefix("crawler: metrics at http://") {
            break rest.trim_end_matches("/metrics").to_owned();
        }
    };
    // While the crawl runs: some pages recorded, some queued.
    let mut during = scrape(&addr);
    for _ in 0..200 {
        if value(&during, "crawler_records_total", Some(("class", "2xx"))) >= 10.0 {
            break;
        }
        std::thread::sleep(ms(20));
        during = scrape(&addr);
    }
    assert!(value(&during, "crawler_records_total", Some(("class", "2xx"))) >= 10.0);
    assert!(value(&during, "crawler_seen_urls", None) > 0.0);
    assert!(value(&during, "crawler_hosts", None) >= 1.0);
    let histogram = during
        .samples
        .iter()
        .find(|s| s.metric == "crawler_fetch_seconds")
        .expect("the fetch time histogram");
    let Value::Histogram(buckets) = &histogram.value else {
        panic!("{:?}", histogram.value)
    };
    assert!(buckets.iter().any(|b| b.count > 0.0));
    // Anything but /metrics is a 404.
    let mut stream = std::net::TcpStream::connect(&addr).unwrap();
    stream.write_all(b"GET / HTTP/1.1\r\n\r\n").unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    assert!(response.starts_with("HTTP/1.1 404"), "{response}");

    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    let (output, hung) = wait_or_kill(child, Duration::from_secs(120));
    assert!(!hung && output.status.success(), "{rest}");
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).unwrap()).unwrap();
    assert_eq!(summary["this_run"]["records"], 150, "{summary}");
    assert_eq!(summary["this_run"]["by_status_class"]["2xx"], 150);
    assert_eq!(summary["crawl"]["urls_new"], 150);
    assert_eq!(summary["crawl"]["queued"], 0);
}

/// A metrics address that cannot be used is refused before the crawl starts.
#[test]
fn a_bad_metrics_address_is_refused_by_name() {
    let run = crate::util::crawl(&["--seed", "http://127.0.0.1:1/", "--metrics", "nowhere"]);
    run.assert_exit(2);
    assert!(run.stderr().contains("output.metrics"), "{}", run.stderr());
}
