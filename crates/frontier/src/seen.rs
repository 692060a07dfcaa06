//! The seen-test: whether a canonical URL was admitted before, on a growing, thread-safe Bloom
//! filter.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use bloom::{AtomicScalableBloomFilter, SharedFilter};

use crate::Canonical;

/// How often, in admissions, the expected count of wrongly dropped URLs is brought up to date:
/// the filter's rate estimate costs microseconds, too much for every push.
const SAMPLE_EVERY: u64 = 4_096;

/// Remembers every URL the frontier admitted, in a few bytes each.
///
/// A Bloom filter never forgets a URL it was given, but may take a URL it was never given for
/// one it has seen (a false positive): that URL is silently never crawled. The target rate of
/// such mistakes is a setting (default 1e-6), and [`SeenStats`] reports the filter's estimated
/// rate and the expected number of URLs dropped that way so far.
///
/// The filter is any [`bloom::SharedFilter`]: when several threads push the same new URL at
/// once, exactly one of them is told it is new. By default, and from [`SeenSet::builder`], it
/// is [`bloom::AtomicScalableBloomFilter`], which grows as URLs arrive, so the rate holds for
/// any crawl size. Its key is random unless configured: a keyed hash stops hostile pages from
/// crafting URLs that collide in the filter.
///
/// # Example
///
/// ```
/// use frontier::{Canonicalizer, SeenSet};
///
/// let seen = SeenSet::builder().initial_capacity(10_000).build()?;
/// let url = Canonicalizer::new().canonicalize("https://example.com/").unwrap();
/// assert!(seen.insert(&url)?); // new
/// assert!(!seen.insert(&url)?); // seen
/// assert!(seen.contains(&url));
/// # Ok::<(), bloom::Error>(())
/// ```
pub struct SeenSet<F = AtomicScalableBloomFilter> {
    filter: F,
    /// Admissions so far; drives the sampling of the false-drop estimate.
    admitted: AtomicU64,
    /// Expected wrongly dropped URLs up to the last sample.
    expected_false_drops: Mutex<f64>,
}

/// Configures a [`SeenSet`]; from [`SeenSet::builder`].
///
/// # Example
///
/// ```
/// let seen = frontier::SeenSet::builder()
///     .initial_capacity(1_000)
///     .false_positive_rate(1e-9)
///     .key([7; 16])
///     .build()?;
/// assert_eq!(seen.stats().target_rate, 1e-9);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct SeenSetBuilder {
    /// URLs the first sub-filter holds before the filter grows. Default: 1,000,000 (4.5 MB at
    /// 1e-6); larger values waste memory on small crawls, smaller ones add sub-filters, each
    /// one more probe per push.
    initial_capacity: usize,
    /// The compound false-positive rate. Default: 1e-6, one URL in a million wrongly taken
    /// for seen.
    false_positive_rate: f64,
    /// The SipHash key. Default: random per crawl (a checkpoint stores it).
    key: Option<[u8; 16]>,
}

impl Default for SeenSetBuilder {
    fn default() -> Self {
        SeenSetBuilder {
            initial_capacity: 1_000_000,
            false_positive_rate: 1e-6,
            key: None,
        }
    }
}

impl SeenSetBuilder {
    /// URLs held before the filter first grows. Default: 1,000,000.
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().initial_capacity(50).build()?;
    /// assert_eq!(seen.stats().capacity, 50);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn initial_capacity(mut self, urls: usize) -> Self {
        self.initial_capacity = urls;
        self
    }

    /// The target rate of new URLs wrongly taken for seen. Default: 1e-6.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(frontier::SeenSet::builder().false_positive_rate(1.5).build().is_err());
    /// ```
    pub fn false_positive_rate(mut self, rate: f64) -> Self {
        self.false_positive_rate = rate;
        self
    }

    /// A fixed hash key, for reproducible runs and tests. Default: random.
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().key([1; 16]).initial_capacity(10).build()?;
    /// assert_eq!(seen.filter().key(), [1; 16]);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn key(mut self, key: [u8; 16]) -> Self {
        self.key = Some(key);
        self
    }

    /// Builds the set with its first sub-filter.
    ///
    /// # Errors
    ///
    /// The filter's: a rate outside (0, 1), a capacity of zero, or a first sub-filter too large.
    ///
    /// # Example
    ///
    /// ```
    /// assert!(frontier::SeenSet::builder().initial_capacity(0).build().is_err());
    /// ```
    pub fn build(self) -> Result<SeenSet, bloom::Error> {
        let mut builder =
            AtomicScalableBloomFilter::builder(self.initial_capacity, self.false_positive_rate);
        if let Some(key) = self.key {
            builder = builder.key(key);
        }
        Ok(SeenSet::from_filter(builder.build()?))
    }
}

