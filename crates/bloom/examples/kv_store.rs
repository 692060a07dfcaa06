//! A Bloom filter in front of an on-disk key-value store: lookups of keys the store does not
//! hold skip the disk.
//!
//! The store is one immutable sorted table, like an SSTable of LevelDB or RocksDB: 64-byte
//! records (a 24-byte key and a 40-byte value) sorted by key and packed 64 to a 4 KiB page in
//! a data file. Memory holds only the first key of each page, which says which page *could*
//! hold a key but not whether it does. So every lookup, of a present key or an absent one,
//! reads its page from the file (`pread`) and searches it. The example counts every read
//! system call and every byte the store reads.
//!
//! The workload runs twice over the same keys: once straight against the store, once with a
//! [`BlockedBloomFilter`](bloom::BlockedBloomFilter) of the stored keys checked first, which
//! answers "absent" without touching the disk for all but a fraction `p` of the absent keys.
//! Both runs must return the same answers, and every answer is checked against the known
//! contents; a wrong answer is an error.
//!
//! The data file has just been written, so the OS page cache usually holds it, and a read costs
//! a system call and a 4 KiB copy (a microsecond or two) rather than a device access (around
//! 100 µs on an SSD, 10 ms on a spinning disk). The counts of reads carry over to a real disk;
//! the wall times only do with `--direct` (Linux), which opens the file with `O_DIRECT` so that
//! every read goes to the device.
//!
//! Run:
//!
//! ```sh
//! cargo run --release -p politecrawl-bloom --example kv_store
//! cargo run --release -p politecrawl-bloom --example kv_store -- --keys 1000000 --absent-ratio 0.9
//! ```
//!
//! Flags (numbers may contain `_`, e.g. `1_000_000`):
//!
//! * `--keys N`: keys in the store (default 200,000).
//! * `--lookups N`: lookups in the workload (default 200,000).
//! * `--absent-ratio F`: fraction of the lookups that ask for absent keys, 0 to 1 (default 0.5).
//! * `--fp-rate P`: the filter's target false-positive rate, between 0 and 1 (default 0.01).
//! * `--direct`: bypass the page cache with `O_DIRECT` (Linux only; the file system must
//!   support it, tmpfs does not). Slow: try `--lookups 20000`.
//! * `--help`: print this summary.
//!
//! The data file lives in a fresh directory under the system temp dir, removed at exit.

mod common;

use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bloom::BlockedBloomFilter;

use common::{Flags, TempDir, group, mib, mix64, ratio, secs, usize_from};

const KEY_BYTES: usize = 24;
const VALUE_BYTES: usize = 40;
const RECORD_BYTES: usize = KEY_BYTES + VALUE_BYTES;
const PAGE_BYTES: usize = 4096;
const RECORDS_PER_PAGE: usize = PAGE_BYTES / RECORD_BYTES;

/// A fixed SipHash key, so that runs are reproducible. Use the default random key when keys
/// come from untrusted users.
const FILTER_KEY: [u8; 16] = *b"kv-store-example";

const USAGE: &str = "\
kv_store: a Bloom filter in front of an on-disk sorted table; absent keys skip the disk.

usage: cargo run --release -p politecrawl-bloom --example kv_store -- [FLAGS]

  --keys N            keys in the store (default 200000)
  --lookups N         lookups in the workload (default 200000)
  --absent-ratio F    fraction of lookups for absent keys, 0..=1 (default 0.5)
  --fp-rate P         the filter's target false-positive rate, 0 < P < 1 (default 0.01)
  --direct            read with O_DIRECT, bypassing the page cache (Linux only; slow)
  --help              print this help";

struct Config {
    keys: u64,
    lookups: u64,
    absent_ratio: f64,
    fp_rate: f64,
    direct: bool,
}

