//! What an outcome does to a host and to its URL, defined once: a state machine with no I/O
//! and no clock of its own. The embedded queues ([`HostQueues`](crate::HostQueues)) keep one
//! [`HostRecord`] per host and drive it; the Redis store runs the same rules in its scripts.
//! The table of `frontier::conformance` (built with the `conformance` feature) holds both
//! stores to them.

use std::time::{Duration, Instant};

use super::{Fate, Outcome, Politeness};

/// A host's politeness record: when its next fetch may start, and how its recent fetches
/// went. [`start`](Self::start) and [`settle`](Self::settle) are the whole life of a lease.
///
/// # Rules
///
/// * A start sets the next-allowed instant to the start plus the host's delay.
/// * A success resets the errors in a row and waits the delay from its completion.
/// * A failure waits the longest of the delay, the back-off of the errors in a row
///   ([`Politeness::backoff`]) and the `Retry-After` (capped at
///   [`Politeness::max_retry_after`]); an error answer (5xx, 429) waits the longest of the
///   delay and the capped `Retry-After`, or [`Politeness::backoff_base`] without one.
/// * Both count an error in a row. The host is given up once it has
///   [`Politeness::max_consecutive_errors`] in a row, the first of them at least
///   [`Politeness::give_up_after`] ago.
/// * A skipped lease (no request made) puts back the next-allowed instant and last start it
///   found, unless something moved the host's clock since it started.
/// * The URL's fate is [`fate`]'s: decided by the outcome, its attempts and (for a retry
///   only) whether the host is given up.
/// * A lease handed out for a host already given up changes nothing and is
///   [`Fate::DroppedWithHost`].
///
/// # Example
///
/// ```
/// use std::time::{Duration, Instant};
/// use frontier::{Fate, HostRecord, Outcome, Politeness};
///
/// let polite = Politeness::default(); // 1 s delay, back-off from 1 s
/// let delay = polite.delay();
/// let mut host = HostRecord::default();
/// let t0 = Instant::now();
/// let lease = host.start(t0, delay, 1);
/// let settled = host.settle(&lease, Outcome::RETRY, t0, delay, &polite);
/// assert_eq!(settled.fate, Fate::Retried { attempts: 2 });
/// assert_eq!(host.next_allowed, Some(t0 + Duration::from_secs(1)));
/// assert_eq!(host.errors_in_row, 1);
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct HostRecord {
    /// The earliest instant of the next lease start; `None` until the first lease.
    pub next_allowed: Option<Instant>,
    /// When the last lease started, so that a longer `Crawl-delay` learnt while it is in
    /// flight still spaces the next start from it.
    pub last_start: Option<Instant>,
    /// Errors since the last success: they drive the back-off and giving up.
    pub errors_in_row: u32,
    /// When the first of those errors happened; `None` while the host is not failing.
    pub failing_since: Option<Instant>,
    /// Set once the host has failed too often in a row for too long; for good, as nothing
    /// says it came back.
    pub given_up: bool,
}

/// What a lease's start found and changed, kept with the lease until it is settled.
///
/// # Example
///
/// ```
/// use std::time::{Duration, Instant};
/// use frontier::HostRecord;
///
/// let mut host = HostRecord::default();
/// let t0 = Instant::now();
/// let lease = host.start(t0, Duration::from_secs(1), 1);
/// assert_eq!((lease.at, lease.before, lease.given_up), (t0, (None, None), false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Started {
    /// When the lease started.
    pub at: Instant,
    /// The host's next-allowed instant and last start before it: what a skipped lease puts
    /// back.
    pub before: (Option<Instant>, Option<Instant>),
    /// The host had been given up: the lease is handed out only to be recorded.
    pub given_up: bool,
    /// The attempt the lease is (1 for a URL never tried).
    pub attempts: u32,
}

/// What [`HostRecord::settle`] made of a lease.
///
/// # Example
///
/// ```
/// use std::time::{Duration, Instant};
/// use frontier::{Fate, HostRecord, Outcome, Politeness};
///
/// let polite = Politeness::default();
/// let mut host = HostRecord::default();
/// let t0 = Instant::now();
/// let lease = host.start(t0, polite.delay(), 1);
/// let settled = host.settle(&lease, Outcome::Success, t0, polite.delay(), &polite);
/// assert_eq!((settled.fate, settled.gave_up_host), (Fate::Succeeded, false));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settled {
    /// What became of the lease's URL.
    pub fate: Fate,
    /// This completion gave the host up.
    pub gave_up_host: bool,
}

