//! Sizing math: bits and hashes from the expected item count and target rate, and the rate a
//! given filter will have.
//!
//! Standard layout (Bloom 1970; Kirsch and Mitzenmacher 2006 for double hashing):
//!
//! * bits `m = -n ln p / (ln 2)^2`
//! * hashes `k = round((m / n) ln 2)`, at least 1
//! * false-positive rate after `n` insertions `f = (1 - e^(-kn/m))^k`
//! * capacity for a rate `n = m (ln 2)^2 / -ln p`
//!
//! Blocked layout (Putze, Sanders and Singler 2009): each item's probes fall in one (or two)
//! 512-bit blocks. The number of items landing in a block is Poisson with mean
//! `λ = b n / (m / 512)` for `b` blocks per item, so
//! `f = (Σ_i Pois(λ; i) (1 - (1 - 1/512)^(i k/b))^(k/b))^b`. Overfull blocks dominate that sum,
//! which is why blocking costs more bits as `p` falls; [`blocked_params`] finds the fewest bits
//! that still meet `p` and picks two blocks per item when one would cost more than 10% extra.

use std::f64::consts::LN_2;

use crate::error::{Error, ErrorKind, Result};

/// The largest filter this crate will build: 2^40 bits (128 GiB).
///
/// Anything larger is almost certainly a mistake in the parameters (or a hostile serialized
/// header), so it is refused with [`ErrorKind::TooLarge`] instead of being allocated.
///
/// # Example
///
/// ```
/// assert_eq!(bloom::MAX_BITS, 1 << 40);
/// ```
pub const MAX_BITS: u64 = 1 << 40;

/// The most hash functions (probes per item) a filter may use.
///
/// 64 probes at the optimum give a rate near 5e-20; asking for more is refused with
/// [`ErrorKind::TooManyHashes`].
///
/// # Example
///
/// ```
/// assert!(bloom::optimal_hashes(1_000_000, 1).is_err());
/// assert_eq!(bloom::MAX_HASHES, 64);
/// ```
pub const MAX_HASHES: u32 = 64;

/// Bits in one block of the blocked layouts: one 64-byte cache line.
///
/// # Example
///
/// ```
/// assert_eq!(bloom::BLOCK_BITS, 512);
/// ```
pub const BLOCK_BITS: u64 = 512;

fn check_rate(p: f64) -> Result<()> {
    // Written so that NaN fails too.
    if p > 0.0 && p < 1.0 {
        Ok(())
    } else {
        Err(ErrorKind::InvalidFalsePositiveRate(p).into())
    }
}

fn check_items(items: u64) -> Result<()> {
    if items == 0 {
        Err(ErrorKind::ZeroItems.into())
    } else {
        Ok(())
    }
}

fn bits_from_f64(bits: f64) -> Result<u64> {
    let bits = bits.ceil().max(1.0);
    if bits > MAX_BITS as f64 {
        return Err(ErrorKind::TooLarge { bits }.into());
    }
    Ok(bits as u64)
}

/// Bits per item a standard filter needs for rate `p`: `-ln p / (ln 2)^2`.
fn standard_bits_per_item(p: f64) -> f64 {
    -p.ln() / (LN_2 * LN_2)
}

/// Bits `m = ceil(-n ln p / (ln 2)^2)` for a standard filter holding `items` at rate `p`.
///
/// # Errors
///
/// [`ErrorKind::InvalidFalsePositiveRate`] unless `0 < p < 1`, [`ErrorKind::ZeroItems`] for
/// `items == 0`, [`ErrorKind::TooLarge`] beyond [`MAX_BITS`].
///
/// # Example
///
/// ```
/// // 1% needs 9.59 bits per item.
/// assert_eq!(bloom::optimal_bits(1_000, 0.01).unwrap(), 9_586);
/// assert!(bloom::optimal_bits(1_000, f64::NAN).is_err());
/// ```
pub fn optimal_bits(items: u64, false_positive_rate: f64) -> Result<u64> {
    check_rate(false_positive_rate)?;
    check_items(items)?;
    bits_from_f64(items as f64 * standard_bits_per_item(false_positive_rate))
}

