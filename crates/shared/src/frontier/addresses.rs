//! Politeness per address, for every process of the crawl: one process at a time holds an
//! IP address, for a term, and runs `frontier::AddressRecord`'s rule for it in its memory,
//! as the embedded frontier does: a request's turn and its leave cost Redis nothing, and the
//! starts one process makes at an address are spaced by its own clock. Redis
//! (`scripts/address.lua`) only passes an address from one process to the next: a process
//! that finds it held waits for the holder's term to end (its requests there wait as at a
//! full address); the holder, once another has asked and its term is over, starts no more
//! requests there, gives the address back when its requests have ended, and says when it
//! started its last, so that the next holder starts a delay after it. A keeper task renews
//! the terms of the addresses in use and gives back those left idle. The asks of a group's
//! addresses (one group on a single server, see `Store::address_group`) go together in one
//! script, as other requests do (`group.rs`).
//!
//! Where every request asked Redis its turn, a crawl of 1,000 names on 100 addresses cost
//! Redis 0.15 ms of CPU a page and spaced 5% of its starts at an address closer than the
//! delay, answers reaching their workers late (docs/benchmarks.md, 2026-12-06).

use std::net::IpAddr;

use frontier::{AddressLimits, AddressRecord, Turn};
use tokio::sync::watch;

use super::group::Answer;
use super::*;

/// How long a process holds an address at least once another asks for it: its term, at
/// least this, or [`TERM_STARTS`] delays. Redis hears of an address a few times a term,
/// whatever the pages; the processes that share an address take it in turns of about this.
/// Measured on a broad crawl of two processes (docs/benchmarks.md, 2026-12-06): a second
/// made them 0.8 times as fast as one, a quarter 0.9, 100 ms no faster and dearer.
pub const TERM_LEAST: Duration = Duration::from_millis(250);

/// The starts a term holds at least, at an address whose delay is long.
pub const TERM_STARTS: u32 = 8;

/// How long a process holds an address before it passes to another that asked, under
/// `limits`.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::AddressLimits;
///
/// let slow = AddressLimits { connections: 1, delay: Duration::from_secs(2) };
/// assert_eq!(shared::address_term(slow), Duration::from_secs(16));
/// assert_eq!(shared::address_term(AddressLimits::default()), shared::TERM_LEAST);
/// ```
pub fn address_term(limits: AddressLimits) -> Duration {
    (limits.delay * TERM_STARTS).max(TERM_LEAST)
}

/// The addresses this process holds, asks for, or found held by another.
#[derive(Default)]
pub(super) struct Holds {
    addresses: Mutex<HashMap<IpAddr, Address>>,
    /// The keeper task was started (with the first turn asked).
    keeper: AtomicBool,
}

/// One address, as this process knows it.
#[derive(Default)]
struct Address {
    /// This process's requests there, by the embedded frontier's rule; kept while any is
    /// out.
    record: AddressRecord,
    /// The limits and the hold its requests asked under (a process asks all under the same).
    terms: Terms,
    /// Until when this process may start requests there: it holds the address.
    held_until: Option<Instant>,
    /// Its last term (another asked): given back once `held_until` has passed and its
    /// requests there have ended.
    last_term: bool,
    /// When a turn was last asked there: an address unused for a tick of the keeper is
    /// given back.
    used: Option<Instant>,
    /// Another process holds it: ask again then.
    elsewhere_until: Option<Instant>,
    /// An ask of Redis is under way: its answer comes on this.
    asking: Option<watch::Receiver<Option<Result<(), Error>>>>,
    /// The Redis server it was last heard of from (`Store::server_changes`).
    server: u64,
    /// When Redis was last asked for it.
    asked: Option<Instant>,
}

/// The limits an address's requests are held to, and how long a request may be out (a
/// holder keeps the address past its term that long at most).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
struct Terms {
    limits: AddressLimits,
    hold: Duration,
}

impl Terms {
    fn term(&self) -> Duration {
        address_term(self.limits)
    }
}

