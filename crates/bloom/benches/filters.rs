//! Throughput of insert and lookup, per key, for this crate's filters against [`fastbloom`] and
//! [`bloomfilter`].
//!
//! Run with `cargo bench -p politecrawl-bloom --bench filters`; pass criterion options after `--`, e.g.
//! `cargo bench -p politecrawl-bloom --bench filters -- blocked` to run only matching benchmarks or
//! `-- --quick` for a short run. Set `BLOOM_BENCH_SMALL_ONLY=1` to skip the large size (which
//! is also skipped when criterion runs the benchmarks as tests, `cargo test --benches`).
//!
//! # What is measured
//!
//! Every filter targets a false-positive rate of 0.01 and is measured at two sizes:
//! `n = 1_000_000` (about 1.2 MB: fits in cache) and `n = 50_000_000` (about 60 MB: every
//! probe is a memory access; about 0.5 GB of RAM at peak, and seconds to fill each filter).
//! Each filter is sized for `n`, filled with keys `0..n` when its first benchmark runs,
//! measured, and dropped before the next one is built.
//!
//! Keys are 73-byte URL-like strings generated from an index (see `common/mod.rs`). Each
//! operation works on a pool of 2^20 pre-generated keys, stored flat:
//!
//! * `hit`: `contains` of inserted keys (random indices below `n`);
//! * `miss`: `contains` of absent keys (indices from `2n + 2^20` on);
//! * `insert`: insert of new keys (indices `n..n + 2^20`). When the pool is used up the filter
//!   is restored, outside the timed region, to its state after the fill, so every timed
//!   insert is of a key the filter has never seen and the filter holds between `n` and
//!   `n + 2^20` items.
//! * `hit_batch`, `miss_batch`, `insert_batch` (this crate's filters with batch operations,
//!   that is all but `CountingBloomFilter`): the same through `contains_batch` /
//!   `insert_batch`, 1024 keys per call.
//!
//! One iteration processes the next 1024 keys of the pool, so criterion reports the time per
//! 1024 operations and, through `Throughput::Elements(1024)`, operations per second; divide
//! the time by 1024 for the time per key. Ids read `n=1000000/blocked/miss`.
//!
//! Competitors use their defaults: `fastbloom::BloomFilter::with_false_pos(0.01)` (SipHash-1-3
//! of the key once, 64-bit, then double hashing) and `bloomfilter::Bloom::new_for_fp_rate`
//! (SipHash-1-3 twice with two keys). Their inserts are the test-and-set forms
//! (`fastbloom`'s `insert`, `bloomfilter`'s `check_and_set`), like this crate's `insert`.

mod common;

use std::hint::black_box;
use std::time::{Duration, Instant};

use bloom::{AtomicBloomFilter, BlockedBloomFilter, BloomFilter, CountingBloomFilter};
use common::{KEY_LEN, KeyGen, splitmix64};
use criterion::measurement::WallTime;
use criterion::{BenchmarkGroup, Criterion, Throughput, criterion_group, criterion_main};

/// Target false-positive rate of every filter.
const P: f64 = 0.01;
/// Keys per iteration, and per batch call.
const CHUNK: usize = 1024;
/// Keys per pool: a whole number of chunks.
const POOL: usize = 1 << 20;
/// Fits in cache.
const SMALL: usize = 1_000_000;
/// Does not.
const LARGE: usize = 50_000_000;

/// A filter under test, through a common interface.
trait Filter: Sized {
    /// Name in benchmark ids.
    const NAME: &'static str;
    /// A copy of a filled filter, to undo the benchmark's inserts.
    type Saved;
    fn build(n: usize) -> Self;
    /// Test-and-set; `true` if the key was new.
    fn insert_key(&mut self, key: &[u8]) -> bool;
    fn contains_key(&self, key: &[u8]) -> bool;
    fn save(&self) -> Self::Saved;
    fn restore(saved: &Self::Saved) -> Self;
}

/// A filter with batch operations.
trait BatchFilter: Filter {
    fn insert_keys(&mut self, keys: &[&[u8]], inserted: &mut Vec<bool>);
    fn contains_keys(&self, keys: &[&[u8]], found: &mut Vec<bool>);
}

impl Filter for BloomFilter {
    const NAME: &'static str = "standard";
    type Saved = Self;
    fn build(n: usize) -> Self {
        BloomFilter::new(n, P).expect("valid parameters")
    }
    fn insert_key(&mut self, key: &[u8]) -> bool {
        self.insert(key)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        self.contains(key)
    }
    fn save(&self) -> Self {
        self.clone()
    }
    fn restore(saved: &Self) -> Self {
        saved.clone()
    }
}

