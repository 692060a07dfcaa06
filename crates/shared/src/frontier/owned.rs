//! A bucket this process owns: the hosts of it that have work, scheduled in this process's
//! memory by `frontier::HostRecord` (the embedded frontier's rules, the same code), and what
//! its next batch script is to write to Redis so that another process can take the bucket
//! over: leases ended, URLs to retry, URLs taken from their hosts' queues, host states.
//!
//! No I/O here: [`Owned`] is handed what Redis answered and asked what to send, so that the
//! conformance table runs against it as it runs against the embedded frontier's queues.

use std::collections::{BTreeSet, HashMap, VecDeque};
use std::time::{Duration, Instant};

use frontier::{Fate, HostRecord, Outcome, Politeness, Started};

use crate::scripts::HostState;

/// How far ahead of a host's next start its URLs are taken from Redis: a URL is there when
/// the host is ready, rather than a round trip after, though the batch that takes it waits
/// for more steps (longer than that wait, `batch::LINGER_PACED`, and a round trip).
pub(crate) const TAKE_AHEAD: Duration = Duration::from_millis(200);

/// What an owned bucket hands a worker.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Pick {
    /// A lease.
    Lease(Taken),
    /// Nothing leasable before this instant (or before URLs come from Redis).
    WaitUntil(Instant),
    /// Nothing: no host has work, or every host with work has all its connections out.
    Nothing,
}

/// A lease handed out by an owned bucket.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Taken {
    /// Its token, under which Redis holds its URL in flight.
    pub(crate) token: u64,
    /// Its host.
    pub(crate) host: String,
    /// Its queue entry: "attempts depth url[ from][ ~memo]".
    pub(crate) entry: String,
    /// The attempt it is (1 for a URL never tried).
    pub(crate) attempts: u32,
    /// Handed out only to be recorded: its host was given up.
    pub(crate) given_up: bool,
}

/// A host of the bucket with work, or with leases out.
#[derive(Debug)]
struct Host {
    record: HostRecord,
    /// Leases out.
    active: u32,
    /// Its delay as stored: its own (from the settings, or its robots.txt's), or None for
    /// the crawl's.
    delay: Option<Duration>,
    /// Its connection limit.
    connections: u32,
    /// URLs taken from its queue in Redis, first first: in flight there under their
    /// tokens, not handed out yet.
    taken: VecDeque<(u64, String)>,
    /// Its queue in Redis may hold more URLs.
    more: bool,
    /// Its place in [`Owned::ready`], if it has one (see [`Place`]).
    at: Option<Place>,
    /// Changed since last written.
    dirty: bool,
}

/// A lease handed out and not ended.
#[derive(Debug)]
struct Out {
    host: String,
    entry: String,
    started: Started,
}

/// The changes an owned bucket's next batch script writes (see [`Owned::take_log`]).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct Log {
    /// Leases ended: their tokens leave the in-flight hash. Not the log's own: each is
    /// [`Ended::lease`], added by the caller to the batch that carries its page's links
    /// (see [`Owned::complete`]).
    pub(crate) ended: Vec<EndedLease>,
    /// URLs taken and given back untaken (the bucket let go): first of their queues again.
    pub(crate) back: Vec<u64>,
    /// Host states to store.
    pub(crate) states: Vec<(String, HostState)>,
    /// Hosts to take URLs of, and how many each.
    pub(crate) wanted: Vec<(String, usize)>,
    /// Hosts given up.
    pub(crate) given_up_hosts: i64,
    /// Hosts new to the crawl.
    pub(crate) new_hosts: i64,
    /// Links read from the bucket's list (see [`super::links`]), and the bucket's count of
    /// links read before them: trimmed by the batch if that count is still this one.
    pub(crate) links_read: (usize, i64),
}

/// A lease ended, as the batch script writes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct EndedLease {
    /// Its token.
    pub(crate) token: u64,
    /// The lease as Redis holds it under its token: its host, a space and its entry as
    /// taken. The lease that ends is this one, no other the token may hold.
    pub(crate) held: String,
    /// The entry its URL is queued again with, at the back of its host's queue, when
    /// retried.
    pub(crate) retry: Option<String>,
    /// It gave its host up: the answer counts the URLs the host has queued.
    pub(crate) gave_up_host: bool,
}