impl SharedFrontier {
    /// Asks a turn at `address` for a request of `host`, under `limits`, for every process
    /// of the crawl: by `frontier::AddressRecord`'s rule, in this process's memory, while it
    /// holds the address; else the address is asked of Redis, or, held by another process,
    /// [`Turn::WaitUntil`] this process may ask again. `hold` is how long a request may be
    /// out at most: a holder whose requests are out keeps the address past its term that
    /// long at most, one killed four terms after it was last heard from.
    /// On [`Turn::Go`], [`leave_address`](Self::leave_address) when the request ends.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// use std::time::Duration;
    /// use frontier::{AddressLimits, Turn};
    ///
    /// let limits = AddressLimits { connections: 2, delay: Duration::from_millis(100) };
    /// let server = "192.0.2.7".parse().unwrap();
    /// let hold = Duration::from_secs(60);
    /// if frontier.enter_address(server, "a.example", limits, hold).await? == Turn::Go {
    ///     // ... the request ...
    ///     frontier.leave_address(server);
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn enter_address(
        &self,
        address: IpAddr,
        host: &str,
        limits: AddressLimits,
        hold: Duration,
    ) -> Result<Turn, Error> {
        if limits.is_unlimited() {
            return Ok(Turn::Go);
        }
        let terms = Terms { limits, hold };
        let turn = self
            .inner
            .with_address(address, terms, |at, now| {
                at.used = Some(now);
                at.turn(host, now, true)
            })
            .await?;
        self.inner.held_at_address(turn)
    }

    /// What [`enter_address`](Self::enter_address) would answer a request of `host`, without
    /// starting it: `frontier::AddressRecord::book`'s answer while this process holds the
    /// address ([`Turn::Go`] takes nothing: enter it when the request goes), else until when
    /// another process holds it, having asked Redis for it if it had to. Asked before a
    /// request whose turn follows other work (reading robots.txt's state, say), so that a
    /// request whose turn is far off goes back before the work, not after it.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f(frontier: shared::SharedFrontier) -> Result<(), shared::Error> {
    /// use std::time::Duration;
    /// use frontier::{AddressLimits, Turn};
    ///
    /// let limits = AddressLimits { connections: 2, delay: Duration::from_millis(100) };
    /// let server = "192.0.2.7".parse().unwrap();
    /// let hold = Duration::from_secs(60);
    /// if let Turn::WaitUntil(at) = frontier.book_address(server, "a.example", limits, hold).await? {
    ///     println!("its turn is at {at:?}: come back then");
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn book_address(
        &self,
        address: IpAddr,
        host: &str,
        limits: AddressLimits,
        hold: Duration,
    ) -> Result<Turn, Error> {
        if limits.is_unlimited() {
            return Ok(Turn::Go);
        }
        let terms = Terms { limits, hold };
        let turn = self
            .inner
            .with_address(address, terms, |at, now| {
                // Its turn comes next: not given back as unused meanwhile.
                at.used = Some(now);
                at.turn(host, now, false)
            })
            .await?;
        self.inner.held_at_address(turn)
    }

    /// A request that [`enter_address`](Self::enter_address) let go has ended. When its
    /// process's term there is over and this was its last request out, the address is given
    /// back to the process waiting for it (in the background, on the frontier's runtime).
    ///
    /// # Example
    ///
    /// See [`enter_address`](Self::enter_address).
    pub fn leave_address(&self, address: IpAddr) {
        let mut addresses = self.inner.holds.lock();
        let Some(at) = addresses.get_mut(&address) else {
            return;
        };
        at.record.leave();
        if at.due_back(Instant::now()) {
            self.inner.give_back(&mut addresses, address);
        }
    }
}

impl Holds {
    fn lock(&self) -> std::sync::MutexGuard<'_, HashMap<IpAddr, Address>> {
        self.addresses
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

impl Address {
    /// A request's turn, when this process need not ask Redis: held, by the record's rule
    /// (entered if `start`, else booked); else, see [`not_before`](Self::not_before).
    fn turn(&mut self, host: &str, now: Instant, start: bool) -> Option<Turn> {
        if self.held_until.is_some_and(|until| now < until) {
            let limits = self.terms.limits;
            return Some(match start {
                true => self.record.enter(host, now, limits),
                false => self.record.book(host, now, limits),
            });
        }
        self.not_before(now).map(Turn::WaitUntil)
    }

