//! Referrers and memos: the page whose link led to a URL, and the bytes a caller queued with
//! it, come back with its lease through everything that holds a queued URL (memory, spill
//! runs, checkpoints, the journal, retries, abandoned leases), and state written before
//! referrers existed still opens, with them unknown.

use std::collections::BTreeMap;
use std::fs;
use std::path::Path;
use std::time::Instant;

use frontier::{
    Canonicalizer, Frontier, FrontierBuilder, HostQueues, Next, Outcome, Politeness, ScopeMode,
    ScopeRules, SeenSet, SpillSettings, Url,
};

mod common;
use common::{secs, url};

fn builder(spill: Option<&Path>) -> FrontierBuilder {
    let builder = Frontier::builder()
        .scope(
            ScopeRules::builder()
                .mode(ScopeMode::AnyHost)
                .build()
                .unwrap(),
        )
        .seen(SeenSet::builder().initial_capacity(1000))
        .politeness(
            Politeness::builder()
                .delay(secs(0))
                .connections_per_host(64)
                .build()
                .unwrap(),
        );
    match spill {
        // Everything to disk, in small segments: every URL goes through a spill run.
        Some(dir) => builder.spill(SpillSettings::new(dir).memory_budget(0).segment_bytes(512)),
        None => builder,
    }
}

/// A URL's referrer and memo, as leased.
type Tail = (Option<String>, Option<Vec<u8>>);

/// Pushes a seed and, from two pages, links to three hosts: 20 links in all, so that spill
/// runs hold referrers repeated, changing, and absent; then four URLs with memos, two with a
/// referrer (one of them the last link's, written as "the same") and one with an empty memo.
fn push_links(frontier: &Frontier, now: Instant) -> BTreeMap<String, Tail> {
    let mut expected = BTreeMap::new();
    frontier.push("https://a.example/", 0, now).unwrap();
    expected.insert("https://a.example/".to_owned(), (None, None));
    for page in ["https://a.example/", "https://a.example/other"] {
        let base = Url::parse(page).unwrap();
        for i in 0..10 {
            let host = ["a", "b", "c"][i % 3];
            let href = format!("https://{host}.example/{}-{i}", page.len());
            frontier.push_link(&base, &href, 1, now).unwrap();
            expected.insert(href, (Some(page.to_owned()), None));
        }
    }
    let canon = Canonicalizer::new();
    let with_memos: [(&str, Option<&str>, &[u8]); 4] = [
        ("https://a.example/m1", None, b"\x00\x01 etag \"x\"\n"),
        (
            "https://b.example/m2",
            Some("https://a.example/other"),
            b"memo",
        ),
        (
            "https://c.example/m3",
            Some("https://z.example/"),
            &[0xff; 300],
        ),
        ("https://c.example/m4", None, b""),
    ];
    for (url, from, memo) in with_memos {
        let canonical = canon.canonicalize(url).unwrap();
        frontier
            .push_canonical_with(canonical, from, Some(memo), 2, now)
            .unwrap();
        let tail = (from.map(str::to_owned), Some(memo.to_vec()));
        expected.insert(url.to_owned(), tail);
    }
    expected
}

/// Leases everything, completing with success, and returns each URL's referrer and memo.
/// The clock jumps to each `WaitUntil` (a replay queues URLs at the instant of opening).
fn drain(frontier: &Frontier, mut now: Instant) -> BTreeMap<String, Tail> {
    let mut found = BTreeMap::new();
    loop {
        match frontier.pop(now).unwrap() {
            Next::Lease(lease) => {
                let from = lease.referrer().map(str::to_owned);
                let memo = lease.memo().map(<[u8]>::to_vec);
                found.insert(lease.url().as_str().to_owned(), (from, memo));
                frontier.complete(lease, Outcome::Success, now).unwrap();
            }
            Next::WaitUntil(at) => now = at,
            Next::Pending | Next::Done => return found,
        }
    }
}

#[test]
fn a_link_is_leased_with_the_page_it_was_found_on_and_a_seed_with_none() {
    let frontier = builder(None).build().unwrap();
    let now = Instant::now();
    let expected = push_links(&frontier, now);
    assert_eq!(drain(&frontier, now), expected);
}

#[test]
fn referrers_survive_a_spill_to_disk() {
    let spill = tempfile::tempdir().unwrap();
    let frontier = builder(Some(spill.path())).build().unwrap();
    let now = Instant::now();
    let expected = push_links(&frontier, now);
    assert_eq!(frontier.stats().queues.on_disk, expected.len() as u64);
    assert_eq!(drain(&frontier, now), expected);
}

#[test]
fn referrers_survive_a_checkpoint_queued_spilled_and_in_flight() {
    for spilling in [false, true] {
        let (spill, spill_again) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let dir = tempfile::tempdir().unwrap();
        let frontier = builder(spilling.then_some(spill.path())).build().unwrap();
        let now = Instant::now();
        let expected = push_links(&frontier, now);
        // Two leases in flight: queued again on open, referrers and all.
        let Next::Lease(_seed) = frontier.pop(now).unwrap() else {
            panic!("a lease")
        };
        let Next::Lease(_link) = frontier.pop(now).unwrap() else {
            panic!("a lease")
        };
        frontier.checkpoint(dir.path(), now).unwrap();
        let restored = Frontier::open(
            dir.path(),
            builder(spilling.then_some(spill_again.path())),
            now,
        )
        .unwrap();
        assert_eq!(drain(&restored, now), expected, "spilling: {spilling}");
    }
}