fn main() -> ExitCode {
    common::main("kv_store", USAGE, parse_args, run)
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    let mut config = Config {
        keys: 200_000,
        lookups: 200_000,
        absent_ratio: 0.5,
        fp_rate: 0.01,
        direct: false,
    };
    let mut args = Flags::new(args);
    while let Some(flag) = args.next_flag() {
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--keys" => config.keys = args.count()?,
            "--lookups" => config.lookups = args.count()?,
            "--absent-ratio" => {
                let v = args.number_where(f64::is_finite, "expects a number")?;
                if !(0.0..=1.0).contains(&v) {
                    return Err(format!("--absent-ratio must be between 0 and 1, got {v}"));
                }
                config.absent_ratio = v;
            }
            "--fp-rate" => {
                let v = args.number_where(f64::is_finite, "expects a number")?;
                if !(v > 0.0 && v < 1.0) {
                    return Err(format!(
                        "--fp-rate must be strictly between 0 and 1, got {v}"
                    ));
                }
                config.fp_rate = v;
            }
            "--direct" => {
                args.no_value()?;
                config.direct = true;
            }
            _ => return Err(args.unknown()),
        }
    }
    if config.keys == 0 {
        return Err("--keys must be at least 1".into());
    }
    Ok(Some(config))
}

fn run(config: &Config) -> Result<(), String> {
    let dir = TempDir::new("bloom-kv-store").map_err(|e| format!("creating a temp dir: {e}"))?;
    let data_path = dir.path().join("table.dat");

    // Populate: the store's file, and the filter from the same keys.
    let started = Instant::now();
    let page_index = write_table(&data_path, config.keys)
        .map_err(|e| format!("writing {}: {e}", data_path.display()))?;
    let populate_time = started.elapsed();

    let started = Instant::now();
    let mut filter = BlockedBloomFilter::builder(usize_from(config.keys)?, config.fp_rate)
        .key(FILTER_KEY)
        .build()
        .map_err(|e| format!("building the filter: {e}"))?;
    for id in 0..config.keys {
        filter.insert(key_of(id));
    }
    let filter_time = started.elapsed();

    let mut store = Store::open(&data_path, page_index, config.direct)
        .map_err(|e| format!("opening {}: {e}", data_path.display()))?;
    let workload = make_workload(config)?;
    let absent = workload.iter().filter(|l| !l.present).count() as u64;

    let without = run_workload(&mut store, None, &workload)?;
    let with = run_workload(&mut store, Some(&filter), &workload)?;

    let file_bytes = fs::metadata(&data_path).map(|m| m.len()).unwrap_or(0);
    println!(
        "store: {} keys in {} pages of {PAGE_BYTES} B ({}), written in {}",
        group(config.keys),
        group(store.pages()),
        mib(file_bytes),
        secs(populate_time),
    );
    println!(
        "workload: {} lookups, {} of absent keys ({:.0}%){}",
        group(config.lookups),
        group(absent),
        100.0 * config.absent_ratio,
        if config.direct {
            ", O_DIRECT reads"
        } else {
            ", reads through the page cache"
        },
    );
    println!(
        "filter: BlockedBloomFilter, target p = {}, {:.2} bits/key, {} hashes, {} ({} B), built in {}",
        config.fp_rate,
        filter.bits() as f64 / config.keys as f64,
        filter.hashes(),
        mib(filter.memory_bytes() as u64),
        group(filter.memory_bytes() as u64),
        secs(filter_time),
    );
    println!();
    println!("                     reads (syscalls)   bytes read   wall time   per lookup");
    for (name, r) in [("without filter", &without), ("with filter", &with)] {
        println!(
            "  {name:<16} {:>20} {:>12} {:>11} {:>9.2} µs",
            group(r.reads),
            mib(r.bytes),
            secs(r.time),
            r.time.as_secs_f64() * 1e6 / config.lookups.max(1) as f64,
        );
    }
    println!();
    let avoided = without.reads.saturating_sub(with.reads);
    println!(
        "disk reads avoided: {} of {} ({:.1}%)",
        group(avoided),
        group(without.reads),
        percent(avoided, without.reads),
    );
    println!(
        "false-positive reads (absent keys the filter let through): {} of {} absent lookups \
         = {:.4} (target {}, model {:.4})",
        group(with.false_positive_reads),
        group(absent),
        ratio(with.false_positive_reads, absent),
        config.fp_rate,
        filter.false_positive_rate_at(config.keys),
    );
    println!(
        "speed-up: {:.2}x (answers identical in both runs: {} found, {} absent)",
        without.time.as_secs_f64() / with.time.as_secs_f64().max(1e-9),
        group(with.found),
        group(config.lookups - with.found),
    );
    Ok(())
}

