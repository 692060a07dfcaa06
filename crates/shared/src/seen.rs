//! The seen-test's client half: the sizes its generations grow by, and each URL's
//! fingerprint.
//!
//! The seen-test lives in Redis (`scripts/common.lua` tests and sets it) as a growing cuckoo
//! filter: each generation is a table of buckets of four fingerprint slots, and a URL may sit
//! in either of two buckets. A Bloom filter needs some 44% more bits than the information it
//! holds; a full cuckoo table at 94% load needs about 7% more than its fingerprints, which is
//! what takes a growing seen-test under five bytes a URL at a rate of one in a million (a
//! Bloom filter's generations cost 4.5 to 5 bytes a URL when full, before the room a growing
//! filter keeps free).

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use siphasher::sip128::{Hasher128, SipHasher13};

use crate::error::{Error, ErrorKind};

/// Slots of each bucket.
const SLOTS: u64 = 4;
/// Slots a lookup compares a fingerprint with in each generation: two buckets'.
const COMPARED: f64 = 8.0;
/// The share of its slots a generation fills before the next one starts: a cuckoo table of
/// four-slot buckets fills to about 95% before an insertion fails.
const LOAD: f64 = 0.94;
/// The generations a crawl's fingerprints must leave room for: with each 1.5 times the one
/// before, 30 of them grow a bucket's seen-test 127,000-fold.
const MIN_GENERATIONS: u64 = 30;
/// Generations a bucket may grow to.
const MAX_GENERATIONS: u64 = 64;
/// Each generation holds this many times the URLs of the one before. Smaller steps keep
/// less room free (a table just started is empty), at the cost of more tables to look in:
/// at 1.5, a growing seen-test keeps on average 23% of its bytes free, at 2, 44%.
const GROWTH: f64 = 1.5;
/// The largest chunk key: 8 MiB, allocated at once on its first write, which a server does
/// in a few milliseconds.
const MAX_CHUNK_BYTES: u64 = 1 << 23;
/// The smallest chunk key.
const MIN_CHUNK_BYTES: u64 = 1 << 12;
/// The fewest chunks a generation is split into when it can be: with eight or more, rounding
/// up to whole chunks adds at most an eighth (which holds URLs too: it is not wasted).
const MIN_CHUNKS: u64 = 8;
/// Bytes of a chunk left for its string's header, so that the string fills the size class
/// it is allocated exactly.
const CHUNK_HEADER: u64 = 16;

/// One generation's geometry, as a script stores and uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Generation {
    /// Chunk keys.
    pub(crate) chunks: u64,
    /// Buckets in each chunk.
    buckets: u64,
    /// URLs it takes before the next generation starts.
    capacity: u64,
}

impl Generation {
    /// A generation as the scripts store it: "chunks buckets capacity".
    pub(crate) fn parse(text: &str) -> Option<Generation> {
        let mut numbers = text.split(' ').map(|n| n.parse().ok());
        let g = Generation {
            chunks: numbers.next()??,
            buckets: numbers.next()??,
            capacity: numbers.next()??,
        };
        numbers.next().is_none().then_some(g)
    }

    fn text(&self) -> String {
        format!("{} {} {}", self.chunks, self.buckets, self.capacity)
    }
}

/// The generations of every bucket's seen-test, computed once from the crawl's layout. Every
/// process of a crawl computes the same; a script stores each generation's geometry when it
/// creates it, so a crawl keeps the sizes it started with.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    /// Bits of each fingerprint: a multiple of four, at most 48.
    bits: u32,
    /// What the scripts take, per bucket of hosts: the fingerprint bits, then "chunks
    /// buckets capacity" per generation, `;` between them.
    texts: Vec<String>,
}

impl Schedule {
    /// The schedule of `buckets` buckets of hosts whose seen-tests together hold about
    /// `capacity` URLs before they first grow, at `rate` false positives over all of a
    /// bucket's generations.
    ///
    /// The buckets' first sizes are spread over one growth step (bucket `b` of `n` starts at
    /// 1.5^((b + 0.5) / n - 0.5) times the mean), so that they do not all grow at once: the
    /// crawl's seen-test then keeps its average room free at any size, never the most a
    /// single table keeps just after it grew.
    #[cfg(test)]
    pub(crate) fn new(capacity: u64, rate: f64, buckets: u32) -> Result<Schedule, Error> {
        Schedule::with_content(capacity, rate, buckets, 0)
    }