impl HostRecord {
    /// Starts a lease of attempt `attempts` at `now`, for a host whose delay is `delay`. A
    /// given-up host's clock is left alone: its URLs go out at once, to be recorded.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::HostRecord;
    ///
    /// let mut host = HostRecord::default();
    /// let t0 = Instant::now();
    /// host.start(t0, Duration::from_secs(2), 1);
    /// assert_eq!(host.next_allowed, Some(t0 + Duration::from_secs(2)));
    /// ```
    pub fn start(&mut self, now: Instant, delay: Duration, attempts: u32) -> Started {
        let started = Started {
            at: now,
            before: (self.next_allowed, self.last_start),
            given_up: self.given_up,
            attempts,
        };
        if !self.given_up {
            self.last_start = Some(now);
            self.next_allowed = Some(later(now, delay));
        }
        started
    }

    /// Puts the host's clock back where `lease`'s start found it, unless something moved it
    /// since (a later start, a failure's back-off, a new crawl delay): a lease that made no
    /// request takes none of the host's delay. `delay` is the host's delay now.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::HostRecord;
    ///
    /// let mut host = HostRecord::default();
    /// let t0 = Instant::now();
    /// let lease = host.start(t0, Duration::from_secs(1), 1);
    /// host.give_back_start(&lease, Duration::from_secs(1));
    /// assert_eq!((host.next_allowed, host.last_start), (None, None));
    /// ```
    pub fn give_back_start(&mut self, lease: &Started, delay: Duration) {
        if self.last_start == Some(lease.at) && self.next_allowed == Some(later(lease.at, delay)) {
            (self.next_allowed, self.last_start) = lease.before;
        }
    }

    /// Settles a lease with the outcome of its fetch, at `now`: moves the host's clock,
    /// counts its errors, gives it up, and decides the URL's fate (see the rules on
    /// [`HostRecord`]). `delay` is the host's delay now.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{Fate, HostRecord, Outcome, Politeness};
    ///
    /// let polite = Politeness::default();
    /// let mut host = HostRecord::default();
    /// let t0 = Instant::now();
    /// let lease = host.start(t0, polite.delay(), 1);
    /// // robots.txt forbids the URL: no request made, the delay is given back.
    /// let settled = host.settle(&lease, Outcome::Skipped, t0, polite.delay(), &polite);
    /// assert_eq!((settled.fate, host.next_allowed), (Fate::Succeeded, None));
    /// ```
    pub fn settle(
        &mut self,
        lease: &Started,
        outcome: Outcome,
        now: Instant,
        delay: Duration,
        politeness: &Politeness,
    ) -> Settled {
        if lease.given_up {
            // Handed out only to be recorded: nothing was fetched, nothing to learn.
            return Settled {
                fate: Fate::DroppedWithHost,
                gave_up_host: false,
            };
        }
        let mut gave_up_host = false;
        match outcome {
            Outcome::Success => {
                self.errors_in_row = 0;
                self.failing_since = None;
                push_back_to(&mut self.next_allowed, later(now, delay));
            }
            Outcome::Skipped => self.give_back_start(lease, delay),
            Outcome::Failure { retry_after, .. } | Outcome::ErrorAnswer { retry_after }
                if !self.given_up =>
            {
                self.errors_in_row = self.errors_in_row.saturating_add(1);
                let failing_since = *self.failing_since.get_or_insert(now);
                let retry_after = retry_after.map(|after| after.min(politeness.max_retry_after()));
                // A server that answers is not down: its broken pages wait the base back-off
                // (or its Retry-After), not one that doubles with each of them.
                let backoff = if matches!(outcome, Outcome::ErrorAnswer { .. }) {
                    retry_after.unwrap_or(politeness.backoff_base())
                } else {
                    politeness
                        .backoff(self.errors_in_row)
                        .max(retry_after.unwrap_or_default())
                };
                push_back_to(&mut self.next_allowed, later(now, delay.max(backoff)));
                if self.errors_in_row >= politeness.max_consecutive_errors()
                    && now.saturating_duration_since(failing_since) >= politeness.give_up_after()
                {
                    self.given_up = true;
                    gave_up_host = true;
                }
            }
            // A failure on a host given up meanwhile: nothing more to learn of it.
            Outcome::Failure { .. } | Outcome::ErrorAnswer { .. } => {}
        }
        Settled {
            fate: fate(outcome, lease.attempts, politeness, self.given_up),
            gave_up_host,
        }
    }

