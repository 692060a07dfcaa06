//! The URLs present in both of two large files, found exactly within a fixed memory budget: a
//! scaled-down "two files of 5 billion URLs each, 4 GB of memory".
//!
//! Neither file fits in memory, so a Bloom filter does the first cut:
//!
//! * pass 0 counts the lines of A (streaming);
//! * pass 1 streams A into a [`BloomFilter`](bloom::BloomFilter) that takes the whole budget:
//!   `m` = budget × 8 bits, `k = round((m / n) ln 2)` hashes for `n` lines of A, and a predicted
//!   false-positive rate `p = (1 - e^(-kn/m))^k`;
//! * pass 2 streams B and writes every line the filter accepts (every URL of B that is in A,
//!   plus a fraction `p` of the others) to a candidates file, then drops the filter;
//! * pass 3 removes the false candidates exactly. If the candidates fit in the budget as a hash
//!   set, it loads them and streams A, emitting each candidate found in A once (duplicates in A
//!   or B are emitted once). Otherwise it splits the candidates and A by a hash of the URL into
//!   enough bucket files that each bucket's candidates fit, and intersects bucket by bucket
//!   (recursing on a bucket that is still too large).
//!
//! The budget covers the filter and the hash sets, estimated as hashbrown lays them out (see
//! `set_bytes`), plus the write buffers while partitioning; the process's peak resident set
//! (`VmHWM` in `/proc/self/status`, Linux only, reset before each pass) is printed beside it
//! and also contains the program itself. At the default 16 MiB for 2 million URLs the filter
//! has 67 bits per URL and practically no false positives; the real problem's ratio, 4 GiB for
//! 5 billion URLs (6.9 bits per URL, p ≈ 3.6%), is `--memory-mb 1.64`.
//!
//! Without `--a` and `--b` the example generates its own input, two files of `--urls` URLs
//! that share a known `--overlap` fraction, and checks its answer against that ground truth:
//! it prints `verified`, or exits non-zero.
//!
//! Run:
//!
//! ```sh
//! cargo run --release -p politecrawl-bloom --example url_intersect
//! cargo run --release -p politecrawl-bloom --example url_intersect -- --memory-mb 1.64
//! cargo run --release -p politecrawl-bloom --example url_intersect -- --a a.txt --b b.txt --out both.txt
//! ```
//!
//! Flags:
//!
//! * `--a FILE`, `--b FILE`: the two inputs, one URL per line (`\n` or `\r\n`; empty lines are
//!   skipped; any bytes, not only UTF-8). Give both or neither.
//! * `--memory-mb MB`: the memory budget in MiB, fractions allowed, at least 0.25 (default 16).
//! * `--out FILE`: where to write the intersection, one URL per line (default: a temp file,
//!   removed at exit).
//! * `--urls N`: with generated input, the URLs in each file (default 2,000,000).
//! * `--overlap F`: with generated input, the fraction of B's URLs that are also in A, 0 to 1
//!   (default 0.1).
//! * `--help`: print this summary.
//!
//! Temporary files (generated input, candidates, buckets) go to a fresh directory under the
//! system temp dir, removed at exit; they need about the size of A plus B on disk.

mod common;

use std::collections::HashSet;
use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::{Duration, Instant};

use bloom::{BloomFilter, ErrorKind, ItemHasher};

use common::{Flags, TempDir, group, hashbrown_slots, mib, mix64, proc_status_bytes, ratio};

/// Lines handed to the filter's batch operations at a time.
const CHUNK_LINES: usize = 1024;
/// Buckets written at once when partitioning; more would need more file descriptors and write
/// buffers, so larger inputs partition again inside each bucket.
const MAX_FANOUT: usize = 256;
/// Partitioning levels before a bucket that still looks too large is loaded with its memory
/// watched line by line (only repeated lines can make it shrink that far).
const MAX_DEPTH: u32 = 4;
/// The smallest budget accepted, in bytes.
const MIN_BUDGET: u64 = 256 << 10;
/// The key of the fingerprint that compares the answer with the ground truth.
const FINGERPRINT_KEY: [u8; 16] = *b"url-fingerprint!";

const USAGE: &str = "\
url_intersect: the URLs present in both of two files, exactly, within a memory budget.

