//! Scalable Bloom filters (Almeida, Baquero, Preguiça and Hutchison 2007): a chain of blocked
//! filters that grows when the newest is full, holding a target rate however many items come.

use std::fmt;
use std::io::{Read, Write};
use std::marker::PhantomData;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock, PoisonError};

use crate::error::{ErrorKind, Result};
use crate::format::{self, ScalableHeader};
use crate::hash::{ItemHash, ItemHasher};
use crate::sizing::{MAX_BITS, MAX_HASHES};
use crate::{AtomicBloomFilter, BlockedBloomFilter};

/// The most sub-filters a scalable filter may grow to. With a growth factor of at least 2 the
/// last one would hold 2^63 times the first: [`MAX_BITS`](crate::MAX_BITS) stops growth long
/// before.
const MAX_FILTERS: usize = 64;

/// The parameters that fix every sub-filter: sub-filter `i` holds `initial * growth^i` items at
/// rate `rate * (1 - tightening) * tightening^i`.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Plan {
    initial: u64,
    rate: f64,
    growth: u32,
    tightening: f64,
}

impl Plan {
    fn validate(self) -> Result<Self> {
        if !(self.rate > 0.0 && self.rate < 1.0) {
            return Err(ErrorKind::InvalidFalsePositiveRate(self.rate).into());
        }
        if self.initial == 0 {
            return Err(ErrorKind::ZeroItems.into());
        }
        if !(2..=16).contains(&self.growth) {
            return Err(ErrorKind::InvalidGrowth(self.growth).into());
        }
        if !(self.tightening > 0.0 && self.tightening < 1.0) {
            return Err(ErrorKind::InvalidTightening(self.tightening).into());
        }
        // Every sub-filter the chain can grow to before MAX_BITS stops it must be buildable:
        // a ratio so small that a later rate needs more than MAX_HASHES hashes (or underflows
        // to zero) would make growth fail part-way instead of at the documented size limit.
        for i in 0..MAX_FILTERS {
            let rate = self.rate(i);
            if rate <= 0.0 {
                return Err(ErrorKind::InvalidTightening(self.tightening).into());
            }
            // Standard-layout figures: blocked sub-filters need a few bits more but fewer
            // hashes, so this errs on the side of refusing.
            let hashes = -rate.log2();
            let bits = self.capacity(i) as f64 * hashes / std::f64::consts::LN_2;
            if bits > MAX_BITS as f64 {
                break;
            }
            if hashes > f64::from(MAX_HASHES) {
                // The rate (for the first sub-filter), or the rate as tightened for a later
                // one: either way, more hashes than a filter has.
                return Err(ErrorKind::TooManyHashes(hashes.ceil() as u64).into());
            }
        }
        Ok(self)
    }

    /// Items sub-filter `i` is sized for, saturating: growth that far fails on size anyway.
    fn capacity(&self, i: usize) -> u64 {
        (0..i).fold(self.initial, |c, _| {
            c.saturating_mul(u64::from(self.growth))
        })
    }

    /// Target rate of sub-filter `i`. The rates form a geometric series whose sum is `rate`.
    fn rate(&self, i: usize) -> f64 {
        self.rate * (1.0 - self.tightening) * self.tightening.powi(i as i32)
    }

    fn blocked(&self, i: usize, key: [u8; 16]) -> Result<BlockedBloomFilter> {
        let items = usize::try_from(self.capacity(i)).unwrap_or(usize::MAX);
        BlockedBloomFilter::builder(items, self.rate(i))
            .key(key)
            .build()
    }

    fn header(&self, key: [u8; 16], filters: usize) -> ScalableHeader {
        ScalableHeader {
            key,
            initial: self.initial,
            rate: self.rate,
            growth: self.growth,
            tightening: self.tightening,
            filters: filters as u32,
        }
    }

    fn from_header(header: &ScalableHeader) -> Result<Self> {
        Plan {
            initial: header.initial,
            rate: header.rate,
            growth: header.growth,
            tightening: header.tightening,
        }
        .validate()
    }

