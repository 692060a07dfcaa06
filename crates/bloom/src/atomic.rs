//! The concurrent blocked filter with an exactly-once `insert`.

use std::fmt;
use std::io::{Read, Write};
use std::sync::PoisonError;
use std::sync::atomic::Ordering;

use crate::blocked::{Blocked, Probe, block_contains};
use crate::builder::Builder;
use crate::error::Result;
use crate::format::{self, Layout};
use crate::hash::{ItemHash, ItemHasher, hash_group};
use crate::storage::{self, AtomicBlock, BATCH, Block, prefetch};
use crate::sync::{Mutex, MutexGuard};
use crate::{BlockedBloomFilter, sizing};

/// Lock stripes: enough that threads inserting new items into different blocks rarely share
/// one.
#[cfg(not(loom))]
const STRIPES: usize = 256;
/// Few stripes under loom, whose cost grows with every tracked object.
#[cfg(loom)]
const STRIPES: usize = 4;

/// One lock stripe, guarding every block whose index is congruent to it modulo [`STRIPES`]; on
/// its own cache line so that stripes do not contend through false sharing.
#[derive(Debug, Default)]
#[repr(align(64))]
struct Stripe {
    counts: Mutex<Counts>,
}

/// Statistics of the inserts that locked this stripe first. Kept per stripe, under the lock
/// the insert already holds, instead of in shared counters every thread would write.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    items: u64,
    ones: u64,
}