    /// When a request of this process, which does not hold the address now, may ask again:
    /// held by another, or its own term here ending (a quarter of a term on, as Redis
    /// answers a process that finds another holding it); `None` when Redis is to be asked.
    /// (A wait, not [`Turn::Full`]: a request that waits in its process's line holds a
    /// worker, and the address may be another's for a term.)
    fn not_before(&self, now: Instant) -> Option<Instant> {
        match self.held_until {
            Some(until) if self.last_term => Some(until.max(now) + self.terms.term() / 4),
            _ => self.elsewhere_until.filter(|until| now < *until),
        }
    }

    /// Forgets what the address's last answer said when Redis has become another server
    /// since (restarted from an older snapshot, a replica promoted): the one there now may
    /// hold another process as its holder, or none, and is asked again.
    fn forget_if_moved(&mut self, server: u64) {
        if self.server != server {
            self.server = server;
            self.held_until = None;
            self.last_term = false;
            self.elsewhere_until = None;
        }
    }

    /// Whether the address is to be given back now: its last term over and its requests
    /// ended.
    fn due_back(&self, now: Instant) -> bool {
        self.last_term
            && self.record.in_flight == 0
            && self.held_until.is_some_and(|until| now >= until)
    }

    /// What Redis answered an ask for the address, sent at `sent`: 1 (held: the term's ms,
    /// the ms before its first start may go), 2 (its last term: the ms to its end), or 0
    /// (held by another: the ms before asking again).
    fn heard(&mut self, sent: Instant, answer: [i64; 3]) {
        let now = Instant::now();
        let ms = |ms: i64| Duration::from_millis(ms.max(0).unsigned_abs());
        let delay = self.terms.limits.delay;
        match answer {
            [1, term, first] => {
                // Redis's term began after the ask was sent: it ends no sooner than this.
                self.held_until = Some(sent + ms(term));
                self.last_term = false;
                self.elsewhere_until = None;
                if first > 0 {
                    // The last start of the process before it, as this one's record counts:
                    // its first start comes a delay after.
                    let last = (now + ms(first)).checked_sub(delay).unwrap_or(now);
                    self.record.last_start = self.record.last_start.max(Some(last));
                }
            }
            [2, left, _] => {
                // Its last start a delay before its term's end at the latest, so that the
                // next holder, asking then, may start at once.
                let end = (sent + ms(left)).checked_sub(delay).unwrap_or(sent);
                self.held_until = Some(self.held_until.map_or(end, |until| until.min(end)));
                self.last_term = true;
            }
            [_, wait, _] => {
                self.held_until = None;
                self.last_term = false;
                self.elsewhere_until = Some(now + ms(wait).max(Duration::from_millis(1)));
            }
        }
    }
}

/// An ask of an address group's next script.
pub(super) struct HoldCall {
    address: IpAddr,
    terms: Terms,
    ask: Ask,
}

enum Ask {
    /// To hold the address (take it, or keep it another term).
    Hold,
    /// To give it back: the ms since this process's last start there (-1: none).
    GiveBack(i64),
}

/// The most asks one address script takes.
const MAX_ASKS: usize = 256;

/// The asks of one address script: the first waiting, and those after it under the same
/// terms, up to [`MAX_ASKS`].
fn fit(waiting: &[(HoldCall, Reply<[i64; 3]>)]) -> usize {
    let first = waiting.first().map(|(call, _)| call.terms);
    waiting
        .iter()
        .take(MAX_ASKS)
        .take_while(|(call, _)| Some(call.terms) == first)
        .count()
}

impl Inner {
    /// What `answer` makes of `address` (held under `terms`) once this process knows whether
    /// it holds it: `answer` is asked under the holds' lock; `None` while Redis must be
    /// asked, which is done (once for all the callers waiting), and `answer` asked again.
    /// A request held back at its address (its connections full, or its turn to come) holds
    /// the crawl back by its servers' politeness: its batches may wait for more (see
    /// `batch::LINGER_PACED`), as for hosts whose turns have not come.
    fn held_at_address(&self, turn: Turn) -> Result<Turn, Error> {
        if turn != Turn::Go {
            self.note_paced();
        }
        Ok(turn)
    }

