//! Set operations and folding: the ways filters are combined and shrunk for transfer.

mod common;

use bloom::{BlockedBloomFilter, BloomFilter, ErrorKind};
use common::{KEY, item};

fn standard(bits: u64, hashes: u32) -> BloomFilter {
    BloomFilter::builder_with_bits(bits, hashes)
        .key(KEY)
        .build()
        .unwrap()
}

fn blocked(bits: u64, hashes: u32) -> BlockedBloomFilter {
    BlockedBloomFilter::builder_with_bits(bits, hashes)
        .key(KEY)
        .blocks_per_key(2)
        .build()
        .unwrap()
}

#[test]
fn union_holds_both_sets_and_equals_inserting_everything() {
    let (mut a, mut b, mut all) = (
        standard(1 << 16, 5),
        standard(1 << 16, 5),
        standard(1 << 16, 5),
    );
    let (mut c, mut d, mut both) = (
        blocked(1 << 16, 8),
        blocked(1 << 16, 8),
        blocked(1 << 16, 8),
    );
    for i in 0..2_000 {
        let x = item(0, i);
        if i % 2 == 0 {
            a.insert(x);
            c.insert(x);
        } else {
            b.insert(x);
            d.insert(x);
        }
        all.insert(x);
        both.insert(x);
    }
    a.union(&b).unwrap();
    c.union(&d).unwrap();
    assert_eq!(a.to_bytes()[60..], all.to_bytes()[60..]);
    assert_eq!(c.to_bytes()[60..], both.to_bytes()[60..]);
    assert!((a.items() as f64 - 2_000.0).abs() < 60.0, "{}", a.items());
    // Still decodable: the recomputed item count is consistent with the bits.
    assert!(BloomFilter::from_bytes(&a.to_bytes()).is_ok());
    assert!(BlockedBloomFilter::from_bytes(&c.to_bytes()).is_ok());
}

#[test]
fn intersection_keeps_the_common_items() {
    let (mut a, mut b) = (standard(1 << 16, 5), standard(1 << 16, 5));
    let (mut c, mut d) = (blocked(1 << 16, 8), blocked(1 << 16, 8));
    for i in 0..3_000 {
        if i < 2_000 {
            a.insert(item(0, i));
            c.insert(item(0, i));
        }
        if i >= 1_000 {
            b.insert(item(0, i));
            d.insert(item(0, i));
        }
    }
    a.intersect(&b).unwrap();
    c.intersect(&d).unwrap();
    assert!((1_000..2_000).all(|i| a.contains(item(0, i)) && c.contains(item(0, i))));
    let strays = (0..1_000).chain(2_000..3_000);
    let kept = strays.filter(|&i| a.contains(item(0, i))).count();
    assert!(kept < 100, "{kept} items of one side only survived");
}

#[test]
fn incompatible_filters_are_refused() {
    let incompatible =
        |r: bloom::Result<()>| matches!(r.unwrap_err().kind(), ErrorKind::Incompatible(_));
    let mut a = standard(1024, 3);
    assert!(incompatible(a.union(&standard(2048, 3))));
    assert!(incompatible(a.union(&standard(1024, 4))));
    let other_key = BloomFilter::builder_with_bits(1024, 3)
        .key([9; 16])
        .build()
        .unwrap();
    assert!(incompatible(a.intersect(&other_key)));
    let mut c = blocked(1024, 4);
    assert!(incompatible(c.union(&blocked(2048, 4))));
    let one_block = BlockedBloomFilter::builder_with_bits(1024, 4)
        .key(KEY)
        .build()
        .unwrap();
    assert!(incompatible(c.intersect(&one_block)));
}

/// Fills a 2^20-bit filter to 1/16 of its capacity and folds it down: after every fold each
/// item is still found, and the measured rate follows the filter's own estimate.
#[test]
fn folding_keeps_every_item_and_the_estimated_rate() {
    let n = 6_000u64;
    let mut s = standard(1 << 20, 7);
    let mut b = blocked(1 << 20, 8);
    for i in 0..n {
        s.insert(item(0, i));
        b.insert(item(0, i));
    }
    for _ in 0..4 {
        s = s.fold().unwrap();
        b = b.fold().unwrap();
        assert!((0..n).all(|i| s.contains(item(0, i)) && b.contains(item(0, i))));
        for (measured, estimated, bits) in [
            (
                rate(|x| s.contains(x)),
                s.estimated_false_positive_rate(),
                s.bits(),
            ),
            (
                rate(|x| b.contains(x)),
                b.estimated_false_positive_rate(),
                b.bits(),
            ),
        ] {
            assert!(
                (measured - estimated).abs() <= 0.2 * estimated + 3e-5,
                "{bits} bits: measured {measured}, estimated {estimated}"
            );
        }
    }
    assert_eq!(s.bits(), 1 << 16);
    assert!(s.estimated_false_positive_rate() > 1e-4);
}

fn rate(contains: impl Fn([u8; 17]) -> bool) -> f64 {
    let queries = 400_000;
    (0..queries).filter(|&i| contains(item(1, i))).count() as f64 / queries as f64
}

#[test]
fn fold_to_rate_picks_the_smallest_fold_within_the_rate() {
    let mut s = standard(1 << 20, 7);
    let mut b = blocked(1 << 20, 8);
    for i in 0..2_000 {
        s.insert(item(0, i));
        b.insert(item(0, i));
    }
    for max in [1e-2, 1e-3, 1e-5] {
        let small = s.fold_to_rate(max).unwrap();
        assert!(small.estimated_false_positive_rate() <= max);
        assert!(small.fold().unwrap().estimated_false_positive_rate() > max);
        let small = b.fold_to_rate(max).unwrap();
        assert!(small.estimated_false_positive_rate() <= max);
        assert!(small.fold().unwrap().estimated_false_positive_rate() > max);
    }
    // Already over the rate: no fold at all.
    assert_eq!(s.fold_to_rate(1e-30).unwrap().bits(), 1 << 20);
}

