//! The page budgets, per host and per registrable domain: the scope rules with a memory.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::DropReason;

/// Counts the pages admitted per host, and per registrable domain the hosts and pages, and
/// refuses those beyond the limits: pages per host; with domain limits
/// ([`with_domain_limits`](Self::with_domain_limits)), hosts per domain (a host new to its
/// domain once the domain has as many as the limit: the defence against a spam farm's
/// endless subdomains, as IRLbot's budgets by domain) and pages per domain. A domain is the
/// host's registrable domain by the Public Suffix List (`a.b.example.co.uk` is in
/// `example.co.uk`); a host without one (an IP address, `localhost`) is its own domain.
///
/// Charge a URL only once it is sure to be queued, after the seen-test: a duplicate that
/// charged the budget would take the place of a new page. Hosts are keyed as
/// [`Canonical::host_key`](crate::Canonical::host_key) spells them, so `example.com` and
/// `example.com:8080` have separate budgets (and one domain).
///
/// # Memory
///
/// One entry per host charged at least once, kept for the whole crawl: the host's text on the
/// heap and a count, about 60 bytes for a typical host name, so a million hosts take some
/// 60 MB; with domain limits, as much again per domain. A refusal adds nothing, and without
/// a limit nothing is recorded at all.
///
/// # Threads
///
/// `charge` takes `&self` and locks an internal mutex, so that every worker pushing links can
/// share one budget without the frontier widening its own locks. The lock is held for one
/// or two hash lookups and additions, and only for URLs that passed the seen-test, a fraction
/// of the links checked, so contention stays low.
///
/// # Example
///
/// ```
/// use frontier::{DropReason, HostBudget};
///
/// let budget = HostBudget::new(Some(2));
/// assert_eq!(budget.charge("example.com"), Ok(()));
/// assert_eq!(budget.charge("example.com"), Ok(()));
/// assert_eq!(budget.charge("example.com"), Err(DropReason::HostBudget));
/// assert_eq!(budget.charge("example.org"), Ok(())); // each host has its own
/// assert_eq!(budget.charged("example.com"), 2);
/// assert_eq!(budget.hosts(), 2);
///
/// // Two hosts per domain: a farm's third subdomain is refused, its first two go on.
/// let farm = HostBudget::new(None).with_domain_limits(Some(2), None);
/// assert_eq!(farm.charge("a.farm.example"), Ok(()));
/// assert_eq!(farm.charge("b.farm.example"), Ok(()));
/// assert_eq!(farm.charge("c.farm.example"), Err(DropReason::DomainHosts));
/// assert_eq!(farm.charge("a.farm.example"), Ok(()));
/// ```
pub struct HostBudget {
    /// The most pages admitted per host; `None` admits all.
    limit: Option<u64>,
    /// The most hosts admitted per registrable domain; `None` admits all.
    domain_hosts: Option<u64>,
    /// The most pages admitted per registrable domain; `None` admits all.
    domain_pages: Option<u64>,
    charged: Mutex<Charged>,
}

/// What the budgets remember, under one lock.
#[derive(Default)]
struct Charged {
    /// Pages admitted so far, per host key. Boxed strings rather than `String`s: they never
    /// grow, and the capacity field would cost eight bytes per host for nothing.
    hosts: HashMap<Box<str>, u64>,
    /// Hosts and pages admitted so far, per registrable domain (with domain limits only).
    domains: HashMap<Box<str>, Domain>,
}

/// A domain's admitted hosts and pages.
#[derive(Clone, Copy, Default)]
struct Domain {
    hosts: u64,
    pages: u64,
}

/// The registrable domain of a host key (its port left out), or its host when it has none.
///
/// ```
/// # use frontier::registrable_domain_of;
/// assert_eq!(registrable_domain_of("a.b.example.co.uk:8080"), "example.co.uk");
/// assert_eq!(registrable_domain_of("127.0.0.1:8080"), "127.0.0.1");
/// assert_eq!(registrable_domain_of("[::1]:8080"), "[::1]");
/// assert_eq!(registrable_domain_of("localhost"), "localhost");
/// ```
pub fn registrable_domain_of(host_key: &str) -> &str {
    let host = match host_key.strip_prefix('[') {
        Some(rest) => rest.find(']').map_or(host_key, |end| &host_key[..end + 2]),
        None => host_key.split(':').next().unwrap_or(host_key),
    };
    if host.starts_with('[') || host.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
        return host;
    }
    psl::domain_str(host).unwrap_or(host)
}

