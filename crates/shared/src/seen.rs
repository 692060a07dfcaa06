//! The seen-test's client half: the sizes its generations grow by, and each URL's probes.
//!
//! The bits live in Redis (`scripts.lua` tests and sets them); their layout is a blocked
//! Bloom filter, sized by the `bloom` crate's model: a URL tests one or two blocks of 512
//! bits, read and written whole (one `GETRANGE` or `SETRANGE` of 64 bytes each), where the
//! unblocked layout cost one `BITFIELD` of some twenty-five bit operations a generation.

use std::hash::Hasher;

use siphasher::sip128::{Hasher128, SipHasher13};

use crate::error::{Error, ErrorKind};

/// Bytes of one block.
pub(crate) const BLOCK_BYTES: u64 = bloom::BLOCK_BITS / 8;
/// The largest chunk key: 8 MiB, allocated at once on its first write, which a server does
/// in a few milliseconds.
const MAX_CHUNK_BYTES: u64 = 1 << 23;
/// The smallest chunk key.
const MIN_CHUNK_BYTES: u64 = 1 << 12;
/// The fewest chunks a first generation is split into when it can be: with eight or more,
/// rounding up to whole chunks costs at most an eighth.
const MIN_CHUNKS: u64 = 8;
/// Each generation holds twice the bytes of the one before, at a tighter rate: generation
/// `i` gets `(1 - TIGHTENING) * TIGHTENING^i` of the target, so that the rates of all of
/// them add up to at most the target.
const TIGHTENING: f64 = 0.85;
/// Generations a bucket may grow to: 2^GENERATIONS times its first one's bytes.
const GENERATIONS: usize = 24;

/// One generation's geometry, as a script stores and uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Generation {
    /// Chunk keys.
    chunks: u64,
    /// Blocks in each chunk.
    blocks: u64,
    /// Probes per URL.
    probes: u32,
    /// Probes in the first block; the rest go to the second.
    first: u32,
    /// URLs it takes before the next generation starts.
    capacity: u64,
}

/// The generations of a bucket's seen-test, computed once from the crawl's layout. Every
/// process of a crawl computes the same; a script stores each generation's geometry when it
/// creates it, so a crawl keeps the sizes it started with.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    /// What the scripts take: "chunks blocks probes first capacity" per generation, `;`
    /// between them.
    text: String,
    /// The most probes any generation makes: how many each URL's probes hold.
    max_probes: u32,
}

impl Schedule {
    /// The schedule of a bucket that should hold at least `capacity` URLs before it first
    /// grows, at `rate` false positives over all its generations. Chunk keys are a power of
    /// two bytes, so that each fills the allocation it gets exactly; the first generation
    /// is as many of them as `capacity` needs, and each next one doubles the bytes (of its
    /// chunks up to 8 MiB, then of their number).
    pub(crate) fn new(capacity: u64, rate: f64) -> Result<Schedule, Error> {
        let bad = |what: String| Error::from(ErrorKind::BadLayout(what));
        let rate_of = |i: usize| rate * (1.0 - TIGHTENING) * TIGHTENING.powi(i as i32);
        let needed = bloom::blocked_params(capacity.max(1), rate_of(0))
            .map_err(|err| bad(format!("the seen-test at {rate}: {err}")))?
            .bits
            / 8;
        let mut chunk = MIN_CHUNK_BYTES;
        while chunk < MAX_CHUNK_BYTES && chunk * 2 * MIN_CHUNKS <= needed {
            chunk *= 2;
        }
        // A chunk's string has a header in its allocation: one block is left for it.
        let usable = |chunk: u64| chunk - BLOCK_BYTES;
        let mut chunks = needed.div_ceil(usable(chunk)).max(1);
        let mut generations = Vec::new();
        for i in 0..GENERATIONS {
            let blocks = usable(chunk) / BLOCK_BYTES;
            let bits = chunks * blocks * bloom::BLOCK_BITS;
            match fit(bits, rate_of(i)) {
                Some((capacity, probes, per_key)) => generations.push(Generation {
                    chunks,
                    blocks,
                    probes,
                    first: if per_key == 2 {
                        probes.div_ceil(2)
                    } else {
                        probes
                    },
                    capacity,
                }),
                None => break,
            }
            if chunk < MAX_CHUNK_BYTES {
                chunk *= 2;
            } else {
                chunks *= 2;
            }
        }
        if generations.is_empty() {
            return Err(bad(format!("no seen-test fits a rate of {rate}")));
        }
        let text = generations
            .iter()
            .map(|g| {
                format!(
                    "{} {} {} {} {}",
                    g.chunks, g.blocks, g.probes, g.first, g.capacity
                )
            })
            .collect::<Vec<_>>()
            .join(";");
        let max_probes = generations.iter().map(|g| g.probes).max().unwrap_or(1);
        Ok(Schedule { text, max_probes })
    }

