//! Helpers shared by the integration tests: deterministic keys and one interface over the
//! three filter types.

#![allow(dead_code, unreachable_pub)]

use bloom::{AtomicBloomFilter, BlockedBloomFilter, BloomFilter};

/// A fixed key: the tests are deterministic, so a statistical bound that passes once always
/// passes.
pub const KEY: [u8; 16] = *b"bloom-tests-key!";

/// splitmix64: a cheap, well-mixed sequence for deriving test keys.
pub fn mix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// Item `i` of disjoint set `set`: sets never share an item, so members of set 1 are
/// guaranteed absent from a filter filled from set 0.
pub fn item(set: u8, i: u64) -> [u8; 17] {
    let mut out = [0u8; 17];
    out[0] = set;
    out[1..9].copy_from_slice(&i.to_le_bytes());
    out[9..17].copy_from_slice(&mix(i ^ u64::from(set) << 56).to_le_bytes());
    out
}

/// Fails unless a false-positive count is within the tests' two bounds, each with four
/// standard deviations of slack for sampling noise: at most 1.5 x the `target` count, and
/// within 25% of the `expected` count of the filter's own rate formula (so that a filter
/// accidentally oversized, or a test that counts nothing, fails too).
pub fn assert_rate_bounds(false_positives: f64, target: f64, expected: f64, context: &str) {
    assert!(
        false_positives <= 1.5 * target + 4.0 * (1.5 * target).sqrt(),
        "rate above 1.5x target: {context}"
    );
    assert!(
        (false_positives - expected).abs() <= 0.25 * expected + 4.0 * expected.sqrt(),
        "rate off the model: {context}"
    );
}

/// Runs `race` on `threads` threads released together by a barrier, each given one win
/// counter per item (to add one to when it is told an item is new); answers how many items
/// had each number of winners (index 0 to `threads`).
pub fn race_winners(
    threads: usize,
    items: u64,
    race: impl Fn(&[std::sync::atomic::AtomicU8]) + Sync,
) -> Vec<u64> {
    use std::sync::atomic::{AtomicU8, Ordering};
    let wins: Vec<AtomicU8> = (0..items).map(|_| AtomicU8::new(0)).collect();
    let barrier = std::sync::Barrier::new(threads);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                barrier.wait();
                race(&wins);
            });
        }
    });
    let mut counts = vec![0u64; threads + 1];
    for w in &wins {
        counts[w.load(Ordering::Relaxed) as usize] += 1;
    }
    counts
}

/// The operations every filter type shares, so one test body covers all three.
pub trait Filter {
    const NAME: &'static str;
    fn build(items: usize, rate: f64) -> Self;
    fn add(&mut self, item: &[u8]) -> bool;
    fn has(&self, item: &[u8]) -> bool;
    fn model_rate(&self, items: u64) -> f64;
}

/// Implements [`Filter`] for a filter type by its inherent methods, which every type names
/// alike.
macro_rules! impl_filter {
    ($filter:ty, $name:literal) => {
        impl $crate::common::Filter for $filter {
            const NAME: &'static str = $name;
            fn build(items: usize, rate: f64) -> Self {
                <$filter>::builder(items, rate)
                    .key($crate::common::KEY)
                    .build()
                    .unwrap()
            }
            fn add(&mut self, item: &[u8]) -> bool {
                self.insert(item)
            }
            fn has(&self, item: &[u8]) -> bool {
                self.contains(item)
            }
            fn model_rate(&self, items: u64) -> f64 {
                self.false_positive_rate_at(items)
            }
        }
    };
}
#[allow(unused_imports)] // used by counting.rs only
pub(crate) use impl_filter;

impl_filter!(BloomFilter, "standard");
impl_filter!(BlockedBloomFilter, "blocked");
impl_filter!(AtomicBloomFilter, "atomic");

/// A complete serialized filter with arbitrary fields and valid checksums: what a buggy or
/// hostile writer could produce, reaching every check behind the checksums. `param` is the
/// layout's byte: blocks per key, or a counting filter's counter width.
pub fn forged_filter(
    layout: u8,
    bits: u64,
    hashes: u32,
    param: u8,
    items: u64,
    payload: &[u8],
) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"BLMF");
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&[layout, 1]);
    out.extend_from_slice(&KEY);
    out.extend_from_slice(&bits.to_le_bytes());
    out.extend_from_slice(&hashes.to_le_bytes());
    out.extend_from_slice(&[param, 0, 0, 0]);
    out.extend_from_slice(&items.to_le_bytes());
    out.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&out).to_le_bytes());
    out.extend_from_slice(payload);
    out.extend_from_slice(&crc32c::crc32c(payload).to_le_bytes());
    out
}

/// The name of the error kind `result` failed with (`"Corrupt"` for `Corrupt(..)`), checking
/// that the error renders as a sentence for a person, too.
#[track_caller]
pub fn error_kind<T>(result: bloom::Result<T>) -> String {
    let Err(err) = result else {
        panic!("an error expected")
    };
    assert!(!err.to_string().is_empty());
    format!("{:?}", err.kind())
        .split(['(', ' ', '{'])
        .next()
        .unwrap()
        .to_string()
}

/// Rewrites header fields of serialized bytes and recomputes the header checksum, as a hostile
/// or buggy writer would, to reach the checks that stand behind the checksum.
pub fn forge(bytes: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut out = bytes.to_vec();
    edit(&mut out);
    let crc = crc32c::crc32c(&out[..56]);
    out[56..60].copy_from_slice(&crc.to_le_bytes());
    out
}

/// Flips every bit of `bytes` in turn: `decodes` must refuse each damaged copy. CRC-32C
/// catches every single-bit error, and fields checked before it give their own errors.
#[track_caller]
pub fn assert_every_bit_flip_rejected(bytes: &[u8], decodes: impl Fn(&[u8]) -> bool) {
    for bit in 0..bytes.len() * 8 {
        let mut damaged = bytes.to_vec();
        damaged[bit / 8] ^= 1 << (bit % 8);
        assert!(!decodes(&damaged), "bit {bit}");
    }
}
