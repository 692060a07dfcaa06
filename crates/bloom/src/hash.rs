//! Keyed SipHash-1-3 with 128-bit output, split into the two halves that drive double hashing.
//!
//! Why these choices:
//! * **Keyed**: filters fed by untrusted input (a crawler's URLs) must not let an attacker craft
//!   items that collide; without the key, positions cannot be predicted.
//! * **128 bits**: if every probe derives from one b-bit hash, distinct items with equal hashes
//!   are indistinguishable and the rate cannot drop below about n / 2^b. At a billion items that
//!   floor is 5e-11 with 64 bits; 128 bits remove it.
//! * **Bytes in, little-endian key**: the hash of an item depends only on its bytes and the
//!   16-byte key, so serialized filters answer the same on every platform.

use std::fmt;

use siphasher::sip128::SipHasher13;

/// The 128-bit hash of one item, as two 64-bit halves for double hashing
/// (Kirsch and Mitzenmacher): probe `i` derives from `h1 + i * h2`.
///
/// `h2` is always odd, so the probe sequence never collapses (an even or zero step would
/// revisit positions). Obtain one from a filter's `hash` method or [`ItemHasher::hash`], then
/// reuse it with `insert_hash` / `contains_hash` to hash once and probe several filters that
/// share a key.
///
/// # Example
///
/// ```
/// use bloom::ItemHash;
///
/// let h = ItemHash::from_parts(1, 2);
/// assert_eq!(h.h1(), 1);
/// assert_eq!(h.h2(), 3); // forced odd
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ItemHash {
    h1: u64,
    h2: u64,
}

impl ItemHash {
    /// Builds a hash from precomputed halves, forcing `h2` odd.
    ///
    /// Use this to feed a filter from your own 128-bit hash; both halves must be uniformly
    /// distributed and independent for the filter to meet its rate.
    ///
    /// # Example
    ///
    /// ```
    /// let h = bloom::ItemHash::from_parts(0xdead, 0xbeef);
    /// assert_eq!(h.h2() % 2, 1);
    /// ```
    pub const fn from_parts(h1: u64, h2: u64) -> Self {
        ItemHash { h1, h2: h2 | 1 }
    }

    /// The first half: the starting point of the probe sequence.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::ItemHash::from_parts(7, 8).h1(), 7);
    /// ```
    pub const fn h1(self) -> u64 {
        self.h1
    }

    /// The second half, odd: the step between probes.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::ItemHash::from_parts(7, 8).h2(), 9);
    /// ```
    pub const fn h2(self) -> u64 {
        self.h2
    }
}

/// Keyed SipHash-1-3 (128-bit output) over an item's bytes.
///
/// Every filter owns one; filters built with the same key hash items identically, so one
/// [`ItemHash`] can probe all of them. `Debug` does not print the key.
///
/// # Example
///
/// ```
/// use bloom::ItemHasher;
///
/// let hasher = ItemHasher::with_key([7; 16]);
/// assert_eq!(hasher.hash(b"example"), ItemHasher::with_key([7; 16]).hash(b"example"));
/// assert_ne!(hasher.hash(b"example"), ItemHasher::with_key([8; 16]).hash(b"example"));
/// ```
#[derive(Clone)]
pub struct ItemHasher {
    sip: SipHasher13,
}

impl ItemHasher {
    /// A hasher with a fixed key, for reproducible filters.
    ///
    /// Every 16-byte key is sound, all zeros included: SipHash's output halves are independent
    /// for any key (unlike schemes that derive two hashes from two halves of a seed).
    ///
    /// # Example
    ///
    /// ```
    /// let hasher = bloom::ItemHasher::with_key([0; 16]);
    /// assert_eq!(hasher.key(), [0; 16]);
    /// ```
    pub fn with_key(key: [u8; 16]) -> Self {
        ItemHasher {
            sip: SipHasher13::new_with_key(&key),
        }
    }