impl EndedLease {
    /// Done, its host's queue not asked: how nearly every lease ends, which the batch
    /// script takes in fewer arguments and answers only when it was not in flight.
    pub(crate) fn plain(&self) -> bool {
        self.retry.is_none() && !self.gave_up_host
    }
}

/// What became of a lease that ended.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Ended {
    /// The URL's fate.
    pub(crate) fate: Fate,
    /// URLs of its host taken from Redis and not handed out yet: given up with the host
    /// when it was, besides those its Redis queue holds.
    pub(crate) taken: usize,
    /// The end to write (whether it gave its host up among it), in the batch script that
    /// admits its page's links and in no earlier one: a page done in Redis before its links are queued there loses them when
    /// the process dies between the two, or Redis goes back to a state between them.
    pub(crate) lease: EndedLease,
}

/// A bucket this process owns (see the module's doc).
#[derive(Debug)]
pub(crate) struct Owned {
    /// The epoch of this process's ownership: Redis refuses a batch of another.
    pub(crate) epoch: i64,
    politeness: Politeness,
    hosts: HashMap<String, Host>,
    /// Hosts that may have a lease, by the instant they may: those with work (URLs taken,
    /// or more in Redis) and a free connection.
    ready: BTreeSet<(Place, String)>,
    /// Leases handed out, by token.
    out: HashMap<u64, Out>,
    /// Hosts whose URLs were asked of Redis and not answered yet.
    asked: HashMap<String, usize>,
    /// This process lets the bucket go: it hands out no more leases, nor takes URLs.
    letting_go: bool,
    /// What the next batch script writes, gathered (the leases ended go with their
    /// pages' links: see [`Ended::lease`]).
    back: Vec<u64>,
    given_up_hosts: i64,
    new_hosts: i64,
    /// When its last log was taken (its last batch): None, never.
    logged: Option<Instant>,
    /// Other processes' links wait in the bucket's list, as its last batch said.
    pub(crate) links_waiting: bool,
    /// A read of the bucket's list is under way (until its batch is answered): one at a
    /// time, so that each trims what it read.
    pub(crate) reading_links: bool,
}

impl Owned {
    /// A bucket owned from epoch `epoch`, with nothing loaded.
    pub(crate) fn new(epoch: i64, politeness: Politeness) -> Owned {
        Owned {
            epoch,
            politeness,
            hosts: HashMap::new(),
            ready: BTreeSet::new(),
            out: HashMap::new(),
            asked: HashMap::new(),
            letting_go: false,
            back: Vec::new(),
            given_up_hosts: 0,
            new_hosts: 0,
            logged: None,
            links_waiting: false,
            reading_links: false,
        }
    }

    /// Host `host` has URLs queued in Redis (it is in the bucket's work, or another
    /// process's links went to its empty queue), with `stored` its state as Redis holds
    /// it (None: never stored, a host new to the crawl). `now` is this instant, `server`
    /// the server's clock now (ms). `reaped`: the previous owner had leases of it out when
    /// this process took the bucket over, which may have started after its state was
    /// stored: its next start waits its delay from now.
    pub(crate) fn has_work(
        &mut self,
        host: &str,
        stored: Option<&HostState>,
        now: Instant,
        server: i64,
        reaped: bool,
    ) {
        if !self.hosts.contains_key(host) {
            let own = self.politeness.host(host);
            let mut h = Host {
                record: HostRecord::default(),
                active: 0,
                delay: own.delay,
                connections: own
                    .connections
                    .unwrap_or(self.politeness.connections_per_host())
                    .max(1),
                taken: VecDeque::new(),
                more: true,
                at: None,
                dirty: false,
            };
            match stored {
                Some(state) => {
                    state.apply(&mut h.record, &mut h.delay, now, server);
                }
                None => {
                    self.new_hosts += 1;
                    h.dirty = true;
                }
            }
            if reaped && !h.record.given_up {
                let d = self.delay_of(&h);
                let wait = now.checked_add(d).unwrap_or(now);
                h.record.next_allowed = Some(h.record.next_allowed.map_or(wait, |t| t.max(wait)));
            }
            self.hosts.insert(host.to_owned(), h);
        }
        if let Some(h) = self.hosts.get_mut(host) {
            h.more = true;
        }
        self.reschedule(host);
    }

    /// URLs taken from `host`'s queue by the batch script, each under its token, and how
    /// many its queue holds after.
    pub(crate) fn taken(&mut self, host: &str, urls: Vec<(u64, String)>, left: i64) {
        self.asked.remove(host);
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        h.taken.extend(urls);
        h.more = left > 0;
        self.reschedule(host);
        self.forget_if_idle(host);
    }

