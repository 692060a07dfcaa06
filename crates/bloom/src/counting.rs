//! The counting Bloom filter: the standard layout with a small counter in place of each bit, so
//! that items can be removed.

use std::fmt;
use std::io::{Read, Write};

use crate::builder::Builder;
use crate::error::{ErrorKind, Result};
use crate::format::{self, Header, Layout};
use crate::hash::{ItemHash, ItemHasher};
use crate::sizing::{self, MAX_BITS};
use crate::standard::{BloomFilter, probe_position};
use crate::storage;

/// Counter width when the builder is not told otherwise.
const DEFAULT_COUNTER_BITS: u32 = 4;

/// A counting Bloom filter (Fan, Cao, Almeida and Broder 2000): [`BloomFilter`] with a small
/// counter in place of each bit, so that items can be removed as well as inserted.
///
/// Probe positions are exactly [`BloomFilter`]'s: a counter is nonzero wherever the standard
/// filter with the same key, size and items has its bit set, so lookups answer the same, the
/// false-positive rate is the same, and [`to_bloom_filter`](Self::to_bloom_filter) gives that
/// filter. Sizing is the standard one ([`optimal_bits`](crate::optimal_bits) counters,
/// [`optimal_hashes`](crate::optimal_hashes)); memory is the counter width times the standard
/// filter's: 4 bits per counter by default, or 8 with
/// [`counter_bits`](Builder::counter_bits). The counters together may take at most
/// [`MAX_BITS`](crate::MAX_BITS) bits.
///
/// Inserts are multiset inserts: an item inserted twice takes two removals to go.
///
/// # Remove only what you inserted
///
/// Removing an item that is certainly absent (one of its counters is zero) is detected: nothing
/// changes and [`remove`](Self::remove) returns `false`. But an item that was never inserted
/// and is a false positive cannot be told from a present one; removing it decrements counters
/// that other items need and can turn them into false negatives, the one error a Bloom filter
/// otherwise never makes.
///
/// # Why 4 bits are enough
///
/// With the optimal hash count a filter at capacity has received `k n / m = ln 2` increments per
/// counter, so a counter's value is close to Poisson with mean `ln 2` (Fan et al., "Summary
/// Cache"). A 4-bit counter saturates at 15. The chance that a given counter reaches that, and
/// beyond, at a load of `r` times the capacity (Poisson with mean `r ln 2`):
///
/// | load | mean count | P(counter ≥ 15) | P(counter ≥ 16) |
/// |---|---|---|---|
/// | capacity | 0.69 | 1.6e-15 | 7.1e-17 |
/// | 2x | 1.39 | 2.8e-11 | 2.4e-12 |
/// | 4x | 2.77 | 2.5e-7 | 4.3e-8 |
/// | 8x | 5.55 | 6.5e-4 | 2.2e-4 |
///
/// Fan et al. bound the last column by `(e ln 2 / 16)^16 = 1.37e-15` at capacity. A filter of
/// a billion counters at capacity thus expects 1.6e-6 saturated counters; at 8x overload, where
/// a filter sized for 1e-2 already answers "present" to 98% of absent items, 0.065% of its
/// counters saturate. The exception is an item inserted 15 times or more, which saturates its
/// own counters: for multisets with heavy repeats use 8-bit counters (255).
///
/// # Saturation
///
/// A counter that reaches its maximum (15, or 255) is sticky: never incremented or decremented
/// again. It may hold more increments than it can count, so decrementing it could reach zero
/// while an item still needs it; staying set forever instead, it can add false positives but
/// never a false negative. [`saturated_counters`](Self::saturated_counters) says how many there
/// are.
///
/// # Example
///
/// ```
/// use bloom::CountingBloomFilter;
///
/// let mut live = CountingBloomFilter::new(1_000, 0.01)?;
/// assert!(live.insert("session-1"));  // new
/// assert!(live.insert("session-2"));
/// assert!(live.remove("session-1"));  // was there: its counters go down
/// assert!(!live.contains("session-1")); // almost surely
/// assert!(live.contains("session-2")); // never a false negative
/// assert!(!live.remove("session-3")); // certainly absent: nothing changes
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(PartialEq, Eq)]
pub struct CountingBloomFilter {
    /// Counters packed little-endian, `64 / width` per word.
    words: Vec<u64>,
    /// Number of counters `m`.
    bits: u64,
    hashes: u32,
    /// log2 of the counter width: 2 or 3.
    width_log: u32,
    /// The saturated counter value, `2^width - 1`.
    max: u64,
    hasher: ItemHasher,
    /// Inserts less successful removals, capped at `total`.
    items: u64,
    /// The statistics below are kept up to date on every change so that they cost nothing to
    /// read, and recomputed from the counters on decode.
    nonzero: u64,
    saturated: u64,
    /// Sum of all counters: at most 255 * 2^40, so it never overflows, and it bounds `items`.
    total: u64,
}

