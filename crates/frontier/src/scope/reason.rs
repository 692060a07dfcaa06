//! Why a URL was dropped, and how many were, per reason.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};

/// Why a URL was dropped before the seen-test: out of scope, or caught by a trap rule.
///
/// Use [`reason`](Self::reason) as a counter key (or count in [`DropCounts`]) and `Display`
/// for a sentence for a person. New reasons may be added, so match with a wildcard arm.
///
/// # Example
///
/// ```
/// use frontier::DropReason;
///
/// let reason = DropReason::RepeatedSegment;
/// assert_eq!(reason.reason(), "repeated_segment");
/// assert_eq!(reason.to_string(), "a path segment repeats too often");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum DropReason {
    /// The host is not in scope, an include pattern is required and none matches, or an
    /// exclude pattern matches.
    OutOfScope,
    /// The URL was found more links away from a seed than the depth limit.
    TooDeep,
    /// The path has more segments than the limit.
    TooManySegments,
    /// One path segment occurs more often than the limit, as in the paths that calendars and
    /// relative links resolved against themselves grow.
    RepeatedSegment,
    /// The host's page budget is spent.
    HostBudget,
    /// A link deeper than the limit for such links to a page of the same shape as the page
    /// linking to it (`/cal/2026/8` from `/cal/2026/7`): how calendars and other endless
    /// generators look, one page linking to the next.
    RepeatedShape,
    /// The host is new to its registrable domain, whose budget of hosts is spent: a spam
    /// farm's endless subdomains.
    DomainHosts,
    /// The registrable domain's page budget is spent.
    DomainPages,
}

impl DropReason {
    /// Every reason, in the order the rules are applied (the budgets after the seen-test), but
    /// for the shape rule and the domain budgets, newer, which come last here (the shape rule
    /// is applied before the seen-test, the domain budgets after the host's).
    ///
    /// # Example
    ///
    /// ```
    /// let keys: Vec<_> = frontier::DropReason::ALL.iter().map(|r| r.reason()).collect();
    /// assert_eq!(
    ///     keys,
    ///     [
    ///         "out_of_scope",
    ///         "too_deep",
    ///         "too_many_segments",
    ///         "repeated_segment",
    ///         "host_budget",
    ///         "repeated_shape",
    ///         "domain_hosts",
    ///         "domain_pages",
    ///     ]
    /// );
    /// ```
    pub const ALL: [DropReason; 8] = [
        DropReason::OutOfScope,
        DropReason::TooDeep,
        DropReason::TooManySegments,
        DropReason::RepeatedSegment,
        DropReason::HostBudget,
        DropReason::RepeatedShape,
        DropReason::DomainHosts,
        DropReason::DomainPages,
    ];

    /// A short, stable, `snake_case` name, fit for a counter or a log field:
    /// `out_of_scope`, `too_deep`, `too_many_segments`, `repeated_segment`, `host_budget`,
    /// `repeated_shape`, `domain_hosts` or `domain_pages`.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(frontier::DropReason::OutOfScope.reason(), "out_of_scope");
    /// ```
    pub fn reason(&self) -> &'static str {
        match self {
            DropReason::OutOfScope => "out_of_scope",
            DropReason::TooDeep => "too_deep",
            DropReason::TooManySegments => "too_many_segments",
            DropReason::RepeatedSegment => "repeated_segment",
            DropReason::RepeatedShape => "repeated_shape",
            DropReason::HostBudget => "host_budget",
            DropReason::DomainHosts => "domain_hosts",
            DropReason::DomainPages => "domain_pages",
        }
    }

    /// The reason's slot in [`DropCounts`]: its position in [`ALL`](Self::ALL), as the
    /// variants are declared in that order.
    fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for DropReason {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            DropReason::OutOfScope => "the URL is out of scope",
            DropReason::TooDeep => "the URL is deeper than the depth limit",
            DropReason::TooManySegments => "the path has more segments than the limit",
            DropReason::RepeatedSegment => "a path segment repeats too often",
            DropReason::RepeatedShape => {
                "deep, and of the same shape as the page linking to it (a calendar)"
            }
            DropReason::HostBudget => "the host's page budget is spent",
            DropReason::DomainHosts => "the host is one more than its domain's budget of hosts",
            DropReason::DomainPages => "the domain's page budget is spent",
        })
    }
}

