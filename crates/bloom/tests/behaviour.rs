//! API behaviour: degenerate parameters, filters beyond 2^32 bits, batch operations, keys.

mod common;

use std::io::{self, Write};

use bloom::{AtomicBloomFilter, BlockedBloomFilter, BloomFilter, ItemHasher, MAX_BITS, MAX_HASHES};
use common::{KEY, error_kind, item};
use proptest::prelude::*;

/// Every way of asking for a meaningless or monstrous filter is a typed error, for every
/// filter type, and none of them hangs (fastbloom once looped forever on n = 0) or tries to
/// allocate.
#[test]
fn degenerate_parameters_are_typed_errors() {
    for p in [0.0, 1.0, -1e-3, 1.5, f64::NAN, f64::INFINITY] {
        assert_eq!(
            error_kind(BloomFilter::new(100, p)),
            "InvalidFalsePositiveRate"
        );
        assert_eq!(
            error_kind(BlockedBloomFilter::new(100, p)),
            "InvalidFalsePositiveRate"
        );
        assert_eq!(
            error_kind(AtomicBloomFilter::new(100, p)),
            "InvalidFalsePositiveRate"
        );
    }
    assert_eq!(error_kind(BloomFilter::new(0, 0.01)), "ZeroItems");
    assert_eq!(error_kind(BlockedBloomFilter::new(0, 0.01)), "ZeroItems");
    assert_eq!(error_kind(AtomicBloomFilter::new(0, 0.01)), "ZeroItems");
    // On 64-bit targets these item counts need more than MAX_BITS; on 32-bit ones they fit
    // under it and fail on memory instead.
    #[cfg(target_pointer_width = "64")]
    {
        assert_eq!(error_kind(BloomFilter::new(usize::MAX, 0.01)), "TooLarge");
        assert_eq!(
            error_kind(BlockedBloomFilter::new(usize::MAX, 0.5)),
            "TooLarge"
        );
        assert_eq!(
            error_kind(AtomicBloomFilter::new(usize::MAX / 2, 1e-9)),
            "TooLarge"
        );
    }
    assert_eq!(error_kind(BloomFilter::new(10, 1e-300)), "TooManyHashes");
    assert_eq!(
        error_kind(BlockedBloomFilter::new(10, 1e-300)),
        "TooManyHashes"
    );

    assert_eq!(error_kind(BloomFilter::with_bits(0, 3)), "ZeroBits");
    assert_eq!(error_kind(BloomFilter::with_bits(64, 0)), "ZeroHashes");
    assert_eq!(
        error_kind(BloomFilter::with_bits(64, MAX_HASHES + 1)),
        "TooManyHashes"
    );
    assert_eq!(
        error_kind(BloomFilter::with_bits(MAX_BITS + 1, 3)),
        "TooLarge"
    );
    assert_eq!(error_kind(BlockedBloomFilter::with_bits(0, 3)), "ZeroBits");
    assert_eq!(
        error_kind(BlockedBloomFilter::with_bits(MAX_BITS + 1, 3)),
        "TooLarge"
    );
    assert_eq!(
        error_kind(AtomicBloomFilter::with_bits(512, 0)),
        "ZeroHashes"
    );
    assert_eq!(
        error_kind(
            BlockedBloomFilter::builder(10, 0.1)
                .blocks_per_key(0)
                .build()
        ),
        "InvalidBlocksPerKey"
    );
    assert_eq!(
        error_kind(
            AtomicBloomFilter::builder(10, 0.1)
                .blocks_per_key(3)
                .build()
        ),
        "InvalidBlocksPerKey"
    );
    assert_eq!(
        error_kind(
            BlockedBloomFilter::builder_with_bits(512, 1)
                .blocks_per_key(2)
                .build()
        ),
        "FewerHashesThanBlocks"
    );
}

