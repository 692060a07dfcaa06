//! What every filter shares, as traits: [`Filter`], and [`SharedFilter`] for the thread-safe
//! ones, so that code can be generic over the filter.

use std::io::{Read, Write};

use crate::bits::{Bloom, Layout};
use crate::error::{ErrorKind, Result};
use crate::hash::ItemHash;
use crate::{
    AtomicBloomFilter, AtomicScalableBloomFilter, CountingBloomFilter, ScalableBloomFilter,
};

/// A filter of any type: insert, lookup, size, accuracy and the serialized format.
///
/// Implemented by every filter of this crate. The types' own methods of the same names say the
/// same, with two differences: here `insert` returns a `Result` for all (only the scalable
/// filters can fail, when growing runs out of memory or [`MAX_BITS`](crate::MAX_BITS)), and
/// takes `&mut self` for all (see [`SharedFilter`] to insert through `&self`).
///
/// # Example
///
/// ```
/// use bloom::Filter;
///
/// /// The items not seen before, whatever the filter.
/// fn new_items<'a, F: Filter>(filter: &mut F, items: &[&'a str]) -> bloom::Result<Vec<&'a str>> {
///     let mut new = Vec::new();
///     for &item in items {
///         if Filter::insert(filter, item)? {
///             new.push(item);
///         }
///     }
///     Ok(new)
/// }
///
/// let items = ["a", "b", "a"];
/// assert_eq!(new_items(&mut bloom::BloomFilter::new(100, 0.01)?, &items)?, ["a", "b"]);
/// assert_eq!(new_items(&mut bloom::ScalableBloomFilter::new(1, 0.01)?, &items)?, ["a", "b"]);
/// # Ok::<(), bloom::Error>(())
/// ```
pub trait Filter: Sized {
    /// Hashes an item with this filter's key, for [`insert_hash`](Self::insert_hash) and
    /// [`contains_hash`](Self::contains_hash).
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::CountingBloomFilter::builder(100, 0.01).key([1; 16]).build()?;
    /// assert_eq!(Filter::hash(&filter, "a"), bloom::ItemHasher::with_key([1; 16]).hash(b"a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash;

    /// Adds an already hashed item; `Ok(true)` if it was not present before.
    ///
    /// # Errors
    ///
    /// Only from the scalable filters, when they must grow and cannot.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let mut filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// let h = Filter::hash(&filter, "a");
    /// assert!(Filter::insert_hash(&mut filter, h)?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn insert_hash(&mut self, hash: ItemHash) -> Result<bool>;

    /// Whether an already hashed item may be present (`false` is certain).
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::BlockedBloomFilter::new(100, 0.01)?;
    /// assert!(!Filter::contains_hash(&filter, Filter::hash(&filter, "a")));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn contains_hash(&self, hash: ItemHash) -> bool;