usage: cargo run --release -p politecrawl-bloom --example url_intersect -- [FLAGS]

  --a FILE         first input, one URL per line   (both --a and --b, or neither:
  --b FILE         second input                     then the input is generated)
  --memory-mb MB   memory budget in MiB, >= 0.25 (default 16)
  --out FILE       write the intersection here (default: a temp file, removed at exit)
  --urls N         generated input: URLs per file (default 2000000)
  --overlap F      generated input: fraction of B also in A, 0..=1 (default 0.1)
  --help           print this help";

struct Config {
    inputs: Option<(PathBuf, PathBuf)>,
    budget: u64,
    out: Option<PathBuf>,
    urls: u64,
    overlap: f64,
}

fn main() -> ExitCode {
    common::main("url_intersect", USAGE, parse_args, run)
}

fn parse_args(args: impl Iterator<Item = String>) -> Result<Option<Config>, String> {
    let mut a = None;
    let mut b = None;
    let mut memory_mb = 16.0;
    let mut out = None;
    let mut urls = None;
    let mut overlap = None;
    let mut args = Flags::new(args);
    while let Some(flag) = args.next_flag() {
        match flag.as_str() {
            "--help" | "-h" => return Ok(None),
            "--a" => a = Some(PathBuf::from(args.value()?)),
            "--b" => b = Some(PathBuf::from(args.value()?)),
            "--out" => out = Some(PathBuf::from(args.value()?)),
            "--memory-mb" => {
                memory_mb = args.number_where(
                    |mb| mb.is_finite() && mb * (1 << 20) as f64 >= MIN_BUDGET as f64,
                    "expects a number of MiB, at least 0.25",
                )?;
                // 2^40 bits is the largest filter the crate builds.
                if memory_mb > (1u64 << 17) as f64 {
                    return Err(format!("--memory-mb {memory_mb} is above 128 GiB"));
                }
            }
            "--urls" => {
                urls = Some(args.count_where(
                    |n| (1..1 << 60).contains(&n),
                    "expects a positive whole number",
                )?);
            }
            "--overlap" => {
                overlap = Some(args.number_where(
                    |f| (0.0..=1.0).contains(&f),
                    "expects a fraction between 0 and 1",
                )?);
            }
            _ => return Err(args.unknown()),
        }
    }
    let inputs = match (a, b) {
        (Some(a), Some(b)) => {
            if urls.is_some() || overlap.is_some() {
                return Err(
                    "--urls and --overlap apply only to generated input, not to --a/--b".into(),
                );
            }
            Some((a, b))
        }
        (None, None) => None,
        _ => return Err("give both --a and --b, or neither to generate the input".into()),
    };
    Ok(Some(Config {
        inputs,
        budget: (memory_mb * (1 << 20) as f64) as u64,
        out,
        urls: urls.unwrap_or(2_000_000),
        overlap: overlap.unwrap_or(0.1),
    }))
}

/// What generated input must produce.
struct GroundTruth {
    shared: u64,
    fingerprint: u64,
}

