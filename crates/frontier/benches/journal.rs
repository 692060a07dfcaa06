//! The journal: what it costs to keep, and how fast a crash is recovered from. A frontier
//! with a journal admits `JOURNAL_URLS` new URLs over 1,000 hosts, leases and completes them
//! all, syncing the journal every 2,500 completions (100 ms at 25,000 pages/s); then a new
//! frontier opens the last checkpoint (taken at the start) and replays the whole journal, as
//! `--resume` does after a crash. Prints a table. Run with `cargo bench -p politecrawl-frontier --bench
//! journal` (2 million URLs: 4 million entries); `JOURNAL_URLS` changes the run.

use std::env;
use std::time::{Duration, Instant};

use frontier::{Frontier, FrontierBuilder, Next, Outcome, Politeness, ScopeMode, ScopeRules};

fn setting(name: &str, default: u64) -> u64 {
    env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

fn builder(dir: &std::path::Path, journal: bool) -> FrontierBuilder {
    let builder = Frontier::builder()
        .scope(
            ScopeRules::builder()
                .mode(ScopeMode::AnyHost)
                .build()
                .expect("rules"),
        )
        .politeness(
            Politeness::builder()
                .delay(Duration::ZERO)
                .connections_per_host(1_000_000)
                .build()
                .expect("politeness"),
        );
    if journal {
        builder.journal(dir)
    } else {
        builder
    }
}

/// Pushes and completes `urls` URLs; the time taken and the entries written.
fn crawl(frontier: &Frontier, urls: u64) -> (Duration, u64) {
    let started = Instant::now();
    let now = Instant::now();
    let mut entries = 0;
    let mut done = 0u64;
    let mut queued = 0u64;
    for i in 0..urls {
        let url = format!(
            "https://host{}.example/section/{}/page-{i}.html",
            i % 1000,
            i % 37
        );
        // A URL taken for seen (the filter's false positives) is not queued.
        if frontier.push(&url, 3, now).expect("push") == frontier::Push::Queued {
            queued += 1;
        }
        // A page's worth of links, then its completion, as a crawl goes.
        if i % 2 == 1 {
            for _ in 0..queued.min(2) {
                queued -= 1;
                let Next::Lease(lease) = frontier.pop(now).expect("pop") else {
                    panic!("a lease, not {:?}", frontier.pop(now))
                };
                frontier
                    .complete(lease, Outcome::Success, now)
                    .expect("complete");
                done += 1;
                if done.is_multiple_of(2500) {
                    let batch = frontier.journal_batch();
                    entries += batch.len();
                    frontier.write_journal(batch).expect("journal");
                }
            }
        }
    }
    let batch = frontier.journal_batch();
    entries += batch.len();
    frontier.write_journal(batch).expect("journal");
    (started.elapsed(), entries)
}

fn main() {
    let urls = setting("JOURNAL_URLS", 2_000_000);
    let base = env::temp_dir().join(format!("frontier-journal-bench-{}", std::process::id()));
    println!("| run | URLs | entries | time | per URL (push, lease, complete) |");
    println!("|---|---|---|---|---|");
    let mut times = Vec::new();
    for journal in [false, true] {
        let dir = base.join(if journal { "with" } else { "without" });
        let frontier = builder(&dir, journal).build().expect("frontier");
        frontier
            .checkpoint(&dir, Instant::now())
            .expect("checkpoint");
        let (took, entries) = crawl(&frontier, urls);
        times.push(took);
        println!(
            "| {} | {urls} | {entries} | {:.2} s | {:.2} µs |",
            if journal {
                "with the journal"
            } else {
                "without"
            },
            took.as_secs_f64(),
            took.as_secs_f64() * 1e6 / urls as f64
        );
        if journal {
            drop(frontier); // the crash
            let size = std::fs::metadata(dir.join("journal-1.log")).map_or(0, |m| m.len());
            let started = Instant::now();
            let resumed = Frontier::open(&dir, builder(&dir, true), Instant::now()).expect("open");
            let took = started.elapsed();
            let replayed = resumed.replayed().expect("replayed");
            println!();
            println!("| replay | entries | journal | time | entries per second |");
            println!("|---|---|---|---|---|");
            println!(
                "| open the checkpoint and replay | {} | {:.1} MB | {:.2} s | {:.2} M/s |",
                replayed.entries,
                size as f64 / 1e6,
                took.as_secs_f64(),
                replayed.entries as f64 / took.as_secs_f64() / 1e6
            );
        }
    }
    println!();
    println!(
        "journal overhead on the frontier's own work: {:+.0}%",
        (times[1].as_secs_f64() / times[0].as_secs_f64() - 1.0) * 100.0
    );
    let _ = std::fs::remove_dir_all(&base);
}
