//! Checkpoint and resume: what a restored frontier holds (queued, spilled and in-flight URLs,
//! per-host state, budget, counters, the filter), crashes at every step of a checkpoint,
//! corrupt, partial and foreign files, and a property test that nothing is lost.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use frontier::{
    Canonicalizer, DiskErrorKind, DropReason, Frontier, FrontierBuilder, HostPoliteness, Next,
    Outcome, Politeness, Push, ScopeMode, ScopeRules, SpillSettings,
};
use proptest::prelude::*;

fn polite(delay_ms: u64) -> Politeness {
    Politeness::builder()
        .delay(Duration::from_millis(delay_ms))
        .connections_per_host(2)
        .max_consecutive_errors(3)
        .give_up_after(Duration::ZERO)
        .build()
        .unwrap()
}

/// Settings without spill: any host, a budget of 50 pages per host.
fn settings(delay_ms: u64) -> FrontierBuilder {
    with_budget(delay_ms, Some(50))
}

fn with_budget(delay_ms: u64, pages_per_host: Option<u64>) -> FrontierBuilder {
    Frontier::builder()
        .scope(
            ScopeRules::builder()
                .mode(ScopeMode::AnyHost)
                .per_host_budget(pages_per_host)
                .build()
                .unwrap(),
        )
        .politeness(polite(delay_ms))
}

/// Settings with spill and no page budget.
fn spilling(delay_ms: u64, spill_dir: &Path, budget: usize) -> FrontierBuilder {
    with_budget(delay_ms, None).spill(
        SpillSettings::new(spill_dir)
            .memory_budget(budget)
            .segment_bytes(2048),
    )
}

/// Leases and completes with success everything the frontier holds, returning the URLs in
/// lease order. The clock jumps to each `WaitUntil`.
fn drain(frontier: &Frontier, mut now: Instant) -> Vec<String> {
    let mut urls = Vec::new();
    loop {
        match frontier.pop(now).unwrap() {
            Next::Lease(lease) => {
                urls.push(lease.url().as_str().to_owned());
                frontier.complete(lease, Outcome::Success, now).unwrap();
            }
            Next::WaitUntil(at) => now = at,
            Next::Done => return urls,
            Next::Pending => unreachable!("every lease is completed at once"),
        }
    }
}

/// URLs per host, in order: what must survive a checkpoint.
fn by_host(urls: &[String]) -> BTreeMap<String, Vec<String>> {
    let canon = Canonicalizer::new();
    let mut hosts: BTreeMap<String, Vec<String>> = BTreeMap::new();
    for url in urls {
        let host = canon.canonicalize(url).unwrap().host_key().to_owned();
        hosts.entry(host).or_default().push(url.clone());
    }
    hosts
}

fn per_host(urls: Vec<String>) -> BTreeMap<String, Vec<String>> {
    by_host(&urls)
}

/// Every file of a directory with its bytes.
fn snapshot_dir(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            (
                e.file_name().into_string().unwrap(),
                fs::read(e.path()).unwrap(),
            )
        })
        .collect()
}

fn write_dir(dir: &Path, files: &BTreeMap<String, Vec<u8>>) {
    let _ = fs::remove_dir_all(dir);
    fs::create_dir_all(dir).unwrap();
    for (name, bytes) in files {
        fs::write(dir.join(name), bytes).unwrap();
    }
}

/// A frontier in the middle of a crawl: queued URLs on three hosts, two leases in flight, a
/// retry, a success, a crawl delay and a host given up.
fn mid_crawl(builder: FrontierBuilder, t0: Instant) -> (Frontier, Vec<frontier::Lease>) {
    let frontier = builder.build().unwrap();
    for i in 0..30 {
        for host in ["a.example", "b.example", "c.example:8080"] {
            let url = format!("http://{host}/page/{i}");
            assert_eq!(frontier.push(&url, i % 4, t0).unwrap(), Push::Queued);
        }
    }
    frontier.push("http://doomed.example/1", 0, t0).unwrap();
    frontier.push("http://doomed.example/2", 0, t0).unwrap();
    frontier.set_crawl_delay("b.example", Duration::from_secs(7));
    let mut held = Vec::new();
    let mut now = t0;
    // Three failures give doomed.example up; a.example gets a retry and a success.
    while held.len() < 2 || frontier.stats().queues.given_up_hosts == 0 {
        match frontier.pop(now).unwrap() {
            Next::Lease(lease) => {
                let host = lease.url().host_key().to_owned();
                let outcome = match host.as_str() {
                    "doomed.example" => Outcome::RETRY,
                    "a.example" if lease.url().as_str().ends_with("/0") => Outcome::Failure {
                        retry: true,
                        retry_after: Some(Duration::from_secs(2)),
                    },
                    "c.example:8080" if held.len() < 2 => {
                        held.push(lease);
                        continue;
                    }
                    _ => Outcome::Success,
                };
                frontier.complete(lease, outcome, now).unwrap();
            }
            Next::WaitUntil(at) => now = at,
            other => panic!("{other:?}"),
        }
    }
    (frontier, held)
}

