//! The cache-line blocked layout and the single-threaded filter built on it.

use std::fmt;
use std::io::{Read, Write};

use crate::builder::Builder;
use crate::error::{ErrorKind, Result};
use crate::format::{self, Header, Layout};
use crate::hash::{ItemHash, ItemHasher, hash_group, mix64, reduce};
use crate::sizing::{self, BLOCK_BITS, BlockedParams, split_probes};
use crate::storage::{self, BATCH, Block, prefetch};

/// Fibonacci hashing's multiplier (2^64 / golden ratio, odd): each multiplication scrambles the
/// top bits, which pick the next probe inside a block.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// Blocks, probes and their split: everything needed to place an item.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Geometry {
    pub(crate) blocks: u64,
    pub(crate) hashes: u32,
    pub(crate) blocks_per_key: u32,
}

/// Where an item lives: one or two blocks and the bits to test or set in each.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe {
    pub(crate) blocks: [usize; 2],
    pub(crate) masks: [[u64; 8]; 2],
    pub(crate) count: usize,
}

impl Geometry {
    pub(crate) fn new(params: BlockedParams) -> Self {
        Geometry {
            blocks: params.bits / BLOCK_BITS,
            hashes: params.hashes,
            blocks_per_key: params.blocks_per_key,
        }
    }

    pub(crate) fn bits(&self) -> u64 {
        self.blocks * BLOCK_BITS
    }

    /// The first block comes from `h1`; the second, when there is one, from a remix of `h1`;
    /// the probes inside the blocks from a multiplicative sequence seeded by `h2`. Positions are
    /// 64-bit throughout, so filters beyond 2^32 bits (2^23 blocks) stay uniform.
    #[inline(always)]
    pub(crate) fn probe(&self, hash: ItemHash) -> Probe {
        let (first, second) = split_probes(self.hashes, self.blocks_per_key);
        let mut probe = Probe {
            blocks: [reduce(hash.h1(), self.blocks) as usize, 0],
            masks: [masks(hash.h2(), 0..first), [0; 8]],
            count: 1,
        };
        if second > 0 {
            let block = self.second_block(hash);
            let masks = masks(hash.h2(), first..first + second);
            if block == probe.blocks[0] {
                // One block holding both halves: a single entry, so that writers working from
                // a snapshot of each block never overwrite one half with the other.
                for (mine, more) in probe.masks[0].iter_mut().zip(masks) {
                    *mine |= more;
                }
            } else {
                probe.blocks[1] = block;
                probe.masks[1] = masks;
                probe.count = 2;
            }
        }
        probe
    }

    /// Whether every probe bit of the item is set, reading words through `word(block, index)`.
    ///
    /// Branch-free: all probes of a block sit in one cache line, so stopping early saves no
    /// memory traffic, while the unpredictable early-exit branch of a lookup that misses
    /// would discard the speculative work on the next lookup that overlaps this one's cache
    /// miss.
    #[inline(always)]
    pub(crate) fn contains(&self, hash: ItemHash, word: impl Fn(usize, usize) -> u64) -> bool {
        let (first, second) = split_probes(self.hashes, self.blocks_per_key);
        let probes_set = |block: usize, probes: &[u64]| {
            probes.iter().fold(1, |all, &power| {
                let bit = hash.h2().wrapping_mul(power) >> 55;
                all & (word(block, (bit >> 6) as usize) >> (bit & 63))
            })
        };
        let mut all = probes_set(self.first_block(hash), &POWERS[..first as usize]);
        if second > 0 {
            let more = &POWERS[first as usize..(first + second) as usize];
            all &= probes_set(self.second_block(hash), more);
        }
        all & 1 == 1
    }

    /// Sets every probe bit of the item in `blocks`, returning how many were clear. Direct
    /// read-modify-writes: the line is in L1 after the first probe, and building per-word
    /// masks first costs more.
    #[inline(always)]
    pub(crate) fn set(&self, hash: ItemHash, blocks: &mut [Block]) -> u64 {
        let (first, second) = split_probes(self.hashes, self.blocks_per_key);
        let mut newly_set = 0;
        let mut set_in = |block: usize, probes: &[u64]| {
            for &power in probes {
                let bit = hash.h2().wrapping_mul(power) >> 55;
                let w = &mut blocks[block].0[(bit >> 6) as usize];
                newly_set += !*w >> (bit & 63) & 1;
                *w |= 1 << (bit & 63);
            }
        };
        set_in(self.first_block(hash), &POWERS[..first as usize]);
        if second > 0 {
            set_in(
                self.second_block(hash),
                &POWERS[first as usize..(first + second) as usize],
            );
        }
        newly_set
    }