impl CountingBloomFilter {
    /// A filter sized for `expected_items` at `false_positive_rate`, with 4-bit counters and a
    /// random key.
    ///
    /// Counters and hashes follow [`optimal_bits`](crate::optimal_bits) and
    /// [`optimal_hashes`](crate::optimal_hashes), as for [`BloomFilter::new`].
    ///
    /// # Errors
    ///
    /// A rate outside (0, 1) or NaN, zero items, or counters taking more than
    /// [`MAX_BITS`](crate::MAX_BITS) bits.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::new(1_000, 0.01)?;
    /// assert_eq!((filter.bits(), filter.hashes()), (9_586, 7));
    /// assert!(bloom::CountingBloomFilter::new(0, 0.01).is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(expected_items: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(expected_items, false_positive_rate).build()
    }

    /// A filter of exactly `bits` counters and `hashes` probes per item, with 4-bit counters and
    /// a random key.
    ///
    /// # Errors
    ///
    /// Zero counters or hashes, more than [`MAX_HASHES`](crate::MAX_HASHES) hashes, or counters
    /// taking more than [`MAX_BITS`](crate::MAX_BITS) bits.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::with_bits(1 << 16, 5)?;
    /// assert_eq!((filter.bits(), filter.hashes()), (1 << 16, 5));
    /// assert_eq!(filter.memory_bytes(), (1 << 16) / 2); // 4 bits per counter
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn with_bits(bits: u64, hashes: u32) -> Result<Self> {
        Self::builder_with_bits(bits, hashes).build()
    }

    /// A builder sized for `expected_items` at `false_positive_rate`, to set a key or the
    /// counter width.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::builder(1_000, 0.01)
    ///     .key([5; 16])
    ///     .counter_bits(8)
    ///     .build()?;
    /// assert_eq!((filter.key(), filter.counter_bits()), ([5; 16], 8));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder(expected_items: usize, false_positive_rate: f64) -> Builder<Self> {
        Builder::for_rate(expected_items, false_positive_rate)
    }

    /// A builder for exactly `bits` counters and `hashes` probes per item.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::builder_with_bits(4096, 3)
    ///     .key([5; 16])
    ///     .build()?;
    /// assert_eq!(filter.bits(), 4096);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder_with_bits(bits: u64, hashes: u32) -> Builder<Self> {
        Builder::for_bits(bits, hashes)
    }

    fn from_parts(bits: u64, hashes: u32, width: u32, hasher: ItemHasher) -> Result<Self> {
        // At most 2^40 counters of 8 bits: no overflow.
        let storage_bits = bits * u64::from(width);
        if storage_bits > MAX_BITS {
            return Err(ErrorKind::TooLarge {
                bits: storage_bits as f64,
            }
            .into());
        }
        let words = storage::zeroed(
            storage::units(storage_bits.div_ceil(64), storage_bits)?,
            0u64,
        )?;
        Ok(CountingBloomFilter {
            words,
            bits,
            hashes,
            width_log: width.trailing_zeros(),
            max: (1 << width) - 1,
            hasher,
            items: 0,
            nonzero: 0,
            saturated: 0,
            total: 0,
        })
    }

    /// The word and shift of the counter that double-hashing value `g` probes.
    #[inline(always)]
    fn slot(&self, g: u64) -> (usize, u32) {
        let bit = probe_position(g, self.bits) << self.width_log;
        ((bit / 64) as usize, (bit % 64) as u32)
    }

    #[inline(always)]
    fn counter(&self, (word, shift): (usize, u32)) -> u64 {
        (self.words[word] >> shift) & self.max
    }

    /// Hashes an item with this filter's key, for the `_hash` methods.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("item");
    /// filter.insert_hash(h);
    /// assert!(filter.contains_hash(h));
    /// assert!(filter.remove_hash(h));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
        self.hasher.hash(item.as_ref())
    }

    /// Adds one occurrence of an item; returns `true` if it was not present before (one of its
    /// counters was zero).
    ///
    /// Every counter of the item that is not saturated goes up by one, whether or not the item
    /// was present: inserting twice needs removing twice.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert("a"));
    /// assert!(!filter.insert("a"));
    /// assert_eq!(filter.items(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert(&mut self, item: impl AsRef<[u8]>) -> bool {
        let h = self.hash(item);
        self.insert_hash(h)
    }

    /// Whether the item may be present: `false` is certain (for items only ever removed after
    /// being inserted), `true` is wrong at the filter's false-positive rate.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// assert!(filter.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// Removes one occurrence of an item inserted before; returns `false`, changing nothing,
    /// if the item is certainly absent.
    ///
    /// Otherwise every counter of the item that is not saturated goes down by one and the
    /// result is `true`. Only remove items you inserted: removing a false positive corrupts
    /// the counters of other items and can make them false negatives (see the
    /// [type docs](Self#remove-only-what-you-inserted)).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.insert("a");
    /// assert!(filter.remove("a"));
    /// assert!(filter.contains("a")); // inserted twice, removed once
    /// assert!(filter.remove("a"));
    /// assert!(!filter.contains("a"));
    /// assert!(!filter.remove("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn remove(&mut self, item: impl AsRef<[u8]>) -> bool {
        let h = self.hash(item);
        self.remove_hash(h)
    }

    /// [`insert`](Self::insert) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert_hash(&mut self, hash: ItemHash) -> bool {
        let mut g = hash.h1();
        let mut was_absent = false;
        let mut added = 0;
        for _ in 0..self.hashes {
            let (word, shift) = self.slot(g);
            let c = self.counter((word, shift));
            was_absent |= c == 0;
            if c < self.max {
                self.words[word] += 1 << shift;
                added += 1;
                self.nonzero += u64::from(c == 0);
                self.saturated += u64::from(c + 1 == self.max);
            }
            g = g.wrapping_add(hash.h2());
        }
        self.total += added;
        self.items = self.items.saturating_add(1).min(self.total);
        was_absent
    }

    /// [`contains`](Self::contains) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// assert!(!filter.contains_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        let mut g = hash.h1();
        for _ in 0..self.hashes {
            if self.counter(self.slot(g)) == 0 {
                return false;
            }
            g = g.wrapping_add(hash.h2());
        }
        true
    }

    /// [`remove`](Self::remove) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("a");
    /// filter.insert_hash(h);
    /// assert!(filter.remove_hash(h));
    /// assert!(!filter.contains_hash(h));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn remove_hash(&mut self, hash: ItemHash) -> bool {
        if !self.contains_hash(hash) {
            return false;
        }
        let mut g = hash.h1();
        let mut removed = 0;
        for _ in 0..self.hashes {
            let (word, shift) = self.slot(g);
            let c = self.counter((word, shift));
            // Zero is reachable here only when two probes of the item share a counter and a
            // wrong removal left it at 1: never borrow from the neighbouring counter.
            if c != 0 && c < self.max {
                self.words[word] -= 1 << shift;
                removed += 1;
                self.nonzero -= u64::from(c == 1);
            }
            g = g.wrapping_add(hash.h2());
        }
        self.total -= removed;
        self.items = self.items.saturating_sub(1).min(self.total);
        true
    }

    /// How many times the item may have been inserted, less its removals: the smallest of its
    /// counters.
    ///
    /// Never below the true count (for items only removed after being inserted) and usually
    /// equal to it; more when other items share all of its counters. A saturated counter reads
    /// as its maximum, 15 or 255, meaning "at least that".
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// for _ in 0..3 {
    ///     filter.insert("a");
    /// }
    /// assert_eq!(filter.count_estimate("a"), 3);
    /// assert_eq!(filter.count_estimate("b"), 0); // almost surely
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn count_estimate(&self, item: impl AsRef<[u8]>) -> u32 {
        let hash = self.hash(item);
        let mut g = hash.h1();
        let mut min = self.max;
        for _ in 0..self.hashes {
            min = min.min(self.counter(self.slot(g)));
            g = g.wrapping_add(hash.h2());
        }
        min as u32
    }

    /// Removes every item, keeping the size, counter width and key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.clear();
    /// assert!(!filter.contains("a"));
    /// assert_eq!((filter.items(), filter.nonzero_counters()), (0, 0));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn clear(&mut self) {
        self.words.fill(0);
        self.items = 0;
        self.nonzero = 0;
        self.saturated = 0;
        self.total = 0;
    }

    /// The number of counters `m` (the bits of the equivalent [`BloomFilter`]).
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::CountingBloomFilter::new(1_000, 0.01)?.bits(), 9_586);
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
    /// assert_eq!(bloom::CountingBloomFilter::new(1_000, 0.01)?.hashes(), 7);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn hashes(&self) -> u32 {
        self.hashes
    }

    /// Bits per counter: 4 or 8.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::CountingBloomFilter::new(1_000, 0.01)?.counter_bits(), 4);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn counter_bits(&self) -> u32 {
        1 << self.width_log
    }

    /// The SipHash key; with it, [`ItemHasher::with_key`] hashes exactly as this filter does.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::builder(10, 0.1).key([9; 16]).build()?;
    /// assert_eq!(filter.key(), [9; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.hasher.key()
    }

    /// The net number of items: inserts (every insert counts, new or not) less removals that
    /// returned `true`, capped at the sum of the counters.
    ///
    /// Every insert adds `k` to that sum until some counter saturates, and a removal takes at
    /// most `k`, so the cap binds only once [`saturated_counters`](Self::saturated_counters)
    /// is nonzero, when no count can be exact anyway. It lets decoding reject a forged count
    /// and keeps the count from overflowing.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.insert("a");
    /// filter.insert("b");
    /// filter.remove("a");
    /// assert_eq!(filter.items(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn items(&self) -> u64 {
        self.items
    }

    /// The number of nonzero counters: the set bits of the equivalent [`BloomFilter`].
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::with_bits(1 << 16, 4)?;
    /// filter.insert("a");
    /// assert!((1..=4).contains(&filter.nonzero_counters()));
    /// filter.remove("a");
    /// assert_eq!(filter.nonzero_counters(), 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn nonzero_counters(&self) -> u64 {
        self.nonzero
    }

    /// The number of counters stuck at their maximum (see the
    /// [type docs](Self#saturation)). Zero in practice unless the filter is far beyond its
    /// capacity or some item was inserted 15 times or more (255 with 8-bit counters).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::with_bits(1 << 10, 1)?;
    /// for _ in 0..20 {
    ///     filter.insert("a");
    /// }
    /// assert_eq!(filter.saturated_counters(), 1);
    /// assert_eq!(filter.count_estimate("a"), 15);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn saturated_counters(&self) -> u64 {
        self.saturated
    }

    /// The fraction of counters that are nonzero; about one half at capacity with the optimal
    /// hash count.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::CountingBloomFilter::new(10, 0.01)?.fill_ratio(), 0.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.nonzero as f64 / self.bits as f64
    }

    /// The number of distinct items present, estimated from the nonzero counters (Swamidass
    /// and Baldi): `-(m / k) ln(1 - X / m)`. Infinite once every counter is nonzero.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..6_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// for i in 0..1_000u32 {
    ///     filter.remove(i.to_le_bytes());
    /// }
    /// assert!((filter.estimated_items() - 5_000.0).abs() < 150.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        sizing::estimated_items(self.bits, self.hashes, self.nonzero)
    }

    /// The false-positive rate now, from the fill: `(X / m)^k`.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(10_000, 0.01)?;
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

    /// The expected rate once `items` distinct items are present: the sizing formula
    /// [`false_positive_rate`](crate::false_positive_rate) for this filter's counters and
    /// hashes.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::new(1_000, 0.01)?;
    /// assert!(filter.false_positive_rate_at(1_000) <= 0.0101);
    /// assert!(filter.false_positive_rate_at(2_000) > 0.1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn false_positive_rate_at(&self, items: u64) -> f64 {
        sizing::false_positive_rate(self.bits, items, self.hashes)
    }

    /// Heap bytes held by the counters: the counter width times the standard filter's.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::builder_with_bits(1 << 20, 7)
    ///     .counter_bits(8)
    ///     .build()?;
    /// assert_eq!(filter.memory_bytes(), 1 << 20);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.words.len() * 8
    }

    /// The standard filter of the same key, size and hashes with a bit set wherever a counter
    /// is nonzero: it answers [`contains`](BloomFilter::contains) exactly as this filter does,
    /// in a quarter (or an eighth) of the memory, but can no longer remove. Its
    /// [`items`](BloomFilter::items) is this filter's, capped at its set bits.
    ///
    /// Goes through the serialized form, so it briefly needs the standard filter's memory
    /// twice; like `clone`, it aborts if memory runs out.
    ///
    /// # Example
    ///
    /// ```
    /// let mut counting = bloom::CountingBloomFilter::new(1_000, 0.01)?;
    /// counting.insert("a");
    /// counting.insert("b");
    /// counting.remove("b");
    /// let plain = counting.to_bloom_filter();
    /// assert!(plain.contains("a"));
    /// assert_eq!(plain.contains("b"), counting.contains("b"));
    /// assert_eq!(plain.set_bits(), counting.nonzero_counters());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn to_bloom_filter(&self) -> BloomFilter {
        let header = Header {
            layout: Layout::Standard,
            key: self.key(),
            bits: self.bits,
            hashes: self.hashes,
            blocks_per_key: 0,
            items: self.items.min(self.nonzero),
        };
        let mut bytes = Vec::with_capacity(format::encoded_len_of(&header));
        format::write(&mut bytes, &header, self.bit_words()).expect("writing to a Vec cannot fail");
        BloomFilter::from_bytes(&bytes).expect("a standard filter's own bytes decode")
    }

    /// The equivalent standard filter's bit array: 64 counters, in `width` words, per bit word.
    fn bit_words(&self) -> impl Iterator<Item = u64> + '_ {
        let width = 1usize << self.width_log;
        let per_word = 64 / width;
        (0..self.bits.div_ceil(64) as usize).map(move |j| {
            (0..width).fold(0u64, |bits, i| {
                let word = self.words.get(j * width + i).copied().unwrap_or(0);
                bits | nonzero_flags(word, self.width_log) << (i * per_word)
            })
        })
    }

    fn header(&self) -> Header {
        Header {
            layout: Layout::Counting,
            key: self.key(),
            bits: self.bits,
            hashes: self.hashes,
            // The format keeps the counter width in the blocks-per-item byte.
            blocks_per_key: self.counter_bits(),
            items: self.items,
        }
    }

    /// The serialized form: format version 1, layout 3 (see the crate docs).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// let copy = bloom::CountingBloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(format::encoded_len_of(&self.header()));
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
    /// let filter = bloom::CountingBloomFilter::new(100, 0.01)?;
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
    /// let bytes = bloom::CountingBloomFilter::new(100, 0.01)?.to_bytes();
    /// assert!(bloom::CountingBloomFilter::from_bytes(&bytes).is_ok());
    /// assert!(bloom::CountingBloomFilter::from_bytes(&bytes[..20]).is_err());
    /// assert!(bloom::BloomFilter::from_bytes(&bytes).is_err()); // another layout
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        let (header, words) = format::read_exact_slice(bytes, Layout::Counting, |[w]: [u64; 1]| w)?;
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
    /// let filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// let bytes = filter.to_bytes();
    /// let copy = bloom::CountingBloomFilter::read_from(&mut bytes.as_slice())?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(mut input: R) -> Result<Self> {
        let (header, words) = format::read(&mut input, Layout::Counting, |[w]: [u64; 1]| w)?;
        Self::from_decoded(header, words)
    }

    fn from_decoded(header: Header, words: Vec<u64>) -> Result<Self> {
        // The header decoder accepted only widths 4 and 8.
        let width_log = header.blocks_per_key.trailing_zeros();
        let tail_bits = (header.bits << width_log) % 64;
        if tail_bits != 0 && words.last().is_some_and(|&w| w >> tail_bits != 0) {
            return Err(ErrorKind::Corrupt("counter bits set beyond the filter's size").into());
        }
        let (mut nonzero, mut saturated, mut total) = (0, 0, 0);
        for &word in &words {
            let (n, s, t) = word_stats(word, width_log);
            nonzero += n;
            saturated += s;
            total += t;
        }
        // A valid filter never counts more items than the sum of its counters (see `items`).
        if header.items > total {
            return Err(ErrorKind::Corrupt("item count exceeds the sum of the counters").into());
        }
        Ok(CountingBloomFilter {
            words,
            bits: header.bits,
            hashes: header.hashes,
            width_log,
            max: (1 << header.blocks_per_key) - 1,
            hasher: ItemHasher::with_key(header.key),
            items: header.items,
            nonzero,
            saturated,
            total,
        })
    }
}

