//! The host policy's conformance table: sequences of leases, outcomes, crawl delays and
//! leases given back (until an instant, as a turn at the host's address asks) on one host,
//! under the crawl's politeness or the host's own (a `[[hosts]]` entry's),
//! with the delays, fates and give-ups the rules of [`HostRecord`](crate::HostRecord) make
//! of them; and the page budgets' table ([`BUDGET_CASES`]): new URLs of hosts and domains
//! under the budgets of [`HostBudget`](crate::HostBudget). Every store of this frontier passes it: the embedded queues ([`Embedded`], run by
//! this crate's tests) and the Redis store of `crates/shared` (run by its tests against a
//! real `redis-server`). A rule one store forgets fails a case.
//!
//! Built with the `conformance` feature (and in this crate's tests).
//!
//! # Example
//!
//! ```
//! use frontier::conformance::{CASES, Embedded, run};
//!
//! for case in CASES {
//!     run(case, &mut Embedded::new(case))?;
//! }
//! # Ok::<(), String>(())
//! ```

use std::time::{Duration, Instant};

use crate::{
    Canonicalizer, DropReason, Fate, HostPoliteness, HostQueues, Lease, Next, Outcome, Politeness,
};

/// The host every case's URLs belong to, as [`Canonical::host_key`](crate::Canonical::host_key)
/// spells it.
pub const HOST: &str = "a.example";

/// The politeness of a case, in milliseconds.
///
/// # Example
///
/// ```
/// use frontier::conformance::Settings;
///
/// let polite = Settings::DEFAULT.politeness();
/// assert_eq!(polite.delay().as_millis(), 1000);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Settings {
    /// [`Politeness::delay`].
    pub delay: u64,
    /// [`Politeness::connections_per_host`].
    pub connections: u32,
    /// [`Politeness::backoff_base`].
    pub backoff_base: u64,
    /// [`Politeness::backoff_max`].
    pub backoff_max: u64,
    /// [`Politeness::max_retry_after`].
    pub max_retry_after: u64,
    /// [`Politeness::max_consecutive_errors`].
    pub max_errors: u32,
    /// [`Politeness::give_up_after`].
    pub give_up_after: u64,
    /// [`Politeness::max_attempts`].
    pub max_attempts: u32,
    /// [`HOST`]'s own delay ([`HostPoliteness::delay`], a `[[hosts]]` entry's), if any.
    pub own_delay: Option<u64>,
    /// [`HOST`]'s own connections ([`HostPoliteness::connections`]), if any.
    pub own_connections: Option<u32>,
}

impl Settings {
    /// What a case changes nothing of: 1 s delay, one connection, back-off from 1 s to 8 s,
    /// `Retry-After` up to 30 s, given up after 3 errors in a row over 10 s, 3 attempts.
    pub const DEFAULT: Settings = Settings {
        delay: 1000,
        connections: 1,
        backoff_base: 1000,
        backoff_max: 8000,
        max_retry_after: 30_000,
        max_errors: 3,
        give_up_after: 10_000,
        max_attempts: 3,
        own_delay: None,
        own_connections: None,
    };

    /// The [`Politeness`] these settings make.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::conformance::Settings;
    ///
    /// let polite = Settings { max_attempts: 1, ..Settings::DEFAULT }.politeness();
    /// assert_eq!(polite.max_attempts(), 1);
    /// ```
    pub fn politeness(&self) -> Politeness {
        let ms = Duration::from_millis;
        Politeness::builder()
            .delay(ms(self.delay))
            .connections_per_host(self.connections)
            .backoff_base(ms(self.backoff_base))
            .backoff_max(ms(self.backoff_max))
            .max_retry_after(ms(self.max_retry_after))
            .max_crawl_delay(ms(60_000))
            .max_consecutive_errors(self.max_errors)
            .give_up_after(ms(self.give_up_after))
            .max_attempts(self.max_attempts)
            .per_host(self.own())
            .build()
            .expect("the table's settings are valid")
    }