    /// Checks that a decoded sub-filter is exactly the one this plan builds at `index`.
    fn check_decoded(
        &self,
        index: usize,
        filter: &BlockedBloomFilter,
        key: [u8; 16],
    ) -> Result<()> {
        let expected = crate::blocked_params(self.capacity(index), self.rate(index))?;
        if filter.key() != key
            || filter.bits() != expected.bits
            || filter.hashes() != expected.hashes
            || filter.blocks_per_key() != expected.blocks_per_key
        {
            return Err(
                ErrorKind::Corrupt("sub-filter does not match the scalable parameters").into(),
            );
        }
        // No check of the item count against the capacity: the atomic variant may overfill a
        // sub-filter by the inserts in flight when it filled up.
        Ok(())
    }
}

/// Configures a [`ScalableBloomFilter`] or [`AtomicScalableBloomFilter`]; from their `builder`.
///
/// # Example
///
/// ```
/// let filter = bloom::ScalableBloomFilter::builder(1_000, 1e-6)
///     .growth_factor(4)
///     .tightening_ratio(0.5)
///     .key([3; 16])
///     .build()?;
/// assert_eq!(filter.filters(), 1);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ScalableBuilder<F> {
    plan: Plan,
    /// The SipHash key of every sub-filter. Default: random.
    key: Option<[u8; 16]>,
    filter: PhantomData<fn() -> F>,
}

impl<F> ScalableBuilder<F> {
    fn new(initial_capacity: usize, false_positive_rate: f64) -> Self {
        ScalableBuilder {
            plan: Plan {
                initial: initial_capacity as u64,
                rate: false_positive_rate,
                growth: DEFAULT_GROWTH,
                tightening: DEFAULT_TIGHTENING,
            },
            key: None,
            filter: PhantomData,
        }
    }

    /// How many times larger each new sub-filter is than the previous one, 2 to 16.
    /// Default: 2. Larger factors mean fewer sub-filters to probe but coarser memory steps.
    ///
    /// # Example
    ///
    /// ```
    /// let mut f = bloom::ScalableBloomFilter::builder(10, 0.01).growth_factor(4).build()?;
    /// for i in 0..11u32 {
    ///     f.insert(i.to_le_bytes())?;
    /// }
    /// assert_eq!(f.capacity(), 10 + 40);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn growth_factor(mut self, growth: u32) -> Self {
        self.plan.growth = growth;
        self
    }

    /// The ratio `r` between the rates of successive sub-filters, in (0, 1). Default: 0.85.
    /// Ratios so small that a sub-filter the chain could still grow to would need more than
    /// [`MAX_HASHES`](crate::MAX_HASHES) hashes are refused when the filter is built.
    ///
    /// The first sub-filter gets `p (1 - r)` and each next one `r` times its predecessor's, so
    /// the rates sum to `p`. A small `r` makes the first filter cheap but later ones costly
    /// (1.44 log2(1/r) more bits per item at each step); 0.85 costs 3.9 bits per item up front
    /// and 0.34 per step, and suits chains that grow a hundredfold or more.
    ///
    /// # Example
    ///
    /// ```
    /// let f = bloom::ScalableBloomFilter::builder(1_000, 0.01).tightening_ratio(0.5).build()?;
    /// assert!(f.memory_bytes() > 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn tightening_ratio(mut self, ratio: f64) -> Self {
        self.plan.tightening = ratio;
        self
    }

    /// Uses a fixed SipHash key for every sub-filter. Default: random.
    ///
    /// # Example
    ///
    /// ```
    /// let f = bloom::ScalableBloomFilter::builder(10, 0.01).key([1; 16]).build()?;
    /// assert_eq!(f.key(), [1; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(mut self, key: [u8; 16]) -> Self {
        self.key = Some(key);
        self
    }

    fn resolve(&self) -> Result<(Plan, ItemHasher)> {
        let plan = self.plan.validate()?;
        let hasher = self
            .key
            .map_or_else(ItemHasher::random, ItemHasher::with_key);
        Ok((plan, hasher))
    }
}

const DEFAULT_GROWTH: u32 = 2;
const DEFAULT_TIGHTENING: f64 = 0.85;

