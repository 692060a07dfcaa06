//! Compression of serialized filters for transfer: Golomb-Rice coding of the gaps between set
//! bits.
//!
//! A filter at its design fill has half its bits set, an entropy of one bit per bit, and no
//! encoding can shrink it (Mitzenmacher, "Compressed Bloom Filters", 2002). Sparse filters
//! compress: one sized far beyond its item count, a fold's source before it is folded, or one
//! built sparse on purpose (more bits, fewer hashes) to be sent. For those, the gaps between
//! set bits are close to geometric, which Rice coding encodes within a few percent of the
//! entropy `m H(q)` for a fill `q`. [`compress`] picks the Rice parameter that minimizes the
//! size, and stores the payload unchanged when coding would not gain.
//!
//! The container wraps a serialized filter of any layout:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `BLMZ` |
//! | 4 | 2 | version, 1 |
//! | 6 | 1 | method: 0 stored, 1 Rice-coded gaps |
//! | 7 | 1 | Rice parameter `r` |
//! | 8 | 60 | the filter's header, verbatim |
//! | 68 | 8 | set bits in the payload |
//! | 76 | 8 | coded payload length in bytes |
//! | 84 | 4 | CRC-32C of bytes 0..84 |
//! | 88 | coded length | the coded payload |
//! | end | 4 | the filter's own payload CRC-32C, checked after decoding |
//!
//! Each gap `g` (set bits skipped over, starting from bit 0) is `g >> r` one-bits, a zero-bit,
//! then the low `r` bits of `g`, packed least significant bit first.

use crate::error::{Error, ErrorKind, Result};

const MAGIC: [u8; 4] = *b"BLMZ";
const VERSION: u16 = 1;
const FILTER_HEADER: usize = 60;
const HEADER: usize = 88;
const STORED: u8 = 0;
const RICE: u8 = 1;

/// Compresses a serialized filter (the output of any filter's `to_bytes`) for transfer.
///
/// The result is never more than 32 bytes larger than the input: payloads that coding would
/// not shrink are stored as they are.
///
/// # Errors
///
/// [`ErrorKind::BadMagic`], [`ErrorKind::Truncated`], [`ErrorKind::TrailingBytes`] or
/// [`ErrorKind::ChecksumMismatch`] when `serialized` is not one whole serialized filter;
/// [`ErrorKind::WrongLayout`] for a scalable filter (compress its sub-filters instead).
///
/// # Example
///
/// ```
/// // A filter with room for a million items holding a thousand: 1.6% of its bits set.
/// let mut filter = bloom::BloomFilter::with_bits(1 << 20, 7)?;
/// for i in 0..1_000u32 {
///     filter.insert(i.to_le_bytes());
/// }
/// let bytes = filter.to_bytes();
/// let small = bloom::compress(&bytes)?;
/// assert!(small.len() < bytes.len() / 5);
/// assert_eq!(bloom::decompress(&small, bytes.len())?, bytes);
/// # Ok::<(), bloom::Error>(())
/// ```
pub fn compress(serialized: &[u8]) -> Result<Vec<u8>> {
    let (header, payload, payload_crc) = split(serialized)?;
    let ones: u64 = payload.iter().map(|b| u64::from(b.count_ones())).sum();
    let (method, r, coded) = match best_rice_parameter(payload, ones) {
        Some(r) if rice_bits(payload, r) < payload.len() as u64 * 8 => {
            (RICE, r, rice_encode(payload, r))
        }
        _ => (STORED, 0, payload.to_vec()),
    };
    let mut out = Vec::with_capacity(HEADER + coded.len() + 4);
    out.extend_from_slice(&MAGIC);
    out.extend_from_slice(&VERSION.to_le_bytes());
    out.extend_from_slice(&[method, r]);
    out.extend_from_slice(header);
    out.extend_from_slice(&ones.to_le_bytes());
    out.extend_from_slice(&(coded.len() as u64).to_le_bytes());
    let crc = crc32c::crc32c(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&coded);
    out.extend_from_slice(&payload_crc);
    Ok(out)
}

