//! The dispatcher: take a lease whenever a slot is free (or wait for the instant the frontier
//! names, or for a lease to complete) and start a task that visits it; the page budget
//! (`crawl.max_pages`) that may stop it; which URL each slot is on, for the progress line.

use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::mpsc::{self, UnboundedSender};
use tokio::task::JoinError;

use crate::backend::{Lease, Next};

use super::visit::Visited;
use super::*;
use crate::snapshot::Slow;

/// The shortest a task whose lease was parked waits for room before it looks again (see
/// `Backend::parked_waiting`).
const PARKED_WAIT_LEAST: Duration = Duration::from_millis(50);

/// The first pause before the frontier is asked again after an error, and the longest.
const FRONTIER_PAUSE_FIRST: Duration = Duration::from_millis(100);
const FRONTIER_PAUSE_MAX: Duration = Duration::from_secs(5);

/// The URL each slot is on and since when (a slot: one visit in flight, see
/// [`worker_tasks`]). Marking one costs an
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

/// A visit task's hold on one of the crawl's slots, for as long as the task lives (one lease
/// after another), even through a panic or a cancellation: dropped, it counts the task's
/// lease as no longer in flight, frees the slot for the dispatcher's next lease and wakes the
/// dispatcher.
struct Running {
    crawler: Arc<Crawler>,
    slot: usize,
    free: UnboundedSender<usize>,
}

impl Drop for Running {
    fn drop(&mut self) {
        // Uncounted before the wake-up, so that the dispatcher, waiting for the leases in
        // flight with the budget spent, sees this one gone.
        self.crawler.pace.visit_ended();
        // Fails only once the dispatcher is gone, which wants no more slots.
        let _ = self.free.send(self.slot);
        self.crawler.wake.notify_waiters();
    }
}

impl Crawler {
    /// Takes a lease whenever a slot is free and starts a task that visits it, until the
    /// frontier is done or the crawl stops. The one task that waits for the frontier: a lease
    /// completing wakes it alone, and a visit's task lives only while a lease is ready for it
    /// (it takes the next one ready itself, see `ready_lease`), so a crawl pays nothing for
    /// the fetches it could hold in flight but does not (thousands, in a broad crawl whose
    /// hosts are mostly waiting for their delay).
    pub(super) async fn dispatch(self: &Arc<Self>, visits: &mut JoinSet<()>) {
        let (free, mut freed) = mpsc::unbounded_channel();
        for slot in 0..self.in_flight.workers() {
            let _ = free.send(slot);
        }
        loop {
            while let Some(joined) = visits.try_join_next() {
                report_panic(joined);
            }
            let slot = tokio::select! {
                slot = freed.recv() => slot,
                () = self.pace.stopping() => None,
            };
            // Never closed while `free` is held here.
            let Some(slot) = slot else { return };
            let Some(lease) = self.next_lease().await else {
                return;
            };
            // Counted here, not by the task, which may not have started when the budget is
            // next looked at.
            self.pace.visit_started();
            let running = Running {
                crawler: Arc::clone(self),
                slot,
                free: free.clone(),
            };
            visits.spawn(async move {
                let crawler = &running.crawler;
                let mut lease = lease;
                loop {
                    if let Visited::LineFull(until, parked) =
                        crawler.visit(running.slot, lease).await
                    {
                        // Never a wait of nothing, which would turn the loop below into a
                        // spin while leases stay parked.
                        let wait = until
                            .saturating_duration_since(crate::backend::now())
                            .max(PARKED_WAIT_LEAST);
                        let mut until = until;
                        loop {
                            tokio::select! {
                                () = crawler.frontier.room_in_a_line(until) => {}
                                () = crawler.pace.stopping() => {}
                            }
                            // Its lease parked at an address whose line has no room yet: a new
                            // lease would most likely be of that address too.
                            let waiting =
                                parked.is_some_and(|at| crawler.frontier.parked_waiting(at));
                            if crawler.pace.stopped() || !waiting {
                                break;
                            }
                            until = crate::backend::now() + wait;
                        }
                    }
                    // Its host's connection is free, its links queued: the dispatcher may
                    // have a slot waiting for that.
                    crawler.wake.notify_waiters();
                    match crawler.ready_lease().await {
                        Some(next) => lease = next,
                        None => break,
                    }
                }
                drop(running);
            });
        }
    }

