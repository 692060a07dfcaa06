//! Bloom filters that keep their promises: the rate you ask for, one cache miss per lookup,
//! an exactly-once concurrent insert, and bytes that read back the same everywhere.
//!
//! * [`BloomFilter`]: the standard layout, the accuracy reference.
//! * [`BlockedBloomFilter`]: every probe of an item inside one 64-byte cache line (two for low
//!   rates), sized from a block model so it still meets the target rate.
//! * [`AtomicBloomFilter`]: the blocked layout shared across threads; when several threads
//!   insert the same new item at once, exactly one is told it is new (none, if the item is
//!   already a false positive).
//! * [`ScalableBloomFilter`] and [`AtomicScalableBloomFilter`]: chains of blocked filters that
//!   grow when full and hold the target rate however many items arrive; the atomic one stays
//!   exactly-once across growth.
//! * [`CountingBloomFilter`]: 4-bit (or 8-bit) counters instead of bits, so items can be
//!   removed; saturated counters stick, so removal never causes a false negative.
//!
//! The [`Filter`] trait is what they all share (insert, lookup, item count, capacity, estimated
//! rate, the format), so code can be generic over the filter; [`SharedFilter`] adds the
//! thread-safe insert of the atomic ones. [`BloomFilter`] and [`BlockedBloomFilter`] are one
//! type, [`Bloom`], over two [`Layout`]s.
//!
//! Every filter hashes items with keyed SipHash-1-3 (128-bit output, random key unless you
//! give one), computes positions in 64 bits (filters beyond 2^32 bits are exact) and
//! serializes to a versioned, checksummed, little-endian format. The standard and blocked
//! filters offer batched operations that prefetch, set operations (`union`, `intersect`) and
//! folding to half their size; [`compress`] shrinks sparse serialized filters to within a few
//! percent of their entropy. The [sizing functions](optimal_bits) are public and documented
//! with their formulas.
//!
//! # Example
//!
//! ```
//! use bloom::BlockedBloomFilter;
//!
//! // A million URLs at one false positive in a million: 31 bits per URL.
//! let mut seen = BlockedBloomFilter::new(1_000_000, 1e-6)?;
//! assert!(seen.insert("https://example.com/"));
//! assert!(!seen.insert("https://example.com/"));
//! assert!(seen.contains("https://example.com/"));
//!
//! // Ship it and read it back.
//! let copy = BlockedBloomFilter::from_bytes(&seen.to_bytes())?;
//! assert!(copy.contains("https://example.com/"));
//! # Ok::<(), bloom::Error>(())
//! ```
//!
//! # Serialized format
//!
//! Version 1, little-endian: a 60-byte header (magic `BLMF`, version, layout, hash id, key,
//! bits, hashes, blocks per item, item count, payload length, header CRC-32C), the bit array as
//! 64-bit words, and a CRC-32C of the payload. Truncated, damaged, foreign or future input is a
//! typed [`Error`], never a panic; decoding takes memory in proportion to the bytes that
//! actually arrive, whatever the header claims. Later versions of this crate will keep reading
//! version 1.

mod atomic;
mod bits;
mod blocked;
mod builder;
mod compress;
mod counting;
mod error;
mod filter;
mod format;
mod hash;
mod scalable;
mod sizing;
mod standard;
mod storage;
mod sync;

pub use atomic::AtomicBloomFilter;
pub use bits::{Bloom, Layout};
pub use blocked::{Blocked, BlockedBloomFilter};
pub use builder::Builder;
pub use compress::{compress, decompress, entropy_bits};
pub use counting::CountingBloomFilter;
pub use error::{Error, ErrorKind, Result};
pub use filter::{Filter, SharedFilter};
pub use hash::{ItemHash, ItemHasher};
pub use scalable::{AtomicScalableBloomFilter, ScalableBloomFilter, ScalableBuilder};
pub use sizing::{
    BLOCK_BITS, BlockedParams, MAX_BITS, MAX_HASHES, blocked_false_positive_rate, blocked_params,
    capacity, estimated_items, false_positive_rate, optimal_bits, optimal_hashes,
};
pub use standard::{BloomFilter, Standard};

/// Compiles and runs the README's examples as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
