#!/usr/bin/env python3
"""Prints the `filters` benchmark results as a markdown table: ns per key, from criterion's
saved estimates (target/criterion), plus the ratios the README quotes.

Run after `cargo bench -p politecrawl-bloom --bench filters`:
    python3 crates/bloom/benches/table.py
"""
import json
import pathlib
import sys

root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else "target/criterion")
FILTERS = ["standard", "blocked", "atomic", "counting", "fastbloom", "bloomfilter"]
OPS = ["insert", "hit", "miss", "insert_batch", "hit_batch", "miss_batch"]
KEYS_PER_ITERATION = 1024


def ns_per_key(size, filt, op):
    path = root / size / f"{filt}_{op}" / "new" / "estimates.json"
    if not path.exists():
        return None
    return json.loads(path.read_text())["mean"]["point_estimate"] / KEYS_PER_ITERATION


sizes = sorted((p.name for p in root.glob("n=*")), key=lambda s: int(s[2:]))
for size in sizes:
    print(f"\n{size} keys, p = 0.01, ns per key (mean)\n")
    print("| filter | " + " | ".join(OPS) + " |")
    print("|---" * (len(OPS) + 1) + "|")
    for filt in FILTERS:
        cells = [ns_per_key(size, filt, op) for op in OPS]
        if all(c is None for c in cells):
            continue
        print(f"| {filt} | " + " | ".join("-" if c is None else f"{c:.1f}" for c in cells) + " |")
    fast = {op: ns_per_key(size, "fastbloom", op) for op in ["insert", "hit", "miss"]}
    if all(fast.values()):
        print("\nspeed-up over fastbloom (its time / ours):\n")
        for filt in ["blocked", "atomic"]:
            parts = []
            for op in ["insert", "hit", "miss"]:
                for suffix in ["", "_batch"]:
                    ours = ns_per_key(size, filt, op + suffix)
                    if ours:
                        parts.append(f"{op}{suffix} {fast[op] / ours:.2f}x")
            print(f"- {filt}: " + ", ".join(parts))
