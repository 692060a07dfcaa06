//! The cache-line blocked layout, shared by the single-threaded and the atomic filters.

use std::io::Read;

use crate::bits::{Bloom, Layout, sealed};
use crate::builder::Builder;
use crate::error::Result;
use crate::format::{self, Header};
use crate::hash::{ItemHash, mix64, reduce};
use crate::sizing::{self, BLOCK_BITS, BlockedParams, split_probes};
use crate::storage::{Block, prefetch};

/// Fibonacci hashing's multiplier (2^64 / golden ratio, odd): each multiplication scrambles the
/// top bits, which pick the next probe inside a block.
const GOLDEN: u64 = 0x9e37_79b9_7f4a_7c15;

/// The cache-line blocked layout of a [`Bloom`] filter: blocks, probes and their split,
/// everything needed to place an item.
///
/// # Example
///
/// ```
/// let filter: bloom::Bloom<bloom::Blocked> = bloom::Bloom::new(1_000, 1e-6)?;
/// assert_eq!(filter.blocks_per_key(), 2);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Blocked {
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

impl Blocked {
    pub(crate) fn new(params: BlockedParams) -> Self {
        Blocked {
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
            layout: format::Layout::Blocked,
            key,
            bits: self.bits(),
            hashes: self.hashes,
            blocks_per_key: self.blocks_per_key,
            items,
        }
    }

    pub(crate) fn from_header(header: &Header) -> Self {
        Blocked {
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
pub type BlockedBloomFilter = Bloom<Blocked>;

impl Layout for Blocked {}

impl sealed::Layout for Blocked {
    type Unit = Block;

    const NAME: &'static str = "BlockedBloomFilter";

    fn from_builder<F>(builder: &Builder<F>) -> Result<Self> {
        Ok(Blocked::new(builder.blocked_size()?))
    }

    fn from_header(header: &Header) -> Self {
        Blocked::from_header(header)
    }

    fn check_decoded(_: &Header, _: &[Block]) -> Result<()> {
        // Every bit of every block is inside the filter.
        Ok(())
    }

    fn header(&self, key: [u8; 16], items: u64) -> Header {
        Blocked::header(self, key, items)
    }

    fn read<R: Read>(input: &mut R) -> Result<(Header, Vec<Block>)> {
        format::read(input, format::Layout::Blocked, Block)
    }

    fn bits(&self) -> u64 {
        Blocked::bits(self)
    }

    fn hashes(&self) -> u32 {
        self.hashes
    }

    fn units(&self) -> u64 {
        self.blocks
    }

    fn words(block: &Block) -> impl Iterator<Item = u64> {
        block.0.into_iter()
    }

    fn combine(mine: &mut Block, theirs: &Block, op: fn(u64, u64) -> u64) {
        for (m, t) in mine.0.iter_mut().zip(theirs.0) {
            *m = op(*m, t);
        }
    }

    #[inline(always)]
    fn set(&self, hash: ItemHash, blocks: &mut [Block]) -> u64 {
        Blocked::set(self, hash, blocks)
    }

    #[inline(always)]
    fn test(&self, hash: ItemHash, blocks: &[Block]) -> bool {
        self.contains(hash, |block, word| blocks[block].0[word])
    }

    #[inline(always)]
    fn prefetch(&self, hash: ItemHash, blocks: &[Block]) {
        prefetch(&blocks[self.first_block(hash)]);
        if self.blocks_per_key == 2 {
            prefetch(&blocks[self.second_block(hash)]);
        }
    }

    fn estimated_rate(&self, ones: u64) -> f64 {
        Blocked::estimated_rate(self, ones)
    }

    fn rate_at(&self, items: u64) -> f64 {
        sizing::blocked_false_positive_rate(self.bits(), items, self.hashes, self.blocks_per_key)
    }

    const MIN_FOLD_SIZE: u64 = 2;

    fn fold_size(&self) -> u64 {
        self.blocks
    }

    fn halve(&self) -> Self {
        Blocked {
            blocks: self.blocks / 2,
            ..*self
        }
    }

    fn fold(blocks: &[Block]) -> Vec<Block> {
        blocks
            .chunks_exact(2)
            .map(|pair| Block(core::array::from_fn(|w| pair[0].0[w] | pair[1].0[w])))
            .collect()
    }
}

impl BlockedBloomFilter {
    /// Blocks each item touches: 1, or 2 for low target rates.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BlockedBloomFilter::new(1_000, 1e-6)?.blocks_per_key(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn blocks_per_key(&self) -> u32 {
        self.layout().blocks_per_key
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
}