    /// The per-host policy of these settings: [`HOST`]'s own politeness, nothing of others'.
    fn own(&self) -> impl Fn(&str) -> HostPoliteness + Send + Sync + 'static {
        let own = HostPoliteness {
            delay: self.own_delay.map(Duration::from_millis),
            connections: self.own_connections,
        };
        move |host: &str| {
            if host == HOST {
                own
            } else {
                HostPoliteness::new()
            }
        }
    }
}

/// One step of a case. Times are milliseconds from the case's start; leases are numbered
/// from 0 in the order they were granted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Step {
    /// Queue `n` more URLs of [`HOST`], numbered on from those queued before (from 0).
    Push(u32),
    /// Ask for a lease at `at`.
    Lease {
        /// When.
        at: u64,
        /// What the store must answer.
        expect: Expect,
    },
    /// Complete lease `lease` with `outcome` at `at`.
    Complete {
        /// Which lease.
        lease: usize,
        /// What its fetch did.
        outcome: Outcome,
        /// When.
        at: u64,
        /// What must become of its URL.
        fate: Fate,
        /// `Some(n)` when this completion must give the host up, with `n` URLs queued.
        gave_up: Option<u64>,
    },
    /// The host's delay becomes `delay` ms (a robots.txt `Crawl-delay`), while leases may be
    /// in flight.
    CrawlDelay(u64),
    /// Give lease `lease` back unfetched at `at` (its URL first in its host's queue again, no
    /// attempt spent), its host not leased again before `until` when given (the turn of the
    /// host's address).
    Abandon {
        /// Which lease.
        lease: usize,
        /// When.
        at: u64,
        /// No lease of the host before this, if given.
        until: Option<u64>,
    },
}

/// What a store must answer when asked for a lease.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Expect {
    /// A lease of URL number `url`, its attempt `attempts`, flagged given up or not.
    Granted {
        /// The URL's number.
        url: u32,
        /// The attempt the lease is.
        attempts: u32,
        /// Handed out only to be recorded: its host was given up.
        given_up: bool,
    },
    /// No lease before `at`.
    WaitUntil(u64),
    /// No lease, and no instant to wait for: nothing queued, or every connection taken.
    Nothing,
}

/// A case: settings and steps.
#[derive(Clone, Copy, Debug)]
pub struct Case {
    /// What the case shows.
    pub name: &'static str,
    /// The politeness it runs with.
    pub settings: Settings,
    /// Its steps, in order.
    pub steps: &'static [Step],
}

/// A store under test, driven by [`run`]. Every URL is of [`HOST`]; times are milliseconds
/// from the case's start, the store's clock set to each step's.
pub trait Store {
    /// What the store hands out.
    type Lease;

    /// Queues `https://a.example/{n}`.
    fn push(&mut self, n: u32) -> Result<(), String>;

    /// Asks for a lease at `at`.
    fn lease(&mut self, at: u64) -> Result<Leased<Self::Lease>, String>;

    /// Completes a lease at `at`: the URL's fate, and `Some(n)` when this gave the host up.
    fn complete(
        &mut self,
        lease: Self::Lease,
        outcome: Outcome,
        at: u64,
    ) -> Result<(Fate, Option<u64>), String>;

    /// Sets the host's delay to `delay` ms.
    fn crawl_delay(&mut self, delay: u64) -> Result<(), String>;

    /// Gives a lease back at `at`, its host not leased again before `until` if given.
    fn abandon(&mut self, lease: Self::Lease, at: u64, until: Option<u64>) -> Result<(), String>;
}

/// A store's answer to [`Store::lease`].
#[derive(Debug)]
pub enum Leased<L> {
    /// A lease, and what [`Expect::Granted`] checks of it.
    Granted {
        /// The lease, to complete later.
        lease: L,
        /// Its URL's number.
        url: u32,
        /// Its attempt.
        attempts: u32,
        /// Handed out for a given-up host.
        given_up: bool,
        /// The memo it came with, which must be the one [`memo`] gives its URL.
        memo: Option<Vec<u8>>,
    },
    /// None before `at` ms.
    WaitUntil(u64),
    /// None.
    Nothing,
}