    async fn with_address<R>(
        self: &Arc<Self>,
        address: IpAddr,
        terms: Terms,
        mut answer: impl FnMut(&mut Address, Instant) -> Option<R>,
    ) -> Result<R, Error> {
        if !self.holds.keeper.swap(true, Ordering::Relaxed) {
            self.sent
                .runtime
                .spawn(keep(Arc::downgrade(self), terms.term() / KEEPER_TICKS));
        }
        loop {
            let mut asked = {
                let mut addresses = self.holds.lock();
                let at = addresses.entry(address).or_default();
                at.terms = terms;
                at.forget_if_moved(self.store.server_changes());
                if let Some(answered) = answer(at, Instant::now()) {
                    return Ok(answered);
                }
                match &at.asking {
                    Some(asking) => asking.clone(),
                    None => self.ask_hold(address, at),
                }
            };
            // The ask's task ends with its answer applied (or says why not).
            let _ = asked.changed().await;
            match &*asked.borrow() {
                Some(Ok(())) => {}
                Some(Err(err)) => return Err(err.clone()),
                // Its task gone unanswered (its runtime shut down).
                None => {
                    let gone = "an ask for an address was dropped unanswered";
                    return Err(ErrorKind::Server(gone.into()).into());
                }
            }
        }
    }

    /// Asks Redis for `address` (`at`, under the holds' lock): the ask's answer is applied
    /// to the address by a task of its own, which then drops the sender of the receiver
    /// answered (and of `at.asking`).
    fn ask_hold(
        self: &Arc<Self>,
        address: IpAddr,
        at: &mut Address,
    ) -> watch::Receiver<Option<Result<(), Error>>> {
        let (tell, asked) = watch::channel(None);
        at.asking = Some(asked.clone());
        let sent = Instant::now();
        at.asked = Some(sent);
        let answer = self.queue_hold(address, at.terms, Ask::Hold);
        let inner = Arc::clone(self);
        self.sent.runtime.spawn(async move {
            let answer = group::answer(answer, "an ask for an address").await;
            let mut addresses = inner.holds.lock();
            let at = addresses.entry(address).or_default();
            at.asking = None;
            let told = match answer {
                Ok(answer) => {
                    at.heard(sent, answer);
                    if at.last_term {
                        inner.give_back_when_due(address, at);
                    }
                    Ok(())
                }
                Err(err) => Err(err),
            };
            drop(addresses);
            let _ = tell.send(Some(told));
        });
        asked
    }

    /// Gives `address` back at its last term's end, unless a request then still out gives
    /// it back as it leaves.
    fn give_back_when_due(self: &Arc<Self>, address: IpAddr, at: &Address) {
        let Some(until) = at.held_until else {
            return;
        };
        let weak = Arc::downgrade(self);
        self.sent.runtime.spawn(async move {
            tokio::time::sleep_until(until.into()).await;
            if let Some(inner) = weak.upgrade() {
                let mut addresses = inner.holds.lock();
                if addresses
                    .get(&address)
                    .is_some_and(|at| at.due_back(Instant::now()))
                {
                    inner.give_back(&mut addresses, address);
                }
            }
        });
    }

    /// Gives `address` back to Redis, saying when this process last started a request
    /// there, and forgets it.
    fn give_back(self: &Arc<Self>, addresses: &mut HashMap<IpAddr, Address>, address: IpAddr) {
        let Some(at) = addresses.remove(&address) else {
            return;
        };
        let ago = at.record.last_start.map_or(-1, |last| {
            // Rounded up: the next holder waits a moment more, never less.
            let ago = Instant::now().saturating_duration_since(last);
            millis(ago + Duration::from_micros(999))
        });
        let answer = self.queue_hold(address, at.terms, Ask::GiveBack(ago));
        self.sent.runtime.spawn(async move {
            // Not given back: it goes back at its term's end and its hold's.
            if let Err(err) = group::answer(answer, "an address given back").await {
                tracing::debug!("giving {address} back: {err}");
            }
        });
    }

    /// Adds an ask to its address group's next script (starting the group's sending task
    /// if none is under way).
    fn queue_hold(self: &Arc<Self>, address: IpAddr, terms: Terms, ask: Ask) -> Answer<[i64; 3]> {
        let group = self.store.address_group(address);
        let call = HoldCall {
            address,
            terms,
            ask,
        };
        let (answered, start) = self.sent.addresses.wait(group, call);
        if let Some(sending) = start {
            self.sent
                .runtime
                .spawn(Arc::clone(self).flush_addresses(group, sending));
        }
        answered
    }