/// Hashes `k = round((m / n) ln 2)`, at least 1, for `bits` holding `items`.
///
/// # Errors
///
/// [`ErrorKind::ZeroBits`], [`ErrorKind::ZeroItems`], or [`ErrorKind::TooManyHashes`] when the
/// ratio calls for more than [`MAX_HASHES`].
///
/// # Example
///
/// ```
/// assert_eq!(bloom::optimal_hashes(9_586, 1_000).unwrap(), 7);
/// assert_eq!(bloom::optimal_hashes(1, 1_000).unwrap(), 1);
/// ```
pub fn optimal_hashes(bits: u64, items: u64) -> Result<u32> {
    if bits == 0 {
        return Err(ErrorKind::ZeroBits.into());
    }
    check_items(items)?;
    let k = (bits as f64 / items as f64 * LN_2).round().max(1.0);
    if k > f64::from(MAX_HASHES) {
        return Err(ErrorKind::TooManyHashes(k as u64).into());
    }
    Ok(k as u32)
}

/// The rate `f = (1 - e^(-kn/m))^k` of a standard filter with `bits`, `hashes`, after `items`
/// distinct insertions.
///
/// Degenerate inputs give the honest limit: no bits or no hashes means every query answers
/// "present" (1.0); no items means nothing can be a false positive (0.0).
///
/// # Example
///
/// ```
/// let f = bloom::false_positive_rate(9_586, 1_000, 7);
/// assert!((f - 0.01).abs() < 0.0005);
/// ```
pub fn false_positive_rate(bits: u64, items: u64, hashes: u32) -> f64 {
    standard_rate(bits, items as f64, hashes)
}

pub(crate) fn standard_rate(bits: u64, items: f64, hashes: u32) -> f64 {
    if bits == 0 || hashes == 0 {
        return 1.0;
    }
    let x = f64::from(hashes) * items / bits as f64;
    // 1 - e^(-x) loses precision for small x; exp_m1 keeps it.
    (-(-x).exp_m1()).powi(hashes as i32)
}

/// How many items a standard filter of `bits` holds at rate `p`: `m (ln 2)^2 / -ln p`,
/// rounded down. (A filter's own [`Filter::capacity`](crate::Filter::capacity) is its
/// half-fill load instead, whatever the rate.)
///
/// # Errors
///
/// [`ErrorKind::InvalidFalsePositiveRate`] unless `0 < p < 1`, [`ErrorKind::ZeroBits`].
///
/// # Example
///
/// ```
/// assert_eq!(bloom::capacity(9_586, 0.01).unwrap(), 1_000);
/// ```
pub fn capacity(bits: u64, false_positive_rate: f64) -> Result<u64> {
    check_rate(false_positive_rate)?;
    if bits == 0 {
        return Err(ErrorKind::ZeroBits.into());
    }
    // A hair of slack so that capacity(optimal_bits(n, p), p) == n despite the ceil.
    Ok((bits as f64 / standard_bits_per_item(false_positive_rate) + 1e-9).floor() as u64)
}

/// The number of distinct items in a filter, estimated from its set bits (Swamidass and Baldi
/// 2007): `n = -(m / k) ln(1 - X / m)` for `X` of `m` bits set with `k` hashes.
///
/// Infinite once every bit is set; 0 for a filter with no bits or hashes.
///
/// # Example
///
/// ```
/// // Half the bits set with the optimal k: the filter is at capacity.
/// let n = bloom::estimated_items(9_586, 7, 4_793);
/// assert!((n - 949.0).abs() < 1.0);
/// ```
pub fn estimated_items(bits: u64, hashes: u32, set_bits: u64) -> f64 {
    if bits == 0 || hashes == 0 {
        return 0.0;
    }
    let fill = set_bits.min(bits) as f64 / bits as f64;
    -(bits as f64 / f64::from(hashes)) * (-fill).ln_1p()
}

/// Sizing of a blocked filter, as chosen by [`blocked_params`].
///
/// # Example
///
/// ```
/// let params = bloom::blocked_params(1_000_000, 1e-6).unwrap();
/// assert_eq!(params.blocks_per_key, 2);
/// assert_eq!(params.bits % bloom::BLOCK_BITS, 0);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockedParams {
    /// Total bits, a multiple of [`BLOCK_BITS`].
    pub bits: u64,
    /// Probes per item, across all of its blocks.
    pub hashes: u32,
    /// Blocks each item touches: 1, or 2 when one block would waste too many bits.
    pub blocks_per_key: u32,
}