/// Restores the serialized filter that [`compress`] was given, byte for byte.
///
/// A few bytes of a sparse filter's coding can stand for gigabytes of filter, so the caller
/// states the largest serialized filter it accepts, `max_len` bytes; nothing larger is
/// allocated.
///
/// # Errors
///
/// [`ErrorKind::OverLimit`] beyond `max_len`; [`ErrorKind::OutOfMemory`] when the allocator
/// refuses even that; [`ErrorKind::BadMagic`],
/// [`ErrorKind::UnsupportedVersion`], [`ErrorKind::Truncated`],
/// [`ErrorKind::ChecksumMismatch`], [`ErrorKind::Corrupt`] or [`ErrorKind::TrailingBytes`] for
/// damaged or foreign input.
///
/// # Example
///
/// ```
/// let bytes = bloom::BlockedBloomFilter::new(1_000, 0.01)?.to_bytes();
/// let small = bloom::compress(&bytes)?;
/// assert!(bloom::decompress(&small, 100).is_err()); // over the caller's limit
/// let filter = bloom::BlockedBloomFilter::from_bytes(&bloom::decompress(&small, 1 << 20)?)?;
/// assert_eq!(filter.items(), 0);
/// # Ok::<(), bloom::Error>(())
/// ```
pub fn decompress(compressed: &[u8], max_len: usize) -> Result<Vec<u8>> {
    if compressed.len() < HEADER {
        return Err(ErrorKind::Truncated.into());
    }
    if compressed[0..4] != MAGIC {
        return Err(ErrorKind::BadMagic.into());
    }
    let version = u16::from_le_bytes([compressed[4], compressed[5]]);
    if version != VERSION {
        return Err(ErrorKind::UnsupportedVersion(version).into());
    }
    if u32_at(compressed, 84) != crc32c::crc32c(&compressed[..84]) {
        return Err(ErrorKind::ChecksumMismatch { part: "header" }.into());
    }
    let (method, r) = (compressed[6], compressed[7]);
    let header = &compressed[8..8 + FILTER_HEADER];
    let ones = u64_at(compressed, 68);
    let coded_len = usize::try_from(u64_at(compressed, 76))
        .map_err(|_| Error::from(ErrorKind::Corrupt("coded length")))?;
    // The filter header's own fields: its checksum, then its payload length.
    if u32_at(header, 56) != crc32c::crc32c(&header[..56]) {
        return Err(ErrorKind::ChecksumMismatch { part: "header" }.into());
    }
    let payload_len = u64_at(header, 48);
    let total = payload_len
        .checked_add((FILTER_HEADER + 4) as u64)
        .filter(|&t| t <= max_len as u64)
        .ok_or(ErrorKind::OverLimit {
            bytes: payload_len.saturating_add((FILTER_HEADER + 4) as u64),
            limit: max_len as u64,
        })? as usize;
    let rest = &compressed[HEADER..];
    if rest.len() < coded_len.saturating_add(4) {
        return Err(ErrorKind::Truncated.into());
    }
    if rest.len() > coded_len + 4 {
        return Err(ErrorKind::TrailingBytes(rest.len() - coded_len - 4).into());
    }
    let (coded, payload_crc) = rest.split_at(coded_len);
    let mut out = Vec::new();
    out.try_reserve_exact(total)
        .map_err(|_| ErrorKind::OutOfMemory {
            bytes: total as u64,
        })?;
    out.extend_from_slice(header);
    match method {
        STORED if coded.len() as u64 == payload_len => out.extend_from_slice(coded),
        RICE if r < 64 => {
            out.resize(total - 4, 0);
            rice_decode(coded, r, ones, &mut out[FILTER_HEADER..])?;
        }
        _ => return Err(ErrorKind::Corrupt("unknown compression method or parameter").into()),
    }
    if crc32c::crc32c(&out[FILTER_HEADER..]).to_le_bytes() != payload_crc {
        return Err(ErrorKind::ChecksumMismatch { part: "payload" }.into());
    }
    out.extend_from_slice(payload_crc);
    Ok(out)
}

/// The information-theoretic size, in bits, of a filter of `bits` bits with `set_bits` of them
/// set: `m H(q)` with `q = set_bits / bits` and `H` the binary entropy. No encoding of such
/// filters averages less (Mitzenmacher 2002).
///
/// # Example
///
/// ```
/// assert_eq!(bloom::entropy_bits(1_000, 500), 1_000.0); // half full: incompressible
/// assert!(bloom::entropy_bits(1_000, 10) < 100.0);
/// ```
pub fn entropy_bits(bits: u64, set_bits: u64) -> f64 {
    if bits == 0 || set_bits == 0 || set_bits >= bits {
        return 0.0;
    }
    let q = set_bits as f64 / bits as f64;
    -(bits as f64) * (q * q.log2() + (1.0 - q) * (1.0 - q).log2())
}

