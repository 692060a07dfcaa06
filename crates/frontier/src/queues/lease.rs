//! What a worker holds while it fetches (a [`Lease`]), what it reports ([`Outcome`]) and what
//! the frontier made of it ([`Completion`]).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use crate::Canonical;

/// The right to fetch one URL now, from [`HostQueues::pop`](crate::HostQueues::pop).
///
/// A lease takes one of its host's connections until it is given back to
/// [`HostQueues::complete`](crate::HostQueues::complete) with the fetch's outcome, or to
/// [`HostQueues::abandon`](crate::HostQueues::abandon) when the fetch did not happen (the URL
/// is queued again). Either consumes it: it cannot be cloned, so it is given back at most
/// once. Dropping a lease instead keeps the connection taken for the rest of the crawl.
///
/// # Example
///
/// ```
/// use std::time::Instant;
/// use frontier::{Canonicalizer, HostQueues, Politeness, Next};
///
/// let mut queues = HostQueues::new(Politeness::default());
/// let now = Instant::now();
/// queues.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
/// let Next::Lease(lease) = queues.pop(now)? else { panic!("example.com is ready") };
/// assert_eq!(lease.url().as_str(), "https://example.com/");
/// assert_eq!((lease.depth(), lease.attempts(), lease.id()), (0, 1, 0));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
#[must_use = "a lease holds one of its host's connections until it is completed"]
pub struct Lease {
    pub(super) url: Canonical,
    /// The page whose link led to the URL: see [`Lease::referrer`].
    pub(super) from: Option<Arc<str>>,
    /// What was queued with the URL: see [`Lease::memo`].
    pub(super) memo: Option<super::entry::Memo>,
    pub(super) depth: u32,
    pub(super) attempts: u32,
    pub(super) id: u64,
    /// The host's index in the queues that issued the lease.
    pub(super) host: u32,
    /// The identity of the queues that issued the lease.
    pub(super) queues: u64,
    /// What its start found and changed: what [`Outcome::Skipped`] puts back, and whether
    /// the host had been given up (see [`Lease::host_given_up`]).
    pub(super) start: super::Started,
}