/// The most extra bits, relative to a standard filter, that one block per item may cost before
/// two blocks per item are used instead.
const ONE_BLOCK_MAX_OVERHEAD: f64 = 0.10;

/// Bits, hashes and blocks per item for a blocked filter holding `items` at rate `p`.
///
/// Searches the Poisson block model (see the module docs) for the fewest bits per item that
/// meet `p`, with the hash count that minimizes the rate. One block per item costs about +3%
/// bits at 1e-2 but +14% at 1e-4 and +34% at 1e-6; when it would cost more than 10%, two blocks
/// per item (about +3% at 1e-4, +8% at 1e-6) are chosen instead.
///
/// # Errors
///
/// As [`optimal_bits`].
///
/// # Example
///
/// ```
/// let p = bloom::blocked_params(1_000_000, 0.01).unwrap();
/// assert_eq!(p.blocks_per_key, 1);
/// let rate = bloom::blocked_false_positive_rate(p.bits, 1_000_000, p.hashes, p.blocks_per_key);
/// assert!(rate <= 0.01);
/// ```
pub fn blocked_params(items: u64, false_positive_rate: f64) -> Result<BlockedParams> {
    let p = false_positive_rate;
    // Validates p and items and the size of the unblocked equivalent.
    optimal_bits(items, p)?;
    let standard = standard_bits_per_item(p);
    let one = min_bits_per_item(p, 1)?;
    if one <= standard * (1.0 + ONE_BLOCK_MAX_OVERHEAD) {
        return finish_blocked(items, one, 1);
    }
    match min_bits_per_item(p, 2) {
        Ok(two) if two < one => finish_blocked(items, two, 2),
        _ => finish_blocked(items, one, 1),
    }
}

/// [`blocked_params`] with the number of blocks per item fixed by the caller.
pub(crate) fn blocked_params_with_blocks(
    items: u64,
    false_positive_rate: f64,
    blocks_per_key: u32,
) -> Result<BlockedParams> {
    optimal_bits(items, false_positive_rate)?;
    let per_item = min_bits_per_item(false_positive_rate, blocks_per_key)?;
    finish_blocked(items, per_item, blocks_per_key)
}

fn finish_blocked(items: u64, bits_per_item: f64, blocks_per_key: u32) -> Result<BlockedParams> {
    let blocks = (items as f64 * bits_per_item / BLOCK_BITS as f64)
        .ceil()
        .max(1.0);
    let bits = bits_from_f64(blocks * BLOCK_BITS as f64)?;
    let hashes = best_blocked_hashes(bits, items as f64, blocks_per_key).0;
    Ok(BlockedParams {
        bits,
        hashes,
        blocks_per_key,
    })
}

/// The modelled rate of a blocked filter with `bits`, `hashes` probes per item over
/// `blocks_per_key` blocks, after `items` distinct insertions.
///
/// Like [`false_positive_rate`], degenerate inputs give the honest limit (1.0 when no block or
/// no hash exists, 0.0 with no items). `blocks_per_key` other than 1 or 2 gives 1.0.
///
/// # Example
///
/// ```
/// // One block per item costs accuracy at equal size:
/// let blocked = bloom::blocked_false_positive_rate(9_728, 1_000, 7, 1);
/// let standard = bloom::false_positive_rate(9_728, 1_000, 7);
/// assert!(blocked > standard);
/// ```
pub fn blocked_false_positive_rate(bits: u64, items: u64, hashes: u32, blocks_per_key: u32) -> f64 {
    blocked_rate(bits, items as f64, hashes, blocks_per_key)
}

pub(crate) fn blocked_rate(bits: u64, items: f64, hashes: u32, blocks_per_key: u32) -> f64 {
    let blocks = bits / BLOCK_BITS;
    if blocks == 0 || hashes == 0 || !(1..=2).contains(&blocks_per_key) {
        return 1.0;
    }
    let per_block = f64::from(blocks_per_key) * items / blocks as f64;
    per_item_rate(per_block, hashes, blocks_per_key)
}