impl HostBudget {
    /// An empty budget admitting at most `limit` pages per host, or any number if `None`.
    /// [`ScopeRules::host_budget`](crate::ScopeRules::host_budget) makes one with the
    /// configured limit.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::HostBudget;
    ///
    /// let unlimited = HostBudget::new(None);
    /// for _ in 0..1000 {
    ///     assert!(unlimited.charge("example.com").is_ok());
    /// }
    /// assert_eq!(unlimited.hosts(), 0); // nothing to remember
    /// ```
    pub fn new(limit: Option<u64>) -> Self {
        HostBudget {
            limit,
            domain_hosts: None,
            domain_pages: None,
            charged: Mutex::new(Charged::default()),
        }
    }

    /// The same budget, with limits per registrable domain: on `hosts` (a host counts once
    /// its first page is admitted) and on `pages`; `None` for no limit.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropReason, HostBudget};
    ///
    /// let budget = HostBudget::new(None).with_domain_limits(None, Some(3));
    /// for host in ["a.example.com", "b.example.com", "example.com"] {
    ///     assert_eq!(budget.charge(host), Ok(()));
    /// }
    /// assert_eq!(budget.charge("c.example.com"), Err(DropReason::DomainPages));
    /// assert_eq!(budget.charge("example.org"), Ok(()));
    /// assert_eq!(budget.domain_limits(), (None, Some(3)));
    /// ```
    pub fn with_domain_limits(self, hosts: Option<u64>, pages: Option<u64>) -> Self {
        HostBudget {
            domain_hosts: hosts,
            domain_pages: pages,
            ..self
        }
    }

