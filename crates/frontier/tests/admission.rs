//! Admission: the pipeline's order, its counts, and exactly-once admission across threads.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread;

use frontier::{Admission, Canonicalizer, DropReason, ScopeRules, SeenSet, Verdict};

fn admission(budget: Option<u64>) -> (Admission, frontier::Canonical) {
    let canon = Canonicalizer::new();
    let seed = canon.canonicalize("https://example.com/").unwrap();
    let scope = ScopeRules::builder()
        .seed(&seed)
        .max_depth(Some(5))
        .per_host_budget(budget)
        .build()
        .unwrap();
    let seen = SeenSet::builder()
        .initial_capacity(1_000)
        .key([1; 16])
        .build()
        .unwrap();
    (Admission::new(canon, scope, seen), seed)
}

#[test]
fn two_spellings_of_one_page_are_admitted_once() {
    let (admission, seed) = admission(None);
    let base = seed.as_url();
    assert!(matches!(
        admission.admit_link(base, "/a?b=2&a=1#x", 1).unwrap(),
        Verdict::New(_)
    ));
    for spelling in [
        "/a?a=1&b=2",
        "HTTPS://EXAMPLE.COM:443/a?a=1&b=2",
        "./x/../a?b=2&a=1&sid=9",
    ] {
        assert_eq!(
            admission.admit_link(base, spelling, 1).unwrap(),
            Verdict::Seen,
            "{spelling}"
        );
    }
    let stats = admission.stats();
    assert_eq!((stats.new, stats.seen), (1, 3));
}

#[test]
fn each_rule_drops_and_counts() {
    let (admission, seed) = admission(None);
    let base = seed.as_url();
    let drop = |href: &str, depth| admission.admit_link(base, href, depth).unwrap();
    assert_eq!(
        drop("https://other.example/", 1),
        Verdict::Dropped(DropReason::OutOfScope)
    );
    assert_eq!(drop("/deep", 6), Verdict::Dropped(DropReason::TooDeep));
    assert_eq!(
        drop("/c/d/c/d/c/", 1),
        Verdict::Dropped(DropReason::RepeatedSegment)
    );
    assert!(matches!(drop("javascript:void(0)", 1), Verdict::Invalid(_)));
    assert!(matches!(drop("http://[oops/", 1), Verdict::Invalid(_)));
    let stats = admission.stats();
    assert_eq!(
        stats.dropped,
        [
            ("out_of_scope", 1),
            ("too_deep", 1),
            ("repeated_segment", 1)
        ]
    );
    assert_eq!(
        stats.invalid,
        [("unparsable", 1), ("unsupported_scheme", 1)]
    );
    assert_eq!(stats.total(), 5);
    // A dropped URL was never marked as seen: nothing of it reached the seen-test.
    assert_eq!(stats.seen_set.urls, 0);
}

/// The budget counts new pages only: pushing a page again does not spend it. A page the
/// budget refuses is remembered as seen and counted once as `host_budget`.
#[test]
fn the_host_budget_charges_new_pages_only() {
    let (admission, seed) = admission(Some(2));
    let base = seed.as_url();
    let verdict = |href: &str| admission.admit_link(base, href, 1).unwrap().reason();
    assert_eq!(verdict("/a"), "new");
    assert_eq!(verdict("/a"), "seen");
    assert_eq!(verdict("/a"), "seen");
    assert_eq!(verdict("/b"), "new");
    assert_eq!(verdict("/c"), "host_budget");
    assert_eq!(verdict("/c"), "seen");
    let stats = admission.stats();
    assert_eq!((stats.new, stats.seen), (2, 3));
    assert_eq!(stats.dropped, [("host_budget", 1)]);
    assert_eq!(stats.seen_set.urls, 3);
}

/// Workers push overlapping links at the same time: each page is new to exactly one of them,
/// and the counts add up to every push.
#[test]
fn concurrent_admission_is_exactly_once_and_fully_counted() {
    const THREADS: usize = 4;
    const PAGES: usize = 20_000;
    let (admission, seed) = admission(None);
    let wins: Vec<AtomicU8> = (0..PAGES).map(|_| AtomicU8::new(0)).collect();
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for t in 0..THREADS {
            let (admission, seed, wins, barrier) = (&admission, &seed, &wins, &barrier);
            s.spawn(move || {
                barrier.wait();
                for i in 0..PAGES {
                    let page = (i + t * 97) % PAGES;
                    let href = format!("/p/{page}?b={}&a=1", page % 7);
                    if let Verdict::New(_) = admission.admit_link(seed.as_url(), &href, 1).unwrap()
                    {
                        wins[page].fetch_add(1, Ordering::Relaxed);
                    }
                    // Out of scope and invalid links in the same stream.
                    admission
                        .admit_link(seed.as_url(), &format!("https://x{page}.example/"), 1)
                        .unwrap();
                    admission
                        .admit_link(seed.as_url(), "mailto:a@b.example", 1)
                        .unwrap();
                }
            });
        }
    });
    assert!(wins.iter().all(|w| w.load(Ordering::Relaxed) == 1));
    let stats = admission.stats();
    assert_eq!(stats.new, PAGES as u64);
    assert_eq!(stats.seen, ((THREADS - 1) * PAGES) as u64);
    assert_eq!(stats.total(), (3 * THREADS * PAGES) as u64);
    assert_eq!(stats.dropped, [("out_of_scope", (THREADS * PAGES) as u64)]);
    assert_eq!(
        stats.invalid,
        [("unsupported_scheme", (THREADS * PAGES) as u64)]
    );
}