    /// Adds an item; `Ok(true)` if it was not present before (`false`: inserted before, or a
    /// false positive).
    ///
    /// # Errors
    ///
    /// Only from the scalable filters, when they must grow and cannot.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
    /// assert!(Filter::insert(&mut filter, "a")?);
    /// assert!(!Filter::insert(&mut filter, "a")?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn insert(&mut self, item: impl AsRef<[u8]>) -> Result<bool> {
        let hash = self.hash(item);
        self.insert_hash(hash)
    }

    /// Whether the item may be present: `false` is certain, `true` is wrong at the filter's
    /// false-positive rate.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let mut filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// Filter::insert(&mut filter, "a")?;
    /// assert!(Filter::contains(&filter, "a"));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn contains(&self, item: impl AsRef<[u8]>) -> bool {
        self.contains_hash(self.hash(item))
    }

    /// The inserts that reported a new item; the counting filter counts every insert (less
    /// successful removals), since each one adds to its counters.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let mut filter = bloom::BloomFilter::new(100, 0.01)?;
    /// Filter::insert(&mut filter, "a")?;
    /// assert_eq!(Filter::items(&filter), 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn items(&self) -> u64;

    /// The number of items the filter is built for. A fixed-size filter: `m ln 2 / k`, the
    /// items at which half its bits are set, which is the load a standard filter's sizing aims
    /// at (about the `expected_items` it was built with); a blocked filter is sized with
    /// fewer hashes and reaches its target rate before that (1.14x `expected_items` at 1e-2,
    /// 1.19x at 1e-6, where the rate is 1.7x and 7.6x the target): check a load against a
    /// rate with `false_positive_rate_at`. A scalable filter: the sum over its sub-filters of
    /// the items each was sized for (it grows past that). Not [`crate::capacity`], the
    /// standard layout's items for given bits and rate.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::BloomFilter::new(10_000, 0.01)?;
    /// assert!((9_000..=10_000).contains(&filter.capacity()));
    /// assert_eq!(bloom::ScalableBloomFilter::new(500, 0.01)?.capacity(), 500);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn capacity(&self) -> u64;

    /// The false-positive rate now, estimated from the filter's fill.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::AtomicBloomFilter::new(100, 0.01)?;
    /// assert_eq!(Filter::estimated_false_positive_rate(&filter), 0.0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn estimated_false_positive_rate(&self) -> f64;

    /// Heap bytes held by the filter's bits or counters.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::BloomFilter::with_bits(1 << 20, 7)?;
    /// assert_eq!(Filter::memory_bytes(&filter), 1 << 17);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn memory_bytes(&self) -> usize;

    /// The SipHash key.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::ScalableBloomFilter::builder(100, 0.01).key([3; 16]).build()?;
    /// assert_eq!(Filter::key(&filter), [3; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn key(&self) -> [u8; 16];

    /// Writes the serialized form (see the crate docs for the format) to `out`.
    ///
    /// # Errors
    ///
    /// [`ErrorKind::Io`] when the writer fails.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::CountingBloomFilter::new(100, 0.01)?;
    /// let mut out = Vec::new();
    /// Filter::write_to(&filter, &mut out)?;
    /// assert_eq!(out, Filter::to_bytes(&filter));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn write_to<W: Write>(&self, out: W) -> Result<()>;

    /// Reads one serialized filter from `input`, leaving the reader just after it.
    ///
    /// # Errors
    ///
    /// A typed [`Error`](crate::Error) for truncated, damaged, foreign or newer input, or
    /// [`ErrorKind::Io`]; never a panic.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let bytes = bloom::BlockedBloomFilter::new(100, 0.01)?.to_bytes();
    /// let copy: bloom::AtomicBloomFilter = Filter::read_from(bytes.as_slice())?;
    /// assert_eq!(copy.to_bytes(), bytes);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn read_from<R: Read>(input: R) -> Result<Self>;

    /// The serialized form.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let filter = bloom::ScalableBloomFilter::new(100, 0.01)?;
    /// let copy: bloom::ScalableBloomFilter = Filter::from_bytes(&Filter::to_bytes(&filter))?;
    /// assert_eq!(copy, filter);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.write_to(&mut out)
            .expect("writing to a Vec cannot fail");
        out
    }

    /// Decodes a filter from exactly the bytes of one serialized filter.
    ///
    /// # Errors
    ///
    /// As [`read_from`](Self::read_from), plus [`ErrorKind::TrailingBytes`] when bytes are
    /// left after the filter.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::Filter;
    ///
    /// let mut bytes = bloom::BloomFilter::new(100, 0.01)?.to_bytes();
    /// bytes.push(0);
    /// assert!(<bloom::BloomFilter as Filter>::from_bytes(&bytes).is_err());
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn from_bytes(mut bytes: &[u8]) -> Result<Self> {
        let filter = Self::read_from(&mut bytes)?;
        if !bytes.is_empty() {
            return Err(ErrorKind::TrailingBytes(bytes.len()).into());
        }
        Ok(filter)
    }
}

