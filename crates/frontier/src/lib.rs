//! The frontier of a web crawler: the URLs it knows about and has still to fetch.
//!
//! [`Frontier`] is the whole of it behind one thread-safe handle: `push` a URL (a seed, or a
//! link found on a page), `pop` the next one to fetch as a [`Lease`], `complete` it with the
//! fetch's [`Outcome`], and `checkpoint` it to a directory that [`Frontier::open`] resumes
//! from. Inside, in the order a URL meets them:
//!
//! * Canonical form: a [`Canonicalizer`] turns each URL into one canonical spelling
//!   ([`Canonical`]), so that two spellings of one page produce one fetch, or rejects it with
//!   a reason ([`Rejected`]). The rules, each with an example, are listed on
//!   [`Canonicalizer`].
//! * Scope and traps: [`ScopeRules`] drop canonical URLs outside the crawl's scope or caught
//!   in a crawler trap (too deep, too many or repeated path segments); each drop is a
//!   [`DropReason`], counted in [`DropCounts`].
//! * The seen-test: a [`SeenSet`] remembers every admitted URL in a few bytes, on a growing
//!   Bloom filter whose false-positive rate is a setting and whose expected number of wrongly
//!   dropped URLs is reported ([`SeenStats`]).
//! * The per-host page budget ([`HostBudget`]), charged for new URLs only.
//! * [`Admission`] runs the four above and counts every outcome ([`Verdict`]).
//! * Queues and politeness: [`HostQueues`] keeps admitted URLs in per-host FIFO queues, each
//!   with the page whose link led to it ([`Lease::referrer`]) and the caller's memo, if
//!   any ([`Lease::memo`]), and hands them out as
//!   [`Lease`]s, each host as its [`Politeness`] allows (connections,
//!   delay, robots `Crawl-delay`, `Retry-After`, back-off after errors); it queues retries
//!   and gives up hosts that keep failing for long, handing their URLs out flagged so that
//!   each still gets a record. Beyond a
//!   memory budget, queued URLs spill to segment files on disk ([`SpillSettings`]).
//! * Politeness per address: [`AddressGate`] holds the requests of every name one server
//!   answers for to shared limits ([`AddressLimits`]), by the rule of [`AddressRecord`].
//! * Checkpoints: [`Frontier::checkpoint`] writes all of the above atomically;
//!   [`Frontier::open`] restores it, with leases in flight queued again. File errors are
//!   [`DiskError`]s naming the file.
//!
//! The crate knows nothing of HTTP: it parses with the WHATWG-conformant [`url`] crate and
//! leaves fetching to its caller.
//!
//! # Example
//!
//! ```
//! use frontier::{Canonicalizer, RejectKind};
//!
//! let canon = Canonicalizer::new();
//!
//! // Two spellings of one page, one canonical form.
//! let a = canon.canonicalize("HTTP://Example.COM:80/docs/../a%7euser/?b=2&a=1#intro")?;
//! let b = canon.canonicalize("http://example.com/a~user/?a=1&b=2")?;
//! assert_eq!(a, b);
//! assert_eq!(a.as_str(), "http://example.com/a~user/?a=1&b=2");
//! assert_eq!(a.host_key(), "example.com"); // the key politeness is counted by
//!
//! // Links are resolved against the page they were found on.
//! let link = canon.canonicalize_relative(a.as_url(), "../img/logo.png")?;
//! assert_eq!(link.as_str(), "http://example.com/img/logo.png");
//!
//! // What the crawler will not fetch is rejected with a reason.
//! let err = canon.canonicalize("ftp://example.com/file").unwrap_err();
//! assert_eq!(err.kind(), &RejectKind::UnsupportedScheme("ftp".into()));
//! assert_eq!(err.reason(), "unsupported_scheme");
//! # Ok::<(), frontier::Rejected>(())
//! ```

mod address;
mod admission;
mod canon;
mod checkpoint;
mod codec;
#[cfg(any(test, feature = "conformance"))]
pub mod conformance;
mod error;
mod frontier;
mod journal;
mod page_links;
mod queues;
mod redact;
mod scope;
mod seen;

pub use address::{AddressGate, AddressLimits, AddressRecord, FULL_RETRY, TICKET_TTL, Turn};
pub use admission::{Admission, AdmissionStats, Verdict};
pub use canon::{Canonical, Canonicalizer, CanonicalizerBuilder, RejectKind, Rejected};
pub use error::{DiskError, DiskErrorKind};
pub use frontier::{Frontier, FrontierBuilder, FrontierError, FrontierStats, Push};
pub use journal::{JournalBatch, Replayed};
pub use page_links::PageLinks;
pub use queues::{
    Completion, Fate, ForeignLease, HostPolicy, HostPoliteness, HostQueues, HostRecord, Lease,
    MAX_MEMO_BYTES, Next, Outcome, Politeness, PolitenessBuilder, PolitenessError,
    PolitenessErrorKind, Pushed, QueueStats, Settled, SpillSettings, Started, fate, known_fate,
};
pub use redact::redact_url;
pub use scope::{
    DropCounts, DropReason, HostBudget, ScopeError, ScopeErrorKind, ScopeMode, ScopeRules,
    ScopeRulesBuilder, registrable_domain_of,
};
pub use seen::{SeenSet, SeenSetBuilder, SeenStats};
/// The URL parser the canonical forms are built on, re-exported so callers use the same
/// version: its major version is part of this crate's API.
///
/// ```
/// let base = frontier::Url::parse("https://example.com/a/").unwrap();
/// let page = frontier::Canonicalizer::new().canonicalize_relative(&base, "b")?;
/// assert_eq!(page.as_str(), "https://example.com/a/b");
/// # Ok::<(), frontier::Rejected>(())
/// ```
pub use url::{self, Url};

/// Compiles and runs the README's examples as doc tests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