impl Lease {
    /// The URL to fetch.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    /// # let mut queues = HostQueues::new(Politeness::default());
    /// # let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com:8443/a")?, 0, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.url().host_key(), "example.com:8443");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn url(&self) -> &Canonical {
        &self.url
    }

    /// The page whose link led to the URL, as pushed
    /// ([`HostQueues::push_from`](crate::HostQueues::push_from)): what a crawler's record of
    /// a broken link names, so that the link can be fixed where it is. `None` for a seed, a
    /// URL pushed without one, or one queued by a version of this crate that did not keep
    /// it (restored from its checkpoint or journal).
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    /// # let mut queues = HostQueues::new(Politeness::default());
    /// # let now = Instant::now();
    /// let canon = Canonicalizer::new();
    /// queues.push(canon.canonicalize("https://example.com/")?, 0, now)?;
    /// let Next::Lease(seed) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(seed.referrer(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn referrer(&self) -> Option<&str> {
        self.from.as_deref()
    }

    /// The memo queued with the URL ([`HostQueues::push_with`](super::HostQueues::push_with)),
    /// if any: the same bytes after retries, a spill to disk, a checkpoint or a journal's
    /// replay.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    /// # let mut queues = HostQueues::new(Politeness::default());
    /// # let now = Instant::now();
    /// let canon = Canonicalizer::new();
    /// queues.push(canon.canonicalize("https://example.com/")?, 0, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.memo(), None);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn memo(&self) -> Option<&[u8]> {
        self.memo.as_deref().map(|memo| &**memo)
    }

    /// Links followed from a seed to reach the URL, as pushed.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    /// # let mut queues = HostQueues::new(Politeness::default());
    /// # let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/a")?, 4, now)?;
    /// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
    /// assert_eq!(lease.depth(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn depth(&self) -> u32 {
        self.depth
    }

    /// Which try of the URL this is: 1 the first time, one more after each retry.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Outcome, Politeness, Next};
    /// let mut queues = HostQueues::new(Politeness::builder().delay(Default::default()).build()?);
    /// let now = Instant::now();
    /// queues.push(Canonicalizer::new().canonicalize("https://example.com/a").unwrap(), 0, now)?;
    /// let Next::Lease(first) = queues.pop(now)? else { unreachable!() };
    /// let retry = Outcome::Failure { retry: true, retry_after: None };
    /// queues.complete(first, retry, now).unwrap();
    /// let later = now + std::time::Duration::from_secs(1); // after the back-off
    /// let Next::Lease(second) = queues.pop(later)? else { unreachable!() };
    /// assert_eq!(second.attempts(), 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn attempts(&self) -> u32 {
        self.attempts
    }

    /// The lease's number: leases of one [`HostQueues`](crate::HostQueues) are numbered 0,
    /// 1, 2, ... in the order they were issued, retries included.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Politeness, Next};
    /// # let canon = Canonicalizer::new();
    /// let mut queues = HostQueues::new(Politeness::default());
    /// let now = Instant::now();
    /// queues.push(canon.canonicalize("https://a.example/")?, 0, now)?;
    /// queues.push(canon.canonicalize("https://b.example/")?, 0, now)?;
    /// let (Next::Lease(a), Next::Lease(b)) = (queues.pop(now)?, queues.pop(now)?) else { unreachable!() };
    /// assert_eq!((a.id(), b.id()), (0, 1));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Whether the URL's host had been given up when the lease started. Such a lease is not
    /// to be fetched: it hands out a URL that will never be fetched, so that the caller can
    /// record it (a given-up host's URLs are never dropped silently). It took no delay from
    /// its host, and whatever outcome it is completed with, its fate is
    /// [`Fate::DroppedWithHost`].
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{Canonicalizer, Fate, HostQueues, Outcome, Politeness, Next};
    ///
    /// // Given up at the first error: no errors in a row or time failing required.
    /// let polite = Politeness::builder().max_consecutive_errors(1).give_up_after(Duration::ZERO).build()?;
    /// let mut queues = HostQueues::new(polite);
    /// let canon = Canonicalizer::new();
    /// let now = Instant::now();
    /// queues.push(canon.canonicalize("https://down.example/a")?, 0, now)?;
    /// queues.push(canon.canonicalize("https://down.example/b")?, 0, now)?;
    /// let Next::Lease(a) = queues.pop(now)? else { unreachable!() };
    /// let refused = Outcome::Failure { retry: true, retry_after: None };
    /// assert_eq!(queues.complete(a, refused, now)?.host_given_up, Some(1));
    ///
    /// // `/b` is handed out at once, flagged: record it, do not fetch it.
    /// let Next::Lease(b) = queues.pop(now)? else { unreachable!() };
    /// assert!(b.host_given_up());
    /// assert_eq!(queues.complete(b, Outcome::Skipped, now)?.fate, Fate::DroppedWithHost);
    /// assert_eq!(queues.stats().given_up_urls, 2);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn host_given_up(&self) -> bool {
        self.start.given_up
    }
}