/// A thread-safe cache-line blocked Bloom filter whose `insert` is exactly-once.
///
/// Same layout, sizing and serialized form as [`BlockedBloomFilter`], but every method takes
/// `&self`, so it can be shared across threads (in an `Arc`, or borrowed by scoped threads).
///
/// **Exactly-once insert.** When several threads insert the same new item at the same time,
/// exactly one of them gets `true` (none, if the item is already a false positive: then it
/// reads as present to everyone, as in any Bloom filter). With `k` probes spread over several words there is no
/// single atomic instruction that tests and sets them all, so filters built on per-word
/// `fetch_or` (Guava's, fastbloom's) can tell two racing threads that an item is new, and a
/// deduplicating caller then does the work twice. Here, an insert whose bits are all set
/// returns `false` without locking (the common case when most items are already known).
/// Otherwise it locks the stripes (256 in all) that guard its one or two blocks, checks again,
/// and sets the bits. Every writer of a block holds its stripe, so racing inserts of one item
/// are serialized and exactly one sees the bits unset; and under the lock plain stores replace
/// the atomic read-modify-writes a lock-free filter needs for each word. Lookups never lock.
///
/// # Example
///
/// ```
/// use bloom::AtomicBloomFilter;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// let seen = AtomicBloomFilter::new(10_000, 1e-6)?;
/// let winners = AtomicUsize::new(0);
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             if seen.insert("https://example.com/") {
///                 winners.fetch_add(1, Ordering::Relaxed);
///             }
///         });
///     }
/// });
/// assert_eq!(winners.into_inner(), 1);
/// # Ok::<(), bloom::Error>(())
/// ```
pub struct AtomicBloomFilter {
    blocks: Vec<AtomicBlock>,
    geometry: Blocked,
    hasher: ItemHasher,
    stripes: Box<[Stripe]>,
}

impl AtomicBloomFilter {
    /// A filter sized for `expected_items` at `false_positive_rate`, with a random key; the
    /// geometry is [`BlockedBloomFilter::new`]'s.
    ///
    /// # Errors
    ///
    /// A rate outside (0, 1) or NaN, zero items, or a size beyond [`MAX_BITS`](crate::MAX_BITS).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(1_000, 0.01)?;
    /// assert!(filter.insert("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(expected_items: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(expected_items, false_positive_rate).build()
    }

    /// A filter of `bits` (rounded up to whole blocks) and `hashes` probes per item in one
    /// block, with a random key.
    ///
    /// # Errors
    ///
    /// Zero bits or hashes, more than [`MAX_BITS`](crate::MAX_BITS) bits or
    /// [`MAX_HASHES`](crate::MAX_HASHES) hashes.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::with_bits(1 << 20, 8)?;
    /// assert_eq!(filter.bits(), 1 << 20);
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
    /// let filter = bloom::AtomicBloomFilter::builder(1_000, 1e-4).key([2; 16]).build()?;
    /// assert_eq!(filter.key(), [2; 16]);
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
    /// let filter = bloom::AtomicBloomFilter::builder_with_bits(4096, 8).blocks_per_key(2).build()?;
    /// assert_eq!(filter.blocks_per_key(), 2);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder_with_bits(bits: u64, hashes: u32) -> Builder<Self> {
        Builder::for_bits(bits, hashes)
    }

    fn from_parts(
        blocks: Vec<AtomicBlock>,
        geometry: Blocked,
        hasher: ItemHasher,
        counts: Counts,
    ) -> Self {
        let mut stripes: Box<[Stripe]> = std::iter::repeat_with(Stripe::default)
            .take(STRIPES)
            .collect();
        *stripes[0]
            .counts
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner) = counts;
        AtomicBloomFilter {
            blocks,
            geometry,
            hasher,
            stripes,
        }
    }

    /// Hashes an item with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("item");
    /// assert!(filter.insert_hash(h));
    /// assert!(filter.contains_hash(h));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
        self.hasher.hash(item.as_ref())
    }

    /// Adds an item; returns `true` if it was not present before. Exactly one of several
    /// threads inserting the same new item concurrently gets `true` (none if the item is
    /// already a false positive).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert(b"a"));
    /// assert!(!filter.insert(b"a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert(&self, item: impl AsRef<[u8]>) -> bool {
        self.insert_hash(self.hash(item))
    }

    /// Whether the item may be present. Never locks. An item whose `insert` has returned
    /// (in any thread that this one synchronized with) is always found.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
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
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn insert_hash(&self, hash: ItemHash) -> bool {
        if self.contains_hash(hash) {
            return false;
        }
        let probe = self.geometry.probe(hash);
        let (mut counts, _second) = self.lock_blocks(&probe);
        // Every writer of these blocks holds their stripes, so until they are released the
        // words cannot change, and the bits of any earlier insert of this item are visible:
        // at most one inserter gets past this check, and plain stores are enough below.
        let loaded = self.probe_blocks(&probe);
        if (0..probe.count).all(|j| block_contains(&loaded[j], &probe.masks[j])) {
            return false;
        }
        let mut newly_set = 0;
        let touched = probe.blocks.iter().zip(&probe.masks).zip(&loaded);
        for ((&index, masks), loaded) in touched.take(probe.count) {
            let block = &self.blocks[index].0;
            for ((word, &mask), &old) in block.iter().zip(masks).zip(loaded) {
                if mask & !old != 0 {
                    word.store(old | mask, Ordering::Relaxed);
                    newly_set += u64::from((mask & !old).count_ones());
                }
            }
        }
        counts.items += 1;
        counts.ones += newly_set;
        true
    }

    /// [`contains`](Self::contains) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// assert!(!filter.contains_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    #[inline]
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        self.geometry.contains(hash, |block, word| {
            self.blocks[block].0[word].load(Ordering::Relaxed)
        })
    }

    #[inline(always)]
    fn probe_blocks(&self, probe: &Probe) -> [[u64; 8]; 2] {
        let mut loaded = [[0; 8]; 2];
        for (slot, &index) in loaded.iter_mut().zip(&probe.blocks).take(probe.count) {
            *slot = self.blocks[index].load();
        }
        loaded
    }

    /// Locks the stripes of the item's blocks, in stripe order so that two inserters can never
    /// wait for each other. The first guard carries the statistics.
    fn lock_blocks(
        &self,
        probe: &Probe,
    ) -> (MutexGuard<'_, Counts>, Option<MutexGuard<'_, Counts>>) {
        let first = probe.blocks[0] % STRIPES;
        let second = (probe.count == 2).then(|| probe.blocks[1] % STRIPES);
        match second {
            Some(second) if second != first => {
                let (low, high) = (first.min(second), first.max(second));
                let low = self.lock_stripe(low);
                (low, Some(self.lock_stripe(high)))
            }
            _ => (self.lock_stripe(first), None),
        }
    }

    fn lock_stripe(&self, stripe: usize) -> MutexGuard<'_, Counts> {
        // Nothing panics while a stripe is held, and the counts stay valid if it ever did.
        self.stripes[stripe]
            .counts
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn prefetch_blocks(&self, hash: ItemHash) {
        prefetch(&self.blocks[self.geometry.first_block(hash)]);
        if self.geometry.blocks_per_key == 2 {
            prefetch(&self.blocks[self.geometry.second_block(hash)]);
        }
    }

    /// Inserts many items, writing into `inserted` whether each was new; `inserted` is cleared
    /// first. Hashes and prefetches a group before probing, like
    /// [`BlockedBloomFilter::insert_batch`]. Each insert is exactly-once as
    /// [`insert`](Self::insert).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// let mut inserted = Vec::new();
    /// filter.insert_batch(&["a", "b", "a"], &mut inserted);
    /// assert_eq!(inserted, [true, true, false]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert_batch<T: AsRef<[u8]>>(&self, items: &[T], inserted: &mut Vec<bool>) {
        inserted.clear();
        inserted.reserve(items.len());
        for group in items.chunks(BATCH) {
            let hashes = hash_group(&self.hasher, group);
            for &h in &hashes[..group.len()] {
                self.prefetch_blocks(h);
            }
            inserted.extend(hashes[..group.len()].iter().map(|&h| self.insert_hash(h)));
        }
    }

    /// Looks up many items, writing into `found` whether each may be present; `found` is
    /// cleared first.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
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

    /// Removes every item. Takes `&mut self` because clearing while other threads insert could
    /// not be made consistent.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.clear();
    /// assert!(!filter.contains("a"));
    /// assert_eq!(filter.items(), 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn clear(&mut self) {
        for block in &mut self.blocks {
            for word in &mut block.0 {
                // `store` rather than `get_mut`: loom's atomics have no `get_mut`.
                word.store(0, Ordering::Relaxed);
            }
        }
        for stripe in &mut self.stripes {
            *stripe
                .counts
                .get_mut()
                .unwrap_or_else(PoisonError::into_inner) = Counts::default();
        }
    }

    fn counts(&self) -> Counts {
        self.stripes.iter().fold(Counts::default(), |sum, stripe| {
            let c = *stripe.counts.lock().unwrap_or_else(PoisonError::into_inner);
            Counts {
                items: sum.items + c.items,
                ones: sum.ones + c.ones,
            }
        })
    }

    /// The number of bits `m`, a multiple of 512.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::AtomicBloomFilter::with_bits(512, 4)?.bits(), 512);
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
    /// assert_eq!(bloom::AtomicBloomFilter::with_bits(512, 4)?.hashes(), 4);
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
    /// assert_eq!(bloom::AtomicBloomFilter::new(1_000, 1e-6)?.blocks_per_key(), 2);
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
    /// let filter = bloom::AtomicBloomFilter::builder(10, 0.1).key([9; 16]).build()?;
    /// assert_eq!(filter.key(), [9; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.hasher.key()
    }

    /// The number of inserts that reported a new item. Sums 256 stripes: cheap, but not free.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// filter.insert("a");
    /// assert_eq!(filter.items(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn items(&self) -> u64 {
        self.counts().items
    }

    /// The number of bits set to one.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::with_bits(1 << 16, 4)?;
    /// filter.insert("a");
    /// assert!((1..=4).contains(&filter.set_bits()));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn set_bits(&self) -> u64 {
        self.counts().ones
    }

    /// The fraction of bits set.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::AtomicBloomFilter::new(10, 0.01)?.fill_ratio(), 0.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn fill_ratio(&self) -> f64 {
        self.set_bits() as f64 / self.bits() as f64
    }

    /// The number of distinct items inserted, estimated from the set bits.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(10_000, 0.01)?;
    /// for i in 0..5_000u32 {
    ///     filter.insert(i.to_le_bytes());
    /// }
    /// assert!((filter.estimated_items() - 5_000.0).abs() < 150.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_items(&self) -> f64 {
        sizing::estimated_items(self.bits(), self.hashes(), self.set_bits())
    }

    /// The false-positive rate now, from the block model at the estimated item count.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(10_000, 0.01)?;
    /// assert_eq!(filter.estimated_false_positive_rate(), 0.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_false_positive_rate(&self) -> f64 {
        self.geometry.estimated_rate(self.set_bits())
    }

    /// The expected rate once `items` distinct items are in, from the block model.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(1_000, 0.01)?;
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
    /// assert_eq!(bloom::AtomicBloomFilter::with_bits(1 << 20, 7)?.memory_bytes(), 1 << 17);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.blocks.len() * size_of::<AtomicBlock>()
    }

    /// The serialized form, identical to a [`BlockedBloomFilter`]'s with the same contents.
    ///
    /// A snapshot taken while other threads insert holds every insert that returned before it
    /// began, and some that ran during it; quiesce writers for an exact snapshot.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// let copy = bloom::BlockedBloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert!(copy.contains("a"));
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
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// let mut out = Vec::new();
    /// filter.write_to(&mut out)?;
    /// assert_eq!(out, filter.to_bytes());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        let header = self.geometry.header(self.key(), self.items());
        format::write(
            &mut out,
            &header,
            self.blocks.iter().flat_map(AtomicBlock::load),
        )
    }

    /// Decodes a filter from the bytes of [`to_bytes`](Self::to_bytes) or
    /// [`BlockedBloomFilter::to_bytes`].
    ///
    /// # Errors
    ///
    /// As [`BloomFilter::from_bytes`](crate::BloomFilter::from_bytes).
    ///
    /// # Example
    ///
    /// ```
    /// let mut blocked = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// blocked.insert("a");
    /// let atomic = bloom::AtomicBloomFilter::from_bytes(&blocked.to_bytes())?;
    /// assert!(atomic.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(BlockedBloomFilter::from_bytes(bytes)?.into())
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
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// let bytes = filter.to_bytes();
    /// let copy = bloom::AtomicBloomFilter::read_from(bytes.as_slice())?;
    /// assert_eq!(copy.bits(), filter.bits());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self> {
        Ok(BlockedBloomFilter::read_from(input)?.into())
    }
}

