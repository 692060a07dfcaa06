//! The counting filter: against a model multiset, saturation, accuracy, equivalence with the
//! standard filter, and its serialized layout (golden bytes, round trips, hostile input).

mod common;

use std::collections::HashMap;
use std::io::{self, Read};

use bloom::{BloomFilter, CountingBloomFilter, ErrorKind, ItemHasher, MAX_BITS, MAX_HASHES};
use common::{Filter, KEY, error_kind, forge, item};
use proptest::prelude::*;
use proptest::test_runner::TestCaseError;

common::impl_filter!(CountingBloomFilter, "counting");

fn counting(bits: u64, hashes: u32, width: u32) -> CountingBloomFilter {
    CountingBloomFilter::builder_with_bits(bits, hashes)
        .key(KEY)
        .counter_bits(width)
        .build()
        .unwrap()
}

// ---------------------------------------------------------------------------------------------
// Semantics

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Random interleavings of inserts and removals, checked against a multiset. Removals only
    /// ever target items the model holds (or items the filter says are certainly absent): then
    /// no item with a positive count is ever missing, `insert` and `remove` report what
    /// `contains` said, the item count is exact while nothing saturates, and removing
    /// everything restores the empty filter byte for byte.
    #[test]
    fn matches_a_model_multiset(
        ops in proptest::collection::vec((any::<bool>(), 0u64..40), 1..400),
        eight in any::<bool>(),
    ) {
        let (width, max) = if eight { (8, 255) } else { (4, 15) };
        let mut filter = CountingBloomFilter::builder(40, 0.05)
            .key(KEY)
            .counter_bits(width)
            .build()
            .unwrap();
        let empty = filter.to_bytes();
        let mut model: HashMap<u64, u64> = HashMap::new();
        for (insert, id) in ops {
            let x = item(0, id);
            let before = filter.contains(x);
            let count = model.entry(id).or_default();
            if insert {
                prop_assert_eq!(filter.insert(x), !before);
                *count += 1;
            } else if *count > 0 {
                prop_assert!(filter.remove(x));
                *count -= 1;
            } else if !before {
                let bytes = filter.to_bytes();
                prop_assert!(!filter.remove(x));
                prop_assert_eq!(filter.to_bytes(), bytes);
            }
            for (&id, &count) in &model {
                prop_assert!(count == 0 || filter.contains(item(0, id)), "false negative {}", id);
                prop_assert!(count == 0 || filter.count_estimate(item(0, id)) as u64 >= count.min(max));
            }
            if filter.saturated_counters() == 0 {
                prop_assert_eq!(filter.items(), model.values().sum::<u64>());
            }
        }
        for (&id, &count) in &model {
            for _ in 0..count {
                prop_assert!(filter.remove(item(0, id)));
            }
        }
        if filter.saturated_counters() == 0 {
            prop_assert_eq!(filter.to_bytes(), empty);
            prop_assert_eq!((filter.items(), filter.nonzero_counters()), (0, 0));
        }
    }

    /// Whatever mix of operations, including wrong removals, the statistics equal a recount
    /// from the counters (decoding recomputes them), and the item count never exceeds what
    /// decoding accepts.
    #[test]
    fn statistics_survive_any_operations(
        ops in proptest::collection::vec((0u8..3, 0u64..30), 1..300),
        eight in any::<bool>(),
    ) {
        let mut filter = counting(50, 3, if eight { 8 } else { 4 });
        for (op, id) in ops {
            match op {
                0 | 1 => { filter.insert(item(0, id)); }
                _ => { filter.remove(item(0, id)); }
            }
        }
        let decoded = CountingBloomFilter::from_bytes(&filter.to_bytes()).unwrap();
        prop_assert_eq!(&decoded, &filter);
        prop_assert_eq!(decoded.nonzero_counters(), filter.nonzero_counters());
        prop_assert_eq!(decoded.saturated_counters(), filter.saturated_counters());
    }
}