/// Splits a serialized filter into its header, payload and payload checksum, checking the
/// header's magic and checksum and that the lengths agree.
fn split(serialized: &[u8]) -> Result<(&[u8], &[u8], [u8; 4])> {
    if serialized.len() < FILTER_HEADER + 4 {
        return Err(ErrorKind::Truncated.into());
    }
    let header = &serialized[..FILTER_HEADER];
    if header[0..4] != *b"BLMF" {
        return Err(ErrorKind::BadMagic.into());
    }
    if u32_at(header, 56) != crc32c::crc32c(&header[..56]) {
        return Err(ErrorKind::ChecksumMismatch { part: "header" }.into());
    }
    // A scalable filter's header (layout 4) describes sub-filters, not a payload: compress
    // each sub-filter's bytes instead.
    if header[6] == 4 {
        return Err(ErrorKind::WrongLayout {
            expected: "single (not scalable)",
            found: header[6],
        }
        .into());
    }
    let payload_len = u64_at(header, 48);
    let rest = &serialized[FILTER_HEADER..];
    if (rest.len() as u64) < payload_len.saturating_add(4) {
        return Err(ErrorKind::Truncated.into());
    }
    if rest.len() as u64 > payload_len + 4 {
        return Err(ErrorKind::TrailingBytes(rest.len() - payload_len as usize - 4).into());
    }
    let (payload, crc) = rest.split_at(payload_len as usize);
    if crc32c::crc32c(payload).to_le_bytes() != crc {
        return Err(ErrorKind::ChecksumMismatch { part: "payload" }.into());
    }
    Ok((header, payload, crc.try_into().expect("4 bytes")))
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

/// Positions of the set bits of `payload`, in order (bit `i` is bit `i % 8` of byte `i / 8`).
fn set_bits(payload: &[u8]) -> impl Iterator<Item = u64> + '_ {
    payload.chunks(8).enumerate().flat_map(|(w, chunk)| {
        let mut word = [0u8; 8];
        word[..chunk.len()].copy_from_slice(chunk);
        let mut word = u64::from_le_bytes(word);
        std::iter::from_fn(move || {
            (word != 0).then(|| {
                let bit = word.trailing_zeros();
                word &= word - 1;
                w as u64 * 64 + u64::from(bit)
            })
        })
    })
}

/// Gaps between set bits: the clear bits before each one.
fn gaps(payload: &[u8]) -> impl Iterator<Item = u64> + '_ {
    let mut next = 0;
    set_bits(payload).map(move |p| {
        let gap = p - next;
        next = p + 1;
        gap
    })
}

/// Coded size in bits with parameter `r`.
fn rice_bits(payload: &[u8], r: u8) -> u64 {
    gaps(payload).map(|g| (g >> r) + 1 + u64::from(r)).sum()
}

/// The Rice parameter that minimizes the coded size, searched around the optimum for
/// geometric gaps (`2^r` near `ln 2` times the mean gap); `None` for an empty payload.
fn best_rice_parameter(payload: &[u8], ones: u64) -> Option<u8> {
    if ones == 0 {
        return None;
    }
    let mean_gap = (payload.len() as f64 * 8.0 - ones as f64) / ones as f64;
    let guess = (mean_gap * std::f64::consts::LN_2).max(1.0).log2().floor() as i32;
    (guess - 1..=guess + 1)
        .filter(|r| (0..=62).contains(r))
        .map(|r| r as u8)
        .min_by_key(|&r| rice_bits(payload, r))
}

fn rice_encode(payload: &[u8], r: u8) -> Vec<u8> {
    let mut out = BitWriter::default();
    for gap in gaps(payload) {
        out.ones(gap >> r);
        out.bits(0, 1);
        out.bits(gap & ((1u64 << r) - 1), r);
    }
    out.finish()
}

