//! Disk spill of [`HostQueues`]: URLs beyond the memory budget move to segment files and come
//! back in order. Covers order and completeness under a small budget, equivalence with queues
//! that never spill (a property over random pushes, pops, completions, abandons and clock
//! steps), abandons and retries around a tail on disk, deletion of segment files once read,
//! a directory already in use, corrupt and truncated segments, a host given up with URLs on
//! disk, a zero budget, and a failed write.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use frontier::{
    Completion, DiskError, DiskErrorKind, Fate, HostQueues, Lease, Next, Outcome, Politeness,
    Pushed, QueueStats, SpillSettings,
};
use proptest::prelude::*;

mod common;
use common::{ms, url};

/// The lease `pop` must return.
#[track_caller]
fn lease(pop: Result<Next, DiskError>) -> Lease {
    match pop {
        Ok(Next::Lease(lease)) => lease,
        other => panic!("expected a lease, got {other:?}"),
    }
}

/// Politeness with no delay and no back-off, so that tests of order need no clock.
fn no_delay(connections: u32) -> Politeness {
    Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(Duration::ZERO)
        .connections_per_host(connections)
        .build()
        .unwrap()
}

fn spilling(polite: Politeness, dir: &Path, budget: usize, segment: u64) -> HostQueues {
    let settings = SpillSettings::new(dir)
        .memory_budget(budget)
        .segment_bytes(segment);
    HostQueues::with_spill(polite, settings).expect("spill directory")
}

/// Every URL pushed is queued, in flight or done in exactly one way; URLs on disk are queued.
#[track_caller]
fn check(stats: &QueueStats) {
    assert_eq!(
        Some(stats.pushed),
        stats.accounted_for(),
        "accounts do not balance: {stats:?}"
    );
    assert!(stats.on_disk <= stats.queued, "{stats:?}");
}

/// The segment files in `dir`, sorted.
fn segments(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "seg"))
        .collect();
    files.sort();
    files
}

/// Where `needle` is in the segment files of `dir`: the file and the offset. It must occur
/// exactly once.
fn find(dir: &Path, needle: &str) -> (PathBuf, usize) {
    let mut found = Vec::new();
    for path in segments(dir) {
        let bytes = fs::read(&path).unwrap();
        for (at, window) in bytes.windows(needle.len()).enumerate() {
            if window == needle.as_bytes() {
                found.push((path.clone(), at));
            }
        }
    }
    assert_eq!(found.len(), 1, "{needle:?} found {found:?}");
    found.pop().unwrap()
}

/// XORs the byte at `at` of `path` with `mask`.
fn flip(path: &Path, at: usize, mask: u8) {
    let mut bytes = fs::read(path).unwrap();
    bytes[at] ^= mask;
    fs::write(path, bytes).unwrap();
}

/// Host `h`'s URL `j`, all of one length so that none is a prefix of another.
fn host_url(h: usize, j: usize) -> String {
    format!("http://h{h:02}.example/p{j:03}")
}

/// The host of one of `host_url`'s URLs.
fn host_of(url: &str) -> usize {
    url["http://h".len().."http://h".len() + 2].parse().unwrap()
}

/// What popping everything left behind.
#[derive(Default)]
struct Drained {
    /// Per host, the URLs leased, in order.
    order: HashMap<usize, Vec<String>>,
    errors: Vec<DiskError>,
}

/// Pops and completes everything with success at `now` (no delay), checking the accounts
/// after every call.
fn drain(queues: &mut HostQueues, now: Instant) -> Drained {
    let mut drained = Drained::default();
    for _ in 0..100_000 {
        match queues.pop(now) {
            Ok(Next::Lease(lease)) => {
                let text = lease.url().as_str().to_owned();
                drained.order.entry(host_of(&text)).or_default().push(text);
                queues.complete(lease, Outcome::Success, now).unwrap();
            }
            Ok(Next::Done) => {
                check(&queues.stats());
                return drained;
            }
            Ok(other) => panic!("nothing in flight and no delay, yet {other:?}"),
            Err(err) => drained.errors.push(err),
        }
        check(&queues.stats());
    }
    panic!("popping never ends");
}

// ---- Order and completeness. ----