/// A Bloom filter that grows: when its newest sub-filter is full it adds one `growth` times
/// larger with a `tightening` times lower rate, so the compound rate stays at or below the
/// target however many items arrive.
///
/// Use it when the item count is not known in advance. The price is memory (about 4 bits per
/// item more than a filter sized right from the start, with the defaults, plus 0.34 bits per
/// doubling) and probes: a lookup checks every sub-filter (a handful, newest and largest
/// first). Sub-filters are [`BlockedBloomFilter`]s sharing one key, so an item is hashed once.
///
/// `insert` returns a `Result` because it may allocate the next sub-filter, which fails when
/// it would exceed [`MAX_BITS`](crate::MAX_BITS) or memory runs out.
///
/// # Example
///
/// ```
/// use bloom::ScalableBloomFilter;
///
/// let mut seen = ScalableBloomFilter::new(1_000, 1e-4)?;
/// for i in 0..100_000u32 {
///     seen.insert(i.to_le_bytes())?;
/// }
/// assert!(seen.filters() > 1);
/// assert!(seen.contains(42u32.to_le_bytes()));
/// assert!(seen.estimated_false_positive_rate() <= 1e-4);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, PartialEq)]
pub struct ScalableBloomFilter {
    plan: Plan,
    hasher: ItemHasher,
    /// Oldest first; never empty.
    filters: Vec<BlockedBloomFilter>,
}

