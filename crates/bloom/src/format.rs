//! The serialized form, version 1. Every integer is little-endian.
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 4 | magic `BLMF` |
//! | 4 | 2 | format version, 1 |
//! | 6 | 1 | layout: 1 standard, 2 blocked (512-bit blocks; also the atomic filter's), 3 counting |
//! | 7 | 1 | hash: 1 = SipHash-1-3, 128-bit output, double hashing as in this crate |
//! | 8 | 16 | SipHash key |
//! | 24 | 8 | bits `m` (counters, for the counting layout) |
//! | 32 | 4 | hashes `k` (probes per item) |
//! | 36 | 1 | blocks per item (0 for the standard layout); counter width `w` in bits, 4 or 8, for the counting layout |
//! | 37 | 3 | reserved, zero |
//! | 40 | 8 | items inserted (inserts that reported a new item; counting layout: inserts less removals, at most the sum of the counters) |
//! | 48 | 8 | payload length in bytes |
//! | 56 | 4 | CRC-32C of bytes 0..56 |
//! | 60 | payload length | the bit array as 64-bit words; bit `i` is bit `i % 64` of word `i / 64` |
//! | end | 4 | CRC-32C of the payload |
//!
//! The counting layout stores `m` counters of `w` bits instead of bits, packed into
//! `ceil(m w / 64)` 64-bit words: counter `i` is bits `(w i) % 64 ..` of word `(w i) / 64`, and
//! the bits past the last counter are zero; `m w` is at most 2^40. Its probe positions are the standard layout's, so
//! a counter is nonzero exactly where the equivalent standard filter has a bit set.
//!
//! The header has its own checksum so that a damaged size field is caught before any payload is
//! read, and the payload is read in growing chunks so that a header claiming a huge filter
//! costs only memory in proportion to the bytes that actually follow it.
//!
//! A scalable filter (layout 4) is a 60-byte header followed by its sub-filters, each a
//! complete blocked filter as above, oldest first:
//!
//! | offset | size | field |
//! |---|---|---|
//! | 0 | 6 | magic `BLMF`, version 1, as above |
//! | 6 | 1 | layout: 4 scalable |
//! | 7 | 1 | hash: 1 |
//! | 8 | 16 | SipHash key, shared by every sub-filter |
//! | 24 | 8 | initial capacity |
//! | 32 | 8 | target rate, IEEE 754 binary64 |
//! | 40 | 8 | tightening ratio, binary64 |
//! | 48 | 4 | growth factor |
//! | 52 | 4 | number of sub-filters |
//! | 56 | 4 | CRC-32C of bytes 0..56 |
//!
//! Compatibility promise: a future version of this crate reads every version-1 filter and
//! answers the same for every item; golden-byte tests pin the format.

use std::io::{Read, Write};

use crate::error::{ErrorKind, Result};
use crate::sizing::{BLOCK_BITS, MAX_BITS, MAX_HASHES};

const MAGIC: [u8; 4] = *b"BLMF";
const VERSION: u16 = 1;
const HEADER_LEN: usize = 60;
const HASH_SIPHASH13_128: u8 = 1;
/// The largest payload read and write: 1 MiB.
const MAX_CHUNK: usize = 1 << 20;
/// The first payload read: 64 KiB.
const MIN_CHUNK: usize = 1 << 16;

/// The layouts the format knows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// [`crate::BloomFilter`].
    Standard,
    /// [`crate::BlockedBloomFilter`] and [`crate::AtomicBloomFilter`].
    Blocked,
    /// [`crate::CountingBloomFilter`]; the header's `blocks_per_key` holds the counter width.
    Counting,
}

impl Layout {
    fn id(self) -> u8 {
        match self {
            Layout::Standard => 1,
            Layout::Blocked => 2,
            Layout::Counting => 3,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Layout::Standard => "standard",
            Layout::Blocked => "blocked",
            Layout::Counting => "counting",
        }
    }

    /// The payload size in 64-bit words for `bits`, in the bit-array layouts.
    fn words(self, bits: u64) -> u64 {
        debug_assert_ne!(
            self,
            Layout::Counting,
            "counting payloads depend on the width"
        );
        bits.div_ceil(64)
    }
}