/// The memo URL number `n` is queued with ([`HostQueues::push_with`]): every case checks
/// that each lease, a retry's too, comes with its URL's, in every store; one URL in three
/// has none.
///
/// # Example
///
/// ```
/// assert!(frontier::conformance::memo(0).is_some());
/// assert_eq!(frontier::conformance::memo(2), None);
/// ```
pub fn memo(n: u32) -> Option<Vec<u8>> {
    (n % 3 != 2).then(|| [&b"memo \0"[..], &n.to_le_bytes(), &[0xff]].concat())
}

/// Runs one case against a store, fresh for it. `Err` names the case, the step and what
/// differed.
pub fn run<S: Store>(case: &Case, store: &mut S) -> Result<(), String> {
    let mut leases: Vec<Option<S::Lease>> = Vec::new();
    let mut pushed = 0;
    for (i, step) in case.steps.iter().enumerate() {
        let fail = |what: String| format!("{}: step {i} ({step:?}): {what}", case.name);
        match *step {
            Step::Push(n) => {
                for _ in 0..n {
                    store.push(pushed).map_err(fail)?;
                    pushed += 1;
                }
            }
            Step::Lease { at, expect } => {
                let got = match store.lease(at).map_err(fail)? {
                    Leased::Granted {
                        lease,
                        url,
                        attempts,
                        given_up,
                        memo: got,
                    } => {
                        if got != memo(url) {
                            return Err(fail(format!("URL {url} leased with memo {got:?}")));
                        }
                        leases.push(Some(lease));
                        Expect::Granted {
                            url,
                            attempts,
                            given_up,
                        }
                    }
                    Leased::WaitUntil(at) => Expect::WaitUntil(at),
                    Leased::Nothing => Expect::Nothing,
                };
                if got != expect {
                    return Err(fail(format!("got {got:?}")));
                }
            }
            Step::Complete {
                lease,
                outcome,
                at,
                fate,
                gave_up,
            } => {
                let held = leases
                    .get_mut(lease)
                    .and_then(Option::take)
                    .ok_or_else(|| fail("no such lease held".into()))?;
                let got = store.complete(held, outcome, at).map_err(fail)?;
                if got != (fate, gave_up) {
                    return Err(fail(format!("got {got:?}")));
                }
            }
            Step::CrawlDelay(delay) => store.crawl_delay(delay).map_err(fail)?,
            Step::Abandon { lease, at, until } => {
                let held = leases
                    .get_mut(lease)
                    .and_then(Option::take)
                    .ok_or_else(|| fail("no such lease held".into()))?;
                store.abandon(held, at, until).map_err(fail)?;
            }
        }
    }
    Ok(())
}

/// The embedded store: [`HostQueues`] with a simulated clock.
///
/// # Example
///
/// ```
/// use frontier::conformance::{CASES, Embedded, run};
///
/// run(&CASES[0], &mut Embedded::new(&CASES[0]))?;
/// # Ok::<(), String>(())
/// ```
pub struct Embedded {
    queues: HostQueues,
    canon: Canonicalizer,
    t0: Instant,
}

impl Embedded {
    /// Queues with the case's politeness, their clock at the case's start.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::conformance::{CASES, Embedded};
    ///
    /// let store = Embedded::new(&CASES[0]);
    /// # drop(store);
    /// ```
    pub fn new(case: &Case) -> Embedded {
        Embedded {
            queues: HostQueues::new(case.settings.politeness()),
            canon: Canonicalizer::new(),
            t0: Instant::now(),
        }
    }

    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }
}

impl Store for Embedded {
    type Lease = Lease;

    fn push(&mut self, n: u32) -> Result<(), String> {
        let url = self
            .canon
            .canonicalize(&format!("https://{HOST}/{n}"))
            .map_err(|err| err.to_string())?;
        let now = self.t0;
        self.queues
            .push_with(url, None, memo(n).as_deref(), 0, now)
            .map(drop)
            .map_err(|err| err.to_string())
    }

