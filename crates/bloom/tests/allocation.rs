//! Decoding takes memory in proportion to the bytes that arrive, not to what a header claims.
//! A test binary of its own, because it counts every allocation of the process.

use std::alloc::{GlobalAlloc, Layout, System};
use std::io::{self, Read};
use std::sync::atomic::{AtomicUsize, Ordering};

use bloom::{BlockedBloomFilter, BloomFilter, CountingBloomFilter, ErrorKind, MAX_BITS};

/// The system allocator, keeping the current and peak number of bytes allocated.
struct Counting;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)] // A global allocator can only be written with `unsafe impl`.
// SAFETY: every call is forwarded unchanged to the system allocator; the counters are
// bookkeeping only.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded with the caller's layout, which meets `alloc`'s contract.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            let now = CURRENT.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        ptr
    }

    /// Forwarded, as the real allocator grows large blocks in place (mremap) instead of
    /// copying; the default would count old and new block at once.
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded unchanged; the caller meets `realloc`'s contract.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            let now = if new_size >= layout.size() {
                CURRENT.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                    - layout.size()
            } else {
                CURRENT.fetch_sub(layout.size() - new_size, Ordering::Relaxed) - layout.size()
                    + new_size
            };
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        new
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from `alloc` above with this layout.
        unsafe { System.dealloc(ptr, layout) };
        CURRENT.fetch_sub(layout.size(), Ordering::Relaxed);
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// A header claiming the largest legal filter, with valid checksum, for `layout`: 2^40 bits,
/// or for the counting layout 2^38 counters of 4 bits.
fn huge_header(layout: u8) -> Vec<u8> {
    let (bits, byte_36) = match layout {
        1 => (MAX_BITS, 0),
        2 => (MAX_BITS, 1),
        _ => (MAX_BITS / 4, 4),
    };
    let mut out = Vec::new();
    out.extend_from_slice(b"BLMF");
    out.extend_from_slice(&1u16.to_le_bytes());
    out.extend_from_slice(&[layout, 1]);
    out.extend_from_slice(&[0; 16]);
    out.extend_from_slice(&bits.to_le_bytes());
    out.extend_from_slice(&4u32.to_le_bytes());
    out.extend_from_slice(&[byte_36, 0, 0, 0]);
    out.extend_from_slice(&0u64.to_le_bytes());
    out.extend_from_slice(&(MAX_BITS / 8).to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&out).to_le_bytes());
    out
}

/// Peak bytes allocated while `f` runs, above what was allocated before.
fn peak_during(f: impl FnOnce()) -> usize {
    let base = CURRENT.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    f();
    PEAK.load(Ordering::Relaxed) - base
}

#[test]
fn a_128_gib_claim_followed_by_5_mib_costs_megabytes() {
    const ARRIVING: u64 = 5 << 20;
    for layout in [1u8, 2, 3] {
        let header = huge_header(layout);
        let peak = peak_during(|| {
            let input = header.as_slice().chain(io::repeat(0).take(ARRIVING));
            let err = match layout {
                1 => BloomFilter::read_from(input).unwrap_err(),
                2 => BlockedBloomFilter::read_from(input).unwrap_err(),
                _ => CountingBloomFilter::read_from(input).unwrap_err(),
            };
            assert!(matches!(err.kind(), ErrorKind::Truncated), "{err}");
        });
        // The units read (5 MiB, up to twice that while the vector grows) plus a 1 MiB buffer.
        assert!(peak < 12 << 20, "layout {layout}: peak {peak} bytes");
        assert!(
            peak > ARRIVING as usize,
            "layout {layout}: the count is not working"
        );
    }
}