/// Rate of an item whose `hashes` probes spread over `b` blocks, each block holding on average
/// `per_block` items.
fn per_item_rate(per_block: f64, hashes: u32, b: u32) -> f64 {
    let probes_per_item = f64::from(hashes) / f64::from(b);
    let (first, second) = split_probes(hashes, b);
    let mut rate = block_rate(per_block, probes_per_item, first);
    if second > 0 {
        rate *= block_rate(per_block, probes_per_item, second);
    }
    rate
}

/// How `hashes` probes split between `b` blocks: the first block takes the odd one.
pub(crate) fn split_probes(hashes: u32, b: u32) -> (u32, u32) {
    if b == 2 {
        (hashes.div_ceil(2), hashes / 2)
    } else {
        (hashes, 0)
    }
}

/// `Σ_i Pois(λ; i) (1 - (1 - 1/B)^(i c))^q`: the chance that `q` probes all hit set bits in a
/// block whose load is Poisson with mean `λ` items of `c` probes each.
fn block_rate(lambda: f64, probes_per_item: f64, query_probes: u32) -> f64 {
    if lambda <= 0.0 {
        return 0.0;
    }
    let ln_miss = (1.0 - 1.0 / BLOCK_BITS as f64).ln();
    let full = |load: f64| (-(load * probes_per_item * ln_miss).exp_m1()).powi(query_probes as i32);
    if lambda > 1e5 {
        // Hopelessly overfull blocks: the Poisson spread no longer matters.
        return full(lambda);
    }
    let spread = 10.0 * lambda.sqrt() + 25.0;
    let lo = (lambda - spread).max(0.0).floor() as u64;
    let hi = (lambda + spread).ceil() as u64;
    // ln Pois(λ; lo) = -λ + lo ln λ - ln(lo!)
    let ln_lambda = lambda.ln();
    let ln_fact: f64 = (2..=lo).map(|j| (j as f64).ln()).sum();
    let mut ln_pmf = -lambda + lo as f64 * ln_lambda - ln_fact;
    let mut sum = 0.0;
    for i in lo..=hi {
        sum += ln_pmf.exp() * full(i as f64);
        ln_pmf += ln_lambda - ((i + 1) as f64).ln();
    }
    sum.min(1.0)
}

/// The hash count (a multiple of `b`) minimizing the modelled rate, and that rate.
fn best_blocked_hashes(bits: u64, items: f64, b: u32) -> (u32, f64) {
    let per_block = f64::from(b) * items / (bits / BLOCK_BITS) as f64;
    best_hashes_for_load(per_block, b)
}

fn best_hashes_for_load(per_block: f64, b: u32) -> (u32, f64) {
    let mut best = (b, per_item_rate(per_block, b, b));
    let mut k = 2 * b;
    // The rate is unimodal in k: stop at the first rise.
    while k <= MAX_HASHES {
        let rate = per_item_rate(per_block, k, b);
        if rate >= best.1 {
            break;
        }
        best = (k, rate);
        k += b;
    }
    best
}