    fn lease(&mut self, at: u64) -> Result<Leased<Lease>, String> {
        Ok(
            match self.queues.pop(self.at(at)).map_err(|e| e.to_string())? {
                Next::Lease(lease) => Leased::Granted {
                    url: url_number(lease.url().as_str())?,
                    attempts: lease.attempts(),
                    given_up: lease.host_given_up(),
                    memo: lease.memo().map(<[u8]>::to_vec),
                    lease,
                },
                Next::WaitUntil(t) => {
                    Leased::WaitUntil(t.duration_since(self.t0).as_millis() as u64)
                }
                Next::Pending | Next::Done => Leased::Nothing,
            },
        )
    }

    fn complete(
        &mut self,
        lease: Lease,
        outcome: Outcome,
        at: u64,
    ) -> Result<(Fate, Option<u64>), String> {
        let done = self
            .queues
            .complete(lease, outcome, self.at(at))
            .map_err(|_| "a foreign lease".to_string())?;
        Ok((done.fate, done.host_given_up))
    }

    fn crawl_delay(&mut self, delay: u64) -> Result<(), String> {
        self.queues
            .set_crawl_delay(HOST, Duration::from_millis(delay));
        Ok(())
    }

    fn abandon(&mut self, lease: Lease, at: u64, until: Option<u64>) -> Result<(), String> {
        let now = self.at(at);
        match until {
            Some(until) => self.queues.abandon_until(lease, now, self.at(until)),
            None => self.queues.abandon(lease, now),
        }
        .map_err(|_| "a foreign lease".to_string())
    }
}

/// The number `n` of `https://a.example/{n}`.
///
/// # Example
///
/// ```
/// assert_eq!(frontier::conformance::url_number("https://a.example/7"), Ok(7));
/// ```
pub fn url_number(url: &str) -> Result<u32, String> {
    url.rsplit('/')
        .next()
        .and_then(|n| n.parse().ok())
        .ok_or_else(|| format!("{url} is not a URL of the table"))
}

const fn ms(n: u64) -> Option<Duration> {
    Some(Duration::from_millis(n))
}

const ANSWER: Outcome = Outcome::ErrorAnswer { retry_after: None };
const OK: Outcome = Outcome::Success;

const fn granted(url: u32, attempts: u32) -> Expect {
    Expect::Granted {
        url,
        attempts,
        given_up: false,
    }
}

const fn given_up(url: u32, attempts: u32) -> Expect {
    Expect::Granted {
        url,
        attempts,
        given_up: true,
    }
}

const fn lease(at: u64, expect: Expect) -> Step {
    Step::Lease { at, expect }
}

const fn wait(at: u64, until: u64) -> Step {
    Step::Lease {
        at,
        expect: Expect::WaitUntil(until),
    }
}

const fn give_back(lease: usize, at: u64, until: Option<u64>) -> Step {
    Step::Abandon { lease, at, until }
}

const fn done(lease: usize, outcome: Outcome, at: u64, fate: Fate) -> Step {
    Step::Complete {
        lease,
        outcome,
        at,
        fate,
        gave_up: None,
    }
}

const fn gives_up(lease: usize, outcome: Outcome, at: u64, fate: Fate, queued: u64) -> Step {
    Step::Complete {
        lease,
        outcome,
        at,
        fate,
        gave_up: Some(queued),
    }
}

const D: Settings = Settings::DEFAULT;
const TWO: Settings = Settings {
    connections: 2,
    ..Settings::DEFAULT
};
/// Given up at the first error.
const FRAGILE: Settings = Settings {
    max_errors: 1,
    give_up_after: 0,
    connections: 2,
    ..Settings::DEFAULT
};
const fn retried(attempts: u32) -> Fate {
    Fate::Retried { attempts }
}

/// A host's own delay of 3 s (a `[[hosts]]` entry's).
const OWN_DELAY: Settings = Settings {
    own_delay: Some(3000),
    ..Settings::DEFAULT
};
/// A host's own delay of 200 ms and 2 connections.
const OWN_FAST: Settings = Settings {
    own_delay: Some(200),
    own_connections: Some(2),
    ..Settings::DEFAULT
};

