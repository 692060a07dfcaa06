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

/// A frontier for the repeated-links property: one seed host, a small page budget and a
/// depth limit, so that links are queued, seen, dropped for several reasons and invalid.
fn page_frontier(budget: u64) -> frontier::Frontier {
    let canon = Canonicalizer::builder().max_length(60).build();
    let seed = canon.canonicalize("https://example.com/").unwrap();
    let scope = ScopeRules::builder()
        .seed(&seed)
        .max_depth(Some(3))
        .max_same_shape_depth(Some(1))
        .per_host_budget(Some(budget))
        .build()
        .unwrap();
    frontier::Frontier::builder()
        .canonicalizer(canon)
        .scope(scope)
        .seen(SeenSet::builder().initial_capacity(1_000).key([3; 16]))
        .build()
        .unwrap()
}

/// Every URL queued, in the order it is leased.
fn leased(frontier: &frontier::Frontier, now: std::time::Instant) -> Vec<String> {
    let mut urls = Vec::new();
    while let frontier::Next::Lease(lease) = frontier.pop(now).unwrap() {
        urls.push(lease.url().as_str().to_owned());
        frontier
            .complete(lease, frontier::Outcome::Success, now)
            .unwrap();
    }
    urls
}

/// Hrefs as pages write them, hostile ones included: few enough texts that a page repeats
/// some, with fragments, spellings of one URL, escapes, other hosts and schemes, controls,
/// and texts around the length limit (60) with and without a fragment past it.
fn href() -> impl proptest::strategy::Strategy<Value = String> {
    use proptest::prelude::*;
    let piece = prop_oneof![
        Just("a.html".to_owned()),
        Just("./a.html".to_owned()),
        Just("/d/../a.html".to_owned()),
        Just("cal/7".to_owned()),
        Just("cal/8".to_owned()),
        Just("7".to_owned()),
        Just("../x/./y/..".to_owned()),
        Just("/".to_owned()),
        Just(".".to_owned()),
        Just("../../../a.html".to_owned()),
        "[a-c./]{1,8}",
        Just("%7Eb".to_owned()),
        Just("https://elsewhere.example/".to_owned()),
        Just("mailto:me@example.com".to_owned()),
        Just("http://[::1".to_owned()),
        Just("a\t.html".to_owned()),
        Just("x/y/z/w/v".to_owned()),
        Just("b".repeat(55)),
        "[a-c/.#%?]{0,6}",
    ];
    let fragment = prop_oneof![Just(String::new()), Just("#".to_owned()), "#[a-z]{0,70}"];
    (piece, fragment).prop_map(|(piece, fragment)| piece + &fragment)
}

/// The bases a page's links resolve against in the property below: the page's directory, a
/// page in it, a page of the calendar (the shape rule), a base with an escape, a host with a
/// trailing dot, another host (out of scope), a port, and user information.
const BASES: &[&str] = &[
    "https://example.com/doc/",
    "https://example.com/doc/x.html",
    "https://example.com/cal/5",
    "https://example.com/a%7Eb/c",
    "https://example.com./d/",
    "https://other.example/d/",
    "https://example.com:8443/d/",
    "https://u@example.com/d/e",
];

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(300))]

    /// Pushing a page's links at once (repeats counted from their first occurrence, plain
    /// links judged on their text before any parse) leaves the counters and the queues
    /// exactly as pushing each link on its own does.
    #[test]
    fn a_pages_repeated_links_count_as_pushing_each_would(
        pages in proptest::collection::vec(
            (
                proptest::collection::vec(href(), 0..40),
                0u32..5,
                proptest::sample::select(BASES),
            ),
            1..5,
        ),
        budget in 1u64..20,
    ) {
        let now = std::time::Instant::now();
        let (one_by_one, at_once) = (page_frontier(budget), page_frontier(budget));
        let page = frontier::Url::parse("https://example.com/cal/6").unwrap();
        for (hrefs, depth, base) in &pages {
            let base = frontier::Url::parse(base).unwrap();
            let mut queued = 0;
            for href in hrefs {
                let push = one_by_one.push_link_on(&page, &base, href, *depth, now).unwrap();
                queued += usize::from(matches!(push, frontier::Push::Queued));
            }
            let pushed = at_once.push_links_on(&page, &base, hrefs, *depth, now).unwrap();
            proptest::prop_assert_eq!(pushed, queued);
        }
        proptest::prop_assert_eq!(one_by_one.stats().admission, at_once.stats().admission);
        proptest::prop_assert_eq!(leased(&one_by_one, now), leased(&at_once, now));
    }
}
