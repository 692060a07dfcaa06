//! The crawl's pace: the page budget (`crawl.max_pages`), the leases out against it, and the
//! token that ends the taking of leases.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use tokio::sync::futures::Notified;
use tokio_util::sync::CancellationToken;
use tokio_util::sync::WaitForCancellationFuture;

/// How many leases may still be taken, how many are being visited, and whether to stop.
pub(crate) struct Pace {
    /// Leases still allowed by `crawl.max_pages` (`u64::MAX` without a limit): taken when a
    /// lease is taken, given back when it ends in a retry.
    budget: AtomicU64,
    /// Whether there is a limit: without one nothing is given back.
    limited: bool,
    /// Cancelled when the workers are to take no more leases: by the caller's
    /// [`Shutdown::stop`](super::Shutdown), `crawl.max_pages`, or records that cannot be
    /// written.
    stop: CancellationToken,
    /// Leases being visited, each holding a share of `budget`: counted by the dispatcher as
    /// it starts a visit, uncounted when the visit's task ends.
    outstanding: AtomicU64,
    /// The crawl stopped because `crawl.max_pages` URLs had their record, for the summary.
    reached_max_pages: AtomicBool,
}

impl Pace {
    /// A pace of `max_pages` leases at most (0: no limit).
    pub(crate) fn new(max_pages: u64) -> Pace {
        Pace {
            budget: AtomicU64::new(match max_pages {
                0 => u64::MAX,
                n => n,
            }),
            limited: max_pages != 0,
            stop: CancellationToken::new(),
            outstanding: AtomicU64::new(0),
            reached_max_pages: AtomicBool::new(false),
        }
    }

    /// Takes a lease's share of the budget: false when it is spent.
    pub(crate) fn take(&self) -> bool {
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// Gives a share back: a lease that ended in a retry, or went back unfetched.
    pub(crate) fn give_back(&self) {
        if self.limited {
            self.budget.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Whether no lease may be taken now.
    pub(crate) fn spent(&self) -> bool {
        self.budget.load(Ordering::Relaxed) == 0
    }

    /// A visit starts, holding its share.
    pub(crate) fn visit_started(&self) {
        self.outstanding.fetch_add(1, Ordering::AcqRel);
    }

    /// A visit's task ended.
    pub(crate) fn visit_ended(&self) {
        self.outstanding.fetch_sub(1, Ordering::AcqRel);
    }

    /// Stops the taking of leases.
    pub(crate) fn stop(&self) {
        self.stop.cancel();
    }

    /// Whether the taking of leases stopped.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.is_cancelled()
    }

    /// Ready once the taking of leases stops.
    pub(crate) fn stopping(&self) -> WaitForCancellationFuture<'_> {
        self.stop.cancelled()
    }

    /// Whether the crawl stopped because `crawl.max_pages` URLs had their record.
    pub(crate) fn reached_max_pages(&self) -> bool {
        self.reached_max_pages.load(Ordering::Relaxed)
    }

    /// The budget is spent, unless a lease in flight ends in a retry and gives its share
    /// back: waits for one to end (`woken`), then answers whether the crawl stops, which it
    /// does when none is in flight and the budget is still spent.
    pub(crate) async fn wait_while_spent(&self, woken: std::pin::Pin<&mut Notified<'_>>) -> bool {
        if self.outstanding.load(Ordering::Acquire) == 0 {
            // Read again: a retry gives its share back before its lease stops counting as
            // in flight, so a share given back by the last one is seen here.
            if !self.spent() {
                return false;
            }
            self.reached_max_pages.store(true, Ordering::Relaxed);
            self.stop();
            return true;
        }
        tokio::select! {
            () = woken => {}
            () = self.stopping() => {}
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_budget_of_two_takes_two_and_a_share_given_back_once_more() {
        let pace = Pace::new(2);
        assert!(pace.take() && pace.take() && !pace.take());
        assert!(pace.spent());
        pace.give_back();
        assert!(pace.take());
        let unlimited = Pace::new(0);
        assert!((0..1000).all(|_| unlimited.take()));
    }
}