    #[inline(always)]
    pub(crate) fn first_block(&self, hash: ItemHash) -> usize {
        reduce(hash.h1(), self.blocks) as usize
    }

    #[inline(always)]
    pub(crate) fn second_block(&self, hash: ItemHash) -> usize {
        reduce(mix64(hash.h1()), self.blocks) as usize
    }

    pub(crate) fn header(&self, key: [u8; 16], items: u64) -> Header {
        Header {
            layout: Layout::Blocked,
            key,
            bits: self.bits(),
            hashes: self.hashes,
            blocks_per_key: self.blocks_per_key,
            items,
        }
    }

    pub(crate) fn from_header(header: &Header) -> Self {
        Geometry {
            blocks: header.bits / BLOCK_BITS,
            hashes: header.hashes,
            blocks_per_key: header.blocks_per_key,
        }
    }

    /// The modelled rate now, from the item count estimated off the set bits.
    pub(crate) fn estimated_rate(&self, ones: u64) -> f64 {
        let items = sizing::estimated_items(self.bits(), self.hashes, ones);
        if items.is_finite() {
            sizing::blocked_rate(self.bits(), items, self.hashes, self.blocks_per_key)
        } else {
            1.0
        }
    }
}

/// `GOLDEN^i` for every probe index: probe `i` of an item is the top 9 bits of
/// `h2 * GOLDEN^i`. The same sequence as multiplying by `GOLDEN` repeatedly, but each probe is an
/// independent multiplication instead of a link in a dependent chain.
const POWERS: [u64; crate::MAX_HASHES as usize] = {
    let mut powers = [1u64; crate::MAX_HASHES as usize];
    let mut i = 1;
    while i < powers.len() {
        powers[i] = powers[i - 1].wrapping_mul(GOLDEN);
        i += 1;
    }
    powers
};

/// Probes `start..end` of an item, as bit masks over the eight words of one 512-bit block.
#[inline(always)]
fn masks(h2: u64, probes: std::ops::Range<u32>) -> [u64; 8] {
    let mut m = [0u64; 8];
    for &power in &POWERS[probes.start as usize..probes.end as usize] {
        let bit = h2.wrapping_mul(power) >> 55;
        m[(bit >> 6) as usize] |= 1 << (bit & 63);
    }
    m
}

/// Whether every bit of `mask` is set in `block`; branch-free so the eight words compare as a
/// vector.
#[inline(always)]
pub(crate) fn block_contains(block: &[u64; 8], mask: &[u64; 8]) -> bool {
    let mut missing = 0;
    for w in 0..8 {
        missing |= mask[w] & !block[w];
    }
    missing == 0
}

/// A cache-line blocked Bloom filter: all probes of an item fall in one 64-byte block (two
/// blocks when the target rate is low), so an insert or lookup costs one cache miss (two)
/// instead of up to `k`.
///
/// Blocking costs bits: at equal size its rate is higher than the standard filter's, because
/// some blocks receive more items than others. [`new`](Self::new) compensates from the Poisson
/// block model and stays at or under the target rate. Bits per item against the standard
/// layout (see [`blocked_params`](crate::blocked_params)):
///
/// | target rate | standard | blocked | blocks per item |
/// |---|---|---|---|
/// | 1e-2 | 9.59 | 9.9 (+3%) | 1 |
/// | 1e-3 | 14.4 | 15.5 (+8%) | 1 |
/// | 1e-4 | 19.2 | 19.8 (+3%) | 2 |
/// | 1e-6 | 28.8 | 31.0 (+8%) | 2 |
///
/// # Example
///
/// ```
/// use bloom::BlockedBloomFilter;
///
/// let mut seen = BlockedBloomFilter::new(1_000_000, 1e-6)?;
/// assert_eq!(seen.blocks_per_key(), 2);
/// assert!(seen.insert("https://example.com/"));
/// assert!(!seen.insert("https://example.com/"));
/// assert!(seen.contains("https://example.com/"));
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(PartialEq, Eq)]
pub struct BlockedBloomFilter {
    blocks: Vec<Block>,
    geometry: Geometry,
    hasher: ItemHasher,
    /// Inserts that reported a new item.
    items: u64,
    /// Bits set to one, kept up to date on insert.
    ones: u64,
}

