//! The seen-test's client half: the sizes its generations grow by, and each URL's
//! fingerprint.
//!
//! The seen-test lives in Redis (`scripts/common.lua` tests and sets it) as generations of
//! integer sets: a URL's fingerprint is a 32-bit integer (64-bit at a rate 32 bits cannot
//! keep) in one of its generation's sets, picked by another part of the URL's hash. Past the
//! generations 32 bits leave room for, a crawl goes on with wide ones (see
//! [`Generation::member`]), so that a bucket does not fill. A set of
//! at most 512 integers is an intset (`set-max-intset-entries`, Redis's default), a sorted
//! array of 4-byte integers that `SADD` tests and sets in one native command, where a Lua
//! filter read and wrote bytes a dozen Lua steps a URL (a quarter of Redis's CPU a page;
//! docs/benchmarks.md). A set takes only the bytes of its members (no table sized ahead),
//! about 5 bytes a URL with its key's share, as a cuckoo filter in Lua did.

use std::collections::HashMap;
use std::hash::Hasher;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use siphasher::sip128::{Hasher128, SipHasher13};

use crate::error::{Error, ErrorKind};

/// Redis's default `set-max-intset-entries`: a set of integers up to this many is an intset.
pub(crate) const INTSET_ENTRIES: u64 = 512;
/// Bytes of a set besides its members, as `MEMORY USAGE` counts them for a set of one
/// (its key, its objects, the intset's header): what the crawl's count of the seen-test's
/// bits adds for each set a generation has, so that a small crawl's sets, a few members
/// each, are counted at what they take.
pub(crate) const SET_KEY_BYTES: u64 = 84;
/// Fingerprints a generation's sets hold each when it is full: a set of up to 512 integers
/// stays an intset on a server with Redis's defaults, and sets filled at random differ from
/// their mean by a few times its square root (16), so that none comes near 512.
const PER_SET: u64 = 256;
/// The generations a crawl's fingerprints must leave room for: each twice the one before,
/// 16 of them grow a bucket's seen-test 65,000-fold. A rate that allows fewer takes 64-bit
/// fingerprints throughout.
const MIN_GENERATIONS: u64 = 16;
/// The bits of a URL's set number (see [`Probes`]) that a wide generation's members add to
/// its 32-bit fingerprint, at most: 32 more would pass 2^53, which Lua's numbers (doubles)
/// hold exactly, and the script builds the member from numbers.
const WIDE_BITS: u32 = 21;
/// Generations a bucket may grow to.
const MAX_GENERATIONS: u64 = 64;
/// Each generation holds this many times the URLs of the one before. A set takes only its
/// members' bytes, so a generation just started costs nothing for its room; fewer, larger
/// steps leave fewer generations to look in.
const GROWTH: f64 = 2.0;

/// One generation's geometry, as a script stores and uses it.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Generation {
    /// Sets.
    pub(crate) sets: u64,
    /// URLs it takes before the next generation starts.
    capacity: u64,
    /// Whether its members are wide (see [`Generation::member`]).
    wide: bool,
}

impl Generation {
    /// A generation as the scripts store it: "sets capacity", then " w" for a wide one.
    pub(crate) fn parse(text: &str) -> Option<Generation> {
        let (text, wide) = match text.strip_suffix(" w") {
            Some(narrow) => (narrow, true),
            None => (text, false),
        };
        let mut numbers = text.split(' ').map(|n| n.parse().ok());
        let g = Generation {
            sets: numbers.next()??,
            capacity: numbers.next()??,
            wide,
        };
        (numbers.next().is_none() && g.sets > 0).then_some(g)
    }

    fn text(&self) -> String {
        let wide = if self.wide { " w" } else { "" };
        format!("{} {}{wide}", self.sets, self.capacity)
    }