/// How a lease's fetch went, as the crawler judges it.
///
/// The frontier only cares about what the fetch says of the host. A server that answered,
/// whatever the status (404 and 410 included), is healthy: complete with
/// [`Success`](Self::Success), and record the status in the crawl's output. Failures are what
/// may say the host is in trouble (connection refused, timeout, 5xx, 429): each backs the
/// host off, and the host is given up only when it has failed
/// [`max_consecutive_errors`](crate::Politeness::max_consecutive_errors) times in a row *and*
/// for [`give_up_after`](crate::Politeness::give_up_after), with no success in between; a few
/// broken pages cost their retries, not the site. Completing a 404 as a failure would back
/// a site off for its broken links.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::Outcome;
///
/// // 503 Service Unavailable with `Retry-After: 120`: the server is up, this page is not.
/// let throttled = Outcome::ErrorAnswer { retry_after: Some(Duration::from_secs(120)) };
/// // The connection was refused: the host may be down; back off, and try again.
/// let refused = Outcome::Failure { retry: true, retry_after: None };
/// assert_ne!(throttled, refused);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// The server answered and the URL is done with. Resets the host's error count; the host
    /// waits its delay from now.
    Success,
    /// The host did not answer (connection refused, DNS, TLS, timeout), or its answer was
    /// unusable. The host waits the longest of its delay, its back-off (doubled for each
    /// error in a row) and `retry_after` (capped at
    /// [`Politeness::max_retry_after`](crate::Politeness::max_retry_after)).
    Failure {
        /// Whether to try the URL again (after a timeout or a 5xx, say), within
        /// [`Politeness::max_attempts`](crate::Politeness::max_attempts).
        retry: bool,
        /// The server's `Retry-After`, if it sent one (429, 503).
        retry_after: Option<Duration>,
    },
    /// The server answered with an error (5xx, 429): the URL is tried again, within
    /// [`Politeness::max_attempts`](crate::Politeness::max_attempts). The host waits the
    /// longest of its delay and `retry_after` (capped), or
    /// [`Politeness::backoff_base`](crate::Politeness::backoff_base) without one, without
    /// growing: a server that answers is up, and five broken pages must not back a site off
    /// for minutes. It counts towards giving the host up, as a failure does, when every answer
    /// is an error for [`give_up_after`](crate::Politeness::give_up_after).
    ErrorAnswer {
        /// The server's `Retry-After`, if it sent one (429, 503).
        retry_after: Option<Duration>,
    },
    /// The caller decided not to fetch the URL after all (robots.txt forbids it, say): no
    /// request reached the host, so the lease gives back the delay its start took, unless
    /// something moved the host's clock since (another lease started, or a failure backed
    /// it off). The URL is done with, counted as a success; the host's error count is left
    /// alone.
    Skipped,
}

impl Outcome {
    /// A failure to try again, without a `Retry-After`: a timeout or a refused connection.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Outcome;
    ///
    /// assert_eq!(Outcome::RETRY, Outcome::Failure { retry: true, retry_after: None });
    /// ```
    pub const RETRY: Outcome = Outcome::Failure {
        retry: true,
        retry_after: None,
    };

    /// A failure not to try again: the URL is given up (a fetch that panicked, say).
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Outcome;
    ///
    /// assert_eq!(Outcome::FAILED, Outcome::Failure { retry: false, retry_after: None });
    /// ```
    pub const FAILED: Outcome = Outcome::Failure {
        retry: false,
        retry_after: None,
    };
}

/// What [`HostQueues::complete`](crate::HostQueues::complete) did with a lease: the URL's
/// fate, and whether its host was given up.
///
/// # Example
///
/// ```
/// # use std::time::Instant;
/// use frontier::{Canonicalizer, Fate, HostQueues, Outcome, Politeness, Next};
///
/// let mut queues = HostQueues::new(Politeness::default());
/// let now = Instant::now();
/// queues.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
/// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
/// let done = queues.complete(lease, Outcome::Success, now).unwrap();
/// assert_eq!(done.fate, Fate::Succeeded);
/// assert_eq!(done.host_given_up, None);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub struct Completion {
    /// What became of the lease's URL.
    pub fate: Fate,
    /// `Some(n)` when this completion gave the host up: `n` URLs wait in its queue, to be
    /// handed out as leases flagged [`Lease::host_given_up`] (the lease's own URL is reported
    /// by `fate`).
    pub host_given_up: Option<u64>,
}

