//! The journal: a frontier dropped without a checkpoint (a crash) comes back from its last
//! checkpoint plus its journal with nothing lost and nothing done twice; torn tails are cut,
//! damage before the tail is refused by file and offset.

use std::collections::BTreeSet;
use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use frontier::{DiskErrorKind, Frontier, FrontierBuilder, Next, Outcome, Politeness, Push};

fn builder(dir: &Path) -> FrontierBuilder {
    Frontier::builder()
        .politeness(
            Politeness::builder()
                .delay(Duration::ZERO)
                .connections_per_host(64)
                .build()
                .unwrap(),
        )
        .journal(dir)
}

fn url(i: usize) -> String {
    format!("http://h{}.example/p/{i}", i % 7)
}

/// Leases and completes everything, returning the URLs handed out.
fn drain(frontier: &Frontier) -> BTreeSet<String> {
    let mut urls = BTreeSet::new();
    loop {
        match frontier.pop(Instant::now()).unwrap() {
            Next::Lease(lease) => {
                assert!(
                    urls.insert(lease.url().as_str().to_owned()),
                    "{} handed out twice",
                    lease.url()
                );
                frontier
                    .complete(lease, Outcome::Success, Instant::now())
                    .unwrap();
            }
            Next::Done => return urls,
            other => panic!("{other:?}"),
        }
    }
}

/// Takes `n` leases and completes them.
fn complete(frontier: &Frontier, n: usize) -> BTreeSet<String> {
    let mut done = BTreeSet::new();
    for _ in 0..n {
        let Next::Lease(lease) = frontier.pop(Instant::now()).unwrap() else {
            panic!("a lease")
        };
        done.insert(lease.url().as_str().to_owned());
        frontier
            .complete(lease, Outcome::Success, Instant::now())
            .unwrap();
    }
    done
}

#[test]
fn a_crash_after_a_checkpoint_repeats_nothing_journaled_and_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let frontier = builder(dir.path()).build().unwrap();
    for i in 0..100 {
        frontier.push(&url(i), 1, now).unwrap();
    }
    let before = complete(&frontier, 10);
    frontier.checkpoint(dir.path(), now).unwrap();
    // After the checkpoint: 30 done, 50 new links, one lease still in flight.
    let after = complete(&frontier, 30);
    for i in 100..150 {
        frontier.push(&url(i), 2, now).unwrap();
    }
    let Next::Lease(in_flight) = frontier.pop(Instant::now()).unwrap() else {
        panic!()
    };
    let in_flight = in_flight.url().as_str().to_owned();
    frontier.sync_journal().unwrap();
    drop(frontier); // the crash

    let resumed = Frontier::open(dir.path(), builder(dir.path()), Instant::now()).unwrap();
    let replayed = resumed.replayed().unwrap();
    assert_eq!(
        (replayed.admitted, replayed.done, replayed.torn_bytes),
        (50, 30, 0)
    );
    for i in 0..150 {
        assert_eq!(
            resumed.push(&url(i), 1, now).unwrap(),
            Push::Seen,
            "{}",
            url(i)
        );
    }
    let rest = drain(&resumed);
    let all: BTreeSet<String> = (0..150).map(url).collect();
    // Everything not done before the crash, the lease in flight included, once; nothing
    // done before it again.
    let expected: BTreeSet<String> = all.difference(&before).cloned().collect();
    let expected: BTreeSet<String> = expected.difference(&after).cloned().collect();
    assert!(expected.contains(&in_flight));
    assert_eq!(rest, expected);
    let stats = resumed.stats().queues;
    assert_eq!(stats.accounted_for(), Some(stats.pushed));
    assert_eq!(stats.succeeded, 150);
}

#[test]
fn a_crash_before_the_first_checkpoint_replays_the_journal_alone() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = builder(dir.path()).build().unwrap();
    for i in 0..20 {
        frontier.push(&url(i), 0, Instant::now()).unwrap();
    }
    let done = complete(&frontier, 5);
    frontier.sync_journal().unwrap();
    // Appended, but never written: lost with the crash, as promised.
    frontier.push(&url(99), 0, Instant::now()).unwrap();
    drop(frontier);

    let resumed = builder(dir.path()).build().unwrap();
    let rest = drain(&resumed);
    assert_eq!(rest.len(), 15);
    assert!(rest.is_disjoint(&done));
    assert!(!rest.contains(&url(99)));
}

#[test]
fn a_batch_taken_before_a_checkpoint_is_not_replayed_after_it() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = builder(dir.path()).build().unwrap();
    for i in 0..10 {
        frontier.push(&url(i), 0, Instant::now()).unwrap();
    }
    let batch = frontier.journal_batch();
    assert_eq!(batch.len(), 10);
    frontier.checkpoint(dir.path(), Instant::now()).unwrap();
    // Written late: the checkpoint holds these admissions already.
    frontier.write_journal(batch).unwrap();
    drop(frontier);
    let resumed = Frontier::open(dir.path(), builder(dir.path()), Instant::now()).unwrap();
    assert_eq!(resumed.replayed(), None);
    assert_eq!(drain(&resumed).len(), 10);
}