/// The table.
pub const CASES: &[Case] = &[
    Case {
        name: "a host's own delay replaces the crawl's",
        settings: OWN_DELAY,
        steps: &[
            Step::Push(2),
            lease(0, granted(0, 1)),
            done(0, OK, 100, Fate::Succeeded),
            wait(100, 3100),
            lease(3100, granted(1, 1)),
        ],
    },
    Case {
        name: "a host's own connections and shorter delay replace the crawl's",
        settings: OWN_FAST,
        steps: &[
            Step::Push(4),
            lease(0, granted(0, 1)),
            wait(0, 200),
            lease(200, granted(1, 1)),
            lease(500, Expect::Nothing),
            done(0, OK, 500, Fate::Succeeded),
            wait(500, 700),
            lease(700, granted(2, 1)),
        ],
    },
    Case {
        name: "a success waits the delay from its completion",
        settings: D,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            done(0, OK, 300, Fate::Succeeded),
            wait(500, 1300),
            lease(1300, granted(1, 1)),
            done(1, OK, 1300, Fate::Succeeded),
            wait(1300, 2300),
        ],
    },
    Case {
        name: "a start spaces the next one by the delay, whatever the connections",
        settings: TWO,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            wait(0, 1000),
            lease(1000, granted(1, 1)),
            lease(2500, Expect::Nothing),
            done(0, OK, 2500, Fate::Succeeded),
            wait(2500, 3500),
        ],
    },
    Case {
        name: "a skipped lease gives back the delay its start took",
        settings: D,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            done(0, Outcome::Skipped, 10, Fate::Succeeded),
            lease(10, granted(1, 1)),
            done(1, OK, 20, Fate::Succeeded),
            wait(20, 1020),
        ],
    },
    Case {
        name: "a skipped lease gives nothing back once another lease started",
        settings: TWO,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            lease(1000, granted(1, 1)),
            done(0, Outcome::Skipped, 1100, Fate::Succeeded),
            wait(1100, 2000),
        ],
    },
    Case {
        name: "a skipped lease gives nothing back once a failure backed the host off",
        settings: TWO,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            lease(1000, granted(1, 1)),
            done(0, ANSWER, 1500, retried(2)),
            done(1, Outcome::Skipped, 1600, Fate::Succeeded),
            wait(1600, 2500),
        ],
    },
    Case {
        name: "failures back off, doubling, and a success resets the count",
        settings: Settings {
            give_up_after: 60_000,
            ..D
        },
        steps: &[
            Step::Push(6),
            lease(0, granted(0, 1)),
            done(0, Outcome::RETRY, 0, retried(2)),
            wait(0, 1000),
            lease(1000, granted(1, 1)),
            done(1, Outcome::RETRY, 1000, retried(2)),
            wait(1000, 3000),
            lease(3000, granted(2, 1)),
            done(2, Outcome::FAILED, 3000, Fate::Failed),
            wait(3000, 7000),
            lease(7000, granted(3, 1)),
            done(3, Outcome::RETRY, 7000, retried(2)),
            wait(7000, 15000),
            lease(15000, granted(4, 1)),
            // Capped at the back-off's maximum.
            done(4, Outcome::RETRY, 15000, retried(2)),
            wait(15000, 23000),
            lease(23000, granted(5, 1)),
            done(5, OK, 23000, Fate::Succeeded),
            lease(24000, granted(0, 2)),
            done(6, Outcome::RETRY, 24000, retried(3)),
            wait(24000, 25000),
        ],
    },
    Case {
        name: "an error waits at least the delay, from its completion",
        settings: Settings { delay: 5000, ..D },
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            done(0, Outcome::RETRY, 3000, retried(2)),
            wait(3000, 8000),
            lease(8000, granted(1, 1)),
            done(1, ANSWER, 9000, retried(2)),
            wait(9000, 14_000),
        ],
    },
    Case {
        name: "a failure waits its Retry-After, capped",
        settings: D,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            done(
                0,
                Outcome::Failure {
                    retry: true,
                    retry_after: ms(20_000),
                },
                0,
                retried(2),
            ),
            wait(0, 20_000),
            lease(20_000, granted(1, 1)),
            done(
                1,
                Outcome::Failure {
                    retry: false,
                    retry_after: ms(90_000),
                },
                20_000,
                Fate::Failed,
            ),
            wait(20_000, 50_000),
        ],
    },
    Case {
        name: "an error answer waits the base back-off or its Retry-After, never doubling",
        settings: D,
        steps: &[
            Step::Push(4),
            lease(0, granted(0, 1)),
            done(0, ANSWER, 0, retried(2)),
            wait(0, 1000),
            lease(1000, granted(1, 1)),
            done(1, ANSWER, 1500, retried(2)),
            wait(1500, 2500),
            lease(2500, granted(2, 1)),
            done(
                2,
                Outcome::ErrorAnswer {
                    retry_after: ms(5000),
                },
                2500,
                retried(2),
            ),
            wait(2500, 7500),
            lease(7500, granted(3, 1)),
            // Capped too.
            done(
                3,
                Outcome::ErrorAnswer {
                    retry_after: ms(100_000),
                },
                7500,
                retried(2),
            ),
            wait(7500, 37_500),
        ],
    },
    Case {
        name: "a retry goes to the back of the queue until its attempts run out",
        settings: Settings {
            max_attempts: 2,
            ..D
        },
        steps: &[
            Step::Push(2),
            lease(0, granted(0, 1)),
            done(0, Outcome::RETRY, 0, retried(2)),
            lease(1000, granted(1, 1)),
            done(1, OK, 1000, Fate::Succeeded),
            lease(2000, granted(0, 2)),
            done(2, ANSWER, 2000, Fate::Exhausted),
            lease(5000, Expect::Nothing),
        ],
    },
    Case {
        name: "a host is given up after errors in a row for long enough, its URLs handed out at once",
        settings: Settings {
            max_errors: 2,
            give_up_after: 5000,
            ..D
        },
        steps: &[
            Step::Push(4),
            lease(0, granted(0, 1)),
            done(0, Outcome::RETRY, 0, retried(2)),
            lease(1000, granted(1, 1)),
            // Two in a row, but not 5 s of them.
            done(1, Outcome::RETRY, 1000, retried(2)),
            lease(3000, granted(2, 1)),
            gives_up(2, Outcome::RETRY, 6000, Fate::DroppedWithHost, 3),
            lease(6000, given_up(3, 1)),
            done(3, Outcome::Skipped, 6000, Fate::DroppedWithHost),
            lease(6000, given_up(0, 2)),
            // One connection, given up or not.
            lease(6000, Expect::Nothing),
            done(4, OK, 6000, Fate::DroppedWithHost),
            lease(6000, given_up(1, 2)),
            done(5, Outcome::RETRY, 6000, Fate::DroppedWithHost),
            lease(6000, Expect::Nothing),
        ],
    },
    Case {
        name: "one success in between starts the errors and their clock again",
        settings: Settings {
            max_errors: 2,
            give_up_after: 5000,
            ..D
        },
        steps: &[
            Step::Push(5),
            lease(0, granted(0, 1)),
            done(0, Outcome::FAILED, 0, Fate::Failed),
            lease(1000, granted(1, 1)),
            done(1, OK, 1000, Fate::Succeeded),
            lease(6000, granted(2, 1)),
            done(2, Outcome::FAILED, 6000, Fate::Failed),
            lease(7000, granted(3, 1)),
            done(3, Outcome::FAILED, 7000, Fate::Failed),
            wait(7000, 9000),
        ],
    },
    Case {
        name: "a failure without a retry that gives the host up has failed",
        settings: FRAGILE,
        steps: &[
            Step::Push(2),
            lease(0, granted(0, 1)),
            gives_up(0, Outcome::FAILED, 0, Fate::Failed, 1),
            lease(0, given_up(1, 1)),
        ],
    },
    Case {
        name: "a retry beyond the attempts that gives the host up is exhausted",
        settings: Settings {
            max_attempts: 1,
            ..FRAGILE
        },
        steps: &[
            Step::Push(2),
            lease(0, granted(0, 1)),
            gives_up(0, ANSWER, 0, Fate::Exhausted, 1),
        ],
    },
    Case {
        name: "leases out when their host is given up end by their own outcome",
        settings: Settings {
            connections: 4,
            delay: 0,
            ..FRAGILE
        },
        steps: &[
            Step::Push(5),
            lease(0, granted(0, 1)),
            lease(0, granted(1, 1)),
            lease(0, granted(2, 1)),
            lease(0, granted(3, 1)),
            gives_up(3, Outcome::RETRY, 100, Fate::DroppedWithHost, 1),
            done(0, OK, 200, Fate::Succeeded),
            done(1, Outcome::FAILED, 200, Fate::Failed),
            done(2, ANSWER, 200, Fate::DroppedWithHost),
            lease(200, given_up(4, 1)),
        ],
    },
    Case {
        name: "a longer crawl delay spaces the next start from the last one",
        settings: TWO,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            Step::CrawlDelay(5000),
            wait(100, 5000),
            done(0, OK, 200, Fate::Succeeded),
            wait(300, 5200),
            lease(5200, granted(1, 1)),
            wait(5200, 10_200),
        ],
    },
    Case {
        name: "a lease given back is leased again first, its start's delay kept, no attempt spent",
        settings: D,
        steps: &[
            Step::Push(2),
            lease(0, granted(0, 1)),
            give_back(0, 10, None),
            wait(10, 1000),
            lease(1000, granted(0, 1)),
            done(1, OK, 1100, Fate::Succeeded),
            wait(1100, 2100),
            lease(2100, granted(1, 1)),
        ],
    },
    Case {
        name: "a lease given back until its address's turn waits for it, and no more: it made \
               no request, so the delay its start took goes back",
        settings: TWO,
        steps: &[
            Step::Push(3),
            lease(0, granted(0, 1)),
            give_back(0, 10, Some(3000)),
            wait(1000, 3000),
            lease(3000, granted(0, 1)),
            // A turn sooner than the host's own delay would have allowed after that start.
            give_back(1, 3010, Some(3500)),
            wait(3400, 3500),
            lease(3500, granted(0, 1)),
            // A request made (a success at 3600) spaces the next start by the delay.
            done(2, OK, 3600, Fate::Succeeded),
            wait(3700, 4600),
            lease(4600, granted(1, 1)),
        ],
    },
];