/// Removing an item that is certainly absent (some counter is zero) returns `false` and changes
/// no byte.
#[test]
fn removing_a_certainly_absent_item_changes_nothing() {
    let mut filter = CountingBloomFilter::builder(1_000, 0.01)
        .key(KEY)
        .build()
        .unwrap();
    for i in 0..1_000 {
        filter.insert(item(0, i));
    }
    let bytes = filter.to_bytes();
    let mut absent = 0;
    for i in 0..20_000 {
        let x = item(1, i);
        if !filter.contains(x) {
            absent += 1;
            assert!(!filter.remove(x));
            assert!(!filter.remove_hash(filter.hash(x)));
        }
    }
    assert!(absent > 19_000, "{absent}");
    assert_eq!(filter.to_bytes(), bytes);
    assert_eq!(filter.items(), 1_000);
}

/// One item inserted 40 times saturates its 4-bit counters, which then stay put: 40 removals
/// later the item is still present (never a false negative), and removals keep reporting it.
/// 8-bit counters hold 40 and return to empty.
#[test]
fn saturated_counters_are_sticky() {
    let x = "hot item";
    let mut four = counting(1_000, 4, 4);
    for _ in 0..40 {
        four.insert(x);
    }
    assert!(four.saturated_counters() > 0 && four.saturated_counters() <= 4);
    assert_eq!(four.count_estimate(x), 15);
    for _ in 0..40 {
        assert!(four.remove(x));
    }
    assert!(four.contains(x));
    assert!(four.saturated_counters() > 0);
    assert_eq!(four.count_estimate(x), 15);
    assert_eq!(four.items(), 0);
    // Other items still come and go around the stuck counters.
    assert!(four.insert("other"));
    assert!(four.remove("other"));
    assert!(!four.contains("other"));

    let mut eight = counting(1_000, 4, 8);
    for _ in 0..40 {
        eight.insert(x);
    }
    assert_eq!(
        (eight.count_estimate(x), eight.saturated_counters()),
        (40, 0)
    );
    for _ in 0..40 {
        assert!(eight.remove(x));
    }
    assert!(!eight.contains(x));
    assert_eq!((eight.items(), eight.nonzero_counters()), (0, 0));
    for _ in 0..300 {
        eight.insert(x);
    }
    assert_eq!(eight.count_estimate(x), 255);
}

/// The item count is capped by the sum of the counters, so that repeated inserts into
/// saturated counters cannot run it past what decoding accepts.
#[test]
fn item_count_stays_decodable_under_saturation() {
    let mut f = counting(8, 1, 4);
    for _ in 0..1_000 {
        f.insert("x");
    }
    assert_eq!(f.items(), 15);
    assert_eq!(CountingBloomFilter::from_bytes(&f.to_bytes()).unwrap(), f);
}

/// Same key and geometry as a `BloomFilter`: the same answers for every item, and exactly its
/// bits, also after removals (a filter that had items removed equals one that never had them).
#[test]
fn equivalent_to_the_standard_filter() {
    for width in [4, 8] {
        let bits = 20_000;
        let mut plain_all = BloomFilter::builder_with_bits(bits, 5)
            .key(KEY)
            .build()
            .unwrap();
        let mut plain_kept = plain_all.clone();
        let mut counts = counting(bits, 5, width);
        for i in 0..2_000 {
            plain_all.insert(item(0, i));
            counts.insert(item(0, i));
            if i % 2 == 1 {
                plain_kept.insert(item(0, i));
            }
        }
        for i in 0..40_000 {
            let x = item((i % 2) as u8, i);
            assert_eq!(counts.contains(x), plain_all.contains(x), "width {width}");
        }
        let converted = counts.to_bloom_filter();
        assert_eq!(converted.to_bytes()[60..], plain_all.to_bytes()[60..]);
        assert_eq!(converted.set_bits(), counts.nonzero_counters());
        assert_eq!(converted.key(), KEY);

        for i in (0..2_000).step_by(2) {
            assert!(counts.remove(item(0, i)));
        }
        assert_eq!(counts.saturated_counters(), 0);
        assert_eq!(counts.items(), 1_000);
        let converted = counts.to_bloom_filter();
        assert_eq!(converted.to_bytes()[60..], plain_kept.to_bytes()[60..]);
        assert_eq!(converted.items(), 1_000);
    }
}

