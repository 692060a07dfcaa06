//! The politeness settings: how hard the crawler may press on one host, and how it backs off
//! and gives up when the host is in trouble.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How the frontier treats each host: connections, delays, back-off, retries and giving up.
/// Built with [`Politeness::builder`]; [`Politeness::default`] is the polite public-web
/// profile.
///
/// | setting | default | what it bounds |
/// |---|---|---|
/// | [`connections_per_host`](PolitenessBuilder::connections_per_host) | 1 | leases in flight per host |
/// | [`delay`](PolitenessBuilder::delay) | 1 s | time between two lease starts on a host, and after a completion |
/// | [`max_crawl_delay`](PolitenessBuilder::max_crawl_delay) | 30 s | the robots.txt `Crawl-delay` honoured |
/// | [`backoff_base`](PolitenessBuilder::backoff_base) | 1 s | the wait after a host's first error, doubled for each further one |
/// | [`backoff_max`](PolitenessBuilder::backoff_max) | 10 min | the longest back-off |
/// | [`max_retry_after`](PolitenessBuilder::max_retry_after) | 1 h | the `Retry-After` honoured |
/// | [`max_consecutive_errors`](PolitenessBuilder::max_consecutive_errors) | 5 | errors in a row before a host may be given up |
/// | [`give_up_after`](PolitenessBuilder::give_up_after) | 30 min | how long a host must have failed, with no success, before it is given up |
/// | [`max_attempts`](PolitenessBuilder::max_attempts) | 3 | tries of one URL |
/// | [`per_host`](PolitenessBuilder::per_host) | none | a host's own delay and connections ([`HostPoliteness`]) |
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::Politeness;
///
/// let polite = Politeness::default();
/// assert_eq!(polite.delay(), Duration::from_secs(1));
///
/// // A loopback benchmark: no delay, eight connections per host.
/// let local = Politeness::builder()
///     .delay(Duration::ZERO)
///     .connections_per_host(8)
///     .build()?;
/// assert_eq!(local.connections_per_host(), 8);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Politeness {
    config: Config,
}

/// The configuration shared by the builder and the settings it builds.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Config {
    /// Leases in flight at once per host. Default: 1, what robots-era etiquette and most site
    /// operators expect of a crawler they did not invite; a local profile raises it.
    connections: u32,
    /// The least time between two lease starts on one host, and after each completion.
    /// Default: 1 s, the polite public-web default; a local profile sets 0.
    delay: Duration,
    /// The longest robots.txt `Crawl-delay` honoured. Default: 30 s: some sites ask for
    /// minutes or hours, which would stall a crawl on them; beyond the cap the crawler is
    /// still slower than most visitors.
    max_crawl_delay: Duration,
    /// The back-off after a host's first consecutive error, doubled for each further one.
    /// Default: 1 s.
    backoff_base: Duration,
    /// The longest back-off. Default: 10 minutes, long enough for a restarting server, short
    /// enough that a host in trouble for a while is tried again within the crawl.
    backoff_max: Duration,
    /// The longest `Retry-After` honoured. Default: 1 hour: a server may ask for days, and a
    /// crawl should not hold a host's URLs that long.
    max_retry_after: Duration,
    /// Consecutive errors before a host may be given up. Default: 5: a handful of broken
    /// pages in a row is common and says nothing of the host; it takes `give_up_after` too.
    max_consecutive_errors: u32,
    /// How long a host must have been failing, every try an error since its first one,
    /// before it is given up. Default: 30 minutes: with the default back-off that is about a
    /// dozen tries, the last ones ten minutes apart, so a server restarting or a network
    /// outage of a few minutes costs a wait, not the site; a host still failing by then is
    /// down.
    give_up_after: Duration,
    /// Tries of one URL, the first included. Default: 3: most transient errors clear on the
    /// second try, and a third covers a restart.
    max_attempts: u32,
    /// Where each host's own delay and connections come from. Default: none, every host
    /// gets the settings above.
    per_host: PerHost,
}

/// The per-host policy, compared by identity: settings are equal when they share it.
#[derive(Clone, Default)]
struct PerHost(Option<Arc<dyn HostPolicy>>);