impl ScalableBloomFilter {
    /// A filter that starts with room for `initial_capacity` items and keeps the compound
    /// rate at or below `false_positive_rate`, with a random key.
    ///
    /// # Errors
    ///
    /// A rate outside (0, 1) or NaN, zero capacity, or a first sub-filter beyond
    /// [`MAX_BITS`](crate::MAX_BITS); [`ErrorKind::TooManyHashes`] when a sub-filter the
    /// filter may grow to would need more than [`MAX_HASHES`](crate::MAX_HASHES) hashes: its
    /// rate tightens with each one, so rates below about 1e-16 are refused.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::ErrorKind;
    ///
    /// let err = bloom::ScalableBloomFilter::new(1000, 1e-17).unwrap_err();
    /// assert!(matches!(err.kind(), ErrorKind::TooManyHashes(_)));
    /// let filter = bloom::ScalableBloomFilter::new(10_000, 1e-6)?;
    /// assert_eq!(filter.capacity(), 10_000);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(initial_capacity: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(initial_capacity, false_positive_rate).build()
    }

    /// A builder, to set the growth factor, tightening ratio or key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::builder(100, 0.01).growth_factor(2).build()?;
    /// assert_eq!(filter.filters(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder(initial_capacity: usize, false_positive_rate: f64) -> ScalableBuilder<Self> {
        ScalableBuilder::new(initial_capacity, false_positive_rate)
    }

    /// Hashes an item with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("a");
    /// filter.insert_hash(h)?;
    /// assert!(filter.contains_hash(h));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
        self.hasher.hash(item.as_ref())
    }

    /// Adds an item; `Ok(true)` if it was not present before.
    ///
    /// # Errors
    ///
    /// When the newest sub-filter is full and the next one cannot be built: it would exceed
    /// [`MAX_BITS`](crate::MAX_BITS) or the limit of 64 sub-filters ([`ErrorKind::TooLarge`]),
    /// or memory ran out ([`ErrorKind::OutOfMemory`]). The item is then not inserted.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert("a")?);
    /// assert!(!filter.insert("a")?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert(&mut self, item: impl AsRef<[u8]>) -> Result<bool> {
        let h = self.hash(item);
        self.insert_hash(h)
    }

    /// [`insert`](Self::insert) for an item already hashed with this filter's key.
    ///
    /// # Errors
    ///
    /// As [`insert`](Self::insert).
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert_hash(filter.hash("a"))?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert_hash(&mut self, hash: ItemHash) -> Result<bool> {
        if self.contains_hash(hash) {
            return Ok(false);
        }
        let newest = self.filters.len() - 1;
        if self.filters[newest].items() >= self.plan.capacity(newest) {
            if self.filters.len() == MAX_FILTERS {
                return Err(ErrorKind::TooLarge {
                    bits: f64::INFINITY,
                }
                .into());
            }
            let next = self.plan.blocked(self.filters.len(), self.hasher.key())?;
            self.filters.push(next);
        }
        let newest = self.filters.len() - 1;
        Ok(self.filters[newest].insert_hash(hash))
    }

    /// Whether the item may be present. Checks the newest (largest) sub-filter first.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// filter.insert("a")?;
    /// assert!(filter.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// [`contains`](Self::contains) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// assert!(!filter.contains_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        self.filters.iter().rev().any(|f| f.contains_hash(hash))
    }

    /// The number of sub-filters.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::ScalableBloomFilter::new(100, 0.01)?.filters(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn filters(&self) -> usize {
        self.filters.len()
    }

    /// The sub-filters, oldest first: to inspect them or read their statistics.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// assert_eq!(filter.sub_filters()[0].items(), 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn sub_filters(&self) -> &[BlockedBloomFilter] {
        &self.filters
    }

    /// Items the current sub-filters are sized for, in all: the next insert beyond it adds a
    /// sub-filter.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::ScalableBloomFilter::new(100, 0.01)?.capacity(), 100);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        (0..self.filters.len()).map(|i| self.plan.capacity(i)).sum()
    }

    /// Inserts that reported a new item, over all sub-filters.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// filter.insert("a")?;
    /// filter.insert("a")?;
    /// assert_eq!(filter.items(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn items(&self) -> u64 {
        self.filters.iter().map(BlockedBloomFilter::items).sum()
    }

    /// The SipHash key shared by every sub-filter.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::builder(10, 0.1).key([4; 16]).build()?;
    /// assert_eq!(filter.key(), [4; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.hasher.key()
    }

    /// The compound target rate.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::ScalableBloomFilter::new(10, 1e-3)?.target_false_positive_rate(), 1e-3);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn target_false_positive_rate(&self) -> f64 {
        self.plan.rate
    }

    /// The compound false-positive rate now: `1 - Π (1 - f_i)` over the sub-filters' estimated
    /// rates. At or below the target while every sub-filter is within its capacity.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(1_000, 1e-3)?;
    /// for i in 0..50_000u32 {
    ///     filter.insert(i.to_le_bytes())?;
    /// }
    /// assert!(filter.estimated_false_positive_rate() < 1e-3);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_false_positive_rate(&self) -> f64 {
        compound(
            self.filters
                .iter()
                .map(BlockedBloomFilter::estimated_false_positive_rate),
        )
    }

    /// Heap bytes held by all sub-filters.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::new(1_000, 0.01)?;
    /// assert!(filter.memory_bytes() >= 1_000);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.filters
            .iter()
            .map(BlockedBloomFilter::memory_bytes)
            .sum()
    }

    /// The serialized form: a scalable header (see the format docs) followed by every
    /// sub-filter in the blocked layout.
    ///
    /// # Example
    ///
    /// ```
    /// let mut filter = bloom::ScalableBloomFilter::new(10, 0.01)?;
    /// for i in 0..100u32 {
    ///     filter.insert(i.to_le_bytes())?;
    /// }
    /// let copy = bloom::ScalableBloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Writes the serialized form to `out`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the writer fails.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::new(10, 0.01)?;
    /// let mut out = Vec::new();
    /// filter.write_to(&mut out)?;
    /// assert_eq!(out, filter.to_bytes());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        format::write_scalable_header(&mut out, &self.plan.header(self.key(), self.filters.len()))?;
        self.filters.iter().try_for_each(|f| f.write_to(&mut out))
    }

    /// Decodes a filter from exactly the bytes [`to_bytes`](Self::to_bytes) produced.
    ///
    /// # Errors
    ///
    /// As [`BlockedBloomFilter::from_bytes`], plus [`ErrorKind::Corrupt`] when a sub-filter
    /// does not match the scalable parameters.
    ///
    /// # Example
    ///
    /// ```
    /// let bytes = bloom::ScalableBloomFilter::new(10, 0.01)?.to_bytes();
    /// assert!(bloom::ScalableBloomFilter::from_bytes(&bytes).is_ok());
    /// assert!(bloom::ScalableBloomFilter::from_bytes(&bytes[1..]).is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        <Self as crate::Filter>::from_bytes(bytes)
    }

    /// Reads one serialized filter from `input`, leaving the reader just after it.
    ///
    /// Decoding takes memory in proportion to the input, but the parameters it restores decide
    /// what the filter allocates as it grows (each sub-filter `growth` times the last, at a
    /// tighter rate): decode untrusted filters only where that growth is acceptable.
    ///
    /// # Errors
    ///
    /// As [`from_bytes`](Self::from_bytes), less `TrailingBytes`, plus [`ErrorKind::Io`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::ScalableBloomFilter::new(10, 0.01)?;
    /// let bytes = filter.to_bytes();
    /// assert_eq!(bloom::ScalableBloomFilter::read_from(bytes.as_slice())?, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(mut input: R) -> Result<Self> {
        let header = format::read_scalable_header(&mut input)?;
        let plan = Plan::from_header(&header)?;
        let count = header.filters as usize;
        if count == 0 || count > MAX_FILTERS {
            return Err(
                ErrorKind::Corrupt("scalable filter with no or too many sub-filters").into(),
            );
        }
        let mut filters = Vec::new();
        for index in 0..count {
            let filter = BlockedBloomFilter::read_from(&mut input)?;
            plan.check_decoded(index, &filter, header.key)?;
            filters.push(filter);
        }
        Ok(ScalableBloomFilter {
            plan,
            hasher: ItemHasher::with_key(header.key),
            filters,
        })
    }
}