impl Clone for AtomicBloomFilter {
    /// A snapshot; as with [`to_bytes`](AtomicBloomFilter::to_bytes), inserts running
    /// meanwhile may or may not be in it.
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// filter.insert("a");
    /// let copy = filter.clone();
    /// filter.insert("b");
    /// assert!(copy.contains("a") && !copy.contains("b"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn clone(&self) -> Self {
        let counts = self.counts();
        let blocks = self
            .blocks
            .iter()
            .map(|b| AtomicBlock::from_words(b.load()))
            .collect();
        AtomicBloomFilter::from_parts(blocks, self.geometry, self.hasher.clone(), counts)
    }
}

impl From<BlockedBloomFilter> for AtomicBloomFilter {
    /// Shares a filled single-threaded filter across threads.
    ///
    /// ```
    /// let mut blocked = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// blocked.insert("a");
    /// let atomic = bloom::AtomicBloomFilter::from(blocked);
    /// assert!(!atomic.insert("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn from(filter: BlockedBloomFilter) -> Self {
        let (blocks, geometry, hasher, items, ones) = filter.into_parts();
        let blocks = blocks
            .into_iter()
            .map(|b| AtomicBlock::from_words(b.0))
            .collect();
        AtomicBloomFilter::from_parts(blocks, geometry, hasher, Counts { items, ones })
    }
}