    /// The place (its next start allowed) of the host [`pick`](Self::pick) would lease at
    /// `now`, if it would: what `SharedFrontier::next` orders the buckets by.
    pub(crate) fn next_place(&self, now: Instant) -> Option<Place> {
        if self.letting_go {
            return None;
        }
        self.first_ready(now).ok().map(|(at, _)| at)
    }

    /// Whether a host whose turn comes by `by` has no URL taken, nor asked: its bucket's
    /// next batch, which takes its URLs, is not to wait for more steps.
    pub(crate) fn wants_urls_by(&self, by: Instant) -> bool {
        for (at, host) in &self.ready {
            if at.is_some_and(|at| at > by) {
                return false;
            }
            if self
                .hosts
                .get(host)
                .is_some_and(|h| h.more && h.taken.is_empty() && !self.asked.contains_key(host))
            {
                return true;
            }
        }
        false
    }

    /// The first host in `ready` at `now` with a URL taken, and its place; else when to
    /// look again (the next place, or `now` while hosts wait for their URLs), if ever.
    fn first_ready(&self, now: Instant) -> Result<(Place, &String), Option<Instant>> {
        let mut waiting_for_urls = false;
        for (at, host) in &self.ready {
            if let Some(at) = at.filter(|&at| at > now) {
                return Err(Some(if waiting_for_urls { now } else { at }));
            }
            if self.hosts.get(host).is_some_and(|h| !h.taken.is_empty()) {
                return Ok((*at, host));
            }
            // Its URLs are on their way (see `take_log`).
            waiting_for_urls = true;
        }
        Err(waiting_for_urls.then_some(now))
    }

    /// The next lease at `now`, if a host is ready and has a URL taken from Redis.
    pub(crate) fn pick(&mut self, now: Instant) -> Pick {
        if self.letting_go {
            return Pick::Nothing;
        }
        let host = match self.first_ready(now) {
            Ok((_, host)) => host.clone(),
            Err(Some(at)) => return Pick::WaitUntil(at),
            Err(None) => return Pick::Nothing,
        };
        // Found with a URL taken just now, under the same borrow of `self`.
        let Some(h) = self.hosts.get_mut(&host) else {
            return Pick::Nothing;
        };
        let Some((token, entry)) = h.taken.pop_front() else {
            return Pick::Nothing;
        };
        let attempts = entry_attempts(&entry) + 1;
        let d = delay_with(&self.politeness, h.delay);
        let started = h.record.start(now, d, attempts);
        h.active += 1;
        // Not written for the start: a host with a lease out is reaped by a next owner
        // (its start waits a delay from the take-over), and the lease's end writes it.
        let given_up = started.given_up;
        self.out.insert(
            token,
            Out {
                host: host.clone(),
                entry: entry.clone(),
                started,
            },
        );
        self.reschedule(&host);
        Pick::Lease(Taken {
            token,
            host,
            entry,
            attempts,
            given_up,
        })
    }

    /// Ends lease `token` with its fetch's outcome at `now`: None if this bucket did not
    /// hand it out. The end is the caller's to write ([`Ended::lease`]).
    pub(crate) fn complete(&mut self, token: u64, outcome: Outcome, now: Instant) -> Option<Ended> {
        let out = self.out.remove(&token)?;
        let politeness = self.politeness.clone();
        let h = self.hosts.get_mut(&out.host)?;
        h.active = h.active.saturating_sub(1);
        h.dirty = true;
        let d = delay_with(&politeness, h.delay);
        let settled = h.record.settle(&out.started, outcome, now, d, &politeness);
        let mut retry = None;
        if let Fate::Retried { .. } = settled.fate {
            let (attempts, rest) = out.entry.split_once(' ').unwrap_or(("0", &out.entry));
            let attempts: u32 = attempts.parse().unwrap_or(0);
            retry = Some(format!("{} {rest}", attempts + 1));
            h.more = true;
        }
        let lease = EndedLease {
            token,
            held: format!("{} {}", out.host, out.entry),
            retry,
            gave_up_host: settled.gave_up_host,
        };
        if settled.gave_up_host {
            self.given_up_hosts += 1;
        }
        let taken = h.taken.len();
        self.reschedule(&out.host);
        self.forget_if_idle(&out.host);
        Some(Ended {
            fate: settled.fate,
            taken,
            lease,
        })
    }

