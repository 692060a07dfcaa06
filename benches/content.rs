//! The cost per page of a body's digest and of the content-seen test: `cargo bench --bench
//! content`.
//!
//! Measures the crawler's own `content` module on bodies of 8.5 KB, the benchmark site's
//! page size: the SHA-1 and its base32 text (once per response), and the Bloom filter's
//! test-and-set (once per non-empty 2xx body), on a filter sized as the crawler sizes it by default (1,000,000 bodies, 1e-6).

use std::hint::black_box;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};

use crawler::content::{ContentSeen, Digest};

/// An 8.5 KB page of HTML-like text, made different by `n`.
fn body(n: u64) -> Vec<u8> {
    let mut page = format!("<!doctype html><title>page {n}</title>").into_bytes();
    let mut i = 0u64;
    while page.len() < 8_500 {
        page.extend_from_slice(
            format!("<p><a href=\"/p/{}\">link {i}</a> text</p>", i * 7 + n).as_bytes(),
        );
        i += 1;
    }
    page.truncate(8_500);
    page
}

fn bench(c: &mut Criterion) {
    let mut group = c.benchmark_group("content");
    group.throughput(Throughput::Elements(1));
    let page = body(1);
    group.bench_function("digest_8.5KB", |b| {
        b.iter(|| Digest::of(black_box(&page)).text());
    });
    let digests: Vec<Digest> = (0..200_000).map(|n| Digest::of(&body(n))).collect();
    let seen = ContentSeen::new(1_000_000, 1e-6).expect("a valid size");
    let mut next = digests.iter().cycle();
    group.bench_function("content_seen_test", |b| {
        b.iter(|| seen.seen_before(black_box(next.next().expect("endless"))));
    });
    group.finish();
    let stats = seen.stats();
    eprintln!(
        "content-seen: {} tested, {} duplicates, {} filter bytes",
        stats.tested, stats.duplicates, stats.filter_bytes
    );
}

criterion_group!(benches, bench);
criterion_main!(benches);
