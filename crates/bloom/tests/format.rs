//! The serialized format: golden bytes, round trips, and hostile input.

mod common;

use std::io::{self, Read, Write};

use bloom::{AtomicBloomFilter, BlockedBloomFilter, BloomFilter, ErrorKind, MAX_BITS};
use common::{error_kind, forge, item};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const GOLDEN_KEY: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

fn golden_standard() -> BloomFilter {
    let mut f = BloomFilter::builder_with_bits(200, 3)
        .key(GOLDEN_KEY)
        .build()
        .unwrap();
    for word in ["alpha", "beta", "gamma"] {
        f.insert(word);
    }
    f
}

fn golden_blocked() -> BlockedBloomFilter {
    let mut f = BlockedBloomFilter::builder_with_bits(1024, 5)
        .key(GOLDEN_KEY)
        .blocks_per_key(2)
        .build()
        .unwrap();
    for word in ["alpha", "beta", "gamma"] {
        f.insert(word);
    }
    f
}

/// Pins format version 1 byte for byte, hash and probe positions included: if this changes,
/// filters written by earlier releases would answer wrongly.
#[test]
fn golden_bytes_standard() {
    assert_eq!(hex(&golden_standard().to_bytes()), GOLDEN_STANDARD);
}

#[test]
fn golden_bytes_blocked_and_atomic() {
    assert_eq!(hex(&golden_blocked().to_bytes()), GOLDEN_BLOCKED);
    let atomic = AtomicBloomFilter::from(golden_blocked());
    assert_eq!(hex(&atomic.to_bytes()), GOLDEN_BLOCKED);
}

const GOLDEN_STANDARD: &str = concat!(
    "424c4d46",                                                         // magic
    "0100",                                                             // version
    "01",                                                               // layout
    "01",                                                               // hash
    "000102030405060708090a0b0c0d0e0f",                                 // key
    "c800000000000000",                                                 // bits
    "03000000",                                                         // hashes
    "00",                                                               // blocks per item
    "000000",                                                           // reserved
    "0300000000000000",                                                 // items
    "2000000000000000",                                                 // payload length
    "c68e03ad",                                                         // header crc
    "020000000000000000c000000010000410200000004000000100000000000000", // payload
    "0ce4f6e5",                                                         // payload crc
);
const GOLDEN_BLOCKED: &str = concat!(
    "424c4d46",                                                         // magic
    "0100",                                                             // version
    "02",                                                               // layout
    "01",                                                               // hash
    "000102030405060708090a0b0c0d0e0f",                                 // key
    "0004000000000000",                                                 // bits
    "05000000",                                                         // hashes
    "02",                                                               // blocks per item
    "000000",                                                           // reserved
    "0300000000000000",                                                 // items
    "8000000000000000",                                                 // payload length
    "91a0a4a0",                                                         // header crc
    "0000000000000000000000000000000000000000002000000000000000000000", // payload
    "0000000000200000000080000000000000000000000000000800000000000000",
    "0000010000000000000000000000000000200000000000200000000000000000",
    "0000000000000000000000000008000210008001000000080000000004000000",
    "1d3e7c65", // payload crc
);

#[test]
fn round_trips_keep_answers_and_statistics() {
    let mut standard = BloomFilter::builder(5_000, 1e-4)
        .key(common::KEY)
        .build()
        .unwrap();
    let mut blocked = BlockedBloomFilter::builder(5_000, 1e-4)
        .key(common::KEY)
        .build()
        .unwrap();
    let atomic = AtomicBloomFilter::builder(5_000, 1e-2)
        .key(common::KEY)
        .build()
        .unwrap();
    for i in 0..5_000 {
        standard.insert(item(0, i));
        blocked.insert(item(0, i));
        atomic.insert(item(0, i));
    }
    let s2 = BloomFilter::from_bytes(&standard.to_bytes()).unwrap();
    assert_eq!(s2, standard);
    assert_eq!(s2.set_bits(), standard.set_bits());
    let b2 = BlockedBloomFilter::from_bytes(&blocked.to_bytes()).unwrap();
    assert_eq!(b2, blocked);
    let a2 = AtomicBloomFilter::from_bytes(&atomic.to_bytes()).unwrap();
    assert_eq!(a2.to_bytes(), atomic.to_bytes());
    assert_eq!(
        (a2.items(), a2.set_bits()),
        (atomic.items(), atomic.set_bits())
    );
    for i in 0..20_000 {
        let x = item((i % 2) as u8, i);
        assert_eq!(s2.contains(x), standard.contains(x));
        assert_eq!(b2.contains(x), blocked.contains(x));
        assert_eq!(a2.contains(x), atomic.contains(x));
    }
}

#[test]
fn read_from_consumes_exactly_one_filter() {
    let a = golden_standard();
    let b = golden_blocked();
    let mut stream = a.to_bytes();
    stream.extend(b.to_bytes());
    stream.extend(a.to_bytes());
    let mut reader = stream.as_slice();
    assert_eq!(BloomFilter::read_from(&mut reader).unwrap(), a);
    assert_eq!(BlockedBloomFilter::read_from(&mut reader).unwrap(), b);
    assert_eq!(BloomFilter::read_from(&mut reader).unwrap(), a);
    assert!(reader.is_empty());
}