#[test]
fn urls_come_back_from_disk_in_order_each_exactly_once() {
    const HOSTS: usize = 50;
    const URLS: usize = 40;
    const LATE: usize = 10;
    let budget = 4096;
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilling(no_delay(1), dir.path(), budget, 4096);
    let t0 = Instant::now();
    let mut pushed: HashMap<usize, Vec<String>> = HashMap::new();
    let mut max_on_disk = 0;

    let mut push = |queues: &mut HostQueues, h: usize, j: usize| {
        let text = host_url(h, j);
        let before = queues.stats();
        assert_eq!(
            queues.push(url(&text), j as u32, t0).unwrap(),
            Pushed::Queued
        );
        pushed.entry(h).or_default().push(text);
        let stats = queues.stats();
        check(&stats);
        assert!(
            stats.memory_bytes <= budget as u64,
            "over budget after a push{}: {stats:?}",
            if stats.evictions > before.evictions {
                " that evicted"
            } else {
                ""
            },
        );
        max_on_disk = max_on_disk.max(stats.on_disk);
    };

    // Round robin: host 0 URL 0, host 1 URL 0, ..., host 0 URL 1, ...
    for j in 0..URLS {
        for h in 0..HOSTS {
            push(&mut queues, h, j);
        }
    }
    assert!(queues.stats().evictions > 0);
    assert!(queues.stats().disk_bytes > 0);

    // Half popped while more come in: refilled heads spill again behind new tails.
    let mut order: HashMap<usize, Vec<String>> = HashMap::new();
    let mut depths_ok = true;
    for i in 0..HOSTS * URLS / 2 {
        let l = lease(queues.pop(t0));
        let text = l.url().as_str().to_owned();
        depths_ok &= text.ends_with(&format!("p{:03}", l.depth())) && l.attempts() == 1;
        order.entry(host_of(&text)).or_default().push(text);
        queues.complete(l, Outcome::Success, t0).unwrap();
        check(&queues.stats());
        if i < HOSTS * LATE {
            push(&mut queues, i % HOSTS, URLS + i / HOSTS);
        }
    }

    let rest = drain(&mut queues, t0);
    assert!(rest.errors.is_empty(), "{:?}", rest.errors);
    for (h, urls) in rest.order {
        order.entry(h).or_default().extend(urls);
    }
    assert!(depths_ok);
    assert!(max_on_disk > 0);
    assert_eq!(order.len(), HOSTS);
    for h in 0..HOSTS {
        assert_eq!(order[&h], pushed[&h], "host {h}");
    }
    let stats = queues.stats();
    assert_eq!(stats.pushed, (HOSTS * (URLS + LATE)) as u64);
    assert_eq!(stats.succeeded, stats.pushed);
    assert_eq!((stats.queued, stats.on_disk, stats.memory_bytes), (0, 0, 0));
    assert_eq!(stats.lost_urls, 0);
}

// ---- Equivalence with queues that never spill. ----

const HOSTS: usize = 6;

#[derive(Clone, Debug)]
enum Op {
    Push(usize),
    Pop,
    Advance(u64),
    /// Completes the in-flight lease at this index (modulo their number).
    Complete(usize, Outcome),
    /// Abandons the in-flight lease at this index (modulo their number).
    Abandon(usize),
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        2 => prop::option::of(0u64..2_000).prop_map(|after| Outcome::Failure {
            retry: true,
            retry_after: after.map(ms),
        }),
        1 => Just(Outcome::FAILED),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        6 => (0..HOSTS).prop_map(Op::Push),
        4 => Just(Op::Pop),
        2 => (0u64..1_500).prop_map(Op::Advance),
        3 => (any::<usize>(), outcome()).prop_map(|(i, o)| Op::Complete(i, o)),
        1 => any::<usize>().prop_map(Op::Abandon),
    ]
}

fn politeness() -> impl Strategy<Value = Politeness> {
    (1u32..=3, 0u64..500, 0u64..1_000, 1u32..=4, 1u32..=3).prop_map(
        |(connections, delay, base, errors, attempts)| {
            Politeness::builder()
                .connections_per_host(connections)
                .delay(ms(delay))
                .backoff_base(ms(base))
                .backoff_max(ms(4 * base))
                .max_retry_after(ms(1_500))
                .max_consecutive_errors(errors)
                .max_attempts(attempts)
                .build()
                .unwrap()
        },
    )
}