    /// A hasher with a key drawn from the operating system's random source.
    ///
    /// If the OS source is unavailable, falls back to the standard library's randomly keyed
    /// `RandomState`, so construction never fails.
    ///
    /// # Example
    ///
    /// ```
    /// let a = bloom::ItemHasher::random();
    /// let b = bloom::ItemHasher::random();
    /// assert_ne!(a.key(), b.key());
    /// ```
    pub fn random() -> Self {
        Self::with_key(random_key())
    }

    /// The 16-byte key.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(bloom::ItemHasher::with_key([3; 16]).key(), [3; 16]);
    /// ```
    pub fn key(&self) -> [u8; 16] {
        self.sip.key()
    }

    /// Hashes an item's bytes.
    ///
    /// # Example
    ///
    /// ```
    /// let h = bloom::ItemHasher::with_key([1; 16]).hash(b"https://example.com/");
    /// assert_eq!(h.h2() & 1, 1);
    /// ```
    #[inline]
    pub fn hash(&self, item: &[u8]) -> ItemHash {
        let h = self.sip.hash(item);
        ItemHash::from_parts(h.h1, h.h2)
    }
}

impl fmt::Debug for ItemHasher {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ItemHasher")
            .field("algorithm", &"SipHash-1-3-128")
            .finish_non_exhaustive()
    }
}

impl PartialEq for ItemHasher {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}

impl Eq for ItemHasher {}

fn random_key() -> [u8; 16] {
    let mut key = [0u8; 16];
    if getrandom::fill(&mut key).is_err() {
        use std::hash::BuildHasher;
        let state = std::collections::hash_map::RandomState::new();
        key[..8].copy_from_slice(&state.hash_one(0u8).to_le_bytes());
        key[8..].copy_from_slice(&state.hash_one(1u8).to_le_bytes());
    }
    key
}

/// Hashes up to [`BATCH`](crate::storage::BATCH) items for the batch operations; slots past
/// `group.len()` are unused.
#[inline]
pub(crate) fn hash_group<T: AsRef<[u8]>>(
    hasher: &ItemHasher,
    group: &[T],
) -> [ItemHash; crate::storage::BATCH] {
    core::array::from_fn(|i| {
        group
            .get(i)
            .map_or(ItemHash::from_parts(0, 0), |x| hasher.hash(x.as_ref()))
    })
}

/// Maps a uniform 64-bit value onto `0..n` without division or modulo bias (Lemire's
/// multiply-shift). 64-bit positions keep filters beyond 2^32 bits exact.
#[inline(always)]
pub(crate) fn reduce(x: u64, n: u64) -> u64 {
    ((u128::from(x) * u128::from(n)) >> 64) as u64
}

/// MurmurHash3's 64-bit finalizer: an invertible mix used to derive a second, independent
/// block index from `h1`.
#[inline(always)]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

#[cfg(test)]
mod tests {
    use super::*;
    use siphasher::sip128::Hasher128;
    use std::hash::Hasher;

    #[test]
    fn one_shot_equals_streaming() {
        let key = [9u8; 16];
        let hasher = ItemHasher::with_key(key);
        let mut sip = SipHasher13::new_with_key(&key);
        sip.write(b"https://example.com/a");
        let h = sip.finish128();
        assert_eq!(
            hasher.hash(b"https://example.com/a"),
            ItemHash::from_parts(h.h1, h.h2)
        );
    }

    /// Pins the hash so a dependency upgrade or a platform difference cannot silently change
    /// where items land in serialized filters.
    #[test]
    fn golden_hash_values() {
        let key: [u8; 16] = core::array::from_fn(|i| i as u8);
        let h = ItemHasher::with_key(key).hash(b"hello");
        assert_eq!((h.h1(), h.h2()), (GOLDEN_H1, GOLDEN_H2));
    }
    const GOLDEN_H1: u64 = 8_061_579_950_767_876_011;
    const GOLDEN_H2: u64 = 5_642_545_901_461_455_909;

    #[test]
    fn reduce_covers_range_beyond_32_bits() {
        let n = 1u64 << 40;
        assert_eq!(reduce(u64::MAX, n), n - 1);
        assert_eq!(reduce(0, n), 0);
        assert_eq!(reduce(1 << 63, n), n / 2);
    }
}
