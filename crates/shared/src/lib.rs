//! A web crawl's frontier shared by several crawler processes through Redis (one server, or
//! a Redis Cluster).
//!
//! Every process of a crawl connects to the same [`Store`], creates the crawl or joins it
//! ([`Store::create`], [`Store::load`]) and works through a [`SharedFrontier`]: it pushes the
//! links it finds, takes [`SharedLease`]s of URLs to fetch, and completes them with the fetch's
//! outcome. Inside Redis, in the order a URL meets them:
//!
//! * Buckets: hosts are hashed into [`Layout::buckets`] buckets (by name, registrable domain
//!   or server address: [`BucketsBy`]); every key of a bucket
//!   carries the bucket's hash tag, so that one Lua script (`scripts/`, one file each) works on keys of one
//!   slot, on a cluster too, and each step is atomic.
//! * The seen-test (`seen.rs` sizes it and keeps copies, `scripts/common.lua` runs it):
//!   fingerprints, not URL strings. A growing seen-test per bucket: generations each twice
//!   the one before, each a number of Redis integer sets of 32-bit fingerprints, a URL's set
//!   picked by its hash, that the admission script tests and sets with one `SADD`, so that
//!   of several processes pushing one new URL exactly one queues it. Each
//!   process copies the full generations, which no script writes again, and looks URLs up
//!   there first.
//! * Per-host queues (a list per host of "attempts depth url"): a host is leased from when
//!   its next start time has come and it has a free connection, so politeness (delay,
//!   `Crawl-delay`, `Retry-After`, back-off) holds across processes. What an outcome does
//!   to a host and its URL is `frontier::HostRecord`'s rules, run in memory by the process that owns the host's bucket (`frontier/owned.rs`),
//!   which writes each host's state with its batches (`scripts/batch.lua`); an owned bucket
//!   with its URLs in a real Redis passes `frontier::conformance`, the table both stores pass.
//! * Ownership: each bucket of hosts has one owner among the processes present
//!   (`frontier/owners.rs`), which holds it while it lives; a leased URL stays in flight in
//!   Redis until its end is written. A process gone, its buckets are taken over and their
//!   URLs in flight go back to the front of their hosts' queues. Completing a lease of a
//!   bucket taken over is refused (fencing by the owner's epoch, the token and the URL).
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
//!     Politeness::default(), Duration::from_secs(30))?;
//! frontier.push_seeds(vec![seed]).await?;
//! loop {
//!     match frontier.next().await? {
//!         shared::Next::Lease(lease) => {
//!             // fetch lease.url(), push its links, then:
//!             frontier.complete(lease, Outcome::Success).await?;
//!         }
//!         shared::Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
//!         shared::Next::Pending => unreachable!("it says when to ask again"),
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
pub use frontier::{
    LOCATE_WAIT, Listed, Locate, Located, Next, RobotsRead, SHARE_CHUNK, SHARE_HOLD,
    SharedFrontier, SharedLease, SitemapMark, SystemLocator, TERM_LEAST, TERM_STARTS, Totals,
    address_term,
};
pub use store::{BucketsBy, Layout, Store, Stored};

/// Compiles the README's example as a doc test.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
