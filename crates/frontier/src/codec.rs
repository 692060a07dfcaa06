//! The byte encoding of the frontier's own files (spill runs, checkpoint state): LEB128
//! varints and length-prefixed strings, little-endian fixed-width numbers.
//!
//! Decoding returns `None` at the first malformed or missing byte; callers turn that into a
//! [`DiskError`](crate::DiskError) naming the file. Nothing here allocates more than the
//! input holds, so a damaged length cannot make the reader ask for gigabytes.

/// Appends `n` as an unsigned LEB128 varint: seven bits per byte, low bits first.
pub(crate) fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push(n as u8 | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

/// Appends a length-prefixed byte string.
pub(crate) fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    put_varint(out, bytes.len() as u64);
    out.extend_from_slice(bytes);
}

/// A cursor over encoded bytes.
pub(crate) struct Reader<'a> {
    bytes: &'a [u8],
}

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Self {
        Reader { bytes }
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.bytes.is_empty()
    }

    /// Bytes not yet read.
    pub(crate) fn remaining(&self) -> usize {
        self.bytes.len()
    }

    pub(crate) fn varint(&mut self) -> Option<u64> {
        let mut n = 0u64;
        for (i, &byte) in self.bytes.iter().enumerate().take(10) {
            let bits = u64::from(byte & 0x7f);
            // The tenth byte may only carry the 64th bit.
            if i == 9 && bits > 1 {
                return None;
            }
            n |= bits << (7 * i);
            if byte & 0x80 == 0 {
                self.bytes = &self.bytes[i + 1..];
                return Some(n);
            }
        }
        None
    }

    pub(crate) fn u32(&mut self) -> Option<u32> {
        u32::try_from(self.varint()?).ok()
    }

    pub(crate) fn take(&mut self, len: usize) -> Option<&'a [u8]> {
        if len > self.bytes.len() {
            return None;
        }
        let (head, tail) = self.bytes.split_at(len);
        self.bytes = tail;
        Some(head)
    }

    pub(crate) fn bytes(&mut self) -> Option<&'a [u8]> {
        let len = usize::try_from(self.varint()?).ok()?;
        self.take(len)
    }

    pub(crate) fn str(&mut self) -> Option<&'a str> {
        std::str::from_utf8(self.bytes()?).ok()
    }
}

/// Little-endian fixed-width reads of a slice known to be long enough.
pub(crate) fn le_u32(bytes: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes"))
}

pub(crate) fn le_u64(bytes: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(bytes[at..at + 8].try_into().expect("8 bytes"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varints_round_trip_and_reject_overlong() {
        let values = [0, 1, 127, 128, 300, u64::from(u32::MAX), u64::MAX];
        let mut out = Vec::new();
        for &v in &values {
            put_varint(&mut out, v);
        }
        let mut r = Reader::new(&out);
        for &v in &values {
            assert_eq!(r.varint(), Some(v));
        }
        assert!(r.is_empty());
        assert_eq!(Reader::new(&[0xff; 10]).varint(), None);
        assert_eq!(Reader::new(&[0x80]).varint(), None);
        assert_eq!(Reader::new(&[0x80, 0x80]).u32(), None);
    }

    #[test]
    fn lengths_beyond_the_input_are_refused() {
        let mut out = Vec::new();
        put_varint(&mut out, 1 << 40);
        out.extend_from_slice(b"short");
        assert_eq!(Reader::new(&out).bytes(), None);
    }
}