impl From<AtomicBloomFilter> for BlockedBloomFilter {
    /// Takes back a shared filter once the threads are done with it.
    ///
    /// ```
    /// let atomic = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// atomic.insert("a");
    /// let blocked = bloom::BlockedBloomFilter::from(atomic);
    /// assert!(blocked.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn from(filter: AtomicBloomFilter) -> Self {
        let counts = filter.counts();
        let blocks = filter.blocks.iter().map(|b| Block(b.load())).collect();
        BlockedBloomFilter::from_parts(
            blocks,
            filter.geometry,
            filter.hasher,
            counts.items,
            counts.ones,
        )
    }
}

impl Builder<AtomicBloomFilter> {
    /// Puts each item's probes in `blocks` blocks (1 or 2) instead of choosing from the rate.
    /// Default: as [`BlockedBloomFilter`]'s builder.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::builder(1_000, 1e-6).blocks_per_key(1).build()?;
    /// assert_eq!(filter.blocks_per_key(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn blocks_per_key(self, blocks: u32) -> Self {
        self.set_blocks_per_key(blocks)
    }

    /// Builds the filter.
    ///
    /// # Errors
    ///
    /// As [`AtomicBloomFilter::new`], [`ErrorKind::InvalidBlocksPerKey`](crate::ErrorKind::InvalidBlocksPerKey)
    /// or [`ErrorKind::OutOfMemory`](crate::ErrorKind::OutOfMemory).
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicBloomFilter::builder(1_000, 0.01).build()?;
    /// assert!(filter.bits() >= 9_586);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn build(self) -> Result<AtomicBloomFilter> {
        let geometry = Blocked::new(self.blocked_size()?);
        let blocks = storage::zeroed_with(
            storage::units(geometry.blocks, geometry.bits())?,
            AtomicBlock::default,
        )?;
        Ok(AtomicBloomFilter::from_parts(
            blocks,
            geometry,
            self.hasher(),
            Counts::default(),
        ))
    }
}