#[test]
fn a_checkpoint_deletes_the_journal_it_makes_obsolete() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = builder(dir.path()).build().unwrap();
    frontier.push(&url(1), 0, Instant::now()).unwrap();
    frontier.sync_journal().unwrap();
    assert!(dir.path().join("journal-0.log").exists());
    frontier.checkpoint(dir.path(), Instant::now()).unwrap();
    assert!(!dir.path().join("journal-0.log").exists());
    frontier.push(&url(2), 0, Instant::now()).unwrap();
    frontier.sync_journal().unwrap();
    assert!(dir.path().join("journal-1.log").exists());
    frontier.checkpoint(dir.path(), Instant::now()).unwrap();
    assert!(!dir.path().join("journal-1.log").exists());
}

/// A journal of `n` admissions after a checkpoint, written one sync each, and its length
/// after each.
fn journal_of(dir: &Path, n: usize) -> Vec<u64> {
    let frontier = builder(dir).build().unwrap();
    frontier.checkpoint(dir, Instant::now()).unwrap();
    let mut ends = Vec::new();
    for i in 0..n {
        frontier.push(&url(i), 0, Instant::now()).unwrap();
        frontier.sync_journal().unwrap();
        ends.push(fs::metadata(dir.join("journal-1.log")).unwrap().len());
    }
    ends
}

fn copy_dir(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for entry in fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
    }
}

#[test]
fn a_journal_cut_at_any_byte_of_its_last_entries_replays_the_whole_ones() {
    let dir = tempfile::tempdir().unwrap();
    let ends = journal_of(dir.path(), 6);
    let len = *ends.last().unwrap();
    let from = ends[2];
    for cut in from..=len {
        let copy = tempfile::tempdir().unwrap();
        copy_dir(dir.path(), copy.path());
        let file = fs::OpenOptions::new()
            .write(true)
            .open(copy.path().join("journal-1.log"))
            .unwrap();
        file.set_len(cut).unwrap();
        let whole = ends.iter().filter(|&&end| end <= cut).count();
        let resumed = Frontier::open(copy.path(), builder(copy.path()), Instant::now()).unwrap();
        let replayed = resumed.replayed().unwrap();
        assert_eq!(replayed.admitted, whole as u64, "cut at {cut}");
        let good = ends[whole - 1];
        assert_eq!(replayed.torn_bytes, cut - good, "cut at {cut}");
        // The torn tail is gone from the file, and the journal goes on after it.
        assert_eq!(
            fs::metadata(copy.path().join("journal-1.log"))
                .unwrap()
                .len(),
            good
        );
        assert_eq!(drain(&resumed).len(), whole);
    }
}

#[test]
fn a_flipped_byte_before_the_tail_is_refused_naming_the_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let ends = journal_of(dir.path(), 6);
    let path = dir.path().join("journal-1.log");
    let mut bytes = fs::read(&path).unwrap();
    // In the third entry's payload.
    let at = ends[1] as usize + 10;
    bytes[at] ^= 0x01;
    fs::write(&path, &bytes).unwrap();
    let err = Frontier::open(dir.path(), builder(dir.path()), Instant::now()).unwrap_err();
    assert_eq!(err.path(), path);
    match err.kind() {
        DiskErrorKind::CorruptAt { offset, .. } => assert_eq!(*offset, ends[1]),
        other => panic!("{other:?}"),
    }
    assert!(err.to_string().contains("journal-1.log"), "{err}");
    // Refused, not changed: the file is as it was.
    assert_eq!(fs::read(&path).unwrap(), bytes);
}

/// Regression (review): URLs a replay found done, that the checkpoint held queued, were
/// remembered only until the next checkpoint, which held them queued again: a crash after
/// it fetched them once more.
#[test]
fn urls_found_done_by_a_replay_stay_done_through_the_next_checkpoint() {
    let dir = tempfile::tempdir().unwrap();
    let frontier = builder(dir.path()).build().unwrap();
    for i in 0..30 {
        frontier.push(&url(i), 1, Instant::now()).unwrap();
    }
    frontier.checkpoint(dir.path(), Instant::now()).unwrap();
    let done = complete(&frontier, 10);
    frontier.sync_journal().unwrap();
    drop(frontier); // crash: the checkpoint holds the 10 queued, the journal says done

    let resumed = Frontier::open(dir.path(), builder(dir.path()), Instant::now()).unwrap();
    // A checkpoint before any of them came up, then a crash.
    resumed.checkpoint(dir.path(), Instant::now()).unwrap();
    resumed.sync_journal().unwrap();
    drop(resumed);

    let again = Frontier::open(dir.path(), builder(dir.path()), Instant::now()).unwrap();
    let rest = drain(&again);
    assert_eq!(rest.len(), 20);
    assert!(
        rest.is_disjoint(&done),
        "fetched again: {:?}",
        rest.intersection(&done)
    );
    let stats = again.stats().queues;
    assert_eq!(stats.accounted_for(), Some(stats.pushed));
}