impl Completion {
    /// A completion made by another frontier than this crate's (one shared by several
    /// processes, say), for callers that handle both alike.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Completion, Fate};
    ///
    /// let done = Completion::new(Fate::Succeeded, None);
    /// assert_eq!((done.fate, done.host_given_up), (Fate::Succeeded, None));
    /// ```
    pub fn new(fate: Fate, host_given_up: Option<u64>) -> Completion {
        Completion {
            fate,
            host_given_up,
        }
    }
}

/// What became of a completed lease's URL. Every URL pushed ends in exactly one of
/// `Succeeded`, `Failed`, `Exhausted` or `DroppedWithHost`; `Retried` is a way station.
///
/// # Example
///
/// ```
/// # use std::time::Instant;
/// use frontier::{Canonicalizer, Fate, HostQueues, Outcome, Politeness, Next};
///
/// let mut queues = HostQueues::new(Politeness::builder().max_attempts(1).build()?);
/// let now = Instant::now();
/// queues.push(Canonicalizer::new().canonicalize("https://example.com/").unwrap(), 0, now)?;
/// let Next::Lease(lease) = queues.pop(now)? else { unreachable!() };
/// let done = queues.complete(lease, Outcome::Failure { retry: true, retry_after: None }, now);
/// assert_eq!(done.unwrap().fate, Fate::Exhausted); // one attempt allowed
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Fate {
    /// The fetch succeeded; the URL is done.
    Succeeded,
    /// The fetch failed and no retry was asked for; the URL is done.
    Failed,
    /// Queued again, at the back of its host's queue; its next lease is attempt `attempts`.
    Retried {
        /// The attempt number of the URL's next lease.
        attempts: u32,
    },
    /// A retry was asked for, but the URL had had all its attempts; counted in
    /// [`QueueStats::exhausted`](crate::QueueStats::exhausted).
    Exhausted,
    /// The host has been given up: a retry was asked for after this completion or an earlier
    /// one gave it up, or the lease was one [flagged](Lease::host_given_up) for the record;
    /// counted in [`QueueStats::given_up_urls`](crate::QueueStats::given_up_urls).
    DroppedWithHost,
}

/// A lease given to [`HostQueues::complete`](crate::HostQueues::complete) of queues that did
/// not issue it; those queues are left untouched, and the lease is handed back.
///
/// # Example
///
/// ```
/// # use std::time::Instant;
/// use frontier::{Canonicalizer, HostQueues, Outcome, Politeness, Next};
///
/// let (mut a, mut b) = (HostQueues::new(Politeness::default()), HostQueues::new(Politeness::default()));
/// let now = Instant::now();
/// a.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
/// let Next::Lease(lease) = a.pop(now)? else { unreachable!() };
/// let err = b.complete(lease, Outcome::Success, now).unwrap_err();
/// assert!(a.complete(err.into_lease(), Outcome::Success, now).is_ok());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Debug, PartialEq, Eq)]
pub struct ForeignLease {
    /// Boxed: a lease is large, and this error is rare.
    pub(super) lease: Box<Lease>,
}

impl ForeignLease {
    /// The lease, to complete on the queues that issued it.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Instant;
    /// # use frontier::{Canonicalizer, HostQueues, Outcome, Politeness, Next};
    /// # let (mut a, mut b) = (HostQueues::new(Politeness::default()), HostQueues::new(Politeness::default()));
    /// # let now = Instant::now();
    /// # a.push(Canonicalizer::new().canonicalize("https://example.com/")?, 0, now)?;
    /// # let Next::Lease(lease) = a.pop(now)? else { unreachable!() };
    /// let err = b.complete(lease, Outcome::Success, now).unwrap_err();
    /// assert_eq!(err.into_lease().url().as_str(), "https://example.com/");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn into_lease(self) -> Lease {
        *self.lease
    }
}

impl fmt::Display for ForeignLease {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "lease {} of {} was issued by other queues",
            self.lease.id, self.lease.url
        )
    }
}

impl std::error::Error for ForeignLease {}