    /// What the generation's set holds for the URL of `probes`: its fingerprint; in a wide
    /// generation (of a crawl of 32-bit fingerprints), the fingerprint with the bits of the
    /// URL's set number that did not pick its set above it (up to [`WIDE_BITS`]). Those bits
    /// come with the probes already, so a wide member costs no more to send; it makes the
    /// set's intset one of 8-byte integers, where a 32-bit crawl's first generations keep 4.
    /// `scripts/common.lua` (`slot`) builds the same.
    fn member(&self, probes: &Probes) -> i64 {
        if !self.wide {
            return probes.fingerprint;
        }
        let high = (probes.set / self.sets) % (1 << WIDE_BITS);
        // The fingerprint's 32 bits as unsigned: `high` above them.
        ((high << 32) | u64::from(probes.fingerprint as u32)) as i64
    }

    /// How often a lookup meets a member of a full generation by mistake: one set of
    /// [`PER_SET`] members, each alike by chance one time in 2^bits.
    fn rate(&self, bits: u32) -> f64 {
        let alike = if self.wide {
            // The set number's bits above those that pick the set: 48 bits in all.
            let high =
                ((1u64 << 48) as f64 / self.sets as f64).clamp(1.0, (1u64 << WIDE_BITS) as f64);
            2f64.powi(32) * high
        } else {
            2f64.powi(bits as i32)
        };
        PER_SET as f64 / alike
    }
}

/// The generations of every bucket's seen-test, computed once from the crawl's layout. Every
/// process of a crawl computes the same; a script stores each generation's geometry when it
/// creates it, so a crawl keeps the sizes it started with.
#[derive(Clone, Debug)]
pub(crate) struct Schedule {
    /// Bits of each fingerprint: 32 or 64.
    bits: u32,
    /// What the scripts take, per bucket of hosts: the fingerprint bits, then "sets
    /// capacity" per generation, `;` between them.
    texts: Vec<String>,
}