impl ScalableBuilder<ScalableBloomFilter> {
    /// Builds the filter with its first sub-filter.
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::new`], [`ErrorKind::InvalidGrowth`] or
    /// [`ErrorKind::InvalidTightening`].
    ///
    /// # Example
    ///
    /// ```
    /// assert!(bloom::ScalableBloomFilter::builder(10, 0.01).tightening_ratio(1.0).build().is_err());
    /// ```
    pub fn build(self) -> Result<ScalableBloomFilter> {
        let (plan, hasher) = self.resolve()?;
        let first = plan.blocked(0, hasher.key())?;
        Ok(ScalableBloomFilter {
            plan,
            hasher,
            filters: vec![first],
        })
    }
}

impl fmt::Debug for ScalableBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ScalableBloomFilter")
            .field("filters", &self.filters.len())
            .field("items", &self.items())
            .field("capacity", &self.capacity())
            .field("target_rate", &self.plan.rate)
            .finish_non_exhaustive()
    }
}

/// `1 - Π (1 - f_i)`: the chance that at least one sub-filter answers "present" for an absent
/// item.
fn compound(rates: impl Iterator<Item = f64>) -> f64 {
    1.0 - rates.map(|f| 1.0 - f).product::<f64>()
}

/// Lock stripes for the scalable atomic insert, keyed by the item's hash.
const ITEM_STRIPES: usize = 64;

/// One item-lock stripe on its own cache line.
#[derive(Debug, Default)]
#[repr(align(64))]
struct ItemStripe(Mutex<()>);

