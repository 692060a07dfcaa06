//! A spam blacklist of millions of addresses in a Bloom filter, with a small whitelist that
//! rescues the legitimate addresses known to be false positives.
//!
//! The check is `filter.contains(a) && !whitelist.contains(a)`. The filter never misses a
//! blacklisted address; it wrongly flags a fraction `p` of the others. Running a known set of
//! legitimate addresses (say, the senders a mail server has already delivered) through the
//! filter finds the ones it would wrongly block, and those go into a `HashSet` whitelist.
//! Addresses outside both sets are still flagged at rate `p`; in practice, a reported false
//! positive is added to the whitelist.
//!
//! The example builds a [`BlockedBloomFilter`](bloom::BlockedBloomFilter) of synthetic spam
//! addresses (`user123@spam-domain-456.example`), finds the false positives among synthetic
//! legitimate ones (`person123@mail-45.example`), then verifies and prints:
//!
//! * blacklisted addresses the check misses (must be 0);
//! * known legitimate addresses still blocked after whitelisting (must be 0);
//! * the false-positive rate on a fresh set of unseen legitimate addresses, against the target;
//! * memory of the filter plus the whitelist against a `HashSet<String>` of the same
//!   blacklist, counted exactly by a global allocator that tracks live heap bytes (the bytes
//!   requested; malloc's own headers and rounding come on top, so the resident-set growth
//!   from `/proc/self/status` is printed beside it on Linux).
//!
//! Run:
//!
//! ```sh
//! cargo run --release -p politecrawl-bloom --example blacklist
//! cargo run --release -p politecrawl-bloom --example blacklist -- --spam 1000000 --fp-rate 1e-4
//! ```
//!
//! Flags (numbers may contain `_`, e.g. `3_000_000`):
//!
//! * `--spam N`: blacklisted addresses (default 3,000,000).
//! * `--legit N`: known legitimate addresses, and as many fresh unseen ones for the rate
//!   check (default 1,000,000).
//! * `--fp-rate P`: the filter's target false-positive rate, between 0 and 1 (default 0.001).
//! * `--help`: print this summary.

mod common;

use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::HashSet;
use std::fmt::Write as _;
use std::process::ExitCode;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use bloom::BlockedBloomFilter;

use common::{Flags, group, hashbrown_slots, mib, proc_status_bytes, ratio, secs, usize_from};

/// Counts the heap bytes currently allocated through it, forwarding all work to [`System`].
struct CountingAllocator;

/// Live heap bytes, as requested by the program (not including malloc's own overhead).
static LIVE_BYTES: AtomicUsize = AtomicUsize::new(0);

