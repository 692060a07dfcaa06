//! Politeness per address: the limits that the host names served by one IP address share.
//!
//! One server often answers for many names (shared hosting, a site's many subdomains): kept
//! polite per name alone, it would get a request from each of them at once. So a request
//! also takes its turn at the address its connection goes to: at most
//! [`AddressLimits::connections`] in flight there, and [`AddressLimits::delay`] between two
//! starts, whichever name they are for. This module knows nothing of DNS: the caller says
//! which address a host's request goes to, and asks for a turn before the request.
//!
//! A request that may not start now is told when it may ([`Turn::WaitUntil`]); its host is
//! given that instant as a ticket, so that waiting hosts take turns in the order they
//! asked, one delay apart, rather than all coming back at once and all but one being sent
//! away again. A host that comes back at its ticket starts then, or, when the host before
//! it was late and started less than a delay ago, a delay after that one (its ticket moved
//! to then; of several back late at once, each a delay after the one moved before it, and
//! hosts asking anew after them). While the address is at its connection limit, a host is
//! told so ([`Turn::Full`]): to ask again when one of the address's requests ends, or a
//! delay later (at least [`FULL_RETRY`]) at the latest, its ticket kept. A caller that waits
//! in place for a request of its own to end then takes the freed connection at once, where
//! one that came back at the later instant would leave it idle till then.
//!
//! The rule is [`AddressRecord`]'s; [`AddressGate`] keeps one per address for a process.
//! The shared frontier of `crates/shared` runs the same rule in the memory of the one
//! process that holds an address at a time (Redis passes the address between them), so that
//! processes sharing a crawl hold the limits together.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

/// How long a host waits for a turn at an address that is at its connection limit, at least.
pub const FULL_RETRY: Duration = Duration::from_millis(100);

/// How long after its instant a ticket is forgotten: its host did not come back (its URLs
/// were fetched by another process, or the crawl ended).
pub const TICKET_TTL: Duration = Duration::from_secs(600);

/// The limits one address's requests share, whatever names they are for.
///
/// # Example
///
/// ```
/// use std::time::Duration;
/// use frontier::AddressLimits;
///
/// let limits = AddressLimits { connections: 8, delay: Duration::from_millis(100) };
/// assert!(!limits.is_unlimited());
/// assert!(AddressLimits::default().is_unlimited());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AddressLimits {
    /// Requests in flight at one address, at most; 0 for no limit.
    pub connections: u32,
    /// The least time between two request starts at one address; zero for none.
    pub delay: Duration,
}

impl AddressLimits {
    /// Whether these limits hold nothing back (no connection limit, no delay).
    ///
    /// # Example
    ///
    /// ```
    /// let limits = frontier::AddressLimits { connections: 2, ..Default::default() };
    /// assert!(!limits.is_unlimited());
    /// ```
    pub fn is_unlimited(&self) -> bool {
        self.connections == 0 && self.delay.is_zero()
    }

    /// Whether `in_flight` requests fill the address.
    fn full(&self, in_flight: u32) -> bool {
        self.connections > 0 && in_flight >= self.connections
    }

    /// How long a host waits when the address is full: its delay, and at least
    /// [`FULL_RETRY`].
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Duration;
    /// let limits = frontier::AddressLimits { connections: 2, delay: Duration::from_secs(1) };
    /// assert_eq!(limits.full_wait(), Duration::from_secs(1));
    /// ```
    pub fn full_wait(&self) -> Duration {
        self.delay.max(FULL_RETRY)
    }
}

/// A request's turn at its address.
///
/// # Example
///
/// ```
/// use std::time::Instant;
/// use frontier::{AddressLimits, AddressRecord, Turn};
///
/// let mut address = AddressRecord::default();
/// assert_eq!(address.enter("a.example", Instant::now(), AddressLimits::default()), Turn::Go);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Turn {
    /// Start the request now; [`AddressRecord::leave`] when it ends.
    Go,
    /// Not before this instant: the host's request waits for it (its lease given back until
    /// then, so that the slot serves another host).
    WaitUntil(Instant),
    /// The address is at its connection limit: ask again when one of its requests ends, and
    /// at this instant at the latest.
    Full(Instant),
}

impl Turn {
    /// When to ask again at the latest (None: go now).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::Instant;
    /// use frontier::Turn;
    ///
    /// let now = Instant::now();
    /// assert_eq!(Turn::Go.wait(), None);
    /// assert_eq!(Turn::Full(now).wait(), Some(now));
    /// ```
    pub fn wait(&self) -> Option<Instant> {
        match *self {
            Turn::Go => None,
            Turn::WaitUntil(at) | Turn::Full(at) => Some(at),
        }
    }
}