impl Schedule {
    /// The schedule of `buckets` buckets of hosts whose seen-tests together hold about
    /// `capacity` URLs before they first grow, at `rate` false positives over all of a
    /// bucket's generations.
    ///
    /// The buckets' first sizes are spread over one growth step (bucket `b` of `n` starts at
    /// 2^((b + 0.5) / n - 0.5) times the mean), so that they do not all grow at once.
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
        if !(rate > 0.0 && rate < 1.0) {
            return Err(ErrorKind::BadLayout(format!(
                "the seen-test's rate must be between 0 and 1, not {rate}"
            ))
            .into());
        }
        // The generations the rate allows, each a generation's rate (Generation::rate):
        // 32-bit ones while they fit, then wide ones while they fit, up to the most a bucket
        // may have; or, when those are too few, 64-bit ones.
        let geometry = |first: f64, bits: u32| {
            let mut gens = Vec::new();
            let mut total = 0.0;
            for i in 0..MAX_GENERATIONS {
                let capacity = (first * GROWTH.powi(i as i32)).ceil() as u64;
                let sets = capacity.div_ceil(PER_SET);
                let narrow = Generation {
                    sets,
                    capacity,
                    wide: false,
                };
                let wide = Generation {
                    wide: true,
                    ..narrow
                };
                let fits = |g: &Generation| total + g.rate(bits) <= rate;
                let g = if fits(&narrow) && gens.iter().all(|g: &Generation| !g.wide) {
                    narrow
                } else if bits == 32 && fits(&wide) {
                    wide
                } else {
                    break;
                };
                total += g.rate(bits);
                gens.push(g);
            }
            gens
        };
        // Every bucket's first size gives the same count (the rates hardly move with it).
        let mean = capacity.div_ceil(u64::from(buckets.max(1))).max(1024) as f64;
        let bits = if geometry(mean, 32).len() as u64 >= MIN_GENERATIONS {
            32
        } else {
            64
        };
        let text = |first: f64| {
            let mut text = bits.to_string();
            for g in geometry(first, bits) {
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

    /// The generations of bucket `bucket`, as its scripts create them.
    #[cfg(test)]
    fn generations(&self, bucket: u32) -> Vec<Generation> {
        let parts = self.text(bucket).split(';').skip(1);
        parts
            .map(|g| Generation::parse(g).expect("made here"))
            .collect()
    }

    /// The bytes a copy of generation `index` of bucket `bucket`'s seen-test takes in a
    /// process.
    pub(crate) fn bytes(&self, bucket: u32, index: usize) -> Option<u64> {
        let g = Generation::parse(self.text(bucket).split(';').nth(index + 1)?)?;
        let each = if self.bits == 32 && !g.wide { 4 } else { 8 };
        Some(g.capacity * each)
    }

    /// A URL's probes: from the SipHash of the URL under the crawl's key, a number that
    /// picks its set in each generation, and its fingerprint, of [`Schedule`]'s bits.
    pub(crate) fn probes(&self, key: &[u8; 16], url: &str) -> Probes {
        let mut sip = SipHasher13::new_with_key(key);
        sip.write(url.as_bytes());
        let h = sip.finish128();
        let fingerprint = if self.bits == 32 {
            i64::from((h.h2 >> 32) as u32 as i32)
        } else {
            h.h2 as i64
        };
        Probes {
            set: h.h1 >> 16,
            fingerprint,
            looked: 0,
        }
    }
}

/// A URL's probes, as [`Schedule::probes`] makes them, and how many generations the process
/// looked the URL up in already (see [`Frozen::holds`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Probes {
    /// 48 bits: the URL's set in a generation of n sets is `set % n`.
    set: u64,
    /// What the set holds for the URL.
    fingerprint: i64,
    /// The generations already looked in.
    looked: u8,
}

impl Probes {
    /// As the scripts take them: six bytes of `set` (big-endian), one of the generations
    /// looked in, then the fingerprint in decimal, which Redis stores as an integer (a
    /// number from Lua would be formatted anew by each command).
    pub(crate) fn bytes(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(27);
        out.extend_from_slice(&self.set.to_be_bytes()[2..]);
        out.push(self.looked);
        out.extend_from_slice(self.fingerprint.to_string().as_bytes());
        out
    }
}

/// A generation no longer written (every one but a bucket's newest): a copy of its sets,
/// which a process keeps to look a URL up in without asking Redis.
#[derive(Debug)]
pub(crate) struct FrozenGen {
    /// Its geometry.
    geometry: Generation,
    /// Each set's members, sorted.
    sets: Members,
}

/// A copy's sets: 4 bytes a member when they all fit (a 32-bit crawl's generations but the
/// wide ones), so that the bytes a process keeps hold twice the URLs.
#[derive(Debug)]
enum Members {
    Four(Vec<Vec<i32>>),
    Eight(Vec<Vec<i64>>),
}

impl FrozenGen {
    /// A generation from what Redis holds: its geometry ("sets capacity") and its sets'
    /// members, in the order of their keys.
    pub(crate) fn new(geometry: &str, sets: Vec<Vec<i64>>) -> Result<FrozenGen, Error> {
        let Some(g) = Generation::parse(geometry).filter(|g| g.sets == sets.len() as u64) else {
            return Err(
                ErrorKind::BadLayout(format!("a seen-test generation {geometry:?}")).into(),
            );
        };
        fn sorted<T: Ord>(sets: Vec<Vec<T>>) -> Vec<Vec<T>> {
            let sort = |mut set: Vec<T>| {
                set.sort_unstable();
                set
            };
            sets.into_iter().map(sort).collect()
        }
        let fits = |set: &Vec<i64>| set.iter().all(|&m| i32::try_from(m).is_ok());
        let sets = if sets.iter().all(fits) {
            let narrow = |set: Vec<i64>| set.into_iter().map(|m| m as i32).collect();
            Members::Four(sorted(sets.into_iter().map(narrow).collect()))
        } else {
            Members::Eight(sorted(sets))
        };
        Ok(FrozenGen { geometry: g, sets })
    }