impl PartialEq for PerHost {
    fn eq(&self, other: &Self) -> bool {
        match (&self.0, &other.0) {
            (None, None) => true,
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Eq for PerHost {}

impl fmt::Debug for PerHost {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(if self.0.is_some() { "Some(..)" } else { "None" })
    }
}

/// One host's own politeness, where it differs from the crawl's [`Politeness`]: a site you
/// run may take more connections and no delay, a fragile one fewer and a longer delay.
/// Unset fields keep the crawl's setting.
///
/// How it combines with the rest: the host's delay is its own `delay` (or
/// [`Politeness::delay`]), or its robots.txt `Crawl-delay` when that is longer, so an
/// override can shorten the crawl's delay but never a delay the site asked for. Back-off,
/// `Retry-After` and giving up work as for every host.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::HostPoliteness;
///
/// let own = HostPoliteness::new().delay(Duration::ZERO).connections(8);
/// assert_eq!((own.delay, own.connections), (Some(Duration::ZERO), Some(8)));
/// assert!(HostPoliteness::new().is_default());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct HostPoliteness {
    /// Replaces [`Politeness::delay`] for the host; capped at [`Politeness::MAX_DURATION`].
    pub delay: Option<Duration>,
    /// Replaces [`Politeness::connections_per_host`] for the host; 0 is read as 1.
    pub connections: Option<u32>,
}

impl HostPoliteness {
    /// Nothing of the host's own: the crawl's settings.
    pub fn new() -> Self {
        HostPoliteness::default()
    }

    /// Sets the host's delay between two lease starts (and after a completion).
    pub fn delay(mut self, delay: Duration) -> Self {
        self.delay = Some(delay);
        self
    }

    /// Sets how many leases of the host may be in flight at once.
    pub fn connections(mut self, connections: u32) -> Self {
        self.connections = Some(connections);
        self
    }

    /// Whether nothing is set: the host gets the crawl's settings.
    pub fn is_default(&self) -> bool {
        self.delay.is_none() && self.connections.is_none()
    }
}

/// Where the queues learn a host's own politeness ([`HostPoliteness`]), given with
/// [`PolitenessBuilder::per_host`]. Asked once per host, when the queues first meet it (its
/// first push, a crawl delay set for it, or a checkpoint being opened), before any lease of
/// it: so that a host's connection limit holds from its very first leases, which a setting
/// applied after a lease could not promise. The answer is kept for the host's lifetime.
///
/// Any `Fn(&str) -> HostPoliteness` is one; the argument is the host key
/// ([`Canonical::host_key`](crate::Canonical::host_key): host and port, if not the
/// default).
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::{HostPoliteness, Politeness};
///
/// let polite = Politeness::builder()
///     .per_host(|host: &str| match host {
///         "intranet.example" => HostPoliteness::new().delay(Duration::ZERO).connections(16),
///         _ => HostPoliteness::new(),
///     })
///     .build()?;
/// assert_eq!(polite.host("intranet.example").connections, Some(16));
/// assert!(polite.host("example.com").is_default());
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub trait HostPolicy: Send + Sync {
    /// The host's own politeness; [`HostPoliteness::new`] for none.
    fn politeness(&self, host: &str) -> HostPoliteness;
}

impl<F: Fn(&str) -> HostPoliteness + Send + Sync> HostPolicy for F {
    fn politeness(&self, host: &str) -> HostPoliteness {
        self(host)
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            connections: 1,
            delay: Duration::from_secs(1),
            max_crawl_delay: Duration::from_secs(30),
            backoff_base: Duration::from_secs(1),
            backoff_max: Duration::from_secs(600),
            max_retry_after: Duration::from_secs(3600),
            max_consecutive_errors: 5,
            give_up_after: Duration::from_secs(1800),
            max_attempts: 3,
            per_host: PerHost(None),
        }
    }
}

impl Politeness {
    /// The longest any duration setting may be: a year. It keeps the frontier's instant
    /// arithmetic far from overflow, and no crawl waits that long on purpose.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::Politeness;
    ///
    /// let err = Politeness::builder().backoff_max(Politeness::MAX_DURATION * 2).build();
    /// assert!(err.is_err());
    /// ```
    pub const MAX_DURATION: Duration = Duration::from_secs(365 * 24 * 3600);