    /// Sends the asks waiting in an address group, a script at a time, until none waits.
    async fn flush_addresses(
        self: Arc<Self>,
        group: u32,
        mut sending: Sending<HoldCall, [i64; 3], u32>,
    ) {
        let tag = self.store.address_tag(group);
        while let Some(calls) = sending.next(fit) {
            let terms = calls[0].0.terms;
            let mut invocation = self.scripts.address.prepare_invoke();
            for (call, _) in &calls {
                invocation.key(crate::scripts::address_key(&tag, call.address));
            }
            invocation
                .arg(&tag)
                .arg(&self.id)
                .arg(millis(terms.term()))
                .arg(millis(terms.limits.delay))
                .arg(millis(terms.hold))
                .arg(calls.len());
            let mut holds = 0;
            for (call, _) in &calls {
                match call.ask {
                    Ask::Hold => {
                        invocation.arg("h");
                        holds += 1;
                    }
                    Ask::GiveBack(ago) => {
                        invocation.arg(ago);
                    }
                }
            }
            let answer: Result<Vec<i64>, Error> = match self.call::<Vec<i64>>(&invocation).await {
                Ok(answer) if answer.len() == 3 * holds => Ok(answer),
                Ok(_) => {
                    Err(ErrorKind::Server("unexpected answer to an address script".into()).into())
                }
                Err(err) => Err(err),
            };
            let mut answers = answer.as_deref().unwrap_or(&[]).chunks_exact(3);
            for (call, reply) in calls {
                let told = match (&answer, call.ask) {
                    (Err(err), _) => Err(err.clone()),
                    (Ok(_), Ask::GiveBack(_)) => Ok([0; 3]),
                    (Ok(_), Ask::Hold) => {
                        let three = answers.next().unwrap_or(&[0, 0, 0]);
                        Ok([three[0], three[1], three[2]])
                    }
                };
                let _ = reply.send(told);
            }
        }
    }
}

/// How many times a term the keeper looks at a process's addresses.
const KEEPER_TICKS: u32 = 8;

/// The keeper of a process's addresses, [`KEEPER_TICKS`] times a term: renews the terms of
/// those it holds and uses when half of their term is left (and, in a last term, asks while
/// requests are out, so that Redis hears from it), gives back those no turn was
/// asked at for a tick with no request out (another process may have hosts there: measured,
/// a holder whose hosts ran out kept an address idle for a second while another waited),
/// and forgets those held by others that no request waits for. Ends with the frontier.
async fn keep(inner: std::sync::Weak<Inner>, period: Duration) {
    loop {
        tokio::time::sleep(period).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        let now = Instant::now();
        let mut addresses = inner.holds.lock();
        let mut idle = Vec::new();
        let mut renew = Vec::new();
        for (&address, at) in addresses.iter() {
            if at.asking.is_some() {
                continue;
            }
            let term = at.terms.term();
            let used = at.used.is_some_and(|used| now < used + period);
            match at.held_until {
                Some(_) if at.due_back(now) => idle.push(address),
                // Heard from while its requests there are out past its term: a holder
                // silent for four terms counts as gone (killed) in Redis.
                Some(_) if at.last_term => {
                    let quiet = at.asked.is_none_or(|asked| now >= asked + term / 2);
                    if at.record.in_flight > 0 && quiet {
                        renew.push(address);
                    }
                }
                Some(until) if used || at.record.in_flight > 0 => {
                    if until < now + term / 2 {
                        renew.push(address);
                    }
                }
                Some(_) => idle.push(address),
                None => {
                    let waited = at.elsewhere_until.is_none_or(|until| until <= now);
                    if waited && !used && at.record.in_flight == 0 {
                        idle.push(address);
                    }
                }
            }
        }
        for address in idle {
            if addresses
                .get(&address)
                .is_some_and(|at| at.held_until.is_some())
            {
                inner.give_back(&mut addresses, address);
            } else {
                addresses.remove(&address);
            }
        }
        for address in renew {
            if let Some(at) = addresses.get_mut(&address) {
                drop(inner.ask_hold(address, at));
            }
        }
    }
}