    /// The schedule as the scripts take it.
    pub(crate) fn text(&self) -> &str {
        &self.text
    }

    /// A URL's probes as the scripts take them: two 32-bit block selectors (big-endian),
    /// then for each probe the byte of the block it tests and the bit in that byte (a power
    /// of two). The positions come from the SipHash of the URL under the crawl's key.
    pub(crate) fn probes(&self, key: &[u8; 16], url: &str) -> Vec<u8> {
        let mut sip = SipHasher13::new_with_key(key);
        sip.write(url.as_bytes());
        let h = sip.finish128();
        let mut out = Vec::with_capacity(8 + 2 * self.max_probes as usize);
        out.extend_from_slice(&(h.h1 as u32).to_be_bytes());
        out.extend_from_slice(&((h.h1 >> 32) as u32).to_be_bytes());
        // Multiples of h2 by successive powers of an odd constant, top 9 bits: positions as
        // independent as the `bloom` crate's model assumes.
        let mut power: u64 = 1;
        for _ in 0..self.max_probes {
            let bit = h.h2.wrapping_mul(power) >> 55;
            out.push((bit >> 3) as u8);
            out.push(1 << (bit & 7));
            power = power.wrapping_mul(0x9e37_79b9_7f4a_7c15);
        }
        out
    }
}

/// The most URLs `bits` hold at `rate`, with the probes and blocks per URL the `bloom`
/// crate's model picks for them; `None` when the bits hold none.
fn fit(bits: u64, rate: f64) -> Option<(u64, u32, u32)> {
    let params = |n: u64| bloom::blocked_params(n, rate).ok();
    // Bits grow in proportion to URLs: a large sample gives the ratio, then a few steps
    // down settle the rounding.
    let sample = 1 << 20;
    let per_url = params(sample)?.bits as f64 / sample as f64;
    let mut n = (bits as f64 / per_url) as u64;
    while n > 0 {
        let p = params(n)?;
        if p.bits <= bits {
            return Some((n, p.hashes, p.blocks_per_key));
        }
        n = n.saturating_sub((n / 1000).max(1));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The generations as the scripts read them.
    fn generations(schedule: &Schedule) -> Vec<Generation> {
        schedule
            .text()
            .split(';')
            .map(|g| {
                let v: Vec<u64> = g.split(' ').map(|n| n.parse().unwrap()).collect();
                Generation {
                    chunks: v[0],
                    blocks: v[1],
                    probes: v[2] as u32,
                    first: v[3] as u32,
                    capacity: v[4],
                }
            })
            .collect()
    }

    #[test]
    fn generations_double_in_bytes_and_keep_the_rate() {
        let schedule = Schedule::new(15_625, 1e-6).unwrap();
        let gens = generations(&schedule);
        assert!(gens.len() > 10);
        let mut total = 0.0;
        for (i, g) in gens.iter().enumerate() {
            let chunk = (g.blocks + 1) * BLOCK_BYTES;
            assert!(chunk.is_power_of_two() && chunk <= MAX_CHUNK_BYTES);
            let bytes = g.chunks * chunk;
            assert_eq!(
                bytes,
                (gens[0].chunks * (gens[0].blocks + 1) * BLOCK_BYTES) << i
            );
            let bits = g.chunks * g.blocks * bloom::BLOCK_BITS;
            let per_key = if g.first == g.probes { 1 } else { 2 };
            total += bloom::blocked_false_positive_rate(bits, g.capacity, g.probes, per_key);
        }
        assert!(total <= 1e-6, "rates add up to {total}");
        // The first generation holds what was asked, and not much more.
        let first = gens[0].capacity;
        assert!((15_625..=15_625 * 9 / 8).contains(&first), "{first}");
    }

    #[test]
    fn a_full_generation_costs_under_five_bytes_a_url() {
        let schedule = Schedule::new(1_000_000, 1e-6).unwrap();
        for g in &generations(&schedule)[..8] {
            let bytes = g.chunks * (g.blocks + 1) * BLOCK_BYTES;
            let per_url = bytes as f64 / g.capacity as f64;
            assert!(per_url < 5.0, "{per_url} bytes a URL in {g:?}");
        }
    }

    #[test]
    fn probes_name_a_byte_and_a_bit_of_a_block() {
        let schedule = Schedule::new(1_000, 1e-6).unwrap();
        let probes = schedule.probes(&[7; 16], "http://example.com/");
        assert_eq!(probes.len(), 8 + 2 * schedule.max_probes as usize);
        for pair in probes[8..].chunks(2) {
            assert!(u64::from(pair[0]) < BLOCK_BYTES);
            assert!(pair[1].is_power_of_two());
        }
        assert_eq!(probes, schedule.probes(&[7; 16], "http://example.com/"));
        assert_ne!(probes, schedule.probes(&[8; 16], "http://example.com/"));
    }
}
