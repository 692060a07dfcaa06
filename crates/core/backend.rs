//! The one seam between the fetch workers and the frontier: everything a worker asks of it,
//! and nothing else.
//!
//! Two backends: the embedded frontier (the `frontier` crate, in this process's memory), and
//! a frontier shared by several processes through Redis (the `shared` crate). Every call is
//! `async` and answers with owned values, so that the shared one, whose answers come over a
//! network, fits the same calls: no caller holds a lock of the backend's or assumes an answer
//! comes at once.
//!
//! A lease carries the backend that issued it, and is completed or given back through it
//! ([`Lease::complete`], [`Lease::abandon`]): a lease cannot reach another backend.

use std::collections::VecDeque;
use std::net::IpAddr;
use std::path::Path;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use frontier::{
    AddressGate, AddressLimits, Canonical, Completion, DiskError, Frontier, FrontierError,
    FrontierStats, Outcome, Push, Turn,
};
use tokio::sync::{Notify, Semaphore};
use tokio_util::task::TaskTracker;
use url::Url;

/// The instant the frontier is told is now: tokio's clock, so that tests which pause and
/// advance it see the frontier's waits pass with it. The same as `now()` otherwise.
pub(crate) fn now() -> Instant {
    tokio::time::Instant::now().into_std()
}

/// An instant of the process's clock (the shared frontier's) on the crawl's, which may be
/// paused and advanced (tests): the wait is carried over.
fn crawl_clock(at: Instant) -> Instant {
    now() + at.saturating_duration_since(Instant::now())
}

/// Where the crawl's URLs live: what is seen, queued and leased.
pub(crate) enum Backend {
    /// This process's own frontier.
    Local(Arc<Local>),
    /// A crawl shared through Redis.
    Shared(Arc<Remote>),
}

/// The shared frontier, and what this process still has on its way to it.
pub(crate) struct Remote {
    frontier: shared::SharedFrontier,
    /// The limits per address the crawl's processes hold together, and how long a request
    /// may keep its place at its address (a process killed with it out gives it back then).
    addresses: (AddressLimits, Duration),
    /// Completions (their records written) and leases given back, sent while the workers
    /// fetch on: a worker does not wait a round trip, or a batch behind one, between two
    /// fetches. Waited for when the crawl ends.
    background: TaskTracker,
    /// As many permits as fetch workers, one per completion on its way: a worker finding
    /// none waits, so that a slow Redis slows the fetches rather than piling up completions.
    sending: Arc<Semaphore>,
    /// The crawl's wake-up for its workers (see [`Backend::wake`]), rung when a completion
    /// sent in the background lands: its page's links are queued, its host's connection free.
    landed: Arc<Notify>,
    /// The requests waiting in place at full addresses.
    waits: Arc<AddressWaits>,
    /// Leases given back to wait for their address's turn (see [`Lease::abandon_for_turn`]),
    /// for the summary.
    given_back: AtomicU64,
    /// Leases whose address's line was full, kept here rather than given back (see
    /// [`Lease::park`]), in the order they came, by address.
    parked: std::sync::Mutex<std::collections::HashMap<IpAddr, VecDeque<shared::SharedLease>>>,
}

impl Remote {
    /// How many requests of this process may wait in an address's line.
    fn line_most(&self) -> u32 {
        WAITING_PER_CONNECTION * self.addresses.0.connections
    }

    /// The first lease parked at an address whose line has room now.
    fn unpark(&self) -> Option<shared::SharedLease> {
        let mut parked = self.parked.lock().unwrap_or_else(PoisonError::into_inner);
        let most = self.line_most();
        let address = *parked
            .iter()
            .find(|(address, queue)| !queue.is_empty() && self.waits.has_room(**address, most))?
            .0;
        let queue = parked.get_mut(&address)?;
        let lease = queue.pop_front();
        if queue.is_empty() {
            parked.remove(&address);
        }
        lease
    }
}

/// The embedded frontier, and the gate that makes "complete a lease, write its record" one
/// step for a checkpoint.
pub(crate) struct Local {
    frontier: Frontier,
    /// The requests' turns at their addresses (politeness per address).
    addresses: AddressGate,
    /// The requests waiting in place at full addresses.
    waits: Arc<AddressWaits>,
    /// Held shared by each completion with its record, exclusively by a checkpoint, which
    /// flushes the records then snapshots the frontier: a checkpoint never holds as done a
    /// URL whose record is not written. A std lock, never held across an await: what runs
    /// under it is synchronous.
    gate: RwLock<()>,
}

/// Why the journal could not be made durable.
#[derive(Debug)]
pub(crate) enum JournalError {
    /// The records (or WARC file) could not be flushed to disk first.
    Records(std::io::Error),
    /// The journal file could not be written.
    Journal(DiskError),
}

impl std::fmt::Display for JournalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalError::Records(err) => write!(f, "flushing the records to disk: {err}"),
            JournalError::Journal(err) => write!(f, "writing the journal: {err}"),
        }
    }
}

/// A URL a worker may fetch now, until it completes or abandons it, with the backend that
/// issued it.
pub(crate) enum Lease {
    /// A lease of the local frontier.
    Local(frontier::Lease, Arc<Local>),
    /// A lease of the shared frontier.
    Shared(shared::SharedLease, Arc<Remote>),
}

impl std::fmt::Debug for Lease {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Lease::Local(lease, _) => lease.fmt(f),
            Lease::Shared(lease, _) => lease.fmt(f),
        }
    }
}

/// What a worker is to do next: the frontier's answer, with a lease of either store.
pub(crate) type Next = frontier::Next<Lease>;