    /// The limits per registrable domain: hosts, then pages (`None`: no limit).
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::HostBudget::new(Some(5)).domain_limits(), (None, None));
    /// ```
    pub fn domain_limits(&self) -> (Option<u64>, Option<u64>) {
        (self.domain_hosts, self.domain_pages)
    }

    /// Whether a domain limit is set: then domains are counted.
    fn by_domain(&self) -> bool {
        self.domain_hosts.is_some() || self.domain_pages.is_some()
    }

    /// The most pages admitted per host, `None` for no limit.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::HostBudget::new(Some(50)).limit(), Some(50));
    /// ```
    pub fn limit(&self) -> Option<u64> {
        self.limit
    }

    /// Charges one page to `host`, the key [`Canonical::host_key`](crate::Canonical::host_key)
    /// gives.
    ///
    /// # Errors
    ///
    /// [`DropReason::HostBudget`] when the host has already been charged the limit; the
    /// refused page is not counted.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{Canonicalizer, DropReason, HostBudget};
    ///
    /// let budget = HostBudget::new(Some(1));
    /// let url = Canonicalizer::new().canonicalize("http://example.com:8080/a")?;
    /// assert_eq!(budget.charge(url.host_key()), Ok(()));
    /// assert_eq!(budget.charge("example.com:8080"), Err(DropReason::HostBudget));
    /// assert_eq!(budget.charge("example.com"), Ok(()));
    /// # Ok::<(), frontier::Rejected>(())
    /// ```
    pub fn charge(&self, host: &str) -> Result<(), DropReason> {
        if self.limit.is_none() && !self.by_domain() {
            return Ok(());
        }
        let mut charged = self.lock();
        let Charged { hosts, domains } = &mut *charged;
        let pages = hosts.get(host).copied().unwrap_or(0);
        if self.limit.is_some_and(|limit| pages >= limit) {
            return Err(DropReason::HostBudget);
        }
        if self.by_domain() {
            let name = registrable_domain_of(host);
            let domain = domains.get(name).copied().unwrap_or_default();
            if pages == 0 && self.domain_hosts.is_some_and(|limit| domain.hosts >= limit) {
                return Err(DropReason::DomainHosts);
            }
            if self.domain_pages.is_some_and(|limit| domain.pages >= limit) {
                return Err(DropReason::DomainPages);
            }
            let domain = domains.entry(Box::from(name)).or_default();
            domain.hosts += u64::from(pages == 0);
            domain.pages += 1;
        }
        match hosts.get_mut(host) {
            Some(pages) => *pages += 1,
            None => {
                hosts.insert(Box::from(host), 1);
            }
        }
        Ok(())
    }

    /// How many pages have been charged to `host`; always 0 without a limit.
    ///
    /// # Example
    ///
    /// ```
    /// let budget = frontier::HostBudget::new(Some(10));
    /// budget.charge("example.com").unwrap();
    /// assert_eq!(budget.charged("example.com"), 1);
    /// assert_eq!(budget.charged("example.org"), 0);
    /// ```
    pub fn charged(&self, host: &str) -> u64 {
        self.lock().hosts.get(host).copied().unwrap_or(0)
    }

    /// How many hosts have been charged at least once: the budget's entries.
    ///
    /// # Example
    ///
    /// ```
    /// let budget = frontier::HostBudget::new(Some(10));
    /// budget.charge("a.example").unwrap();
    /// budget.charge("b.example").unwrap();
    /// budget.charge("a.example").unwrap();
    /// assert_eq!(budget.hosts(), 2);
    /// ```
    pub fn hosts(&self) -> usize {
        self.lock().hosts.len()
    }

    /// Every charged host with its count, for a checkpoint (the domains' counts are their
    /// hosts' sums: a checkpoint needs no more).
    pub(crate) fn entries(&self) -> Vec<(Box<str>, u64)> {
        let charged = self.lock();
        charged.hosts.iter().map(|(h, &n)| (h.clone(), n)).collect()
    }

    /// Sets a host's count (once per host), restoring a checkpoint; its domain's counts
    /// follow.
    pub(crate) fn restore(&self, host: &str, pages: u64) {
        let by_domain = self.by_domain();
        let mut charged = self.lock();
        if by_domain && pages > 0 && !charged.hosts.contains_key(host) {
            let domain = charged
                .domains
                .entry(Box::from(registrable_domain_of(host)))
                .or_default();
            domain.hosts += 1;
            domain.pages += pages;
        }
        charged.hosts.insert(Box::from(host), pages);
    }

    fn lock(&self) -> MutexGuard<'_, Charged> {
        // Every change under the lock is made after every check that may refuse it, of
        // entries that stay valid at each step, so a thread that panicked while holding it
        // cannot have left the counts meaningless.
        self.charged.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for HostBudget {
    // The map can hold millions of hosts: show its size, not its entries.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBudget")
            .field("limit", &self.limit)
            .field("domain_hosts", &self.domain_hosts)
            .field("domain_pages", &self.domain_pages)
            .field("hosts", &self.hosts())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_restored_budget_knows_its_domains_from_its_hosts() {
        let budget = HostBudget::new(None).with_domain_limits(Some(2), Some(5));
        for host in [
            "a.example.com",
            "a.example.com",
            "b.example.com:8080",
            "c.example.org",
        ] {
            budget.charge(host).unwrap();
        }
        let restored = HostBudget::new(None).with_domain_limits(Some(2), Some(5));
        for (host, pages) in budget.entries() {
            restored.restore(&host, pages);
        }
        // example.com has its two hosts and three of its five pages, as before.
        assert_eq!(
            restored.charge("d.example.com"),
            Err(DropReason::DomainHosts)
        );
        assert_eq!(restored.charge("a.example.com"), Ok(()));
        assert_eq!(restored.charge("b.example.com:8080"), Ok(()));
        assert_eq!(
            restored.charge("a.example.com"),
            Err(DropReason::DomainPages)
        );
        assert_eq!(restored.charge("c.example.org"), Ok(()));
    }
}
