//! The single-threaded bit-array filters: one core, [`Bloom`], over the two layouts
//! ([`Standard`](crate::Standard) and [`Blocked`](crate::Blocked)), which say only where an
//! item's bits are.

use std::fmt;
use std::io::{Read, Write};

use crate::builder::Builder;
use crate::error::{ErrorKind, Result};
use crate::format::{self, Header};
use crate::hash::{ItemHash, ItemHasher, hash_group};
use crate::sizing;
use crate::storage::{self, BATCH};

/// Where a [`Bloom`] filter puts an item's bits: [`Standard`](crate::Standard) (`k` probes anywhere) or
/// [`Blocked`](crate::Blocked) (every probe in one or two cache lines). Sealed: this crate's two layouts are
/// the only ones.
#[expect(
    private_bounds,
    reason = "sealed: only this crate's layouts implement it"
)]
pub trait Layout: sealed::Layout {}

pub(crate) mod sealed {
    use super::*;

    /// What a layout does; crate-private, so the layouts stay this crate's own.
    pub(crate) trait Layout: Copy + Eq + fmt::Debug {
        /// The storage unit: a 64-bit word, or a 512-bit block.
        type Unit: Copy + Default + Eq + fmt::Debug;

        /// The filter type's name, for `Debug`.
        const NAME: &'static str;

        /// The geometry a builder asks for.
        fn from_builder<F>(builder: &Builder<F>) -> Result<Self>;
        /// The geometry a serialized header describes.
        fn from_header(header: &Header) -> Self;
        /// Rejects decoded units this geometry cannot hold (bits beyond the size).
        fn check_decoded(header: &Header, units: &[Self::Unit]) -> Result<()>;
        /// The header of a filter with this geometry.
        fn header(&self, key: [u8; 16], items: u64) -> Header;
        /// Reads a header and its units.
        fn read<R: Read>(input: &mut R) -> Result<(Header, Vec<Self::Unit>)>;

        /// The number of bits `m`.
        fn bits(&self) -> u64;
        /// Probes per item `k`.
        fn hashes(&self) -> u32;
        /// Storage units for this geometry.
        fn units(&self) -> u64;
        /// The 64-bit words of a unit, in format order.
        fn words(unit: &Self::Unit) -> impl Iterator<Item = u64>;
        /// Combines two units word by word.
        fn combine(mine: &mut Self::Unit, theirs: &Self::Unit, op: fn(u64, u64) -> u64);

        /// Sets the item's bits; returns how many were clear.
        fn set(&self, hash: ItemHash, units: &mut [Self::Unit]) -> u64;
        /// Whether every bit of the item is set.
        fn test(&self, hash: ItemHash, units: &[Self::Unit]) -> bool;
        /// Starts loading the cache lines a lookup of the item reads first.
        fn prefetch(&self, hash: ItemHash, units: &[Self::Unit]);

        /// The modelled rate with `ones` bits set.
        fn estimated_rate(&self, ones: u64) -> f64;
        /// The modelled rate after `items` distinct items.
        fn rate_at(&self, items: u64) -> f64;

        /// What a fold halves: bits (standard) or blocks (blocked).
        fn fold_size(&self) -> u64;
        /// The smallest [`fold_size`](Self::fold_size) that folds again.
        const MIN_FOLD_SIZE: u64;
        /// This geometry with half the [`fold_size`](Self::fold_size).
        fn halve(&self) -> Self;
        /// Half as many units, each pair ORed into one as [`halve`](Self::halve) places it.
        fn fold(units: &[Self::Unit]) -> Vec<Self::Unit>;

        /// Whether the size is a power of two, the condition for folding.
        fn power_of_two(&self) -> bool {
            self.fold_size().is_power_of_two()
        }

        /// The geometry of half the size, when it can be folded again.
        fn halved(&self) -> Option<Self> {
            (self.power_of_two() && self.fold_size() >= Self::MIN_FOLD_SIZE).then(|| self.halve())
        }
    }
}