#[test]
fn a_restored_frontier_holds_everything_and_requeues_leases_in_flight() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let (frontier, held) = mid_crawl(settings(100), t0);
    let in_flight: Vec<String> = held.iter().map(|l| l.url().as_str().to_owned()).collect();
    let before = frontier.stats();
    frontier.checkpoint(dir.path(), t0).unwrap();

    let restored = Frontier::open(dir.path(), settings(100), t0).unwrap();
    let after = restored.stats();
    assert_eq!(after.admission, before.admission);
    let (b, a) = (before.queues, after.queues);
    assert_eq!(a.queued, b.queued + b.in_flight);
    assert_eq!(a.in_flight, 0);
    for (x, y) in [
        (a.pushed, b.pushed),
        (a.leases, b.leases),
        (a.retries, b.retries),
        (a.succeeded, b.succeeded),
        (a.failed, b.failed),
        (a.exhausted, b.exhausted),
        (a.given_up_hosts, b.given_up_hosts),
        (a.given_up_urls, b.given_up_urls),
        (a.hosts, b.hosts),
    ] {
        assert_eq!(x, y, "{a:?} vs {b:?}");
    }

    // Everything pushed before is seen; the host budget and the given-up host carry over.
    for i in 0..30 {
        assert_eq!(
            restored
                .push(&format!("http://a.example/page/{i}"), 0, t0)
                .unwrap(),
            Push::Seen
        );
    }
    for i in 30..50 {
        assert_eq!(
            restored
                .push(&format!("http://a.example/page/{i}"), 0, t0)
                .unwrap(),
            Push::Queued
        );
    }
    assert_eq!(
        restored.push("http://a.example/page/50", 0, t0).unwrap(),
        Push::Dropped(DropReason::HostBudget)
    );
    assert_eq!(
        restored.push("http://doomed.example/3", 0, t0).unwrap(),
        Push::HostGivenUp
    );

    // Leases in flight come first on their host; the original, draining with its leases
    // completed, hands out the same URLs per host.
    let mut now = t0;
    for lease in held {
        frontier.complete(lease, Outcome::Success, now).unwrap();
    }
    let original = by_host(&drain(&frontier, now));
    now += Duration::from_secs(1);
    let resumed = by_host(&drain(&restored, now));
    let c = &resumed["c.example:8080"];
    assert_eq!(&c[..2], &in_flight[..]);
    assert_eq!(c[2..], original["c.example:8080"][..]);
    assert_eq!(resumed["b.example"], original["b.example"]);
    let mut a_resumed = resumed["a.example"].clone();
    a_resumed.truncate(original["a.example"].len());
    assert_eq!(a_resumed, original["a.example"]);
    // The given-up host's queued retry and its URL pushed after the restore are handed out
    // for their records.
    assert_eq!(
        resumed["doomed.example"],
        ["http://doomed.example/2", "http://doomed.example/3"]
    );
}

#[test]
fn host_waits_carry_over_relative_to_the_time_of_opening() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = settings(0).build().unwrap();
    frontier.set_crawl_delay("a.example", Duration::from_secs(10));
    frontier.push("http://a.example/1", 0, t0).unwrap();
    frontier.push("http://a.example/2", 0, t0).unwrap();
    let Next::Lease(lease) = frontier.pop(t0).unwrap() else {
        panic!()
    };
    frontier
        .complete(lease, Outcome::Success, t0 + Duration::from_secs(1))
        .unwrap();
    // Next start allowed at t0 + 11 s; the checkpoint at t0 + 4 s leaves 7 s.
    frontier
        .checkpoint(dir.path(), t0 + Duration::from_secs(4))
        .unwrap();

    let later = t0 + Duration::from_secs(100);
    let restored = Frontier::open(dir.path(), settings(0), later).unwrap();
    assert_eq!(
        restored.pop(later).unwrap(),
        Next::WaitUntil(later + Duration::from_secs(7))
    );
    // The crawl delay is part of the host's state too.
    let Next::Lease(lease) = restored.pop(later + Duration::from_secs(7)).unwrap() else {
        panic!()
    };
    restored
        .complete(lease, Outcome::Success, later + Duration::from_secs(7))
        .unwrap();
    restored.push("http://a.example/3", 0, later).unwrap();
    assert_eq!(
        restored.pop(later + Duration::from_secs(8)).unwrap(),
        Next::WaitUntil(later + Duration::from_secs(17))
    );
}