    /// A builder with the defaults, those of the table on [`Politeness`].
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::Politeness::builder().max_attempts(5).build()?;
    /// assert_eq!(polite.max_attempts(), 5);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn builder() -> PolitenessBuilder {
        PolitenessBuilder::new()
    }

    /// Leases in flight at once per host.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::Politeness::default().connections_per_host(), 1);
    /// ```
    pub fn connections_per_host(&self) -> u32 {
        self.config.connections
    }

    /// The least time between two lease starts on a host, and after each completion.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(frontier::Politeness::default().delay(), Duration::from_secs(1));
    /// ```
    pub fn delay(&self) -> Duration {
        self.config.delay
    }

    /// The longest robots.txt `Crawl-delay` honoured.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(frontier::Politeness::default().max_crawl_delay(), Duration::from_secs(30));
    /// ```
    pub fn max_crawl_delay(&self) -> Duration {
        self.config.max_crawl_delay
    }

    /// The back-off after a host's first consecutive error.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(frontier::Politeness::default().backoff_base(), Duration::from_secs(1));
    /// ```
    pub fn backoff_base(&self) -> Duration {
        self.config.backoff_base
    }

    /// The longest back-off.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(frontier::Politeness::default().backoff_max(), Duration::from_secs(600));
    /// ```
    pub fn backoff_max(&self) -> Duration {
        self.config.backoff_max
    }

    /// The longest `Retry-After` honoured.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(frontier::Politeness::default().max_retry_after(), Duration::from_secs(3600));
    /// ```
    pub fn max_retry_after(&self) -> Duration {
        self.config.max_retry_after
    }

    /// Consecutive errors before a host may be given up.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::Politeness::default().max_consecutive_errors(), 5);
    /// ```
    pub fn max_consecutive_errors(&self) -> u32 {
        self.config.max_consecutive_errors
    }

    /// How long a host must have failed, with no success since its first error in a row,
    /// before it is given up.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// assert_eq!(frontier::Politeness::default().give_up_after(), Duration::from_secs(1800));
    /// ```
    pub fn give_up_after(&self) -> Duration {
        self.config.give_up_after
    }

    /// Tries of one URL, the first included.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::Politeness::default().max_attempts(), 3);
    /// ```
    pub fn max_attempts(&self) -> u32 {
        self.config.max_attempts
    }

    /// The host's own politeness, from the [`per_host`](PolitenessBuilder::per_host) policy
    /// (nothing without one), with its delay capped at [`Politeness::MAX_DURATION`] and its
    /// connections at least 1: a policy cannot break the queues' arithmetic.
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::Politeness::default();
    /// assert!(polite.host("example.com").is_default());
    /// ```
    pub fn host(&self, host: &str) -> HostPoliteness {
        let Some(policy) = &self.config.per_host.0 else {
            return HostPoliteness::new();
        };
        let own = policy.politeness(host);
        HostPoliteness {
            delay: own.delay.map(|d| d.min(Politeness::MAX_DURATION)),
            connections: own.connections.map(|n| n.max(1)),
        }
    }

    /// The back-off after `consecutive_errors` errors in a row: none after none, then
    /// `backoff_base * 2^(consecutive_errors - 1)`, at most `backoff_max`.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    ///
    /// let polite = frontier::Politeness::default();
    /// let secs = |errors| polite.backoff(errors).as_secs();
    /// assert_eq!([0, 1, 2, 3, 4].map(secs), [0, 1, 2, 4, 8]);
    /// assert_eq!(polite.backoff(30), Duration::from_secs(600)); // capped
    /// ```
    pub fn backoff(&self, consecutive_errors: u32) -> Duration {
        let Some(doublings) = consecutive_errors.checked_sub(1) else {
            return Duration::ZERO;
        };
        let factor = 1u32.checked_shl(doublings).unwrap_or(u32::MAX);
        self.config
            .backoff_base
            .saturating_mul(factor)
            .min(self.config.backoff_max)
    }
}

/// Configures and builds [`Politeness`]; from [`Politeness::builder`]. Each setter names its
/// default.
///
/// # Example
///
/// ```
/// use std::time::Duration;
///
/// let polite = frontier::Politeness::builder()
///     .connections_per_host(2)
///     .delay(Duration::from_millis(500))
///     .max_crawl_delay(Duration::from_secs(10))
///     .backoff_base(Duration::from_secs(2))
///     .backoff_max(Duration::from_secs(60))
///     .max_retry_after(Duration::from_secs(300))
///     .max_consecutive_errors(3)
///     .give_up_after(Duration::from_secs(300))
///     .max_attempts(2)
///     .build()?;
/// assert_eq!(polite.backoff(3), Duration::from_secs(8));
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
#[derive(Clone, Debug, Default)]
pub struct PolitenessBuilder {
    config: Config,
}