/// A pop's answer in terms both queues can be compared by.
#[derive(Debug, PartialEq, Eq)]
enum Seen {
    Lease {
        url: String,
        depth: u32,
        attempts: u32,
        id: u64,
    },
    WaitUntil(Instant),
    Pending,
    Done,
}

fn seen(pop: &Next) -> Seen {
    match pop {
        Next::Lease(l) => Seen::Lease {
            url: l.url().as_str().to_owned(),
            depth: l.depth(),
            attempts: l.attempts(),
            id: l.id(),
        },
        Next::WaitUntil(at) => Seen::WaitUntil(*at),
        Next::Pending => Seen::Pending,
        Next::Done => Seen::Done,
    }
}

/// The same calls on queues in memory and on queues that spill.
struct Twins {
    memory: HostQueues,
    spill: HostQueues,
    budget: usize,
    dir: tempfile::TempDir,
    now: Instant,
    next_url: usize,
    /// Leases in flight: the memory queues', the spilling queues'.
    in_flight: Vec<(Lease, Lease)>,
    /// Whether the spilling queues ever had URLs on disk.
    spilled: bool,
}

impl Twins {
    fn new(polite: Politeness, budget: usize, segment: u64) -> Self {
        let dir = tempfile::tempdir().unwrap();
        Twins {
            memory: HostQueues::new(polite.clone()),
            spill: spilling(polite, dir.path(), budget, segment),
            budget,
            dir,
            now: Instant::now(),
            next_url: 0,
            in_flight: Vec::new(),
            spilled: false,
        }
    }

    fn pop(&mut self) -> Seen {
        let a = self.memory.pop(self.now).unwrap();
        let b = self.spill.pop(self.now).unwrap();
        let seen_a = seen(&a);
        assert_eq!(seen_a, seen(&b));
        if let (Next::Lease(a), Next::Lease(b)) = (a, b) {
            self.in_flight.push((a, b));
        }
        seen_a
    }

    fn complete(&mut self, index: usize, outcome: Outcome) {
        if self.in_flight.is_empty() {
            return;
        }
        let (a, b) = self.in_flight.swap_remove(index % self.in_flight.len());
        let done_a: Completion = self.memory.complete(a, outcome, self.now).unwrap();
        let done_b = self.spill.complete(b, outcome, self.now).unwrap();
        assert_eq!(done_a, done_b, "{outcome:?}");
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Push(h) => {
                let text = format!("http://h{h}.example/{}", self.next_url);
                let depth = (self.next_url % 7) as u32;
                self.next_url += 1;
                let a = self.memory.push(url(&text), depth, self.now).unwrap();
                let b = self.spill.push(url(&text), depth, self.now).unwrap();
                assert_eq!(a, b);
                // URL lengths differ by a few bytes at most: keeping as many per host as
                // fit in half the budget on average stays within the budget. (A URL pushed
                // to a host given up is dropped, and memory over budget after a retry, an
                // abandon or a read waits for the next queued push.)
                let stats = self.spill.stats();
                if a == Pushed::Queued {
                    assert!(
                        stats.memory_bytes <= self.budget as u64,
                        "budget {}: {stats:?}",
                        self.budget
                    );
                }
            }
            Op::Pop => {
                self.pop();
            }
            Op::Advance(n) => self.now += ms(n),
            Op::Complete(i, outcome) => self.complete(i, outcome),
            Op::Abandon(i) => {
                if !self.in_flight.is_empty() {
                    let (a, b) = self.in_flight.swap_remove(i % self.in_flight.len());
                    self.memory.abandon(a, self.now).unwrap();
                    self.spill.abandon(b, self.now).unwrap();
                }
            }
        }
        self.check();
    }

    fn check(&mut self) {
        let a = self.memory.stats();
        let b = self.spill.stats();
        check(&a);
        check(&b);
        assert_eq!(a.on_disk, 0);
        assert_eq!(b.lost_urls, 0);
        // The spilling queues hold in memory a part of what the others hold.
        assert!(b.memory_bytes <= a.memory_bytes, "{a:?} {b:?}");
        if b.on_disk == 0 {
            assert_eq!(b.memory_bytes, a.memory_bytes, "{a:?} {b:?}");
        }
        self.spilled |= b.on_disk > 0;
        let strip = |mut s: QueueStats| {
            s.on_disk = 0;
            s.memory_bytes = 0;
            s.disk_bytes = 0;
            s.evictions = 0;
            s
        };
        assert_eq!(strip(a), strip(b));
    }

    /// Completes everything with success, as time allows, until both are done.
    fn finish(&mut self) {
        for _ in 0..10_000 {
            match self.pop() {
                Seen::Lease { .. } => {
                    let last = self.in_flight.len() - 1;
                    self.complete(last, Outcome::Success);
                }
                Seen::WaitUntil(at) => self.now = at,
                Seen::Pending => self.complete(0, Outcome::Success),
                Seen::Done => {
                    let stats = self.spill.stats();
                    assert_eq!((stats.queued, stats.on_disk), (0, 0));
                    return;
                }
            }
            self.check();
        }
        panic!("the queues never finish");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn spilling_changes_nothing_but_where_urls_wait(
        polite in politeness(),
        // Small budgets more often, so that most cases spill.
        budget in prop_oneof![1 => Just(0usize), 2 => 0usize..=1_500, 2 => 0usize..=4_000],
        segment in prop::sample::select(vec![256u64, 512, 1024]),
        ops in prop::collection::vec(op(), 1..300),
    ) {
        let mut twins = Twins::new(polite, budget, segment);
        for op in ops {
            twins.apply(op);
        }
        twins.finish();
        // Every run has been read back: only the segment being written may remain.
        let dir = twins.dir.path().to_owned();
        prop_assert!(segments(&dir).len() <= 1, "{:?}", segments(&dir));
        let Twins { spill, dir: _dir, .. } = twins;
        drop(spill);
        prop_assert_eq!(segments(&dir), Vec::<PathBuf>::new());
    }
}