    /// Gives lease `token` back unfetched at `now`: its URL first of its host's again, and
    /// the host not leased again before `until` when given (its address's turn), the delay
    /// its start took given back. False if this bucket did not hand it out.
    pub(crate) fn give_back(&mut self, token: u64, now: Instant, until: Option<Instant>) -> bool {
        let Some(out) = self.out.remove(&token) else {
            return false;
        };
        let politeness = self.politeness.clone();
        let Some(h) = self.hosts.get_mut(&out.host) else {
            return false;
        };
        h.active = h.active.saturating_sub(1);
        match until.filter(|&t| t > now) {
            // Its request never went out (it waits for its address's turn): not written,
            // as Redis's state (its start, or what was before it) keeps the host at least
            // as far off, and the address's turn is the address's own.
            Some(until) => {
                h.record
                    .give_back_start(&out.started, delay_with(&politeness, h.delay));
                let next = h.record.next_allowed.map_or(until, |t| t.max(until));
                h.record.next_allowed = Some(next);
            }
            // Its request may have gone out (a crawl stopped mid-fetch): its start is kept,
            // and written, as the URL may go back to its queue (the bucket handed over)
            // with no lease left out for a next owner to reap the host by.
            None => h.dirty = true,
        }
        // Still in flight in Redis under its token: it goes back to the others' front.
        h.taken.push_front((token, out.entry));
        self.reschedule(&out.host);
        true
    }

    /// Sets `host`'s delay (its robots.txt's `Crawl-delay`, capped and floored by the
    /// caller), spacing its next start from its last by it. False if the host is not here.
    pub(crate) fn crawl_delay(&mut self, host: &str, delay: Duration) -> bool {
        let Some(h) = self.hosts.get_mut(host) else {
            return false;
        };
        h.delay = Some(delay);
        h.record.space_starts(delay);
        h.dirty = true;
        self.reschedule(host);
        true
    }

    /// What the next batch script writes, taken (but the leases ended: see
    /// [`Ended::lease`]): URLs given back, the states of the hosts changed (times as the
    /// server's clock, `server` ms at `now`), and the URLs to take for hosts ready by `now`
    /// plus [`TAKE_AHEAD`] with at most three quarters as many taken as connections free (and
    /// one).
    pub(crate) fn take_log(&mut self, now: Instant, server: i64) -> Log {
        self.logged = Some(now);
        let mut wanted = Vec::new();
        let horizon = now.checked_add(TAKE_AHEAD).unwrap_or(now);
        // A bucket being let go takes no more URLs.
        let ready = if self.letting_go {
            None
        } else {
            Some(&self.ready)
        };
        for (at, host) in ready.into_iter().flatten() {
            if at.is_some_and(|at| at > horizon) {
                break;
            }
            let h = &self.hosts[host];
            // Taken up to a URL more than its free connections, but only once at most three
            // quarters of that is left: a host of many connections topped up by the URL or
            // two each batch handed out cost Redis a `LPOP` and an `LLEN` a page in a broad
            // crawl. (Half was as cheap, but a host fetched many at once ran dry before the
            // take came back from a Redis 4 ms away.)
            let full = h.connections.saturating_sub(h.active) as usize + 1;
            let want = full.saturating_sub(h.taken.len());
            if h.more && h.taken.len() * 4 <= full * 3 && !self.asked.contains_key(host) {
                wanted.push((host.clone(), want));
            }
        }
        for (host, n) in &wanted {
            self.asked.insert(host.clone(), *n);
        }
        let mut states = Vec::new();
        for (host, h) in self.hosts.iter_mut() {
            if std::mem::take(&mut h.dirty) {
                states.push((host.clone(), HostState::of(&h.record, h.delay, now, server)));
            }
        }
        Log {
            ended: Vec::new(),
            back: std::mem::take(&mut self.back),
            states,
            wanted,
            given_up_hosts: std::mem::take(&mut self.given_up_hosts),
            new_hosts: std::mem::take(&mut self.new_hosts),
            // Set by the batch that carries the read's links (see `links`).
            links_read: (0, 0),
        }
    }

    /// Gives back every URL taken from Redis and not handed out, in the next batch: when
    /// this process lets the bucket go. No lease is handed out after.
    pub(crate) fn give_back_untaken(&mut self) -> usize {
        self.letting_go = true;
        let before = self.back.len();
        for h in self.hosts.values_mut() {
            self.back.extend(h.taken.drain(..).map(|(token, _)| token));
            h.more = true;
        }
        self.back.len() - before
    }

