//! Model checking of the atomic filter's exactly-once insert with loom: every interleaving of
//! the threads below is explored, not just the ones a real machine happens to produce.
//!
//! Run with: `RUSTFLAGS="--cfg loom" cargo test -p politecrawl-bloom --release --test loom`
//! (CI does, in its own target directory).

#![cfg(loom)]

use bloom::AtomicBloomFilter;
use loom::sync::Arc;
use loom::thread;

const KEY: [u8; 16] = *b"bloom-loom-key!!";

fn filter(blocks_per_key: u32) -> Arc<AtomicBloomFilter> {
    Arc::new(
        AtomicBloomFilter::builder_with_bits(1024, 4)
            .key(KEY)
            .blocks_per_key(blocks_per_key)
            .build()
            .unwrap(),
    )
}

fn two_inserters_one_winner(blocks_per_key: u32) {
    loom::model(move || {
        let filter = filter(blocks_per_key);
        let other = {
            let filter = filter.clone();
            thread::spawn(move || filter.insert("https://example.com/"))
        };
        let here = filter.insert("https://example.com/");
        let there = other.join().unwrap();
        assert!(here ^ there, "winners: here {here}, there {there}");
        assert!(filter.contains("https://example.com/"));
        assert_eq!(filter.items(), 1);
    });
}

#[test]
fn two_inserters_one_winner_one_block() {
    two_inserters_one_winner(1);
}

#[test]
fn two_inserters_one_winner_two_blocks() {
    two_inserters_one_winner(2);
}

/// An insert racing with an insert of another item: both are new, both are found afterwards,
/// whatever the interleaving of their word updates.
#[test]
fn different_items_are_both_new() {
    loom::model(|| {
        let filter = filter(2);
        let other = {
            let filter = filter.clone();
            thread::spawn(move || filter.insert("a"))
        };
        let b = filter.insert("b");
        let a = other.join().unwrap();
        assert!(a && b);
        assert!(filter.contains("a") && filter.contains("b"));
    });
}