impl PolitenessBuilder {
    /// A builder with the defaults; the same as [`Politeness::builder`].
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::PolitenessBuilder::new().build()?;
    /// assert_eq!(polite, frontier::Politeness::default());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn new() -> Self {
        PolitenessBuilder::default()
    }

    /// Sets how many leases of one host may be in flight at once; at least 1. Default: 1.
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::Politeness::builder().connections_per_host(4).build()?;
    /// assert_eq!(polite.connections_per_host(), 4);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn connections_per_host(mut self, connections: u32) -> Self {
        self.config.connections = connections;
        self
    }

    /// Sets the least time between two lease starts on one host, also waited after each
    /// completion. A host's robots.txt `Crawl-delay`, when longer, replaces it. Default: 1 s.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// let polite = frontier::Politeness::builder().delay(Duration::ZERO).build()?;
    /// assert_eq!(polite.delay(), Duration::ZERO);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn delay(mut self, delay: Duration) -> Self {
        self.config.delay = delay;
        self
    }

    /// Sets the longest robots.txt `Crawl-delay` honoured; longer ones are cut to it.
    /// Default: 30 s.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// let polite = frontier::Politeness::builder().max_crawl_delay(Duration::from_secs(5)).build()?;
    /// assert_eq!(polite.max_crawl_delay(), Duration::from_secs(5));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_crawl_delay(mut self, max: Duration) -> Self {
        self.config.max_crawl_delay = max;
        self
    }

    /// Sets the back-off after a host's first consecutive error; each further error doubles
    /// it. Default: 1 s.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// let polite = frontier::Politeness::builder().backoff_base(Duration::from_millis(100)).build()?;
    /// assert_eq!(polite.backoff(2), Duration::from_millis(200));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backoff_base(mut self, base: Duration) -> Self {
        self.config.backoff_base = base;
        self
    }

    /// Sets the longest back-off. Default: 10 minutes.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// let polite = frontier::Politeness::builder().backoff_max(Duration::from_secs(3)).build()?;
    /// assert_eq!(polite.backoff(10), Duration::from_secs(3));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn backoff_max(mut self, max: Duration) -> Self {
        self.config.backoff_max = max;
        self
    }

    /// Sets the longest `Retry-After` honoured; longer ones are cut to it. Default: 1 hour.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// let polite = frontier::Politeness::builder().max_retry_after(Duration::from_secs(60)).build()?;
    /// assert_eq!(polite.max_retry_after(), Duration::from_secs(60));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_retry_after(mut self, max: Duration) -> Self {
        self.config.max_retry_after = max;
        self
    }

    /// Sets how many errors in a row a host must have had before it may be given up; at
    /// least 1. Default: 5.
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::Politeness::builder().max_consecutive_errors(10).build()?;
    /// assert_eq!(polite.max_consecutive_errors(), 10);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_consecutive_errors(mut self, errors: u32) -> Self {
        self.config.max_consecutive_errors = errors;
        self
    }

    /// Sets how long a host must have been failing (every try an error since the first of
    /// its errors in a row) before it is given up; zero gives it up at
    /// [`max_consecutive_errors`](Self::max_consecutive_errors) at once. Default: 30
    /// minutes.
    ///
    /// # Example
    ///
    /// ```
    /// # use std::time::Duration;
    /// let polite = frontier::Politeness::builder().give_up_after(Duration::from_secs(60)).build()?;
    /// assert_eq!(polite.give_up_after(), Duration::from_secs(60));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn give_up_after(mut self, wait: Duration) -> Self {
        self.config.give_up_after = wait;
        self
    }

    /// Sets how many times one URL is tried, the first included; at least 1 (1 means no
    /// retries). Default: 3.
    ///
    /// # Example
    ///
    /// ```
    /// let polite = frontier::Politeness::builder().max_attempts(1).build()?;
    /// assert_eq!(polite.max_attempts(), 1);
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn max_attempts(mut self, attempts: u32) -> Self {
        self.config.max_attempts = attempts;
        self
    }

    /// Sets where each host's own delay and connections come from (see [`HostPolicy`]),
    /// asked once per host. Default: none, every host gets the crawl's settings.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{HostPoliteness, Politeness};
    ///
    /// let polite = Politeness::builder()
    ///     .per_host(|host: &str| HostPoliteness::new().connections(if host == "a.example" { 4 } else { 1 }))
    ///     .build()?;
    /// assert_eq!(polite.host("a.example").connections, Some(4));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn per_host(mut self, policy: impl HostPolicy + 'static) -> Self {
        self.config.per_host = PerHost(Some(Arc::new(policy)));
        self
    }

    /// Checks the settings and builds them.
    ///
    /// # Errors
    ///
    /// [`PolitenessErrorKind::Zero`] when a count that must be at least 1 is 0
    /// (`connections_per_host`, `max_consecutive_errors`, `max_attempts`), and
    /// [`PolitenessErrorKind::TooLong`] when a duration exceeds
    /// [`Politeness::MAX_DURATION`].
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Politeness, PolitenessErrorKind};
    ///
    /// let err = Politeness::builder().connections_per_host(0).build().unwrap_err();
    /// assert_eq!(err.kind(), PolitenessErrorKind::Zero("connections_per_host"));
    /// ```
    pub fn build(self) -> Result<Politeness, PolitenessError> {
        let c = &self.config;
        let counts = [
            ("connections_per_host", c.connections),
            ("max_consecutive_errors", c.max_consecutive_errors),
            ("max_attempts", c.max_attempts),
        ];
        if let Some((name, _)) = counts.iter().find(|(_, n)| *n == 0) {
            return Err(PolitenessError {
                kind: PolitenessErrorKind::Zero(name),
            });
        }
        let durations = [
            ("delay", c.delay),
            ("max_crawl_delay", c.max_crawl_delay),
            ("backoff_base", c.backoff_base),
            ("backoff_max", c.backoff_max),
            ("max_retry_after", c.max_retry_after),
            ("give_up_after", c.give_up_after),
        ];
        if let Some((name, _)) = durations
            .iter()
            .find(|(_, d)| *d > Politeness::MAX_DURATION)
        {
            return Err(PolitenessError {
                kind: PolitenessErrorKind::TooLong(name),
            });
        }
        Ok(Politeness {
            config: self.config,
        })
    }
}

