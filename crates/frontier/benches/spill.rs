//! Bounded memory: push many distinct URLs over many hosts through a spilling [`Frontier`],
//! then lease and complete them all, and report throughput, peak memory and disk use as a
//! table. Run with `cargo bench -p politecrawl-frontier --bench spill` (20 million URLs over 200,000
//! hosts, a few minutes); `SPILL_URLS`, `SPILL_HOSTS`, `SPILL_BUDGET_MB` and
//! `SPILL_INITIAL_CAPACITY` change the run.
//!
//! URLs are pushed host after host in turn (URL i goes to host i mod hosts), the worst case
//! for spilling: every eviction finds a few URLs of every host. Peak memory is the process's
//! high-water mark (`VmHWM`), so it includes the seen-test's filter, the hosts' state, the
//! queued URLs in memory and the allocator's slack. Linux only.

use std::env;
use std::time::{Duration, Instant};

use frontier::{
    Frontier, Next, Outcome, Politeness, Push, ScopeMode, ScopeRules, SeenSet, SpillSettings,
};

fn setting(name: &str, default: u64) -> u64 {
    env::var(name)
        .ok()
        .and_then(|v| v.replace('_', "").parse().ok())
        .unwrap_or(default)
}

/// The process's peak resident memory so far, in bytes.
fn peak_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn mb(bytes: u64) -> String {
    format!("{:.1} MB", bytes as f64 / 1e6)
}

fn rate(n: u64, took: Duration) -> String {
    format!("{:.2} M/s", n as f64 / took.as_secs_f64() / 1e6)
}

fn main() {
    // `cargo bench` passes `--bench`; this harness takes its settings from the environment.
    let urls = setting("SPILL_URLS", 20_000_000);
    let hosts = setting("SPILL_HOSTS", 200_000);
    let budget = setting("SPILL_BUDGET_MB", 32) << 20;
    let initial = setting("SPILL_INITIAL_CAPACITY", 1_000_000);
    let dir = env::temp_dir().join(format!("frontier-spill-bench-{}", std::process::id()));

    let frontier = Frontier::builder()
        .scope(
            ScopeRules::builder()
                .mode(ScopeMode::AnyHost)
                .build()
                .expect("rules"),
        )
        .seen(SeenSet::builder().initial_capacity(initial as usize))
        .politeness(
            Politeness::builder()
                .delay(Duration::ZERO)
                .connections_per_host(8)
                .build()
                .expect("politeness"),
        )
        .spill(SpillSettings::new(&dir).memory_budget(budget as usize))
        .build()
        .expect("frontier");
    let now = Instant::now();

    let start = Instant::now();
    let mut url = String::new();
    let mut max_disk = 0;
    let (mut queued, mut false_positives) = (0u64, 0u64);
    for i in 0..urls {
        use std::fmt::Write;
        url.clear();
        let h = i % hosts;
        write!(
            url,
            "http://www.host{h}.example/articles/{}/page.html",
            i / hosts
        )
        .expect("write");
        // Every URL is distinct: a `Seen` is one of the filter's false positives, the price
        // of its few bytes per URL, counted and compared with what the filter expects.
        match frontier.push(&url, 1, now).expect("push") {
            Push::Queued => queued += 1,
            Push::Seen => false_positives += 1,
            other => panic!("{url}: {other:?}"),
        }
        if i % 1_000_000 == 0 {
            max_disk = max_disk.max(frontier.stats().queues.disk_bytes);
        }
    }
    let push_time = start.elapsed();
    let peak_after_push = peak_rss();
    let after_push = frontier.stats();
    max_disk = max_disk.max(after_push.queues.disk_bytes);

    let start = Instant::now();
    let mut popped = 0u64;
    loop {
        match frontier.pop(now).expect("pop") {
            Next::Lease(lease) => {
                popped += 1;
                frontier
                    .complete(lease, Outcome::Success, now)
                    .expect("our lease");
            }
            Next::Done => break,
            other => panic!("no delays, every lease completed at once: {other:?}"),
        }
    }
    let pop_time = start.elapsed();
    let end = frontier.stats();
    let peak = peak_rss();
    assert_eq!(popped, queued, "every queued URL leased once");
    assert_eq!(end.queues.succeeded, queued);
    drop(frontier);
    let _ = std::fs::remove_dir_all(&dir);

    let seen = &after_push.admission.seen_set;
    println!("| measure | value |");
    println!("|---|---|");
    println!("| URLs, hosts | {urls}, {hosts} |");
    println!("| memory budget for queued URLs | {} |", mb(budget));
    println!(
        "| push (admit + queue + spill) | {} ({:.1} s) |",
        rate(urls, push_time),
        push_time.as_secs_f64()
    );
    println!(
        "| pop + complete (refill from disk) | {} ({:.1} s) |",
        rate(urls, pop_time),
        pop_time.as_secs_f64()
    );
    println!("| overall | {} |", rate(urls, push_time + pop_time));
    println!(
        "| peak RSS (VmHWM) after pushing, at the end | {}, {} |",
        mb(peak_after_push),
        mb(peak)
    );
    println!(
        "| seen-test filter | {} in {} sub-filters, estimated rate {:.2e} |",
        mb(seen.filter_bytes as u64),
        seen.sub_filters,
        seen.estimated_rate
    );
    println!(
        "| distinct URLs taken for seen (false positives) | {false_positives}, expected {:.1} |",
        seen.expected_wrongly_dropped
    );
    println!(
        "| queued URLs on disk after pushing | {} of {} |",
        after_push.queues.on_disk, after_push.queues.queued
    );
    println!("| largest spill on disk | {} |", mb(max_disk));
    println!("| evictions | {} |", end.queues.evictions);
}