/// One hash probes a counting filter and standard filters that share its key.
#[test]
fn hashes_are_shared_with_other_filters() {
    let h = ItemHasher::with_key(KEY).hash(b"shared");
    let mut f = counting(1_000, 3, 4);
    assert_eq!(f.hash(b"shared"), h);
    assert!(f.insert_hash(h));
    assert!(f.contains("shared"));
    assert!(f.remove_hash(h));
    assert!(!f.contains_hash(h));
}

#[test]
fn clear_clone_and_debug() {
    let mut f = counting(1_000, 3, 4);
    for _ in 0..20 {
        f.insert("x");
    }
    let copy = f.clone();
    assert_eq!(copy, f);
    f.clear();
    assert_eq!(
        (
            f.items(),
            f.nonzero_counters(),
            f.saturated_counters(),
            f.fill_ratio()
        ),
        (0, 0, 0, 0.0)
    );
    assert!(!f.contains("x") && copy.contains("x"));
    assert_eq!(f.to_bytes(), counting(1_000, 3, 4).to_bytes());
    let debug = format!("{copy:?}");
    assert!(debug.contains("CountingBloomFilter") && debug.contains("saturated_counters"));
    assert!(!debug.contains("key") && !debug.contains(&format!("{:?}", &KEY[..4])));
}

// ---------------------------------------------------------------------------------------------
// Parameters

#[test]
fn degenerate_parameters_are_typed_errors() {
    for p in [0.0, 1.0, -1e-3, 1.5, f64::NAN, f64::INFINITY] {
        assert_eq!(
            error_kind(CountingBloomFilter::new(100, p)),
            "InvalidFalsePositiveRate"
        );
    }
    assert_eq!(error_kind(CountingBloomFilter::new(0, 0.01)), "ZeroItems");
    assert_eq!(
        error_kind(CountingBloomFilter::new(10, 1e-300)),
        "TooManyHashes"
    );
    #[cfg(target_pointer_width = "64")]
    {
        assert_eq!(
            error_kind(CountingBloomFilter::new(usize::MAX, 0.01)),
            "TooLarge"
        );
    }
    assert_eq!(error_kind(CountingBloomFilter::with_bits(0, 3)), "ZeroBits");
    assert_eq!(
        error_kind(CountingBloomFilter::with_bits(64, 0)),
        "ZeroHashes"
    );
    assert_eq!(
        error_kind(CountingBloomFilter::with_bits(64, MAX_HASHES + 1)),
        "TooManyHashes"
    );
    // The counters' memory is what MAX_BITS limits: 2^40 counters of 4 bits are too many.
    assert_eq!(
        error_kind(CountingBloomFilter::with_bits(MAX_BITS, 3)),
        "TooLarge"
    );
    assert_eq!(
        error_kind(
            CountingBloomFilter::builder_with_bits(MAX_BITS / 4 + 1, 3)
                .counter_bits(4)
                .build()
        ),
        "TooLarge"
    );
    assert_eq!(
        error_kind(
            CountingBloomFilter::builder_with_bits(MAX_BITS / 8 + 1, 3)
                .counter_bits(8)
                .build()
        ),
        "TooLarge"
    );
    for width in [0, 1, 2, 3, 5, 7, 16, 32, 64, u32::MAX] {
        let err = CountingBloomFilter::builder(100, 0.01)
            .counter_bits(width)
            .build()
            .unwrap_err();
        assert!(
            matches!(err.kind(), ErrorKind::InvalidCounterBits(w) if *w == width),
            "{err}"
        );
    }
}