impl std::error::Error for DropReason {}

/// How many URLs were dropped, per [`DropReason`].
///
/// Each reason has its own atomic counter, so threads pushing URLs at once count without a
/// lock. Counting is relaxed: a read while others count may miss their latest additions, but
/// no addition is ever lost, and a read after the counting threads are joined is exact.
///
/// # Example
///
/// ```
/// use frontier::{DropCounts, DropReason};
///
/// let counts = DropCounts::new();
/// std::thread::scope(|s| {
///     for _ in 0..4 {
///         s.spawn(|| counts.count(DropReason::OutOfScope));
///     }
/// });
/// counts.count(DropReason::TooDeep);
/// assert_eq!(counts.get(DropReason::OutOfScope), 4);
/// assert_eq!(counts.total(), 5);
/// for (reason, n) in counts.iter().filter(|&(_, n)| n > 0) {
///     println!("{}: {n}", reason.reason());
/// }
/// ```
#[derive(Default)]
pub struct DropCounts {
    /// One counter per reason, at the reason's index in [`DropReason::ALL`].
    counts: [AtomicU64; DropReason::ALL.len()],
}

impl DropCounts {
    /// All counters at zero.
    ///
    /// # Example
    ///
    /// ```
    /// let counts = frontier::DropCounts::new();
    /// assert_eq!(counts.total(), 0);
    /// ```
    pub fn new() -> Self {
        DropCounts::default()
    }

    /// Counts one URL dropped for `reason`.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropCounts, DropReason};
    ///
    /// let counts = DropCounts::new();
    /// counts.count(DropReason::HostBudget);
    /// assert_eq!(counts.get(DropReason::HostBudget), 1);
    /// ```
    pub fn count(&self, reason: DropReason) {
        self.add(reason, 1);
    }

    /// Counts `n` URLs dropped for `reason` at once (restoring a checkpoint).
    pub(crate) fn add(&self, reason: DropReason, n: u64) {
        self.counts[reason.index()].fetch_add(n, Ordering::Relaxed);
    }

    /// How many URLs were dropped for `reason`.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropCounts, DropReason};
    ///
    /// let counts = DropCounts::new();
    /// counts.count(DropReason::TooDeep);
    /// counts.count(DropReason::TooDeep);
    /// assert_eq!(counts.get(DropReason::TooDeep), 2);
    /// assert_eq!(counts.get(DropReason::OutOfScope), 0);
    /// ```
    pub fn get(&self, reason: DropReason) -> u64 {
        self.counts[reason.index()].load(Ordering::Relaxed)
    }

    /// How many URLs were dropped for any reason.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropCounts, DropReason};
    ///
    /// let counts = DropCounts::new();
    /// counts.count(DropReason::TooDeep);
    /// counts.count(DropReason::OutOfScope);
    /// assert_eq!(counts.total(), 2);
    /// ```
    pub fn total(&self) -> u64 {
        self.iter().map(|(_, n)| n).sum()
    }

    /// Every reason with its count, zeros included, in the order of [`DropReason::ALL`]:
    /// what a summary prints.
    ///
    /// # Example
    ///
    /// ```
    /// use frontier::{DropCounts, DropReason};
    ///
    /// let counts = DropCounts::new();
    /// counts.count(DropReason::RepeatedSegment);
    /// let summary: Vec<String> =
    ///     counts.iter().map(|(reason, n)| format!("{}={n}", reason.reason())).collect();
    /// assert_eq!(summary[3], "repeated_segment=1");
    /// assert_eq!(summary.len(), DropReason::ALL.len());
    /// ```
    pub fn iter(&self) -> impl Iterator<Item = (DropReason, u64)> + '_ {
        DropReason::ALL
            .into_iter()
            .map(|reason| (reason, self.get(reason)))
    }
}

impl fmt::Debug for DropCounts {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_map()
            .entries(self.iter().map(|(reason, n)| (reason.reason(), n)))
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indices_follow_the_order_of_all() {
        for (i, reason) in DropReason::ALL.into_iter().enumerate() {
            assert_eq!(reason.index(), i, "{reason:?}");
        }
    }
}