impl fmt::Debug for AtomicBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicBloomFilter")
            .field("bits", &self.bits())
            .field("hashes", &self.geometry.hashes)
            .field("blocks_per_key", &self.geometry.blocks_per_key)
            .field("items", &self.items())
            .finish_non_exhaustive()
    }
}

/// Loom models that need the filter's internals: items chosen by where their probes land, so
/// the two-stripe path and opposite lock orders are certain to be explored.
/// Run: `RUSTFLAGS="--cfg loom" cargo test -p politecrawl-bloom --release --lib loom`.
#[cfg(all(test, loom))]
mod loom_tests {
    use super::*;
    use loom::sync::Arc;
    use loom::thread;

    const KEY: [u8; 16] = *b"bloom-loom-key!!";

    /// Two blocks, two probes in each: under loom the blocks map to two distinct stripes.
    fn filter() -> Arc<AtomicBloomFilter> {
        let filter = AtomicBloomFilter::builder_with_bits(1024, 4)
            .key(KEY)
            .blocks_per_key(2)
            .build()
            .unwrap();
        Arc::new(filter)
    }

    /// An item whose first block is `first` and second is the other one.
    fn item_with_first_block(first: usize) -> String {
        let geometry = Blocked {
            blocks: 2,
            hashes: 4,
            blocks_per_key: 2,
        };
        let hasher = ItemHasher::with_key(KEY);
        (0..)
            .map(|i| format!("item-{i}"))
            .find(|item| {
                let probe = geometry.probe(hasher.hash(item.as_bytes()));
                probe.count == 2 && probe.blocks[0] == first
            })
            .unwrap()
    }

    #[test]
    fn two_stripe_item_has_one_winner() {
        let item = item_with_first_block(0);
        loom::model(move || {
            let filter = filter();
            let other = {
                let (filter, item) = (filter.clone(), item.clone());
                thread::spawn(move || filter.insert(&item))
            };
            let here = filter.insert(&item);
            assert!(here ^ other.join().unwrap());
            assert_eq!(filter.items(), 1);
        });
    }

    /// Items whose blocks come in opposite orders lock the same two stripes; taking them in
    /// stripe order means neither waits for the other forever (loom reports deadlocks), and
    /// neither overwrites the other's bits.
    #[test]
    fn opposite_block_orders_neither_deadlock_nor_lose_bits() {
        let (a, b) = (item_with_first_block(0), item_with_first_block(1));
        loom::model(move || {
            let filter = filter();
            let other = {
                let (filter, a) = (filter.clone(), a.clone());
                thread::spawn(move || filter.insert(&a))
            };
            assert!(filter.insert(&b));
            assert!(other.join().unwrap());
            assert!(filter.contains(&a) && filter.contains(&b));
            assert_eq!(filter.items(), 2);
        });
    }
}