/// The key with number `id`: 20 bytes, `key-` and 16 hex digits of a bijective scramble of
/// `id`, so keys are distinct and arrive in no particular order.
fn key_of(id: u64) -> [u8; KEY_BYTES] {
    let mut key = [0u8; KEY_BYTES];
    let text = format!("key-{:016x}", mix64(id));
    key[..text.len()].copy_from_slice(text.as_bytes());
    key
}

fn value_of(id: u64) -> [u8; VALUE_BYTES] {
    let mut value = [0u8; VALUE_BYTES];
    let text = format!("value of key #{id}");
    value[..text.len()].copy_from_slice(text.as_bytes());
    value
}

/// Writes the sorted table and returns the sparse index: the first key of each page.
fn write_table(path: &Path, keys: u64) -> io::Result<Vec<[u8; KEY_BYTES]>> {
    let mut records: Vec<([u8; KEY_BYTES], u64)> = Vec::new();
    records
        .try_reserve_exact(usize::try_from(keys).unwrap_or(usize::MAX))
        .map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!("no memory to sort {keys} keys"),
            )
        })?;
    records.extend((0..keys).map(|id| (key_of(id), id)));
    records.sort_unstable();
    let mut out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut index = Vec::with_capacity(records.len().div_ceil(RECORDS_PER_PAGE));
    for page in records.chunks(RECORDS_PER_PAGE) {
        index.push(page[0].0);
        let mut bytes = [0u8; PAGE_BYTES]; // unused slots stay zero: an all-zero key is no key
        for (slot, (key, id)) in bytes.chunks_exact_mut(RECORD_BYTES).zip(page) {
            slot[..KEY_BYTES].copy_from_slice(key);
            slot[KEY_BYTES..].copy_from_slice(&value_of(*id));
        }
        out.write_all(&bytes)?;
    }
    out.into_inner().map_err(|e| e.into_error())?.sync_all()?;
    Ok(index)
}

/// A 4 KiB buffer aligned for `O_DIRECT`.
#[repr(C, align(4096))]
struct PageBuf([u8; PAGE_BYTES]);

/// The on-disk table. Every `get` reads one page from the file.
struct Store {
    file: File,
    index: Vec<[u8; KEY_BYTES]>,
    buf: Box<PageBuf>,
    /// Read system calls made.
    reads: u64,
    /// Bytes those calls returned.
    bytes: u64,
}

impl Store {
    fn open(path: &Path, index: Vec<[u8; KEY_BYTES]>, direct: bool) -> io::Result<Self> {
        let file = open_for_reading(path, direct)?;
        Ok(Store {
            file,
            index,
            buf: Box::new(PageBuf([0; PAGE_BYTES])),
            reads: 0,
            bytes: 0,
        })
    }

    fn pages(&self) -> u64 {
        self.index.len() as u64
    }

    /// The value stored under `key`, if any. The sparse index only picks the page; whether the
    /// key is there takes a read of that page.
    fn get(&mut self, key: &[u8; KEY_BYTES]) -> io::Result<Option<[u8; VALUE_BYTES]>> {
        let page = self
            .index
            .partition_point(|first| first <= key)
            .saturating_sub(1);
        self.read_page(page as u64)?;
        let records = self.buf.0.chunks_exact(RECORD_BYTES);
        let used = records
            .take_while(|r| r[..KEY_BYTES] != [0; KEY_BYTES])
            .count();
        let page = &self.buf.0[..used * RECORD_BYTES];
        let mut lo = 0;
        let mut hi = used;
        while lo < hi {
            let mid = (lo + hi) / 2;
            let record = &page[mid * RECORD_BYTES..(mid + 1) * RECORD_BYTES];
            match record[..KEY_BYTES].cmp(key.as_slice()) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => {
                    let mut value = [0; VALUE_BYTES];
                    value.copy_from_slice(&record[KEY_BYTES..]);
                    return Ok(Some(value));
                }
            }
        }
        Ok(None)
    }

    /// Reads page `page` into `buf`, counting every system call.
    fn read_page(&mut self, page: u64) -> io::Result<()> {
        let offset = page * PAGE_BYTES as u64;
        let mut done = 0;
        while done < PAGE_BYTES {
            let n = read_at(
                &mut self.file,
                &mut self.buf.0[done..],
                offset + done as u64,
            )?;
            self.reads += 1;
            self.bytes += n as u64;
            if n == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::UnexpectedEof,
                    format!("the table ends inside page {page}"),
                ));
            }
            done += n;
        }
        Ok(())
    }
}