/// The decoded, validated header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header {
    pub(crate) layout: Layout,
    pub(crate) key: [u8; 16],
    pub(crate) bits: u64,
    pub(crate) hashes: u32,
    pub(crate) blocks_per_key: u32,
    pub(crate) items: u64,
}

impl Header {
    /// The payload size in 64-bit words. Cannot overflow: `bits` is at most
    /// [`MAX_BITS`] and a width at most 255 on every path that gets here.
    fn payload_words(&self) -> u64 {
        match self.layout {
            Layout::Counting => (self.bits * u64::from(self.blocks_per_key)).div_ceil(64),
            layout => layout.words(self.bits),
        }
    }

    fn encode(&self) -> [u8; HEADER_LEN] {
        let mut out = [0u8; HEADER_LEN];
        out[0..4].copy_from_slice(&MAGIC);
        out[4..6].copy_from_slice(&VERSION.to_le_bytes());
        out[6] = self.layout.id();
        out[7] = HASH_SIPHASH13_128;
        out[8..24].copy_from_slice(&self.key);
        out[24..32].copy_from_slice(&self.bits.to_le_bytes());
        out[32..36].copy_from_slice(&self.hashes.to_le_bytes());
        // Validated on every path that builds a header: blocks per item 0, 1 or 2, or a
        // counter width of 4 or 8.
        out[36] = self.blocks_per_key as u8;
        out[40..48].copy_from_slice(&self.items.to_le_bytes());
        let payload = self.payload_words() * 8;
        out[48..56].copy_from_slice(&payload.to_le_bytes());
        let crc = crc32c::crc32c(&out[..56]);
        out[56..60].copy_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode(raw: &[u8; HEADER_LEN], expected: Layout) -> Result<Header> {
        let u64_at = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"));
        if raw[0..4] != MAGIC {
            return Err(ErrorKind::BadMagic.into());
        }
        let version = u16::from_le_bytes([raw[4], raw[5]]);
        if version != VERSION {
            return Err(ErrorKind::UnsupportedVersion(version).into());
        }
        let crc = u32::from_le_bytes(raw[56..60].try_into().expect("4 bytes"));
        if crc != crc32c::crc32c(&raw[..56]) {
            return Err(ErrorKind::ChecksumMismatch { part: "header" }.into());
        }
        if raw[6] != expected.id() {
            return Err(ErrorKind::WrongLayout {
                expected: expected.name(),
                found: raw[6],
            }
            .into());
        }
        if raw[7] != HASH_SIPHASH13_128 {
            return Err(ErrorKind::UnknownHash(raw[7]).into());
        }
        if raw[37..40] != [0, 0, 0] {
            return Err(ErrorKind::Corrupt("reserved header bytes are not zero").into());
        }
        let header = Header {
            layout: expected,
            key: raw[8..24].try_into().expect("16 bytes"),
            bits: u64_at(24),
            hashes: u32::from_le_bytes(raw[32..36].try_into().expect("4 bytes")),
            blocks_per_key: u32::from(raw[36]),
            items: u64_at(40),
        };
        if header.bits == 0 || header.bits > MAX_BITS {
            return Err(ErrorKind::Corrupt("bit count is zero or beyond the maximum").into());
        }
        if header.hashes == 0 || header.hashes > MAX_HASHES {
            return Err(ErrorKind::Corrupt("hash count is zero or beyond the maximum").into());
        }
        match expected {
            Layout::Standard if header.blocks_per_key != 0 => {
                return Err(ErrorKind::Corrupt("standard filter with blocks per item").into());
            }
            Layout::Blocked
                if !header.bits.is_multiple_of(BLOCK_BITS)
                    || !(1..=2).contains(&header.blocks_per_key)
                    || header.hashes < header.blocks_per_key =>
            {
                return Err(ErrorKind::Corrupt("blocked filter geometry is invalid").into());
            }
            Layout::Counting if !matches!(header.blocks_per_key, 4 | 8) => {
                return Err(ErrorKind::Corrupt("counter width is not 4 or 8 bits").into());
            }
            Layout::Counting if header.bits * u64::from(header.blocks_per_key) > MAX_BITS => {
                return Err(ErrorKind::Corrupt("counters beyond the maximum filter size").into());
            }
            _ => {}
        }
        if u64_at(48) != header.payload_words() * 8 {
            return Err(ErrorKind::Corrupt("payload length does not match the bit count").into());
        }
        Ok(header)
    }
}

/// The header of a scalable filter; its sub-filters follow, each in the blocked layout.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct ScalableHeader {
    pub(crate) key: [u8; 16],
    pub(crate) initial: u64,
    pub(crate) rate: f64,
    pub(crate) growth: u32,
    pub(crate) tightening: f64,
    pub(crate) filters: u32,
}

