//! The worker loop: take a lease (or wait for the instant the frontier names, or for a lease
//! to complete), visit it, and the page budget (`crawl.max_pages`) that may stop the loop;
//! which URL each worker is on, for the progress line.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::futures::Notified;

use crate::backend::{Lease, Next};

use super::*;
use crate::snapshot::Slow;

/// The URL each worker is on and since when. One slot per worker: marking one costs an
/// uncontended lock and a copy into the slot's buffer, kept from its last URL (no allocation
/// once the buffer is as long as the URLs), and the slots are read only when the progress
/// line is drawn.
pub(crate) struct InFlight {
    slots: Box<[Mutex<InFlightSlot>]>,
}

/// One worker's URL, while it is on one.
#[derive(Default)]
pub(super) struct InFlightSlot {
    since: Option<Instant>,
    url: String,
}

impl InFlight {
    pub(crate) fn new(workers: usize) -> InFlight {
        InFlight {
            slots: (0..workers).map(|_| Mutex::default()).collect(),
        }
    }

    /// The worker tasks it has a slot for.
    pub(crate) fn workers(&self) -> usize {
        self.slots.len()
    }

    /// Marks `worker` as on `url` since `at`, until the returned mark is dropped (the visit
    /// ended, panicked or was cancelled).
    pub(crate) fn start(&self, worker: usize, url: &str, at: Instant) -> InFlightMark<'_> {
        if let Some(slot) = self.slots.get(worker) {
            let mut slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            slot.since = Some(at);
            slot.url.clear();
            slot.url.push_str(url);
        }
        InFlightMark {
            in_flight: self,
            worker,
        }
    }

    /// The URL in flight the longest, if it has been for `over` or more at `now`, and how
    /// many others have been too.
    pub(crate) fn slow(&self, now: Instant, over: Duration) -> Option<Slow> {
        let mut oldest: Option<Slow> = None;
        let mut count = 0;
        for slot in &*self.slots {
            let slot = slot.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(since) = slot.since else { continue };
            let for_ = now.saturating_duration_since(since);
            if for_ < over {
                continue;
            }
            count += 1;
            if oldest.as_ref().is_none_or(|o| for_ > o.for_) {
                oldest = Some(Slow {
                    url: slot.url.clone(),
                    for_,
                    others: 0,
                });
            }
        }
        oldest.map(|slow| Slow {
            others: count - 1,
            ..slow
        })
    }
}

/// A worker's slot in [`InFlight`], emptied when dropped.
pub(crate) struct InFlightMark<'a> {
    in_flight: &'a InFlight,
    worker: usize,
}

impl Drop for InFlightMark<'_> {
    fn drop(&mut self) {
        if let Some(slot) = self.in_flight.slots.get(self.worker) {
            slot.lock().unwrap_or_else(PoisonError::into_inner).since = None;
        }
    }
}

/// One lease in `Crawler::outstanding`, for as long as it lives, even through a panic.
pub(super) struct Outstanding<'a>(&'a AtomicU64);

impl<'a> Outstanding<'a> {
    fn count(counter: &'a AtomicU64) -> Self {
        counter.fetch_add(1, Ordering::AcqRel);
        Outstanding(counter)
    }
}

impl Drop for Outstanding<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Crawler {
    /// The loop of worker number `worker`, which takes leases until there are none.
    pub(super) async fn work(&self, worker: usize) {
        loop {
            if self.stop.is_cancelled() {
                return;
            }
            // Registered before asking, so that a completion between the answer and the
            // wait is not missed.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.budget.load(Ordering::Relaxed) == 0 {
                // A lease taken now would only be given back (a round trip each on a shared
                // crawl).
                if self.wait_while_spent(woken).await {
                    return;
                }
                continue;
            }
            match self.frontier.next().await {
                Ok(Next::Lease(lease)) => {
                    if self.frontier.has_waiting_leases() {
                        // Taken for the workers waiting too: one of them takes the next, and
                        // wakes another if more are left.
                        self.leases_waiting.notify_one();
                    }
                    // Counted before the budget is taken, so that a worker finding the budget
                    // spent never sees no lease in flight while this one is set up.
                    let outstanding = Outstanding::count(&self.outstanding);
                    if !self.take_budget() {
                        drop(outstanding);
                        self.abandon(lease);
                        if self.wait_while_spent(woken).await {
                            return;
                        }
                        continue;
                    }
                    self.visit(worker, lease).await;
                    // Uncounted before the wake-up, so that a woken worker waiting for the
                    // leases in flight sees this one gone.
                    drop(outstanding);
                    self.wake.notify_waiters();
                }
                Ok(Next::WaitUntil(at)) => {
                    let at = tokio::time::Instant::from_std(at);
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = &mut woken => {}
                        () = self.leases_waiting.notified() => {}
                        () = self.stop.cancelled() => {}
                    }
                }
                Ok(Next::Pending) => {
                    tokio::select! {
                        () = &mut woken => {}
                        () = self.stop.cancelled() => {}
                    }
                }
                Ok(Next::Done) => {
                    self.wake.notify_waiters();
                    return;
                }
                Err(err) => {
                    // Spilled URLs could not be read back: they are lost (and counted); the
                    // crawl goes on with the rest.
                    tracing::error!("frontier: {err}");
                }
            }
        }
    }

    pub(super) fn take_budget(&self) -> bool {
        self.budget
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
            .is_ok()
    }

    /// `max_pages` is spent, unless a lease in flight ends in a retry and gives its share
    /// back: waits for one to end (`woken`), then answers whether the crawl stops, which it
    /// does (waking the other workers) when none is in flight and the budget is still spent.
    pub(super) async fn wait_while_spent(&self, woken: std::pin::Pin<&mut Notified<'_>>) -> bool {
        if self.outstanding.load(Ordering::Acquire) == 0 {
            // Read again: a retry gives its share back before its lease stops counting as
            // in flight, so a share given back by the last one is seen here.
            if self.budget.load(Ordering::Relaxed) > 0 {
                return false;
            }
            self.reached_max_pages.store(true, Ordering::Relaxed);
            self.stop();
            self.wake.notify_waiters();
            return true;
        }
        tokio::select! {
            () = woken => {}
            () = self.stop.cancelled() => {}
        }
        false
    }

    pub(super) fn give_back_budget(&self) {
        if self.config.crawl.max_pages != 0 {
            self.budget.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Puts a lease back in line without a try.
    pub(super) fn abandon(&self, lease: Lease) {
        if let Err(err) = lease.abandon() {
            tracing::error!("{err}");
        }
    }
}