    /// Applies a longer delay learnt while a lease may be in flight (a robots.txt
    /// `Crawl-delay`): the next start waits for the last start plus `delay`. Returns whether
    /// the next-allowed instant moved.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::HostRecord;
    ///
    /// let mut host = HostRecord::default();
    /// let t0 = Instant::now();
    /// host.start(t0, Duration::from_secs(1), 1);
    /// assert!(host.space_starts(Duration::from_secs(5)));
    /// assert_eq!(host.next_allowed, Some(t0 + Duration::from_secs(5)));
    /// ```
    pub fn space_starts(&mut self, delay: Duration) -> bool {
        let (Some(last_start), Some(next_allowed)) = (self.last_start, self.next_allowed) else {
            return false;
        };
        let spaced = later(last_start, delay);
        if spaced > next_allowed {
            self.next_allowed = Some(spaced);
            return true;
        }
        false
    }
}

/// What becomes of a URL whose lease (attempt `attempts`) ended with `outcome`, on a host
/// given up (`host_given_up`) or not: a success or a skip is done, a failure without a
/// retry has failed, a retry beyond [`Politeness::max_attempts`] is exhausted, one on a
/// given-up host is dropped with it, and any other is retried.
///
/// # Example
///
/// ```
/// use frontier::{Fate, Outcome, Politeness, fate};
///
/// let polite = Politeness::default(); // 3 attempts
/// let retry = Outcome::RETRY;
/// assert_eq!(fate(retry, 1, &polite, false), Fate::Retried { attempts: 2 });
/// assert_eq!(fate(retry, 3, &polite, false), Fate::Exhausted);
/// assert_eq!(fate(retry, 1, &polite, true), Fate::DroppedWithHost);
/// assert_eq!(fate(Outcome::Success, 1, &polite, true), Fate::Succeeded);
/// ```
pub fn fate(outcome: Outcome, attempts: u32, politeness: &Politeness, host_given_up: bool) -> Fate {
    let retry = match outcome {
        Outcome::Success | Outcome::Skipped => return Fate::Succeeded,
        Outcome::Failure { retry, .. } => retry,
        Outcome::ErrorAnswer { .. } => true,
    };
    if !retry {
        Fate::Failed
    } else if attempts >= politeness.max_attempts() {
        Fate::Exhausted
    } else if host_given_up {
        Fate::DroppedWithHost
    } else {
        Fate::Retried {
            attempts: attempts + 1,
        }
    }
}

/// The fate of a URL whose lease ended with `outcome` when it does not depend on its host's
/// state: what a store that writes a record before it hears back from the shared frontier
/// may write. `None` when only the host's state decides (a retry within its attempts), and
/// for a lease handed out for a given-up host (`handed_out_given_up`), which its store
/// settles.
///
/// # Example
///
/// ```
/// use frontier::{Fate, Outcome, Politeness, known_fate};
///
/// let polite = Politeness::default();
/// assert_eq!(known_fate(Outcome::Skipped, 1, &polite, false), Some(Fate::Succeeded));
/// let retry = Outcome::ErrorAnswer { retry_after: None };
/// assert_eq!(known_fate(retry, 1, &polite, false), None);
/// assert_eq!(known_fate(retry, 3, &polite, false), Some(Fate::Exhausted));
/// ```
pub fn known_fate(
    outcome: Outcome,
    attempts: u32,
    politeness: &Politeness,
    handed_out_given_up: bool,
) -> Option<Fate> {
    if handed_out_given_up {
        return None;
    }
    let fine = fate(outcome, attempts, politeness, false);
    (fine == fate(outcome, attempts, politeness, true)).then_some(fine)
}

/// Moves `next_allowed` to `at`, unless it is already later.
pub(crate) fn push_back_to(next_allowed: &mut Option<Instant>, at: Instant) {
    *next_allowed = Some(next_allowed.map_or(at, |t| t.max(at)));
}

/// `t + d`, saturating near the largest `Instant` the platform represents instead of panicking
/// as `+` does: the wait then ends as late as can be expressed, never earlier.
pub(crate) fn later(t: Instant, d: Duration) -> Instant {
    let mut d = d;
    loop {
        if let Some(at) = t.checked_add(d) {
            return at;
        }
        d /= 2;
    }
}
