//! Redis memory per queued and per seen URL: pushes URLs (a million, over 100 hosts, by
//! default) into a fresh crawl and reads `INFO memory` before and after, and `MEMORY USAGE`
//! of the seen-test's keys.
//!
//! ```text
//! redis-server --port 6399 --save "" &
//! cargo run --release -p politecrawl-shared --example memory -- redis://127.0.0.1:6399 1000000 100
//! # the seen-test's first generations sized otherwise (redis.seen_initial_capacity, 65,536
//! # by default): a fourth argument
//! cargo run --release -p politecrawl-shared --example memory -- redis://127.0.0.1:6399 1000000 10000 1100000
//! # and the seen-test's rate (1e-6 by default): a fifth; at 1e-7 all but the first
//! # generation are wide (8-byte members)
//! cargo run --release -p politecrawl-shared --example memory -- redis://127.0.0.1:6399 1000000 10000 65536 1e-7
//! ```

use std::time::Duration;

use frontier::{Canonicalizer, Politeness, ScopeMode, ScopeRules};

async fn connection(url: &str) -> redis::aio::MultiplexedConnection {
    let client = redis::Client::open(url).expect("a Redis URL");
    client
        .get_multiplexed_async_connection()
        .await
        .expect("Redis answers")
}

/// What the seen-test's keys take, allocations included (`MEMORY USAGE`): the sets of
/// every bucket's generations, and each bucket's hash of their sizes.
async fn seen_memory(url: &str, name: &str) -> u64 {
    let mut con = connection(url).await;
    let mut total = 0;
    for pattern in [format!("{{{name}:*}}:f*"), format!("{{{name}:*}}:seen")] {
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(pattern)
            .query_async(&mut con)
            .await
            .expect("KEYS");
        for key in keys {
            let bytes: u64 = redis::cmd("MEMORY")
                .arg("USAGE")
                .arg(&key)
                .arg("SAMPLES")
                .arg(0)
                .query_async(&mut con)
                .await
                .expect("MEMORY USAGE");
            total += bytes;
        }
    }
    total
}

async fn used_memory(url: &str) -> u64 {
    let mut con = connection(url).await;
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut con)
        .await
        .expect("INFO memory");
    info.lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .expect("used_memory")
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args = std::env::args().skip(1);
    let url = args
        .next()
        .unwrap_or_else(|| "redis://127.0.0.1:6379".into());
    let n: usize = args.next().map_or(Ok(1_000_000), |n| n.parse())?;
    let hosts: usize = args.next().map_or(Ok(100), |n| n.parse())?;
    let mut layout = shared::Layout::default();
    if let Some(capacity) = args.next() {
        layout.seen_initial_capacity = capacity.parse()?;
    }
    if let Some(rate) = args.next() {
        layout.seen_rate = rate.parse()?;
    }
    let name = format!("memory-{}", std::process::id());
    let store = shared::Store::connect(&url, &name).await?;
    let before = used_memory(&url).await;
    let crawl = store.create(layout, "", &[]).await?;
    let scope = ScopeRules::builder().mode(ScopeMode::AnyHost).build()?;
    let frontier = shared::SharedFrontier::new(
        store.clone(),
        &crawl,
        Canonicalizer::new(),
        scope,
        Politeness::default(),
        Duration::from_secs(30),
    )?;
    let canon = Canonicalizer::new();
    let urls: Vec<_> = (0..n)
        .map(|i| {
            canon
                .canonicalize(&format!(
                    "https://www.site-{}.example/docs/section-{}/page-{i}.html",
                    i % hosts,
                    i % 37
                ))
                .expect("a valid URL")
        })
        .collect();
    let average_len = urls.iter().map(|u| u.as_str().len()).sum::<usize>() as f64 / n as f64;
    for chunk in urls.chunks(50_000) {
        frontier.push_seeds(chunk.to_vec()).await?;
    }
    let totals = frontier.totals().await?;
    let after = used_memory(&url).await;
    let seen_bytes = seen_memory(&url, &name).await as f64;
    let all = (after - before) as f64;
    println!(
        "URLs: {n} pushed over {hosts} hosts, {} new, {} queued, average length {average_len:.1} bytes",
        totals.seen, totals.queued
    );
    println!(
        "Redis memory: {:.1} bytes per URL in all; seen-test {:.2} bytes per seen URL ({} generations); queues and the rest {:.1} bytes per queued URL",
        all / n as f64,
        seen_bytes / totals.seen as f64,
        totals.seen_generations,
        (all - seen_bytes) / totals.queued as f64
    );
    Ok(())
}
