//! The per-host queues without politeness getting in the way (no delay, eight connections per
//! host): what pushing and leasing cost the frontier itself. Run with
//! `cargo bench -p politecrawl-frontier --bench queues`.
//!
//! One million canonical URLs over 10,000 hosts. `push` queues them all into empty queues;
//! `pop_complete` leases each and completes it at once with a success, until the queues are
//! done. Building the URLs, and filling the queues for `pop_complete`, is not timed.

use std::hint::black_box;
use std::time::{Duration, Instant};

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use frontier::{Canonical, Canonicalizer, HostQueues, Next, Outcome, Politeness};

const URLS: usize = 1_000_000;
const HOSTS: usize = 10_000;

fn urls() -> Vec<Canonical> {
    let canon = Canonicalizer::new();
    (0..URLS)
        .map(|i| {
            let url = format!(
                "https://www.host{:05}.example.com/articles/{:08x}/{i}.html",
                i % HOSTS,
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
            );
            canon.canonicalize(&url).expect("valid URL")
        })
        .collect()
}

fn local() -> Politeness {
    Politeness::builder()
        .delay(Duration::ZERO)
        .connections_per_host(8)
        .build()
        .expect("valid settings")
}

fn filled(urls: &[Canonical], now: Instant) -> HostQueues {
    let mut queues = HostQueues::new(local());
    for url in urls {
        queues.push(url.clone(), 1, now).unwrap();
    }
    queues
}

fn queues(c: &mut Criterion) {
    let urls = urls();
    let now = Instant::now();
    let mut group = c.benchmark_group("queues");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(8));
    group.throughput(Throughput::Elements(URLS as u64));
    group.bench_function("push", |b| {
        b.iter_batched(
            || (HostQueues::new(local()), urls.clone()),
            |(mut queues, urls)| {
                for url in urls {
                    black_box(queues.push(url, 1, now).unwrap());
                }
                queues
            },
            BatchSize::PerIteration,
        );
    });
    group.bench_function("pop_complete", |b| {
        b.iter_batched(
            || filled(&urls, now),
            |mut queues| {
                while let Next::Lease(lease) = queues.pop(now).unwrap() {
                    black_box(lease.url());
                    let done = queues.complete(lease, Outcome::Success, now);
                    black_box(done.expect("own lease"));
                }
                assert_eq!(queues.stats().succeeded, URLS as u64);
                queues
            },
            BatchSize::PerIteration,
        );
    });
    group.finish();
}

criterion_group!(benches, queues);
criterion_main!(benches);