const LAYOUT_SCALABLE: u8 = 4;

/// Writes a scalable filter's 60-byte header (see the module docs).
pub(crate) fn write_scalable_header<W: Write>(out: &mut W, h: &ScalableHeader) -> Result<()> {
    let mut raw = [0u8; HEADER_LEN];
    raw[0..4].copy_from_slice(&MAGIC);
    raw[4..6].copy_from_slice(&VERSION.to_le_bytes());
    raw[6] = LAYOUT_SCALABLE;
    raw[7] = HASH_SIPHASH13_128;
    raw[8..24].copy_from_slice(&h.key);
    raw[24..32].copy_from_slice(&h.initial.to_le_bytes());
    raw[32..40].copy_from_slice(&h.rate.to_bits().to_le_bytes());
    raw[40..48].copy_from_slice(&h.tightening.to_bits().to_le_bytes());
    raw[48..52].copy_from_slice(&h.growth.to_le_bytes());
    raw[52..56].copy_from_slice(&h.filters.to_le_bytes());
    let crc = crc32c::crc32c(&raw[..56]);
    raw[56..60].copy_from_slice(&crc.to_le_bytes());
    out.write_all(&raw)?;
    Ok(())
}

/// Reads a scalable filter's header; the caller validates the parameters.
pub(crate) fn read_scalable_header<R: Read>(input: &mut R) -> Result<ScalableHeader> {
    let mut raw = [0u8; HEADER_LEN];
    input.read_exact(&mut raw)?;
    let u64_at = |at: usize| u64::from_le_bytes(raw[at..at + 8].try_into().expect("8 bytes"));
    let u32_at = |at: usize| u32::from_le_bytes(raw[at..at + 4].try_into().expect("4 bytes"));
    if raw[0..4] != MAGIC {
        return Err(ErrorKind::BadMagic.into());
    }
    let version = u16::from_le_bytes([raw[4], raw[5]]);
    if version != VERSION {
        return Err(ErrorKind::UnsupportedVersion(version).into());
    }
    if u32_at(56) != crc32c::crc32c(&raw[..56]) {
        return Err(ErrorKind::ChecksumMismatch { part: "header" }.into());
    }
    if raw[6] != LAYOUT_SCALABLE {
        return Err(ErrorKind::WrongLayout {
            expected: "scalable",
            found: raw[6],
        }
        .into());
    }
    if raw[7] != HASH_SIPHASH13_128 {
        return Err(ErrorKind::UnknownHash(raw[7]).into());
    }
    Ok(ScalableHeader {
        key: raw[8..24].try_into().expect("16 bytes"),
        initial: u64_at(24),
        rate: f64::from_bits(u64_at(32)),
        tightening: f64::from_bits(u64_at(40)),
        growth: u32_at(48),
        filters: u32_at(52),
    })
}

/// Writes `header`, then `words` (exactly the payload words the header declares), then the
/// payload checksum.
pub(crate) fn write<W: Write>(
    out: &mut W,
    header: &Header,
    words: impl Iterator<Item = u64>,
) -> Result<()> {
    out.write_all(&header.encode())?;
    let mut crc = 0u32;
    let chunk_bytes = (MAX_CHUNK as u64).min(header.payload_words() * 8) as usize;
    let mut buf = Vec::with_capacity(chunk_bytes);
    for word in words {
        buf.extend_from_slice(&word.to_le_bytes());
        if buf.len() == chunk_bytes {
            crc = crc32c::crc32c_append(crc, &buf);
            out.write_all(&buf)?;
            buf.clear();
        }
    }
    crc = crc32c::crc32c_append(crc, &buf);
    out.write_all(&buf)?;
    out.write_all(&crc.to_le_bytes())?;
    Ok(())
}