/// The property above must exercise spilling: with a zero budget, every push spills.
#[test]
fn the_equivalence_property_spills() {
    let mut twins = Twins::new(no_delay(2), 0, 256);
    for i in 0..40 {
        twins.apply(Op::Push(i % 3));
        if i % 4 == 3 {
            twins.apply(Op::Pop);
            twins.apply(Op::Abandon(i));
            twins.apply(Op::Pop);
            twins.apply(Op::Pop);
            let retry = Outcome::RETRY;
            twins.apply(Op::Complete(i, retry));
        }
    }
    assert!(twins.spilled);
    twins.finish();
}

// ---- Abandons and retries around a tail on disk. ----

#[test]
fn abandoned_urls_go_first_and_retries_last_with_the_tail_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilling(no_delay(1), dir.path(), 0, 4096);
    let t0 = Instant::now();
    for j in 1..=4 {
        queues
            .push(url(&format!("http://a.example/{j}")), 0, t0)
            .unwrap();
    }
    assert_eq!(queues.stats().on_disk, 4);

    let first = lease(queues.pop(t0));
    assert_eq!(first.url().as_str(), "http://a.example/1");
    // A push while /1 is in flight spills everything behind it.
    queues.push(url("http://a.example/5"), 0, t0).unwrap();
    assert_eq!(queues.stats().on_disk, 4);
    queues.abandon(first, t0).unwrap();
    check(&queues.stats());

    // The abandoned URL comes back first, with the same attempt count.
    let again = lease(queues.pop(t0));
    assert_eq!(
        (again.url().as_str(), again.attempts()),
        ("http://a.example/1", 1)
    );
    let retry = Outcome::RETRY;
    let done = queues.complete(again, retry, t0).unwrap();
    assert_eq!(done.fate, Fate::Retried { attempts: 2 });
    // A retry joins the tail, behind the URLs on disk; the next push spills it too.
    queues.push(url("http://a.example/6"), 0, t0).unwrap();
    assert_eq!(queues.stats().on_disk, 6);
    check(&queues.stats());

    let mut order = Vec::new();
    while let Next::Lease(l) = queues.pop(t0).unwrap() {
        order.push((l.url().as_str().to_owned(), l.attempts()));
        queues.complete(l, Outcome::Success, t0).unwrap();
        check(&queues.stats());
    }
    let expected = [
        ("http://a.example/2", 1),
        ("http://a.example/3", 1),
        ("http://a.example/4", 1),
        ("http://a.example/5", 1),
        ("http://a.example/1", 2),
        ("http://a.example/6", 1),
    ];
    let expected: Vec<(String, u32)> = expected.iter().map(|&(u, a)| (u.to_owned(), a)).collect();
    assert_eq!(order, expected);
    assert_eq!(queues.stats().on_disk, 0);
}