/// Edge sizes that are legal work: one item, a rate just under 1, a one-bit filter.
#[test]
fn tiny_filters_work() {
    let mut one = BloomFilter::new(1, 1e-6).unwrap();
    assert!(one.insert("x"));
    assert!(one.contains("x"));
    assert!(!one.insert("x"));
    let mut loose = BlockedBloomFilter::new(1_000, 0.999_999).unwrap();
    assert_eq!(loose.bits(), 512);
    assert!(loose.insert("x") && loose.contains("x"));
    let mut single = BloomFilter::with_bits(1, 1).unwrap();
    single.insert("x");
    assert!(single.contains("anything"));
    assert_eq!(single.fill_ratio(), 1.0);
    assert!(single.estimated_items().is_infinite());
}

/// Counts set bits per half of a filter's payload while it is written out, without holding a
/// copy of the gigabyte.
struct HalfCounter {
    header_left: usize,
    payload_half: u64,
    seen: u64,
    ones: [u64; 2],
}

impl Write for HalfCounter {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let skip = self.header_left.min(buf.len());
        self.header_left -= skip;
        let payload = &buf[skip..];
        let low = (self.payload_half.saturating_sub(self.seen) as usize).min(payload.len());
        let count = |bytes: &[u8]| bytes.iter().map(|b| u64::from(b.count_ones())).sum::<u64>();
        self.ones[0] += count(&payload[..low]);
        self.ones[1] += count(&payload[low..]);
        self.seen += payload.len() as u64;
        Ok(buf.len())
    }
    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

fn halves(bits: u64, write: impl FnOnce(&mut HalfCounter)) -> [u64; 2] {
    let mut counter = HalfCounter {
        header_left: 60,
        payload_half: bits / 16,
        seen: 0,
        ones: [0; 2],
    };
    write(&mut counter);
    counter.ones
}

/// Positions are 64-bit: in a filter of 2^33 + 512 bits the upper half (beyond 2^32) gets as
/// many bits as the lower one. A 32-bit position or hash would leave it empty (the Guava,
/// Spark and fastbloom bug class). 1 GiB per filter; the two run one after the other.
#[test]
#[cfg(target_pointer_width = "64")]
fn filters_beyond_2_pow_32_bits_use_all_of_them() {
    let bits = (1u64 << 33) + 512;
    let n = 400_000u64;
    let balanced = |[low, high]: [u64; 2]| {
        let ratio = low as f64 / high as f64;
        assert!(
            high > 0 && (ratio - 1.0).abs() < 0.02,
            "low {low} high {high}"
        );
    };
    {
        let mut standard = BloomFilter::builder_with_bits(bits, 3)
            .key(KEY)
            .build()
            .unwrap();
        for i in 0..n {
            standard.insert(item(0, i));
        }
        assert!((0..n).all(|i| standard.contains(item(0, i))));
        assert!((0..n).all(|i| !standard.contains(item(1, i))));
        balanced(halves(bits, |w| standard.write_to(w).unwrap()));
    }
    {
        let mut blocked = BlockedBloomFilter::builder_with_bits(bits, 6)
            .key(KEY)
            .blocks_per_key(2)
            .build()
            .unwrap();
        for i in 0..n {
            blocked.insert(item(0, i));
        }
        assert!((0..n).all(|i| blocked.contains(item(0, i))));
        assert!((0..n).all(|i| !blocked.contains(item(1, i))));
        balanced(halves(bits, |w| blocked.write_to(w).unwrap()));
    }
}

#[test]
fn same_key_same_bytes_different_key_different_bits() {
    let build = |key| {
        let mut f = BlockedBloomFilter::builder(1_000, 0.01)
            .key(key)
            .build()
            .unwrap();
        for i in 0..500 {
            f.insert(item(0, i));
        }
        f
    };
    assert_eq!(build(KEY).to_bytes(), build(KEY).to_bytes());
    assert_ne!(build(KEY).to_bytes()[60..], build([1; 16]).to_bytes()[60..]);
    // Random keys differ from filter to filter.
    assert_ne!(
        BloomFilter::new(10, 0.1).unwrap().key(),
        BloomFilter::new(10, 0.1).unwrap().key()
    );
    // One hash probes every filter sharing the key.
    let h = ItemHasher::with_key(KEY).hash(b"shared");
    let mut a = BloomFilter::builder(10, 0.01).key(KEY).build().unwrap();
    a.insert("shared");
    assert!(a.contains_hash(h));
}