impl BlockedBloomFilter {
    /// A filter sized for `expected_items` at `false_positive_rate`, with a random key; bits,
    /// hashes and blocks per item from [`blocked_params`](crate::blocked_params).
    ///
    /// # Errors
    ///
    /// A rate outside (0, 1) or NaN, zero items, or a size beyond [`MAX_BITS`](crate::MAX_BITS).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::new(1_000, 0.01)?;
    /// assert_eq!(filter.blocks_per_key(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(expected_items: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(expected_items, false_positive_rate).build()
    }

    /// A filter of `bits` (rounded up to whole 512-bit blocks) and `hashes` probes per item in
    /// one block, with a random key. Use [`builder_with_bits`](Self::builder_with_bits) for two
    /// blocks per item.
    ///
    /// # Errors
    ///
    /// Zero bits or hashes, more than [`MAX_BITS`](crate::MAX_BITS) bits or
    /// [`MAX_HASHES`](crate::MAX_HASHES) hashes.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::with_bits(1000, 6)?;
    /// assert_eq!(filter.bits(), 1024);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn with_bits(bits: u64, hashes: u32) -> Result<Self> {
        Self::builder_with_bits(bits, hashes).build()
    }

    /// A builder sized for `expected_items` at `false_positive_rate`.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::builder(1_000, 1e-3)
    ///     .key([1; 16])
    ///     .blocks_per_key(2)
    ///     .build()?;
    /// assert_eq!(filter.blocks_per_key(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder(expected_items: usize, false_positive_rate: f64) -> Builder<Self> {
        Builder::for_rate(expected_items, false_positive_rate)
    }

    /// A builder for `bits` (rounded up to whole blocks) and `hashes` probes per item.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::builder_with_bits(4096, 8)
    ///     .blocks_per_key(2)
    ///     .build()?;
    /// assert_eq!((filter.bits(), filter.hashes()), (4096, 8));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder_with_bits(bits: u64, hashes: u32) -> Builder<Self> {
        Builder::for_bits(bits, hashes)
    }

    /// Hashes an item with this filter's key, for [`insert_hash`](Self::insert_hash) and
    /// [`contains_hash`](Self::contains_hash).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("item");
    /// filter.insert_hash(h);
    /// assert!(filter.contains_hash(h));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
        self.hasher.hash(item.as_ref())
    }

    /// Adds an item; returns `true` if it was not present before (test and set in one pass).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert(b"a"));
    /// assert!(!filter.insert(b"a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert(&mut self, item: impl AsRef<[u8]>) -> bool {
        let h = self.hash(item);
        self.insert_hash(h)
    }

    /// Whether the item may be present: `false` is certain, `true` is wrong at the filter's
    /// false-positive rate.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// assert!(filter.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// [`insert`](Self::insert) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert_hash(&mut self, hash: ItemHash) -> bool {
        let newly_set = self.geometry.set(hash, &mut self.blocks);
        self.ones += newly_set;
        let new = newly_set > 0;
        self.items += u64::from(new);
        new
    }

    /// [`contains`](Self::contains) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// assert!(!filter.contains_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        self.geometry
            .contains(hash, |block, word| self.blocks[block].0[word])
    }

    fn prefetch_blocks(&self, hash: ItemHash) {
        prefetch(&self.blocks[self.geometry.first_block(hash)]);
        if self.geometry.blocks_per_key == 2 {
            prefetch(&self.blocks[self.geometry.second_block(hash)]);
        }
    }

    /// Inserts many items, writing into `inserted` whether each was new; `inserted` is cleared
    /// first.
    ///
    /// Hashes a group of items and prefetches all their blocks before touching any, so the
    /// cache misses of a filter far larger than the CPU cache overlap instead of queueing.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// let mut inserted = Vec::new();
    /// filter.insert_batch(&["a", "b", "a"], &mut inserted);
    /// assert_eq!(inserted, [true, true, false]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert_batch<T: AsRef<[u8]>>(&mut self, items: &[T], inserted: &mut Vec<bool>) {
        inserted.clear();
        inserted.reserve(items.len());
        for group in items.chunks(BATCH) {
            let hashes = hash_group(&self.hasher, group);
            for &h in &hashes[..group.len()] {
                self.prefetch_blocks(h);
            }
            for &h in &hashes[..group.len()] {
                inserted.push(self.insert_hash(h));
            }
        }
    }

    /// Looks up many items, writing into `found` whether each may be present; `found` is
    /// cleared first. Prefetches like [`insert_batch`](Self::insert_batch).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// let mut found = Vec::new();
    /// filter.contains_batch(&["a", "b"], &mut found);
    /// assert_eq!(found, [true, false]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn contains_batch<T: AsRef<[u8]>>(&self, items: &[T], found: &mut Vec<bool>) {
        found.clear();
        found.reserve(items.len());
        for group in items.chunks(BATCH) {
            let hashes = hash_group(&self.hasher, group);
            for &h in &hashes[..group.len()] {
                self.prefetch_blocks(h);
            }
            found.extend(hashes[..group.len()].iter().map(|&h| self.contains_hash(h)));
        }
    }

    /// Removes every item, keeping the size and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.clear();
    /// assert!(!filter.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.blocks.fill(Block::default());
        self.items = 0;
        self.ones = 0;
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.geometry != other.geometry {
            return Err(
                ErrorKind::Incompatible("different bits, hashes or blocks per item").into(),
            );
        }
        if self.key() != other.key() {
            return Err(ErrorKind::Incompatible("different keys").into());
        }
        Ok(())
    }

    /// Adds every item of `other` (bitwise OR), exactly as if all had been inserted here.
    /// [`items`](Self::items) becomes the estimate from the set bits.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Incompatible`] unless both filters have the same geometry and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut a = bloom::BlockedBloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// let mut b = bloom::BlockedBloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// a.insert("x");
    /// b.insert("y");
    /// a.union(&b)?;
    /// assert!(a.contains("x") && a.contains("y"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn union(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (mine, theirs) in self.blocks.iter_mut().zip(&other.blocks) {
            for (m, t) in mine.0.iter_mut().zip(theirs.0) {
                *m |= t;
            }
        }
        self.recount();
        Ok(())
    }

    /// Keeps only what both filters hold (bitwise AND); every item inserted into both is
    /// still found.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Incompatible`] unless both filters have the same geometry and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut a = bloom::BlockedBloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// let mut b = bloom::BlockedBloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// a.insert("both");
    /// b.insert("both");
    /// b.insert("only b");
    /// a.intersect(&b)?;
    /// assert!(a.contains("both"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn intersect(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (mine, theirs) in self.blocks.iter_mut().zip(&other.blocks) {
            for (m, t) in mine.0.iter_mut().zip(theirs.0) {
                *m &= t;
            }
        }
        self.recount();
        Ok(())
    }

    fn recount(&mut self) {
        self.ones = self
            .blocks
            .iter()
            .flat_map(|b| b.0)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        let estimate = sizing::estimated_items(self.bits(), self.hashes(), self.ones);
        self.items = (estimate.round() as u64).min(self.ones);
    }

    /// Halves the filter for transfer, keeping key, hashes and blocks per item: block `j` of
    /// the result is the OR of blocks `2j` and `2j + 1`. Block indices are the top bits of a
    /// 64-bit value, so with a power-of-two block count every item's blocks halve with it and
    /// it is still found; the rate becomes that of a filter half the size.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CannotFold`] unless the block count is a power of two, at least 2.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::with_bits(1 << 16, 6)?;
    /// filter.insert("a");
    /// let half = filter.fold()?;
    /// assert_eq!(half.bits(), 1 << 15);
    /// assert!(half.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fold(&self) -> Result<Self> {
        if !self.geometry.blocks.is_power_of_two() || self.geometry.blocks < 2 {
            return Err(ErrorKind::CannotFold.into());
        }
        let blocks = self
            .blocks
            .chunks_exact(2)
            .map(|pair| Block(core::array::from_fn(|w| pair[0].0[w] | pair[1].0[w])))
            .collect();
        let mut folded = BlockedBloomFilter {
            blocks,
            geometry: Geometry {
                blocks: self.geometry.blocks / 2,
                ..self.geometry
            },
            hasher: self.hasher.clone(),
            items: self.items,
            ones: 0,
        };
        folded.ones = folded
            .blocks
            .iter()
            .flat_map(|b| b.0)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        folded.items = folded.items.min(folded.ones);
        Ok(folded)
    }

    /// The smallest fold whose estimated rate at the current fill is at most `max_rate`; this
    /// filter itself (cloned) when even one fold would exceed it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CannotFold`] unless the block count is a power of two;
    /// [`ErrorKind::InvalidFalsePositiveRate`] unless `0 < max_rate < 1`.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::with_bits(1 << 20, 6)?;
    /// for i in 0..1_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// let small = filter.fold_to_rate(0.01)?;
    /// assert!(small.bits() <= 1 << 14);
    /// assert!(small.estimated_false_positive_rate() <= 0.01);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fold_to_rate(&self, max_rate: f64) -> Result<Self> {
        if !(max_rate > 0.0 && max_rate < 1.0) {
            return Err(ErrorKind::InvalidFalsePositiveRate(max_rate).into());
        }
        if !self.geometry.blocks.is_power_of_two() {
            return Err(ErrorKind::CannotFold.into());
        }
        let mut best = self.clone();
        while best.geometry.blocks >= 2 {
            let folded = best.fold()?;
            if folded.estimated_false_positive_rate() > max_rate {
                break;
            }
            best = folded;
        }
        Ok(best)
    }

    /// The number of bits `m`, a multiple of 512.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BlockedBloomFilter::with_bits(512, 4)?.bits(), 512);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.geometry.bits()
    }

    /// Probes per item, across all of its blocks.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BlockedBloomFilter::with_bits(512, 4)?.hashes(), 4);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn hashes(&self) -> u32 {
        self.geometry.hashes
    }

    /// Blocks each item touches: 1, or 2 for low target rates.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BlockedBloomFilter::new(1_000, 1e-6)?.blocks_per_key(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn blocks_per_key(&self) -> u32 {
        self.geometry.blocks_per_key
    }

    /// The SipHash key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::builder(10, 0.1).key([9; 16]).build()?;
    /// assert_eq!(filter.key(), [9; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.hasher.key()
    }

    /// The number of inserts that reported a new item.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.insert("a");
    /// assert_eq!(filter.items(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The number of bits set to one.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::with_bits(1 << 16, 4)?;
    /// filter.insert("a");
    /// assert!((1..=4).contains(&filter.set_bits()));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn set_bits(&self) -> u64 {
        self.ones
    }

    /// The fraction of bits set.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BlockedBloomFilter::new(10, 0.01)?.fill_ratio(), 0.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.ones as f64 / self.bits() as f64
    }

    /// The number of distinct items inserted, estimated from the set bits (Swamidass and
    /// Baldi; see [`estimated_items`](crate::estimated_items)).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..5_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// assert!((filter.estimated_items() - 5_000.0).abs() < 150.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        sizing::estimated_items(self.bits(), self.hashes(), self.ones)
    }

    /// The false-positive rate now: the block model of
    /// [`blocked_false_positive_rate`](crate::blocked_false_positive_rate) at the estimated
    /// item count. (`(X / m)^k` would understate it: blocks fill unevenly.)
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..10_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// let rate = filter.estimated_false_positive_rate();
    /// assert!(rate > 0.007 && rate < 0.013, "{rate}");
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_false_positive_rate(&self) -> f64 {
        self.geometry.estimated_rate(self.ones)
    }

    /// The expected rate once `items` distinct items are in, from the block model.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::new(1_000, 0.01)?;
    /// assert!(filter.false_positive_rate_at(1_000) <= 0.01);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn false_positive_rate_at(&self, items: u64) -> f64 {
        let g = self.geometry;
        sizing::blocked_false_positive_rate(g.bits(), items, g.hashes, g.blocks_per_key)
    }

    /// Heap bytes held by the blocks.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BlockedBloomFilter::with_bits(1 << 20, 7)?.memory_bytes(), 1 << 17);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.blocks.len() * size_of::<Block>()
    }

    /// The serialized form; the same bytes an [`AtomicBloomFilter`](crate::AtomicBloomFilter)
    /// with the same contents produces, so either can read the other's.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// let copy = bloom::BlockedBloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(format::encoded_len(Layout::Blocked, self.bits()));
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Writes the serialized form to `out`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`](crate::ErrorKind::Io) when the writer fails.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// let mut out = Vec::new();
    /// filter.write_to(&mut out)?;
    /// assert_eq!(out, filter.to_bytes());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        let header = self.geometry.header(self.key(), self.items);
        format::write(&mut out, &header, self.blocks.iter().flat_map(|b| b.0))
    }

    /// Decodes a filter from exactly the bytes [`to_bytes`](Self::to_bytes) produced.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::from_bytes`](crate::BloomFilter::from_bytes).
    ///
    /// # Example
    ///
    /// ```
    /// let bytes = bloom::BlockedBloomFilter::new(100, 0.01)?.to_bytes();
    /// assert!(bloom::BlockedBloomFilter::from_bytes(&bytes).is_ok());
    /// assert!(bloom::BloomFilter::from_bytes(&bytes).is_err()); // wrong layout
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (header, blocks) = format::read_exact_slice(bytes, Layout::Blocked, Block)?;
        Self::from_decoded(&header, blocks)
    }

    /// Reads one serialized filter from `input`, leaving the reader just after it.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::read_from`](crate::BloomFilter::read_from).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// let bytes = filter.to_bytes();
    /// assert_eq!(bloom::BlockedBloomFilter::read_from(bytes.as_slice())?, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(mut input: R) -> Result<Self> {
        let (header, blocks) = format::read(&mut input, Layout::Blocked, Block)?;
        Self::from_decoded(&header, blocks)
    }

    fn from_decoded(header: &Header, blocks: Vec<Block>) -> Result<Self> {
        let ones = blocks
            .iter()
            .flat_map(|b| b.0)
            .map(|w| u64::from(w.count_ones()))
            .sum();
        format::check_items(header, ones)?;
        Ok(BlockedBloomFilter {
            blocks,
            geometry: Geometry::from_header(header),
            hasher: ItemHasher::with_key(header.key),
            items: header.items,
            ones,
        })
    }

    pub(crate) fn into_parts(self) -> (Vec<Block>, Geometry, ItemHasher, u64, u64) {
        (
            self.blocks,
            self.geometry,
            self.hasher,
            self.items,
            self.ones,
        )
    }

    pub(crate) fn from_parts(
        blocks: Vec<Block>,
        geometry: Geometry,
        hasher: ItemHasher,
        items: u64,
        ones: u64,
    ) -> Self {
        BlockedBloomFilter {
            blocks,
            geometry,
            hasher,
            items,
            ones,
        }
    }
}