    /// Bytes the copy takes.
    pub(crate) fn bytes(&self) -> u64 {
        match &self.sets {
            Members::Four(sets) => sets.iter().map(|s| s.len() as u64 * 4).sum(),
            Members::Eight(sets) => sets.iter().map(|s| s.len() as u64 * 8).sum(),
        }
    }

    /// Whether the URL of `probes` is in this generation, as `SISMEMBER` answers.
    fn holds(&self, probes: &Probes) -> bool {
        let set = probes.set % self.geometry.sets;
        let member = self.geometry.member(probes);
        match &self.sets {
            Members::Four(sets) => i32::try_from(member)
                .is_ok_and(|member| sets[set as usize].binary_search(&member).is_ok()),
            Members::Eight(sets) => sets[set as usize].binary_search(&member).is_ok(),
        }
    }
}

/// The frozen generations a process keeps, per bucket of hosts: the first ones, up to
/// [`CACHE_BYTES`] in all. A URL found in one is seen, and is not sent; one not found is
/// sent with the number of generations looked in, which the script skips: a new URL costs
/// Redis one `SISMEMBER` for each generation it was not looked up in, so this keeps a
/// lookup in Redis to the newest generations however many there are.
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
        probes.looked = u8::try_from(cached.gens.len()).unwrap_or(u8::MAX);
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
    fn generations_double_and_keep_the_rate() {
        let schedule = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let (bits, gens) = generations(schedule.text(0));
        assert_eq!(bits, 32);
        // 16 of 32 bits, then wide ones: far past what 32 bits alone hold.
        let narrow = gens.iter().take_while(|g| !g.wide).count();
        assert_eq!(narrow, MIN_GENERATIONS as usize);
        assert!(gens[narrow..].iter().all(|g| g.wide));
        assert!(gens.len() >= 40, "{} generations", gens.len());
        // A lookup meets one set of each generation, of PER_SET fingerprints at most: the
        // rates of all of them add up to the target.
        let total: f64 = gens.iter().map(|g| g.rate(32)).sum();
        assert!(total <= 1e-6, "rates add up to {total}");
        assert!(
            (narrow as f64 * PER_SET as f64 / 2f64.powi(32)) < total,
            "the wide ones count"
        );
        for pair in gens.windows(2) {
            let ratio = pair[1].capacity as f64 / pair[0].capacity as f64;
            assert!((1.99..2.01).contains(&ratio), "{ratio}: {pair:?}");
        }
        for g in &gens {
            assert!(g.capacity <= g.sets * PER_SET, "{g:?}");
            assert!(g.capacity > (g.sets - 1) * PER_SET, "{g:?}");
        }
        // The smallest generations: a bucket holds at least 1,024 URLs before it grows.
        let (_, small) = generations(Schedule::new(1_000, 1e-6, 1).unwrap().text(0));
        assert!((1024..1500).contains(&small[0].capacity), "{:?}", small[0]);
        assert_eq!(small[0].sets, small[0].capacity.div_ceil(PER_SET));
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
            assert!((350_000..750_000).contains(&first(b)), "{}", first(b));
        }
        assert!(first(64) < first(65));
    }

    #[test]
    fn a_generations_copy_takes_its_capacity() {
        let schedule = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let (_, gens) = generations(schedule.text(5));
        assert_eq!(schedule.bytes(5, 2), Some(gens[2].capacity * 4));
        assert!(gens[20].wide);
        assert_eq!(schedule.bytes(5, 20), Some(gens[20].capacity * 8));
        let (_, gens) = generations(Schedule::new(1_000_000, 1e-15, 64).unwrap().text(5));
        let full = Schedule::new(1_000_000, 1e-15, 64).unwrap();
        assert_eq!(
            full.bytes(5, 2),
            Some(gens[2].capacity * 8),
            "64-bit fingerprints"
        );
        assert_eq!(schedule.bytes(5, 1000), None);
    }

    #[test]
    fn the_buckets_first_sizes_spread_over_one_step() {
        let schedule = Schedule::new(1_000_000, 1e-6, 64).unwrap();
        let first = |b| generations(schedule.text(b)).1[0].capacity;
        let all: u64 = (0..64).map(first).sum();
        assert!((950_000..1_100_000).contains(&all), "{all}");
        assert!(first(0) < first(32) && first(32) < first(63));
        assert!(first(63) < first(0) * 2 + 1_000);
    }

    #[test]
    fn tighter_rates_take_wide_generations_sooner_then_64_bit_fingerprints() {
        let bits = |rate| Schedule::new(1_000, rate, 1).unwrap().bits;
        assert_eq!(bits(1e-3), 32);
        assert_eq!(bits(1e-6), 32);
        // One generation of 32 bits fits in 1e-7, then wide ones; none at 1e-9.
        let narrow = |rate| {
            let schedule = Schedule::new(1_000, rate, 1).unwrap();
            let gens = schedule.generations(0);
            assert!(gens.len() >= MIN_GENERATIONS as usize, "{rate}");
            gens.iter().filter(|g| !g.wide).count()
        };
        assert_eq!((bits(1e-7), narrow(1e-7)), (32, 1));
        assert_eq!((bits(1e-9), narrow(1e-9)), (32, 0));
        // Too tight for wide ones (2^-45 a generation at best): 64 bits throughout.
        assert_eq!(bits(1e-15), 64);
        assert!(
            Schedule::new(1_000, 1e-15, 1)
                .unwrap()
                .generations(0)
                .iter()
                .all(|g| !g.wide)
        );
        assert!(Schedule::new(1_000, 1e-15, 1).is_ok());
        assert!(Schedule::new(1_000, 0.0, 1).is_err());
        assert!(Schedule::new(1_000, 1.0, 1).is_err());
        // A loose rate allows more generations, up to the most a bucket may have.
        let (_, gens) = generations(Schedule::new(1_000, 1e-3, 1).unwrap().text(0));
        assert_eq!(gens.len() as u64, MAX_GENERATIONS);
    }

    #[test]
    fn a_copy_finds_what_its_sets_hold_and_refuses_what_does_not_parse() {
        let schedule = Schedule::new(1_000, 1e-6, 1).unwrap();
        let mut probes = schedule.probes(&[1; 16], "http://example.com/");
        let mut sets = vec![vec![5, -7]; 4];
        sets[(probes.set % 4) as usize].push(probes.fingerprint);
        let copy = FrozenGen::new("4 1000", sets.clone()).unwrap();
        assert!(copy.holds(&probes));
        assert_eq!(copy.bytes(), 9 * 4, "4 bytes a 32-bit member");
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
        assert_eq!(other.looked, 1, "one generation looked in");
        assert_eq!(other.bytes()[6], 1);
        assert_eq!(frozen.used.load(Ordering::Relaxed), 9 * 4);
        // The fingerprint in another set: not held.
        let mut moved = sets.clone();
        moved[(probes.set % 4) as usize].pop();
        moved[(probes.set % 4 + 1) as usize % 4].push(probes.fingerprint);
        assert!(!FrozenGen::new("4 1000", moved).unwrap().holds(&probes));
        for geometry in [
            "0 1000",
            "3 1000",
            "4",
            "x 1000",
            "4 1000 7",
            "4 1000 w w",
            "4 w",
        ] {
            assert!(
                FrozenGen::new(geometry, sets.clone()).is_err(),
                "{geometry}"
            );
        }
    }

    #[test]
    fn a_wide_member_is_the_fingerprint_under_the_set_numbers_unused_bits() {
        let schedule = Schedule::new(1_000, 1e-6, 1).unwrap();
        let wide = Generation::parse("1000 256000 w").unwrap();
        let narrow = Generation::parse("1000 256000").unwrap();
        let mut members = std::collections::HashSet::new();
        for i in 0..1000 {
            let p = schedule.probes(&[3; 16], &format!("http://example.com/{i}"));
            assert_eq!(narrow.member(&p), p.fingerprint);
            let m = wide.member(&p);
            assert!((0..1 << 53).contains(&m), "{m}: exact in a double");
            assert_eq!(m as u32, p.fingerprint as u32, "its low bits");
            assert_eq!(
                m as u64 >> 32,
                (p.set / 1000) % (1 << WIDE_BITS),
                "its high bits"
            );
            members.insert(m);
        }
        assert_eq!(members.len(), 1000);
        // A copy of a wide generation looks up wide members.
        let p = schedule.probes(&[3; 16], "http://example.com/");
        let mut sets = vec![Vec::new(); 4];
        sets[(p.set % 4) as usize].push(p.fingerprint);
        assert!(FrozenGen::new("4 1000", sets.clone()).unwrap().holds(&p));
        assert!(!FrozenGen::new("4 1000 w", sets).unwrap().holds(&p));
        let mut sets = vec![Vec::new(); 4];
        let g = Generation::parse("4 1000 w").unwrap();
        sets[(p.set % 4) as usize].push(g.member(&p));
        let copy = FrozenGen::new("4 1000 w", sets).unwrap();
        assert!(copy.holds(&p));
        assert_eq!(copy.bytes(), 8, "8 bytes a wide member");
        // A 64-bit crawl's copy: 8 bytes a member; a narrow copy never holds a member past
        // 32 bits.
        let full = Schedule::new(1_000, 1e-15, 1).unwrap();
        let p = (0..100)
            .map(|i| full.probes(&[3; 16], &format!("http://example.com/{i}")))
            .find(|p| i32::try_from(p.fingerprint).is_err())
            .unwrap();
        let mut sets = vec![vec![5, -7]; 4];
        sets[(p.set % 4) as usize].push(p.fingerprint);
        let copy = FrozenGen::new("4 1000", sets).unwrap();
        assert!(copy.holds(&p));
        assert_eq!(copy.bytes(), 9 * 8);
        assert!(
            !FrozenGen::new("4 1000", vec![vec![5, -7]; 4])
                .unwrap()
                .holds(&p)
        );
    }

    #[test]
    fn probes_are_what_the_scripts_read() {
        let schedule = Schedule::new(1_000, 1e-6, 1).unwrap();
        let mut seen = std::collections::HashSet::new();
        for i in 0..1000 {
            let p = schedule.probes(&[7; 16], &format!("http://example.com/{i}"));
            assert!(i32::try_from(p.fingerprint).is_ok(), "{p:?}");
            assert!(p.set < 1 << 48);
            let bytes = p.bytes();
            let set = bytes[..6].iter().fold(0, |n, &b| n << 8 | u64::from(b));
            assert_eq!(set, p.set);
            assert_eq!(bytes[6], 0);
            // Decimal as Redis takes an integer: no leading zero, no plus sign.
            let text = std::str::from_utf8(&bytes[7..]).unwrap();
            assert_eq!(text, p.fingerprint.to_string());
            seen.insert(p.fingerprint);
        }
        assert!(seen.len() > 990, "fingerprints spread");
        let url = "http://example.com/";
        assert_eq!(
            schedule.probes(&[7; 16], url),
            schedule.probes(&[7; 16], url)
        );
        assert_ne!(
            schedule.probes(&[7; 16], url),
            schedule.probes(&[8; 16], url)
        );
        // At 64 bits, fingerprints take the whole range.
        let wide = Schedule::new(1_000, 1e-15, 1).unwrap();
        let outside = (0..100)
            .filter(|i| {
                let p = wide.probes(&[7; 16], &format!("http://example.com/{i}"));
                i32::try_from(p.fingerprint).is_err()
            })
            .count();
        assert!(outside > 90, "{outside} of 100 outside 32 bits");
    }
}