#[test]
fn a_restored_host_takes_its_own_politeness_from_the_settings_it_is_opened_with() {
    // A host's own politeness comes from the settings, not the checkpoint: opened with a
    // policy, a host queued before it got one keeps to it from its first lease.
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = settings(0).build().unwrap();
    for i in 0..4 {
        frontier
            .push(&format!("http://a.example/{i}"), 0, t0)
            .unwrap();
    }
    frontier.checkpoint(dir.path(), t0).unwrap();
    let own = Politeness::builder()
        .delay(Duration::ZERO)
        .connections_per_host(2)
        .per_host(|host: &str| match host {
            "a.example" => HostPoliteness::new().delay(Duration::from_secs(3)),
            _ => HostPoliteness::new(),
        })
        .build()
        .unwrap();
    let restored = Frontier::open(dir.path(), settings(0).politeness(own), t0).unwrap();
    let Next::Lease(_first) = restored.pop(t0).unwrap() else {
        panic!()
    };
    assert_eq!(
        restored.pop(t0).unwrap(),
        Next::WaitUntil(t0 + Duration::from_secs(3))
    );
}

#[test]
fn spilled_urls_survive_a_checkpoint_through_their_segment_files() {
    let state = tempfile::tempdir().unwrap();
    let spill_a = tempfile::tempdir().unwrap();
    let spill_b = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = spilling(0, spill_a.path(), 2_000).build().unwrap();
    let mut pushed = Vec::new();
    for i in 0..200 {
        for host in ["a.example", "b.example", "c.example", "d.example"] {
            let url = format!("http://{host}/{i}");
            frontier.push(&url, 1, t0).unwrap();
            pushed.push(url);
        }
    }
    assert!(frontier.stats().queues.on_disk > 500);
    frontier.checkpoint(state.path(), t0).unwrap();
    let seg_files = fs::read_dir(state.path())
        .unwrap()
        .filter(|e| {
            e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".seg")
        })
        .count();
    assert!(seg_files > 1, "segments are part of the checkpoint");

    // Without spill settings, the spilled URLs would have nowhere to go.
    let err = Frontier::open(state.path(), settings(0), t0).unwrap_err();
    assert!(matches!(err.kind(), DiskErrorKind::SpillRequired), "{err}");

    // The original goes on (reading segments back, deleting them from its spill dir); the
    // checkpoint must not care.
    let original = drain(&frontier, t0);
    assert_eq!(by_host(&original), by_host(&pushed));
    drop(frontier);

    let restored = Frontier::open(state.path(), spilling(0, spill_b.path(), 2_000), t0).unwrap();
    assert_eq!(restored.stats().queues.queued, 800);
    assert_eq!(by_host(&drain(&restored, t0)), by_host(&pushed));
}

#[test]
fn a_second_checkpoint_replaces_the_first_and_cleans_up() {
    let state = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = spilling(0, spill.path(), 1_000).build().unwrap();
    for i in 0..100 {
        frontier
            .push(&format!("http://a.example/{i}"), 0, t0)
            .unwrap();
    }
    frontier.checkpoint(state.path(), t0).unwrap();
    let first = snapshot_dir(state.path());
    // Lease half of them, so whole segments get read back and deleted.
    for _ in 0..50 {
        let Next::Lease(lease) = frontier.pop(t0).unwrap() else {
            panic!()
        };
        frontier.complete(lease, Outcome::Success, t0).unwrap();
    }
    frontier.checkpoint(state.path(), t0).unwrap();
    let second = snapshot_dir(state.path());
    assert!(first.contains_key("filter-1.bloom") && second.contains_key("filter-2.bloom"));
    assert!(!second.contains_key("filter-1.bloom") && !second.contains_key("state-1.bin"));
    assert!(
        second.keys().all(|name| !name.ends_with(".tmp")),
        "{:?}",
        second.keys()
    );
    let spill_b = tempfile::tempdir().unwrap();
    let restored = Frontier::open(state.path(), spilling(0, spill_b.path(), 1_000), t0).unwrap();
    let rest = drain(&restored, t0);
    let expected: Vec<String> = (50..100).map(|i| format!("http://a.example/{i}")).collect();
    assert_eq!(rest, expected);
}