/// Legal extremes work: one counter, one item, a rate just under 1.
#[test]
fn tiny_filters_work() {
    let mut single = counting(1, 1, 4);
    assert!(single.insert("x"));
    assert!(single.contains("anything"));
    assert!(single.remove("x"));
    assert!(!single.contains("anything"));
    let mut one = CountingBloomFilter::new(1, 1e-6).unwrap();
    assert!(one.insert("x") && one.contains("x") && one.remove("x"));
    let loose = CountingBloomFilter::new(1_000, 0.999_999).unwrap();
    assert!(loose.bits() >= 1 && loose.hashes() == 1);
    let max_hashes = counting(100, MAX_HASHES, 8);
    assert_eq!(max_hashes.hashes(), 64);
}

/// Sizing is the standard filter's; memory is the counter width times its.
#[test]
fn sizing_and_memory_follow_the_standard_filter() {
    for (n, p) in [(1_000, 0.01), (123_456, 1e-4), (10, 0.5)] {
        let plain = BloomFilter::new(n, p).unwrap();
        let four = CountingBloomFilter::new(n, p).unwrap();
        let eight = CountingBloomFilter::builder(n, p)
            .counter_bits(8)
            .build()
            .unwrap();
        assert_eq!((four.bits(), four.hashes()), (plain.bits(), plain.hashes()));
        assert_eq!(
            (eight.bits(), eight.hashes()),
            (plain.bits(), plain.hashes())
        );
        assert_eq!(
            four.memory_bytes() as u64,
            (plain.bits() * 4).div_ceil(64) * 8
        );
        assert_eq!(
            eight.memory_bytes() as u64,
            (plain.bits() * 8).div_ceil(64) * 8
        );
    }
}

// ---------------------------------------------------------------------------------------------
// Accuracy

/// As `tests/accuracy.rs`: fill to `n`, no false negatives, and the false-positive count of
/// `queries` absent items within 1.5x the target and within 25% of the model, each with four
/// standard deviations of slack.
fn check_rate(filter: &CountingBloomFilter, present: impl Iterator<Item = u64>, n: u64, p: f64) {
    let queries = if p >= 1e-2 { 1_000_000 } else { 10_000_000 };
    let missing = present.filter(|&i| !filter.contains(item(0, i))).count();
    assert_eq!(missing, 0, "false negatives at p={p} n={n}");
    let false_positives = (0..queries)
        .filter(|&i| filter.contains(item(1, i)))
        .count() as f64;
    let target = p * queries as f64;
    let expected = filter.false_positive_rate_at(n) * queries as f64;
    let context = format!(
        "counting {}-bit p={p:e} n={n}: {false_positives} false positives in {queries} \
         queries, model expects {expected:.1}, target {target:.1}",
        filter.counter_bits()
    );
    common::assert_rate_bounds(false_positives, target, expected, &context);
}

fn filled(n: u64, p: f64) -> CountingBloomFilter {
    filled_with(n, n, p)
}

/// A filter sized for `n` at `p`, holding items `0..count`.
fn filled_with(n: u64, count: u64, p: f64) -> CountingBloomFilter {
    let mut filter = CountingBloomFilter::build(n as usize, p);
    for i in 0..count {
        filter.insert(item(0, i));
    }
    filter
}

#[test]
fn counting_at_1e_2() {
    for n in [1_000, 100_000] {
        check_rate(&filled(n, 1e-2), 0..n, n, 1e-2);
    }
}

#[test]
fn counting_at_1e_4() {
    for n in [1_000, 100_000] {
        check_rate(&filled(n, 1e-4), 0..n, n, 1e-4);
    }
}

/// After 2n inserts and n removals the filter is as accurate as one that only ever held n:
/// removal really frees the counters.
#[test]
fn removals_restore_the_rate() {
    for p in [1e-2, 1e-4] {
        let n = 50_000;
        let mut filter = filled_with(n, 2 * n, p);
        assert!(filter.estimated_false_positive_rate() > 10.0 * p);
        for i in 0..n {
            assert!(filter.remove(item(0, i)));
        }
        assert_eq!(filter.items(), n);
        let estimated = filter.estimated_items();
        assert!((estimated / n as f64 - 1.0).abs() < 0.03, "{estimated}");
        check_rate(&filter, n..2 * n, n, p);
    }
}

// ---------------------------------------------------------------------------------------------
// Serialized format

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