impl Builder<BlockedBloomFilter> {
    /// Puts each item's probes in `blocks` blocks (1 or 2) instead of choosing from the rate.
    /// Default: chosen from the rate (two blocks when one would cost over 10% extra bits); 1
    /// when sized by bits and hashes.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::builder(1_000, 1e-6).blocks_per_key(1).build()?;
    /// assert_eq!(filter.blocks_per_key(), 1);
    /// assert!(bloom::BlockedBloomFilter::builder(1_000, 0.1).blocks_per_key(3).build().is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn blocks_per_key(self, blocks: u32) -> Self {
        self.set_blocks_per_key(blocks)
    }

    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// As [`BlockedBloomFilter::new`], [`ErrorKind::InvalidBlocksPerKey`](crate::ErrorKind::InvalidBlocksPerKey)
    /// or [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BlockedBloomFilter::builder(1_000, 0.01).build()?;
    /// assert!(filter.bits() >= 9_586);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn build(self) -> Result<BlockedBloomFilter> {
        let geometry = Geometry::new(self.blocked_size()?);
        let blocks = storage::zeroed(
            storage::units(geometry.blocks, geometry.bits())?,
            Block::default(),
        )?;
        Ok(BlockedBloomFilter::from_parts(
            blocks,
            geometry,
            self.hasher(),
            0,
            0,
        ))
    }
}

impl Clone for BlockedBloomFilter {
    /// A copy with its own blocks, allocated like a new filter's.
    ///
    /// ```
    /// let mut a = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// let b = a.clone();
    /// a.insert("x");
    /// assert!(!b.contains("x"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn clone(&self) -> Self {
        BlockedBloomFilter {
            blocks: storage::copy(&self.blocks),
            hasher: self.hasher.clone(),
            ..*self
        }
    }
}

impl fmt::Debug for BlockedBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BlockedBloomFilter")
            .field("bits", &self.bits())
            .field("hashes", &self.geometry.hashes)
            .field("blocks_per_key", &self.geometry.blocks_per_key)
            .field("items", &self.items)
            .field("set_bits", &self.ones)
            .finish_non_exhaustive()
    }
}