#[test]
fn clear_and_counters() {
    let mut f = BlockedBloomFilter::new(1_000, 0.01).unwrap();
    for i in 0..100 {
        f.insert(item(0, i));
        f.insert(item(0, i));
    }
    assert_eq!(f.items(), 100);
    assert!(f.set_bits() > 0 && f.set_bits() <= 100 * u64::from(f.hashes()));
    f.clear();
    assert_eq!((f.items(), f.set_bits()), (0, 0));
    assert!((0..100).all(|i| !f.contains(item(0, i))));
}

#[test]
fn conversions_between_blocked_and_atomic_keep_everything() {
    let mut blocked = BlockedBloomFilter::builder(1_000, 1e-4)
        .key(KEY)
        .build()
        .unwrap();
    for i in 0..700 {
        blocked.insert(item(0, i));
    }
    let bytes = blocked.to_bytes();
    let atomic = AtomicBloomFilter::from(blocked);
    assert_eq!(atomic.to_bytes(), bytes);
    assert_eq!(atomic.items(), 700);
    let back = BlockedBloomFilter::from(atomic);
    assert_eq!(back.to_bytes(), bytes);
}

proptest! {
    /// `insert` reports new exactly when `contains` said absent just before, and afterwards
    /// the item is always found: test-and-set in one pass, never a false negative.
    #[test]
    fn insert_is_test_and_set(ids in proptest::collection::vec(0u64..400, 1..400)) {
        let mut s = BloomFilter::builder(64, 0.05).key(KEY).build().unwrap();
        let mut b = BlockedBloomFilter::builder(64, 0.05).key(KEY).build().unwrap();
        let a = AtomicBloomFilter::builder(64, 0.05).key(KEY).build().unwrap();
        for &id in &ids {
            let x = item(0, id);
            let (before_s, before_b, before_a) = (s.contains(x), b.contains(x), a.contains(x));
            prop_assert_eq!(s.insert(x), !before_s);
            prop_assert_eq!(b.insert(x), !before_b);
            prop_assert_eq!(a.insert(x), !before_a);
        }
        for &id in &ids {
            let x = item(0, id);
            prop_assert!(s.contains(x) && b.contains(x) && a.contains(x));
        }
    }

    /// The batch operations answer exactly as the one-at-a-time ones, at any batch length.
    #[test]
    fn batches_match_single_operations(ids in proptest::collection::vec(0u64..300, 0..100)) {
        let items: Vec<_> = ids.iter().map(|&i| item(0, i)).collect();
        let probes: Vec<_> = (0..150).map(|i| item(0, i)).collect();
        let mut out = Vec::new();

        let mut s1 = BloomFilter::builder(50, 0.01).key(KEY).build().unwrap();
        let mut s2 = s1.clone();
        s1.insert_batch(&items, &mut out);
        prop_assert_eq!(&out, &items.iter().map(|x| s2.insert(x)).collect::<Vec<_>>());
        s1.contains_batch(&probes, &mut out);
        prop_assert_eq!(&out, &probes.iter().map(|x| s2.contains(x)).collect::<Vec<_>>());

        let mut b1 = BlockedBloomFilter::builder(50, 1e-6).key(KEY).build().unwrap();
        let mut b2 = b1.clone();
        b1.insert_batch(&items, &mut out);
        prop_assert_eq!(&out, &items.iter().map(|x| b2.insert(x)).collect::<Vec<_>>());
        b1.contains_batch(&probes, &mut out);
        prop_assert_eq!(&out, &probes.iter().map(|x| b2.contains(x)).collect::<Vec<_>>());

        let a1 = AtomicBloomFilter::builder(50, 0.01).key(KEY).build().unwrap();
        let a2 = AtomicBloomFilter::builder(50, 0.01).key(KEY).build().unwrap();
        a1.insert_batch(&items, &mut out);
        prop_assert_eq!(&out, &items.iter().map(|x| a2.insert(x)).collect::<Vec<_>>());
        a1.contains_batch(&probes, &mut out);
        prop_assert_eq!(&out, &probes.iter().map(|x| a2.contains(x)).collect::<Vec<_>>());
    }
}
