//! The standard (unblocked) layout: the accuracy reference.

use std::io::Read;

use crate::bits::{Bloom, Layout, sealed};
use crate::builder::Builder;
use crate::error::{ErrorKind, Result};
use crate::format::{self, Header};
use crate::hash::{ItemHash, reduce};
use crate::sizing;
use crate::storage::prefetch;

/// A standard Bloom filter: `k` probes anywhere in `m` bits.
///
/// It meets its target rate exactly as the textbook formula says, at the textbook 1.44 log2(1/p)
/// bits per item, but each insert or positive lookup touches `k` cache lines. For large filters
/// prefer [`BlockedBloomFilter`](crate::BlockedBloomFilter).
///
/// Probe `i` of an item is `spread(h1 + i h2) mod* m` (Kirsch-Mitzenmacher double hashing),
/// where `mod*` is a 64-bit multiply-shift reduction, so filters beyond 2^32 bits are exact,
/// and `spread` is a bijective mix that lets all 128 hash bits decide the positions.
///
/// # Example
///
/// ```
/// use bloom::BloomFilter;
///
/// let mut seen = BloomFilter::new(1_000, 0.01)?;
/// assert!(seen.insert("https://example.com/"));   // new
/// assert!(!seen.insert("https://example.com/"));  // already there
/// assert!(seen.contains("https://example.com/"));
/// assert!(!seen.contains("https://example.org/")); // almost surely
/// # Ok::<(), bloom::Error>(())
/// ```
pub type BloomFilter = Bloom<Standard>;

/// The standard layout of a [`Bloom`] filter: `k` probes anywhere in `m` bits.
///
/// # Example
///
/// ```
/// let filter: bloom::Bloom<bloom::Standard> = bloom::Bloom::new(1_000, 0.01)?;
/// assert_eq!(filter.bits(), 9_586);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Standard {
    bits: u64,
    hashes: u32,
}

impl Layout for Standard {}

impl sealed::Layout for Standard {
    type Unit = u64;

    const NAME: &'static str = "BloomFilter";

    fn from_builder<F>(builder: &Builder<F>) -> Result<Self> {
        let (bits, hashes) = builder.standard_size()?;
        Ok(Standard { bits, hashes })
    }

    fn from_header(header: &Header) -> Self {
        Standard {
            bits: header.bits,
            hashes: header.hashes,
        }
    }

    fn check_decoded(header: &Header, words: &[u64]) -> Result<()> {
        let tail_bits = header.bits % 64;
        if tail_bits != 0 && words.last().is_some_and(|&w| w >> tail_bits != 0) {
            return Err(ErrorKind::Corrupt("bits set beyond the filter's size").into());
        }
        Ok(())
    }

    fn header(&self, key: [u8; 16], items: u64) -> Header {
        Header {
            layout: format::Layout::Standard,
            key,
            bits: self.bits,
            hashes: self.hashes,
            blocks_per_key: 0,
            items,
        }
    }

    fn read<R: Read>(input: &mut R) -> Result<(Header, Vec<u64>)> {
        format::read(input, format::Layout::Standard, |[w]: [u64; 1]| w)
    }

    fn bits(&self) -> u64 {
        self.bits
    }

    fn hashes(&self) -> u32 {
        self.hashes
    }

    fn units(&self) -> u64 {
        self.bits.div_ceil(64)
    }

    fn words(word: &u64) -> impl Iterator<Item = u64> {
        std::iter::once(*word)
    }

    fn combine(mine: &mut u64, theirs: &u64, op: fn(u64, u64) -> u64) {
        *mine = op(*mine, *theirs);
    }

    #[inline(always)]
    fn set(&self, hash: ItemHash, words: &mut [u64]) -> u64 {
        let mut g = hash.h1();
        let mut newly_set = 0;
        for _ in 0..self.hashes {
            let pos = probe_position(g, self.bits);
            let word = &mut words[(pos / 64) as usize];
            let mask = 1u64 << (pos % 64);
            newly_set += u64::from(*word & mask == 0);
            *word |= mask;
            g = g.wrapping_add(hash.h2());
        }
        newly_set
    }

    #[inline(always)]
    fn test(&self, hash: ItemHash, words: &[u64]) -> bool {
        let mut g = hash.h1();
        for _ in 0..self.hashes {
            let pos = probe_position(g, self.bits);
            if words[(pos / 64) as usize] & (1u64 << (pos % 64)) == 0 {
                return false;
            }
            g = g.wrapping_add(hash.h2());
        }
        true
    }

    #[inline(always)]
    fn prefetch(&self, hash: ItemHash, words: &[u64]) {
        // A negative lookup stops after about two probes at the optimal fill.
        let first = probe_position(hash.h1(), self.bits);
        let second = probe_position(hash.h1().wrapping_add(hash.h2()), self.bits);
        prefetch(&words[(first / 64) as usize]);
        prefetch(&words[(second / 64) as usize]);
    }

    fn estimated_rate(&self, ones: u64) -> f64 {
        (ones as f64 / self.bits as f64).powi(self.hashes as i32)
    }

    fn rate_at(&self, items: u64) -> f64 {
        sizing::false_positive_rate(self.bits, items, self.hashes)
    }

    const MIN_FOLD_SIZE: u64 = 128;

    fn fold_size(&self) -> u64 {
        self.bits
    }

    fn halve(&self) -> Self {
        Standard {
            bits: self.bits / 2,
            ..*self
        }
    }

    fn fold(words: &[u64]) -> Vec<u64> {
        words
            .chunks_exact(2)
            .map(|pair| u64::from(squeeze(pair[0])) | u64::from(squeeze(pair[1])) << 32)
            .collect()
    }
}

/// ORs each adjacent pair of bits of `x` and packs the 32 results, in order, into the low half:
/// one word's share of a fold.
fn squeeze(x: u64) -> u32 {
    let mut y = (x | (x >> 1)) & 0x5555_5555_5555_5555;
    y = (y | (y >> 1)) & 0x3333_3333_3333_3333;
    y = (y | (y >> 2)) & 0x0f0f_0f0f_0f0f_0f0f;
    y = (y | (y >> 4)) & 0x00ff_00ff_00ff_00ff;
    y = (y | (y >> 8)) & 0x0000_ffff_0000_ffff;
    y = (y | (y >> 16)) & 0x0000_0000_ffff_ffff;
    y as u32
}

/// The bit a double-hashing value `g` probes in a filter of `bits` bits.
///
/// Multiply-shift reduction alone would keep only the top `log2(m)` bits of `g`, so the probe
/// sequence of an item would depend on just `2 log2(m)` of its 128 hash bits: a small filter at
/// a low rate then hits the double-hashing floor of about `n / m^2` false positives (measured:
/// 5.3x the target at n = 1,000, p = 1e-6). An xor-shift and an odd multiplication, both
/// invertible, first fold the low bits into the top ones.
#[inline(always)]
pub(crate) fn probe_position(g: u64, bits: u64) -> u64 {
    reduce((g ^ (g >> 32)).wrapping_mul(0x9e37_79b9_7f4a_7c15), bits)
}