// ---- Segment files. ----

#[test]
fn segment_files_are_deleted_once_read_back_and_all_on_drop() {
    let dir = tempfile::tempdir().unwrap();
    let segment = 4096;
    let mut queues = spilling(no_delay(1), dir.path(), 2048, segment);
    let t0 = Instant::now();
    for j in 0..60 {
        for h in 0..20 {
            let text = format!("{}/a/path/long/enough/to/fill/segments", host_url(h, j));
            queues.push(url(&text), 0, t0).unwrap();
        }
    }
    let many = segments(dir.path()).len();
    assert!(many > 4, "only {many} segments");
    assert_eq!(
        queues.stats().disk_bytes,
        segments(dir.path())
            .iter()
            .map(|p| fs::metadata(p).unwrap().len())
            .sum::<u64>()
    );

    let drained = drain(&mut queues, t0);
    assert!(drained.errors.is_empty());
    assert_eq!(queues.stats().succeeded, 1200);
    let left = segments(dir.path());
    assert!(left.len() <= 1, "{left:?}");
    assert!(queues.stats().disk_bytes <= segment);
    drop(queues);
    assert_eq!(segments(dir.path()), Vec::<PathBuf>::new());
}

#[test]
fn a_directory_holding_segments_is_refused_and_left_alone() {
    let dir = tempfile::tempdir().unwrap();
    let other = dir.path().join("0000000007.seg");
    fs::write(&other, b"someone else's").unwrap();
    let settings = SpillSettings::new(dir.path());
    let err = HostQueues::with_spill(no_delay(1), settings).unwrap_err();
    assert!(matches!(err.kind(), DiskErrorKind::InUse), "{err:?}");
    assert_eq!(err.path(), dir.path());
    assert_eq!(fs::read(&other).unwrap(), b"someone else's");
    assert_eq!(segments(dir.path()), vec![other]);

    // Nor can two queues share a directory.
    let shared = tempfile::tempdir().unwrap();
    let first = spilling(no_delay(1), shared.path(), 0, 4096);
    let settings = SpillSettings::new(shared.path());
    let err = HostQueues::with_spill(no_delay(1), settings).unwrap_err();
    assert!(matches!(err.kind(), DiskErrorKind::InUse), "{err:?}");
    drop(first);
}

// ---- Corruption. ----

/// Queues with a zero budget holding `hosts` x `urls` URLs, pushed round robin: each URL
/// is a run of its own on disk.
fn spilled_runs(dir: &Path, hosts: usize, urls: usize, segment: u64) -> HostQueues {
    let mut queues = spilling(no_delay(1), dir, 0, segment);
    let t0 = Instant::now();
    for j in 0..urls {
        for h in 0..hosts {
            queues.push(url(&host_url(h, j)), 0, t0).unwrap();
        }
    }
    let stats = queues.stats();
    assert_eq!(stats.on_disk, (hosts * urls) as u64);
    queues
}

fn expected_urls(h: usize, urls: std::ops::Range<usize>) -> Vec<String> {
    urls.map(|j| host_url(h, j)).collect()
}

#[test]
fn a_corrupt_run_loses_its_urls_and_those_behind_it_only() {
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilled_runs(dir.path(), 5, 8, 1024);
    // One byte of the URL text of host 2's fourth URL.
    let (file, at) = find(dir.path(), &host_url(2, 3));
    flip(&file, at + 10, 0x01);

    let drained = drain(&mut queues, Instant::now());
    assert_eq!(drained.errors.len(), 1, "{:?}", drained.errors);
    let err = &drained.errors[0];
    assert!(matches!(err.kind(), DiskErrorKind::Corrupt(_)), "{err:?}");
    assert_eq!(err.path(), file);
    let stats = queues.stats();
    check(&stats);
    assert_eq!(stats.lost_urls, 5);
    assert_eq!(stats.succeeded, 35);
    assert_eq!(drained.order[&2], expected_urls(2, 0..3));
    for h in [0, 1, 3, 4] {
        assert_eq!(drained.order[&h], expected_urls(h, 0..8), "host {h}");
    }
    assert_eq!((stats.queued, stats.on_disk), (0, 0));
}