#[test]
fn every_truncation_is_an_error() {
    for bytes in [golden_standard().to_bytes(), golden_blocked().to_bytes()] {
        for len in 0..bytes.len() {
            let err = BloomFilter::from_bytes(&bytes[..len])
                .err()
                .or_else(|| BlockedBloomFilter::from_bytes(&bytes[..len]).err())
                .expect("a truncated filter must not decode");
            assert!(
                matches!(
                    err.kind(),
                    ErrorKind::Truncated | ErrorKind::WrongLayout { .. }
                ),
                "len {len}: {err}"
            );
            assert!(matches!(
                BlockedBloomFilter::from_bytes(&bytes[..len])
                    .unwrap_err()
                    .kind(),
                ErrorKind::Truncated | ErrorKind::WrongLayout { .. }
            ));
        }
    }
}

/// CRC-32C catches every single-bit error; fields checked before the checksum give their own
/// errors. Either way nothing decodes.
#[test]
fn every_bit_flip_is_an_error() {
    common::assert_every_bit_flip_rejected(&golden_standard().to_bytes(), |b| {
        BloomFilter::from_bytes(b).is_ok()
    });
    common::assert_every_bit_flip_rejected(&golden_blocked().to_bytes(), |b| {
        BlockedBloomFilter::from_bytes(b).is_ok()
    });
}

#[test]
fn header_errors_name_their_cause() {
    let bytes = golden_standard().to_bytes();
    let kind = |b: &[u8]| error_kind(BloomFilter::from_bytes(b));

    let mut magic = bytes.clone();
    magic[0] = b'X';
    assert_eq!(kind(&magic), "BadMagic");
    assert_eq!(kind(&forge(&bytes, |h| h[4] = 2)), "UnsupportedVersion");
    assert_eq!(kind(&forge(&bytes, |h| h[6] = 2)), "WrongLayout");
    assert_eq!(kind(&forge(&bytes, |h| h[6] = 9)), "WrongLayout");
    assert_eq!(kind(&forge(&bytes, |h| h[7] = 2)), "UnknownHash");
    assert_eq!(kind(&forge(&bytes, |h| h[37] = 1)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[24..32].fill(0))), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[32..36].fill(0))), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[32] = 65)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[36] = 1)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[48] ^= 8)), "Corrupt");
    let mut header_damage = bytes.clone();
    header_damage[30] ^= 1;
    assert_eq!(kind(&header_damage), "ChecksumMismatch");
    let mut payload_damage = bytes.clone();
    payload_damage[65] ^= 1;
    assert_eq!(kind(&payload_damage), "ChecksumMismatch");
    let mut trailing = bytes.clone();
    trailing.push(0);
    assert_eq!(kind(&trailing), "TrailingBytes");

    let blocked = golden_blocked().to_bytes();
    let kind = |b: &[u8]| error_kind(BlockedBloomFilter::from_bytes(b));
    assert_eq!(kind(&forge(&blocked, |h| h[36] = 3)), "Corrupt");
    assert_eq!(kind(&forge(&blocked, |h| h[36] = 0)), "Corrupt");
    // 1000 bits is not a whole number of blocks.
    assert_eq!(
        kind(&forge(&blocked, |h| h[24..32]
            .copy_from_slice(&1000u64.to_le_bytes()))),
        "Corrupt"
    );
}

/// The 200-bit standard filter's last word has 8 bits past the end; a writer that set them
/// (with a valid checksum) made a filter this crate never produces.
#[test]
fn bits_past_the_end_are_rejected() {
    let bytes = golden_standard().to_bytes();
    let last = 60 + 3 * 8 + 7;
    let mut forged = bytes.clone();
    forged[last] |= 0x80;
    let len = forged.len();
    let crc = crc32c::crc32c(&forged[60..len - 4]);
    forged[len - 4..].copy_from_slice(&crc.to_le_bytes());
    assert!(matches!(
        BloomFilter::from_bytes(&forged).unwrap_err().kind(),
        ErrorKind::Corrupt(_)
    ));
}

/// A header that claims the largest legal filter, followed by a few bytes: decoding must fail
/// as truncated after allocating about what the input holds, not 128 GiB.
#[test]
fn huge_claims_allocate_only_what_arrives() {
    let bytes = golden_blocked().to_bytes();
    let forged = forge(&bytes, |h| {
        h[24..32].copy_from_slice(&MAX_BITS.to_le_bytes());
        h[48..56].copy_from_slice(&(MAX_BITS / 8).to_le_bytes());
    });
    assert!(matches!(
        BlockedBloomFilter::from_bytes(&forged).unwrap_err().kind(),
        ErrorKind::Truncated
    ));
    assert!(matches!(
        BlockedBloomFilter::read_from(io::Read::chain(&forged[..60], io::repeat(0).take(5 << 20)))
            .unwrap_err()
            .kind(),
        ErrorKind::Truncated
    ));
    let too_big = forge(&bytes, |h| {
        h[24..32].copy_from_slice(&(MAX_BITS * 2).to_le_bytes());
        h[48..56].copy_from_slice(&(MAX_BITS / 4).to_le_bytes());
    });
    assert!(matches!(
        BlockedBloomFilter::from_bytes(&too_big).unwrap_err().kind(),
        ErrorKind::Corrupt(_)
    ));
}

