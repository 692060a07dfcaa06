//! Byte scanning shared by the charset prescan and the tokenizer: a SWAR byte search, and
//! the tokenizer's byte classes.

/// The position of the first `needle` in `hay`. Tests 8 bytes at a time (SWAR): most of a
/// page is text between tags.
#[inline]
pub(crate) fn find_byte(needle: u8, hay: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    let pattern = LO * u64::from(needle);
    let mut chunks = hay.chunks_exact(8);
    let mut offset = 0;
    for chunk in &mut chunks {
        let mut word = [0; 8];
        word.copy_from_slice(chunk);
        let x = u64::from_le_bytes(word) ^ pattern;
        // The lowest flagged byte is the first zero byte of `x` (borrows only flag bytes
        // above a zero byte).
        let found = x.wrapping_sub(LO) & !x & HI;
        if found != 0 {
            return Some(offset + (found.trailing_zeros() / 8) as usize);
        }
        offset += 8;
    }
    let at = chunks.remainder().iter().position(|&c| c == needle)?;
    Some(offset + at)
}

/// The position of the first occurrence of `needle` (non-empty) in `hay`.
pub(crate) fn find_seq(needle: &[u8], hay: &[u8]) -> Option<usize> {
    let (&first, tail) = needle.split_first()?;
    let mut from = 0;
    loop {
        let at = from + find_byte(first, hay.get(from..)?)?;
        if hay.get(at + 1..at + needle.len()) == Some(tail) {
            return Some(at);
        }
        from = at + 1;
    }
}

/// [`CLASS`] bit: HTML whitespace, with the carriage returns that input preprocessing turns
/// into newlines.
pub(crate) const SPACE: u8 = 1;
/// [`CLASS`] bit: `/`.
pub(crate) const SLASH: u8 = 2;
/// [`CLASS`] bit: `>`.
pub(crate) const GT: u8 = 4;
/// [`CLASS`] bit: `=`.
pub(crate) const EQUALS: u8 = 8;
/// [`CLASS`] bit: what an attribute value's decoding changes: `&`, CR, NUL.
pub(crate) const DECODE: u8 = 16;

/// The tokenizer's byte classes, so its inner loops test one table entry per byte.
static CLASS: [u8; 256] = {
    let mut class = [0; 256];
    class[b'\t' as usize] = SPACE;
    class[b'\n' as usize] = SPACE;
    class[0x0C] = SPACE;
    class[b'\r' as usize] = SPACE;
    class[b' ' as usize] = SPACE;
    class[b'/' as usize] = SLASH;
    class[b'>' as usize] = GT;
    class[b'=' as usize] = EQUALS;
    class[b'&' as usize] = DECODE;
    class[b'\r' as usize] |= DECODE;
    class[0] = DECODE;
    class
};

/// Whether `c` is in any of the [`CLASS`] classes `mask`.
#[inline]
pub(crate) fn is(c: u8, mask: u8) -> bool {
    CLASS[usize::from(c)] & mask != 0
}

/// HTML whitespace, with the carriage returns that input preprocessing turns into newlines.
#[inline]
pub(crate) fn is_space(c: u8) -> bool {
    is(c, SPACE)
}