impl Lease {
    /// Gives back a lease with the outcome of its fetch, and runs `then` with what became
    /// of it, as one step: a checkpoint sees both or neither. `then` writes the record.
    pub(crate) async fn complete<R>(
        self,
        outcome: Outcome,
        then: impl FnOnce(Result<Completion, frontier::ForeignLease>) -> R,
    ) -> Option<R> {
        match self {
            Lease::Shared(lease, remote) => {
                let remote = &*remote;
                // Whatever Redis says, these end the URL: its record is written first, so
                // that a process killed between the two repeats the fetch (its lease comes
                // back) rather than loses the record of a URL Redis holds as done.
                let certain = frontier::known_fate(
                    outcome,
                    lease.attempts(),
                    remote.frontier.politeness(),
                    lease.host_given_up(),
                );
                if let Some(fate) = certain {
                    // Taken first: nothing is awaited between the record and the task that
                    // completes it, so a worker cancelled here has written no record, and
                    // its lease goes back (the semaphore is never closed: always a permit).
                    let mut waiting = GiveBackOnDrop {
                        remote,
                        lease: Some(lease),
                    };
                    let permit = Arc::clone(&remote.sending).acquire_owned().await.ok();
                    let lease = waiting.lease.take()?;
                    let written = then(Ok(Completion::new(fate, None)));
                    let frontier = remote.frontier.clone();
                    let landed = Arc::clone(&remote.landed);
                    remote.background.spawn(async move {
                        let url = lease.url().to_string();
                        if let Err(err) = frontier.complete(lease, outcome).await {
                            tracing::error!(
                                "completing {url}: {err}; it comes back to the crawl when its \
                                 bucket is taken anew"
                            );
                        }
                        drop(permit);
                        landed.notify_waiters();
                    });
                    return Some(written);
                }
                let url = lease.url().to_string();
                match remote.frontier.complete(lease, outcome).await {
                    Ok(Some(completion)) => Some(then(Ok(completion))),
                    Ok(None) => {
                        tracing::warn!(
                            "a lease's bucket went to another process before its fetch \
                             completed (did this process stall past lease_time?); the URL is \
                             fetched again"
                        );
                        None
                    }
                    Err(err) => {
                        tracing::error!(
                            "completing {url}: {err}; it comes back to the crawl when its \
                             bucket is taken anew"
                        );
                        None
                    }
                }
            }
            lease => lease.complete_now(outcome, then),
        }
    }

    /// [`complete`](Self::complete) without awaiting anything: for a worker unwinding from a
    /// panic, which cannot await.
    pub(crate) fn complete_now<R>(
        self,
        outcome: Outcome,
        then: impl FnOnce(Result<Completion, frontier::ForeignLease>) -> R,
    ) -> Option<R> {
        match self {
            Lease::Local(lease, local) => {
                let _step = local.gate.read().unwrap_or_else(PoisonError::into_inner);
                Some(then(local.frontier.complete(lease, outcome, now())))
            }
            Lease::Shared(lease, remote) => {
                // Unwinding from a panic, which cannot await: the lease goes back (or
                // expires) and another try writes the record.
                remote.spawn_abandon(lease);
                None
            }
        }
    }

    /// The limits per address its request is held to.
    pub(crate) fn address_limits(&self) -> AddressLimits {
        match self {
            Lease::Local(_, local) => local.addresses.limits(),
            Lease::Shared(_, remote) => remote.addresses.0,
        }
    }

    /// Asks a turn for this lease's request at `address`, the one its connection goes to:
    /// a permit, held until the request ends, or when to come back (then [`abandon_for_turn`]
    /// it, or, the address being full, wait in a [`wait_place`] if one is free). Processes
    /// sharing a crawl take turns together; when Redis cannot be asked, the request goes
    /// (the crawl is not held up by the limits' keeper).
    ///
    /// [`abandon_for_turn`]: Lease::abandon_for_turn
    /// [`wait_place`]: Lease::wait_place
    pub(crate) async fn enter_address(&self, address: IpAddr) -> Result<AddressPermit, Turn> {
        let host = self.url().host_key();
        match self {
            Lease::Local(_, local) => match local.addresses.enter(address, host, now()) {
                Turn::Go => Ok(AddressPermit::Local(Arc::clone(local), address)),
                wait => Err(wait),
            },
            Lease::Shared(_, remote) => {
                let (limits, hold) = remote.addresses;
                match remote
                    .frontier
                    .enter_address(address, host, limits, hold)
                    .await
                {
                    Ok(Turn::Go) => Ok(AddressPermit::Shared(Arc::clone(remote), address)),
                    Ok(Turn::WaitUntil(at)) => Err(Turn::WaitUntil(crawl_clock(at))),
                    Ok(Turn::Full(at)) => Err(Turn::Full(crawl_clock(at))),
                    Err(err) => {
                        tracing::warn!("asking {address}'s turn of the shared crawl: {err}");
                        Ok(AddressPermit::Unlimited)
                    }
                }
            }
        }
    }

    /// Until when this lease's request at `address` would wait for its turn, without taking
    /// one (see `frontier::AddressRecord::book`: a wait keeps its turn for the host, as a
    /// turn asked does); `None` when a turn may be asked there now (or the address is full:
    /// [`enter_address`] says what to do then). In a shared crawl, the address is asked of
    /// Redis once for every request of the process there if this one does not hold it.
    ///
    /// [`enter_address`]: Lease::enter_address
    pub(crate) async fn book_address(&self, address: IpAddr) -> Option<Instant> {
        let host = self.url().host_key();
        match self {
            Lease::Local(_, local) => match local.addresses.book(address, host, now()) {
                Turn::WaitUntil(at) => Some(at),
                Turn::Go | Turn::Full(_) => None,
            },
            Lease::Shared(_, remote) => {
                let (limits, hold) = remote.addresses;
                let booked = remote.frontier.book_address(address, host, limits, hold);
                match booked.await {
                    Ok(Turn::WaitUntil(at)) => Some(crawl_clock(at)),
                    Ok(Turn::Go | Turn::Full(_)) => None,
                    // Asked again with the turn, which says what to do then.
                    Err(err) => {
                        tracing::debug!("asking for {address} in the shared crawl: {err}");
                        None
                    }
                }
            }
        }
    }