#[test]
fn a_broken_link_between_runs_is_reported_with_its_segment() {
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilled_runs(dir.path(), 3, 6, 1 << 20);
    // The link of host 1's third run, which points to its fourth: the run's header is 36
    // bytes, then the URL's length (one byte), then the URL.
    let (file, at) = find(dir.path(), &host_url(1, 2));
    flip(&file, at - 1 - 36 + 16, 0x01);

    let drained = drain(&mut queues, Instant::now());
    assert_eq!(drained.errors.len(), 1, "{:?}", drained.errors);
    let err = &drained.errors[0];
    assert!(matches!(err.kind(), DiskErrorKind::Corrupt(_)), "{err:?}");
    assert_eq!(err.path(), file, "{err}");
    let stats = queues.stats();
    check(&stats);
    assert_eq!(stats.lost_urls, 3);
    // The run with the broken link is itself intact.
    assert_eq!(drained.order[&1], expected_urls(1, 0..3));
    for h in [0, 2] {
        assert_eq!(drained.order[&h], expected_urls(h, 0..6), "host {h}");
    }
}

#[test]
fn a_truncated_segment_loses_the_runs_past_its_end_and_no_more() {
    const HOSTS: usize = 4;
    const URLS: usize = 12;
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilled_runs(dir.path(), HOSTS, URLS, 1024);
    let files = segments(dir.path());
    assert!(files.len() >= 3, "{files:?}");
    let cut = &files[1];
    let len = fs::metadata(cut).unwrap().len() as usize;
    // The last two runs cut: their hosts lose them and every URL behind them.
    let run_bytes = 36 + 1 + host_url(0, 0).len() + 2;
    let keep = len - 2 * run_bytes + 5;

    // Each run is its header, the URL's length, the URL, its depth and attempts.
    let mut expected: HashMap<usize, Vec<String>> = HashMap::new();
    let mut broken = HashSet::new();
    for h in 0..HOSTS {
        for j in 0..URLS {
            let text = host_url(h, j);
            let (file, at) = find(dir.path(), &text);
            if &file == cut && at - 37 + run_bytes > keep {
                broken.insert(h);
            }
            if !broken.contains(&h) {
                expected.entry(h).or_default().push(text);
            }
        }
    }
    assert!(!broken.is_empty() && broken.len() < HOSTS, "{broken:?}");
    fs::OpenOptions::new()
        .write(true)
        .open(cut)
        .unwrap()
        .set_len(keep as u64)
        .unwrap();

    let drained = drain(&mut queues, Instant::now());
    assert_eq!(drained.errors.len(), broken.len(), "{:?}", drained.errors);
    for err in &drained.errors {
        assert!(
            matches!(err.kind(), DiskErrorKind::Io(_) | DiskErrorKind::Corrupt(_)),
            "{err:?}"
        );
        assert_eq!(err.path(), cut.as_path(), "{err}");
    }
    let stats = queues.stats();
    check(&stats);
    let kept: usize = expected.values().map(Vec::len).sum();
    assert_eq!(stats.lost_urls, (HOSTS * URLS - kept) as u64);
    for h in 0..HOSTS {
        assert_eq!(
            drained.order.get(&h).cloned().unwrap_or_default(),
            expected.get(&h).cloned().unwrap_or_default(),
            "host {h}"
        );
    }
    assert_eq!((stats.queued, stats.on_disk), (0, 0));
}

// ---- Hosts given up. ----

