//! The atomic filter under real threads: exactly-once insert, no false negatives.

mod common;

use std::sync::atomic::Ordering;
use std::thread;

use bloom::AtomicBloomFilter;
use common::{KEY, item};

const THREADS: usize = 8;

// The atomic filter crosses threads: a fact of its type, so checked when this file compiles
// rather than by a test that could only pass.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<AtomicBloomFilter>();
};

/// Every thread inserts the same items in the same order, released together by a barrier, so
/// threads race on each item. Each item must be reported new to exactly one thread.
///
/// The rate is 1e-9 so that no item is a false positive when inserted (which would rightly
/// give it zero winners). A filter that tests and sets word by word with `fetch_or` fails this
/// within a few rounds: fastbloom's reported thousands of double winners per million items.
fn race(items: u64, blocks_per_key: u32, batched: bool) {
    let filter = AtomicBloomFilter::builder(items as usize, 1e-9)
        .key(KEY)
        .blocks_per_key(blocks_per_key)
        .build()
        .unwrap();
    let counts = common::race_winners(THREADS, items, |wins| {
        if batched {
            let all: Vec<_> = (0..items).map(|i| item(0, i)).collect();
            let mut inserted = Vec::new();
            for (n, chunk) in all.chunks(64).enumerate() {
                filter.insert_batch(chunk, &mut inserted);
                for (j, &new) in inserted.iter().enumerate() {
                    if new {
                        wins[n * 64 + j].fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        } else {
            for i in 0..items {
                let it = item(0, i);
                if filter.insert(it) {
                    wins[i as usize].fetch_add(1, Ordering::Relaxed);
                }
                // An insert that returned in this thread is visible to it at once.
                assert!(filter.contains(it));
            }
        }
    });
    assert_eq!(
        counts[1], items,
        "winners per item (index = number of threads told 'new'): {counts:?}"
    );
    assert_eq!(filter.items(), items);
    assert!((0..items).all(|i| filter.contains(item(0, i))));
    // The per-stripe bit counts add up to the bits actually set.
    let bytes = filter.to_bytes();
    let payload = &bytes[60..bytes.len() - 4];
    let ones: u64 = payload.iter().map(|b| u64::from(b.count_ones())).sum();
    assert_eq!(filter.set_bits(), ones);
}

#[test]
fn racing_inserts_have_exactly_one_winner_one_block() {
    for _ in 0..3 {
        race(200_000, 1, false);
    }
}

#[test]
fn racing_inserts_have_exactly_one_winner_two_blocks() {
    for _ in 0..3 {
        race(200_000, 2, false);
    }
}

#[test]
fn racing_batch_inserts_have_exactly_one_winner() {
    race(200_000, 2, true);
}

/// Readers running beside writers never see an item vanish once they have seen it, and after
/// the writers finish every item is present.
#[test]
fn concurrent_readers_see_monotone_membership() {
    let items = 100_000u64;
    let filter = AtomicBloomFilter::builder(items as usize, 1e-6)
        .key(KEY)
        .build()
        .unwrap();
    thread::scope(|s| {
        for w in 0..2u64 {
            let filter = &filter;
            s.spawn(move || {
                for i in (w..items).step_by(2) {
                    filter.insert(item(0, i));
                }
            });
        }
        for _ in 0..2 {
            s.spawn(|| {
                let mut seen = vec![false; items as usize];
                for _ in 0..3 {
                    for i in 0..items {
                        let present = filter.contains(item(0, i));
                        assert!(present || !seen[i as usize], "item {i} vanished");
                        seen[i as usize] |= present;
                    }
                }
            });
        }
    });
    assert!((0..items).all(|i| filter.contains(item(0, i))));
}