/// Lane masks with the lowest bit of each counter set, by `width_log`.
const LOW_BITS: [u64; 4] = [0, 0, 0x1111_1111_1111_1111, 0x0101_0101_0101_0101];

/// Per counter of a packed word, at its lowest bit: whether any of its bits is set (`fold` =
/// or) or all are (`fold` = and).
#[inline]
fn lanes(word: u64, width_log: u32, fold: fn(u64, u64) -> u64) -> u64 {
    let mut x = word;
    for step in 0..width_log {
        x = fold(x, x >> (1 << step));
    }
    x & LOW_BITS[width_log as usize]
}

/// Nonzero counters, saturated counters and the sum of the counters in one packed word,
/// without a loop over the counters: decoding a large filter visits every word.
fn word_stats(word: u64, width_log: u32) -> (u64, u64, u64) {
    let nonzero = lanes(word, width_log, |a, b| a | b).count_ones();
    let saturated = lanes(word, width_log, |a, b| a & b).count_ones();
    let sum = if width_log == 2 {
        // Nibble pairs into bytes (at most 30), then all bytes summed in the top one.
        let bytes = (word & 0x0f0f_0f0f_0f0f_0f0f) + ((word >> 4) & 0x0f0f_0f0f_0f0f_0f0f);
        bytes.wrapping_mul(0x0101_0101_0101_0101) >> 56
    } else {
        // Byte pairs into 16-bit lanes (at most 510), then summed in the top lane.
        let pairs = (word & 0x00ff_00ff_00ff_00ff) + ((word >> 8) & 0x00ff_00ff_00ff_00ff);
        pairs.wrapping_mul(0x0001_0001_0001_0001) >> 48
    };
    (u64::from(nonzero), u64::from(saturated), sum)
}