impl BatchFilter for BloomFilter {
    fn insert_keys(&mut self, keys: &[&[u8]], inserted: &mut Vec<bool>) {
        self.insert_batch(keys, inserted);
    }
    fn contains_keys(&self, keys: &[&[u8]], found: &mut Vec<bool>) {
        self.contains_batch(keys, found);
    }
}

impl Filter for BlockedBloomFilter {
    const NAME: &'static str = "blocked";
    type Saved = Self;
    fn build(n: usize) -> Self {
        BlockedBloomFilter::new(n, P).expect("valid parameters")
    }
    fn insert_key(&mut self, key: &[u8]) -> bool {
        self.insert(key)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        self.contains(key)
    }
    fn save(&self) -> Self {
        self.clone()
    }
    fn restore(saved: &Self) -> Self {
        saved.clone()
    }
}

impl BatchFilter for BlockedBloomFilter {
    fn insert_keys(&mut self, keys: &[&[u8]], inserted: &mut Vec<bool>) {
        self.insert_batch(keys, inserted);
    }
    fn contains_keys(&self, keys: &[&[u8]], found: &mut Vec<bool>) {
        self.contains_batch(keys, found);
    }
}

/// Used through `&self` throughout, as it would be shared between threads (here, one).
impl Filter for AtomicBloomFilter {
    const NAME: &'static str = "atomic";
    /// Not `Clone`: saved in its serialized form.
    type Saved = Vec<u8>;
    fn build(n: usize) -> Self {
        AtomicBloomFilter::new(n, P).expect("valid parameters")
    }
    fn insert_key(&mut self, key: &[u8]) -> bool {
        AtomicBloomFilter::insert(self, key)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        self.contains(key)
    }
    fn save(&self) -> Vec<u8> {
        self.to_bytes()
    }
    fn restore(saved: &Vec<u8>) -> Self {
        AtomicBloomFilter::from_bytes(saved).expect("own serialization")
    }
}

impl BatchFilter for AtomicBloomFilter {
    fn insert_keys(&mut self, keys: &[&[u8]], inserted: &mut Vec<bool>) {
        AtomicBloomFilter::insert_batch(self, keys, inserted);
    }
    fn contains_keys(&self, keys: &[&[u8]], found: &mut Vec<bool>) {
        self.contains_batch(keys, found);
    }
}

/// 4-bit counters, so four times the standard filter's memory (4.8 MB at n = 10^6).
impl Filter for CountingBloomFilter {
    const NAME: &'static str = "counting";
    type Saved = Self;
    fn build(n: usize) -> Self {
        CountingBloomFilter::new(n, P).expect("valid parameters")
    }
    fn insert_key(&mut self, key: &[u8]) -> bool {
        self.insert(key)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        self.contains(key)
    }
    fn save(&self) -> Self {
        self.clone()
    }
    fn restore(saved: &Self) -> Self {
        saved.clone()
    }
}

impl Filter for fastbloom::BloomFilter {
    const NAME: &'static str = "fastbloom";
    type Saved = Self;
    fn build(n: usize) -> Self {
        fastbloom::BloomFilter::with_false_pos(P).expected_items(n)
    }
    fn insert_key(&mut self, key: &[u8]) -> bool {
        // fastbloom returns whether the key was (possibly) present before.
        !self.insert(key)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        self.contains(key)
    }
    fn save(&self) -> Self {
        self.clone()
    }
    fn restore(saved: &Self) -> Self {
        saved.clone()
    }
}

impl Filter for bloomfilter::Bloom<[u8]> {
    const NAME: &'static str = "bloomfilter";
    /// `Bloom<[u8]>` is not `Clone` (the derive wants `[u8]: Clone`): saved serialized.
    type Saved = Vec<u8>;
    fn build(n: usize) -> Self {
        bloomfilter::Bloom::new_for_fp_rate(n, P).expect("valid parameters")
    }
    fn insert_key(&mut self, key: &[u8]) -> bool {
        // `check_and_set` returns whether the key was (possibly) present before.
        !self.check_and_set(key)
    }
    fn contains_key(&self, key: &[u8]) -> bool {
        self.check(key)
    }
    fn save(&self) -> Vec<u8> {
        self.to_bytes()
    }
    fn restore(saved: &Vec<u8>) -> Self {
        bloomfilter::Bloom::from_bytes(saved.clone()).expect("own serialization")
    }
}