/// The files of checkpoint generation 2 as they are written, in order: what a crash can
/// leave half-written.
fn generation_two_steps(
    gen1: &BTreeMap<String, Vec<u8>>,
    gen2: &BTreeMap<String, Vec<u8>>,
) -> Vec<(String, Vec<u8>)> {
    let mut steps: Vec<(String, Vec<u8>)> = Vec::new();
    let new_files: Vec<&String> = gen2
        .keys()
        .filter(|n| !gen1.contains_key(*n) || *n == "MANIFEST")
        .collect();
    for prefix in ["filter-", "state-"] {
        for name in &new_files {
            if name.starts_with(prefix) {
                steps.push(((*name).clone(), gen2[*name].clone()));
            }
        }
    }
    for name in &new_files {
        if name.ends_with(".seg") {
            steps.push(((*name).clone(), gen2[*name].clone()));
        }
    }
    steps.push(("MANIFEST".into(), gen2["MANIFEST"].clone()));
    steps
}

#[test]
fn a_crash_at_any_point_of_a_checkpoint_leaves_a_usable_one() {
    let work = tempfile::tempdir().unwrap();
    let spill = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = spilling(0, spill.path(), 1_500).build().unwrap();
    for i in 0..60 {
        frontier
            .push(&format!("http://a.example/{i}"), 0, t0)
            .unwrap();
        frontier
            .push(&format!("http://b.example/{i}"), 0, t0)
            .unwrap();
    }
    let gen1_dir = work.path().join("gen1");
    frontier.checkpoint(&gen1_dir, t0).unwrap();
    let gen1 = snapshot_dir(&gen1_dir);
    let gen1_urls = {
        let s = tempfile::tempdir().unwrap();
        let f = Frontier::open(&gen1_dir, spilling(0, s.path(), 1_500), t0).unwrap();
        by_host(&drain(&f, t0))
    };
    // Generation 2: more URLs, some leased and done.
    for i in 60..120 {
        frontier
            .push(&format!("http://b.example/{i}"), 0, t0)
            .unwrap();
    }
    for _ in 0..10 {
        let Next::Lease(lease) = frontier.pop(t0).unwrap() else {
            panic!()
        };
        frontier.complete(lease, Outcome::Success, t0).unwrap();
    }
    let gen2_dir = work.path().join("gen2");
    write_dir(&gen2_dir, &gen1);
    frontier.checkpoint(&gen2_dir, t0).unwrap();
    let gen2 = snapshot_dir(&gen2_dir);
    let gen2_urls = {
        let s = tempfile::tempdir().unwrap();
        let f = Frontier::open(&gen2_dir, spilling(0, s.path(), 1_500), t0).unwrap();
        by_host(&drain(&f, t0))
    };
    assert_ne!(gen1_urls, gen2_urls);

    let steps = generation_two_steps(&gen1, &gen2);
    assert!(
        steps.len() >= 4,
        "{:?}",
        steps.iter().map(|s| &s.0).collect::<Vec<_>>()
    );
    let crash = work.path().join("crash");
    let mut cases = 0;
    for done in 0..steps.len() {
        let (name, bytes) = &steps[done];
        let mut cuts = vec![
            None,
            Some(0),
            Some(1),
            Some(bytes.len() / 2),
            Some(bytes.len() - 1),
        ];
        cuts.dedup();
        for cut in cuts {
            // Steps before `done` were renamed into place; step `done` is a temporary file
            // cut at `cut` bytes, or missing (`None`).
            let mut files = gen1.clone();
            for (n, b) in &steps[..done] {
                files.insert(n.clone(), b.clone());
            }
            if let Some(cut) = cut {
                files.insert(format!("{name}.tmp"), bytes[..cut].to_vec());
            }
            write_dir(&crash, &files);
            let s = tempfile::tempdir().unwrap();
            let restored = Frontier::open(&crash, spilling(0, s.path(), 1_500), t0)
                .unwrap_or_else(|e| panic!("crash before {name} renamed, cut {cut:?}: {e}"));
            assert_eq!(
                by_host(&drain(&restored, t0)),
                gen1_urls,
                "crash before {name}, cut {cut:?}"
            );
            assert_eq!(snapshot_dir(&crash), files, "open changed nothing");
            cases += 1;
        }
    }
    // After the manifest's rename, with any of the old files still there: generation 2.
    let mut files = gen1.clone();
    files.extend(gen2.clone());
    write_dir(&crash, &files);
    let s = tempfile::tempdir().unwrap();
    let restored = Frontier::open(&crash, spilling(0, s.path(), 1_500), t0).unwrap();
    assert_eq!(by_host(&drain(&restored, t0)), gen2_urls);
    // And the next checkpoint into a crashed directory cleans up the leftovers.
    write_dir(&crash, &{
        let mut f = gen1.clone();
        f.insert("state-2.bin.tmp".into(), vec![1, 2, 3]);
        f
    });
    frontier.checkpoint(&crash, t0).unwrap();
    assert!(
        snapshot_dir(&crash)
            .keys()
            .all(|n| !n.ends_with(".tmp") && !n.contains("-1."))
    );
    assert!(cases >= 16, "{cases}");
}

