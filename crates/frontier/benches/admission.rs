//! Admission, and admission with the queues, per URL. Run with
//! `cargo bench -p politecrawl-frontier --bench admission`. Canonicalization is not included: the workers
//! do it when they extract links.
//!
//! * `seen_link`: admitting links already seen, the common case (most links a crawler
//!   extracts point to pages it knows). One million canonical URLs over 1,000 hosts are
//!   admitted first, then admitted again (every one is `Seen`), 1,024 per iteration.
//! * `new_url_push_pop`: the whole path of a new URL through the frontier so far: admitted as
//!   new, pushed to its host queue, popped and completed. 100,000 URLs over 1,000 hosts per
//!   iteration, into a fresh seen-set and fresh queues (no politeness delay, 8 connections per
//!   host, as on a local crawl).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use std::time::Instant;

use frontier::{
    Admission, Canonical, Canonicalizer, HostQueues, Next, Outcome, Politeness, ScopeMode,
    ScopeRules, SeenSet, Verdict,
};

fn urls(n: usize) -> Vec<Canonical> {
    let canon = Canonicalizer::new();
    (0..n)
        .map(|i| {
            let url = format!(
                "https://www.host{:04}.example.com/articles/{:08x}/{i}.html",
                i % 1_000,
                (i as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32
            );
            canon.canonicalize(&url).expect("valid URL")
        })
        .collect()
}

fn seen_links(c: &mut Criterion) {
    let urls = urls(1_000_000);
    let scope = ScopeRules::builder()
        .mode(ScopeMode::AnyHost)
        .build()
        .expect("valid scope");
    let seen = SeenSet::builder()
        .initial_capacity(1_000_000)
        .build()
        .expect("valid size");
    let admission = Admission::new(Canonicalizer::new(), scope, seen);
    for url in &urls {
        admission.admit(url.clone(), 1).expect("room");
    }
    let mut group = c.benchmark_group("admission");
    group.throughput(Throughput::Elements(1024));
    let mut start = 0;
    group.bench_function("seen_link", |b| {
        b.iter_batched(
            || {
                start = (start + 1024) % (urls.len() - 1024);
                urls[start..start + 1024].to_vec()
            },
            |batch| {
                for url in batch {
                    let verdict = admission.admit(url, 1).expect("room");
                    debug_assert_eq!(verdict, Verdict::Seen);
                    black_box(verdict);
                }
            },
            BatchSize::SmallInput,
        );
    });
    group.finish();
}

fn new_url_push_pop(c: &mut Criterion) {
    let urls = urls(100_000);
    let politeness = Politeness::builder()
        .delay(std::time::Duration::ZERO)
        .connections_per_host(8)
        .build()
        .expect("valid politeness");
    let mut group = c.benchmark_group("admission");
    group.throughput(Throughput::Elements(urls.len() as u64));
    group.sample_size(10);
    group.bench_function("new_url_push_pop", |b| {
        b.iter_batched(
            || {
                let scope = ScopeRules::builder()
                    .mode(ScopeMode::AnyHost)
                    .build()
                    .expect("valid scope");
                let seen = SeenSet::builder()
                    .initial_capacity(100_000)
                    .build()
                    .expect("valid size");
                let admission = Admission::new(Canonicalizer::new(), scope, seen);
                (admission, HostQueues::new(politeness.clone()), urls.clone())
            },
            |(admission, mut queues, urls)| {
                let now = Instant::now();
                for url in urls {
                    if let Verdict::New(url) = admission.admit(url, 1).expect("room") {
                        queues.push(url, 1, now).unwrap();
                    }
                }
                while let Next::Lease(lease) = queues.pop(now).unwrap() {
                    black_box(
                        queues
                            .complete(lease, Outcome::Success, now)
                            .expect("own lease"),
                    );
                }
                assert_eq!(queues.stats().succeeded, 100_000);
            },
            BatchSize::LargeInput,
        );
    });
    group.finish();
}

criterion_group!(benches, seen_links, new_url_push_pop);
criterion_main!(benches);