/// A writer that fails reports `Io`, not a panic.
#[test]
fn write_errors_are_reported() {
    struct Broken;
    impl Write for Broken {
        fn write(&mut self, _: &[u8]) -> io::Result<usize> {
            Err(io::Error::other("disk full"))
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }
    let err = golden_standard().write_to(Broken).unwrap_err();
    assert!(matches!(err.kind(), ErrorKind::Io(_)));
    assert!(err.to_string().contains("disk full"));
}

/// Whatever decodes must be a working filter: usable, self-consistent, and re-encoded to the
/// same bytes.
fn exercise(bytes: &[u8]) -> Result<(), TestCaseError> {
    macro_rules! exercise_as {
        ($filter:ty) => {
            // The atomic filter inserts through `&self`.
            #[allow(unused_mut)]
            if let Ok(mut f) = <$filter>::from_bytes(bytes) {
                prop_assert!(f.items() <= f.set_bits());
                prop_assert_eq!(f.to_bytes(), bytes);
                f.insert("probe");
                prop_assert!(f.contains("probe"));
                let _ = (
                    f.estimated_items(),
                    f.estimated_false_positive_rate(),
                    format!("{f:?}"),
                );
            }
        };
    }
    exercise_as!(BloomFilter);
    exercise_as!(BlockedBloomFilter);
    exercise_as!(AtomicBloomFilter);
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Forged filters with valid checksums: arbitrary geometry, item counts (up to u64::MAX)
    /// and payloads of the right length or one word off. Regression: a forged item count near
    /// u64::MAX once decoded and then overflowed on the next insert.
    #[test]
    fn forged_filters_decode_to_working_filters_or_errors(
        layout in 0u8..4,
        bits in prop_oneof![1u64..3000, Just(512), Just(1024), Just(0), Just(MAX_BITS + 1)],
        hashes in prop_oneof![0u32..70, Just(u32::MAX)],
        blocks_per_key in 0u8..4,
        items in prop_oneof![0u64..50, Just(u64::MAX), any::<u64>()],
        word_delta in -1i64..=1,
        fill in any::<u8>(),
        seed in any::<u64>(),
    ) {
        let words = (bits.div_ceil(64) as i64 + word_delta).clamp(0, 64) as usize;
        let payload: Vec<u8> = (0..words * 8)
            .map(|i| (common::mix(seed ^ i as u64) as u8) & fill)
            .collect();
        let bytes = common::forged_filter(layout, bits, hashes, blocks_per_key, items, &payload);
        exercise(&bytes)?;
    }



    /// Damaging a valid filter anywhere, in any way, never decodes to a different filter.
    #[test]
    fn damage_never_decodes(at in 0usize..200, value in any::<u8>(), cut in 0usize..260) {
        let bytes = golden_blocked().to_bytes();
        let mut damaged = bytes.clone();
        let at = at % damaged.len();
        damaged[at] = value;
        damaged.truncate(cut.max(1));
        if let Ok(f) = BlockedBloomFilter::from_bytes(&damaged) {
            prop_assert_eq!(f.to_bytes(), bytes);
        }
    }

    /// Any geometry round-trips.
    #[test]
    fn any_geometry_round_trips(bits in 1u64..5_000, hashes in 1u32..=64, n in 0u64..300, two in any::<bool>()) {
        let mut s = BloomFilter::builder_with_bits(bits, hashes).key(common::KEY).build().unwrap();
        let blocks = if two && hashes >= 2 { 2 } else { 1 };
        let mut b = BlockedBloomFilter::builder_with_bits(bits, hashes)
            .key(common::KEY)
            .blocks_per_key(blocks)
            .build()
            .unwrap();
        for i in 0..n {
            s.insert(item(0, i));
            b.insert(item(0, i));
        }
        prop_assert_eq!(BloomFilter::from_bytes(&s.to_bytes()).unwrap(), s);
        prop_assert_eq!(BlockedBloomFilter::from_bytes(&b.to_bytes()).unwrap(), b);
    }
}

/// Cases for the `fuzz_` harnesses: `FUZZ_CASES` when set (to fuzz longer, see the workspace's
/// docs/testing.md), else `default`.
fn fuzz_cases(default: u32) -> u32 {
    std::env::var("FUZZ_CASES")
        .ok()
        .and_then(|n| n.parse().ok())
        .unwrap_or(default)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(fuzz_cases(512)))]

    /// Arbitrary bytes never panic any decoder.
    #[test]
    fn fuzz_decoders_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = BloomFilter::from_bytes(&bytes);
        let _ = BlockedBloomFilter::from_bytes(&bytes);
        let _ = AtomicBloomFilter::from_bytes(&bytes);
        let _ = bloom::ScalableBloomFilter::from_bytes(&bytes);
        let _ = bloom::CountingBloomFilter::from_bytes(&bytes);
    }
}