/// A case of the page budgets' table: new URLs admitted one at a time, each of a host (a
/// [`Canonical::host_key`](crate::Canonical::host_key)), under limits, and what each must
/// answer: `None` to be queued, or the budget that refuses it. Both stores charge the rule of
/// [`HostBudget`](crate::HostBudget); this table holds them to it.
///
/// # Example
///
/// ```
/// use frontier::HostBudget;
/// use frontier::conformance::{BUDGET_CASES, run_budget};
///
/// for case in BUDGET_CASES {
///     let budget = HostBudget::new(case.limit(case.host_pages))
///         .with_domain_limits(case.limit(case.domain_hosts), case.limit(case.domain_pages));
///     run_budget(case, |host| Ok(budget.charge(host).err()))?;
/// }
/// # Ok::<(), String>(())
/// ```
#[derive(Clone, Copy, Debug)]
pub struct BudgetCase {
    /// What it shows.
    pub name: &'static str,
    /// Pages per host (0: no limit).
    pub host_pages: u64,
    /// Hosts per registrable domain (0: no limit).
    pub domain_hosts: u64,
    /// Pages per registrable domain (0: no limit).
    pub domain_pages: u64,
    /// Each new URL's host, in order, and the answer it must get.
    pub charges: &'static [(&'static str, Option<DropReason>)],
}

