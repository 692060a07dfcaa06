//! The per-host page budget: the one scope rule with a memory.

use std::collections::HashMap;
use std::fmt;
use std::sync::{Mutex, MutexGuard, PoisonError};

use super::DropReason;

/// Counts the pages admitted per host and refuses those beyond a limit.
///
/// Charge a URL only once it is sure to be queued, after the seen-test: a duplicate that
/// charged the budget would take the place of a new page. Hosts are keyed as
/// [`Canonical::host_key`](crate::Canonical::host_key) spells them, so `example.com` and
/// `example.com:8080` have separate budgets.
///
/// # Memory
///
/// One entry per host charged at least once, kept for the whole crawl: the host's text on the
/// heap and a count, about 60 bytes for a typical host name, so a million hosts take some
/// 60 MB. A refusal adds nothing, and without a limit nothing is recorded at all.
///
/// # Threads
///
/// `charge` takes `&self` and locks an internal mutex, so that every worker pushing links can
/// share one budget without the frontier widening its own locks. The lock is held for one
/// hash lookup and an addition, and only for URLs that passed the seen-test, a fraction of
/// the links checked, so contention stays low.
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
/// ```
pub struct HostBudget {
    /// The most pages admitted per host; `None` admits all and records nothing.
    limit: Option<u64>,
    /// Pages admitted so far, per host key. Boxed strings rather than `String`s: they never
    /// grow, and the capacity field would cost eight bytes per host for nothing.
    charged: Mutex<HashMap<Box<str>, u64>>,
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
            charged: Mutex::new(HashMap::new()),
        }
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
        let Some(limit) = self.limit else {
            return Ok(());
        };
        let mut charged = self.lock();
        match charged.get_mut(host) {
            Some(pages) if *pages >= limit => Err(DropReason::HostBudget),
            Some(pages) => {
                *pages += 1;
                Ok(())
            }
            // A zero budget refuses without remembering the host.
            None if limit == 0 => Err(DropReason::HostBudget),
            None => {
                charged.insert(Box::from(host), 1);
                Ok(())
            }
        }
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
        self.lock().get(host).copied().unwrap_or(0)
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
        self.lock().len()
    }

    /// Every charged host with its count, for a checkpoint.
    pub(crate) fn entries(&self) -> Vec<(Box<str>, u64)> {
        self.lock().iter().map(|(h, &n)| (h.clone(), n)).collect()
    }

    /// Sets a host's count, restoring a checkpoint.
    pub(crate) fn restore(&self, host: &str, pages: u64) {
        self.lock().insert(Box::from(host), pages);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<Box<str>, u64>> {
        // Every change under the lock is a single insert or addition, so a thread that
        // panicked while holding it cannot have left the map half-updated.
        self.charged.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl fmt::Debug for HostBudget {
    // The map can hold millions of hosts: show its size, not its entries.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("HostBudget")
            .field("limit", &self.limit)
            .field("hosts", &self.hosts())
            .finish()
    }
}