#[cfg(target_os = "linux")]
fn open_for_reading(path: &Path, direct: bool) -> io::Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = fs::OpenOptions::new();
    options.read(true);
    if direct {
        options.custom_flags(libc::O_DIRECT);
    }
    options.open(path).map_err(|e| {
        if direct {
            io::Error::new(e.kind(), format!("{e} (O_DIRECT: try without --direct)"))
        } else {
            e
        }
    })
}

#[cfg(not(target_os = "linux"))]
fn open_for_reading(path: &Path, direct: bool) -> io::Result<File> {
    if direct {
        return Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "--direct is only supported on Linux",
        ));
    }
    File::open(path)
}

/// One positioned read: `pread` on Unix, seek and read elsewhere.
#[cfg(unix)]
fn read_at(file: &mut File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    std::os::unix::fs::FileExt::read_at(file, buf, offset)
}

#[cfg(not(unix))]
fn read_at(file: &mut File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::io::{Read, Seek, SeekFrom};
    file.seek(SeekFrom::Start(offset))?;
    file.read(buf)
}

struct Lookup {
    key: [u8; KEY_BYTES],
    id: u64,
    present: bool,
}

/// Lookups of uniformly chosen stored keys, and of absent keys (ids with the top bit set,
/// which `key_of`, a bijection, never maps onto a stored key).
fn make_workload(config: &Config) -> Result<Vec<Lookup>, String> {
    let mut rng = SplitMix64(0x5eed);
    let mut workload = Vec::new();
    workload
        .try_reserve_exact(usize_from(config.lookups)?)
        .map_err(|_| format!("no memory for {} lookups", config.lookups))?;
    workload.extend((0..config.lookups).map(|_| {
        let present = rng.next_f64() >= config.absent_ratio;
        let id = if present {
            rng.below(config.keys)
        } else {
            rng.next() | 1 << 63
        };
        Lookup {
            key: key_of(id),
            id,
            present,
        }
    }));
    Ok(workload)
}

struct RunStats {
    reads: u64,
    bytes: u64,
    found: u64,
    false_positive_reads: u64,
    time: Duration,
}

fn run_workload(
    store: &mut Store,
    filter: Option<&BlockedBloomFilter>,
    workload: &[Lookup],
) -> Result<RunStats, String> {
    let (reads_before, bytes_before) = (store.reads, store.bytes);
    let mut found = 0;
    let mut false_positive_reads = 0;
    let started = Instant::now();
    for lookup in workload {
        let answer = if filter.is_none_or(|f| f.contains(lookup.key)) {
            if filter.is_some() && !lookup.present {
                false_positive_reads += 1;
            }
            store
                .get(&lookup.key)
                .map_err(|e| format!("reading the table: {e}"))?
        } else {
            None
        };
        match (answer, lookup.present) {
            (Some(value), true) if value == value_of(lookup.id) => found += 1,
            (None, false) => {}
            _ => {
                return Err(format!(
                    "wrong answer for key #{} (present: {})",
                    lookup.id, lookup.present
                ));
            }
        }
    }
    Ok(RunStats {
        reads: store.reads - reads_before,
        bytes: store.bytes - bytes_before,
        found,
        false_positive_reads,
        time: started.elapsed(),
    })
}

/// SplitMix64: a small, fast, seedable generator; plenty for synthetic workloads.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        mix64(self.0)
    }

    fn next_f64(&mut self) -> f64 {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next()) * u128::from(n)) >> 64) as u64
    }
}

fn percent(part: u64, whole: u64) -> f64 {
    100.0 * ratio(part, whole)
}