#[test]
fn damaged_files_are_refused_by_name_and_left_as_they_are() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let (frontier, _held) = mid_crawl(settings(0), t0);
    frontier.checkpoint(dir.path(), t0).unwrap();
    let good = snapshot_dir(dir.path());

    for (name, _) in good.iter() {
        for (what, damage) in [
            (
                "flipped",
                Box::new(|b: &mut Vec<u8>| {
                    let i = b.len() / 2;
                    b[i] ^= 0x10;
                }) as Box<dyn Fn(&mut Vec<u8>)>,
            ),
            (
                "truncated",
                Box::new(|b: &mut Vec<u8>| b.truncate(b.len() - 1)),
            ),
            ("extended", Box::new(|b: &mut Vec<u8>| b.push(0))),
            ("emptied", Box::new(|b: &mut Vec<u8>| b.clear())),
        ] {
            let mut files = good.clone();
            damage(files.get_mut(name).unwrap());
            write_dir(dir.path(), &files);
            let err = Frontier::open(dir.path(), settings(0), t0).unwrap_err();
            assert_eq!(err.path(), dir.path().join(name), "{what} {name}: {err}");
            assert!(err.to_string().contains(name.as_str()), "{err}");
            assert_eq!(snapshot_dir(dir.path()), files, "open changed nothing");
        }
        let mut files = good.clone();
        files.remove(name);
        write_dir(dir.path(), &files);
        let err = Frontier::open(dir.path(), settings(0), t0).unwrap_err();
        assert_eq!(err.path(), dir.path().join(name), "missing {name}: {err}");
        assert!(matches!(err.kind(), DiskErrorKind::Io(_)), "{err}");
    }
}

#[test]
fn foreign_and_future_state_is_refused_and_never_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    fs::write(dir.path().join("MANIFEST"), b"name = \"someone else's\"\n").unwrap();
    let err = Frontier::open(dir.path(), settings(0), t0).unwrap_err();
    assert!(matches!(err.kind(), DiskErrorKind::Foreign), "{err}");
    let frontier = settings(0).build().unwrap();
    let err = frontier.checkpoint(dir.path(), t0).unwrap_err();
    assert!(matches!(err.kind(), DiskErrorKind::Foreign), "{err}");
    assert_eq!(
        fs::read(dir.path().join("MANIFEST")).unwrap(),
        b"name = \"someone else's\"\n"
    );

    // A later format version.
    let dir = tempfile::tempdir().unwrap();
    frontier.checkpoint(dir.path(), t0).unwrap();
    let path = dir.path().join("MANIFEST");
    let mut bytes = fs::read(&path).unwrap();
    bytes[8] = 2;
    // A damaged version byte is damage, not a version.
    fs::write(&path, &bytes).unwrap();
    let err = Frontier::open(dir.path(), settings(0), t0).unwrap_err();
    assert!(matches!(err.kind(), DiskErrorKind::Corrupt(_)), "{err}");
    // A manifest a later version wrote, with its checksum right.
    let body = bytes.len() - 4;
    let crc = crc32c::crc32c(&bytes[..body]);
    bytes[body..].copy_from_slice(&crc.to_le_bytes());
    fs::write(&path, &bytes).unwrap();
    let err = Frontier::open(dir.path(), settings(0), t0).unwrap_err();
    assert!(
        matches!(
            err.kind(),
            DiskErrorKind::Version {
                found: 2,
                supported: 1
            }
        ),
        "{err}"
    );
    assert!(err.to_string().contains("version 2"), "{err}");
}