#[test]
fn a_host_given_up_hands_out_its_urls_on_disk_for_their_records() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(Duration::ZERO)
        .max_consecutive_errors(2)
        .give_up_after(Duration::ZERO)
        .build()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilling(polite, dir.path(), 0, 512);
    let t0 = Instant::now();
    for j in 0..10 {
        queues.push(url(&host_url(0, j)), 0, t0).unwrap();
    }
    for j in 0..5 {
        queues.push(url(&host_url(1, j)), 0, t0).unwrap();
    }
    assert!(segments(dir.path()).len() > 1);
    let fail = Outcome::FAILED;

    let mut given_up = false;
    let mut succeeded = Vec::new();
    let mut flagged = Vec::new();
    while let Next::Lease(l) = queues.pop(t0).unwrap() {
        if l.host_given_up() {
            flagged.push(l.url().as_str().to_owned());
            queues.complete(l, Outcome::Skipped, t0).unwrap();
        } else if host_of(l.url().as_str()) == 0 {
            let done = queues.complete(l, fail, t0).unwrap();
            if let Some(waiting) = done.host_given_up {
                // Its two failures were its first two URLs: the other eight were on disk.
                assert_eq!(waiting, 8);
                given_up = true;
            }
        } else {
            succeeded.push(l.url().as_str().to_owned());
            queues.complete(l, Outcome::Success, t0).unwrap();
        }
        check(&queues.stats());
        if flagged.len() == 8 {
            // A push after the host was given up comes out flagged too.
            assert_eq!(
                queues.push(url(&host_url(0, 99)), 0, t0).unwrap(),
                Pushed::HostGivenUp
            );
        }
    }
    assert!(given_up);
    assert_eq!(succeeded, expected_urls(1, 0..5));
    // Read back from disk in order, each handed out once for its record.
    let mut expected = expected_urls(0, 2..10);
    expected.push(url(&host_url(0, 99)).as_str().to_owned());
    assert_eq!(flagged, expected);
    let stats = queues.stats();
    check(&stats);
    assert_eq!(
        (stats.failed, stats.given_up_urls, stats.on_disk),
        (2, 9, 0)
    );
    assert!(
        segments(dir.path()).len() <= 1,
        "{:?}",
        segments(dir.path())
    );
}

// ---- A zero budget. ----

#[test]
fn a_zero_budget_spills_every_push_and_pops_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut queues = spilling(no_delay(1), dir.path(), 0, 1024);
    let t0 = Instant::now();
    let mut pushed = 0;
    for j in 0..20 {
        for h in 0..3 {
            queues.push(url(&host_url(h, j)), j as u32, t0).unwrap();
            pushed += 1;
            let stats = queues.stats();
            check(&stats);
            assert_eq!(stats.memory_bytes, 0);
            assert_eq!(stats.on_disk, pushed);
            assert_eq!(stats.evictions, pushed);
        }
    }
    let drained = drain(&mut queues, t0);
    assert!(drained.errors.is_empty());
    for h in 0..3 {
        assert_eq!(drained.order[&h], expected_urls(h, 0..20), "host {h}");
    }
    let stats = queues.stats();
    assert_eq!((stats.succeeded, stats.queued, stats.on_disk), (60, 0, 0));
}

// ---- A failed write. ----

/// A segment that cannot be created fails the push, but the URL stays queued, and is spilled
/// by a later push once the disk is back.
#[cfg(unix)]
#[test]
fn a_failed_write_keeps_the_urls_in_memory() {
    let parent = tempfile::tempdir().unwrap();
    let dir = parent.path().join("spill");
    let mut queues = spilling(no_delay(1), &dir, 0, 256);
    let t0 = Instant::now();
    let mut next = 0;
    queues.push(url(&host_url(0, next)), 0, t0).unwrap();
    next += 1;
    // Open segments stay writable, but no new one can be created.
    fs::remove_dir_all(&dir).unwrap();
    let err = loop {
        assert!(next < 100, "no segment was ever needed");
        let result = queues.push(url(&host_url(0, next)), 0, t0);
        next += 1;
        if let Err(err) = result {
            break err;
        }
    };
    assert!(matches!(err.kind(), DiskErrorKind::Io(_)), "{err:?}");
    assert_eq!(err.path().parent(), Some(dir.as_path()), "{err}");
    let stats = queues.stats();
    check(&stats);
    assert_eq!(stats.queued, next as u64);
    assert!(stats.on_disk < stats.queued);
    assert!(stats.memory_bytes > 0);

    fs::create_dir(&dir).unwrap();
    queues.push(url(&host_url(0, next)), 0, t0).unwrap();
    next += 1;
    let stats = queues.stats();
    assert_eq!((stats.on_disk, stats.memory_bytes), (next as u64, 0));

    let drained = drain(&mut queues, t0);
    assert!(drained.errors.is_empty(), "{:?}", drained.errors);
    assert_eq!(drained.order[&0], expected_urls(0, 0..next));
}