fn run(config: &Config) -> Result<(), String> {
    let dir =
        TempDir::new("bloom-url-intersect").map_err(|e| format!("creating a temp dir: {e}"))?;
    let budget = config.budget;
    let start_rss = proc_status_bytes("VmRSS:");
    let fingerprinter = ItemHasher::with_key(FINGERPRINT_KEY);

    let (a_path, b_path, truth) = inputs(config, dir.path(), &fingerprinter)?;
    let (out_path, out) = output(config, dir.path(), &a_path, &b_path)?;

    println!(
        "memory budget: {} ({} bytes); the program alone had an RSS of {} at start",
        mib(budget),
        group(budget),
        start_rss.map_or("n/a".into(), mib),
    );
    println!();

    // Pass 0: count A.
    let pass = Pass::start();
    let a_stats = count_lines(&a_path, "A")?;
    let b_size = fs::metadata(&b_path).map_or(0, |m| m.len());
    pass.report(
        "pass 0, count A",
        &format!(
            "A: {} lines, {}; B: {}",
            group(a_stats.lines),
            mib(a_stats.bytes),
            mib(b_size)
        ),
    );

    let mut verifier = Verifier {
        dir: dir.path(),
        budget,
        base_key: ItemHasher::random().key(),
        out: BufWriter::new(out),
        out_path: out_path.clone(),
        fingerprinter,
        matches: 0,
        fingerprint: 0,
        distinct_candidates: 0,
        false_candidates: 0,
        in_memory_sets: 0,
        deepest: 0,
        largest_set: 0,
        next_file: 0,
    };

    let candidates_path = dir.path().join("candidates.txt");
    let (cut, b_lines) = if a_stats.lines == 0 {
        println!("A is empty: so is the intersection");
        (Cut::default(), count_lines(&b_path, "B")?.lines)
    } else {
        let (cut, b_lines) = filter_cut(budget, a_stats, &a_path, &b_path, &candidates_path)?;
        let candidates = cut.candidates;

        // Pass 3: exact check of the candidates against A.
        let pass = Pass::start();
        let need = set_bytes(candidates.lines, candidates.bytes);
        verifier.verify(&candidates_path, candidates, &a_path, 0)?;
        let how = if verifier.deepest == 0 {
            format!(
                "candidates as a hash set ≈ {} fit the budget: loaded, A streamed once",
                mib(need)
            )
        } else {
            format!(
                "candidates as a hash set ≈ {} exceed the budget: split with A by hash \
                 ({} level{}), {} non-empty buckets intersected, largest bucket set ≈ {}",
                mib(need),
                verifier.deepest,
                if verifier.deepest == 1 { "" } else { "s" },
                group(verifier.in_memory_sets),
                mib(verifier.largest_set),
            )
        };
        pass.report("pass 3, exact check", &how);
        (cut, b_lines)
    };
    let Cut {
        candidates,
        filter_bytes,
        predicted,
    } = cut;
    let Verifier {
        out,
        matches,
        fingerprint,
        distinct_candidates,
        false_candidates,
        ..
    } = verifier;
    out.into_inner()
        .map_err(|e| e.into_error())
        .and_then(|f| f.sync_all())
        .map_err(|e| format!("writing {}: {e}", out_path.display()))?;

    println!();
    println!(
        "lines in A: {}, lines in B: {}",
        group(a_stats.lines),
        group(b_lines)
    );
    println!(
        "filter: {} of memory, predicted false-positive rate {:.3e}",
        mib(filter_bytes as u64),
        predicted,
    );
    println!(
        "candidates: {} lines ({} distinct)",
        group(candidates.lines),
        group(distinct_candidates)
    );
    println!("exact intersection: {} URLs", group(matches));
    // Lines of B not in A: the false candidates, and the lines the filter rejected.
    let b_outside = false_candidates + b_lines.saturating_sub(candidates.lines);
    println!(
        "false candidates removed: {} (distinct), measured false-positive rate {:.3e} over {} lines of B not in A{}",
        group(false_candidates),
        ratio(false_candidates, b_outside),
        group(b_outside),
        if truth.is_some() {
            ""
        } else {
            " (exact only if B has no repeated lines)"
        },
    );
    if config.out.is_some() {
        println!("written to {}", out_path.display());
    }

    match truth {
        None => println!("not verified: no ground truth for given files"),
        Some(truth) if truth.shared == matches && truth.fingerprint == fingerprint => {
            println!(
                "verified: the answer is exactly the {} generated shared URLs",
                group(truth.shared)
            );
        }
        Some(truth) => {
            return Err(format!(
                "NOT verified: found {} URLs (fingerprint {fingerprint:016x}), expected {} \
                 (fingerprint {:016x})",
                matches, truth.shared, truth.fingerprint
            ));
        }
    }
    Ok(())
}

/// The input files: given, or generated with a known answer. Checked before the long passes.
fn inputs(
    config: &Config,
    dir: &Path,
    fingerprinter: &ItemHasher,
) -> Result<(PathBuf, PathBuf, Option<GroundTruth>), String> {
    let (a_path, b_path, truth) = match &config.inputs {
        Some((a, b)) => (a.clone(), b.clone(), None),
        None => {
            let started = Instant::now();
            let (a, b) = (dir.join("a.txt"), dir.join("b.txt"));
            let truth = generate(&a, &b, config.urls, config.overlap, fingerprinter)?;
            println!(
                "input: generated {} URLs per file ({} and {}), {} in both ({:.0}%), in {}",
                group(config.urls),
                file_mib(&a),
                file_mib(&b),
                group(truth.shared),
                100.0 * config.overlap,
                secs(started.elapsed()),
            );
            (a, b, Some(truth))
        }
    };
    for (path, what) in [(&a_path, "A"), (&b_path, "B")] {
        let meta = fs::metadata(path)
            .map_err(|e| format!("cannot read {what} ({}): {e}", path.display()))?;
        if meta.is_dir() {
            return Err(format!("{what} ({}) is a directory", path.display()));
        }
    }
    Ok((a_path, b_path, truth))
}