/// A filter that threads share: [`insert_shared`](Self::insert_shared) through `&self`, and
/// of several threads inserting the same new item at once, exactly one is told it is new.
///
/// # Example
///
/// ```
/// use bloom::SharedFilter;
///
/// /// How many of `threads` racing inserts of one new item are told it is new.
/// fn winners<F: SharedFilter>(filter: &F, threads: usize) -> usize {
///     std::thread::scope(|s| {
///         let racers: Vec<_> = (0..threads)
///             .map(|_| s.spawn(|| filter.insert_shared("https://example.com/").unwrap()))
///             .collect();
///         racers.into_iter().map(|r| r.join().unwrap()).filter(|&new| new).count()
///     })
/// }
///
/// assert_eq!(winners(&bloom::AtomicBloomFilter::new(1_000, 1e-6)?, 4), 1);
/// assert_eq!(winners(&bloom::AtomicScalableBloomFilter::new(1_000, 1e-6)?, 4), 1);
/// # Ok::<(), bloom::Error>(())
/// ```
pub trait SharedFilter: Filter + Sync {
    /// Adds an item through a shared reference; `Ok(true)` to exactly one of several threads
    /// inserting the same new item (to none if it is already a false positive).
    ///
    /// # Errors
    ///
    /// Only from the scalable filter, when it must grow and cannot.
    ///
    /// # Example
    ///
    /// ```
    /// use bloom::SharedFilter;
    ///
    /// let filter = bloom::AtomicScalableBloomFilter::new(10, 0.01)?;
    /// assert!(filter.insert_shared("a")?);
    /// assert!(!filter.insert_shared("a")?);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    fn insert_shared(&self, item: impl AsRef<[u8]>) -> Result<bool>;
}

/// The items a fixed-size filter of `bits` bits and `hashes` probes holds at half fill:
/// `m ln 2 / k`.
fn half_fill_items(bits: u64, hashes: u32) -> u64 {
    (bits as f64 * std::f64::consts::LN_2 / f64::from(hashes)) as u64
}

/// The [`Filter`] methods a filter type already has under the same names, signatures and
/// meanings, forwarded to them (inherent methods come first in method lookup, so the calls
/// below are not recursive); then `insert_hash` and `capacity`, by whether it is of fixed size
/// (its own insert cannot fail; capacity at half fill) or scalable.
macro_rules! forward_filter_methods {
    (fixed) => {
        forward_filter_methods!();

        fn insert_hash(&mut self, hash: ItemHash) -> Result<bool> {
            Ok(Self::insert_hash(self, hash))
        }

        fn capacity(&self) -> u64 {
            half_fill_items(self.bits(), self.hashes())
        }
    };
    (scalable) => {
        forward_filter_methods!();

        fn insert_hash(&mut self, hash: ItemHash) -> Result<bool> {
            Self::insert_hash(self, hash)
        }

        fn capacity(&self) -> u64 {
            Self::capacity(self)
        }
    };
    () => {
        fn hash(&self, item: impl AsRef<[u8]>) -> ItemHash {
            self.hash(item)
        }

        fn contains_hash(&self, hash: ItemHash) -> bool {
            self.contains_hash(hash)
        }

        fn items(&self) -> u64 {
            self.items()
        }

        fn estimated_false_positive_rate(&self) -> f64 {
            self.estimated_false_positive_rate()
        }

        fn memory_bytes(&self) -> usize {
            self.memory_bytes()
        }

        fn key(&self) -> [u8; 16] {
            self.key()
        }

        fn write_to<W: Write>(&self, out: W) -> Result<()> {
            self.write_to(out)
        }

        fn read_from<R: Read>(input: R) -> Result<Self> {
            Self::read_from(input)
        }
    };
}

impl<L: Layout> Filter for Bloom<L> {
    forward_filter_methods!(fixed);
}

impl Filter for CountingBloomFilter {
    forward_filter_methods!(fixed);
}

impl Filter for AtomicBloomFilter {
    forward_filter_methods!(fixed);
}

impl Filter for ScalableBloomFilter {
    forward_filter_methods!(scalable);
}

impl Filter for AtomicScalableBloomFilter {
    forward_filter_methods!(scalable);
}

impl SharedFilter for AtomicBloomFilter {
    fn insert_shared(&self, item: impl AsRef<[u8]>) -> Result<bool> {
        Ok(AtomicBloomFilter::insert(self, item))
    }
}

impl SharedFilter for AtomicScalableBloomFilter {
    fn insert_shared(&self, item: impl AsRef<[u8]>) -> Result<bool> {
        AtomicScalableBloomFilter::insert(self, item)
    }
}