const GOLDEN_KEY: [u8; 16] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// 40 four-bit counters (160 bits: three words, the top 32 bits of the last unused) or 20
/// eight-bit ones; "alpha" is inserted twice.
fn golden(width: u32) -> CountingBloomFilter {
    let mut f = CountingBloomFilter::builder_with_bits(160 / u64::from(width), 3)
        .key(GOLDEN_KEY)
        .counter_bits(width)
        .build()
        .unwrap();
    for word in ["alpha", "beta", "gamma", "alpha"] {
        f.insert(word);
    }
    f
}

/// Pins layout 3 byte for byte, hash and probe positions included.
#[test]
fn golden_bytes() {
    assert_eq!(hex(&golden(4).to_bytes()), GOLDEN_4);
    assert_eq!(hex(&golden(8).to_bytes()), GOLDEN_8);
}

const GOLDEN_4: &str = concat!(
    "424c4d46",                         // magic
    "0100",                             // version
    "03",                               // layout: counting
    "01",                               // hash
    "000102030405060708090a0b0c0d0e0f", // key
    "2800000000000000",                 // counters: 40
    "03000000",                         // hashes
    "04",                               // counter width
    "000000",                           // reserved
    "0400000000000000",                 // items: 4 inserts
    "1800000000000000",                 // payload length: 3 words
    "a87900e4",                         // header crc
    "0100000000000020",                 // counters 0..16: c0 = 1, c15 = 2
    "0000200001010200",                 // c21 = 2, c24 = 1, c26 = 1, c28 = 2
    "0002000100000000",                 // c34 = 2, c38 = 1, 32 spare bits
    "c7ef7e9a",                         // payload crc
);
/// The same items in 20 counters of 8 bits: each lands in counter `floor(j / 2)` of its 4-bit
/// counter `j` above, as 64-bit multiply-shift reduction promises.
const GOLDEN_8: &str = concat!(
    "424c4d46",                         // magic
    "0100",                             // version
    "03",                               // layout: counting
    "01",                               // hash
    "000102030405060708090a0b0c0d0e0f", // key
    "1400000000000000",                 // counters: 20
    "03000000",                         // hashes
    "08",                               // counter width
    "000000",                           // reserved
    "0400000000000000",                 // items: 4 inserts
    "1800000000000000",                 // payload length: 3 words
    "d411bbe1",                         // header crc
    "0100000000000002",                 // counters 0..8: c0 = 1, c7 = 2
    "0000020001010200",                 // c10 = 2, c12 = 1, c13 = 1, c14 = 2
    "0002000100000000",                 // c17 = 2, c19 = 1, 32 spare bits
    "24a824f4",                         // payload crc
);

#[test]
fn round_trips_keep_answers_and_statistics() {
    for width in [4, 8] {
        let mut f = CountingBloomFilter::builder(5_000, 1e-3)
            .key(KEY)
            .counter_bits(width)
            .build()
            .unwrap();
        for i in 0..6_000 {
            f.insert(item(0, i % 5_000));
        }
        for i in 0..300 {
            f.remove(item(0, i));
        }
        for _ in 0..20 {
            f.insert("saturate");
        }
        let copy = CountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
        assert_eq!(copy, f);
        assert_eq!(
            (
                copy.items(),
                copy.nonzero_counters(),
                copy.saturated_counters()
            ),
            (f.items(), f.nonzero_counters(), f.saturated_counters())
        );
        assert_eq!(copy.saturated_counters() > 0, width == 4);
        for i in 0..20_000 {
            let x = item((i % 2) as u8, i);
            assert_eq!(copy.contains(x), f.contains(x));
            assert_eq!(copy.count_estimate(x), f.count_estimate(x));
        }
        let mut written = Vec::new();
        f.write_to(&mut written).unwrap();
        assert_eq!(written, f.to_bytes());
    }
}

