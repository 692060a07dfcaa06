//! The seen-test: exactly-once admission across threads and growth, and honest statistics.

use std::sync::Barrier;
use std::sync::atomic::{AtomicU8, Ordering};
use std::thread;

use frontier::{Canonical, Canonicalizer, SeenSet};

fn urls(n: usize) -> Vec<Canonical> {
    let canon = Canonicalizer::new();
    (0..n)
        .map(|i| {
            canon
                .canonicalize(&format!(
                    "https://host{}.example/page/{i}?q={}",
                    i % 97,
                    i * 7
                ))
                .expect("valid URL")
        })
        .collect()
}

/// Threads push the same URLs at the same time into a set that starts tiny and grows many
/// times: each URL is reported new exactly once.
#[test]
fn concurrent_pushes_admit_each_url_once() {
    const THREADS: usize = 8;
    let urls = urls(50_000);
    let seen = SeenSet::builder()
        .initial_capacity(100)
        .false_positive_rate(1e-9)
        .key([3; 16])
        .build()
        .unwrap();
    let wins: Vec<AtomicU8> = urls.iter().map(|_| AtomicU8::new(0)).collect();
    let barrier = Barrier::new(THREADS);
    thread::scope(|s| {
        for _ in 0..THREADS {
            s.spawn(|| {
                barrier.wait();
                for (url, wins) in urls.iter().zip(&wins) {
                    if seen.insert(url).unwrap() {
                        wins.fetch_add(1, Ordering::Relaxed);
                    }
                }
            });
        }
    });
    assert!(wins.iter().all(|w| w.load(Ordering::Relaxed) == 1));
    let stats = seen.stats();
    assert_eq!(stats.urls, 50_000);
    assert!(stats.sub_filters >= 8, "{stats:?}");
    assert!(stats.estimated_rate <= 1e-9);
}

/// Every URL pushed here is distinct, so every push answered "seen" is a URL wrongly dropped.
/// At a deliberately high target rate there are enough of them to check the estimate.
#[test]
fn expected_wrongly_dropped_matches_what_happens() {
    let urls = urls(200_000);
    let seen = SeenSet::builder()
        .initial_capacity(2_000)
        .false_positive_rate(1e-2)
        .key([4; 16])
        .build()
        .unwrap();
    let dropped = urls.iter().filter(|u| !seen.insert(u).unwrap()).count() as f64;
    let stats = seen.stats();
    let expected = stats.expected_wrongly_dropped;
    assert!(dropped > 100.0, "{dropped}");
    // Sampled at the end of each span the estimate errs high, never far low.
    assert!(
        expected >= dropped * 0.8 && expected <= dropped * 1.5 + 4.0 * dropped.sqrt(),
        "dropped {dropped}, expected {expected}"
    );
    assert_eq!(stats.urls as f64 + dropped, 200_000.0);
}

/// The filter and its key survive a round trip through bytes, as a checkpoint needs.
///
/// The set's key is random, so at the default rate (one in a million) one of the 5,000 URLs
/// may now and then be wrongly taken for seen as it goes in: the restored set must count what
/// the original admitted, not 5,000.
#[test]
fn a_restored_set_remembers_everything() {
    let urls = urls(5_000);
    let seen = SeenSet::builder().initial_capacity(1_000).build().unwrap();
    let mut admitted = 0;
    for url in &urls {
        admitted += u64::from(seen.insert(url).unwrap());
    }
    assert!(admitted >= 4_990, "{admitted} of 5,000 admitted");
    assert_eq!(seen.stats().urls, admitted);
    let bytes = seen.filter().to_bytes();
    let restored =
        SeenSet::from_filter(bloom::AtomicScalableBloomFilter::from_bytes(&bytes).unwrap());
    assert!(urls.iter().all(|u| restored.contains(u)));
    assert!(urls.iter().all(|u| !restored.insert(u).unwrap()));
    assert_eq!(restored.stats().urls, admitted);
    assert_eq!(restored.filter().key(), seen.filter().key());
}

#[test]
fn bad_settings_are_errors() {
    assert!(SeenSet::builder().initial_capacity(0).build().is_err());
    assert!(SeenSet::builder().false_positive_rate(0.0).build().is_err());
    assert!(
        SeenSet::builder()
            .false_positive_rate(f64::NAN)
            .build()
            .is_err()
    );
}
