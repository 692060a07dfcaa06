//! How the C library's allocator treats the crawl's bodies.
//!
//! glibc's malloc maps an allocation over its mmap threshold (128 KiB at start) on its own
//! and unmaps it when freed, but each such free raises the threshold to the freed size (up
//! to 32 MiB): from then on bodies of a few MB come from the heaps of the threads that read
//! them, one arena per thread up to 8 per core, and stay there once freed, fragmented. On the
//! toolchain's docs (`benches/docs.sh`, 128 fetches in flight, pages up to several MB) that
//! held about 100 MB beyond the heap in use: a peak RSS of 180 to 200 MB for a peak heap of
//! 76 MB. A fixed threshold gives every large body back to the system when it is dropped,
//! and one arena per core (the runtime has one worker thread per core) keeps the small
//! allocations of the blocking threads from spreading over more heaps. On 2 cores the
//! threshold alone gave a peak RSS of 87 MB, both 69 MB.
//!
//! mimalloc as the global allocator was tried instead: it held more (350 to 430 MB).

/// The mmap threshold: glibc's initial value, kept from rising.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
const MMAP_THRESHOLD: libc::c_int = 128 << 10;

/// Sets the allocator's thresholds above, on glibc; elsewhere does nothing. Called first
/// thing in `main`, before any thread starts.
pub(crate) fn tune() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // The most heaps (arenas) malloc keeps for the process's threads: one per core.
        let arenas = std::thread::available_parallelism().map_or(1, |cores| {
            libc::c_int::try_from(cores.get()).unwrap_or(libc::c_int::MAX)
        });
        #[expect(
            unsafe_code,
            reason = "mallopt is glibc's one way to set these thresholds"
        )]
        // SAFETY: mallopt only changes malloc's tuning parameters, under malloc's own lock;
        // it reads no memory of ours, and any values are valid (it reports bad ones by
        // returning 0).
        unsafe {
            libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
            libc::mallopt(libc::M_ARENA_MAX, arenas);
        }
    }
}