/// The thread-safe [`ScalableBloomFilter`]: `Sync`, `&self` methods, and an exactly-once
/// `insert` across growth.
///
/// Sub-filters are [`AtomicBloomFilter`]s. Exactly-once within one sub-filter is not enough
/// here: two threads inserting the same item could check the sub-filters, then land in
/// different ones if a new sub-filter appears between them. So an insert that does not find
/// the item takes a lock chosen by the item's hash (64 stripes) around "check every sub-filter,
/// then insert into the newest"; racing inserts of one item meet at that lock, and exactly one
/// reports `true` (none, if the item is already a false positive). Lookups, and inserts of
/// items already present, never lock.
///
/// Each insert reserves room in the newest sub-filter before inserting, so no sub-filter ever
/// holds more than its capacity; growth takes a separate lock, and inserters that find the
/// newest sub-filter full wait for its successor.
///
/// # Example
///
/// ```
/// use bloom::AtomicScalableBloomFilter;
/// use std::sync::atomic::{AtomicUsize, Ordering};
///
/// // A fixed key: with a random one, an item could (very rarely) already be a false
/// // positive when inserted, and then nobody is told it is new.
/// let seen = AtomicScalableBloomFilter::builder(100, 1e-6).key([5; 16]).build()?;
/// let new = AtomicUsize::new(0);
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| {
///             for i in 0..1_000u32 {
///                 if seen.insert(i.to_le_bytes()).unwrap() {
///                     new.fetch_add(1, Ordering::Relaxed);
///                 }
///             }
///         });
///     }
/// });
/// assert_eq!(new.into_inner(), 1_000);
/// assert!(seen.filters() > 1);
/// # Ok::<(), bloom::Error>(())
/// ```
pub struct AtomicScalableBloomFilter {
    plan: Plan,
    hasher: ItemHasher,
    /// Sub-filters, oldest first; slots `0..=newest` are set, and a set slot never changes.
    slots: Box<[OnceLock<AtomicBloomFilter>]>,
    /// Inserts that reported new, per sub-filter: cheaper to read on every insert than the
    /// sub-filter's own striped counts.
    counts: Box<[AtomicU64]>,
    /// Index of the newest sub-filter; published after its slot is set.
    newest: AtomicUsize,
    item_stripes: Box<[ItemStripe]>,
    /// Held while a sub-filter is added.
    growth: Mutex<()>,
}

impl AtomicScalableBloomFilter {
    /// A filter that starts with room for `initial_capacity` items and keeps the compound rate
    /// at or below `false_positive_rate`, with a random key.
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::new`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(10_000, 1e-6)?;
    /// assert_eq!(filter.capacity(), 10_000);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn new(initial_capacity: usize, false_positive_rate: f64) -> Result<Self> {
        Self::builder(initial_capacity, false_positive_rate).build()
    }

    /// A builder, to set the growth factor, tightening ratio or key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// assert_eq!(filter.key(), [1; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder(initial_capacity: usize, false_positive_rate: f64) -> ScalableBuilder<Self> {
        ScalableBuilder::new(initial_capacity, false_positive_rate)
    }

    fn with_filters(
        plan: Plan,
        hasher: ItemHasher,
        filters: Vec<(AtomicBloomFilter, u64)>,
    ) -> Self {
        let slots: Box<[OnceLock<AtomicBloomFilter>]> = std::iter::repeat_with(OnceLock::new)
            .take(MAX_FILTERS)
            .collect();
        let counts: Box<[AtomicU64]> = std::iter::repeat_with(AtomicU64::default)
            .take(MAX_FILTERS)
            .collect();
        let newest = filters.len() - 1;
        for (i, (filter, items)) in filters.into_iter().enumerate() {
            counts[i].store(items, Ordering::Relaxed);
            // Fresh slots: setting cannot fail.
            let _ = slots[i].set(filter);
        }
        AtomicScalableBloomFilter {
            plan,
            hasher,
            slots,
            counts,
            newest: AtomicUsize::new(newest),
            item_stripes: std::iter::repeat_with(ItemStripe::default)
                .take(ITEM_STRIPES)
                .collect(),
            growth: Mutex::new(()),
        }
    }

    /// The sub-filters present now, oldest first.
    fn current(&self) -> impl DoubleEndedIterator<Item = &AtomicBloomFilter> {
        let newest = self.newest.load(Ordering::Acquire);
        self.slots[..=newest].iter().filter_map(OnceLock::get)
    }

    /// Hashes an item with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert_hash(filter.hash("a"))?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
        self.hasher.hash(item.as_ref())
    }

    /// Adds an item; `Ok(true)` if it was not present before. Exactly one of several threads
    /// inserting the same new item concurrently gets `Ok(true)`.
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::insert`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 0.01)?;
    /// assert!(filter.insert("a")?);
    /// assert!(!filter.insert("a")?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert(&self, item: impl AsRef<[u8]>) -> Result<bool> {
        self.insert_hash(self.hash(item))
    }

    /// [`insert`](Self::insert) for an item already hashed with this filter's key.
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::insert`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 0.01)?;
    /// let h = filter.hash("a");
    /// assert!(filter.insert_hash(h)?);
    /// assert!(!filter.insert_hash(h)?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert_hash(&self, hash: ItemHash) -> Result<bool> {
        if self.contains_hash(hash) {
            return Ok(false);
        }
        let stripe = &self.item_stripes[hash.h1() as usize % ITEM_STRIPES];
        let _item = stripe.0.lock().unwrap_or_else(PoisonError::into_inner);
        // Every insert of this item holds this lock from here on, so an earlier winner's bits,
        // in whichever sub-filter, are visible now.
        if self.contains_hash(hash) {
            return Ok(false);
        }
        let newest = self.reserve()?;
        let filter = self.slots[newest]
            .get()
            .expect("slots up to newest are set");
        let new = filter.insert_hash(hash);
        if !new {
            // Other items' bits made this one a false positive meanwhile: nothing was added.
            self.counts[newest].fetch_sub(1, Ordering::Relaxed);
        }
        Ok(new)
    }

    /// Reserves room for one item in the newest sub-filter, adding a sub-filter first when it
    /// is full. Reserving before inserting means a sub-filter never holds more items than its
    /// capacity, however many threads insert at once.
    fn reserve(&self) -> Result<usize> {
        loop {
            let newest = self.newest.load(Ordering::Acquire);
            let capacity = self.plan.capacity(newest);
            let reserved =
                self.counts[newest].fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| {
                    (c < capacity).then_some(c + 1)
                });
            if reserved.is_ok() {
                return Ok(newest);
            }
            self.grow(newest)?;
        }
    }

    /// Adds the sub-filter after `full`, unless another thread already has.
    fn grow(&self, full: usize) -> Result<()> {
        let _growing = self.growth.lock().unwrap_or_else(PoisonError::into_inner);
        if self.newest.load(Ordering::Acquire) != full {
            return Ok(());
        }
        let next = full + 1;
        if next == MAX_FILTERS {
            return Err(ErrorKind::TooLarge {
                bits: f64::INFINITY,
            }
            .into());
        }
        let filter = AtomicBloomFilter::from(self.plan.blocked(next, self.hasher.key())?);
        // Only the grower sets slots, one at a time, under the growth lock; the slot is set
        // before `newest` is published, so readers never see an empty slot below `newest`.
        let _ = self.slots[next].set(filter);
        self.newest.store(next, Ordering::Release);
        Ok(())
    }

    /// Whether the item may be present. Never locks.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 0.01)?;
    /// filter.insert("a")?;
    /// assert!(filter.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// [`contains`](Self::contains) for an item already hashed with this filter's key.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 0.01)?;
    /// assert!(!filter.contains_hash(filter.hash("a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn contains_hash(&self, hash: ItemHash) -> bool {
        self.current().rev().any(|f| f.contains_hash(hash))
    }

    /// The number of sub-filters.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::AtomicScalableBloomFilter::new(100, 0.01)?.filters(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn filters(&self) -> usize {
        self.newest.load(Ordering::Acquire) + 1
    }

    /// Items the current sub-filters are sized for, in all.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::AtomicScalableBloomFilter::new(100, 0.01)?.capacity(), 100);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn capacity(&self) -> u64 {
        (0..self.filters()).map(|i| self.plan.capacity(i)).sum()
    }

    /// Inserts that reported a new item, over all sub-filters.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 0.01)?;
    /// filter.insert("a")?;
    /// filter.insert("a")?;
    /// assert_eq!(filter.items(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn items(&self) -> u64 {
        self.counts[..self.filters()]
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum()
    }

    /// The SipHash key shared by every sub-filter.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::builder(10, 0.1).key([4; 16]).build()?;
    /// assert_eq!(filter.key(), [4; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.hasher.key()
    }

    /// The compound target rate.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(10, 1e-3)?;
    /// assert_eq!(filter.target_false_positive_rate(), 1e-3);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn target_false_positive_rate(&self) -> f64 {
        self.plan.rate
    }

    /// The compound false-positive rate now, from the sub-filters' estimated rates.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(1_000, 1e-3)?;
    /// for i in 0..10_000u32 {
    ///     filter.insert(i.to_le_bytes())?;
    /// }
    /// assert!(filter.estimated_false_positive_rate() < 1e-3);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn estimated_false_positive_rate(&self) -> f64 {
        compound(
            self.current()
                .map(AtomicBloomFilter::estimated_false_positive_rate),
        )
    }

    /// Heap bytes held by all sub-filters.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(1_000, 0.01)?;
    /// assert!(filter.memory_bytes() >= 1_000);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn memory_bytes(&self) -> usize {
        self.current().map(AtomicBloomFilter::memory_bytes).sum()
    }

    /// The serialized form, the same as a [`ScalableBloomFilter`]'s. A snapshot taken while
    /// other threads insert holds every insert that returned before it began; quiesce writers
    /// for an exact one.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(10, 0.01)?;
    /// filter.insert("a")?;
    /// let copy = bloom::ScalableBloomFilter::from_bytes(&filter.to_bytes())?;
    /// assert!(copy.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Writes the serialized form to `out`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the writer fails.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(10, 0.01)?;
    /// let mut out = Vec::new();
    /// filter.write_to(&mut out)?;
    /// assert_eq!(out, filter.to_bytes());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn write_to<W: Write>(&self, mut out: W) -> Result<()> {
        let filters: Vec<_> = self.current().collect();
        format::write_scalable_header(&mut out, &self.plan.header(self.key(), filters.len()))?;
        filters.into_iter().try_for_each(|f| f.write_to(&mut out))
    }

    /// Decodes a filter from the bytes of [`to_bytes`](Self::to_bytes) or
    /// [`ScalableBloomFilter::to_bytes`].
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::from_bytes`].
    ///
    /// # Example
    ///
    /// ```
    /// let mut plain = bloom::ScalableBloomFilter::new(10, 0.01)?;
    /// plain.insert("a")?;
    /// let shared = bloom::AtomicScalableBloomFilter::from_bytes(&plain.to_bytes())?;
    /// assert!(shared.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_bytes(bytes: &[u8]) -> Result<Self> {
        Ok(ScalableBloomFilter::from_bytes(bytes)?.into())
    }

    /// Reads one serialized filter from `input`, leaving the reader just after it.
    ///
    /// # Errors
    ///
    /// As [`ScalableBloomFilter::read_from`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(10, 0.01)?;
    /// let bytes = filter.to_bytes();
    /// let copy = bloom::AtomicScalableBloomFilter::read_from(bytes.as_slice())?;
    /// assert_eq!(copy.filters(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn read_from<R: Read>(input: R) -> Result<Self> {
        Ok(ScalableBloomFilter::read_from(input)?.into())
    }
}

