//! Helpers shared by the integration tests.
#![allow(dead_code)] // each test binary uses its own subset

use std::time::Duration;

use frontier::{Canonical, Canonicalizer};

/// The canonical form of a URL the test knows to be valid.
#[track_caller]
pub(crate) fn url(input: &str) -> Canonical {
    Canonicalizer::new()
        .canonicalize(input)
        .unwrap_or_else(|err| panic!("{input:?} rejected: {err}"))
}

pub(crate) fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

pub(crate) fn secs(n: u64) -> Duration {
    Duration::from_secs(n)
}