/// A single-threaded Bloom filter over a [`Layout`]; use it as [`BloomFilter`](crate::BloomFilter)
/// (`Bloom<Standard>`) or [`BlockedBloomFilter`](crate::BlockedBloomFilter) (`Bloom<Blocked>`).
///
/// Everything both layouts do is here: sizing, insert and lookup (single, hashed, batched),
/// union, intersection and folding, statistics, and the serialized format.
///
/// # Example
///
/// ```
/// use bloom::{Bloom, Blocked, Standard};
///
/// let mut standard: Bloom<Standard> = Bloom::new(1_000, 0.01)?;
/// let mut blocked: Bloom<Blocked> = Bloom::new(1_000, 0.01)?;
/// assert!(standard.insert("a") && blocked.insert("a"));
/// assert!(standard.contains("a") && blocked.contains("a"));
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(PartialEq, Eq)]
pub struct Bloom<L: Layout> {
    units: Vec<L::Unit>,
    layout: L,
    hasher: ItemHasher,
    /// Inserts that reported a new item.
    items: u64,
    /// Bits set to one, kept up to date on insert so fill and estimates cost nothing.
    ones: u64,
}

impl<L: Layout> Bloom<L> {
    /// A filter sized for `expected_items` at `false_positive_rate`, with a random key.
    ///
    /// The standard layout follows [`optimal_bits`](crate::optimal_bits) and
    /// [`optimal_hashes`](crate::optimal_hashes); the blocked one
    /// [`blocked_params`](crate::blocked_params).
    ///
    /// # Errors
    ///
    /// A rate outside (0, 1) or NaN, zero items, or a size beyond [`MAX_BITS`](crate::MAX_BITS).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::new(1_000_000, 1e-6)?;
    /// assert_eq!(filter.hashes(), 20);
    /// assert!(bloom::BlockedBloomFilter::new(0, 1e-6).is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(expected_items: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(expected_items, false_positive_rate).build()
    }

    /// A filter of `bits` bits (the blocked layout rounds up to whole 512-bit blocks) and
    /// `hashes` probes per item, with a random key. For two blocks per item, see
    /// [`Builder::blocks_per_key`].
    ///
    /// # Errors
    ///
    /// Zero bits or hashes, more than [`MAX_BITS`](crate::MAX_BITS) bits or
    /// [`MAX_HASHES`](crate::MAX_HASHES) hashes.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::with_bits(1 << 20, 7)?;
    /// assert_eq!((filter.bits(), filter.hashes()), (1 << 20, 7));
    /// assert_eq!(bloom::BlockedBloomFilter::with_bits(1000, 6)?.bits(), 1024);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn with_bits(bits: u64, hashes: u32) -> Result<Self> {
        Self::builder_with_bits(bits, hashes).build()
    }

    /// A builder sized for `expected_items` at `false_positive_rate`, to set a key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::builder(1_000, 0.01).key([5; 16]).build()?;
    /// assert_eq!(filter.key(), [5; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder(expected_items: usize, false_positive_rate: f64) -> Builder<Self> {
        Builder::for_rate(expected_items, false_positive_rate)
    }

    /// A builder for exactly `bits` bits and `hashes` probes per item.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::builder_with_bits(4096, 3).key([5; 16]).build()?;
    /// assert_eq!(filter.bits(), 4096);
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
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("item");
    /// filter.insert_hash(h);
    /// assert!(filter.contains_hash(h));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
        self.hasher.hash(item.as_ref())
    }

    /// Adds an item; returns `true` if it was not present before.
    ///
    /// Test and set happen in one pass over the probes. `false` means the item was inserted
    /// before, or is a false positive.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
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
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
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
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert_hash(&mut self, hash: ItemHash) -> bool {
        let newly_set = self.layout.set(hash, &mut self.units);
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
    /// let filter = bloom::BloomFilter::new(100, 0.01)?;
    /// assert!(!filter.contains_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        self.layout.test(hash, &self.units)
    }

    /// Inserts many items, writing into `inserted` whether each was new (as
    /// [`insert`](Self::insert)); `inserted` is cleared first.
    ///
    /// Hashes a group of items and prefetches the cache lines each will touch first before
    /// touching any, so that the cache misses of a filter far larger than the CPU cache overlap
    /// instead of following one another.
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
                self.layout.prefetch(h, &self.units);
            }
            for &h in &hashes[..group.len()] {
                inserted.push(self.insert_hash(h));
            }
        }
    }

    /// Looks up many items, writing into `found` whether each may be present (as
    /// [`contains`](Self::contains)); `found` is cleared first.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
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
                self.layout.prefetch(h, &self.units);
            }
            found.extend(hashes[..group.len()].iter().map(|&h| self.contains_hash(h)));
        }
    }

    /// Removes every item, keeping the size and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.clear();
    /// assert!(!filter.contains("a"));
    /// assert_eq!(filter.set_bits(), 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.units.fill(L::Unit::default());
        self.items = 0;
        self.ones = 0;
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.layout != other.layout {
            return Err(
                ErrorKind::Incompatible("different bits, hashes or blocks per item").into(),
            );
        }
        if self.key() != other.key() {
            return Err(ErrorKind::Incompatible("different keys").into());
        }
        Ok(())
    }

    fn combine(&mut self, other: &Self, op: fn(u64, u64) -> u64) -> Result<()> {
        self.check_compatible(other)?;
        for (mine, theirs) in self.units.iter_mut().zip(&other.units) {
            L::combine(mine, theirs, op);
        }
        self.recount();
        Ok(())
    }

    /// Adds every item of `other`: afterwards this filter answers "present" for everything
    /// either filter held (bitwise OR), exactly as if all items had been inserted here.
    ///
    /// [`items`](Self::items) becomes the estimate from the set bits, as the exact count of
    /// distinct items is unknown.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Incompatible`] unless both filters have the same geometry and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut a = bloom::BloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// let mut b = bloom::BloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// a.insert("x");
    /// b.insert("y");
    /// a.union(&b)?;
    /// assert!(a.contains("x") && a.contains("y"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn union(&mut self, other: &Self) -> Result<()> {
        self.combine(other, |a, b| a | b)
    }

    /// Keeps only what both filters hold (bitwise AND): every item inserted into both is still
    /// found. The result's rate is higher than that of a filter built from the common items
    /// alone, as bits set by different items in each can coincide.
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
    /// a.insert("only a");
    /// b.insert("both");
    /// a.intersect(&b)?;
    /// assert!(a.contains("both"));
    /// assert!(!a.contains("only a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn intersect(&mut self, other: &Self) -> Result<()> {
        self.combine(other, |a, b| a & b)
    }

    /// Recomputes the set bits, and the item count from them, after a bulk change.
    fn recount(&mut self) {
        self.ones = count_ones::<L>(&self.units);
        let estimate = sizing::estimated_items(self.bits(), self.hashes(), self.ones);
        // A valid filter never counts more items than set bits.
        self.items = (estimate.round() as u64).min(self.ones);
    }

    /// Halves the filter for transfer, keeping its key and hashes: the result answers
    /// "present" for every item this one holds, at the rate of a filter half the size.
    ///
    /// Positions are the top bits of a 64-bit value, so in a filter of `2^b` bits (blocked:
    /// blocks), position `p` becomes `p / 2`: bit (block) `i` of the folded filter is the OR of
    /// bits (blocks) `2i` and `2i + 1`. The result is an ordinary filter and folds again.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CannotFold`] unless the bit count (blocked: block count) is a power of two,
    /// at least 128 bits (2 blocks).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::with_bits(1 << 16, 4)?;
    /// filter.insert("a");
    /// let half = filter.fold()?;
    /// assert_eq!(half.bits(), 1 << 15);
    /// assert!(half.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fold(&self) -> Result<Self> {
        let layout = self.layout.halved().ok_or(ErrorKind::CannotFold)?;
        let units = L::fold(&self.units);
        let ones = count_ones::<L>(&units);
        Ok(Bloom {
            units,
            layout,
            hasher: self.hasher.clone(),
            items: self.items.min(ones),
            ones,
        })
    }

    /// The smallest fold of this filter whose estimated rate, at the current fill, is at most
    /// `max_rate`; this filter itself (cloned) when even one fold would exceed it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CannotFold`] when the bit count (blocked: block count) is not a power of
    /// two; [`ErrorKind::InvalidFalsePositiveRate`] unless `0 < max_rate < 1`.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::with_bits(1 << 20, 7)?; // room for ~100,000
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
        if !self.layout.power_of_two() {
            return Err(ErrorKind::CannotFold.into());
        }
        let mut best = self.clone();
        while best.layout.halved().is_some() {
            let folded = best.fold()?;
            if folded.estimated_false_positive_rate() > max_rate {
                break;
            }
            best = folded;
        }
        Ok(best)
    }

    /// The number of bits `m` (blocked: a multiple of 512).
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BloomFilter::new(1_000, 0.01)?.bits(), 9_586);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.layout.bits()
    }

    /// The number of hash functions (probes per item) `k`, across all of an item's blocks.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BloomFilter::new(1_000, 0.01)?.hashes(), 7);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn hashes(&self) -> u32 {
        self.layout.hashes()
    }

    /// The SipHash key; with it, [`ItemHasher::with_key`] hashes exactly as this filter does.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::builder(10, 0.1).key([9; 16]).build()?;
    /// assert_eq!(filter.key(), [9; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.hasher.key()
    }

    /// The number of inserts that reported a new item: the distinct items added, less those
    /// that were false positives when inserted.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
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
    /// let mut filter = bloom::BloomFilter::with_bits(1 << 16, 4)?;
    /// filter.insert("a");
    /// assert!((1..=4).contains(&filter.set_bits()));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn set_bits(&self) -> u64 {
        self.ones
    }

    /// The fraction of bits set; about one half at capacity with the optimal hash count.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BloomFilter::new(10, 0.01)?.fill_ratio(), 0.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.ones as f64 / self.bits() as f64
    }

    /// The number of distinct items inserted, estimated from the set bits (Swamidass and
    /// Baldi): `-(m / k) ln(1 - X / m)`. Infinite once every bit is set.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(10_000, 0.01)?;
    /// for i in 0..5_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// assert!((filter.estimated_items() - 5_000.0).abs() < 150.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        sizing::estimated_items(self.bits(), self.hashes(), self.ones)
    }

    /// The false-positive rate now, from the fill: `(X / m)^k` for the standard layout, the
    /// block model at the estimated item count for the blocked one (where `(X / m)^k`
    /// understates the rate).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(10_000, 0.01)?;
    /// for i in 0..10_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// let rate = filter.estimated_false_positive_rate();
    /// assert!(rate > 0.008 && rate < 0.012);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_false_positive_rate(&self) -> f64 {
        self.layout.estimated_rate(self.ones)
    }

    /// The expected rate once `items` distinct items are in: the sizing formula
    /// [`false_positive_rate`](crate::false_positive_rate) (blocked:
    /// [`blocked_false_positive_rate`](crate::blocked_false_positive_rate)) for this filter's
    /// geometry.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::new(1_000, 0.01)?;
    /// assert!(filter.false_positive_rate_at(1_000) <= 0.0101);
    /// assert!(filter.false_positive_rate_at(2_000) > 0.1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn false_positive_rate_at(&self, items: u64) -> f64 {
        self.layout.rate_at(items)
    }

    /// Heap bytes held by the bit array.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BloomFilter::with_bits(1 << 20, 7)?.memory_bytes(), 1 << 17);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.units.len() * size_of::<L::Unit>()
    }

    /// The serialized form (see the crate docs for the format).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// let copy = bloom::BloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let header = self.layout.header(self.key(), self.items);
        let mut out = Vec::with_capacity(format::encoded_len_of(&header));
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Writes the serialized form to `out`. The payload goes out in 1 MiB chunks, so a
    /// `BufWriter` adds nothing.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the writer fails.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::new(100, 0.01)?;
    /// let mut out = Vec::new();
    /// filter.write_to(&mut out)?;
    /// assert_eq!(out, filter.to_bytes());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        let header = self.layout.header(self.key(), self.items);
        format::write(&mut out, &header, self.units.iter().flat_map(L::words))
    }

    /// Decodes a filter from exactly the bytes [`to_bytes`](Self::to_bytes) produced (for the
    /// blocked layout, an [`AtomicBloomFilter`](crate::AtomicBloomFilter)'s too).
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Truncated`], [`ErrorKind::BadMagic`], [`ErrorKind::UnsupportedVersion`],
    /// [`ErrorKind::WrongLayout`], [`ErrorKind::UnknownHash`], [`ErrorKind::Corrupt`],
    /// [`ErrorKind::ChecksumMismatch`] or [`ErrorKind::TrailingBytes`]; never a panic, and
    /// memory in proportion to the input's actual size, whatever its header claims.
    ///
    /// # Example
    ///
    /// ```
    /// let bytes = bloom::BloomFilter::new(100, 0.01)?.to_bytes();
    /// assert!(bloom::BloomFilter::from_bytes(&bytes).is_ok());
    /// assert!(bloom::BloomFilter::from_bytes(&bytes[..20]).is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <Self as crate::Filter>::from_bytes(bytes)
    }

    /// Reads one serialized filter from `input`, leaving the reader just after it.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes), less `TrailingBytes`, plus [`ErrorKind::Io`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::new(100, 0.01)?;
    /// let bytes = filter.to_bytes();
    /// let copy = bloom::BloomFilter::read_from(&mut bytes.as_slice())?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(mut input: R) -> Result<Self> {
        let (header, units) = L::read(&mut input)?;
        L::check_decoded(&header, &units)?;
        let ones = count_ones::<L>(&units);
        format::check_items(&header, ones)?;
        Ok(Bloom {
            units,
            layout: L::from_header(&header),
            hasher: ItemHasher::with_key(header.key),
            items: header.items,
            ones,
        })
    }

    /// The geometry; for the layouts' own methods.
    pub(crate) fn layout(&self) -> &L {
        &self.layout
    }

    /// Takes the filter apart: units, geometry, hasher, items and set bits.
    pub(crate) fn into_parts(self) -> (Vec<L::Unit>, L, ItemHasher, u64, u64) {
        (self.units, self.layout, self.hasher, self.items, self.ones)
    }

    /// A filter from [`into_parts`](Self::into_parts)' pieces.
    pub(crate) fn from_parts(
        units: Vec<L::Unit>,
        layout: L,
        hasher: ItemHasher,
        items: u64,
        ones: u64,
    ) -> Self {
        Bloom {
            units,
            layout,
            hasher,
            items,
            ones,
        }
    }
}