/// Politeness settings that could not be built; [`kind`](Self::kind) says which and why.
///
/// # Example
///
/// ```
/// let err = frontier::Politeness::builder().max_attempts(0).build().unwrap_err();
/// assert_eq!(err.to_string(), "politeness setting max_attempts must be at least 1");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PolitenessError {
    kind: PolitenessErrorKind,
}

/// Why politeness settings could not be built, naming the setting. New kinds may be added, so
/// match with a wildcard arm.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::{Politeness, PolitenessErrorKind};
///
/// let err = Politeness::builder().delay(Duration::MAX).build().unwrap_err();
/// assert_eq!(err.kind(), PolitenessErrorKind::TooLong("delay"));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum PolitenessErrorKind {
    /// A count that must be at least 1 is 0: no host could be fetched, no URL tried, or
    /// every host given up before its first error.
    Zero(&'static str),
    /// A duration is longer than [`Politeness::MAX_DURATION`].
    TooLong(&'static str),
}

impl PolitenessError {
    /// The cause of the error.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Politeness, PolitenessErrorKind};
    ///
    /// let err = Politeness::builder().max_consecutive_errors(0).build().unwrap_err();
    /// assert_eq!(err.kind(), PolitenessErrorKind::Zero("max_consecutive_errors"));
    /// ```
    pub fn kind(&self) -> PolitenessErrorKind {
        self.kind
    }
}

impl fmt::Display for PolitenessError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.kind {
            PolitenessErrorKind::Zero(name) => {
                write!(f, "politeness setting {name} must be at least 1")
            }
            PolitenessErrorKind::TooLong(name) => write!(
                f,
                "politeness setting {name} is longer than the limit of {} s",
                Politeness::MAX_DURATION.as_secs()
            ),
        }
    }
}

impl std::error::Error for PolitenessError {}