#[test]
fn only_power_of_two_filters_fold() {
    let cannot =
        |r: bloom::Result<BloomFilter>| matches!(r.unwrap_err().kind(), ErrorKind::CannotFold);
    assert!(cannot(standard(1000, 3).fold()));
    assert!(cannot(standard(64, 3).fold()));
    assert!(cannot(standard(1000, 3).fold_to_rate(0.1)));
    assert!(standard(128, 3).fold().is_ok());
    assert!(matches!(
        blocked(1536, 4).fold().unwrap_err().kind(),
        ErrorKind::CannotFold
    ));
    assert!(matches!(
        blocked(512, 4).fold().unwrap_err().kind(),
        ErrorKind::CannotFold
    ));
    assert!(standard(1 << 10, 3).fold_to_rate(f64::NAN).is_err());
}

fn sparse_standard(bits: u64, hashes: u32, n: u64) -> BloomFilter {
    let mut f = standard(bits, hashes);
    for i in 0..n {
        f.insert(item(0, i));
    }
    f
}

/// Sparse filters shrink to within a few percent of the entropy bound and come back exact;
/// a filter at its design fill is stored as it is.
#[test]
fn compression_round_trips_exactly_near_the_entropy_bound() {
    for (n, hashes) in [(1_000u64, 7u32), (10_000, 3), (30_000, 1), (100, 1)] {
        let f = sparse_standard(1 << 20, hashes, n);
        let bytes = f.to_bytes();
        let small = bloom::compress(&bytes).unwrap();
        assert_eq!(bloom::decompress(&small, bytes.len()).unwrap(), bytes);
        let bound = bloom::entropy_bits(f.bits(), f.set_bits()) / 8.0;
        let coded = (small.len() - 92) as f64;
        assert!(
            coded < bound * 1.06 + 16.0,
            "n={n}: {coded} bytes, bound {bound:.0}"
        );
        assert!(small.len() < bytes.len() / 3);
    }
    // Blocked filters too.
    let mut b = blocked(1 << 20, 8);
    for i in 0..2_000 {
        b.insert(item(0, i));
    }
    let bytes = b.to_bytes();
    let small = bloom::compress(&bytes).unwrap();
    assert!(small.len() < bytes.len() / 4);
    let back = BlockedBloomFilter::from_bytes(&bloom::decompress(&small, bytes.len()).unwrap());
    assert_eq!(back.unwrap(), b);
    // At the design fill nothing shrinks: stored, at most 32 bytes more.
    let full = sparse_standard(1 << 16, 7, 6_800);
    let bytes = full.to_bytes();
    let stored = bloom::compress(&bytes).unwrap();
    assert!(stored.len() <= bytes.len() + 32);
    assert_eq!(bloom::decompress(&stored, bytes.len()).unwrap(), bytes);
    // Empty filters: no set bits at all.
    let empty = standard(1 << 20, 3).to_bytes();
    assert_eq!(
        bloom::decompress(&bloom::compress(&empty).unwrap(), 1 << 20).unwrap(),
        empty
    );
}

#[test]
fn compressed_input_is_checked() {
    let bytes = sparse_standard(1 << 16, 3, 300).to_bytes();
    let small = bloom::compress(&bytes).unwrap();
    for len in 0..small.len() {
        assert!(
            bloom::decompress(&small[..len], 1 << 20).is_err(),
            "len {len}"
        );
    }
    for bit in 0..small.len() * 8 {
        let mut damaged = small.clone();
        damaged[bit / 8] ^= 1 << (bit % 8);
        assert!(bloom::decompress(&damaged, 1 << 20).is_err(), "bit {bit}");
    }
    // The caller's size limit, named as such.
    let err = bloom::decompress(&small, bytes.len() - 1).unwrap_err();
    assert!(
        matches!(err.kind(), ErrorKind::OverLimit { bytes: b, limit } if *b == bytes.len() as u64 && *limit == bytes.len() as u64 - 1),
        "{err}"
    );
    assert!(err.to_string().contains("over the limit"), "{err}");
    // Not filters, or not whole ones.
    assert!(bloom::compress(b"nonsense").is_err());
    assert!(bloom::compress(&bytes[..bytes.len() - 1]).is_err());
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(bloom::compress(&longer).is_err());
    let scalable = bloom::ScalableBloomFilter::new(10, 0.01)
        .unwrap()
        .to_bytes();
    assert!(matches!(
        bloom::compress(&scalable).unwrap_err().kind(),
        ErrorKind::WrongLayout { .. }
    ));
}

proptest::proptest! {
    /// Arbitrary bytes behind a valid container header never panic the decoder, and whatever
    /// decodes is checked by the filter's own payload checksum.
    #[test]
    fn arbitrary_coded_payloads_never_panic(
        coded in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
        ones in 0u64..2_000,
        r in 0u8..70,
        method in 0u8..3,
    ) {
        let bytes = standard(1 << 12, 3).to_bytes();
        let mut forged = b"BLMZ\x01\x00".to_vec();
        forged.extend_from_slice(&[method, r]);
        forged.extend_from_slice(&bytes[..60]);
        forged.extend_from_slice(&ones.to_le_bytes());
        forged.extend_from_slice(&(coded.len() as u64).to_le_bytes());
        let crc = crc32c::crc32c(&forged);
        forged.extend_from_slice(&crc.to_le_bytes());
        forged.extend_from_slice(&coded);
        forged.extend_from_slice(&bytes[bytes.len() - 4..]);
        let _ = bloom::decompress(&forged, 1 << 20);
    }
}