fn count_ones<L: Layout>(units: &[L::Unit]) -> u64 {
    units
        .iter()
        .flat_map(L::words)
        .map(|w| u64::from(w.count_ones()))
        .sum()
}

impl<L: Layout> Builder<Bloom<L>> {
    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// As [`Bloom::new`] and [`Bloom::with_bits`], or [`ErrorKind::OutOfMemory`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::builder(1_000, 0.01).build()?;
    /// assert_eq!(filter.hashes(), 7);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn build(self) -> Result<Bloom<L>> {
        let layout = L::from_builder(&self)?;
        let units = storage::zeroed(
            storage::units(layout.units(), layout.bits())?,
            L::Unit::default(),
        )?;
        Ok(Bloom::from_parts(units, layout, self.hasher(), 0, 0))
    }
}

impl<L: Layout> Clone for Bloom<L> {
    /// A copy with its own bit array, allocated like a new filter's.
    ///
    /// ```
    /// let mut a = bloom::BloomFilter::new(100, 0.01)?;
    /// let b = a.clone();
    /// a.insert("x");
    /// assert!(!b.contains("x"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn clone(&self) -> Self {
        Bloom {
            units: storage::copy(&self.units),
            hasher: self.hasher.clone(),
            ..*self
        }
    }
}

impl<L: Layout> fmt::Debug for Bloom<L> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct(L::NAME)
            .field("layout", &self.layout)
            .field("items", &self.items)
            .field("set_bits", &self.ones)
            .finish_non_exhaustive()
    }
}