/// Decodes `ones` gaps into `payload` (all zero on entry). Every length is checked against
/// the payload, so hostile input ends in an error, not a panic or a long loop.
fn rice_decode(coded: &[u8], r: u8, ones: u64, payload: &mut [u8]) -> Result<()> {
    let corrupt = || Error::from(ErrorKind::Corrupt("coded payload does not fit the filter"));
    let bits = payload.len() as u64 * 8;
    if ones > bits {
        return Err(corrupt());
    }
    let mut input = BitReader::new(coded);
    let mut next = 0u64;
    for _ in 0..ones {
        let high = input.unary(bits).ok_or_else(corrupt)?;
        let low = input.bits(r).ok_or_else(corrupt)?;
        let gap = high
            .checked_shl(u32::from(r))
            .filter(|g| g >> r == high)
            .ok_or_else(corrupt)?
            | low;
        let position = next
            .checked_add(gap)
            .filter(|&p| p < bits)
            .ok_or_else(corrupt)?;
        payload[(position / 8) as usize] |= 1 << (position % 8);
        next = position + 1;
    }
    if !input.rest_is_padding() {
        return Err(corrupt());
    }
    Ok(())
}

/// Appends bits least significant first.
#[derive(Default)]
struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    filled: u32,
}

impl BitWriter {
    fn bits(&mut self, value: u64, count: u8) {
        let mut value = value;
        let mut count = u32::from(count);
        while count > 0 {
            let take = count.min(64 - self.filled);
            let part = if take == 64 {
                value
            } else {
                value & ((1 << take) - 1)
            };
            self.acc |= part << self.filled;
            self.filled += take;
            value = value.checked_shr(take).unwrap_or(0);
            count -= take;
            if self.filled == 64 {
                self.out.extend_from_slice(&self.acc.to_le_bytes());
                (self.acc, self.filled) = (0, 0);
            }
        }
    }

    fn ones(&mut self, mut count: u64) {
        while count >= 32 {
            self.bits(u64::from(u32::MAX), 32);
            count -= 32;
        }
        self.bits((1 << count) - 1, count as u8);
    }

    fn finish(mut self) -> Vec<u8> {
        let bytes = self.filled.div_ceil(8) as usize;
        self.out.extend_from_slice(&self.acc.to_le_bytes()[..bytes]);
        self.out
    }
}

/// Reads bits least significant first.
struct BitReader<'a> {
    input: &'a [u8],
    /// Bits consumed so far.
    pos: u64,
}

impl<'a> BitReader<'a> {
    fn new(input: &'a [u8]) -> Self {
        BitReader { input, pos: 0 }
    }

    fn bit(&mut self) -> Option<bool> {
        let byte = *self.input.get((self.pos / 8) as usize)?;
        let bit = byte >> (self.pos % 8) & 1 == 1;
        self.pos += 1;
        Some(bit)
    }

    /// One-bits up to the next zero-bit; `None` past the input or beyond `limit`.
    fn unary(&mut self, limit: u64) -> Option<u64> {
        let mut count = 0;
        while self.bit()? {
            count += 1;
            if count > limit {
                return None;
            }
        }
        Some(count)
    }

    fn bits(&mut self, count: u8) -> Option<u64> {
        let mut value = 0;
        for i in 0..count {
            value |= u64::from(self.bit()?) << i;
        }
        Some(value)
    }

    /// Whether only the zero padding of the last byte remains.
    fn rest_is_padding(&mut self) -> bool {
        let end = self.input.len() as u64 * 8;
        end - self.pos < 8 && (self.pos..end).all(|_| self.bit() == Some(false))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bit_writer_and_reader_agree() {
        let mut w = BitWriter::default();
        w.bits(0b101, 3);
        w.ones(70);
        w.bits(0, 1);
        w.bits(u64::MAX, 64);
        w.bits(0x1234, 13);
        let bytes = w.finish();
        let mut r = BitReader::new(&bytes);
        assert_eq!(r.bits(3), Some(0b101));
        assert_eq!(r.unary(1000), Some(70));
        assert_eq!(r.bits(64), Some(u64::MAX));
        assert_eq!(r.bits(13), Some(0x1234 & 0x1fff));
        assert!(r.rest_is_padding());
    }

    #[test]
    fn entropy_matches_the_binary_entropy() {
        assert!((entropy_bits(1000, 110) - 1000.0 * 0.4999).abs() < 1.0);
        assert_eq!(entropy_bits(10, 0), 0.0);
        assert_eq!(entropy_bits(10, 10), 0.0);
    }
}
