//! A web crawl's frontier shared by several crawler processes through Redis (one server, or
//! a Redis Cluster).
//!
//! Every process of a crawl connects to the same [`Store`], creates the crawl or joins it
//! ([`Store::create`], [`Store::load`]) and works through a [`SharedFrontier`]: it pushes the
//! links it finds, takes [`Lease`]s of URLs to fetch, and completes them with the fetch's
//! outcome. Inside Redis, in the order a URL meets them:
//!
//! * Buckets: hosts are hashed into [`Layout::buckets`] buckets; every key of a bucket
//!   carries the bucket's hash tag, so that one Lua script (`scripts.rs`) works on keys of one
//!   slot, on a cluster too, and each step is atomic.
//! * The seen-test (`seen.rs` sizes it and keeps copies, `scripts.lua` runs it):
//!   fingerprints, not URL strings. A growing cuckoo filter per bucket (generations each 1.5
//!   times the one before, split over keys of at most 8 MiB; buckets of four 28-bit
//!   fingerprints, two buckets per URL) that the admission script tests and sets in one
//!   step, so that of several processes pushing one new URL exactly one queues it. Each
//!   process copies the full generations, which no script writes again, and looks URLs up
//!   there first.
//! * Per-host queues (a list per host of "attempts depth url") and a ready set: a host is
//!   leased from when its next start time has come and it has a free connection, whichever
//!   process asks, so politeness (delay, `Crawl-delay`, `Retry-After`, back-off) holds across
//!   processes.
//! * Leases: a leased URL stays in Redis with a deadline, renewed while its process lives;
//!   past it, the lease goes back to the front of its host's queue. Completing a lease that
//!   went back is refused (fencing by token).
//!
//! The crate knows nothing of HTTP; it uses the `frontier` crate's canonical URLs, scope
//! rules, politeness settings and outcomes, so that a crawler handles both frontiers alike.
//!
//! # Example
//!
//! ```no_run
//! use std::time::Duration;
//! use frontier::{Canonicalizer, Outcome, Politeness, ScopeRules};
//!
//! # async fn f() -> Result<(), Box<dyn std::error::Error>> {
//! let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
//! let crawl = store.create(shared::Layout::default(), "settings of the crawl", &[]).await?;
//! let seed = Canonicalizer::new().canonicalize("https://example.com/")?;
//! let scope = ScopeRules::builder().seed(&seed).build()?;
//! let frontier = shared::SharedFrontier::new(store, &crawl, Canonicalizer::new(), scope,
//!     Politeness::default(), Duration::from_secs(30), 16)?;
//! frontier.push_seeds(vec![seed]).await?;
//! loop {
//!     match frontier.next().await? {
//!         shared::Next::Lease(lease) => {
//!             // fetch lease.url(), push its links, then:
//!             frontier.complete(lease, Outcome::Success).await?;
//!         }
//!         shared::Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
//!         shared::Next::Done => break,
//!     }
//! }
//! # Ok(()) }
//! ```

mod error;
mod frontier;
mod scripts;
mod seen;
mod store;

pub use error::{Error, ErrorKind};
pub use frontier::{Lease, Next, SharedFrontier, Totals};
pub use store::{Layout, Store, Stored};
