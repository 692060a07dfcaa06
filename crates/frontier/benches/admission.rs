//! Admission of links already seen: the common case, as most links a crawler extracts point
//! to pages it knows. Run with `cargo bench -p frontier --bench admission`.
//!
//! One million canonical URLs over 1,000 hosts are admitted first; the benchmark then admits
//! them again (every one is `Seen`), 1,024 per iteration. Canonicalization is not included:
//! the workers do it when they extract links.

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use frontier::{Admission, Canonical, Canonicalizer, ScopeMode, ScopeRules, SeenSet, Verdict};

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

criterion_group!(benches, seen_links);
criterion_main!(benches);