#[test]
fn read_from_consumes_exactly_one_filter() {
    let (a, b) = (golden(4), golden(8));
    let plain = BloomFilter::with_bits(100, 2).unwrap();
    let mut stream = a.to_bytes();
    stream.extend(plain.to_bytes());
    stream.extend(b.to_bytes());
    let mut reader = stream.as_slice();
    assert_eq!(CountingBloomFilter::read_from(&mut reader).unwrap(), a);
    assert_eq!(BloomFilter::read_from(&mut reader).unwrap(), plain);
    assert_eq!(CountingBloomFilter::read_from(&mut reader).unwrap(), b);
    assert!(reader.is_empty());
}

#[test]
fn every_truncation_is_an_error() {
    for width in [4, 8] {
        let bytes = golden(width).to_bytes();
        for len in 0..bytes.len() {
            let err = CountingBloomFilter::from_bytes(&bytes[..len]).unwrap_err();
            assert!(
                matches!(err.kind(), ErrorKind::Truncated),
                "len {len}: {err}"
            );
        }
    }
}

#[test]
fn every_bit_flip_is_an_error() {
    for width in [4, 8] {
        common::assert_every_bit_flip_rejected(&golden(width).to_bytes(), |b| {
            CountingBloomFilter::from_bytes(b).is_ok()
        });
    }
}

/// Rewrites payload bytes and recomputes the payload checksum.
fn forge_payload(bytes: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut out = bytes.to_vec();
    let len = out.len();
    edit(&mut out[60..len - 4]);
    let crc = crc32c::crc32c(&out[60..len - 4]);
    out[len - 4..].copy_from_slice(&crc.to_le_bytes());
    out
}

#[test]
fn header_errors_name_their_cause() {
    let bytes = golden(4).to_bytes();
    let kind = |b: &[u8]| error_kind(CountingBloomFilter::from_bytes(b));

    // Other layouts, both ways.
    assert_eq!(kind(&forge(&bytes, |h| h[6] = 1)), "WrongLayout");
    assert_eq!(kind(&forge(&bytes, |h| h[6] = 2)), "WrongLayout");
    assert_eq!(error_kind(BloomFilter::from_bytes(&bytes)), "WrongLayout");
    assert_eq!(
        error_kind(bloom::BlockedBloomFilter::from_bytes(&bytes)),
        "WrongLayout"
    );
    let plain = BloomFilter::with_bits(160, 3).unwrap().to_bytes();
    assert_eq!(kind(&plain), "WrongLayout");

    // Counter widths other than 4 and 8, even with a payload of the matching length.
    for width in [0u8, 1, 2, 3, 5, 7, 16, 255] {
        assert_eq!(
            kind(&forge(&bytes, |h| h[36] = width)),
            "Corrupt",
            "{width}"
        );
    }
    // A valid width with the other width's payload length is caught by the length check.
    assert_eq!(kind(&forge(&bytes, |h| h[36] = 8)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[37] = 1)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[24..32].fill(0))), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[32..36].fill(0))), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[32] = 65)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[48] ^= 8)), "Corrupt");
    assert_eq!(kind(&forge(&bytes, |h| h[7] = 2)), "UnknownHash");
    // More counters than MAX_BITS bits of memory allow, with a consistent payload length.
    assert_eq!(
        kind(&forge(&bytes, |h| {
            h[24..32].copy_from_slice(&(MAX_BITS / 4 + 64).to_le_bytes());
            h[48..56].copy_from_slice(&(MAX_BITS / 8 + 32).to_le_bytes());
        })),
        "Corrupt"
    );

    // The item count: at most the sum of the counters (here 4 inserts of 3 probes = 12).
    let items = |n: u64| forge(&bytes, |h| h[40..48].copy_from_slice(&n.to_le_bytes()));
    assert_eq!(kind(&items(u64::MAX)), "Corrupt");
    assert_eq!(kind(&items(13)), "Corrupt");
    let mut at_limit = CountingBloomFilter::from_bytes(&items(12)).unwrap();
    assert_eq!(at_limit.items(), 12);
    at_limit.insert("more");
    assert!(at_limit.items() <= 15);
}