/// The serialized length of a filter with `bits` in a bit-array `layout`.
pub(crate) fn encoded_len(layout: Layout, bits: u64) -> usize {
    HEADER_LEN + layout.words(bits) as usize * 8 + 4
}

/// The serialized length of a filter with `header`, in any layout.
pub(crate) fn encoded_len_of(header: &Header) -> usize {
    HEADER_LEN + header.payload_words() as usize * 8 + 4
}

/// Reads a filter of `expected` layout: its header and its payload grouped into units of `W`
/// words, each turned into a `T` by `make`.
///
/// Memory follows the bytes that actually arrive (at most about twice their size, as the
/// vector grows), never what the header claims: the read buffer starts at 64 KiB and doubles.
pub(crate) fn read<R: Read, T, const W: usize>(
    input: &mut R,
    expected: Layout,
    make: impl Fn([u64; W]) -> T,
) -> Result<(Header, Vec<T>)> {
    let mut raw = [0u8; HEADER_LEN];
    input.read_exact(&mut raw)?;
    let header = Header::decode(&raw, expected)?;
    // Checked: on a 32-bit target a legal header can describe more bytes than memory holds.
    let total_bytes = usize::try_from(header.payload_words())
        .ok()
        .and_then(|words| words.checked_mul(8))
        .ok_or(ErrorKind::TooLarge {
            bits: header.bits as f64,
        })?;
    let total_units = total_bytes / (8 * W);
    let mut units: Vec<T> = Vec::new();
    let mut chunk = Vec::new();
    let mut crc = 0u32;
    let mut done = 0;
    while done < total_bytes {
        // Multiples of 64 bytes, so every chunk holds whole units of either layout.
        let len = (total_bytes - done).min(MAX_CHUNK).min(done.max(MIN_CHUNK));
        chunk.resize(len, 0);
        input.read_exact(&mut chunk)?;
        crc = crc32c::crc32c_append(crc, &chunk);
        done += len;
        let needed = len / (8 * W);
        if units.capacity() - units.len() < needed {
            // Grow geometrically but never past the declared total.
            let grow = units.len().max(needed).min(total_units - units.len());
            units
                .try_reserve_exact(grow)
                .map_err(|_| ErrorKind::OutOfMemory {
                    bytes: done as u64 * 2,
                })?;
        }
        units.extend(chunk.chunks_exact(8 * W).map(|unit| {
            make(core::array::from_fn(|i| {
                u64::from_le_bytes(unit[i * 8..i * 8 + 8].try_into().expect("8 bytes"))
            }))
        }));
    }
    let mut tail = [0u8; 4];
    input.read_exact(&mut tail)?;
    if u32::from_le_bytes(tail) != crc {
        return Err(ErrorKind::ChecksumMismatch { part: "payload" }.into());
    }
    crate::storage::advise_huge_pages(&units);
    Ok((header, units))
}

/// Rejects an item count no filter can reach: every insert that reports a new item sets at
/// least one bit, so a valid filter never counts more items than set bits.
pub(crate) fn check_items(header: &Header, set_bits: u64) -> Result<()> {
    if header.items > set_bits {
        return Err(ErrorKind::Corrupt("item count exceeds the set bits").into());
    }
    Ok(())
}

/// Reads a filter from a byte slice that must hold exactly one filter.
pub(crate) fn read_exact_slice<T, const W: usize>(
    mut bytes: &[u8],
    expected: Layout,
    make: impl Fn([u64; W]) -> T,
) -> Result<(Header, Vec<T>)> {
    let decoded = read(&mut bytes, expected, make)?;
    if !bytes.is_empty() {
        return Err(ErrorKind::TrailingBytes(bytes.len()).into());
    }
    Ok(decoded)
}