/// A pool: the keys with the given `POOL` indices, back to back (each is `KEY_LEN` bytes).
fn flat_keys(indices: impl Iterator<Item = u64>) -> Vec<u8> {
    let mut keys = KeyGen::new();
    let mut bytes = Vec::with_capacity(POOL * KEY_LEN);
    for i in indices {
        bytes.extend_from_slice(keys.key(i));
    }
    assert_eq!(bytes.len(), POOL * KEY_LEN);
    bytes
}

/// The keys of a flat pool, as slices for the batch APIs.
fn split(bytes: &[u8]) -> Vec<&[u8]> {
    bytes.chunks_exact(KEY_LEN).collect()
}

/// The query pools of one size.
struct Pools<'a> {
    /// New keys: indices `n..n + POOL`.
    insert: Vec<&'a [u8]>,
    /// Inserted keys: random indices below `n`.
    hit: Vec<&'a [u8]>,
    /// Absent keys: indices from `2n + POOL` on, disjoint from both ranges above.
    miss: Vec<&'a [u8]>,
}

/// The next chunk of `pool`, cycling.
#[inline]
fn next_chunk<'p, 'k>(pool: &'p [&'k [u8]], cursor: &mut usize) -> &'p [&'k [u8]] {
    if *cursor + CHUNK > pool.len() {
        *cursor = 0;
    }
    let chunk = &pool[*cursor..*cursor + CHUNK];
    *cursor += CHUNK;
    chunk
}

/// One filter, built and filled on first use so that a benchmark filter that excludes it
/// skips the fill, and dropped with this value.
struct Subject<F: Filter> {
    n: usize,
    filter: Option<F>,
    saved: Option<F::Saved>,
}

impl<F: Filter> Subject<F> {
    fn new(n: usize) -> Self {
        Subject {
            n,
            filter: None,
            saved: None,
        }
    }

    /// The filter with keys `0..n` (plus whatever insert benchmarks added since the last
    /// [`reset`](Self::reset)).
    fn filter(&mut self) -> &mut F {
        let n = self.n;
        self.filter.get_or_insert_with(|| {
            eprintln!("filling {} with {n} keys", F::NAME);
            let mut filter = F::build(n);
            let mut keys = KeyGen::new();
            for i in 0..n as u64 {
                filter.insert_key(keys.key(i));
            }
            filter
        })
    }

    /// Back to the state right after the fill.
    fn reset(&mut self) -> &mut F {
        match &self.saved {
            Some(saved) => self.filter = Some(F::restore(saved)),
            // Nothing has been inserted yet: save this state.
            None => self.saved = Some(self.filter().save()),
        }
        self.filter()
    }

    fn check_hits(&mut self, hit: &[&[u8]]) {
        let filter = self.filter();
        assert!(
            hit.iter().all(|key| filter.contains_key(key)),
            "{}: false negative",
            F::NAME
        );
    }
}

fn bench_lookups<F: Filter>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    s: &mut Subject<F>,
    p: &Pools<'_>,
) {
    for (op, pool) in [("hit", &p.hit), ("miss", &p.miss)] {
        g.bench_function(format!("{}/{op}", F::NAME), |b| {
            let filter = s.filter();
            let mut cursor = 0;
            b.iter(|| {
                let mut found = 0usize;
                for key in next_chunk(pool, &mut cursor) {
                    found += usize::from(filter.contains_key(key));
                }
                black_box(found)
            });
        });
    }
}

fn bench_batch_lookups<F: BatchFilter>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    s: &mut Subject<F>,
    p: &Pools<'_>,
) {
    for (op, pool) in [("hit_batch", &p.hit), ("miss_batch", &p.miss)] {
        g.bench_function(format!("{}/{op}", F::NAME), |b| {
            let filter = s.filter();
            let mut cursor = 0;
            let mut found = Vec::with_capacity(CHUNK);
            b.iter(|| {
                filter.contains_keys(next_chunk(pool, &mut cursor), &mut found);
                black_box(&found);
            });
        });
    }
}