/// The fewest bits per item at which a blocked layout with `b` blocks per item reaches `p`.
fn min_bits_per_item(p: f64, b: u32) -> Result<f64> {
    let rate_at = |bits_per_item: f64| {
        let per_block = f64::from(b) * BLOCK_BITS as f64 / bits_per_item;
        best_hashes_for_load(per_block, b).1
    };
    let mut lo = standard_bits_per_item(p);
    let mut hi = lo * 1.25 + 1.0;
    while rate_at(hi) > p {
        lo = hi;
        hi *= 1.5;
        if hi > 64.0 * standard_bits_per_item(p) + 1024.0 {
            return Err(Error::new(ErrorKind::TooManyHashes(
                u64::from(MAX_HASHES) + 1,
            )));
        }
    }
    while hi - lo > 1e-3 {
        let mid = (lo + hi) / 2.0;
        if rate_at(mid) > p {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    Ok(hi)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn standard_formulas_match_textbook_values() {
        // 1% -> 9.585 bits/item, k = 7; 1e-6 -> 28.76 bits/item, k = 20.
        let m = optimal_bits(1_000_000, 0.01).unwrap();
        assert_eq!(m, 9_585_059);
        assert_eq!(optimal_hashes(m, 1_000_000).unwrap(), 7);
        let m = optimal_bits(1_000_000, 1e-6).unwrap();
        assert_eq!(m, 28_755_176);
        assert_eq!(optimal_hashes(m, 1_000_000).unwrap(), 20);
        let f = false_positive_rate(m, 1_000_000, 20);
        assert!((f / 1e-6 - 1.0).abs() < 0.01, "{f}");
    }

    #[test]
    fn capacity_inverts_optimal_bits() {
        for &p in &[0.1, 0.01, 1e-4, 1e-6, 1e-9] {
            for &n in &[1u64, 7, 1_000, 123_456, 10_000_000] {
                let m = optimal_bits(n, p).unwrap();
                assert_eq!(capacity(m, p).unwrap(), n, "n={n} p={p}");
            }
        }
    }

    #[test]
    fn degenerate_parameters_are_errors() {
        for p in [
            0.0,
            1.0,
            -0.5,
            2.0,
            f64::NAN,
            f64::INFINITY,
            f64::NEG_INFINITY,
        ] {
            assert!(matches!(
                optimal_bits(10, p).unwrap_err().kind(),
                ErrorKind::InvalidFalsePositiveRate(_)
            ));
            assert!(capacity(10, p).is_err());
            assert!(blocked_params(10, p).is_err());
        }
        assert!(matches!(
            optimal_bits(0, 0.01).unwrap_err().kind(),
            ErrorKind::ZeroItems
        ));
        assert!(matches!(
            optimal_bits(u64::MAX, 1e-9).unwrap_err().kind(),
            ErrorKind::TooLarge { .. }
        ));
        assert!(matches!(
            optimal_bits(10, f64::MIN_POSITIVE).map(|m| optimal_hashes(m, 10)),
            Ok(Err(_))
        ));
        assert!(blocked_params(10, f64::MIN_POSITIVE).is_err());
        assert!(optimal_hashes(0, 1).is_err());
        assert!(optimal_hashes(1, 0).is_err());
        assert_eq!(false_positive_rate(0, 10, 3), 1.0);
        assert_eq!(false_positive_rate(10, 10, 0), 1.0);
        assert_eq!(false_positive_rate(10, 0, 3), 0.0);
    }

    #[test]
    fn blocked_model_reproduces_published_overheads() {
        // Research note, table 7.3: one 512-bit block costs about +3% at 1e-2, +14% at 1e-4,
        // +34% at 1e-6; two blocks +3% at 1e-4 and +8% at 1e-6.
        let overhead =
            |p: f64, b| min_bits_per_item(p, b).unwrap() / standard_bits_per_item(p) - 1.0;
        let close = |got: f64, want: f64| (got - want).abs() < 0.025;
        assert!(close(overhead(1e-2, 1), 0.03), "{}", overhead(1e-2, 1));
        assert!(close(overhead(1e-4, 1), 0.14), "{}", overhead(1e-4, 1));
        assert!(close(overhead(1e-6, 1), 0.34), "{}", overhead(1e-6, 1));
        assert!(close(overhead(1e-4, 2), 0.03), "{}", overhead(1e-4, 2));
        assert!(close(overhead(1e-6, 2), 0.08), "{}", overhead(1e-6, 2));
    }

    #[test]
    fn blocked_params_pick_blocks_from_the_rate() {
        assert_eq!(blocked_params(1_000_000, 1e-2).unwrap().blocks_per_key, 1);
        assert_eq!(blocked_params(1_000_000, 1e-3).unwrap().blocks_per_key, 1);
        assert_eq!(blocked_params(1_000_000, 1e-4).unwrap().blocks_per_key, 2);
        assert_eq!(blocked_params(1_000_000, 1e-6).unwrap().blocks_per_key, 2);
        for &p in &[1e-2, 1e-4, 1e-6] {
            let params = blocked_params(1_000_000, p).unwrap();
            let rate = blocked_false_positive_rate(
                params.bits,
                1_000_000,
                params.hashes,
                params.blocks_per_key,
            );
            assert!(rate <= p && rate > p * 0.8, "p={p} rate={rate}");
        }
    }

    #[test]
    fn tiny_filters_get_one_block() {
        let params = blocked_params(1, 0.5).unwrap();
        assert_eq!(params.bits, BLOCK_BITS);
        assert!(params.hashes >= 1);
    }
}