    /// Until when this lease, which found its address full (until `at`, [`Turn::Full`]) and
    /// no place to wait in, is given back (see [`FULL_HOLD_OFF`]).
    pub(crate) fn held_off_until(&self, at: Instant) -> Instant {
        match self {
            Lease::Local(..) => at,
            Lease::Shared(..) => {
                let now = now();
                now + at.saturating_duration_since(now) * FULL_HOLD_OFF
            }
        }
    }

    /// A place at the end of the line of this process's requests waiting at the full
    /// `address` ([`Turn::Full`]), holding this lease: its first is woken when a request of
    /// this process there ends; None when the address or the process has as many waiting as
    /// it may (see [`AddressWaits`]): then park the lease, or give it back.
    pub(crate) fn wait_place(&self, address: IpAddr) -> Option<WaitPlace> {
        let (waits, most) = self.waits();
        waits.join(address, most)
    }

    /// The line of this process's requests waiting at `address`, as this lease's request
    /// finds it before asking its turn: a line there means the address was full when its
    /// first last asked, and its first asks each time a connection may be free, so a request
    /// coming now joins it, or, finding it as long as it may be, goes back, without asking
    /// (see [`AddressWaits`]).
    pub(crate) fn line(&self, address: IpAddr) -> Line {
        let (waits, most) = self.waits();
        waits.line(address, most)
    }

    /// The process's waits at full addresses, and how many may wait at this lease's.
    fn waits(&self) -> (&Arc<AddressWaits>, u32) {
        let most = WAITING_PER_CONNECTION * self.address_limits().connections;
        match self {
            Lease::Local(_, local) => (&local.waits, most),
            Lease::Shared(_, remote) => (&remote.waits, most),
        }
    }

    /// Keeps this lease, whose request found `address`'s line full, in the process rather
    /// than give it back: a lease of a shared crawl given back is a script, and comes back
    /// in another's, where a parked one is held (and renewed) as any, and
    /// [`Backend::next`] hands it out again, before any new lease, once the address's line
    /// has room. At an address whose connections bind, the leases of the tasks beyond its
    /// lines went back and came again about twice a page (docs/benchmarks.md). The lease
    /// back when it is not parked: one of the embedded frontier, given back in microseconds,
    /// or one more than may wait in the address's line.
    pub(crate) fn park(self, address: IpAddr) -> Option<Lease> {
        let (lease, remote) = match self {
            Lease::Shared(lease, remote) => (lease, remote),
            local => return Some(local),
        };
        let mut parked = remote.parked.lock().unwrap_or_else(PoisonError::into_inner);
        // No queue is made that would stay empty: a queue at an address says leases wait
        // there (see `Backend::parked_waiting`).
        if parked.get(&address).map_or(0, VecDeque::len) < remote.line_most() as usize {
            parked.entry(address).or_default().push_back(lease);
            return None;
        }
        drop(parked);
        Some(Lease::Shared(lease, remote))
    }

    /// Gives back a lease whose request must wait for its address's turn: as
    /// [`abandon_until`](Self::abandon_until), counted (a shared crawl's summary says how
    /// many).
    pub(crate) fn abandon_for_turn(self, at: Instant) -> Result<(), frontier::ForeignLease> {
        if let Lease::Shared(_, remote) = &self {
            remote.given_back.fetch_add(1, Ordering::Relaxed);
        }
        self.abandon_until(at)
    }

    /// Gives back a lease whose request did not happen: as [`abandon`](Self::abandon), and
    /// its host is not leased again before `at`.
    pub(crate) fn abandon_until(self, at: Instant) -> Result<(), frontier::ForeignLease> {
        match self {
            Lease::Local(lease, local) => local.frontier.abandon_until(lease, now(), at),
            Lease::Shared(lease, remote) => {
                let wait = at.saturating_duration_since(now());
                let frontier = remote.frontier.clone();
                remote.background.spawn(async move {
                    if let Err(err) = frontier.abandon_for(lease, wait).await {
                        tracing::warn!("giving a lease back: {err}");
                    }
                });
                Ok(())
            }
        }
    }

    /// Gives back a lease whose fetch did not happen: its URL is queued again, and no record
    /// is written. Does not await: a worker being cancelled gives its lease back this way.
    pub(crate) fn abandon(self) -> Result<(), frontier::ForeignLease> {
        match self {
            Lease::Local(lease, local) => local.frontier.abandon(lease, now()),
            Lease::Shared(lease, remote) => {
                remote.spawn_abandon(lease);
                Ok(())
            }
        }
    }

    /// The URL to fetch.
    pub(crate) fn url(&self) -> &Canonical {
        match self {
            Lease::Local(lease, _) => lease.url(),
            Lease::Shared(lease, _) => lease.url(),
        }
    }

    /// Links followed from a seed.
    pub(crate) fn depth(&self) -> u32 {
        match self {
            Lease::Local(lease, _) => lease.depth(),
            Lease::Shared(lease, _) => lease.depth(),
        }
    }

    /// Which try this is, 1 for the first.
    pub(crate) fn attempts(&self) -> u32 {
        match self {
            Lease::Local(lease, _) => lease.attempts(),
            Lease::Shared(lease, _) => lease.attempts(),
        }
    }

