//! The synchronization primitives of the atomic filter, swapped for loom's model-checked ones
//! when built with `--cfg loom` (see `tests/loom.rs`).

#[cfg(loom)]
pub(crate) use loom::sync::{Mutex, MutexGuard, atomic::AtomicU64};
#[cfg(not(loom))]
pub(crate) use std::sync::{Mutex, MutexGuard, atomic::AtomicU64};