/// What the seen-test can tell about its own accuracy and cost.
///
/// # Example
///
/// ```
/// let seen = frontier::SeenSet::builder().initial_capacity(100).build()?;
/// let stats = seen.stats();
/// assert_eq!(stats.urls, 0);
/// assert_eq!(stats.expected_wrongly_dropped, 0.0);
/// # Ok::<(), bloom::Error>(())
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq)]
#[non_exhaustive]
pub struct SeenStats {
    /// URLs marked seen: those admitted as new, and new ones a later step (the host budget)
    /// refused.
    pub urls: u64,
    /// Heap bytes of the filter.
    pub filter_bytes: usize,
    /// Sub-filters the filter has grown to.
    pub sub_filters: usize,
    /// URLs the current sub-filters are sized for.
    pub capacity: u64,
    /// The configured compound false-positive rate.
    pub target_rate: f64,
    /// The false-positive rate now, estimated from the filter's fill.
    pub estimated_rate: f64,
    /// The expected number of new URLs wrongly taken for seen so far: the sum, over the URLs
    /// admitted, of the estimated rate when each was tested (sampled every 4,096 admissions,
    /// at the end of each span, so it errs high).
    pub expected_wrongly_dropped: f64,
}

impl SeenSet {
    /// A builder with the defaults: 1,000,000 URLs before growing, rate 1e-6, random key.
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().build()?;
    /// assert_eq!(seen.stats().target_rate, 1e-6);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn builder() -> SeenSetBuilder {
        SeenSetBuilder::default()
    }

    /// The filter's size, accuracy and the expected number of wrongly dropped URLs.
    ///
    /// # Example
    ///
    /// ```
    /// // A fixed key: with a random one (the default), one of these runs in a few hundred
    /// // would see a false positive and count 9,999 new URLs.
    /// let seen = frontier::SeenSet::builder().initial_capacity(1_000).key([7; 16]).build()?;
    /// let canon = frontier::Canonicalizer::new();
    /// for i in 0..10_000 {
    ///     seen.insert(&canon.canonicalize(&format!("https://example.com/{i}")).unwrap())?;
    /// }
    /// let stats = seen.stats();
    /// assert_eq!(stats.urls, 10_000);
    /// assert!(stats.estimated_rate <= stats.target_rate);
    /// assert!(stats.expected_wrongly_dropped < 0.01);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn stats(&self) -> SeenStats {
        let urls = self.admitted.load(Ordering::Relaxed);
        let estimated_rate = self.filter.estimated_false_positive_rate();
        let unsampled = (urls % SAMPLE_EVERY) as f64 * estimated_rate;
        SeenStats {
            urls,
            filter_bytes: self.filter.memory_bytes(),
            sub_filters: self.filter.filters(),
            capacity: self.filter.capacity(),
            target_rate: self.filter.target_false_positive_rate(),
            estimated_rate,
            expected_wrongly_dropped: *self.lock_expected() + unsampled,
        }
    }
}