/// One bit per counter of a packed word, set where the counter is nonzero.
fn nonzero_flags(word: u64, width_log: u32) -> u64 {
    let flags = lanes(word, width_log, |a, b| a | b);
    let width: u32 = 1 << width_log;
    (0..64 / width).fold(0, |out, i| out | ((flags >> (i * width)) & 1) << i)
}

impl Builder<CountingBloomFilter> {
    /// Bits per counter: 4 (the default, saturating at 15) or 8 (255), for multisets whose
    /// items repeat 15 times or more. 8 bits double the memory.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::builder(1_000, 0.01).counter_bits(8).build()?;
    /// assert_eq!(filter.counter_bits(), 8);
    /// assert!(bloom::CountingBloomFilter::builder(1_000, 0.01).counter_bits(16).build().is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn counter_bits(self, bits: u32) -> Self {
        self.set_counter_bits(bits)
    }

    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// As [`CountingBloomFilter::new`] and [`CountingBloomFilter::with_bits`],
    /// [`ErrorKind::InvalidCounterBits`] or [`ErrorKind::OutOfMemory`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::CountingBloomFilter::builder(1_000, 0.01).build()?;
    /// assert_eq!(filter.hashes(), 7);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn build(self) -> Result<CountingBloomFilter> {
        let width = self.counter_bits_option().unwrap_or(DEFAULT_COUNTER_BITS);
        if !matches!(width, 4 | 8) {
            return Err(ErrorKind::InvalidCounterBits(width).into());
        }
        let (bits, hashes) = self.standard_size()?;
        CountingBloomFilter::from_parts(bits, hashes, width, self.hasher())
    }
}