    /// The same, and after the hosts' buckets `content` buckets of the content-seen test,
    /// which together hold about `capacity` bodies before they first grow (a crawl reads at
    /// most one body a URL).
    pub(crate) fn with_content(
        capacity: u64,
        rate: f64,
        buckets: u32,
        content: u32,
    ) -> Result<Schedule, Error> {
        let bad = |what: String| Error::from(ErrorKind::BadLayout(what));
        if !(rate > 0.0 && rate < 1.0) {
            return Err(bad(format!(
                "the seen-test's rate must be between 0 and 1, not {rate}"
            )));
        }
        // Each generation answers yes by mistake at most COMPARED / 2^bits of the time.
        let wanted = (COMPARED * MIN_GENERATIONS as f64 / rate).log2();
        let bits = (wanted / 4.0).ceil() as u32 * 4;
        if bits > 48 {
            return Err(bad(format!("no seen-test fits a rate of {rate}")));
        }
        let generations =
            ((rate * ((1u64 << bits) - 1) as f64 / COMPARED) as u64).min(MAX_GENERATIONS);
        let bucket_bytes = u64::from(bits) / 2;
        let text = |first: f64| {
            let mut text = bits.to_string();
            for i in 0..generations {
                let g = generation(first * GROWTH.powi(i as i32), bucket_bytes);
                text.push(';');
                text.push_str(&g.text());
            }
            text
        };
        let spread = |n: u32| {
            let mean = capacity.div_ceil(u64::from(n.max(1))).max(1024) as f64;
            (0..n.max(1)).map(move |b| {
                let phase = (f64::from(b) + 0.5) / f64::from(n.max(1)) - 0.5;
                mean * GROWTH.powf(phase)
            })
        };
        let mut texts: Vec<String> = spread(buckets).map(text).collect();
        if content > 0 {
            texts.extend(spread(content).map(text));
        }
        Ok(Schedule { bits, texts })
    }

    /// What the scripts of bucket `bucket` take.
    pub(crate) fn text(&self, bucket: u32) -> &str {
        &self.texts[bucket as usize % self.texts.len()]
    }

    /// The bytes of generation `index` of bucket `bucket`'s seen-test, chunk headers aside.
    pub(crate) fn bytes(&self, bucket: u32, index: usize) -> Option<u64> {
        let g = Generation::parse(self.text(bucket).split(';').nth(index + 1)?)?;
        Some(g.chunks * g.buckets * u64::from(self.bits) / 2)
    }

    /// A URL's hash as the scripts take it: six bytes (big-endian) that pick its first
    /// bucket, six bytes of its fingerprint, never zero (an empty slot holds zero), and one
    /// byte for the generations already looked in (see [`Frozen::holds`]), 0 here. Both
    /// numbers come from the SipHash of the URL under the crawl's key.
    pub(crate) fn probes(&self, key: &[u8; 16], url: &str) -> Probes {
        let mut sip = SipHasher13::new_with_key(key);
        sip.write(url.as_bytes());
        let h = sip.finish128();
        let fingerprint = (h.h2 >> (64 - self.bits)) % ((1 << self.bits) - 1) + 1;
        let mut out = [0; 13];
        out[..6].copy_from_slice(&h.h1.to_be_bytes()[2..]);
        out[6..12].copy_from_slice(&fingerprint.to_be_bytes()[2..]);
        out
    }
}

/// A URL's probes, as [`Schedule::probes`] makes them.
pub(crate) type Probes = [u8; 13];

fn number(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0, |n, &b| n << 8 | u64::from(b))
}

/// The other bucket a fingerprint may sit in, as `alt` of `scripts/common.lua` computes it.
fn alt(i: u64, fp: u64, m: u64) -> u64 {
    let mix = (fp % (1 << 26)) * 40503 + (fp >> 26) * 7919;
    (mix % m + m - i % m) % m
}

/// A generation no longer written (every one but a bucket's newest): a copy of its bytes,
/// which a process keeps to look a URL up in without asking Redis. Kicks and the stash
/// touch the newest generation only, so a copy stays exact.
#[derive(Debug)]
pub(crate) struct FrozenGen {
    /// Each chunk's bytes: empty for a chunk never written.
    chunks: Vec<Vec<u8>>,
    /// Buckets in each chunk.
    buckets: u64,
    /// Bits of each fingerprint.
    bits: u32,
    /// The fingerprint left over when the generation ran out of room, and its bucket.
    stash: Option<(u64, u64)>,
}