/// One address's requests: how many are in flight, when the last started, and the tickets
/// of the hosts waiting for a turn.
///
/// # Example
///
/// ```
/// use std::time::{Duration, Instant};
/// use frontier::{AddressLimits, AddressRecord, Turn};
///
/// let limits = AddressLimits { connections: 0, delay: Duration::from_millis(100) };
/// let mut address = AddressRecord::default();
/// let t0 = Instant::now();
/// assert_eq!(address.enter("a.example", t0, limits), Turn::Go);
/// // Another name of the server: its turn a delay later, then the next one's.
/// let b = t0 + Duration::from_millis(100);
/// assert_eq!(address.enter("b.example", t0, limits), Turn::WaitUntil(b));
/// assert_eq!(address.enter("c.example", t0, limits), Turn::WaitUntil(b + Duration::from_millis(100)));
/// assert_eq!(address.enter("b.example", b, limits), Turn::Go);
/// ```
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AddressRecord {
    /// Requests started and not yet left.
    pub in_flight: u32,
    /// When the last request started.
    pub last_start: Option<Instant>,
    /// The earliest instant no ticket holds: the next host to ask without one waits for it.
    pub next_free: Option<Instant>,
    /// The hosts waiting for a turn, and when it is.
    pub tickets: HashMap<String, Instant>,
    /// The last start from which a ticket was last moved (its host came back after the host
    /// before it started late), and the turn it was moved to: the next ticket moved from
    /// the same start goes a delay after it.
    pub moved: Option<(Instant, Instant)>,
}

impl AddressRecord {
    /// Asks a turn for a request of `host` at `now`.
    pub fn enter(&mut self, host: &str, now: Instant, limits: AddressLimits) -> Turn {
        self.ask(host, now, limits, true)
    }

    /// Books `host`'s turn as [`enter`](Self::enter) would give it, without starting a
    /// request: [`Turn::Go`] when it may start now, the turn then kept for the host (others
    /// asking meanwhile wait a delay), until it enters; else `enter`'s answer, a
    /// [`Turn::WaitUntil`] keeping its turn as `enter` does. Asked before work that a
    /// request's turn follows (reading robots.txt, say), so that a request whose turn is far
    /// off goes back before the work, and one whose turn is now still has it after.
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{AddressLimits, AddressRecord, Turn};
    ///
    /// let limits = AddressLimits { connections: 0, delay: Duration::from_millis(100) };
    /// let mut address = AddressRecord::default();
    /// let t0 = Instant::now();
    /// assert_eq!(address.book("a.example", t0, limits), Turn::Go);
    /// assert_eq!(address.in_flight, 0);
    /// // a's turn is kept for it: b's is a delay on, and c's after.
    /// let b = t0 + Duration::from_millis(100);
    /// assert_eq!(address.book("b.example", t0, limits), Turn::WaitUntil(b));
    /// let c = b + Duration::from_millis(100);
    /// assert_eq!(address.enter("c.example", t0, limits), Turn::WaitUntil(c));
    /// assert_eq!(address.enter("a.example", t0, limits), Turn::Go);
    /// assert_eq!(address.enter("b.example", b, limits), Turn::Go);
    /// ```
    pub fn book(&mut self, host: &str, now: Instant, limits: AddressLimits) -> Turn {
        self.ask(host, now, limits, false)
    }

