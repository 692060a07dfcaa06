//! Bit storage shared by the filters: fallible zeroed allocation, cache-line blocks, prefetch.

use std::sync::atomic::Ordering;

use crate::sync::AtomicU64;

use crate::error::{ErrorKind, Result};

/// One 512-bit block, aligned to a 64-byte cache line so that touching a block costs exactly
/// one cache miss.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[repr(C, align(64))]
pub(crate) struct Block(pub(crate) [u64; 8]);

/// The concurrent twin of [`Block`].
#[derive(Debug, Default)]
#[repr(C, align(64))]
pub(crate) struct AtomicBlock(pub(crate) [AtomicU64; 8]);

impl AtomicBlock {
    pub(crate) fn from_words(words: [u64; 8]) -> Self {
        AtomicBlock(words.map(AtomicU64::new))
    }

    pub(crate) fn load(&self) -> [u64; 8] {
        core::array::from_fn(|i| self.0[i].load(Ordering::Relaxed))
    }
}

/// A vector of `len` copies of `zero`, refusing (instead of aborting the process) when the
/// allocator cannot provide it.
pub(crate) fn zeroed<T: Clone>(len: usize, zero: T) -> Result<Vec<T>> {
    let mut v = reserve(len)?;
    v.resize(len, zero);
    Ok(v)
}

/// Same as [`zeroed`] for types that are not `Clone` (atomics).
pub(crate) fn zeroed_with<T>(len: usize, make: impl FnMut() -> T) -> Result<Vec<T>> {
    let mut v = reserve(len)?;
    v.extend(std::iter::repeat_with(make).take(len));
    Ok(v)
}

/// A copy of `items` in memory allocated like [`zeroed`]'s (huge pages for large filters).
/// Like any `clone`, aborts if memory runs out.
pub(crate) fn copy<T: Clone>(items: &[T]) -> Vec<T> {
    let mut v = reserve(items.len()).unwrap_or_default();
    v.extend_from_slice(items);
    v
}

/// An empty vector with room for exactly `len` items, its memory not yet touched.
fn reserve<T>(len: usize) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(len)
        .map_err(|_| ErrorKind::OutOfMemory {
            bytes: (len as u64).saturating_mul(size_of::<T>() as u64),
        })?;
    advise_huge_pages(&v);
    Ok(v)
}

/// Filters at least this large ask for transparent huge pages.
const HUGE_PAGE_THRESHOLD: usize = 4 << 20;

/// Asks Linux to back a large, not yet touched allocation with 2 MiB pages.
///
/// A lookup in a filter far larger than the cache costs one cache miss plus, with 4 KiB pages,
/// a TLB miss whose page walk is a second dependent memory access; 2 MiB pages remove most of
/// those. Kernels whose transparent huge pages are set to `madvise` (a common default) only
/// grant them on request. A hint only: if refused, the filter works the same, slower. Given
/// after the memory is filled (as when decoding), the kernel collapses the pages later.
pub(crate) fn advise_huge_pages<T>(v: &Vec<T>) {
    let bytes = v.capacity() * size_of::<T>();
    if bytes < HUGE_PAGE_THRESHOLD {
        return;
    }
    #[cfg(target_os = "linux")]
    {
        const HUGE_PAGE: usize = 2 << 20;
        // Only whole huge pages inside the allocation: madvise needs an aligned start, and
        // the ragged ends keep small pages.
        let start = (v.as_ptr() as usize).next_multiple_of(HUGE_PAGE);
        let end = (v.as_ptr() as usize + bytes) / HUGE_PAGE * HUGE_PAGE;
        if end > start {
            #[allow(unsafe_code)]
            // SAFETY: [start, end) lies inside memory this vector owns; MADV_HUGEPAGE changes
            // only how the kernel backs those pages, never their contents or validity.
            unsafe {
                libc::madvise(start as *mut libc::c_void, end - start, libc::MADV_HUGEPAGE);
            }
        }
    }
}

/// Converts a count of storage units (words or blocks) into a `Vec` length, refusing counts this
/// platform cannot index; `bits` is the filter size the error reports.
pub(crate) fn units(count: u64, bits: u64) -> Result<usize> {
    usize::try_from(count).map_err(|_| ErrorKind::TooLarge { bits: bits as f64 }.into())
}

/// Asks the CPU to start loading the cache line at `ptr`; a hint only, it never faults.
#[inline(always)]
pub(crate) fn prefetch<T>(ptr: *const T) {
    #[cfg(target_arch = "x86_64")]
    #[allow(unsafe_code)]
    // SAFETY: prefetch is a hint that never dereferences in the architectural sense and
    // cannot fault, whatever the address; SSE is part of the x86_64 baseline.
    unsafe {
        core::arch::x86_64::_mm_prefetch::<{ core::arch::x86_64::_MM_HINT_T0 }>(ptr.cast());
    }
    #[cfg(target_arch = "aarch64")]
    #[allow(unsafe_code)]
    // SAFETY: PRFM is a hint that cannot fault, whatever the address.
    unsafe {
        core::arch::asm!("prfm pldl1keep, [{0}]", in(reg) ptr, options(nostack, readonly, preserves_flags));
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    let _ = ptr;
}

/// How many items a batch operation hashes and prefetches before probing: enough independent
/// cache misses in flight to hide DRAM latency, few enough that the lines are still cached when
/// probed.
pub(crate) const BATCH: usize = 16;