impl FrozenGen {
    /// A generation from what Redis holds: its geometry ("chunks buckets capacity"), the
    /// fingerprint bits, its stash ("bucket fingerprint") if any, and its chunks.
    pub(crate) fn new(
        geometry: &str,
        bits: u32,
        stash: Option<&str>,
        chunks: Vec<Vec<u8>>,
    ) -> Result<FrozenGen, Error> {
        let bad = || {
            Error::from(ErrorKind::BadLayout(format!(
                "a seen-test generation {geometry:?}"
            )))
        };
        let g = Generation::parse(geometry).ok_or_else(bad)?;
        let stash = match stash.map(|s| s.split_once(' ')) {
            None => None,
            Some(Some((i, fp))) => Some((
                i.parse().map_err(|_| bad())?,
                fp.parse().map_err(|_| bad())?,
            )),
            Some(None) => return Err(bad()),
        };
        if g.chunks == 0
            || g.chunks != chunks.len() as u64
            || g.buckets == 0
            || !(8..=48).contains(&bits)
            || !bits.is_multiple_of(4)
        {
            return Err(bad());
        }
        Ok(FrozenGen {
            chunks,
            buckets: g.buckets,
            bits,
            stash,
        })
    }

    /// Bytes the copy takes.
    pub(crate) fn bytes(&self) -> u64 {
        self.chunks.iter().map(|c| c.len() as u64).sum()
    }

    /// The four fingerprints of bucket i (zeros where empty).
    fn slots(&self, i: u64) -> [u64; 4] {
        let bb = u64::from(self.bits) / 2;
        let hb = (self.bits / 8) as usize;
        let chunk = &self.chunks[(i / self.buckets) as usize];
        let at = ((i % self.buckets) * bb) as usize;
        let Some(b) = chunk.get(at..at + bb as usize) else {
            return [0; 4];
        };
        let mut out = [0; 4];
        for (k, slot) in out.iter_mut().enumerate() {
            *slot = number(&b[k * hb..(k + 1) * hb]);
            if self.bits % 8 == 4 {
                let low = b[4 * hb + k / 2];
                *slot = *slot << 4 | u64::from(if k % 2 == 0 { low >> 4 } else { low & 15 });
            }
        }
        out
    }

    /// Whether the URL of `probes` is in this generation, exactly as `contains` of
    /// `scripts/common.lua` answers.
    fn holds(&self, probes: &Probes) -> bool {
        let (h, fp) = (number(&probes[..6]), number(&probes[6..12]));
        let m = self.chunks.len() as u64 * self.buckets;
        let i1 = h % m;
        let first = self.slots(i1);
        if first.contains(&fp) {
            return true;
        }
        let i2 = alt(i1, fp, m);
        if !first.contains(&0) && self.slots(i2).contains(&fp) {
            return true;
        }
        self.stash == Some((i1, fp)) || self.stash == Some((i2, fp))
    }
}

/// The frozen generations a process keeps, per bucket of hosts: the first ones, up to
/// [`CACHE_BYTES`] in all. A URL found in one is seen, and is not sent; one not found is
/// sent with the number of generations looked in, which the script skips. Most of a
/// seen-test's work in Redis is reading the generations a new URL is not in, one or two
/// reads each, so this takes most of it off the server.
#[derive(Debug, Default)]
pub(crate) struct Frozen {
    buckets: Mutex<HashMap<u32, Cached>>,
    used: AtomicU64,
}

#[derive(Debug, Default)]
struct Cached {
    gens: Vec<FrozenGen>,
    fetching: bool,
    /// The copy under way was begun before [`Frozen::clear`]: not to be kept.
    stale: bool,
    /// Bytes held for the copy under way.
    reserved: u64,
}

/// Bytes of frozen generations a process keeps at most.
pub(crate) const CACHE_BYTES: u64 = 64 << 20;