/// Times `insert` over fresh keys: each iteration inserts the next chunk of the insert pool;
/// when the pool runs out the filter is reset, outside the timed region.
fn bench_inserts<F: Filter>(
    g: &mut BenchmarkGroup<'_, WallTime>,
    s: &mut Subject<F>,
    p: &Pools<'_>,
    id: &str,
    mut insert_chunk: impl FnMut(&mut F, &[&[u8]]),
) {
    // Past the end: the first iteration resets the filter (saving its filled state).
    let mut cursor = p.insert.len();
    g.bench_function(format!("{}/{id}", F::NAME), |b| {
        b.iter_custom(|iters| {
            let mut elapsed = Duration::ZERO;
            for _ in 0..iters {
                if cursor + CHUNK > p.insert.len() {
                    s.reset();
                    cursor = 0;
                }
                let chunk = &p.insert[cursor..cursor + CHUNK];
                cursor += CHUNK;
                let filter = s.filter();
                let start = Instant::now();
                insert_chunk(filter, chunk);
                elapsed += start.elapsed();
            }
            elapsed
        });
    });
}

fn single_inserts<F: Filter>(filter: &mut F, chunk: &[&[u8]]) {
    let mut new = 0usize;
    for key in chunk {
        new += usize::from(filter.insert_key(key));
    }
    black_box(new);
}

/// All operations of one of this crate's filters.
fn bench_ours<F: BatchFilter>(g: &mut BenchmarkGroup<'_, WallTime>, n: usize, p: &Pools<'_>) {
    let mut s = Subject::<F>::new(n);
    bench_lookups(g, &mut s, p);
    bench_batch_lookups(g, &mut s, p);
    if s.filter.is_some() {
        s.check_hits(&p.hit);
    }
    bench_inserts(g, &mut s, p, "insert", single_inserts);
    let mut inserted = Vec::with_capacity(CHUNK);
    bench_inserts(g, &mut s, p, "insert_batch", |filter, chunk| {
        filter.insert_keys(chunk, &mut inserted);
        black_box(&inserted);
    });
}

/// The single-key operations of a competitor, or of a filter without batch operations.
fn bench_theirs<F: Filter>(g: &mut BenchmarkGroup<'_, WallTime>, n: usize, p: &Pools<'_>) {
    let mut s = Subject::<F>::new(n);
    bench_lookups(g, &mut s, p);
    if s.filter.is_some() {
        s.check_hits(&p.hit);
    }
    bench_inserts(g, &mut s, p, "insert", single_inserts);
}

fn bench_size(c: &mut Criterion, n: usize) {
    let n64 = n as u64;
    let insert = flat_keys(n64..n64 + POOL as u64);
    let hit = flat_keys((0..POOL as u64).map(|i| splitmix64(i ^ 0x5eed) % n64));
    let miss_start = 2 * n64 + POOL as u64;
    let miss = flat_keys(miss_start..miss_start + POOL as u64);
    let pools = Pools {
        insert: split(&insert),
        hit: split(&hit),
        miss: split(&miss),
    };

    let mut g = c.benchmark_group(format!("n={n}"));
    g.throughput(Throughput::Elements(CHUNK as u64));
    bench_ours::<BloomFilter>(&mut g, n, &pools);
    bench_ours::<BlockedBloomFilter>(&mut g, n, &pools);
    bench_ours::<AtomicBloomFilter>(&mut g, n, &pools);
    bench_theirs::<CountingBloomFilter>(&mut g, n, &pools);
    bench_theirs::<fastbloom::BloomFilter>(&mut g, n, &pools);
    bench_theirs::<bloomfilter::Bloom<[u8]>>(&mut g, n, &pools);
    g.finish();
}

/// Whether `BLOOM_BENCH_SMALL_ONLY` asks to skip the large size.
fn small_only() -> bool {
    std::env::var("BLOOM_BENCH_SMALL_ONLY").is_ok_and(|v| !v.is_empty() && v != "0")
}

/// `cargo bench` passes `--bench`; without it (`cargo test --benches`) criterion runs every
/// benchmark once as a test, for which the small size is enough.
fn test_mode() -> bool {
    let has = |flag: &str| std::env::args().any(|arg| arg == flag);
    !has("--bench") || has("--test")
}

fn filters(c: &mut Criterion) {
    bench_size(c, SMALL);
    if small_only() {
        eprintln!("BLOOM_BENCH_SMALL_ONLY is set: skipping n={LARGE}");
    } else if test_mode() {
        eprintln!("test mode: skipping n={LARGE}");
    } else {
        bench_size(c, LARGE);
    }
}

criterion_group! {
    name = benches;
    // Command-line options (e.g. `--measurement-time`) override these.
    config = Criterion::default()
        .sample_size(20)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    targets = filters
}
criterion_main!(benches);
