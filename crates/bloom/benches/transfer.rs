//! Shrinking filters for transfer: the false-positive rate after each fold, and compressed
//! sizes against the plain serialized form and Mitzenmacher's entropy bound.
//!
//! Run with `cargo bench -p politecrawl-bloom --bench transfer` (a few seconds). Keys are 17-byte
//! deterministic items; the filters use a fixed key, so the tables are reproducible.

use bloom::{BloomFilter, compress, decompress, entropy_bits};

fn item(set: u8, i: u64) -> [u8; 9] {
    let mut out = [set; 9];
    out[1..].copy_from_slice(&i.to_le_bytes());
    out
}

fn measured_rate(filter: &BloomFilter, queries: u64) -> f64 {
    (0..queries)
        .filter(|&i| filter.contains(item(1, i)))
        .count() as f64
        / queries as f64
}

fn main() {
    let queries = 2_000_000;
    println!(
        "## Folding: a 2^20-bit, 7-hash filter holding 20,000 items (room for 100,000 at 1%)\n"
    );
    println!("| bits | bits/item | set bits | estimated rate | measured rate | serialized bytes |");
    println!("|---|---|---|---|---|---|");
    let mut filter = BloomFilter::builder_with_bits(1 << 20, 7)
        .key([7; 16])
        .build()
        .expect("valid size");
    for i in 0..20_000 {
        filter.insert(item(0, i));
    }
    loop {
        println!(
            "| {} | {:.1} | {:.1}% | {:.2e} | {:.2e} | {} |",
            filter.bits(),
            filter.bits() as f64 / 20_000.0,
            filter.fill_ratio() * 100.0,
            filter.estimated_false_positive_rate(),
            measured_rate(&filter, queries),
            filter.to_bytes().len(),
        );
        match filter.fold() {
            Ok(folded) if folded.fill_ratio() < 0.99 => filter = folded,
            _ => break,
        }
    }

    println!("\n## Compression: 2^20-bit filters at several fills\n");
    println!(
        "| items | hashes | set bits | plain bytes | compressed bytes | entropy bound bytes | compressed / bound |"
    );
    println!("|---|---|---|---|---|---|---|");
    for (items, hashes) in [
        (1_000, 7),
        (10_000, 7),
        (10_000, 2),
        (50_000, 1),
        (100_000, 7),
    ] {
        let mut f = BloomFilter::builder_with_bits(1 << 20, hashes)
            .key([7; 16])
            .build()
            .expect("valid size");
        for i in 0..items {
            f.insert(item(0, i));
        }
        let plain = f.to_bytes();
        let small = compress(&plain).expect("a filter's own bytes");
        assert_eq!(decompress(&small, plain.len()).expect("own output"), plain);
        let bound = entropy_bits(f.bits(), f.set_bits()) / 8.0;
        println!(
            "| {items} | {hashes} | {} | {} | {} | {:.0} | {:.3} |",
            f.set_bits(),
            plain.len(),
            small.len(),
            bound,
            small.len() as f64 / bound,
        );
    }
}