    /// A lease ready now, within the page budget, for a visit's task that just ended one: on
    /// a site that always has one (a crawl with no delay), tasks go from one to the next as
    /// workers would, with no hand-over to the dispatcher; `None` when there is none now, and
    /// the task ends, leaving the waiting to the dispatcher.
    async fn ready_lease(&self) -> Option<Lease> {
        if self.pace.stopped() || self.pace.spent() {
            return None;
        }
        match self.frontier.next().await {
            Ok(Next::Lease(lease)) => {
                if self.pace.take() {
                    return Some(lease);
                }
                self.abandon(lease);
                None
            }
            Ok(_) => None,
            Err(err) => {
                tracing::error!("frontier: {err}");
                None
            }
        }
    }

    /// The next lease within the page budget, waiting as long as the frontier says (or until
    /// a lease completes); `None` once the crawl is over or stops.
    async fn next_lease(&self) -> Option<Lease> {
        let mut pause = FRONTIER_PAUSE_FIRST;
        loop {
            if self.pace.stopped() {
                return None;
            }
            // Registered before asking, so that a completion between the answer and the
            // wait is not missed.
            let woken = self.wake.notified();
            tokio::pin!(woken);
            woken.as_mut().enable();
            if self.pace.spent() {
                // A lease taken now would only be given back (a round trip each on a shared
                // crawl).
                if self.pace.wait_while_spent(woken).await {
                    return None;
                }
                continue;
            }
            match self.frontier.next().await {
                Ok(Next::Lease(lease)) => {
                    if self.pace.take() {
                        return Some(lease);
                    }
                    self.abandon(lease);
                }
                Ok(Next::WaitUntil(at)) => {
                    let at = tokio::time::Instant::from_std(at);
                    tokio::select! {
                        () = tokio::time::sleep_until(at) => {}
                        () = &mut woken => {}
                        () = self.pace.stopping() => {}
                    }
                }
                Ok(Next::Pending) => {
                    tokio::select! {
                        () = &mut woken => {}
                        () = self.pace.stopping() => {}
                    }
                }
                Ok(Next::Done) => return None,
                Err(err) => {
                    // Spilled URLs could not be read back: they are lost (and counted); the
                    // crawl goes on with the rest. Or Redis refused the request (its own
                    // retries are over): asked again after a pause that doubles, as an error
                    // that comes back at once (a server refusing the scripts) would otherwise
                    // be asked again in a loop, a line in the log each time.
                    tracing::error!("frontier: {err}");
                    tokio::select! {
                        () = tokio::time::sleep(pause) => {}
                        () = self.pace.stopping() => {}
                    }
                    pause = (pause * 2).min(FRONTIER_PAUSE_MAX);
                }
            }
        }
    }

    /// Puts a lease back in line without a try.
    pub(super) fn abandon(&self, lease: Lease) {
        if let Err(err) = lease.abandon() {
            tracing::error!("{err}");
        }
    }

    /// Gives a lease back until `at`, its address's turn for its host.
    pub(super) fn abandon_for_turn(&self, lease: Lease, at: std::time::Instant) {
        if let Err(err) = lease.abandon_for_turn(at) {
            tracing::error!("{err}");
        }
    }
}

/// Logs a visit's task that panicked (its lease was given back with a record as it unwound,
/// see `Visit`'s drop); the crawl goes on.
pub(super) fn report_panic(joined: Result<(), JoinError>) {
    if let Err(err) = joined
        && err.is_panic()
    {
        tracing::error!("a fetch worker failed: {err}");
    }
}
