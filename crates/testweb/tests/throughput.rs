//! How many pages per second testweb serves on one core, for the benchmark site (100,000
//! pages of about 8.5 KB, 30 links each). Not run by default:
//!
//! ```text
//! cargo test -p politecrawl-testweb --release --test throughput -- --ignored --nocapture
//! ```
//!
//! The server runs on a single-threaded runtime in its own thread; a client thread keeps
//! `CONNECTIONS` keep-alive connections busy. It reports pages per second of wall time and
//! pages per second of the server thread's CPU time (from `/proc/thread-self/schedstat`,
//! Linux only), the latter being what one core can serve when the client is not the
//! bottleneck.

mod common;

use std::time::{Duration, Instant};

use testweb::{SiteConfig, Testweb};

const CONNECTIONS: usize = 16;
const RUN: Duration = Duration::from_secs(3);

/// CPU time of the calling thread, if the system says.
fn thread_cpu() -> Option<Duration> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    let nanos: u64 = text.split_whitespace().next()?.parse().ok()?;
    Some(Duration::from_nanos(nanos))
}

#[test]
#[ignore = "a benchmark: run with --release --ignored --nocapture"]
fn pages_per_second_on_one_core() {
    for log_requests in [false, true] {
        println!("request log {}:", if log_requests { "on" } else { "off" });
        measure(log_requests);
    }
}

fn measure(log_requests: bool) {
    let config = SiteConfig {
        pages_per_host: 100_000,
        children_per_page: 10,
        random_links_per_page: 20,
        page_bytes: 8_500,
        log_requests,
        ..SiteConfig::default()
    };
    let (port_tx, port_rx) = std::sync::mpsc::channel();
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server = std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime");
        runtime.block_on(async move {
            let web = Testweb::start(config).await.expect("start");
            port_tx.send(web.port(0)).expect("send");
            let cpu_start = thread_cpu();
            let _ = stop_rx.await;
            let cpu = thread_cpu().zip(cpu_start).map(|(end, start)| end - start);
            (web.requests_served(0), cpu)
        })
    });
    let port = port_rx.recv().expect("port");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    let (pages, bytes, elapsed) = runtime.block_on(async move {
        let started = Instant::now();
        let tasks: Vec<_> = (0..CONNECTIONS)
            .map(|c| {
                tokio::spawn(async move {
                    let mut conn = common::Conn::new(port);
                    let (mut pages, mut bytes) = (0u64, 0u64);
                    let mut page = c as u64 * 6_007;
                    let mut target = String::new();
                    while started.elapsed() < RUN {
                        page = (page + 7_919) % 100_000;
                        target.clear();
                        target.push_str("/p/");
                        target.push_str(&page.max(1).to_string());
                        let response = conn.get(&target, usize::MAX).await.expect("get");
                        assert_eq!(response.status, 200);
                        pages += 1;
                        bytes += response.body.len() as u64;
                    }
                    (pages, bytes)
                })
            })
            .collect();
        let (mut pages, mut bytes) = (0, 0);
        for task in tasks {
            let (p, b) = task.await.expect("client");
            pages += p;
            bytes += b;
        }
        (pages, bytes, started.elapsed())
    });
    let _ = stop_tx.send(());
    let (served, server_cpu) = server.join().expect("server");
    assert_eq!(served, pages);
    let wall = elapsed.as_secs_f64();
    println!(
        "{pages} pages ({:.1} KB average) in {wall:.2} s over {CONNECTIONS} connections: \
         {:.0} pages/s, {:.0} MB/s",
        bytes as f64 / pages as f64 / 1e3,
        pages as f64 / wall,
        bytes as f64 / wall / 1e6,
    );
    if let Some(cpu) = server_cpu {
        println!(
            "server thread CPU: {:.2} s ({:.0}% of one core): {:.0} pages per CPU second",
            cpu.as_secs_f64(),
            100.0 * cpu.as_secs_f64() / wall,
            pages as f64 / cpu.as_secs_f64(),
        );
    }
}