    /// [`enter`](Self::enter), or with `start` false [`book`](Self::book).
    fn ask(&mut self, host: &str, now: Instant, limits: AddressLimits, start: bool) -> Turn {
        self.forget_old_tickets(now);
        let ticket = self.tickets.get(host).copied();
        if let Some(at) = ticket
            && now < at
        {
            return Turn::WaitUntil(at);
        }
        if limits.full(self.in_flight) {
            return Turn::Full(now + limits.full_wait());
        }
        // A delay after the last start at least: `None` once it has passed.
        let spaced_at = self
            .last_start
            .map(|last| last + limits.delay)
            .filter(|at| *at > now);
        if ticket.is_some() {
            // Its turn, kept for it; a moment later when the host before it was late.
            return match spaced_at {
                None if !start => Turn::Go,
                None => {
                    self.tickets.remove(host);
                    self.start(now)
                }
                Some(spaced) => {
                    // Hosts that all come back late take turns a delay apart, not the same
                    // instant, at which all but one would be sent away again, each start
                    // costing as many wake-ups as hosts waited (at a delay near the timer's
                    // tick, where most come back late, a sixth to a quarter of a shared
                    // crawl's own CPU: docs/benchmarks.md, 2026-12-07, morning).
                    let at = match self.moved {
                        Some((from, to)) if Some(from) == self.last_start => to + limits.delay,
                        _ => spaced,
                    };
                    self.moved = self.last_start.map(|last| (last, at));
                    // Newcomers after them.
                    let after = at + limits.delay;
                    self.next_free = Some(self.next_free.map_or(after, |free| free.max(after)));
                    self.tickets.insert(host.to_owned(), at);
                    Turn::WaitUntil(at)
                }
            };
        }
        let spaced = spaced_at.is_none();
        let free = self.next_free.map_or(now, |free| free.max(now));
        if free <= now && spaced {
            self.next_free = Some(now + limits.delay);
            if !start {
                self.tickets.insert(host.to_owned(), now);
                return Turn::Go;
            }
            return self.start(now);
        }
        // The first instant no one holds, at least a delay after the last start.
        let at = self
            .last_start
            .map_or(free, |last| free.max(last + limits.delay));
        self.next_free = Some(at + limits.delay);
        self.tickets.insert(host.to_owned(), at);
        Turn::WaitUntil(at)
    }

    /// A request that [`Turn::Go`] started has ended.
    pub fn leave(&mut self) {
        self.in_flight = self.in_flight.saturating_sub(1);
    }

    fn start(&mut self, now: Instant) -> Turn {
        self.in_flight += 1;
        self.last_start = Some(now);
        Turn::Go
    }

    fn forget_old_tickets(&mut self, now: Instant) {
        if !self.tickets.is_empty() {
            self.tickets.retain(|_, at| *at + TICKET_TTL > now);
        }
    }

    /// Whether the record holds nothing a later request needs: none in flight, no ticket,
    /// and its last start more than a delay ago.
    fn idle(&self, now: Instant, limits: AddressLimits) -> bool {
        self.in_flight == 0
            && self.tickets.is_empty()
            && self.next_free.is_none_or(|free| free <= now)
            && self
                .last_start
                .is_none_or(|last| last + limits.delay <= now)
    }
}

/// The address records of one process, behind a lock: the embedded frontier's side of the
/// limits per address.
///
/// # Example
///
/// ```
/// use std::time::{Duration, Instant};
/// use frontier::{AddressGate, AddressLimits, Turn};
///
/// let gate = AddressGate::new(AddressLimits { connections: 1, delay: Duration::ZERO });
/// let server = "192.0.2.7".parse().unwrap();
/// let now = Instant::now();
/// assert_eq!(gate.enter(server, "a.example", now), Turn::Go);
/// assert!(matches!(gate.enter(server, "b.example", now), Turn::Full(_)));
/// gate.leave(server, now);
/// assert_eq!(gate.enter(server, "b.example", now), Turn::Go);
/// ```
#[derive(Debug)]
pub struct AddressGate {
    limits: AddressLimits,
    records: Mutex<HashMap<IpAddr, AddressRecord>>,
}

impl AddressGate {
    /// A gate holding every address to `limits`.
    pub fn new(limits: AddressLimits) -> AddressGate {
        AddressGate {
            limits,
            records: Mutex::new(HashMap::new()),
        }
    }

    /// The limits it holds addresses to.
    ///
    /// # Example
    ///
    /// ```
    /// let gate = frontier::AddressGate::new(Default::default());
    /// assert!(gate.limits().is_unlimited());
    /// ```
    pub fn limits(&self) -> AddressLimits {
        self.limits
    }

    /// Asks a turn at `address` for a request of `host` (see [`AddressRecord::enter`]).
    pub fn enter(&self, address: IpAddr, host: &str, now: Instant) -> Turn {
        if self.limits.is_unlimited() {
            return Turn::Go;
        }
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        records
            .entry(address)
            .or_default()
            .enter(host, now, self.limits)
    }

