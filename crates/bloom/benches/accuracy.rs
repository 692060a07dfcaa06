//! Measured false-positive rate and memory of this crate's filters against [`fastbloom`] and
//! [`bloomfilter`], printed as a markdown table.
//!
//! Run with `cargo bench -p politecrawl-bloom --bench accuracy` (a plain program, not criterion; about 90 s
//! on one core).
//!
//! For each target rate p in {1e-2, 1e-4, 1e-6}, every filter is built for n = 1,000,000
//! items at p with its own `(n, p)` constructor and a fixed hash key or seed (so the table is
//! reproducible), and filled with the URL-like keys `0..n` (see `common/mod.rs`). All inserted
//! keys are queried again, counting false negatives (which must be 0), then Q absent keys
//! (indices from 2^40 on, disjoint from the inserted ones): Q = 10^7 for 1e-2 and 1e-4 and
//! 10^8 for 1e-6, so that about 100 false positives or more are expected in every row.
//!
//! Columns: `k` is hashes per key (for `blocked`/`atomic`, total probes over all blocks);
//! `bits/key` is the bit array's size in bits over n (for `counting`, its counters' memory:
//! four times the standard filter's); `model` is the rate predicted at n items
//! (this crate's filters: `false_positive_rate_at(n)`, i.e. the block model for the blocked
//! layouts; competitors: the standard formula `(1 - e^(-kn/m))^k` at their m and k);
//! `measured/target` has a 95% Wilson interval.

mod common;

use bloom::{AtomicBloomFilter, BlockedBloomFilter, BloomFilter, CountingBloomFilter};
use common::KeyGen;

/// Items inserted in every filter.
const N: u64 = 1_000_000;
/// First index of the absent keys; inserted keys are `0..N`.
const ABSENT_START: u64 = 1 << 40;
/// Fixed hash key for this crate's filters.
const KEY: [u8; 16] = *b"bloom-accuracy!!";
/// Fixed seed for `bloomfilter`: two SipHash keys, one per half. The halves must differ: with
/// equal halves both of its hashes are equal and its rate is far above target (3.7x at 1e-2,
/// about 90x at 1e-4, thousands of times at 1e-6).
const BLOOMFILTER_SEED: [u8; 32] = *b"bloom accuracy, bloomfilter seed";
/// Target rates and number of absent-key queries for each.
const RUNS: [(f64, u64); 3] = [(1e-2, 10_000_000), (1e-4, 10_000_000), (1e-6, 100_000_000)];

/// A filter under test, through a common interface.
trait Subject {
    fn name(&self) -> &'static str;
    fn insert(&mut self, key: &[u8]);
    fn contains(&self, key: &[u8]) -> bool;
    /// Hashes (probes) per key, as printed.
    fn hashes(&self) -> String;
    /// Size of the bit array in bits.
    fn bits(&self) -> u64;
    /// Predicted false-positive rate with `N` items in.
    fn model(&self) -> f64;
}

impl Subject for BloomFilter {
    fn name(&self) -> &'static str {
        "standard"
    }
    fn insert(&mut self, key: &[u8]) {
        BloomFilter::insert(self, key);
    }
    fn contains(&self, key: &[u8]) -> bool {
        BloomFilter::contains(self, key)
    }
    fn hashes(&self) -> String {
        BloomFilter::hashes(self).to_string()
    }
    fn bits(&self) -> u64 {
        self.memory_bytes() as u64 * 8
    }
    fn model(&self) -> f64 {
        self.false_positive_rate_at(N)
    }
}

impl Subject for BlockedBloomFilter {
    fn name(&self) -> &'static str {
        "blocked"
    }
    fn insert(&mut self, key: &[u8]) {
        BlockedBloomFilter::insert(self, key);
    }
    fn contains(&self, key: &[u8]) -> bool {
        BlockedBloomFilter::contains(self, key)
    }
    fn hashes(&self) -> String {
        format!(
            "{} ({} blk)",
            BlockedBloomFilter::hashes(self),
            self.blocks_per_key()
        )
    }
    fn bits(&self) -> u64 {
        self.memory_bytes() as u64 * 8
    }
    fn model(&self) -> f64 {
        self.false_positive_rate_at(N)
    }
}

/// Inserted into and queried through `&self`, as when shared between threads.
impl Subject for AtomicBloomFilter {
    fn name(&self) -> &'static str {
        "atomic"
    }
    fn insert(&mut self, key: &[u8]) {
        let shared: &AtomicBloomFilter = self;
        shared.insert(key);
    }
    fn contains(&self, key: &[u8]) -> bool {
        AtomicBloomFilter::contains(self, key)
    }
    fn hashes(&self) -> String {
        format!(
            "{} ({} blk)",
            AtomicBloomFilter::hashes(self),
            self.blocks_per_key()
        )
    }
    fn bits(&self) -> u64 {
        self.memory_bytes() as u64 * 8
    }
    fn model(&self) -> f64 {
        self.false_positive_rate_at(N)
    }
}

/// Probes exactly as `BloomFilter`, so it counts the same false positives; `bits/key` is its
/// memory, four bits per counter.
impl Subject for CountingBloomFilter {
    fn name(&self) -> &'static str {
        "counting"
    }
    fn insert(&mut self, key: &[u8]) {
        CountingBloomFilter::insert(self, key);
    }
    fn contains(&self, key: &[u8]) -> bool {
        CountingBloomFilter::contains(self, key)
    }
    fn hashes(&self) -> String {
        CountingBloomFilter::hashes(self).to_string()
    }
    fn bits(&self) -> u64 {
        self.memory_bytes() as u64 * 8
    }
    fn model(&self) -> f64 {
        self.false_positive_rate_at(N)
    }
}