impl Frozen {
    /// Whether a kept generation of `bucket` holds the URL of `probes`; when none does,
    /// notes in `probes` how many were looked in.
    pub(crate) fn holds(&self, bucket: u32, probes: &mut Probes) -> bool {
        let buckets = self.lock();
        let Some(cached) = buckets.get(&bucket) else {
            return false;
        };
        if cached.gens.iter().any(|g| g.holds(probes)) {
            return true;
        }
        probes[12] = u8::try_from(cached.gens.len()).unwrap_or(u8::MAX);
        false
    }

    /// The next generation of `bucket` to copy, now that it has `count` (all but the newest
    /// frozen), if one is to be copied, no copy is under way, and its bytes (`bytes` of its
    /// index) fit in what is left of [`CACHE_BYTES`]; the caller then copies it and calls
    /// [`Frozen::add`].
    pub(crate) fn wanted(
        &self,
        bucket: u32,
        count: i64,
        bytes: impl Fn(usize) -> Option<u64>,
    ) -> Option<usize> {
        let mut buckets = self.lock();
        let cached = buckets.entry(bucket).or_default();
        let next = cached.gens.len();
        if cached.fetching || (next as i64) + 1 >= count {
            return None;
        }
        let size = bytes(next)?;
        // Held from now, so that copies under way for other buckets count too.
        let used = self.used.load(Ordering::Relaxed);
        if used + size > CACHE_BYTES {
            return None;
        }
        self.used.fetch_add(size, Ordering::Relaxed);
        cached.fetching = true;
        cached.reserved = size;
        Some(next)
    }

    /// Keeps generation `index` of `bucket` (None: it could not be copied; asked again later).
    pub(crate) fn add(&self, bucket: u32, index: usize, copy: Option<FrozenGen>) {
        let mut buckets = self.lock();
        let cached = buckets.entry(bucket).or_default();
        cached.fetching = false;
        let reserved = std::mem::take(&mut cached.reserved);
        self.used.fetch_sub(reserved, Ordering::Relaxed);
        if let Some(copy) = copy
            && !std::mem::take(&mut cached.stale)
            && cached.gens.len() == index
        {
            self.used.fetch_add(copy.bytes(), Ordering::Relaxed);
            cached.gens.push(copy);
        }
    }