    /// The page whose link led to the URL (or the URL that redirected to it, the sitemap
    /// that listed it); `None` for a seed, or when not known.
    pub(crate) fn referrer(&self) -> Option<&str> {
        match self {
            Lease::Local(lease, _) => lease.referrer(),
            Lease::Shared(lease, _) => lease.referrer(),
        }
    }

    /// What was queued with the URL (a recrawl's earlier record), if anything.
    pub(crate) fn memo(&self) -> Option<&[u8]> {
        match self {
            Lease::Local(lease, _) => lease.memo(),
            Lease::Shared(lease, _) => lease.memo(),
        }
    }

    /// Whether the URL is handed out only to be recorded: its host was given up.
    pub(crate) fn host_given_up(&self) -> bool {
        match self {
            Lease::Local(lease, _) => lease.host_given_up(),
            Lease::Shared(lease, _) => lease.host_given_up(),
        }
    }
}

/// A request's turn at its address, held until the request ends: dropped, the address
/// has one request fewer in flight.
pub(crate) enum AddressPermit {
    /// No limit to hold (none set, or its keeper could not be asked).
    Unlimited,
    Local(Arc<Local>, IpAddr),
    Shared(Arc<Remote>, IpAddr),
}

impl Drop for AddressPermit {
    fn drop(&mut self) {
        match self {
            AddressPermit::Unlimited => {}
            AddressPermit::Local(local, address) => {
                local.addresses.leave(*address, now());
                local.waits.ended(*address);
            }
            AddressPermit::Shared(remote, address) => {
                remote.frontier.leave_address(*address);
                // A request waiting here asks now: this process holds the address still, or
                // asks Redis for it.
                remote.waits.ended(*address);
            }
        }
    }
}

/// Requests that may wait in place at a full address, for each of its connections: a freed
/// connection then finds one waiting. Measured on one address of 8 connections, 20 ms
/// requests, 128 workers (docs/benchmarks.md): one a connection, 168 pages a second of its
/// 400; two, 251; four, 345; none (every lease given back), 95. Sixteen: as fast, and with
/// [`FULL_HOLD_OFF`] enough waiting to keep the connections busy while the others are held
/// off (a process's workers cap them first: half of them wait at most).
const WAITING_PER_CONNECTION: u32 = 16;

/// How many of a full address's waits (100 ms, or its delay if longer) a lease of a shared
/// crawl that found no place to wait in is held off: each give-back is a script in Redis, and
/// one wait each cost some 50 Redis requests and 1 ms of its CPU a page on one address of 8
/// connections; four, 20 requests and 0.5 ms, as fast with 16 places a connection
/// (docs/benchmarks.md). The embedded frontier gives a lease back in microseconds: its
/// leases come back after one wait, to refill the places sooner.
const FULL_HOLD_OFF: u32 = 4;

/// The requests of this process waiting in place at full addresses, in line at each: the
/// first is woken when a request of this process at its address ends, and takes the
/// connection it freed at once, where a lease given back until the address's next turn would
/// leave it idle till then. Only the first asks again when the address's wait runs out (the
/// other processes' requests end unseen here); the others wait their turn to be first, which
/// comes when the one before leaves the line (its request started, or its lease went back).
/// Each asking again was a Redis call in a shared crawl: with every waiter asking at the end
/// of each wait, one address of 8 connections cost some 14 calls a page (docs/benchmarks.md).
/// At most [`WAITING_PER_CONNECTION`] for each of an address's connections, and half the
/// process's workers in all: the others' leases are parked in a shared crawl (as many again,
/// see [`Lease::park`]) or given back, and their tasks serve other servers meanwhile.
#[derive(Debug)]
pub(crate) struct AddressWaits {
    waiting: std::sync::Mutex<Waiting>,
    /// Requests that may wait in all.
    most: u32,
    /// Rung when a place in a line is freed, for a task whose lease found its line full.
    room: Notify,
    /// Tasks waiting for `room`: rung only then, so that no permit is left for a task that
    /// comes later (it would take another lease at once, to park or give back).
    room_waiting: AtomicUsize,
}

/// The requests waiting at full addresses.
#[derive(Debug, Default)]
struct Waiting {
    /// Per address with requests waiting: what wakes each, in the order they came.
    by_address: std::collections::HashMap<IpAddr, VecDeque<Arc<Notify>>>,
    /// How many there are in all.
    all: u32,
}

impl AddressWaits {
    /// The waits of a process of `workers` fetch workers.
    pub(crate) fn new(workers: usize) -> AddressWaits {
        AddressWaits {
            waiting: std::sync::Mutex::default(),
            most: u32::try_from(workers / 2).unwrap_or(u32::MAX),
            room: Notify::new(),
            room_waiting: AtomicUsize::new(0),
        }
    }

    /// Whether a request at `address` may wait in its line now (fewer than `most` wait
    /// there, and the process has room for another).
    fn has_room(&self, address: IpAddr, most: u32) -> bool {
        let waiting = self.lock();
        waiting.all < self.most
            && waiting
                .by_address
                .get(&address)
                .is_none_or(|line| line.len() < most as usize)
    }