#[derive(Clone, Debug)]
enum Op {
    Push(u8, u16),
    Pop,
    Complete(usize, u8),
    Abandon(usize),
    Advance(u16),
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0u8..5, 0u16..300).prop_map(|(h, p)| Op::Push(h, p)),
        3 => Just(Op::Pop),
        2 => (any::<usize>(), 0u8..4).prop_map(|(i, o)| Op::Complete(i, o)),
        1 => any::<usize>().prop_map(Op::Abandon),
        1 => (0u16..2000).prop_map(Op::Advance),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Whatever happened before, a checkpoint and restore lose nothing: the restored
    /// frontier leases exactly the URLs that were queued or in flight, each host's in the
    /// same order (leases in flight first), finds every URL admitted before seen, and keeps
    /// every counter.
    #[test]
    fn nothing_is_lost_across_checkpoint_and_restore(
        ops in prop::collection::vec(op(), 1..120),
        budget in prop_oneof![Just(None), (0usize..3000).prop_map(Some)],
    ) {
        let state = tempfile::tempdir().unwrap();
        let spill_a = tempfile::tempdir().unwrap();
        let spill_b = tempfile::tempdir().unwrap();
        let builder = |spill: &Path| match budget {
            Some(b) => spilling(50, spill, b),
            None => with_budget(50, None),
        };
        let t0 = Instant::now();
        let mut now = t0;
        let frontier = builder(spill_a.path()).build().unwrap();
        let mut held = Vec::new();
        let mut admitted = Vec::new();
        for op in ops {
            match op {
                Op::Push(h, p) => {
                    let url = format!("http://h{h}.example/{p}");
                    if frontier.push(&url, 0, now).unwrap() == Push::Queued {
                        admitted.push(url);
                    }
                }
                Op::Pop => {
                    if let Next::Lease(lease) = frontier.pop(now).unwrap() {
                        held.push(lease);
                    }
                }
                Op::Complete(i, o) if !held.is_empty() => {
                    let lease = held.swap_remove(i % held.len());
                    let outcome = match o {
                        0 | 1 => Outcome::Success,
                        2 => Outcome::RETRY,
                        _ => Outcome::FAILED,
                    };
                    frontier.complete(lease, outcome, now).unwrap();
                }
                Op::Abandon(i) if !held.is_empty() => {
                    let lease = held.swap_remove(i % held.len());
                    frontier.abandon(lease, now).unwrap();
                }
                Op::Advance(ms) => now += Duration::from_millis(ms.into()),
                _ => {}
            }
        }
        let before = frontier.stats();
        frontier.checkpoint(state.path(), now).unwrap();

        // What must come back, per host: the leases in flight, oldest first, then the queue.
        // Abandoning them newest first in the original puts them there too.
        held.sort_by_key(|l| l.id());
        for lease in held.into_iter().rev() {
            frontier.abandon(lease, now).unwrap();
        }
        let expected = per_host(drain(&frontier, now));

        let restored = Frontier::open(state.path(), builder(spill_b.path()), now).unwrap();
        let after = restored.stats();
        prop_assert_eq!(&after.admission, &before.admission);
        prop_assert_eq!(after.queues.pushed, before.queues.pushed);
        // Leases in flight come back queued, those of hosts given up meanwhile too: they
        // are handed out again for their records, as an abandoned lease would be.
        prop_assert_eq!(
            after.queues.queued + after.queues.given_up_urls,
            before.queues.queued + before.queues.in_flight + before.queues.given_up_urls
        );
        for url in &admitted {
            prop_assert_eq!(restored.push(url, 0, now).unwrap(), Push::Seen);
        }
        prop_assert_eq!(per_host(drain(&restored, now)), expected);
    }
}