    /// Drops every copy: Redis went back to an older state, where generations copied as
    /// frozen may not be frozen, or not hold what the copies hold. A copy under way when
    /// this is called is dropped when it comes.
    pub(crate) fn clear(&self) {
        let mut buckets = self.lock();
        for cached in buckets.values_mut() {
            let bytes: u64 = cached.gens.iter().map(FrozenGen::bytes).sum();
            self.used.fetch_sub(bytes, Ordering::Relaxed);
            cached.gens.clear();
            cached.stale = cached.fetching;
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Cached>> {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A generation that holds at least `urls` URLs, in buckets of `bucket_bytes`: chunk keys of
/// a power of two bytes (each fills the allocation it gets exactly), at least eight of them
/// when that leaves each 4 KiB or more; under eight of 4 KiB, one key.
fn generation(urls: f64, bucket_bytes: u64) -> Generation {
    let needed = (urls / (LOAD * SLOTS as f64)).ceil() as u64 * bucket_bytes;
    let capacity = |chunks: u64, buckets: u64| (LOAD * (chunks * buckets * SLOTS) as f64) as u64;
    // A generation smaller than eight of the smallest chunks is one key, of the allocator's
    // size class that holds it: whole chunks would round it up by as much as itself.
    if needed + CHUNK_HEADER <= MIN_CHUNK_BYTES * MIN_CHUNKS {
        let buckets = (size_class(needed + CHUNK_HEADER) - CHUNK_HEADER) / bucket_bytes;
        return Generation {
            chunks: 1,
            buckets,
            capacity: capacity(1, buckets),
        };
    }
    let mut chunk = MIN_CHUNK_BYTES;
    while chunk < MAX_CHUNK_BYTES && chunk * 2 * MIN_CHUNKS <= needed {
        chunk *= 2;
    }
    let usable = chunk - CHUNK_HEADER;
    let chunks = needed.div_ceil(usable).max(1);
    let buckets = usable / bucket_bytes;
    Generation {
        chunks,
        buckets,
        capacity: capacity(chunks, buckets),
    }
}

/// The smallest size class of the allocator (jemalloc, Redis's) that holds `bytes`: from 64
/// bytes on, classes go by quarters of each power of two (4096, 5120, 6144, 7168, 8192...),
/// and a string of exactly a class's bytes wastes none.
fn size_class(bytes: u64) -> u64 {
    let bytes = bytes.max(64);
    let step = (1 << (63 - bytes.leading_zeros())) / 4;
    bytes.div_ceil(step) * step
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The fingerprint bits and generations as the scripts read them.
    fn generations(text: &str) -> (u32, Vec<Generation>) {
        let mut parts = text.split(';');
        let bits = parts.next().unwrap().parse().unwrap();
        let gens = parts.map(|g| Generation::parse(g).unwrap()).collect();
        (bits, gens)
    }

    #[test]
    fn generations_grow_by_half_and_keep_the_rate() {
        let schedule = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let (bits, gens) = generations(schedule.text(0));
        assert_eq!(bits, 28);
        assert!(gens.len() >= MIN_GENERATIONS as usize);
        // Every generation compares a fingerprint with eight slots at most: the rates of all
        // of them add up to the target.
        let total = gens.len() as f64 * COMPARED / ((1u64 << bits) - 1) as f64;
        assert!(total <= 1e-6, "rates add up to {total}");
        for pair in gens.windows(2) {
            let ratio = pair[1].capacity as f64 / pair[0].capacity as f64;
            assert!((1.3..1.75).contains(&ratio), "{ratio}: {pair:?}");
        }
        for g in &gens {
            let chunk = size_class(g.buckets * u64::from(bits) / 2 + CHUNK_HEADER);
            assert!(chunk <= MAX_CHUNK_BYTES);
            let per_url = (g.chunks * chunk) as f64 / g.capacity as f64;
            assert!(per_url < 3.8, "{per_url} bytes a URL in {g:?}");
        }
        // The smallest generations are one key, which grows by about 1.5 too.
        let (_, small) = generations(Schedule::new(1_000, 1e-6, 1).unwrap().text(0));
        assert_eq!(small[0].chunks, 1);
        assert!((1024..1200).contains(&small[0].capacity), "{:?}", small[0]);
        assert!((1.3..1.75).contains(&(small[1].capacity as f64 / small[0].capacity as f64)));
    }

    #[test]
    fn content_buckets_follow_the_hosts_and_hold_the_whole_capacity() {
        let hosts = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let with = Schedule::with_content(1_000_000, 1e-6, 64, 2).unwrap();
        for b in 0..64 {
            assert_eq!(hosts.text(b), with.text(b));
        }
        // Two content buckets: each starts at about half the capacity, spread over a step.
        let first = |b| generations(with.text(b)).1[0].capacity;
        for b in [64, 65] {
            assert!((350_000..700_000).contains(&first(b)), "{}", first(b));
        }
        assert!(first(64) < first(65));
    }

    #[test]
    fn size_classes_go_by_quarters() {
        let classes: Vec<u64> = [1, 64, 65, 4096, 4097, 5121, 7169, 8193, 1 << 20]
            .iter()
            .map(|&n| size_class(n))
            .collect();
        assert_eq!(
            classes,
            [64, 64, 80, 4096, 5120, 6144, 8192, 10240, 1 << 20]
        );
    }

    #[test]
    fn a_generations_bytes_are_its_buckets() {
        let schedule = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let (_, gens) = generations(schedule.text(5));
        assert_eq!(
            schedule.bytes(5, 2),
            Some(gens[2].chunks * gens[2].buckets * 14)
        );
        assert_eq!(schedule.bytes(5, 1000), None);
    }

    #[test]
    fn the_buckets_first_sizes_spread_over_one_step() {
        let schedule = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let first = |b| generations(schedule.text(b)).1[0].capacity;
        let all: u64 = (0..64).map(first).sum();
        assert!((1_000_000..1_150_000).contains(&all), "{all}");
        assert!(first(0) < first(32) && first(32) < first(63));
        assert!(first(63) < first(0) * 3 / 2 + 1_000);
    }

    #[test]
    fn looser_and_tighter_rates_take_other_fingerprints() {
        let bits = |rate| Schedule::new(1_000, rate, 1).unwrap().bits;
        assert_eq!(bits(1e-3), 20);
        assert_eq!(bits(1e-9), 40);
        assert!(Schedule::new(1_000, 1e-12, 1).is_ok());
        assert!(Schedule::new(1_000, 1e-15, 1).is_err());
        assert!(Schedule::new(1_000, 0.0, 1).is_err());
    }

    #[test]
    fn a_copy_finds_what_its_bytes_hold_and_refuses_what_does_not_parse() {
        let schedule = Schedule::new(1_000, 1e-6, 1).unwrap();
        let mut probes = schedule.probes(&[1; 16], "http://example.com/");
        let (h, fp) = (number(&probes[..6]), number(&probes[6..12]));
        // One chunk of 100 buckets of 14 bytes; the URL's fingerprint in slot 3 of its
        // second bucket, whose first is full.
        let m = 100;
        let (i1, i2) = (h % m, alt(h % m, fp, m));
        assert_eq!(alt(i2, fp, m), i1);
        assert_ne!(i1, i2, "this URL's two buckets differ");
        let mut chunk = vec![0; 1400];
        let put = |chunk: &mut Vec<u8>, i: u64, k: usize, v: u64| {
            let b = &mut chunk[i as usize * 14..i as usize * 14 + 14];
            b[k * 3..k * 3 + 3].copy_from_slice(&(v >> 4).to_be_bytes()[5..]);
            let low = (v & 15) as u8;
            b[12 + k / 2] |= if k.is_multiple_of(2) { low << 4 } else { low };
        };
        for k in 0..4 {
            put(&mut chunk, i1, k, 7 + k as u64);
        }
        put(&mut chunk, i2, 2, fp);
        let copy = FrozenGen::new("1 100 376", 28, None, vec![chunk.clone()]).unwrap();
        assert_eq!(copy.slots(i1), [7, 8, 9, 10]);
        assert!(copy.holds(&probes));
        let frozen = Frozen::default();
        assert_eq!(
            frozen.wanted(0, 1, |_| Some(1400)),
            None,
            "the newest is not frozen"
        );
        assert_eq!(frozen.wanted(1, 2, |_| Some(CACHE_BYTES)), Some(0));
        assert_eq!(
            frozen.wanted(0, 2, |_| Some(1400)),
            None,
            "over the bytes kept"
        );
        frozen.add(1, 0, None);
        assert_eq!(frozen.wanted(0, 2, |_| Some(1400)), Some(0));
        assert_eq!(
            frozen.wanted(0, 2, |_| Some(1400)),
            None,
            "one copy at a time"
        );
        frozen.add(0, 0, Some(copy));
        assert!(frozen.holds(0, &mut probes));
        let mut other = schedule.probes(&[1; 16], "http://example.com/other");
        assert!(!frozen.holds(0, &mut other));
        assert_eq!(other[12], 1, "one generation looked in");
        assert_eq!(frozen.used.load(Ordering::Relaxed), 1400);
        // A first bucket with room: the second is not looked in, as the script does not.
        chunk[i1 as usize * 14..i1 as usize * 14 + 14].fill(0);
        let copy = FrozenGen::new("1 100 376", 28, None, vec![chunk]).unwrap();
        assert!(!copy.holds(&probes));
        // The stash.
        let stash = format!("{i2} {fp}");
        let copy = FrozenGen::new("1 100 376", 28, Some(&stash), vec![vec![]]).unwrap();
        assert!(copy.holds(&probes));
        for (geometry, bits, stash) in [
            ("0 100 376", 28, None),
            ("1 0 376", 28, None),
            ("2 100 376", 28, None),
            ("1 100", 28, None),
            ("1 x 376", 28, None),
            ("1 100 376", 30, None),
            ("1 100 376", 28, Some("5")),
        ] {
            assert!(FrozenGen::new(geometry, bits, stash, vec![vec![]]).is_err());
        }
    }

    #[test]
    fn a_fingerprint_fits_its_bits_and_is_never_zero() {
        let schedule = Schedule::new(1_000, 1e-6, 1).unwrap();
        for i in 0..1000 {
            let p = schedule.probes(&[7; 16], &format!("http://example.com/{i}"));
            let fp = number(&p[6..12]);
            assert!(fp > 0 && fp < 1 << 28, "{fp}");
        }
        let url = "http://example.com/";
        assert_eq!(
            schedule.probes(&[7; 16], url),
            schedule.probes(&[7; 16], url)
        );
        assert_ne!(
            schedule.probes(&[7; 16], url),
            schedule.probes(&[8; 16], url)
        );
    }
}
