//! What a body is: its digest (the records' `digest`, WARC's `WARC-Payload-Digest`), and the
//! content-seen test (Mercator's): whether a body was read before under another URL.
//!
//! Public, so that `benches/content.rs` measures it as the crawler runs it.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use bloom::AtomicScalableBloomFilter;
use sha1::{Digest as _, Sha1};

/// How often, in bodies inserted, the expected count of false duplicates is brought up to
/// date: the filter's rate estimate costs microseconds, too much for every page.
const SAMPLE_EVERY: u64 = 1_024;

/// The SHA-1 of a body, as read (decompressed, and cut at the cap if it was).
///
/// ```
/// let digest = crawler::content::Digest::of(b"<html>...</html>");
/// println!("{}", digest.text().as_str());
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Digest([u8; 20]);

/// The longest text form: `sha1:` and 32 base32 characters.
const TEXT_LEN: usize = 5 + 32;

impl Digest {
    /// The digest of `body`.
    ///
    /// ```
    /// use crawler::content::Digest;
    /// assert_eq!(Digest::of(b"abc"), Digest::of_parts(&[b"a", b"bc"]));
    /// assert_ne!(Digest::of(b"abc"), Digest::of(b"abd"));
    /// ```
    pub fn of(body: &[u8]) -> Digest {
        Digest(Sha1::digest(body).into())
    }

    /// The digest of several pieces read as one: a WARC record's block (HTTP head and
    /// body) without first copying them into one buffer.
    ///
    /// ```
    /// use crawler::content::Digest;
    /// let head = b"HTTP/1.1 200 OK\r\n\r\n";
    /// assert_eq!(Digest::of_parts(&[head, b"body"]), Digest::of(b"HTTP/1.1 200 OK\r\n\r\nbody"));
    /// ```
    pub fn of_parts(parts: &[&[u8]]) -> Digest {
        let mut hasher = Sha1::new();
        for part in parts {
            hasher.update(part);
        }
        Digest(hasher.finalize().into())
    }

    /// The digest whose 20 bytes are `bytes` (an earlier record's, say).
    pub(crate) fn from_bytes(bytes: [u8; 20]) -> Digest {
        Digest(bytes)
    }

    /// The raw 20 bytes: the content-seen test's fingerprint.
    ///
    /// ```
    /// // SHA-1 of the empty string begins da39a3ee.
    /// assert_eq!(crawler::content::Digest::of(b"").as_bytes()[..4], [0xda, 0x39, 0xa3, 0xee]);
    /// ```
    pub fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }

    /// `sha1:` and the digest in base32 (RFC 4648, upper case, no padding: 20 bytes are 32
    /// characters), as WARC files carry it and `warcio` checks it.
    ///
    /// ```
    /// let text = crawler::content::Digest::of(b"").text();
    /// assert_eq!(text.as_str(), "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ");
    /// ```
    pub fn text(&self) -> DigestText {
        let mut text = [0; TEXT_LEN];
        text[..5].copy_from_slice(b"sha1:");
        data_encoding::BASE32_NOPAD.encode_mut(&self.0, &mut text[5..]);
        DigestText(text)
    }
}

/// A digest's text form, without an allocation.
#[derive(Clone, Copy)]
///
/// ```
/// let text = crawler::content::Digest::of(b"page").text();
/// assert!(text.as_str().starts_with("sha1:"));
/// ```
pub struct DigestText([u8; TEXT_LEN]);

impl DigestText {
    /// The text: `sha1:` and 32 base32 characters.
    ///
    /// ```
    /// assert_eq!(crawler::content::Digest::of(b"x").text().as_str().len(), 37);
    /// ```
    pub fn as_str(&self) -> &str {
        // Built from ASCII only: `sha1:` and the base32 alphabet.
        std::str::from_utf8(&self.0).unwrap_or_default()
    }
}

impl std::fmt::Debug for DigestText {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The content-seen test: the digests of the 2xx bodies read so far, in a growing,
/// thread-safe Bloom filter of a few bytes per page.
///
/// A false positive takes a new body for one seen before: that page is recorded as a
/// duplicate (its links are still followed, unless `crawl.follow_duplicates` is off). The filter's
/// target rate is the seen-test's (`frontier.seen_false_positive_rate`), and [`Self::stats`]
/// tells how many such mistakes to expect so far.
///
/// ```
/// use crawler::content::{ContentSeen, Digest};
/// let seen = ContentSeen::new(1_000, 1e-6).unwrap();
/// assert!(!seen.seen_before(&Digest::of(b"<p>a page</p>")));
/// assert!(seen.seen_before(&Digest::of(b"<p>a page</p>")));
/// ```
pub struct ContentSeen {
    /// `None` in a crawl shared through Redis: the test is the shared frontier's
    /// (`SharedFrontier::seen_body`), and this counts its answers.
    filter: Option<AtomicScalableBloomFilter>,
    /// Bodies tested and their duplicates.
    pub(crate) tested: AtomicU64,
    pub(crate) duplicates: AtomicU64,
    /// Expected false duplicates up to the last sample (every [`SAMPLE_EVERY`] insertions).
    expected: Mutex<f64>,
}

/// What the content-seen test can tell of itself, for the summary.
#[derive(Clone, Copy, Debug, PartialEq)]
///
/// ```
/// use crawler::content::{ContentSeen, Digest};
/// let seen = ContentSeen::new(1_000, 1e-6).unwrap();
/// seen.seen_before(&Digest::of(b"a"));
/// seen.seen_before(&Digest::of(b"a"));
/// let stats = seen.stats();
/// assert_eq!((stats.tested, stats.duplicates), (2, 1));
/// ```
pub struct ContentStats {
    /// Bodies tested.
    pub tested: u64,
    /// Of those, the ones seen before.
    pub duplicates: u64,
    /// Heap bytes of the filter.
    pub filter_bytes: usize,
    /// The expected number of new bodies wrongly taken for duplicates so far.
    pub expected_false_duplicates: f64,
}

impl ContentSeen {
    /// A filter for `initial_capacity` bodies before it grows, at `false_positive_rate`.
    ///
    /// # Errors
    ///
    /// A rate outside (0, 1), or a capacity of 0 or too large for one filter.
    ///
    /// ```
    /// use crawler::content::ContentSeen;
    /// assert!(ContentSeen::new(1_000_000, 1e-6).is_ok());
    /// assert!(ContentSeen::new(1_000, 1.5).is_err());
    /// ```
    pub fn new(
        initial_capacity: usize,
        false_positive_rate: f64,
    ) -> Result<ContentSeen, bloom::Error> {
        Ok(ContentSeen {
            filter: Some(AtomicScalableBloomFilter::new(
                initial_capacity,
                false_positive_rate,
            )?),
            ..ContentSeen::elsewhere()
        })
    }