impl BudgetCase {
    /// A limit of the case as the budgets take it: `None` for 0.
    ///
    /// # Example
    ///
    /// ```
    /// let case = frontier::conformance::BUDGET_CASES[0];
    /// assert_eq!(case.limit(0), None);
    /// ```
    pub fn limit(&self, n: u64) -> Option<u64> {
        (n > 0).then_some(n)
    }
}

/// Runs a budget case: `admit` takes one new URL of a host into a store (new to its
/// seen-test) and answers `None` when it was queued, or the budget that refused it.
///
/// # Errors
///
/// Which charge answered otherwise than the case says, or the store's own error.
///
/// # Example
///
/// See [`BudgetCase`].
pub fn run_budget(
    case: &BudgetCase,
    mut admit: impl FnMut(&str) -> Result<Option<DropReason>, String>,
) -> Result<(), String> {
    for (i, &(host, expected)) in case.charges.iter().enumerate() {
        let got =
            admit(host).map_err(|err| format!("{}: charge {i} ({host}): {err}", case.name))?;
        if got != expected {
            return Err(format!(
                "{}: charge {i} ({host}): {got:?}, expected {expected:?}",
                case.name
            ));
        }
    }
    Ok(())
}

/// The page budgets' table.
pub const BUDGET_CASES: &[BudgetCase] = &[
    BudgetCase {
        name: "pages per host",
        host_pages: 2,
        domain_hosts: 0,
        domain_pages: 0,
        charges: &[
            ("a.example", None),
            ("a.example", None),
            ("a.example", Some(DropReason::HostBudget)),
            ("b.example", None),
            ("a.example", Some(DropReason::HostBudget)),
        ],
    },
    BudgetCase {
        name: "hosts per domain: a farm's third subdomain, and its apex, refused",
        host_pages: 0,
        domain_hosts: 2,
        domain_pages: 0,
        charges: &[
            ("a.farm.example", None),
            ("b.farm.example", None),
            ("c.farm.example", Some(DropReason::DomainHosts)),
            // A host admitted before goes on.
            ("a.farm.example", None),
            ("farm.example", Some(DropReason::DomainHosts)),
            ("other.example", None),
            // Under a public suffix of two labels, domains are one label deeper.
            ("a.shop.co.uk", None),
            ("b.shop.co.uk", None),
            ("a.other.co.uk", None),
            ("c.shop.co.uk", Some(DropReason::DomainHosts)),
        ],
    },
    BudgetCase {
        name: "pages per domain, over its hosts",
        host_pages: 0,
        domain_hosts: 0,
        domain_pages: 3,
        charges: &[
            ("a.example.com", None),
            ("a.example.com", None),
            ("b.example.com", None),
            ("b.example.com", Some(DropReason::DomainPages)),
            ("example.com", Some(DropReason::DomainPages)),
            ("a.example.org", None),
        ],
    },
    BudgetCase {
        name: "every budget: the host's first, then the domain's hosts, then its pages",
        host_pages: 2,
        domain_hosts: 2,
        domain_pages: 3,
        charges: &[
            ("a.x.example", None),
            ("a.x.example", None),
            ("a.x.example", Some(DropReason::HostBudget)),
            ("b.x.example", None),
            ("c.x.example", Some(DropReason::DomainHosts)),
            ("b.x.example", Some(DropReason::DomainPages)),
        ],
    },
    BudgetCase {
        name: "ports and addresses: a host key per port, one domain per name or address",
        host_pages: 0,
        domain_hosts: 1,
        domain_pages: 0,
        charges: &[
            ("x.example:8080", None),
            ("x.example", Some(DropReason::DomainHosts)),
            ("127.0.0.1:8080", None),
            ("127.0.0.1:8081", Some(DropReason::DomainHosts)),
            ("127.0.0.2:8080", None),
            ("[::1]:8080", None),
            ("localhost:8080", None),
        ],
    },
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_queues_pass_the_table() {
        let failed: Vec<String> = CASES
            .iter()
            .filter_map(|case| run(case, &mut Embedded::new(case)).err())
            .collect();
        assert!(failed.is_empty(), "{failed:#?}");
    }

    #[test]
    fn the_embedded_budgets_pass_the_budget_table() {
        for case in BUDGET_CASES {
            let budget = crate::HostBudget::new(case.limit(case.host_pages))
                .with_domain_limits(case.limit(case.domain_hosts), case.limit(case.domain_pages));
            run_budget(case, |host| Ok(budget.charge(host).err())).unwrap();
        }
    }
}