    /// Keeps a bucket this process was letting go (the process it was to go to left, or
    /// was no longer counted present): it hands out leases and takes URLs again, its URLs
    /// given back taken anew. Answers whether it was being let go. Left letting go, it
    /// would stay busy and lease nothing for ever: a crawl that hung.
    pub(crate) fn keep(&mut self) -> bool {
        if !std::mem::replace(&mut self.letting_go, false) {
            return false;
        }
        let hosts: Vec<String> = self.hosts.keys().cloned().collect();
        for host in hosts {
            self.reschedule(&host);
        }
        true
    }

    /// Whether this bucket is being let go (see [`Owned::give_back_untaken`]).
    pub(crate) fn letting_go(&self) -> bool {
        self.letting_go
    }

    /// Leases handed out and not ended.
    pub(crate) fn leases_out(&self) -> usize {
        self.out.len()
    }

    /// Whether this bucket has hosts with work, or leases out.
    pub(crate) fn is_busy(&self) -> bool {
        !self.ready.is_empty() || !self.out.is_empty()
    }

    /// Whether no batch took its log within `within` before `now`: other processes' links
    /// to its hosts wait in Redis until one does.
    pub(crate) fn is_quiet(&self, now: Instant, within: Duration) -> bool {
        self.logged
            .is_none_or(|at| now.saturating_duration_since(at) >= within)
    }

    /// URLs taken from Redis not yet leased.
    pub(crate) fn untaken(&self) -> usize {
        self.hosts.values().map(|h| h.taken.len()).sum()
    }

    fn delay_of(&self, h: &Host) -> Duration {
        delay_with(&self.politeness, h.delay)
    }

    /// Puts `host` in [`Owned::ready`] at the instant its next lease may start, or takes it
    /// out: it is there exactly when it has work and a free connection. A given-up host's
    /// URLs go out at once, to be recorded.
    fn reschedule(&mut self, host: &str) {
        let Some(h) = self.hosts.get_mut(host) else {
            return;
        };
        if let Some(at) = h.at.take() {
            self.ready.remove(&(at, host.to_owned()));
        }
        let work = !h.taken.is_empty() || h.more;
        if work && h.active < h.connections {
            let at = match h.record.given_up {
                true => None,
                false => h.record.next_allowed,
            };
            h.at = Some(at);
            self.ready.insert((at, host.to_owned()));
        }
    }

    /// Drops from memory a host with nothing to do (no work, no lease out, its state
    /// written): Redis holds its state, read again when it has work.
    fn forget_if_idle(&mut self, host: &str) {
        if let Some(h) = self.hosts.get(host)
            && !h.more
            && h.taken.is_empty()
            && h.active == 0
            && !h.dirty
            && !self.asked.contains_key(host)
        {
            self.hosts.remove(host);
        }
    }

    /// Reads what the batch script that wrote `log` answered: the URLs it took, and the
    /// hosts other processes' links gave work (states as stored, the server's clock
    /// `server` ms at `now`).
    pub(crate) fn answered(
        &mut self,
        log: &Log,
        reply: super::batch::OwnerReply,
        now: Instant,
        server: i64,
    ) {
        for ((host, _), (urls, left)) in log.wanted.iter().zip(reply.taken) {
            self.taken(host, urls, left);
        }
        for (host, state) in reply.given {
            self.has_work(&host, state.as_ref(), now, server, false);
        }
        self.forget_idle();
    }

    /// Drops from memory the hosts with nothing to do whose states were written.
    pub(crate) fn forget_idle(&mut self) {
        let idle: Vec<String> = self
            .hosts
            .iter()
            .filter(|(_, h)| !h.more && h.taken.is_empty() && h.active == 0 && !h.dirty)
            .map(|(host, _)| host.clone())
            .collect();
        for host in idle {
            self.forget_if_idle(&host);
        }
    }
}

/// When a host may have its next lease: None for at once (never started, or given up:
/// its URLs go out to be recorded), which sorts first.
pub(crate) type Place = Option<Instant>;

/// A host's delay: its own as stored, or the crawl's.
fn delay_with(politeness: &Politeness, own: Option<Duration>) -> Duration {
    own.unwrap_or(politeness.delay())
}