    /// The counts of a test kept elsewhere (the shared frontier's), given by [`Self::note`].
    pub(crate) fn elsewhere() -> ContentSeen {
        ContentSeen {
            filter: None,
            tested: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            expected: Mutex::new(0.0),
        }
    }

    /// Whether the test is kept elsewhere (see [`Self::elsewhere`]).
    pub(crate) fn is_elsewhere(&self) -> bool {
        self.filter.is_none()
    }

    /// Counts a body tested elsewhere.
    pub(crate) fn note(&self, duplicate: bool) {
        self.tested.fetch_add(1, Ordering::Relaxed);
        if duplicate {
            self.duplicates.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether a body with this digest was seen before; marks it seen. Of several threads
    /// testing the same new digest at once, exactly one is told it is new. A filter that
    /// cannot grow (memory) takes the body for new.
    ///
    /// ```
    /// use crawler::content::{ContentSeen, Digest};
    /// let seen = ContentSeen::new(100, 1e-9).unwrap();
    /// let page = Digest::of(b"the same body under two URLs");
    /// assert!(!seen.seen_before(&page));
    /// assert!(seen.seen_before(&page));
    /// ```
    pub fn seen_before(&self, digest: &Digest) -> bool {
        let Some(filter) = &self.filter else {
            return false;
        };
        let seen = match filter.insert(digest.as_bytes()) {
            Ok(true) => {
                let items = filter.items();
                if items.is_multiple_of(SAMPLE_EVERY) {
                    let rate = filter.estimated_false_positive_rate();
                    *self.lock_expected() += SAMPLE_EVERY as f64 * rate;
                }
                false
            }
            Ok(false) => true,
            Err(err) => {
                tracing::warn!("content-seen test: {err}; the page is taken for new");
                false
            }
        };
        self.note(seen);
        seen
    }

    /// The counts, the filter's size, and the false duplicates to expect so far.
    ///
    /// ```
    /// let seen = crawler::content::ContentSeen::new(1_000, 1e-6).unwrap();
    /// assert!(seen.stats().filter_bytes > 0);
    /// ```
    pub fn stats(&self) -> ContentStats {
        // The insertions since the last sample, at the rate now (which errs high).
        let unsampled = self.filter.as_ref().map_or(0.0, |f| {
            (f.items() % SAMPLE_EVERY) as f64 * f.estimated_false_positive_rate()
        });
        ContentStats {
            tested: self.tested.load(Ordering::Relaxed),
            duplicates: self.duplicates.load(Ordering::Relaxed),
            filter_bytes: self.filter.as_ref().map_or(0, |f| f.memory_bytes()),
            expected_false_duplicates: *self.lock_expected() + unsampled,
        }
    }

    fn lock_expected(&self) -> std::sync::MutexGuard<'_, f64> {
        self.expected.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_digest_of_a_known_body_is_sha1_in_base32() {
        // SHA-1("abc") = a9993e364706816aba3e25717850c26c9cd0d89d (FIPS 180 example).
        let digest = Digest::of(b"abc");
        assert_eq!(
            digest.as_bytes().to_vec(),
            data_encoding::HEXLOWER
                .decode(b"a9993e364706816aba3e25717850c26c9cd0d89d")
                .unwrap()
        );
        assert_eq!(
            digest.text().as_str(),
            "sha1:VGMT4NSHA2AWVOR6EVYXQUGCNSONBWE5"
        );
        // The empty body, as WARC tools write it for an empty payload.
        assert_eq!(
            Digest::of(b"").text().as_str(),
            "sha1:3I42H3S6NNFQ2MSVX7XZKYAYSCX5QBYJ"
        );
        // In pieces, the same as whole.
        assert_eq!(Digest::of_parts(&[b"a", b"", b"bc"]), digest);
        assert_eq!(Digest::of_parts(&[]), Digest::of(b""));
    }

    #[test]
    fn a_body_is_new_once_and_then_a_duplicate() {
        let seen = ContentSeen::new(10, 1e-6).unwrap();
        let a = Digest::of(b"<p>a</p>");
        let b = Digest::of(b"<p>b</p>");
        assert!(!seen.seen_before(&a));
        assert!(!seen.seen_before(&b));
        assert!(seen.seen_before(&a));
        for i in 0..100 {
            // Past the first sub-filter: it grows, and remembers what it held.
            seen.seen_before(&Digest::of(format!("page {i}").as_bytes()));
        }
        assert!(seen.seen_before(&b));
        let stats = seen.stats();
        assert_eq!((stats.tested, stats.duplicates), (104, 2));
        assert!(stats.expected_false_duplicates < 1e-3);
        assert!(stats.filter_bytes > 0);
    }
}
