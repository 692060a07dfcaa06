//! The set that seed hosts and domains are looked up in, once or more per URL checked.

use std::collections::HashSet;
use std::hash::{BuildHasherDefault, Hasher};

/// Seed host keys or registrable domains.
///
/// Hashed with FNV-1a rather than the standard SipHash, which is several times slower on
/// keys this short and only needed where an attacker chooses what is inserted: here only the
/// seeds are, and the hosts of crawled URLs are only looked up.
pub(super) type HostSet = HashSet<Box<str>, BuildHasherDefault<Fnv1a>>;

/// The 64-bit FNV-1a hash, with its high bits folded into the low ones: the table picks
/// buckets by the low bits, which in FNV depend only on the low bits of each byte.
pub(super) struct Fnv1a(u64);

impl Default for Fnv1a {
    fn default() -> Self {
        Fnv1a(0xcbf2_9ce4_8422_2325)
    }
}

impl Hasher for Fnv1a {
    fn write(&mut self, bytes: &[u8]) {
        for &byte in bytes {
            self.0 = (self.0 ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3);
        }
    }

    fn finish(&self) -> u64 {
        self.0 ^ (self.0 >> 32)
    }
}