#[test]
fn a_checkpoint_taken_during_pushes_never_has_a_url_seen_but_not_queued() {
    let state = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = with_budget(0, None).build().unwrap();
    std::thread::scope(|scope| {
        for t in 0..4 {
            let frontier = &frontier;
            scope.spawn(move || {
                for i in 0..3_000 {
                    let url = format!("http://h{}.example/{t}/{i}", i % 17);
                    frontier.push(&url, 0, t0).unwrap();
                }
            });
        }
        // Checkpoint while the pushes run.
        while frontier.stats().queues.pushed < 2_000 {
            std::thread::yield_now();
        }
        frontier.checkpoint(state.path(), t0).unwrap();
    });
    let restored = Frontier::open(state.path(), with_budget(0, None), t0).unwrap();
    let queued = restored.stats().queues.queued;
    assert!(
        (2_000..12_000).contains(&queued),
        "checkpoint mid-way: {queued}"
    );
    let drained: std::collections::HashSet<String> = drain(&restored, t0).into_iter().collect();
    for t in 0..4 {
        for i in 0..3_000 {
            let url = format!("http://h{}.example/{t}/{i}", i % 17);
            match restored.push(&url, 0, t0).unwrap() {
                Push::Seen => assert!(drained.contains(&url), "{url} seen but never queued"),
                Push::Queued => assert!(!drained.contains(&url), "{url} queued but not seen"),
                other => panic!("{other:?}"),
            }
        }
    }
}

#[test]
fn two_frontiers_opened_from_one_checkpoint_do_not_share_segment_files() {
    let state = tempfile::tempdir().unwrap();
    let spill_a = tempfile::tempdir().unwrap();
    let spill_b = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let a = spilling(0, spill_a.path(), 0).build().unwrap();
    let first: Vec<String> = (0..40).map(|i| format!("http://x.example/{i}")).collect();
    for url in &first {
        a.push(url, 0, t0).unwrap();
    }
    a.checkpoint(state.path(), t0).unwrap();
    let b = Frontier::open(state.path(), spilling(0, spill_b.path(), 0), t0).unwrap();
    // Both spill more of the same host behind the runs they started from.
    let more_a: Vec<String> = (0..40).map(|i| format!("http://x.example/a{i}")).collect();
    let more_b: Vec<String> = (0..40).map(|i| format!("http://x.example/b{i}")).collect();
    for (ua, ub) in more_a.iter().zip(&more_b) {
        a.push(ua, 0, t0).unwrap();
        b.push(ub, 0, t0).unwrap();
    }
    assert_eq!(drain(&a, t0), [first.clone(), more_a].concat());
    assert_eq!(drain(&b, t0), [first, more_b].concat());
    assert_eq!(
        (a.stats().queues.lost_urls, b.stats().queues.lost_urls),
        (0, 0)
    );
}

#[test]
fn a_damaged_segment_is_found_when_opening_and_nothing_is_left_behind() {
    let state = tempfile::tempdir().unwrap();
    let spill_a = tempfile::tempdir().unwrap();
    let spill_b = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let a = spilling(0, spill_a.path(), 0).build().unwrap();
    for i in 0..40 {
        a.push(&format!("http://x.example/{i}"), 0, t0).unwrap();
    }
    a.checkpoint(state.path(), t0).unwrap();
    let segment = fs::read_dir(state.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "seg"))
        .unwrap();
    drop(a); // its spill files go; the checkpoint's links stay
    let mut bytes = fs::read(&segment).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    fs::write(&segment, &bytes).unwrap();
    let err = Frontier::open(state.path(), spilling(0, spill_b.path(), 0), t0).unwrap_err();
    assert_eq!(err.path(), segment, "{err}");
    assert!(matches!(err.kind(), DiskErrorKind::Corrupt(_)), "{err}");
    assert_eq!(
        fs::read_dir(spill_b.path()).unwrap().count(),
        0,
        "no stray copies"
    );
}

#[test]
fn the_spill_directory_cannot_be_the_checkpoint_directory() {
    let dir = tempfile::tempdir().unwrap();
    let t0 = Instant::now();
    let frontier = spilling(0, dir.path(), 0).build().unwrap();
    frontier.push("http://x.example/", 0, t0).unwrap();
    let err = frontier.checkpoint(dir.path(), t0).unwrap_err();
    assert!(err.to_string().contains("spill directory"), "{err}");
    assert!(!dir.path().join("MANIFEST").exists());
    assert_eq!(drain(&frontier, t0), ["http://x.example/"]);
}