    /// Waits until a place in a line is freed, or until `until`.
    async fn room(&self, until: Instant) {
        /// Counts a task among those waiting, until it is done or cancelled.
        struct Counted<'a>(&'a AtomicUsize);
        impl Drop for Counted<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::SeqCst);
            }
        }
        self.room_waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = Counted(&self.room_waiting);
        tokio::select! {
            () = self.room.notified() => {}
            () = tokio::time::sleep_until(until.into()) => {}
        }
    }

    /// A place at the end of the line of requests waiting at `address`, if fewer than
    /// `most` wait there and the process has room for another.
    fn join(self: &Arc<Self>, address: IpAddr, most: u32) -> Option<WaitPlace> {
        self.join_locked(&mut self.lock(), address, most)
    }

    fn join_locked(
        self: &Arc<Self>,
        waiting: &mut Waiting,
        address: IpAddr,
        most: u32,
    ) -> Option<WaitPlace> {
        let Waiting { by_address, all } = waiting;
        if *all >= self.most {
            return None;
        }
        let line = by_address.entry(address).or_default();
        if line.len() >= most as usize {
            if line.is_empty() {
                by_address.remove(&address);
            }
            return None;
        }
        let woken = Arc::new(Notify::new());
        line.push_back(Arc::clone(&woken));
        *all += 1;
        Some(WaitPlace {
            waits: Arc::clone(self),
            address,
            woken,
        })
    }

    /// A place at the end of the line at `address` if requests wait there (it was full a
    /// moment ago) and one more may (see [`join`]): looked at and joined under one lock, so
    /// that a line emptied meanwhile is not started by a request that never asked.
    ///
    /// [`join`]: AddressWaits::join
    fn line(self: &Arc<Self>, address: IpAddr, most: u32) -> Line {
        let mut guard = self.lock();
        if guard
            .by_address
            .get(&address)
            .is_none_or(VecDeque::is_empty)
        {
            return Line::None;
        }
        match self.join_locked(&mut guard, address, most) {
            Some(place) => Line::Joined(place),
            None => Line::Full,
        }
    }

    /// A request of this process at `address` ended: the first request waiting there asks
    /// again.
    fn ended(&self, address: IpAddr) {
        if let Some(first) = self.lock().by_address.get(&address).and_then(|l| l.front()) {
            first.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Waiting> {
        self.waiting.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a request finds at its address before asking its turn (see [`Lease::line`]).
#[derive(Debug)]
pub(crate) enum Line {
    /// No request of this process waits there: ask.
    None,
    /// Requests wait there, and this one now with them, last.
    Joined(WaitPlace),
    /// As many wait there as may, or the process has as many waiting at all addresses as
    /// it may: park the lease, or give it back.
    Full,
}

/// A request's place in the line of those waiting at a full address (see
/// [`AddressWaits`]).
#[derive(Debug)]
pub(crate) struct WaitPlace {
    waits: Arc<AddressWaits>,
    address: IpAddr,
    /// Rung for this place alone: stored when it is not awaited, so no wake is lost.
    woken: Arc<Notify>,
}

impl WaitPlace {
    /// Waits, the first in line, until a request of this process at the address ends or
    /// until `at`; not the first, until it becomes the first (only the first asks).
    pub(crate) async fn until(&self, at: Instant) {
        let first = {
            let guard = self.waits.lock();
            let line = guard.by_address.get(&self.address);
            line.and_then(|l| l.front())
                .is_some_and(|f| Arc::ptr_eq(f, &self.woken))
        };
        if first {
            tokio::select! {
                () = self.woken.notified() => {}
                () = tokio::time::sleep_until(at.into()) => {}
            }
        } else {
            self.woken.notified().await;
        }
    }
}

impl Drop for WaitPlace {
    fn drop(&mut self) {
        let mut guard = self.waits.lock();
        let Waiting { by_address, all } = &mut *guard;
        let Some(line) = by_address.get_mut(&self.address) else {
            return;
        };
        let Some(at) = line.iter().position(|w| Arc::ptr_eq(w, &self.woken)) else {
            return;
        };
        line.remove(at);
        *all = all.saturating_sub(1);
        // A task counted before it waits finds the permit if it is not waiting yet.
        if self.waits.room_waiting.load(Ordering::SeqCst) > 0 {
            self.waits.room.notify_one();
        }
        match line.front() {
            // The next is first now: it asks, and waits on the address's clock if still full.
            Some(next) if at == 0 => next.notify_one(),
            Some(_) => {}
            None => {
                by_address.remove(&self.address);
            }
        }
    }
}

impl Backend {
    /// The embedded frontier as a backend for `workers` fetch workers, holding requests to
    /// `addresses` per address.
    pub(crate) fn local(frontier: Frontier, workers: usize, addresses: AddressLimits) -> Backend {
        Backend::Local(Arc::new(Local {
            frontier,
            addresses: AddressGate::new(addresses),
            waits: Arc::new(AddressWaits::new(workers)),
            gate: RwLock::new(()),
        }))
    }

    /// The shared frontier as a backend, for `workers` fetch workers, holding requests to
    /// `addresses` per address with the crawl's other processes (a request keeping its
    /// place at most `hold`).
    pub(crate) fn shared(
        frontier: shared::SharedFrontier,
        workers: usize,
        addresses: (AddressLimits, Duration),
    ) -> Backend {
        Backend::Shared(Arc::new(Remote {
            frontier,
            addresses,
            background: TaskTracker::new(),
            sending: Arc::new(Semaphore::new(workers.max(1))),
            landed: Arc::new(Notify::new()),
            waits: Arc::new(AddressWaits::new(workers)),
            given_back: AtomicU64::new(0),
            parked: std::sync::Mutex::default(),
        }))
    }

    /// What the crawl wakes its waiting workers with when a lease completes: a host may
    /// have become ready, or links were queued. The shared backend rings it too, when a
    /// completion it sends in the background lands.
    pub(crate) fn wake(&self) -> Arc<Notify> {
        match self {
            Backend::Local(_) => Arc::new(Notify::new()),
            Backend::Shared(remote) => Arc::clone(&remote.landed),
        }
    }

    /// Waits until a place in the line of requests waiting at a full address is freed, or
    /// until `until`: for a task whose lease found its line full (see
    /// `crawl::visit::Visited::LineFull`).
    pub(crate) async fn room_in_a_line(&self, until: Instant) {
        match self {
            Backend::Local(local) => local.waits.room(until).await,
            Backend::Shared(remote) => remote.waits.room(until).await,
        }
    }

    /// The shared frontier, if the crawl is shared.
    pub(crate) fn as_shared(&self) -> Option<&shared::SharedFrontier> {
        match self {
            Backend::Local(_) => None,
            Backend::Shared(remote) => Some(&remote.frontier),
        }
    }

    /// Gives back the leases no worker took, and waits for what this process still sends
    /// the frontier in the background (see [`Remote`]): when the crawl ends, before its
    /// summary, so that this process holds no lease when it leaves and every completion
    /// whose record is written has reached Redis (or failed, and its lease will expire).
    pub(crate) async fn settle(&self) {
        if let Backend::Shared(remote) = self {
            let parked: Vec<shared::SharedLease> =
                std::mem::take(&mut *remote.parked.lock().unwrap_or_else(PoisonError::into_inner))
                    .into_values()
                    .flatten()
                    .collect();
            for lease in parked {
                remote.spawn_abandon(lease);
            }
            // Completions first: after the hand-over, they would be refused.
            remote.background.close();
            remote.background.wait().await;
            if let Err(err) = remote.frontier.hand_over().await {
                // They come back to the crawl with the buckets' next owners all the same.
                tracing::warn!("handing this process's buckets over: {err}");
            }
        }
    }

    /// Pushes the seeds, at depth 0 (pushing one again is harmless: it is seen).
    pub(crate) async fn push_seeds(&self, seeds: Vec<Canonical>) -> Result<(), Error> {
        match self {
            Backend::Local(local) => {
                let at = now();
                for seed in seeds {
                    local.frontier.push_canonical(seed, 0, at)?;
                }
                Ok(())
            }
            Backend::Shared(remote) => remote
                .frontier
                .push_seeds(seeds)
                .await
                .map(drop)
                .map_err(shared_error),
        }
    }

    /// Pushes the links of one page (resolved against `base`), found `depth` links from a
    /// seed, as one batch. Links that cannot be admitted are counted by the frontier; an
    /// error is the frontier's own (memory, disk), reported once for the batch.
    pub(crate) async fn push_links(
        &self,
        page: &Url,
        base: &Url,
        hrefs: &[String],
        depth: u32,
    ) -> Result<(), Error> {
        match self {
            Backend::Local(local) => {
                // One failed push (a spill write, say) does not keep the others out.
                local
                    .frontier
                    .push_links_on(page, base, hrefs, depth, now())
                    .map(drop)
                    .map_err(Error::from)
            }
            Backend::Shared(remote) => remote
                .frontier
                .push_links(page, base, hrefs, depth)
                .await
                .map_err(shared_error),
        }
    }

    /// Pushes the requisites `page` needs (or a style sheet loads), each with `memo`, by the
    /// requisite rules (`ScopeRules::check_requisite`), as one batch.
    pub(crate) async fn push_requisites(
        &self,
        page: &Url,
        urls: Vec<Canonical>,
        memo: &[u8],
        depth: u32,
    ) -> Result<(), Error> {
        match self {
            Backend::Local(local) => {
                let at = now();
                let mut first_error = None;
                for url in urls {
                    let from = Some(page.as_str());
                    let pushed = local
                        .frontier
                        .push_requisite(url, from, Some(memo), depth, at);
                    if let Err(err) = pushed {
                        // One failed push (a spill write) does not keep the others out.
                        first_error.get_or_insert(err);
                    }
                }
                first_error.map_or(Ok(()), |err| Err(err.into()))
            }
            Backend::Shared(remote) => remote
                .frontier
                .push_requisites(page, urls, Some(memo), depth)
                .await
                .map_err(shared_error),
        }
    }

    /// Pushes one URL already in canonical form, which `from` (a redirect, a sitemap) led to.
    pub(crate) async fn push_canonical(
        &self,
        url: Canonical,
        from: Option<&str>,
        depth: u32,
    ) -> Result<Push, Error> {
        self.push_canonical_with(url, from, None, depth).await
    }

    /// [`push_canonical`](Self::push_canonical) with a memo that comes back with the URL's
    /// lease ([`Lease::memo`]), in either store.
    async fn push_canonical_with(
        &self,
        url: Canonical,
        from: Option<&str>,
        memo: Option<&[u8]>,
        depth: u32,
    ) -> Result<Push, Error> {
        match self {
            Backend::Local(local) => {
                Ok(local
                    .frontier
                    .push_canonical_with(url, from, memo, depth, now())?)
            }
            Backend::Shared(remote) => {
                match remote
                    .frontier
                    .push_canonical_with(url, from, memo, depth)
                    .await
                {
                    Ok(true) => Ok(Push::Queued),
                    Ok(false) => Ok(Push::Seen),
                    Err(err) => Err(shared_error(err)),
                }
            }
        }
    }

    /// Queues `urls`, each at its depth, as links are (scope, traps, seen-test; with
    /// `requisites`, by the requisite rules), from a list
    /// named `list` that the other processes of a shared crawl may be given too: each then
    /// queues its share (see `SharedFrontier::push_shared`). Errors are logged, not
    /// returned: a URL not queued is one page fetched in full instead of conditionally.
    pub(crate) async fn push_list(&self, list: &str, urls: Vec<shared::Listed>, requisites: bool) {
        let not_queued = "those not queued are fetched only if found as links";
        match self {
            Backend::Local(local) => {
                for (url, depth, memo) in urls {
                    let memo = memo.as_deref();
                    let pushed = if requisites {
                        let at = now();
                        let pushed = local.frontier.push_requisite(url, None, memo, depth, at);
                        pushed.map(drop).map_err(Error::from)
                    } else {
                        self.push_canonical_with(url, None, memo, depth)
                            .await
                            .map(drop)
                    };
                    if let Err(err) = pushed {
                        tracing::warn!("queuing {list}: {err}; {not_queued}");
                    }
                }
            }
            Backend::Shared(remote) => {
                if let Err(err) = remote.frontier.push_shared(list, urls, requisites).await {
                    tracing::warn!("queuing {list}: {}; {not_queued}", shared_error(err));
                }
            }
        }
    }

    /// Makes `url` a seed: its host (or domain) joins the scope.
    pub(crate) async fn add_seed(&self, url: &Canonical) {
        match self {
            Backend::Local(local) => local.frontier.add_seed(url),
            // Each process scopes its own links from the seeds it was started with and those
            // stored with the crawl; a redirected seed widens this process's scope only.
            Backend::Shared(remote) => {
                if let Err(err) = remote.frontier.add_seed(url).await {
                    tracing::warn!("adding the seed {url} to the shared crawl: {err}");
                }
            }
        }
    }

    /// The next lease, or when to ask again.
    pub(crate) async fn next(&self) -> Result<Next, Error> {
        match self {
            Backend::Local(local) => Ok(local
                .frontier
                .pop(now())?
                .map(|lease| Lease::Local(lease, Arc::clone(local)))),
            Backend::Shared(remote) => {
                if let Some(lease) = remote.unpark() {
                    return Ok(Next::Lease(Lease::Shared(lease, Arc::clone(remote))));
                }
                Ok(remote
                    .frontier
                    .next()
                    .await
                    .map_err(shared_error)?
                    .map(|lease| Lease::Shared(lease, Arc::clone(remote))))
            }
        }
    }

    /// Leases this process gave back to wait for their address's turn (a shared crawl's;
    /// the embedded frontier's cost nothing to count).
    pub(crate) fn given_back(&self) -> u64 {
        match self {
            Backend::Local(_) => 0,
            Backend::Shared(remote) => remote.given_back.load(Ordering::Relaxed),
        }
    }

    /// Whether leases wait parked at `address` (see [`Lease::park`]) and its line has no
    /// room for them now: a task whose lease was parked there, woken for room, then takes no
    /// new lease, which would most likely be of the full address too.
    pub(crate) fn parked_waiting(&self, address: IpAddr) -> bool {
        match self {
            Backend::Local(_) => false,
            Backend::Shared(remote) => {
                let parked = remote.parked.lock().unwrap_or_else(PoisonError::into_inner);
                parked.contains_key(&address) && !remote.waits.has_room(address, remote.line_most())
            }
        }
    }

    /// Sets a host's robots.txt `Crawl-delay`.
    pub(crate) async fn set_crawl_delay(&self, host: &str, delay: Duration) {
        match self {
            Backend::Local(local) => {
                local.frontier.set_crawl_delay(host, delay);
            }
            Backend::Shared(remote) => {
                if let Err(err) = remote.frontier.set_crawl_delay(host, delay).await {
                    tracing::warn!("setting the crawl delay of {host}: {err}");
                }
            }
        }
    }

    /// Counts of the whole crawl so far.
    pub(crate) fn stats(&self) -> FrontierStats {
        match self {
            Backend::Local(local) => local.frontier.stats(),
            Backend::Shared(remote) => remote.frontier.stats(),
        }
    }

    /// Makes the journal's entries so far durable (group commit), with `durable` run in
    /// between: it makes the records durable. The entries are taken with no completion under
    /// way, so that every completion among them has its record written (buffered) already,
    /// and `durable` puts those records on disk before the completions are.
    pub(crate) fn sync_journal(
        &self,
        durable: impl FnOnce() -> std::io::Result<()>,
    ) -> Result<(), JournalError> {
        match self {
            Backend::Local(local) => {
                let batch = {
                    let _all = local.gate.write().unwrap_or_else(PoisonError::into_inner);
                    local.frontier.journal_batch()
                };
                if batch.is_empty() {
                    return Ok(());
                }
                if let Err(err) = durable() {
                    // Not written: the completions must not be on disk before their records.
                    local.frontier.put_back_journal(batch);
                    return Err(JournalError::Records(err));
                }
                local
                    .frontier
                    .write_journal(batch)
                    .map_err(JournalError::Journal)
            }
            // The crawl's state is Redis's to keep; the records are flushed all the same.
            Backend::Shared(_) => durable().map_err(JournalError::Records),
        }
    }

    /// Checkpoints the crawl to `dir` (see `Frontier::checkpoint`), with no completion
    /// under way: `before` runs first (it flushes the records) and says whether to go on.
    /// `Ok(false)` when it said not to.
    pub(crate) fn checkpoint(
        &self,
        dir: &Path,
        before: impl FnOnce() -> bool,
    ) -> Result<bool, DiskError> {
        match self {
            Backend::Local(local) => {
                let _all = local.gate.write().unwrap_or_else(PoisonError::into_inner);
                if !before() {
                    return Ok(false);
                }
                local.frontier.checkpoint(dir, now()).map(|()| true)
            }
            Backend::Shared(_) => Ok(before()),
        }
    }
}

/// Gives its lease back if dropped still holding it: a worker cancelled while it waits to
/// send a completion.
struct GiveBackOnDrop<'a> {
    remote: &'a Remote,
    lease: Option<shared::SharedLease>,
}

impl Drop for GiveBackOnDrop<'_> {
    fn drop(&mut self) {
        if let Some(lease) = self.lease.take() {
            self.remote.spawn_abandon(lease);
        }
    }
}

impl Remote {
    /// Gives a lease back from code that cannot await (a worker being cancelled or
    /// unwinding): a task does it; if it fails, the lease expires all the same.
    fn spawn_abandon(&self, lease: shared::SharedLease) {
        let frontier = self.frontier.clone();
        self.background.spawn(async move {
            if let Err(err) = frontier.abandon(lease).await {
                tracing::warn!("giving a lease back: {err}");
            }
        });
    }
}

fn shared_error(err: shared::Error) -> Error {
    Error::Shared(err)
}

/// What a backend could not do: the embedded frontier's errors (memory, disk) or the shared
/// one's (Redis unreachable past its retries, or refusing).
#[derive(Debug)]
pub(crate) enum Error {
    /// The embedded frontier's.
    Local(FrontierError),
    /// The shared frontier's.
    Shared(shared::Error),
}

impl From<FrontierError> for Error {
    fn from(err: FrontierError) -> Self {
        Error::Local(err)
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Error::Local(err) => err.fmt(f),
            Error::Shared(err) => err.fmt(f),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Local(err) => err.source(),
            Error::Shared(err) => err.source(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn as_many_wait_at_a_full_address_as_it_has_connections_in_line_the_first_asking() {
        let waits = Arc::new(AddressWaits::new(8));
        let server: IpAddr = "192.0.2.7".parse().unwrap();
        let other: IpAddr = "192.0.2.8".parse().unwrap();
        let first = waits.join(server, 2).expect("a place");
        let second = waits.join(server, 2).expect("a second place");
        assert!(
            waits.join(server, 2).is_none(),
            "two connections, two places"
        );
        assert!(waits.join(other, 2).is_some(), "places are per address");
        assert!(waits.join(server, 0).is_none());
        // Half the workers at most wait in all: two of four, the second at another address.
        let few = Arc::new(AddressWaits::new(4));
        let one = few.join(server, 8).expect("a place");
        let _two = few.join(other, 8).expect("a place at another address");
        assert!(
            few.join(server, 8).is_none(),
            "half of four workers wait already"
        );
        // A request at the address ends: the first waiter asks again at once, not at its
        // instant; the second is not woken by it.
        let start = tokio::time::Instant::now();
        let later = now() + Duration::from_secs(5);
        let first_woken = tokio::spawn(async move {
            first.until(later).await;
            (tokio::time::Instant::now(), first)
        });
        let second_woken = tokio::spawn(async move {
            second.until(now() + Duration::from_millis(100)).await;
            (tokio::time::Instant::now(), second)
        });
        tokio::task::yield_now().await;
        waits.ended(server);
        let (at, first) = first_woken.await.unwrap();
        assert_eq!(at, start, "the first woken by the end, with no time passed");
        // Not first, the second waits past its instant: only the first watches the clock.
        tokio::time::sleep(Duration::from_secs(1)).await;
        assert!(!second_woken.is_finished(), "the second waits its turn");
        // The first leaves the line (its request started): the second is first and asks.
        drop(first);
        let (at, second) = second_woken.await.unwrap();
        assert_eq!(at - start, Duration::from_secs(1));
        // First now, with no end it waits until its instant.
        second.until(now() + Duration::from_millis(100)).await;
        assert_eq!(
            tokio::time::Instant::now() - start,
            Duration::from_millis(1100)
        );
        drop(second);
        assert!(
            waits.lock().by_address.is_empty(),
            "an address with no waiter is forgotten"
        );
        assert_eq!(waits.lock().all, 0);
        // A place given up is free for another address.
        drop(one);
        let _three = few.join(server, 8).expect("a place freed");
    }

    #[test]
    fn a_request_joins_a_line_before_asking_or_goes_back_from_a_full_one() {
        let waits = Arc::new(AddressWaits::new(8));
        let server: IpAddr = "192.0.2.7".parse().unwrap();
        // No line: the request asks (and joins one when told the address is full).
        assert!(matches!(waits.line(server, 2), Line::None));
        let first = waits.join(server, 2).expect("a place");
        // A line: the address was full a moment ago; the next joins it without asking.
        let Line::Joined(second) = waits.line(server, 2) else {
            panic!("a line with room is joined");
        };
        assert!(matches!(waits.line(server, 2), Line::Full));
        drop(first);
        assert!(matches!(waits.line(server, 2), Line::Joined(_)));
        drop(second);
        assert!(
            matches!(waits.line(server, 2), Line::None),
            "an empty line is none"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn a_task_whose_line_was_full_waits_for_a_place_freed_or_its_instant() {
        let waits = Arc::new(AddressWaits::new(8));
        let server: IpAddr = "192.0.2.7".parse().unwrap();
        let place = waits.join(server, 1).expect("a place");
        let start = tokio::time::Instant::now();
        let freed = tokio::spawn({
            let waits = Arc::clone(&waits);
            async move {
                waits.room(now() + Duration::from_secs(5)).await;
                tokio::time::Instant::now()
            }
        });
        tokio::time::sleep(Duration::from_millis(30)).await;
        drop(place);
        assert_eq!(
            freed.await.unwrap() - start,
            Duration::from_millis(30),
            "woken as the place is freed"
        );
        // A place freed while no task waits leaves nothing for one that comes later: its
        // wait lasts until its instant.
        drop(waits.join(server, 1).expect("a place"));
        waits.room(now() + Duration::from_millis(400)).await;
        assert_eq!(
            tokio::time::Instant::now() - start,
            Duration::from_millis(430)
        );
    }
}
