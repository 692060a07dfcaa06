//! Placeholder replaced by the benchmark harness.
fn main() {}