/// The output file, created before the long passes; never one of the inputs.
fn output(config: &Config, dir: &Path, a: &Path, b: &Path) -> Result<(PathBuf, File), String> {
    let out_path = config
        .out
        .clone()
        .unwrap_or_else(|| dir.join("intersection.txt"));
    if let Ok(out) = fs::canonicalize(&out_path) {
        for input in [a, b] {
            if fs::canonicalize(input).is_ok_and(|input| input == out) {
                return Err(format!(
                    "--out {} is an input file; it would be overwritten",
                    out_path.display()
                ));
            }
        }
    }
    let out = File::create(&out_path)
        .map_err(|e| format!("cannot create {}: {e}", out_path.display()))?;
    Ok((out_path, out))
}

/// What the filter's cut left: the candidates file's size, and the filter that made it.
#[derive(Default)]
struct Cut {
    candidates: Stats,
    filter_bytes: usize,
    predicted: f64,
}

/// Passes 1 and 2: A into a filter of the whole budget, then B through it, every line it
/// accepts written to `candidates_path`. Answers the cut and the lines of B.
fn filter_cut(
    budget: u64,
    a_stats: Stats,
    a_path: &Path,
    b_path: &Path,
    candidates_path: &Path,
) -> Result<(Cut, u64), String> {
    let pass = Pass::start();
    let bits = (budget * 8) / 64 * 64;
    let hashes = match bloom::optimal_hashes(bits, a_stats.lines) {
        Ok(k) => k,
        Err(e) if matches!(e.kind(), ErrorKind::TooManyHashes(_)) => bloom::MAX_HASHES,
        Err(e) => return Err(format!("sizing the filter: {e}")),
    };
    let mut filter =
        BloomFilter::with_bits(bits, hashes).map_err(|e| format!("building the filter: {e}"))?;
    let predicted = filter.false_positive_rate_at(a_stats.lines);
    let filter_bytes = filter.memory_bytes();
    let mut lines = Lines::open(a_path, "A")?;
    let mut chunk = Chunk::default();
    let mut inserted = Vec::with_capacity(CHUNK_LINES);
    while lines.read_chunk(&mut chunk)? {
        filter.insert_batch(&chunk.items(), &mut inserted);
    }
    pass.report(
        "pass 1, A -> filter",
        &format!(
            "{} bits ({}), {} hashes, {:.1} bits/line, predicted false-positive rate {:.3e}",
            group(bits),
            mib(filter_bytes as u64),
            hashes,
            bits as f64 / a_stats.lines as f64,
            predicted,
        ),
    );

    // Pass 2: B through the filter; candidates to a file.
    let pass = Pass::start();
    let mut b_lines = 0;
    let mut lines = Lines::open(b_path, "B")?;
    let mut out = Writer::create(candidates_path, 1 << 16)?;
    let mut found = Vec::with_capacity(CHUNK_LINES);
    while lines.read_chunk(&mut chunk)? {
        let items = chunk.items();
        filter.contains_batch(&items, &mut found);
        b_lines += items.len() as u64;
        for (item, _) in items.iter().zip(&found).filter(|(_, hit)| **hit) {
            out.write_line(item)?;
        }
    }
    let candidates = out.finish()?;
    drop(filter);
    pass.report(
        "pass 2, B -> candidates",
        &format!(
            "B: {} lines; {} candidates ({})",
            group(b_lines),
            group(candidates.lines),
            mib(candidates.bytes),
        ),
    );
    let cut = Cut {
        candidates,
        filter_bytes,
        predicted,
    };
    Ok((cut, b_lines))
}

/// Lines and bytes (line endings excluded) of a file.
#[derive(Clone, Copy, Debug, Default)]
struct Stats {
    lines: u64,
    bytes: u64,
}

fn count_lines(path: &Path, what: &str) -> Result<Stats, String> {
    let mut lines = Lines::open(path, what)?;
    let mut stats = Stats::default();
    while let Some(line) = lines.next_line()? {
        stats.lines += 1;
        stats.bytes += line.len() as u64;
    }
    Ok(stats)
}