#[test]
fn referrers_survive_a_journal_replay() {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let frontier = builder(None).journal(dir.path()).build().unwrap();
    let expected = push_links(&frontier, now);
    frontier.sync_journal().unwrap();
    drop(frontier); // a crash before any checkpoint
    let replayed = builder(None).journal(dir.path()).build().unwrap();
    assert_eq!(replayed.replayed().unwrap().admitted, expected.len() as u64);
    assert_eq!(drain(&replayed, now), expected);
}

#[test]
fn a_retried_or_abandoned_url_keeps_its_referrer_and_memo() {
    let mut queues = HostQueues::new(Politeness::builder().delay(secs(0)).build().unwrap());
    let now = Instant::now();
    let page = "https://example.com/index.html";
    let memo = Some(&b"earlier"[..]);
    queues
        .push_with(url("https://example.com/broken"), Some(page), memo, 1, now)
        .unwrap();
    let Next::Lease(first) = queues.pop(now).unwrap() else {
        panic!("a lease")
    };
    let retry = Outcome::RETRY;
    queues.complete(first, retry, now).unwrap();
    let later = now + secs(60);
    let Next::Lease(second) = queues.pop(later).unwrap() else {
        panic!("a lease")
    };
    assert_eq!((second.attempts(), second.referrer()), (2, Some(page)));
    assert_eq!(second.memo(), memo);
    queues.abandon(second, later).unwrap();
    let Next::Lease(third) = queues.pop(later).unwrap() else {
        panic!("a lease")
    };
    assert_eq!((third.attempts(), third.referrer()), (2, Some(page)));
    assert_eq!(third.memo(), memo);
}

/// A checkpoint written by the version before referrers (state version 1, spill runs and
/// journal admissions without them; made by `tests/fixtures/v1-checkpoint/README.md`'s
/// program): it opens, every URL comes back with its referrer unknown, and what is pushed
/// after carries its own, through the next checkpoint too.
#[test]
fn a_checkpoint_and_journal_from_before_referrers_still_open() {
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/v1-checkpoint");
    let dir = tempfile::tempdir().unwrap();
    for entry in fs::read_dir(&fixture).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() != "README.md" {
            fs::copy(entry.path(), dir.path().join(entry.file_name())).unwrap();
        }
    }
    let (spill, spill_again) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let now = Instant::now();
    let open = |spill: &Path| {
        Frontier::open(dir.path(), builder(Some(spill)).journal(dir.path()), now).unwrap()
    };
    let frontier = open(spill.path());
    assert_eq!(frontier.replayed().unwrap().admitted, 1);
    let page = Url::parse("https://a.example/2").unwrap();
    frontier.push_link(&page, "/new", 2, now).unwrap();
    frontier.checkpoint(dir.path(), now).unwrap();
    drop(frontier);
    let reopened = open(spill_again.path());
    let found = drain(&reopened, now);
    let unknown = [
        "https://a.example/1",     // in flight at the old checkpoint
        "https://a.example/2",     // spilled
        "https://b.example/x",     // spilled
        "https://c.example/after", // journaled
    ];
    let mut expected: BTreeMap<String, Tail> = unknown
        .iter()
        .map(|u| (u.to_string(), (None, None)))
        .collect();
    expected.insert(
        "https://a.example/new".to_owned(),
        (Some("https://a.example/2".to_owned()), None),
    );
    assert_eq!(found, expected);
}

/// A memo over the limit is not kept, in the queue or the journal (whose reader would take
/// the entry for damage): the URL is queued, and a replay after a crash reads the journal.
#[test]
fn a_memo_over_the_limit_is_not_kept_and_the_journal_still_replays() {
    let dir = tempfile::tempdir().unwrap();
    let now = Instant::now();
    let frontier = builder(None).journal(dir.path()).build().unwrap();
    let canon = Canonicalizer::new();
    let at_limit = vec![1; frontier::MAX_MEMO_BYTES];
    let over = vec![2; frontier::MAX_MEMO_BYTES + 1];
    for (url, memo) in [
        ("https://a.example/at", &at_limit),
        ("https://a.example/over", &over),
    ] {
        let url = canon.canonicalize(url).unwrap();
        frontier
            .push_canonical_with(url, None, Some(memo), 1, now)
            .unwrap();
    }
    frontier.sync_journal().unwrap();
    drop(frontier);
    let replayed = builder(None).journal(dir.path()).build().unwrap();
    let found = drain(&replayed, now);
    assert_eq!(
        found["https://a.example/at"].1.as_deref(),
        Some(&at_limit[..])
    );
    assert_eq!(found["https://a.example/over"], (None, None));
}