/// Both golden filters use 160 of their 192 payload bits (40 counters of 4 bits, 20 of 8); a
/// writer that set the 32 spare bits, with a valid checksum, made a filter this crate never
/// produces.
#[test]
fn bits_past_the_last_counter_are_rejected() {
    for width in [4, 8] {
        let bytes = golden(width).to_bytes();
        let forged = forge_payload(&bytes, |payload| payload[23] |= 0x80);
        assert_eq!(
            error_kind(CountingBloomFilter::from_bytes(&forged)),
            "Corrupt"
        );
        // The last real counter's bits are fine.
        let legal = forge_payload(&bytes, |payload| payload[19] |= 0x80);
        assert!(CountingBloomFilter::from_bytes(&legal).is_ok());
    }
}

/// A header claiming the largest legal filter, followed by a few bytes: decoding fails as
/// truncated after allocating about what arrived.
#[test]
fn huge_claims_are_truncated_not_allocated() {
    let bytes = golden(4).to_bytes();
    let forged = forge(&bytes, |h| {
        h[24..32].copy_from_slice(&(MAX_BITS / 4).to_le_bytes());
        h[48..56].copy_from_slice(&(MAX_BITS / 8).to_le_bytes());
    });
    assert_eq!(
        error_kind(CountingBloomFilter::from_bytes(&forged)),
        "Truncated"
    );
    assert_eq!(
        error_kind(CountingBloomFilter::read_from(io::Read::chain(
            &forged[..60],
            io::repeat(0).take(3 << 20)
        ))),
        "Truncated"
    );
}

/// Whatever decodes is a working filter that re-encodes to the same bytes.
fn exercise(bytes: &[u8]) -> Result<(), TestCaseError> {
    if let Ok(mut f) = CountingBloomFilter::from_bytes(bytes) {
        prop_assert_eq!(f.to_bytes(), bytes);
        prop_assert!(f.nonzero_counters() <= f.bits());
        prop_assert!(f.saturated_counters() <= f.nonzero_counters());
        let before = f.count_estimate("probe");
        f.insert("probe");
        prop_assert!(f.contains("probe"));
        prop_assert!(f.remove("probe"));
        // Equal unless the insert saturated a counter, which then stays up.
        prop_assert!(f.count_estimate("probe") >= before);
        let plain = f.to_bloom_filter();
        prop_assert_eq!(plain.set_bits(), f.nonzero_counters());
        let _ = (
            f.estimated_items(),
            f.estimated_false_positive_rate(),
            format!("{f:?}"),
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// Forged counting filters with valid checksums: arbitrary geometry, widths, item counts
    /// and payloads of the right length or one word off.
    #[test]
    fn forged_filters_decode_to_working_filters_or_errors(
        bits in prop_oneof![1u64..700, Just(0), Just(MAX_BITS + 1)],
        hashes in prop_oneof![0u32..70, Just(u32::MAX)],
        width in prop_oneof![Just(4u8), Just(8), 0u8..10],
        items in prop_oneof![0u64..50, Just(u64::MAX), any::<u64>()],
        word_delta in -1i64..=1,
        fill in any::<u8>(),
        seed in any::<u64>(),
    ) {
        let words = ((bits * u64::from(width.max(1))).div_ceil(64) as i64 + word_delta)
            .clamp(0, 100) as usize;
        let payload: Vec<u8> = (0..words * 8)
            .map(|i| (common::mix(seed ^ i as u64) as u8) & fill)
            .collect();
        exercise(&common::forged_filter(3, bits, hashes, width, items, &payload))?;
    }

    /// Arbitrary bytes never panic the decoder.
    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
        let _ = CountingBloomFilter::from_bytes(&bytes);
    }

    /// Any geometry round-trips, at both widths.
    #[test]
    fn any_geometry_round_trips(
        bits in 1u64..3_000,
        hashes in 1u32..=64,
        n in 0u64..300,
        eight in any::<bool>(),
    ) {
        let mut f = counting(bits, hashes, if eight { 8 } else { 4 });
        for i in 0..n {
            f.insert(item(0, i % 50));
        }
        prop_assert_eq!(CountingBloomFilter::from_bytes(&f.to_bytes()).unwrap(), f);
    }
}