/// The attempts a queue entry says were made before (its first field).
fn entry_attempts(entry: &str) -> u32 {
    entry
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// What a pick answers in the conformance table's terms, its times in ms from `t0`; None
/// when the bucket needs URLs first (a batch). Both tables' harnesses (Redis in memory here,
/// a real one in `scripts/conformance.rs`) read picks so.
#[cfg(test)]
pub(crate) fn leased(
    pick: Pick,
    now: Instant,
    t0: Instant,
) -> Option<Result<frontier::conformance::Leased<u64>, String>> {
    use frontier::conformance::{Leased, url_number};
    Some(match pick {
        Pick::Lease(taken) => {
            let mut parts = taken.entry.splitn(4, ' ');
            let Some(url) = parts.nth(2) else {
                return Some(Err("an entry without its URL".into()));
            };
            let (_, memo) = super::batch::entry_tail(parts.next());
            url_number(url).map(|url| Leased::Granted {
                lease: taken.token,
                url,
                attempts: taken.attempts,
                given_up: taken.given_up,
                memo,
            })
        }
        Pick::WaitUntil(t) if t > now => {
            Ok(Leased::WaitUntil(t.duration_since(t0).as_millis() as u64))
        }
        Pick::WaitUntil(_) => return None,
        Pick::Nothing => Ok(Leased::Nothing),
    })
}

#[cfg(test)]
mod tests {
    use frontier::conformance::{CASES, Case, HOST, Leased, Store, memo, run};

    use super::*;
    use crate::frontier::batch::memo_text;

    /// An owned bucket with Redis played by a queue in memory: each lease asked for runs
    /// the bucket's batch first, as a worker finding no URL taken makes its process do.
    struct Harness {
        owned: Owned,
        queue: VecDeque<String>,
        t0: Instant,
        tokens: u64,
        stored: Option<HostState>,
    }

    impl Harness {
        fn new(case: &Case) -> Harness {
            Harness {
                owned: Owned::new(1, case.settings.politeness()),
                queue: VecDeque::new(),
                t0: Instant::now(),
                tokens: 0,
                stored: None,
            }
        }

        fn at(&self, ms: u64) -> Instant {
            self.t0 + Duration::from_millis(ms)
        }

        /// The batch script, on the queue in memory; its server clock is the case's ms.
        fn batch(&mut self, now: Instant) {
            let server = now.duration_since(self.t0).as_millis() as i64 + 1_000_000;
            let log = self.owned.take_log(now, server);
            if let Some((_, state)) = log.states.into_iter().last() {
                self.stored = Some(state);
            }
            for (host, n) in log.wanted {
                let mut urls = Vec::new();
                while urls.len() < n {
                    let Some(entry) = self.queue.pop_front() else {
                        break;
                    };
                    self.tokens += 1;
                    urls.push((self.tokens, entry));
                }
                self.owned.taken(&host, urls, self.queue.len() as i64);
            }
        }
    }

    impl Store for Harness {
        type Lease = u64;

        fn push(&mut self, n: u32) -> Result<(), String> {
            let memo = memo(n)
                .map(|m| format!(" {}", memo_text(&m)))
                .unwrap_or_default();
            let was_empty = self.queue.is_empty();
            self.queue
                .push_back(format!("0 0 https://{HOST}/{n}{memo}"));
            if was_empty {
                let now = self.t0;
                let stored = self.stored.clone();
                self.owned
                    .has_work(HOST, stored.as_ref(), now, 1_000_000, false);
            }
            Ok(())
        }

        fn lease(&mut self, at: u64) -> Result<Leased<u64>, String> {
            let now = self.at(at);
            for _ in 0..3 {
                self.batch(now);
                if let Some(leased) = leased(self.owned.pick(now), now, self.t0) {
                    return leased;
                }
            }
            Err("no lease after three batches".into())
        }

        fn complete(
            &mut self,
            lease: u64,
            outcome: Outcome,
            at: u64,
        ) -> Result<(Fate, Option<u64>), String> {
            let ended = self
                .owned
                .complete(lease, outcome, self.at(at))
                .ok_or("a foreign lease")?;
            // Written at once, as the batch of the page's links writes it.
            self.queue.extend(ended.lease.retry);
            let waiting = self.queue.len() + ended.taken;
            Ok((
                ended.fate,
                ended.lease.gave_up_host.then_some(waiting as u64),
            ))
        }

        fn crawl_delay(&mut self, delay: u64) -> Result<(), String> {
            self.owned.crawl_delay(HOST, Duration::from_millis(delay));
            Ok(())
        }

        fn abandon(&mut self, lease: u64, at: u64, until: Option<u64>) -> Result<(), String> {
            let until = until.map(|u| self.at(u));
            match self.owned.give_back(lease, self.at(at), until) {
                true => Ok(()),
                false => Err("a foreign lease".into()),
            }
        }
    }

    #[test]
    fn an_owned_bucket_passes_the_table() {
        for case in CASES {
            run(case, &mut Harness::new(case)).unwrap();
        }
    }

    #[test]
    fn a_host_state_stored_reads_back_as_it_was() {
        let now = Instant::now();
        let record = HostRecord {
            next_allowed: Some(now + Duration::from_millis(1500)),
            last_start: Some(now - Duration::from_millis(500)),
            errors_in_row: 3,
            failing_since: Some(now - Duration::from_secs(20)),
            given_up: false,
        };
        let state = HostState::of(&record, Some(Duration::from_secs(4)), now, 5_000_000);
        let back = HostState::decode(&state.encode()).unwrap();
        assert_eq!(back, state);
        // Read by another process whose clock maps onto the server's otherwise.
        let later = now + Duration::from_secs(100);
        let (mut read, mut delay) = (HostRecord::default(), None);
        back.apply(&mut read, &mut delay, later, 5_000_000);
        assert_eq!(delay, Some(Duration::from_secs(4)));
        assert_eq!(read.errors_in_row, 3);
        assert_eq!(read.next_allowed, Some(later + Duration::from_millis(1500)));
        assert_eq!(read.last_start, Some(later - Duration::from_millis(500)));
    }

    /// Regression: a lease's end went in the owner's log, written by whichever batch of
    /// the bucket went next, while its page's links waited for a later one: Redis rolled
    /// back to a snapshot between the two had the page done and its links never queued
    /// (a process killed there did the same). The end is the completion's to send, with
    /// the links.
    #[test]
    fn a_leases_end_is_not_in_the_log_but_handed_to_the_completion() {
        let mut owned = Owned::new(1, Politeness::default());
        let now = Instant::now();
        owned.has_work("a.example", None, now, 1, false);
        owned.taken("a.example", vec![(7, "0 0 https://a.example/".into())], 0);
        let Pick::Lease(taken) = owned.pick(now) else {
            panic!("a lease");
        };
        let ended = owned
            .complete(taken.token, Outcome::Success, now)
            .expect("its own lease");
        assert_eq!(
            ended.lease,
            EndedLease {
                token: 7,
                held: "a.example 0 0 https://a.example/".into(),
                retry: None,
                gave_up_host: false,
            }
        );
        let log = owned.take_log(now, 1);
        assert!(log.ended.is_empty(), "{log:?}");
        assert_eq!(
            log.states.len(),
            1,
            "the host's state is the log's: {log:?}"
        );
    }

    /// A host's state goes to Redis with its leases' ends (and an abandon's), not with
    /// their starts nor when one goes back for its address's turn: a broad crawl held to its servers wrote 4.6
    /// host states a page where it fetched one (docs/benchmarks.md, 2026-12-07). A next
    /// owner loses nothing by it: a host with a lease out when it takes the bucket over is
    /// reaped, its next start a delay from the take-over.
    #[test]
    fn a_host_state_is_written_when_a_lease_ends_not_when_it_starts_or_goes_back() {
        let mut owned = Owned::new(1, Politeness::default());
        let now = Instant::now();
        let urls = (1..=2)
            .map(|n| (n, format!("0 0 https://a.example/{n}")))
            .collect();
        owned.has_work("a.example", None, now, 1, false);
        owned.taken("a.example", urls, 0);
        // New to the crawl: written once.
        assert_eq!(owned.take_log(now, 1).states.len(), 1);
        let Pick::Lease(taken) = owned.pick(now) else {
            panic!("a lease");
        };
        assert_eq!(
            owned.take_log(now, 1).states,
            vec![],
            "a start is not written"
        );
        let turn = now + Duration::from_secs(1);
        assert!(owned.give_back(taken.token, now, Some(turn)));
        assert_eq!(
            owned.take_log(now, 1).states,
            vec![],
            "a give-back for a turn is not"
        );
        let Pick::Lease(taken) = owned.pick(turn) else {
            panic!("the lease again, at its address's turn");
        };
        owned.complete(taken.token, Outcome::Success, turn).unwrap();
        let states = owned.take_log(turn, 1_001).states;
        assert_eq!(states.len(), 1, "an end is written");
        // With the start it ended: the next start a delay after it.
        let (mut read, mut delay) = (HostRecord::default(), None);
        states[0].1.apply(&mut read, &mut delay, turn, 1_001);
        assert_eq!(read.last_start, Some(turn));
        // A lease given back with no turn to wait for (its crawl stopped, its request
        // perhaps out) keeps its start, and writes it: its URL may go back to its queue with
        // no lease out to reap the host by.
        let later = turn + Duration::from_secs(2);
        let Pick::Lease(taken) = owned.pick(later) else {
            panic!("the second URL");
        };
        assert!(owned.give_back(taken.token, later, None));
        let states = owned.take_log(later, 2_001).states;
        assert_eq!(states.len(), 1, "an abandon is written");
        states[0].1.apply(&mut read, &mut delay, later, 2_001);
        assert_eq!(read.last_start, Some(later));
    }

    #[test]
    fn a_host_of_many_connections_is_topped_up_in_few_larger_takes() {
        let politeness = Politeness::builder()
            .connections_per_host(8)
            .delay(Duration::ZERO)
            .build()
            .unwrap();
        let mut owned = Owned::new(1, politeness);
        let now = Instant::now();
        owned.has_work("a.example", None, now, 1, false);
        // Idle: its connections and one more.
        let log = owned.take_log(now, 1);
        assert_eq!(log.wanted, [("a.example".to_owned(), 9)]);
        let urls = (1..=9)
            .map(|i| (i, format!("0 0 https://a.example/{i}")))
            .collect();
        owned.taken("a.example", urls, 50);
        // Fetched one at a time, as a broad crawl's many hosts are: no take while more
        // than three quarters of the nine is left (each page's was a command or two of
        // Redis)...
        for token in 1..=2 {
            assert!(matches!(owned.pick(now), Pick::Lease(t) if t.token == token));
            assert!(owned.complete(token, Outcome::Success, now).is_some());
            assert!(owned.take_log(now, 1).wanted.is_empty(), "{token}");
        }
        // ...then all that is lacking, in one take.
        assert!(matches!(owned.pick(now), Pick::Lease(t) if t.token == 3));
        assert!(owned.complete(3, Outcome::Success, now).is_some());
        let log = owned.take_log(now, 1);
        assert_eq!(log.wanted, [("a.example".to_owned(), 3)]);
    }

    /// Regression: a bucket being let go to a process that then left (its crawl over, or
    /// its presence lapsed) stayed letting go: busy, leasing nothing, and the crawl hung
    /// (`domain_budgets_hold_across_processes` in CI).
    #[test]
    fn a_bucket_kept_after_being_let_go_leases_again() {
        let mut owned = Owned::new(1, Politeness::default());
        let now = Instant::now();
        owned.has_work("a.example", None, now, 1, false);
        owned.taken("a.example", vec![(7, "0 0 https://a.example/1".into())], 1);
        assert_eq!(owned.give_back_untaken(), 1);
        assert_eq!(owned.pick(now), Pick::Nothing);
        assert!(owned.take_log(now, 1).wanted.is_empty());
        assert!(owned.keep());
        assert!(!owned.keep(), "kept once");
        // Its URL went back with the log above: it is taken anew, then leased.
        let log = owned.take_log(now, 1);
        assert_eq!(log.wanted, [("a.example".to_owned(), 2)]);
        owned.taken("a.example", vec![(8, "0 0 https://a.example/1".into())], 0);
        assert!(matches!(owned.pick(now), Pick::Lease(t) if t.token == 8));
    }

    #[test]
    fn a_host_reaped_from_a_dead_owner_waits_its_delay_from_the_take_over() {
        let polite = Politeness::builder()
            .delay(Duration::from_secs(2))
            .build()
            .unwrap();
        let mut owned = Owned::new(1, polite);
        let now = Instant::now();
        owned.has_work(
            "a.example",
            Some(&HostState::of(&HostRecord::default(), None, now, 1)),
            now,
            1,
            true,
        );
        owned.taken("a.example", vec![(1, "0 0 https://a.example/".into())], 0);
        assert_eq!(
            owned.pick(now),
            Pick::WaitUntil(now + Duration::from_secs(2))
        );
    }
}