    /// What a request of `host` at `address` would be answered, without starting it (see
    /// [`AddressRecord::book`]).
    ///
    /// # Example
    ///
    /// ```
    /// use std::time::{Duration, Instant};
    /// use frontier::{AddressGate, AddressLimits, Turn};
    ///
    /// let gate = AddressGate::new(AddressLimits { connections: 0, delay: Duration::from_secs(1) });
    /// let server = "192.0.2.7".parse().unwrap();
    /// let now = Instant::now();
    /// assert_eq!(gate.book(server, "a.example", now), Turn::Go);
    /// assert_eq!(gate.enter(server, "a.example", now), Turn::Go);
    /// assert!(matches!(gate.book(server, "b.example", now), Turn::WaitUntil(_)));
    /// ```
    pub fn book(&self, address: IpAddr, host: &str, now: Instant) -> Turn {
        if self.limits.is_unlimited() {
            return Turn::Go;
        }
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        let record = records.entry(address).or_default();
        let turn = record.book(host, now, self.limits);
        // Nothing kept for a request that may go: the map keeps only addresses in use.
        if record.idle(now, self.limits) {
            records.remove(&address);
        }
        turn
    }

    /// A request at `address` that [`Turn::Go`] started has ended; an address left with
    /// nothing to remember is dropped, so that a crawl of many servers keeps only the busy
    /// ones.
    pub fn leave(&self, address: IpAddr, now: Instant) {
        if self.limits.is_unlimited() {
            return;
        }
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(record) = records.get_mut(&address) {
            record.leave();
            if record.idle(now, self.limits) {
                records.remove(&address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MS: Duration = Duration::from_millis(1);

    /// A record under a 100 ms delay and no connection limit, and its start.
    fn delayed() -> (AddressRecord, AddressLimits, Instant) {
        let limits = AddressLimits {
            connections: 0,
            delay: 100 * MS,
        };
        (AddressRecord::default(), limits, Instant::now())
    }

    #[test]
    fn waiting_hosts_take_turns_a_delay_apart_in_the_order_they_asked() {
        let (mut address, limits, t0) = delayed();
        assert_eq!(address.enter("h0", t0, limits), Turn::Go);
        let turns: Vec<Turn> = (1..=5)
            .map(|i| address.enter(&format!("h{i}"), t0 + MS, limits))
            .collect();
        let expected: Vec<Turn> = (1..=5)
            .map(|i| Turn::WaitUntil(t0 + i * 100 * MS))
            .collect();
        assert_eq!(turns, expected);
        // Each comes back at its turn and starts; asked early, it is told the same turn.
        assert_eq!(
            address.enter("h2", t0 + 150 * MS, limits),
            Turn::WaitUntil(t0 + 200 * MS)
        );
        for i in 1..=5 {
            assert_eq!(
                address.enter(&format!("h{i}"), t0 + i * 100 * MS, limits),
                Turn::Go
            );
            address.leave();
        }
        // A newcomer queues after them.
        assert_eq!(
            address.enter("h6", t0 + 500 * MS, limits),
            Turn::WaitUntil(t0 + 600 * MS)
        );
    }

    #[test]
    fn hosts_late_for_their_turns_still_start_a_delay_apart() {
        let (mut address, limits, t0) = delayed();
        assert_eq!(address.enter("a", t0, limits), Turn::Go);
        assert_eq!(
            address.enter("b", t0, limits),
            Turn::WaitUntil(t0 + 100 * MS)
        );
        assert_eq!(
            address.enter("c", t0, limits),
            Turn::WaitUntil(t0 + 200 * MS)
        );
        // Both back late, at once: one starts, the other waits a delay after it.
        let late = t0 + 500 * MS;
        assert_eq!(address.enter("b", late, limits), Turn::Go);
        assert_eq!(
            address.enter("c", late, limits),
            Turn::WaitUntil(late + 100 * MS)
        );
        assert_eq!(address.enter("c", late + 100 * MS, limits), Turn::Go);
        // One late by 5 ms: the next, on time, waits those 5 ms, keeping its place.
        assert_eq!(
            address.enter("d", late + 100 * MS, limits),
            Turn::WaitUntil(late + 200 * MS)
        );
        assert_eq!(
            address.enter("e", late + 100 * MS, limits),
            Turn::WaitUntil(late + 300 * MS)
        );
        assert_eq!(address.enter("d", late + 205 * MS, limits), Turn::Go);
        assert_eq!(
            address.enter("e", late + 300 * MS, limits),
            Turn::WaitUntil(late + 305 * MS)
        );
        assert_eq!(address.enter("e", late + 305 * MS, limits), Turn::Go);
    }

    #[test]
    fn hosts_all_back_late_at_once_are_given_turns_a_delay_apart() {
        let (mut address, limits, t0) = delayed();
        assert_eq!(address.enter("a", t0, limits), Turn::Go);
        let hosts = ["b", "c", "d", "e", "f"];
        for host in hosts {
            assert!(matches!(
                address.enter(host, t0, limits),
                Turn::WaitUntil(_)
            ));
        }
        // All back long after their turns, at once: one starts, each other its own turn.
        let late = t0 + 2000 * MS;
        assert_eq!(address.enter("b", late, limits), Turn::Go);
        let mut turns = Vec::new();
        for host in &hosts[1..] {
            turns.push(address.enter(host, late, limits).wait().expect("waits"));
        }
        let expected: Vec<Instant> = (1..5).map(|i| late + i * 100 * MS).collect();
        assert_eq!(turns, expected);
        // A newcomer after them; each back at its turn starts then.
        assert_eq!(
            address.enter("g", late, limits),
            Turn::WaitUntil(late + 500 * MS)
        );
        for (host, at) in hosts[1..].iter().zip(expected) {
            assert_eq!(address.enter(host, at, limits), Turn::Go, "{host}");
        }
    }

    #[test]
    fn a_full_address_sends_hosts_back_until_a_request_leaves() {
        let limits = AddressLimits {
            connections: 2,
            delay: Duration::ZERO,
        };
        let mut address = AddressRecord::default();
        let t0 = Instant::now();
        assert_eq!(address.enter("a", t0, limits), Turn::Go);
        assert_eq!(address.enter("b", t0, limits), Turn::Go);
        assert_eq!(address.enter("c", t0, limits), Turn::Full(t0 + FULL_RETRY));
        address.leave();
        assert_eq!(address.enter("c", t0 + MS, limits), Turn::Go);
        assert_eq!(address.in_flight, 2);
    }

    #[test]
    fn tickets_of_hosts_that_never_came_back_are_forgotten() {
        let (mut address, limits, t0) = delayed();
        assert_eq!(address.enter("a", t0, limits), Turn::Go);
        assert!(matches!(
            address.enter("gone", t0, limits),
            Turn::WaitUntil(_)
        ));
        assert_eq!(
            address.enter("a", t0 + TICKET_TTL + 200 * MS, limits),
            Turn::Go
        );
        assert!(address.tickets.is_empty());
    }

    /// Booking a turn before entering changes nothing of what entering answers: a request
    /// that may go is not started (its turn kept), one that must wait has the turn `enter`
    /// would give it.
    #[test]
    fn a_booked_turn_is_the_turn_entering_gives() {
        let limits = AddressLimits {
            connections: 2,
            delay: 100 * MS,
        };
        let t0 = Instant::now();
        let (mut booked, mut entered) = (AddressRecord::default(), AddressRecord::default());
        // Hosts asking at 30 ms steps, some twice, with requests leaving now and then.
        for step in 0..40u32 {
            let now = t0 + 30 * MS * step;
            let host = ["a", "b", "c", "a", "d"][step as usize % 5];
            let (in_flight, last_start) = (booked.in_flight, booked.last_start);
            let turn = booked.book(host, now, limits);
            if turn == Turn::Go {
                assert_eq!(booked.in_flight, in_flight, "step {step}: nothing started");
                assert_eq!(booked.last_start, last_start, "step {step}");
                // Kept for it: another host waits.
                let mut other = booked.clone();
                assert!(other.enter("z", now, limits) != Turn::Go, "step {step}");
            }
            let answer = entered.enter(host, now, limits);
            match answer {
                Turn::Go => assert_eq!(turn, Turn::Go, "step {step}"),
                wait => assert_eq!(turn, wait, "step {step}"),
            }
            assert_eq!(booked.enter(host, now, limits), answer, "step {step}");
            assert_eq!(booked, entered, "step {step}");
            if step % 3 == 2 {
                booked.leave();
                entered.leave();
            }
        }
    }

    #[test]
    fn the_gate_keeps_only_busy_addresses() {
        let gate = AddressGate::new(AddressLimits {
            connections: 4,
            delay: 10 * MS,
        });
        let t0 = Instant::now();
        for i in 0..100u8 {
            let ip = IpAddr::from([192, 0, 2, i]);
            assert_eq!(gate.book(ip, "h", t0), Turn::Go);
            assert_eq!(gate.enter(ip, "h", t0), Turn::Go);
            gate.leave(ip, t0 + 20 * MS);
        }
        assert!(gate.records.lock().unwrap().is_empty());
    }
}