impl Subject for fastbloom::BloomFilter {
    fn name(&self) -> &'static str {
        "fastbloom"
    }
    fn insert(&mut self, key: &[u8]) {
        fastbloom::BloomFilter::insert(self, key);
    }
    fn contains(&self, key: &[u8]) -> bool {
        fastbloom::BloomFilter::contains(self, key)
    }
    fn hashes(&self) -> String {
        self.num_hashes().to_string()
    }
    fn bits(&self) -> u64 {
        self.num_bits() as u64
    }
    fn model(&self) -> f64 {
        bloom::false_positive_rate(self.bits(), N, self.num_hashes())
    }
}

impl Subject for bloomfilter::Bloom<[u8]> {
    fn name(&self) -> &'static str {
        "bloomfilter"
    }
    fn insert(&mut self, key: &[u8]) {
        self.set(key);
    }
    fn contains(&self, key: &[u8]) -> bool {
        self.check(key)
    }
    fn hashes(&self) -> String {
        self.number_of_hash_functions().to_string()
    }
    /// `len()` counts the bitmap's bits (not its 45-byte header).
    fn bits(&self) -> u64 {
        self.len()
    }
    fn model(&self) -> f64 {
        bloom::false_positive_rate(self.len(), N, self.number_of_hash_functions())
    }
}

/// The six filters, sized for `N` at `p`.
fn filters(p: f64) -> Vec<Box<dyn Subject>> {
    let n = N as usize;
    vec![
        Box::new(BloomFilter::builder(n, p).key(KEY).build().expect("valid")),
        Box::new(
            BlockedBloomFilter::builder(n, p)
                .key(KEY)
                .build()
                .expect("valid"),
        ),
        Box::new(
            AtomicBloomFilter::builder(n, p)
                .key(KEY)
                .build()
                .expect("valid"),
        ),
        Box::new(
            CountingBloomFilter::builder(n, p)
                .key(KEY)
                .build()
                .expect("valid"),
        ),
        Box::new(
            fastbloom::BloomFilter::with_false_pos(p)
                .seed(&u128::from_le_bytes(KEY))
                .expected_items(n),
        ),
        Box::new(
            bloomfilter::Bloom::<[u8]>::new_for_fp_rate_with_seed(n, p, &BLOOMFILTER_SEED)
                .expect("valid"),
        ),
    ]
}

/// 95% Wilson score interval of a proportion `hits / trials`.
fn wilson(hits: u64, trials: u64) -> (f64, f64) {
    let z = 1.959_963_984_540_054_f64;
    let (x, t) = (hits as f64, trials as f64);
    let p = x / t;
    let denom = 1.0 + z * z / t;
    let center = (p + z * z / (2.0 * t)) / denom;
    let half = z * (p * (1.0 - p) / t + z * z / (4.0 * t * t)).sqrt() / denom;
    ((center - half).max(0.0), center + half)
}

fn main() {
    // `cargo bench` passes `--bench`; `cargo test --benches` does not, and gets a smoke run.
    let smoke = !std::env::args().any(|arg| arg == "--bench");
    let mut keys = KeyGen::new();
    let mut total_false_negatives = 0;
    println!("## False-positive rate and memory, n = {N} URL-like keys (73 bytes)\n");
    if smoke {
        println!("Smoke run (not under `cargo bench`): 1/1000 of the queries.\n");
    }
    println!(
        "| filter | target p | k | bits/key | model | queries | false positives | measured rate \
         | measured/target (95% CI) | false negatives |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for (p, queries) in RUNS {
        let queries = if smoke { queries / 1000 } else { queries };
        let mut filters = filters(p);
        for i in 0..N {
            let key = keys.key(i);
            for f in &mut filters {
                f.insert(key);
            }
        }

        let mut false_negatives = vec![0u64; filters.len()];
        for i in 0..N {
            let key = keys.key(i);
            for (f, count) in filters.iter().zip(&mut false_negatives) {
                *count += u64::from(!f.contains(key));
            }
        }

        let mut false_positives = vec![0u64; filters.len()];
        for i in ABSENT_START..ABSENT_START + queries {
            let key = keys.key(i);
            for (f, count) in filters.iter().zip(&mut false_positives) {
                *count += u64::from(f.contains(key));
            }
        }

        for ((f, &fp), &fneg) in filters.iter().zip(&false_positives).zip(&false_negatives) {
            let rate = fp as f64 / queries as f64;
            let (lo, hi) = wilson(fp, queries);
            println!(
                "| {} | {p:.0e} | {} | {:.2} | {:.3e} | {queries:.0e} | {fp} | {rate:.3e} \
                 | {:.3} ({:.3}–{:.3}) | {fneg} |",
                f.name(),
                f.hashes(),
                f.bits() as f64 / N as f64,
                f.model(),
                rate / p,
                lo / p,
                hi / p,
            );
        }
        total_false_negatives += false_negatives.iter().sum::<u64>();
    }
    println!(
        "\nk: hashes per key (blocked layouts: probes over all blocks, blk = blocks per key). \
         model: this crate's `false_positive_rate_at(n)` (block model for blocked/atomic); \
         for fastbloom and bloomfilter the standard formula (1 - e^(-kn/m))^k at their m and k. \
         Fixed hash keys and seeds: the table is reproducible."
    );
    assert_eq!(total_false_negatives, 0, "a filter lost an inserted key");
}