impl<F: SharedFilter> SeenSet<F> {
    /// Wraps an existing filter, for instance one restored from a checkpoint.
    ///
    /// # Example
    ///
    /// ```
    /// let filter = bloom::AtomicScalableBloomFilter::new(100, 1e-6)?;
    /// filter.insert("https://example.com/")?;
    /// let seen = frontier::SeenSet::from_filter(filter);
    /// assert_eq!(seen.stats().urls, 1);
    ///
    /// // Any bloom::SharedFilter: here a fixed-size one, for a crawl of known size.
    /// let fixed = frontier::SeenSet::from_filter(bloom::AtomicBloomFilter::new(100, 1e-6)?);
    /// let url = frontier::Canonicalizer::new().canonicalize("https://example.com/").unwrap();
    /// assert!(fixed.insert(&url)?);
    /// assert!(fixed.contains(&url));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn from_filter(filter: F) -> Self {
        let admitted = filter.items();
        let expected = admitted as f64 * filter.estimated_false_positive_rate();
        SeenSet {
            filter,
            admitted: AtomicU64::new(admitted),
            expected_false_drops: Mutex::new(expected),
        }
    }

    /// Marks a URL as seen; `Ok(true)` if it was not seen before. Of several threads inserting
    /// the same new URL at once, exactly one gets `Ok(true)`.
    ///
    /// # Errors
    ///
    /// When the filter must grow and cannot (size limit or memory): the URL is then not marked,
    /// and the caller should count it as an error, never as seen.
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().initial_capacity(10).build()?;
    /// let canon = frontier::Canonicalizer::new();
    /// for i in 0..100 {
    ///     let url = canon.canonicalize(&format!("https://example.com/{i}")).unwrap();
    ///     assert!(seen.insert(&url)?);
    /// }
    /// assert!(seen.stats().sub_filters > 1);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn insert(&self, url: &Canonical) -> Result<bool, bloom::Error> {
        self.insert_canonical_text(url.as_bytes())
    }

    /// [`insert`](Self::insert) for the text of a canonical URL that is not (yet) held as a
    /// [`Canonical`]: the caller vouches that it is one.
    pub(crate) fn insert_canonical_text(&self, url: &[u8]) -> Result<bool, bloom::Error> {
        let new = self.filter.insert_shared(url)?;
        if new {
            let admitted = self.admitted.fetch_add(1, Ordering::Relaxed) + 1;
            if admitted.is_multiple_of(SAMPLE_EVERY) {
                let rate = self.filter.estimated_false_positive_rate();
                *self.lock_expected() += SAMPLE_EVERY as f64 * rate;
            }
        }
        Ok(new)
    }

    /// Whether a URL may have been seen (`false` is certain).
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().initial_capacity(10).build()?;
    /// let url = frontier::Canonicalizer::new().canonicalize("http://a.example/").unwrap();
    /// assert!(!seen.contains(&url));
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn contains(&self, url: &Canonical) -> bool {
        self.filter.contains(url.as_bytes())
    }

    /// The underlying filter: to checkpoint it (`write_to`) or inspect it.
    ///
    /// # Example
    ///
    /// ```
    /// let seen = frontier::SeenSet::builder().initial_capacity(10).build()?;
    /// let bytes = seen.filter().to_bytes();
    /// let restored = frontier::SeenSet::from_filter(
    ///     bloom::AtomicScalableBloomFilter::from_bytes(&bytes)?,
    /// );
    /// assert_eq!(restored.stats().urls, 0);
    /// # Ok::<(), bloom::Error>(())
    /// ```
    pub fn filter(&self) -> &F {
        &self.filter
    }

    /// The counters a checkpoint keeps beside the filter: URLs marked, and the expected
    /// false drops summed at the samples so far.
    pub(crate) fn counters(&self) -> (u64, f64) {
        (self.admitted.load(Ordering::Relaxed), *self.lock_expected())
    }

    /// A seen-set from a checkpoint's filter and [`counters`](Self::counters).
    pub(crate) fn restore(filter: F, admitted: u64, expected: f64) -> Self {
        SeenSet {
            filter,
            admitted: AtomicU64::new(admitted),
            expected_false_drops: Mutex::new(expected),
        }
    }

    fn lock_expected(&self) -> std::sync::MutexGuard<'_, f64> {
        // An f64 cannot be left half-updated; a poisoned lock still holds a valid value.
        self.expected_false_drops
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for SeenSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SeenSet")
            .field("stats", &self.stats())
            .finish_non_exhaustive()
    }
}