/// Generated URL number `i`, about 70 bytes; distinct for distinct `i`, since `mix64` is a
/// bijection and its full value is in the URL.
fn url(i: u64, out: &mut Vec<u8>) {
    let h = mix64(i);
    out.clear();
    // Writing to a Vec cannot fail.
    let _ = write!(
        out,
        "https://shop-{}.example.com/catalog/{}/item-{h:016x}.html",
        h % 9973,
        (h >> 32) % 1000
    );
}

/// Writes A (URLs 0..n) and B (n URLs, `overlap` of them from A, spread evenly, the rest new).
fn generate(
    a: &Path,
    b: &Path,
    n: u64,
    overlap: f64,
    fingerprinter: &ItemHasher,
) -> Result<GroundTruth, String> {
    let shared = ((n as f64 * overlap).round() as u64).min(n);
    let mut line = Vec::new();
    let mut out = Writer::create(a, 1 << 16)?;
    for i in 0..n {
        url(i, &mut line);
        out.write_line(&line)?;
    }
    out.finish()?;

    let mut out = Writer::create(b, 1 << 16)?;
    let mut truth = GroundTruth {
        shared,
        fingerprint: 0,
    };
    let step = n.checked_div(shared).unwrap_or(0);
    let (mut next_shared, mut next_new) = (0u64, n);
    for t in 0..n {
        // Exactly `shared` of the `n` positions take a URL of A.
        let take = |t: u64| (u128::from(t) * u128::from(shared) / u128::from(n)) as u64;
        if take(t + 1) > take(t) {
            url(next_shared * step, &mut line);
            next_shared += 1;
            truth.fingerprint = truth
                .fingerprint
                .wrapping_add(fingerprinter.hash(&line).h1());
        } else {
            url(next_new, &mut line);
            next_new += 1;
        }
        out.write_line(&line)?;
    }
    out.finish()?;
    Ok(truth)
}

/// Pass 3's state: the output, its counts, and the files it makes.
struct Verifier<'a> {
    dir: &'a Path,
    budget: u64,
    /// Partitioning keys derive from this random key, a different one at each level, so that a
    /// bucket splits again and an adversary cannot pile URLs into one bucket.
    base_key: [u8; 16],
    out: BufWriter<File>,
    out_path: PathBuf,
    fingerprinter: ItemHasher,
    matches: u64,
    /// Wrapping sum of the fingerprints of the URLs written.
    fingerprint: u64,
    distinct_candidates: u64,
    false_candidates: u64,
    /// Hash sets built (one per bucket, or one for all candidates).
    in_memory_sets: u64,
    /// The deepest partitioning level used.
    deepest: u32,
    /// The largest set's estimated bytes.
    largest_set: u64,
    next_file: u64,
}