impl From<ScalableBloomFilter> for AtomicScalableBloomFilter {
    /// Shares a filled single-threaded filter across threads.
    ///
    /// ```
    /// let mut plain = bloom::ScalableBloomFilter::new(10, 0.01)?;
    /// plain.insert("a")?;
    /// let shared = bloom::AtomicScalableBloomFilter::from(plain);
    /// assert!(!shared.insert("a")?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn from(filter: ScalableBloomFilter) -> Self {
        let filters = filter
            .filters
            .into_iter()
            .map(|f| {
                let items = f.items();
                (AtomicBloomFilter::from(f), items)
            })
            .collect();
        AtomicScalableBloomFilter::with_filters(filter.plan, filter.hasher, filters)
    }
}

impl From<AtomicScalableBloomFilter> for ScalableBloomFilter {
    /// Takes back a shared filter once the threads are done with it.
    ///
    /// ```
    /// let shared = bloom::AtomicScalableBloomFilter::new(10, 0.01)?;
    /// shared.insert("a")?;
    /// let plain = bloom::ScalableBloomFilter::from(shared);
    /// assert!(plain.contains("a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn from(filter: AtomicScalableBloomFilter) -> Self {
        let count = filter.filters();
        let filters = Vec::from(filter.slots)
            .into_iter()
            .take(count)
            .filter_map(OnceLock::into_inner)
            .map(BlockedBloomFilter::from)
            .collect();
        ScalableBloomFilter {
            plan: filter.plan,
            hasher: filter.hasher,
            filters,
        }
    }
}

impl ScalableBuilder<AtomicScalableBloomFilter> {
    /// Builds the filter with its first sub-filter.
    ///
    /// # Errors
    ///
    /// As [`ScalableBuilder::<ScalableBloomFilter>::build`].
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::builder(10, 0.01).growth_factor(3).build()?;
    /// assert_eq!(filter.filters(), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn build(self) -> Result<AtomicScalableBloomFilter> {
        let (plan, hasher) = self.resolve()?;
        let first = AtomicBloomFilter::from(plan.blocked(0, hasher.key())?);
        Ok(AtomicScalableBloomFilter::with_filters(
            plan,
            hasher,
            vec![(first, 0)],
        ))
    }
}

impl fmt::Debug for AtomicScalableBloomFilter {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AtomicScalableBloomFilter")
            .field("filters", &self.filters())
            .field("items", &self.items())
            .field("capacity", &self.capacity())
            .field("target_rate", &self.plan.rate)
            .finish_non_exhaustive()
    }
}