impl Clone for CountingBloomFilter {
    /// A copy with its own counters, allocated like a new filter's.
    ///
    /// ```
    /// let mut a = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// let b = a.clone();
    /// a.insert("x");
    /// assert!(!b.contains("x"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn clone(&self) -> Self {
        CountingBloomFilter {
            words: storage::copy(&self.words),
            hasher: self.hasher.clone(),
            ..*self
        }
    }
}

impl fmt::Debug for CountingBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("CountingBloomFilter")
            .field("bits", &self.bits)
            .field("hashes", &self.hashes)
            .field("counter_bits", &self.counter_bits())
            .field("items", &self.items)
            .field("nonzero_counters", &self.nonzero)
            .field("saturated_counters", &self.saturated)
            .finish_non_exhaustive()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `P(X >= j)` for `X` Poisson with mean `lambda`, summed term by term from `j` up: the
    /// tail is far below one, so `1 - P(X < j)` would cancel to nothing.
    fn poisson_tail(lambda: f64, j: u32) -> f64 {
        let ln_fact: f64 = (2..=j).map(|i| f64::from(i).ln()).sum();
        let mut term = (-lambda + f64::from(j) * lambda.ln() - ln_fact).exp();
        let mut sum = 0.0;
        for i in j + 1..j + 400 {
            sum += term;
            term *= lambda / f64::from(i);
        }
        sum
    }

    /// The figures in the type docs' table and text.
    #[test]
    fn documented_saturation_probabilities() {
        let ln2 = std::f64::consts::LN_2;
        let documented = [
            (1.0, 1.6e-15, 7.1e-17),
            (2.0, 2.8e-11, 2.4e-12),
            (4.0, 2.5e-7, 4.3e-8),
            (8.0, 6.5e-4, 2.2e-4),
        ];
        let close = |got: f64, want: f64| (got / want - 1.0).abs() < 0.03;
        for (load, at_15, at_16) in documented {
            let lambda = load * ln2;
            let (p15, p16) = (poisson_tail(lambda, 15), poisson_tail(lambda, 16));
            assert!(close(p15, at_15), "load {load}: P(>=15) = {p15:e}");
            assert!(close(p16, at_16), "load {load}: P(>=16) = {p16:e}");
        }
        // Fan et al.'s bound (e ln 2 / 16)^16, which the exact tail respects.
        let fan = (std::f64::consts::E * ln2 / 16.0).powi(16);
        assert!(close(fan, 1.37e-15), "{fan:e}");
        assert!(poisson_tail(ln2, 16) < fan);
        // A billion counters at capacity; 8x overload at 1e-2 (k = 7).
        assert!(close(1e9 * poisson_tail(ln2, 15), 1.6e-6));
        assert!(close(100.0 * poisson_tail(8.0 * ln2, 15), 0.065));
        let overloaded = sizing::false_positive_rate(9_586, 8_000, 7);
        assert!((overloaded - 0.98).abs() < 0.005, "{overloaded}");
        // 8-bit counters: nothing measurable even at 8x.
        assert!(poisson_tail(8.0 * ln2, 255) < 1e-300);
    }

    /// The word-at-a-time statistics equal a plain loop over the counters.
    #[test]
    fn word_stats_match_a_loop() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for _ in 0..10_000 {
            x = x.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17) ^ 0xf0f0;
            for sample in [x, x & 0xf0f0_0f0f_ff00_00ff, u64::MAX, 0, x | 0xffff] {
                for width_log in [2, 3] {
                    let width = 1u32 << width_log;
                    let max = (1u64 << width) - 1;
                    let counters: Vec<u64> = (0..64 / width)
                        .map(|i| (sample >> (i * width)) & max)
                        .collect();
                    let expected = (
                        counters.iter().filter(|&&c| c != 0).count() as u64,
                        counters.iter().filter(|&&c| c == max).count() as u64,
                        counters.iter().sum::<u64>(),
                    );
                    assert_eq!(word_stats(sample, width_log), expected, "{sample:x}");
                    let flags = counters
                        .iter()
                        .enumerate()
                        .fold(0, |f, (i, &c)| f | u64::from(c != 0) << i);
                    assert_eq!(nonzero_flags(sample, width_log), flags, "{sample:x}");
                }
            }
        }
    }

    /// The tracked statistics equal a recount from the counters after any mix of operations,
    /// saturation included.
    #[test]
    fn tracked_statistics_match_a_recount() {
        for width in [4, 8] {
            let mut f = CountingBloomFilter::builder_with_bits(97, 3)
                .key([3; 16])
                .counter_bits(width)
                .build()
                .unwrap();
            for round in 0..600u32 {
                let item = (round % 37).to_le_bytes();
                if round % 5 == 4 {
                    f.remove(item);
                } else {
                    f.insert(item);
                }
                let recount = CountingBloomFilter::from_bytes(&f.to_bytes()).unwrap();
                assert_eq!(
                    (recount.nonzero, recount.saturated, recount.total),
                    (f.nonzero, f.saturated, f.total),
                    "width {width} round {round}"
                );
                assert!(f.items <= f.total);
            }
            assert!(width == 8 || f.saturated > 0);
        }
    }
}