impl Verifier<'_> {
    /// Writes the candidates (from `candidates`, with `stats`) that occur in `a`, each once.
    fn verify(
        &mut self,
        candidates: &Path,
        stats: Stats,
        a: &Path,
        depth: u32,
    ) -> Result<(), String> {
        if stats.lines == 0 {
            return Ok(()); // nothing here can match: this part of A need not be read
        }
        let need = set_bytes(stats.lines, stats.bytes);
        if need <= self.budget {
            return self.intersect_in_memory(candidates, stats.lines, a, false);
        }
        if depth >= MAX_DEPTH {
            return self.intersect_in_memory(candidates, stats.lines, a, true);
        }
        self.deepest = self.deepest.max(depth + 1);
        // 25% slack: buckets vary in size, and a hash set's table grows in powers of two.
        let fanout =
            ((need as f64 / self.budget as f64 * 1.25).ceil() as usize).clamp(2, MAX_FANOUT);
        let mut key = self.base_key;
        key[0] ^= depth as u8 + 1;
        let hasher = ItemHasher::with_key(key);
        // The write buffers of all buckets together take at most a quarter of the budget.
        let buffer = usize::try_from(self.budget / (4 * fanout as u64))
            .unwrap_or(usize::MAX)
            .clamp(4 << 10, 64 << 10);
        let candidate_buckets = self.partition(candidates, fanout, &hasher, buffer)?;
        let a_buckets = self.partition(a, fanout, &hasher, buffer)?;
        for ((c, c_stats), (a, _)) in candidate_buckets.into_iter().zip(a_buckets) {
            let result = self.verify(&c, c_stats, &a, depth + 1);
            // Free the disk as we go; the temp dir is removed at exit in any case.
            let _ = fs::remove_file(&c);
            let _ = fs::remove_file(&a);
            result?;
        }
        Ok(())
    }

    /// Splits `source` into `fanout` bucket files by `hasher`.
    fn partition(
        &mut self,
        source: &Path,
        fanout: usize,
        hasher: &ItemHasher,
        buffer: usize,
    ) -> Result<Vec<(PathBuf, Stats)>, String> {
        let mut writers = Vec::with_capacity(fanout);
        for _ in 0..fanout {
            let path = self.dir.join(format!("bucket-{}.txt", self.next_file));
            self.next_file += 1;
            writers.push(Writer::create(&path, buffer)?);
        }
        let mut lines = Lines::open(source, "a bucket")?;
        while let Some(line) = lines.next_line()? {
            let h = hasher.hash(line).h1();
            let bucket = ((u128::from(h) * fanout as u128) >> 64) as usize;
            writers[bucket].write_line(line)?;
        }
        writers
            .into_iter()
            .map(|w| {
                let path = w.path.clone();
                w.finish().map(|stats| (path, stats))
            })
            .collect()
    }

    /// Loads the candidates into a hash set and streams `a`, writing each candidate found there
    /// and taking it out of the set (so each is written once). With `watch`, checks the set's
    /// memory as it grows, for buckets whose line count overstates their distinct lines.
    fn intersect_in_memory(
        &mut self,
        candidates: &Path,
        lines: u64,
        a: &Path,
        watch: bool,
    ) -> Result<(), String> {
        let mut set: HashSet<Box<[u8]>> = if watch {
            HashSet::new()
        } else {
            HashSet::with_capacity(usize::try_from(lines).unwrap_or(usize::MAX))
        };
        let mut heap = 0;
        let mut input = Lines::open(candidates, "the candidates")?;
        while let Some(line) = input.next_line()? {
            if !set.contains(line) {
                heap += entry_heap_bytes(line.len() as u64);
                set.insert(line.into());
                if watch && table_bytes(set.capacity() as u64) + heap > self.budget {
                    return Err(format!(
                        "a bucket of candidates does not fit in {} even after {MAX_DEPTH} levels \
                         of partitioning; raise --memory-mb",
                        mib(self.budget)
                    ));
                }
            }
        }
        self.in_memory_sets += 1;
        self.largest_set = self
            .largest_set
            .max(table_bytes(set.capacity() as u64) + heap);
        self.distinct_candidates += set.len() as u64;
        let mut input = Lines::open(a, "A")?;
        while let Some(line) = input.next_line()? {
            if set.remove(line) {
                self.matches += 1;
                self.fingerprint = self
                    .fingerprint
                    .wrapping_add(self.fingerprinter.hash(line).h1());
                self.out
                    .write_all(line)
                    .and_then(|()| self.out.write_all(b"\n"))
                    .map_err(|e| format!("writing {}: {e}", self.out_path.display()))?;
            }
        }
        self.false_candidates += set.len() as u64;
        Ok(())
    }
}

/// Bytes of a `HashSet<Box<[u8]>>` made with `with_capacity(lines)` and holding `lines` lines
/// of `bytes` bytes in all: its table, and each line's own heap block.
fn set_bytes(lines: u64, bytes: u64) -> u64 {
    table_bytes(lines) + bytes + lines * entry_heap_bytes(0)
}

/// hashbrown (std's `HashSet`) keeps `capacity` entries in a power-of-two number of slots at a
/// load of at most 7/8; each slot is the entry (a 16-byte `Box<[u8]>`) and one control byte,
/// plus 16 trailing control bytes.
fn table_bytes(capacity: u64) -> u64 {
    if capacity == 0 {
        return 0;
    }
    hashbrown_slots(capacity) * (size_of::<Box<[u8]>>() as u64 + 1) + 16
}

/// An upper bound on the heap a `len`-byte line takes: 64-bit glibc malloc rounds a block of
/// `len` bytes plus its 8-byte header up to 16, at least 32, so at most `len + 32`.
fn entry_heap_bytes(len: u64) -> u64 {
    len + 32
}

