//! The standard (unblocked) Bloom filter: the accuracy reference.

use std::fmt;
use std::io::{Read, Write};

use crate::builder::Builder;
use crate::error::{ErrorKind, Result};
use crate::format::{self, Header, Layout};
use crate::hash::{ItemHash, ItemHasher, hash_group, reduce};
use crate::sizing;
use crate::storage::{self, BATCH, prefetch};

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
#[derive(PartialEq, Eq)]
pub struct BloomFilter {
    words: Vec<u64>,
    bits: u64,
    hashes: u32,
    hasher: ItemHasher,
    /// Inserts that reported a new item.
    items: u64,
    /// Bits set to one, kept up to date on insert so fill and estimates cost nothing.
    ones: u64,
}

impl BloomFilter {
    /// A filter sized for `expected_items` at `false_positive_rate`, with a random key.
    ///
    /// Bits and hashes follow [`optimal_bits`](crate::optimal_bits) and
    /// [`optimal_hashes`](crate::optimal_hashes).
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
    /// assert!(bloom::BloomFilter::new(0, 1e-6).is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(expected_items: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(expected_items, false_positive_rate).build()
    }

    /// A filter of exactly `bits` bits and `hashes` probes per item, with a random key.
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

    fn from_parts(bits: u64, hashes: u32, hasher: ItemHasher) -> Result<Self> {
        let words = storage::zeroed(storage::units(bits.div_ceil(64), bits)?, 0u64)?;
        Ok(BloomFilter {
            words,
            bits,
            hashes,
            hasher,
            items: 0,
            ones: 0,
        })
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
        let mut g = hash.h1();
        let mut newly_set = 0;
        for _ in 0..self.hashes {
            let pos = probe_position(g, self.bits);
            let word = &mut self.words[(pos / 64) as usize];
            let mask = 1u64 << (pos % 64);
            newly_set += u64::from(*word & mask == 0);
            *word |= mask;
            g = g.wrapping_add(hash.h2());
        }
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
        let mut g = hash.h1();
        for _ in 0..self.hashes {
            let pos = probe_position(g, self.bits);
            if self.words[(pos / 64) as usize] & (1u64 << (pos % 64)) == 0 {
                return false;
            }
            g = g.wrapping_add(hash.h2());
        }
        true
    }

    fn prefetch_first_probes(&self, hash: ItemHash) {
        // A negative lookup stops after about two probes at the optimal fill.
        let first = probe_position(hash.h1(), self.bits);
        let second = probe_position(hash.h1().wrapping_add(hash.h2()), self.bits);
        prefetch(&self.words[(first / 64) as usize]);
        prefetch(&self.words[(second / 64) as usize]);
    }

    /// Inserts many items, writing into `inserted` whether each was new (as
    /// [`insert`](Self::insert)); `inserted` is cleared first.
    ///
    /// Hashes a group of items and prefetches their first probes before touching the bits, so
    /// that cache misses overlap instead of following one another.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
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
                self.prefetch_first_probes(h);
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
                self.prefetch_first_probes(h);
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
        self.words.fill(0);
        self.items = 0;
        self.ones = 0;
    }

    fn check_compatible(&self, other: &Self) -> Result<()> {
        if self.bits != other.bits || self.hashes != other.hashes {
            return Err(ErrorKind::Incompatible("different bits or hashes").into());
        }
        if self.key() != other.key() {
            return Err(ErrorKind::Incompatible("different keys").into());
        }
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
    /// [`ErrorKind::Incompatible`] unless both filters have the same bits, hashes and key.
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
        self.check_compatible(other)?;
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine |= theirs;
        }
        self.recount();
        Ok(())
    }

    /// Keeps only what both filters hold (bitwise AND): every item inserted into both is still
    /// found. The result's rate is higher than that of a filter built from the common items
    /// alone, as bits set by different items in each can coincide.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Incompatible`] unless both filters have the same bits, hashes and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut a = bloom::BloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// let mut b = bloom::BloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// a.insert("both");
    /// a.insert("only a");
    /// b.insert("both");
    /// a.intersect(&b)?;
    /// assert!(a.contains("both"));
    /// assert!(!a.contains("only a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn intersect(&mut self, other: &Self) -> Result<()> {
        self.check_compatible(other)?;
        for (mine, theirs) in self.words.iter_mut().zip(&other.words) {
            *mine &= theirs;
        }
        self.recount();
        Ok(())
    }

    /// Recomputes the set bits, and the item count from them, after a bulk change.
    fn recount(&mut self) {
        self.ones = self.words.iter().map(|w| u64::from(w.count_ones())).sum();
        let estimate = sizing::estimated_items(self.bits, self.hashes, self.ones);
        // A valid filter never counts more items than set bits.
        self.items = (estimate.round() as u64).min(self.ones);
    }

    /// Halves the filter for transfer, keeping its key and hashes: the result answers
    /// "present" for every item this one holds, at the rate of a filter half the size.
    ///
    /// Positions are the top `log2(m)` bits of a 64-bit value, so in a filter of `m = 2^b`
    /// bits, position `p` becomes `p / 2` in one of `m / 2`: bit `i` of the folded filter is
    /// the OR of bits `2i` and `2i + 1`. The result is an ordinary filter and folds again.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CannotFold`] unless the bit count is a power of two, at least 128.
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
        if !self.bits.is_power_of_two() || self.bits < 128 {
            return Err(ErrorKind::CannotFold.into());
        }
        let words = self
            .words
            .chunks_exact(2)
            .map(|pair| u64::from(squeeze(pair[0])) | u64::from(squeeze(pair[1])) << 32)
            .collect();
        let mut folded = BloomFilter {
            words,
            bits: self.bits / 2,
            hashes: self.hashes,
            hasher: self.hasher.clone(),
            items: self.items,
            ones: 0,
        };
        folded.ones = folded.words.iter().map(|w| u64::from(w.count_ones())).sum();
        folded.items = folded.items.min(folded.ones);
        Ok(folded)
    }

    /// The smallest fold of this filter whose estimated rate, at the current fill, is at most
    /// `max_rate`; this filter itself (cloned) when even one fold would exceed it.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::CannotFold`] when the bit count is not a power of two;
    /// [`ErrorKind::InvalidFalsePositiveRate`] unless `0 < max_rate < 1`.
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
        if !self.bits.is_power_of_two() {
            return Err(ErrorKind::CannotFold.into());
        }
        let mut best = self.clone();
        while best.bits >= 128 {
            let folded = best.fold()?;
            if folded.estimated_false_positive_rate() > max_rate {
                break;
            }
            best = folded;
        }
        Ok(best)
    }

    /// The number of bits `m`.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BloomFilter::new(1_000, 0.01)?.bits(), 9_586);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn bits(&self) -> u64 {
        self.bits
    }

    /// The number of hash functions (probes per item) `k`.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::BloomFilter::new(1_000, 0.01)?.hashes(), 7);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn hashes(&self) -> u32 {
        self.hashes
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
        self.ones as f64 / self.bits as f64
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
        sizing::estimated_items(self.bits, self.hashes, self.ones)
    }

    /// The false-positive rate now, from the fill: `(X / m)^k`.
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
        self.fill_ratio().powi(self.hashes as i32)
    }

    /// The expected rate once `items` distinct items are in: the sizing formula
    /// [`false_positive_rate`](crate::false_positive_rate) for this filter's bits and hashes.
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
        sizing::false_positive_rate(self.bits, items, self.hashes)
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
        self.words.len() * 8
    }

    fn header(&self) -> Header {
        Header {
            layout: Layout::Standard,
            key: self.key(),
            bits: self.bits,
            hashes: self.hashes,
            blocks_per_key: 0,
            items: self.items,
        }
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
        let mut out = Vec::with_capacity(format::encoded_len(Layout::Standard, self.bits));
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
        format::write(&mut out, &self.header(), self.words.iter().copied())
    }

    /// Decodes a filter from exactly the bytes [`to_bytes`](Self::to_bytes) produced.
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
        let (header, words) = format::read_exact_slice(bytes, Layout::Standard, |[w]: [u64; 1]| w)?;
        Self::from_decoded(header, words)
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
        let (header, words) = format::read(&mut input, Layout::Standard, |[w]: [u64; 1]| w)?;
        Self::from_decoded(header, words)
    }

    fn from_decoded(header: Header, words: Vec<u64>) -> Result<Self> {
        let tail_bits = header.bits % 64;
        if tail_bits != 0 && words.last().is_some_and(|&w| w >> tail_bits != 0) {
            return Err(ErrorKind::Corrupt("bits set beyond the filter's size").into());
        }
        let ones = words.iter().map(|w| u64::from(w.count_ones())).sum();
        format::check_items(&header, ones)?;
        Ok(BloomFilter {
            words,
            bits: header.bits,
            hashes: header.hashes,
            hasher: ItemHasher::with_key(header.key),
            items: header.items,
            ones,
        })
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

impl Builder<BloomFilter> {
    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::new`] and [`BloomFilter::with_bits`], or
    /// [`ErrorKind::OutOfMemory`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::BloomFilter::builder(1_000, 0.01).build()?;
    /// assert_eq!(filter.hashes(), 7);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn build(self) -> Result<BloomFilter> {
        let (bits, hashes) = self.standard_size()?;
        BloomFilter::from_parts(bits, hashes, self.hasher())
    }
}

impl Clone for BloomFilter {
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
        BloomFilter {
            words: storage::copy(&self.words),
            hasher: self.hasher.clone(),
            ..*self
        }
    }
}

impl fmt::Debug for BloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("BloomFilter")
            .field("bits", &self.bits)
            .field("hashes", &self.hashes)
            .field("items", &self.items)
            .field("set_bits", &self.ones)
            .finish_non_exhaustive()
    }
}
