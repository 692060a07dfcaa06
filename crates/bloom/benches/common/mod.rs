//! Deterministic URL-like keys shared by the `filters` and `accuracy` benchmarks.
//!
//! Key `i` is `https://www.host{h:05}.example.com/articles/{a:08x}/{b:016x}.html`, 73 bytes,
//! with `b = splitmix64(i)` and `h`, `a` drawn from `splitmix64(b)`. `splitmix64` is a
//! bijection of `u64`, so distinct indices give distinct keys, and index ranges that do not
//! overlap give disjoint key sets.

/// Length in bytes of every generated key.
pub(crate) const KEY_LEN: usize = 73;

const TEMPLATE: &[u8; KEY_LEN] =
    b"https://www.host00000.example.com/articles/00000000/0000000000000000.html";
const HOST_AT: usize = 16;
const A_AT: usize = 43;
const B_AT: usize = 52;
const HEX: &[u8; 16] = b"0123456789abcdef";

/// The splitmix64 finalizer (Steele, Lea and Flood), a bijection of `u64`.
#[allow(dead_code, reason = "only the filters benchmark draws random indices")]
pub(crate) fn splitmix64(x: u64) -> u64 {
    let mut z = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// Writes keys into one reused buffer; no allocation per key.
pub(crate) struct KeyGen {
    buf: [u8; KEY_LEN],
}

impl KeyGen {
    pub(crate) fn new() -> Self {
        let mut keys = KeyGen { buf: *TEMPLATE };
        // The hand-rolled formatting must match the documented format exactly.
        for i in [0, 1, 12_345, u64::MAX] {
            let b = splitmix64(i);
            let r = splitmix64(b);
            let expected = format!(
                "https://www.host{:05}.example.com/articles/{:08x}/{:016x}.html",
                r % 100_000,
                r >> 32,
                b
            );
            assert_eq!(keys.key(i), expected.as_bytes());
        }
        keys
    }

    /// Key number `index`, valid until the next call.
    #[inline]
    pub(crate) fn key(&mut self, index: u64) -> &[u8] {
        let b = splitmix64(index);
        let r = splitmix64(b);
        let mut h = r % 100_000;
        for digit in self.buf[HOST_AT..HOST_AT + 5].iter_mut().rev() {
            *digit = b'0' + (h % 10) as u8;
            h /= 10;
        }
        write_hex(&mut self.buf[A_AT..A_AT + 8], r >> 32);
        write_hex(&mut self.buf[B_AT..B_AT + 16], b);
        &self.buf
    }
}

#[inline]
fn write_hex(out: &mut [u8], mut value: u64) {
    for digit in out.iter_mut().rev() {
        *digit = HEX[(value & 0xf) as usize];
        value >>= 4;
    }
}
