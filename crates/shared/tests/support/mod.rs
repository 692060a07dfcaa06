//! Test support: real Redis servers.
pub mod redis;