#[allow(unsafe_code)]
// SAFETY: every method forwards its arguments unchanged to `System`, which implements
// `GlobalAlloc` correctly; the counter only records sizes and never touches the memory.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `alloc`'s contract (a non-zero size), passed on as is.
        let ptr = unsafe { System.alloc(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let ptr = unsafe { System.alloc_zeroed(layout) };
        if !ptr.is_null() {
            LIVE_BYTES.fetch_add(layout.size(), Ordering::Relaxed);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller guarantees `ptr` came from this allocator (so from `System`) with
        // this `layout`.
        unsafe { System.dealloc(ptr, layout) };
        LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees `ptr` came from `System` with `layout`, and a valid
        // `new_size`; on failure the old block stays allocated, and the count unchanged.
        let new = unsafe { System.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            LIVE_BYTES.fetch_add(new_size, Ordering::Relaxed);
            LIVE_BYTES.fetch_sub(layout.size(), Ordering::Relaxed);
        }
        new
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn live_bytes() -> u64 {
    LIVE_BYTES.load(Ordering::Relaxed) as u64
}

const USAGE: &str = "\
blacklist: a Bloom-filter spam blacklist plus a whitelist of its known false positives.

usage: cargo run --release -p politecrawl-bloom --example blacklist -- [FLAGS]

  --spam N       blacklisted addresses (default 3000000)
  --legit N      known legitimate addresses, and as many fresh ones (default 1000000)
  --fp-rate P    the filter's target false-positive rate, 0 < P < 1 (default 0.001)
  --help         print this help";

/// A fixed SipHash key, so that runs are reproducible. A real blacklist should keep the default
/// random key: spammers who knew the key could craft addresses that collide with legitimate
/// ones.
const FILTER_KEY: [u8; 16] = *b"blacklist-demo!!";

struct Config {
    spam: u64,
    legit: u64,
    fp_rate: f64,
}

fn main() -> ExitCode {
    common::main("blacklist", USAGE, parse_args, run)
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    let mut config = Config {
        spam: 3_000_000,
        legit: 1_000_000,
        fp_rate: 0.001,
    };
    let mut args = Flags::new(args);
    while let Some(flag) = args.next_flag() {
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--spam" => config.spam = args.count()?,
            "--legit" => config.legit = args.count()?,
            "--fp-rate" => {
                config.fp_rate = args.number_where(
                    |p| p > 0.0 && p < 1.0,
                    "must be a number strictly between 0 and 1",
                )?;
            }
            _ => return Err(args.unknown()),
        }
    }
    if config.spam == 0 {
        return Err("--spam must be at least 1".into());
    }
    // Spam and legitimate ids share no range of `u64`; 2^62 each is far beyond any run.
    if config.spam > 1 << 62 || config.legit > 1 << 61 {
        return Err("--spam or --legit is unreasonably large".into());
    }
    Ok(Some(config))
}

/// Writes blacklisted address number `i` into `out`, replacing its contents: 1,000 spam
/// domains, users numbered within each.
fn spam_address(i: u64, out: &mut String) {
    out.clear();
    let _ = write!(out, "user{}@spam-domain-{}.example", i / 1000, i % 1000);
}

/// Writes legitimate address number `i` into `out`: a different domain family, so no
/// legitimate address is ever on the blacklist. Ids below `--legit` are the known set; the
/// fresh set uses the next `--legit` ids.
fn legit_address(i: u64, out: &mut String) {
    out.clear();
    let _ = write!(out, "person{}@mail-{}.example", i / 100, i % 100);
}

/// The check the example is about: on the blacklist and not whitelisted.
fn is_blocked(filter: &BlockedBloomFilter, whitelist: &HashSet<String>, address: &str) -> bool {
    filter.contains(address) && !whitelist.contains(address)
}

/// What the exact alternative cost.
struct Exact {
    heap: u64,
    time: std::time::Duration,
    rss_growth: Option<u64>,
    string_bytes: u64,
    table_bytes: u64,
}

/// Every blacklisted address in a `HashSet<String>`, built the usual way (growing as it goes),
/// measured by the counting allocator.
fn exact_alternative(n: u64, address: &mut String) -> Exact {
    let rss_before = proc_status_bytes("VmRSS:");
    let before = live_bytes();
    let started = Instant::now();
    let mut exact: HashSet<String> = HashSet::new();
    for i in 0..n {
        spam_address(i, address);
        exact.insert(address.clone());
    }
    let time = started.elapsed();
    let heap = live_bytes().saturating_sub(before);
    let rss_growth = rss_before
        .zip(proc_status_bytes("VmRSS:"))
        .map(|(a, b)| b.saturating_sub(a));
    let string_bytes: u64 = exact.iter().map(|s| s.capacity() as u64).sum();
    Exact {
        heap,
        time,
        rss_growth,
        string_bytes,
        table_bytes: heap.saturating_sub(string_bytes),
    }
}

fn run(config: &Config) -> Result<(), String> {
    let n = config.spam;
    let mut address = String::new();

    // 1. The blacklist filter.
    let started = Instant::now();
    let before = live_bytes();
    let mut filter = BlockedBloomFilter::builder(usize_from(n)?, config.fp_rate)
        .key(FILTER_KEY)
        .build()
        .map_err(|e| format!("building the filter: {e}"))?;
    for i in 0..n {
        spam_address(i, &mut address);
        filter.insert(&address);
    }
    let filter_heap = live_bytes().saturating_sub(before);
    let build_time = started.elapsed();

    // 2. The whitelist: known legitimate addresses the filter would block.
    let started = Instant::now();
    let before = live_bytes();
    let mut whitelist = HashSet::new();
    for i in 0..config.legit {
        legit_address(i, &mut address);
        if filter.contains(&address) {
            whitelist.insert(address.clone());
        }
    }
    let whitelist_heap = live_bytes().saturating_sub(before);
    let whitelist_time = started.elapsed();

    // 3. Verify: no spam missed, no known legitimate address blocked.
    let started = Instant::now();
    let mut spam_missed = 0u64;
    for i in 0..n {
        spam_address(i, &mut address);
        spam_missed += u64::from(!is_blocked(&filter, &whitelist, &address));
    }
    let mut legit_blocked = 0u64;
    for i in 0..config.legit {
        legit_address(i, &mut address);
        legit_blocked += u64::from(is_blocked(&filter, &whitelist, &address));
    }
    let verify_time = started.elapsed();

    // 4. Fresh legitimate addresses, never seen: blocked at the filter's rate.
    let started = Instant::now();
    let mut fresh_blocked = 0u64;
    for i in config.legit..2 * config.legit {
        legit_address(i, &mut address);
        fresh_blocked += u64::from(is_blocked(&filter, &whitelist, &address));
    }
    let fresh_time = started.elapsed();

    // 5. The exact alternative.
    let Exact {
        heap: exact_heap,
        time: exact_time,
        rss_growth,
        string_bytes,
        table_bytes,
    } = exact_alternative(n, &mut address);

    println!(
        "blacklist: {} spam addresses (e.g. {}), filter built in {}",
        group(n),
        {
            spam_address(n / 2, &mut address);
            &address
        },
        secs(build_time),
    );
    println!(
        "filter: BlockedBloomFilter, target p = {}, {:.2} bits/address, {} hashes, {} block(s) per key",
        config.fp_rate,
        filter.bits() as f64 / n as f64,
        filter.hashes(),
        filter.blocks_per_key(),
    );
    println!(
        "whitelist: {} of {} known legitimate addresses were false positives ({:.5}), found in {}",
        group(whitelist.len()),
        group(config.legit),
        ratio(whitelist.len() as u64, config.legit),
        secs(whitelist_time),
    );
    println!();
    println!(
        "blacklisted addresses missed:                  {} (must be 0)",
        group(spam_missed)
    );
    println!(
        "known legitimate addresses blocked:            {} (must be 0)",
        group(legit_blocked)
    );
    println!(
        "fresh legitimate addresses blocked:            {} of {} = {:.6} (target {}, model {:.6})",
        group(fresh_blocked),
        group(config.legit),
        ratio(fresh_blocked, config.legit),
        config.fp_rate,
        filter.false_positive_rate_at(n),
    );
    let checks = n + 2 * config.legit;
    println!(
        "check() time:                                  {:.0} ns/address",
        (verify_time + fresh_time).as_secs_f64() * 1e9 / checks.max(1) as f64,
    );
    println!();
    println!("memory (heap bytes, counted by the global allocator):");
    println!(
        "  filter                 {:>14} (memory_bytes() = {})",
        mib(filter_heap),
        group(filter.memory_bytes()),
    );
    println!(
        "  whitelist              {:>14} ({} addresses)",
        mib(whitelist_heap),
        group(whitelist.len()),
    );
    let ours = filter_heap + whitelist_heap;
    println!("  filter + whitelist     {:>14}", mib(ours));
    println!(
        "  HashSet<String>        {:>14} = {} table ({} slots of {} B + control bytes) + {} strings; built in {}",
        mib(exact_heap),
        mib(table_bytes),
        group(hashbrown_slots(n)),
        size_of::<String>(),
        mib(string_bytes),
        secs(exact_time),
    );
    if let Some(growth) = rss_growth {
        println!(
            "  HashSet<String> RSS growth (with malloc's overhead): {}",
            mib(growth)
        );
    }
    println!(
        "  the filter + whitelist take {:.1}x less memory than the HashSet",
        exact_heap as f64 / ours.max(1) as f64,
    );

    if spam_missed != 0 || legit_blocked != 0 {
        return Err(format!(
            "verification failed: {spam_missed} spam addresses missed, {legit_blocked} known \
             legitimate addresses blocked"
        ));
    }
    println!("verified");
    Ok(())
}