/// A line reader over a file: `\n` or `\r\n` endings stripped, empty lines skipped.
struct Lines {
    reader: BufReader<File>,
    path: PathBuf,
    buf: Vec<u8>,
}

impl Lines {
    fn open(path: &Path, what: &str) -> Result<Self, String> {
        let file = File::open(path)
            .map_err(|e| format!("cannot read {what} ({}): {e}", path.display()))?;
        Ok(Lines {
            reader: BufReader::with_capacity(1 << 16, file),
            path: path.to_path_buf(),
            buf: Vec::new(),
        })
    }

    fn next_line(&mut self) -> Result<Option<&[u8]>, String> {
        loop {
            self.buf.clear();
            let n = self
                .reader
                .read_until(b'\n', &mut self.buf)
                .map_err(|e| format!("reading {}: {e}", self.path.display()))?;
            if n == 0 {
                return Ok(None);
            }
            let mut line = self.buf.as_slice();
            line = line.strip_suffix(b"\n").unwrap_or(line);
            line = line.strip_suffix(b"\r").unwrap_or(line);
            if !line.is_empty() {
                let len = line.len();
                return Ok(Some(&self.buf[..len]));
            }
        }
    }

    /// Replaces `chunk` with up to [`CHUNK_LINES`] next lines; false at the end of the file.
    fn read_chunk(&mut self, chunk: &mut Chunk) -> Result<bool, String> {
        chunk.data.clear();
        chunk.ends.clear();
        while chunk.ends.len() < CHUNK_LINES {
            match self.next_line()? {
                Some(line) => {
                    chunk.data.extend_from_slice(line);
                    chunk.ends.push(chunk.data.len());
                }
                None => break,
            }
        }
        Ok(!chunk.ends.is_empty())
    }
}

/// Lines stored back to back, for the batch operations.
#[derive(Default)]
struct Chunk {
    data: Vec<u8>,
    ends: Vec<usize>,
}

impl Chunk {
    fn items(&self) -> Vec<&[u8]> {
        let mut start = 0;
        self.ends
            .iter()
            .map(|&end| {
                let item = &self.data[start..end];
                start = end;
                item
            })
            .collect()
    }
}

/// A buffered line writer that counts what it writes.
struct Writer {
    out: BufWriter<File>,
    path: PathBuf,
    stats: Stats,
}

impl Writer {
    fn create(path: &Path, buffer: usize) -> Result<Self, String> {
        let file =
            File::create(path).map_err(|e| format!("cannot create {}: {e}", path.display()))?;
        Ok(Writer {
            out: BufWriter::with_capacity(buffer, file),
            path: path.to_path_buf(),
            stats: Stats::default(),
        })
    }

    fn write_line(&mut self, line: &[u8]) -> Result<(), String> {
        self.stats.lines += 1;
        self.stats.bytes += line.len() as u64;
        self.out
            .write_all(line)
            .and_then(|()| self.out.write_all(b"\n"))
            .map_err(|e| format!("writing {}: {e}", self.path.display()))
    }

    fn finish(self) -> Result<Stats, String> {
        self.out
            .into_inner()
            .map_err(|e| format!("writing {}: {}", self.path.display(), e.error()))?;
        Ok(self.stats)
    }
}

/// Times a pass and reports its peak memory: the peak RSS is reset at the start (Linux).
struct Pass(Instant);

impl Pass {
    fn start() -> Self {
        reset_peak_rss();
        Pass(Instant::now())
    }

    fn report(self, name: &str, what: &str) {
        println!(
            "{name:<24} {:>8}   peak RSS {:>10}   {what}",
            secs(self.0.elapsed()),
            proc_status_bytes("VmHWM:").map_or("n/a".into(), mib),
        );
    }
}

/// Resets `VmHWM` to the current resident set (Linux 4.0 and later; ignored elsewhere).
fn reset_peak_rss() {
    let _ = fs::write("/proc/self/clear_refs", "5");
}

fn file_mib(path: &Path) -> String {
    fs::metadata(path).map_or("?".into(), |m| mib(m.len()))
}

/// `d` in seconds, two decimals (`common::secs`, which the other examples use, prints three).
fn secs(d: Duration) -> String {
    format!("{:.2} s", d.as_secs_f64())
}
