//! The owner's rule and the batch script together against the host policy's conformance
//! table (`frontier::conformance`), on a real `redis-server`, its clock set to each step's
//! time; the page budgets' table against the batch script; the address script against
//! `frontier::AddressRecord`.

use std::time::{Duration, Instant};

use frontier::conformance::{
    BUDGET_CASES, BudgetCase, CASES, Case, HOST, Leased, Store, memo, run, run_budget,
};
use frontier::{Fate, Outcome};
use redis::{Connection, Value};

use super::{
    Clock, HostState, Scripts, address_keys, address_leave, link, links_step, queue_entry,
};
use crate::frontier::batch::{OwnerReply, StepAnswer, add_owner_log, memo_text};
use crate::frontier::owned::{EndedLease, Log, Owned, leased};
use crate::seen::Schedule;

#[allow(dead_code, unreachable_pub)]
#[path = "../../tests/support/redis.rs"]
mod support;

/// The bucket every case runs in.
const TAG: &str = "{conformance}";

/// Where the cases' time starts, in the scripts' ms: a real date, so that tokens (which
/// grow with the clock) look as they do in a crawl.
const BASE: u64 = 1_764_000_000_000;

/// The numbers a batch answers before its steps: the bucket's view (the server's clock
/// and its count of changes), its seen-test's generations, the owner's status.
const HEAD: usize = 2 + 2;

/// A batch's answer to its one step, and where the rest of the answer starts.
fn one_step(answer: &[Value]) -> Result<(StepAnswer, usize), String> {
    match answer
        .get(HEAD..)
        .and_then(|rest| StepAnswer::read(rest, 1))
    {
        Some((steps, read)) => Ok((steps[0], HEAD + read)),
        None => Err(format!("unexpected answer {answer:?}")),
    }
}

/// The process every case's bucket is owned by.
const OWNER: &str = "conformance";

fn set_clock(con: &mut Connection, ms: u64) -> Result<(), String> {
    redis::cmd("SET")
        .arg(format!("{TAG}:clock"))
        .arg(ms)
        .exec(con)
        .map_err(|err| err.to_string())
}

/// Takes bucket [`TAG`] for [`OWNER`] at the server's `ms`: its epoch.
fn own(con: &mut Connection, scripts: &Scripts, ms: u64) -> Result<i64, String> {
    set_clock(con, ms)?;
    let call = scripts.own_call(TAG, OWNER, 0, Duration::from_secs(3600), false, None);
    let answer: Vec<i64> = call
        .invoke(con, &scripts.library)
        .map_err(|err| err.to_string())?;
    match answer[..] {
        [2, epoch, ..] => Ok(epoch),
        _ => Err(format!("the bucket was not taken: {answer:?}")),
    }
}

/// An owned bucket, its owner's rule in memory and its URLs in a real Redis: every lease
/// asked for runs the owner's batch first, as a worker finding no URL taken makes its
/// process do.
struct Redis<'a> {
    con: &'a mut Connection,
    scripts: &'a Scripts,
    owned: Owned,
    schedule: Schedule,
    requests: u64,
    t0: Instant,
}

impl Redis<'_> {
    fn at(&self, ms: u64) -> Instant {
        self.t0 + Duration::from_millis(ms)
    }

    /// One batch at `at` of a step with `url`'s link if given, and the owner's log if
    /// `owner` with the lease ended `end` if given (the step's, as a completion sends it):
    /// the number of new links, and what the owner's part answered.
    fn batch(
        &mut self,
        at: u64,
        owner: bool,
        url: Option<(&str, Option<Vec<u8>>)>,
        end: Option<EndedLease>,
    ) -> Result<(i64, Option<OwnerReply>), String> {
        set_clock(self.con, BASE + at)?;
        self.requests += 1;
        let request = format!("request-{}", self.requests);
        let (now, server) = (self.at(at), (BASE + at) as i64);
        let log = owner.then(|| Log {
            ended: end.into_iter().collect(),
            ..self.owned.take_log(now, server)
        });
        let holder = format!("{OWNER} {}", self.owned.epoch);
        let mut call = self.scripts.batch_call(
            TAG,
            self.schedule.text(0),
            &request,
            [0; 3],
            log.as_ref().map(|_| holder.as_str()),
            1,
        );
        links_step(&mut call, usize::from(url.is_some()));
        if let Some((url, memo)) = url {
            let probes = self.schedule.probes(&[7; 16], url);
            let memo = memo.as_deref().map(memo_text);
            link(&mut call, &probes, HOST, 0, url, None, memo.as_deref(), "");
        }
        if let Some(log) = &log {
            add_owner_log(&mut call, log);
        }
        let answer: Vec<Value> = call
            .invoke(self.con, &self.scripts.library)
            .map_err(|err| err.to_string())?;
        let number = |i: usize| match answer.get(i) {
            Some(Value::Int(n)) => Ok(*n),
            other => Err(format!("answer {i}: {other:?}")),
        };
        let (step, rest) = one_step(&answer)?;
        let new = step.admitted;
        let Some(log) = log else {
            return Ok((new, None));
        };
        if number(3)? != 1 {
            return Err(format!("the owner's part was refused: {answer:?}"));
        }
        let reply = OwnerReply::read(&log, &answer[rest..])
            .ok_or_else(|| format!("unexpected answer {answer:?}"))?;
        let ended = reply.ended.clone();
        self.owned.answered(&log, reply, now, server);
        Ok((
            new,
            Some(OwnerReply {
                ended,
                ..OwnerReply::default()
            }),
        ))
    }
}

impl Store for Redis<'_> {
    type Lease = u64;

    fn push(&mut self, n: u32) -> Result<(), String> {
        let url = format!("https://{HOST}/{n}");
        match self.batch(0, false, Some((&url, memo(n))), None)? {
            (1, _) => Ok(()),
            (new, _) => Err(format!("{url} not admitted: {new}")),
        }
    }

    fn lease(&mut self, at: u64) -> Result<Leased<u64>, String> {
        let now = self.at(at);
        for _ in 0..3 {
            self.batch(at, true, None, None)?;
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
        let (_, reply) = self.batch(at, true, None, Some(ended.lease.clone()))?;
        let written = reply.and_then(|r| r.ended.first().copied());
        let Some((true, queued)) = written else {
            return Err(format!("the lease's end was not written: {written:?}"));
        };
        let waiting = u64::try_from(queued).unwrap_or(0) + ended.taken as u64;
        Ok((ended.fate, ended.lease.gave_up_host.then_some(waiting)))
    }

    fn crawl_delay(&mut self, delay: u64) -> Result<(), String> {
        match self.owned.crawl_delay(HOST, Duration::from_millis(delay)) {
            true => Ok(()),
            false => Err("the host is not in memory".into()),
        }
    }

    fn abandon(&mut self, lease: u64, at: u64, until: Option<u64>) -> Result<(), String> {
        let until = until.map(|u| self.at(u));
        match self.owned.give_back(lease, self.at(at), until) {
            true => Ok(()),
            false => Err("a foreign lease".into()),
        }
    }
}

/// A `redis-server` of the test's own, a connection to it, and the scripts with their clock
/// read from a key the test sets.
fn server_and_scripts() -> (support::RedisServer, Connection, Scripts) {
    let server = support::RedisServer::start();
    let con = redis::Client::open(server.url())
        .and_then(|client| client.get_connection())
        .expect("a connection to the test's redis-server");
    (server, con, Scripts::with_clock(Clock::Key, false))
}

/// The bucket owned on `con` with `urls` URLs of [`HOST`] queued, its inbox read: the store
/// and the owner's epoch.
fn owner_with_urls<'a>(
    con: &'a mut Connection,
    scripts: &'a Scripts,
    urls: u32,
) -> (Redis<'a>, i64) {
    let epoch = own(con, scripts, BASE).expect("the bucket taken");
    let mut store = Redis {
        con,
        scripts,
        owned: Owned::new(epoch, frontier::Politeness::default()),
        schedule: Schedule::new(10_000, 0.001, 1).expect("a schedule"),
        requests: 0,
        t0: Instant::now(),
    };
    for n in 0..urls {
        store.push(n).expect("a URL queued");
    }
    store.batch(0, true, None, None).expect("a batch");
    (store, epoch)
}

fn run_case(con: &mut Connection, scripts: &Scripts, case: &Case) -> Result<(), String> {
    redis::cmd("FLUSHALL")
        .exec(con)
        .map_err(|err| err.to_string())?;
    let epoch = own(con, scripts, BASE)?;
    let mut store = Redis {
        con,
        scripts,
        owned: Owned::new(epoch, case.settings.politeness()),
        schedule: Schedule::new(10_000, 0.001, 1).map_err(|err| err.to_string())?,
        requests: 0,
        t0: Instant::now(),
    };
    run(case, &mut store)
}

/// The owner's rule (frontier's `HostRecord`, in memory) with the batch script keeping its
/// URLs, leases and host states: the conformance table, as the embedded frontier passes it.
#[test]
fn an_owned_bucket_on_redis_passes_the_table() {
    let (_server, mut con, scripts) = server_and_scripts();
    let failed: Vec<String> = CASES
        .iter()
        .filter_map(|case| run_case(&mut con, &scripts, case).err())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// Runs a case of the page budgets' table through the batch script: each charge a new URL
/// of its host, alone in a batch, under the case's budgets.
fn run_budget_case(
    con: &mut Connection,
    scripts: &Scripts,
    case: &BudgetCase,
) -> Result<(), String> {
    use frontier::DropReason;

    redis::cmd("FLUSHALL")
        .exec(con)
        .map_err(|err| err.to_string())?;
    let schedule = Schedule::new(10_000, 0.001, 1).map_err(|err| err.to_string())?;
    let budgets = [case.host_pages, case.domain_hosts, case.domain_pages];
    set_clock(con, BASE)?;
    let mut n = 0;
    run_budget(case, |host| {
        n += 1;
        let url = format!("https://{host}/{n}");
        let request = format!("budget-{n}");
        let mut call = scripts.batch_call(TAG, schedule.text(0), &request, budgets, None, 1);
        links_step(&mut call, 1);
        let probes = schedule.probes(&[7; 16], &url);
        let domain = frontier::registrable_domain_of(host);
        link(&mut call, &probes, host, 0, &url, None, None, domain);
        let answer: Vec<i64> = call
            .invoke(con, &scripts.library)
            .map_err(|err| err.to_string())?;
        // A step's answer: its new links, or -1 minus them and the three refusals.
        match answer.get(HEAD..) {
            Some([1]) => Ok(None),
            Some([-1, 1, 0, 0]) => Ok(Some(DropReason::HostBudget)),
            Some([-1, 0, 1, 0]) => Ok(Some(DropReason::DomainHosts)),
            Some([-1, 0, 0, 1]) => Ok(Some(DropReason::DomainPages)),
            _ => Err(format!("unexpected answer {answer:?}")),
        }
    })
}

/// The batch script charges the page budgets by `frontier::HostBudget`'s rule: the budget
/// table, as the embedded frontier passes it.
#[test]
fn the_batch_script_passes_the_budget_table() {
    let (_server, mut con, scripts) = server_and_scripts();
    let failed: Vec<String> = BUDGET_CASES
        .iter()
        .filter_map(|case| run_budget_case(&mut con, &scripts, case).err())
        .collect();
    assert!(failed.is_empty(), "{failed:#?}");
}

/// What an address script's requests ask under: their address's tag, limits, how long
/// each may hold its place and a ticket is kept (ms).
#[derive(Clone, Copy)]
struct AddressTerms {
    tag: &'static str,
    limits: frontier::AddressLimits,
    hold: u64,
    ticket_ttl: u64,
}

impl AddressTerms {
    /// Under `limits` at [`TAG`], held `hold` ms, tickets kept as a crawl keeps them.
    fn new(limits: frontier::AddressLimits, hold: u64) -> Self {
        AddressTerms {
            tag: TAG,
            limits,
            hold,
            ticket_ttl: frontier::TICKET_TTL.as_millis() as u64,
        }
    }
}

/// The address the conformance tests' requests go to, but where they say otherwise.
const ADDRESS: &str = "192.0.2.1";

/// One address's requests in a script: the names of those that ended, then the turns asked,
/// each a host and a name.
type AddressBlock<'a> = (&'a str, &'a [&'a str], &'a [(&'a str, &'a str)]);

/// One script of the requests at some addresses at `at` ms, address after address (at each,
/// those that ended leave first); answers each turn's: 0 to go, or the wait in ms. Leaves
/// alone go as the process sends them, a plain command an address.
fn addresses_script(
    con: &mut Connection,
    scripts: &Scripts,
    at: u64,
    blocks: &[AddressBlock<'_>],
    terms: &AddressTerms,
) -> Result<Vec<i64>, String> {
    let (tag, limits) = (terms.tag, terms.limits);
    redis::cmd("SET")
        .arg(format!("{tag}:clock"))
        .arg(BASE + at)
        .exec(con)
        .map_err(|err| err.to_string())?;
    if blocks.iter().all(|(_, _, asking)| asking.is_empty()) {
        for (address, ended, _) in blocks {
            address_leave(tag, address, ended)
                .query::<i64>(con)
                .map_err(|err| err.to_string())?;
        }
        return Ok(Vec::new());
    }
    let mut call = scripts.address.prepare_invoke();
    for (address, _, _) in blocks {
        for key in address_keys(tag, address) {
            call.key(key);
        }
    }
    call.arg(tag)
        .arg(limits.connections)
        .arg(limits.delay.as_millis() as u64)
        .arg(terms.hold)
        .arg(limits.delay.max(frontier::FULL_RETRY).as_millis() as u64)
        .arg(terms.ticket_ttl);
    for (_, ended, asking) in blocks {
        call.arg(ended.len()).arg(*ended).arg(asking.len());
        for (host, _) in *asking {
            call.arg(*host);
        }
        for (_, name) in *asking {
            call.arg(*name);
        }
    }
    call.invoke(con, &scripts.library)
        .map_err(|err| err.to_string())
}

/// One script of [`ADDRESS`]'s requests at `at` ms (see [`addresses_script`]).
fn address_script(
    con: &mut Connection,
    scripts: &Scripts,
    at: u64,
    ended: &[&str],
    asking: &[(&str, &str)],
    terms: &AddressTerms,
) -> Result<Vec<i64>, String> {
    addresses_script(con, scripts, at, &[(ADDRESS, ended, asking)], terms)
}

/// One request's step alone: a leave (`op` "leave") or a turn asked, answered 0 to go or
/// the wait in ms.
#[expect(
    clippy::too_many_arguments,
    reason = "the clock, the operation, and one per argument of the script's call"
)]
fn address_step(
    con: &mut Connection,
    scripts: &Scripts,
    at: u64,
    op: &str,
    host: &str,
    token: &str,
    limits: frontier::AddressLimits,
    hold: u64,
) -> Result<i64, String> {
    if op == "leave" {
        let terms = AddressTerms::new(limits, hold);
        return address_script(con, scripts, at, &[token], &[], &terms).map(|_| 0);
    }
    let terms = AddressTerms::new(limits, hold);
    let answer = address_script(con, scripts, at, &[], &[(host, token)], &terms)?;
    match answer[..] {
        [wait] => Ok(wait),
        _ => Err(format!("unexpected answer {answer:?}")),
    }
}

/// Requests gathered for one address script, with the answers `frontier::AddressRecord`
/// gave them one after another.
#[derive(Default)]
struct AddressGroup {
    at: u64,
    ended: Vec<String>,
    asking: Vec<(String, String)>,
    expected: Vec<i64>,
}

impl AddressGroup {
    /// Sends the group in one script; an error names the first answer that differs.
    fn send(
        &mut self,
        con: &mut Connection,
        scripts: &Scripts,
        limits: frontier::AddressLimits,
    ) -> Result<(), String> {
        if self.ended.is_empty() && self.asking.is_empty() {
            return Ok(());
        }
        let ended: Vec<&str> = self.ended.iter().map(String::as_str).collect();
        let asking: Vec<(&str, &str)> = self
            .asking
            .iter()
            .map(|(host, name)| (host.as_str(), name.as_str()))
            .collect();
        let terms = AddressTerms::new(limits, HOUR);
        let answer = address_script(con, scripts, self.at, &ended, &asking, &terms)?;
        if answer != self.expected {
            return Err(format!(
                "limits {limits:?} at {} ms: {} left, {:?} asked, answered {answer:?}, not {:?}",
                self.at,
                ended.len(),
                asking,
                self.expected
            ));
        }
        *self = AddressGroup::default();
        Ok(())
    }
}

/// Numbers below `n`, from `seed` on (xorshift): the same sequence on every run.
fn xorshift(mut seed: u64) -> impl FnMut(u64) -> u64 {
    move |n| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    }
}

/// The address script and `frontier::AddressRecord` answer every step of many sequences of
/// requests alike: hosts asking turns at times a few ms apart, some coming back at their
/// turn, some late, requests leaving, under several limits; and the requests of one instant
/// in one script (the ended ones first), as a process sends those of one tick, alike too.
#[test]
fn the_address_script_follows_the_address_rule() {
    use std::time::{Duration, Instant};

    use frontier::{AddressLimits, AddressRecord, Turn};

    let (_server, mut con, scripts) = server_and_scripts();
    let t0 = Instant::now();
    let mut random = xorshift(0x2545_f491_4f6c_dd1d);
    let mut grouped = 0;
    for (connections, delay) in [(2, 100), (0, 50), (3, 0), (1, 30), (8, 20)] {
        redis::cmd("FLUSHALL").exec(&mut con).expect("FLUSHALL");
        let limits = AddressLimits {
            connections,
            delay: Duration::from_millis(delay),
        };
        let mut record = AddressRecord::default();
        let mut in_flight: Vec<String> = Vec::new();
        let (mut at, mut tokens) = (0u64, 0u64);
        let mut group = AddressGroup::default();
        for _ in 0..600 {
            // One in three at the instant of the one before: the same script.
            let gap = if random(3) == 0 { 0 } else { 1 + random(40) };
            if gap > 0 {
                group.send(&mut con, &scripts, limits).unwrap();
            }
            at += gap;
            group.at = at;
            if !in_flight.is_empty() && random(3) == 0 {
                // A script's leaves come before its turns: a leave after a turn goes in the
                // next.
                if !group.asking.is_empty() {
                    group.send(&mut con, &scripts, limits).unwrap();
                    group.at = at;
                }
                let token = in_flight.swap_remove(random(in_flight.len() as u64) as usize);
                group.ended.push(token);
                record.leave();
                continue;
            }
            let host = format!("h{}", random(6));
            tokens += 1;
            let token = format!("{host} {tokens}");
            let now = t0 + Duration::from_millis(at);
            let expected = match record.enter(&host, now, limits) {
                Turn::Go => 0,
                Turn::WaitUntil(then) => (then - now).as_millis() as i64,
                Turn::Full(then) => -((then - now).as_millis() as i64),
            };
            if expected == 0 {
                in_flight.push(token.clone());
            }
            if !group.asking.is_empty() {
                grouped += 1;
            }
            group.asking.push((host, token));
            group.expected.push(expected);
        }
        group.send(&mut con, &scripts, limits).unwrap();
    }
    assert!(grouped > 200, "{grouped} turns asked with others");
}

/// The requests of one instant at several addresses in one script are answered as scripts
/// of their own, one after another, would answer them (at each address, the ended ones'
/// leave first): with holds and tickets short enough that requests past their hold are
/// dropped and tickets past their time go, and with whole scripts sent again (their answer
/// lost), at once or later. Two groups of one server take the same sequences at the same
/// addresses, one in scripts of many requests (made as on a cluster) and one request by
/// request; their answers and what each address holds (requests in flight, tickets,
/// record) must agree throughout.
#[test]
fn requests_grouped_in_one_script_are_answered_as_one_by_one() {
    use frontier::AddressLimits;

    const ADDRESSES: [&str; 3] = [ADDRESS, "192.0.2.2", "2001:db8::7"];
    let (_server, mut con, scripts) = server_and_scripts();
    // The grouped calls as a cluster's are made: one key more, declared only.
    let on_cluster = Scripts::with_clock(Clock::Key, true);
    let mut random = xorshift(0x9e37_79b9_7f4a_7c15);
    // What an address holds: its requests in flight, its tickets, its record.
    let state = |con: &mut Connection, tag: &str, address: &str| -> Vec<Vec<String>> {
        let mut held = Vec::new();
        for key in ["inflight", "tickets"] {
            let members: Vec<String> = redis::cmd("ZRANGE")
                .arg(format!("{tag}:{address}:{key}"))
                .arg(0)
                .arg(-1)
                .arg("WITHSCORES")
                .query(con)
                .unwrap();
            held.push(members);
        }
        let record: Vec<Option<String>> = redis::cmd("HMGET")
            .arg(format!("{tag}:{address}:record"))
            .arg("last")
            .arg("free")
            .query(con)
            .unwrap();
        held.push(record.into_iter().map(Option::unwrap_or_default).collect());
        held
    };
    // Their keys live on: the sequences' times are the scripts' clock, not the server's.
    let persist = |con: &mut Connection, tag: &str, address: &str| {
        for key in address_keys(tag, address) {
            redis::cmd("PERSIST").arg(key).exec(con).unwrap();
        }
    };
    let (mut resent, mut pruned, mut expired, mut together) = (0, 0, 0, 0);
    for (connections, delay) in [(2, 100), (0, 50), (3, 0), (1, 30), (8, 20)] {
        redis::cmd("FLUSHALL").exec(&mut con).expect("FLUSHALL");
        let limits = AddressLimits {
            connections,
            delay: Duration::from_millis(delay),
        };
        let grouped = AddressTerms {
            tag: "{grouped}",
            limits,
            hold: 60,
            ticket_ttl: 150 + delay,
        };
        let alone = AddressTerms {
            tag: "{alone}",
            ..grouped
        };
        let mut in_flight: Vec<Vec<String>> = vec![Vec::new(); ADDRESSES.len()];
        let mut at = 0u64;
        for call in 0..150 {
            // Each address's requests: those that ended, and the turns asked.
            let mut requests: Vec<Requests<'_>> = Vec::new();
            for (k, address) in ADDRESSES.into_iter().enumerate() {
                let mut ended: Vec<String> = Vec::new();
                while !in_flight[k].is_empty() && random(3) == 0 {
                    let i = random(in_flight[k].len() as u64) as usize;
                    ended.push(in_flight[k].swap_remove(i));
                }
                let asking: Vec<(String, String)> = (0..random(5))
                    .map(|n| {
                        let host = format!("h{}", random(5));
                        let name = format!("{host} {call} {n}");
                        (host, name)
                    })
                    .collect();
                if !ended.is_empty() || !asking.is_empty() {
                    requests.push((address, ended, asking));
                }
            }
            if requests.is_empty() {
                continue;
            }
            together += usize::from(requests.len() > 1);
            let ended: Vec<Vec<&str>> = requests
                .iter()
                .map(|(_, ended, _)| ended.iter().map(String::as_str).collect())
                .collect();
            let asking: Vec<Vec<(&str, &str)>> = requests
                .iter()
                .map(|(_, _, asking)| {
                    let pairs = asking.iter().map(|(h, n)| (h.as_str(), n.as_str()));
                    pairs.collect()
                })
                .collect();
            let blocks: Vec<AddressBlock<'_>> = requests
                .iter()
                .enumerate()
                .map(|(i, (address, _, _))| (*address, &ended[i][..], &asking[i][..]))
                .collect();
            // Sent once, and one in four sent again: at once, or some ms later.
            let mut sendings = vec![at];
            if random(4) == 0 {
                sendings.push(at + random(3) * random(80));
                resent += 1;
            }
            for &instant in &sendings {
                let before: Vec<_> = blocks
                    .iter()
                    .map(|(address, _, _)| state(&mut con, grouped.tag, address))
                    .collect();
                let answers =
                    addresses_script(&mut con, &on_cluster, instant, &blocks, &grouped).unwrap();
                let mut one_by_one = Vec::new();
                for &(address, ended, asking) in &blocks {
                    if !ended.is_empty() {
                        let leave = [(address, ended, &[][..])];
                        addresses_script(&mut con, &scripts, instant, &leave, &alone).unwrap();
                    }
                    for request in asking {
                        let turn = [(address, &[][..], std::slice::from_ref(request))];
                        let answer =
                            addresses_script(&mut con, &scripts, instant, &turn, &alone).unwrap();
                        one_by_one.extend(answer);
                    }
                }
                let context = format!("limits {limits:?} at {instant} ms: {blocks:?}");
                assert_eq!(answers, one_by_one, "{context}");
                let names = |held: &[Vec<String>]| -> Vec<String> {
                    held[0].iter().step_by(2).cloned().collect()
                };
                let tickets = |held: &[Vec<String>]| held[1].len() / 2;
                for (i, &(address, ended, _)) in blocks.iter().enumerate() {
                    let after = state(&mut con, grouped.tag, address);
                    assert_eq!(after, state(&mut con, alone.tag, address), "{context}");
                    let still = names(&after);
                    pruned += names(&before[i])
                        .iter()
                        .filter(|n| !still.contains(n) && !ended.contains(&n.as_str()))
                        .count();
                    if tickets(&after) < tickets(&before[i]) && answers.iter().all(|&a| a != 0) {
                        expired += 1;
                    }
                    persist(&mut con, grouped.tag, address);
                    persist(&mut con, alone.tag, address);
                }
            }
            for &(address, _, asking) in &blocks {
                let k = ADDRESSES.iter().position(|a| *a == address).unwrap();
                let held = held_in_flight(&mut con, grouped.tag, address, asking);
                for (&(_, name), held) in asking.iter().zip(held) {
                    if held && !in_flight[k].iter().any(|n| n == name) {
                        in_flight[k].push(name.to_owned());
                    }
                }
            }
            at = sendings.last().copied().unwrap_or(at) + random(40);
        }
    }
    assert!(resent > 100, "{resent} scripts sent again");
    assert!(
        together > 300,
        "{together} scripts at more than one address"
    );
    assert!(pruned > 100, "{pruned} requests dropped past their hold");
    assert!(
        expired > 5,
        "{expired} scripts dropped tickets past their time"
    );
}

/// An address's requests of a sequence: the names of those that ended, and the turns asked
/// (host and name).
type Requests<'a> = (&'a str, Vec<String>, Vec<(String, String)>);

/// Which of `asking` `address`, of the group of tag `tag`, holds in flight now.
fn held_in_flight(
    con: &mut Connection,
    tag: &str,
    address: &str,
    asking: &[(&str, &str)],
) -> Vec<bool> {
    let names: Vec<&str> = asking.iter().map(|(_, name)| *name).collect();
    if names.is_empty() {
        return Vec::new();
    }
    let scores: Vec<Option<f64>> = redis::cmd("ZMSCORE")
        .arg(format!("{tag}:{address}:inflight"))
        .arg(&names)
        .query(con)
        .unwrap();
    scores.into_iter().map(|s| s.is_some()).collect()
}

/// How long the address tests' requests may hold their place: longer than any sequence.
const HOUR: u64 = 3_600_000;

/// An address's keys live as long as their last write says (a key only read keeps its
/// time), and a request past its hold gives its place back when the address is full.
#[test]
fn an_addresss_keys_outlive_their_last_write_and_a_request_past_its_hold_gives_way() {
    use std::time::Duration;

    use frontier::AddressLimits;

    let (_server, mut con, scripts) = server_and_scripts();
    let ttl = |con: &mut Connection, key: &str| -> i64 {
        redis::cmd("PTTL")
            .arg(format!("{TAG}:{ADDRESS}:{key}"))
            .query(con)
            .unwrap()
    };
    let hold = 1_000;
    let most = (hold + frontier::TICKET_TTL.as_millis() as u64 + 100) as i64;
    let delay = Duration::from_millis(100);
    let step = |con: &mut Connection, at, op, host: &str, token: &str, connections| {
        let limits = AddressLimits { connections, delay };
        address_step(con, &scripts, at, op, host, token, limits, hold).unwrap()
    };
    // One connection: a request goes, its keys with their time to live.
    assert_eq!(step(&mut con, 0, "enter", "a", "a 1", 1), 0);
    for key in ["record", "inflight"] {
        let left = ttl(&mut con, key);
        assert!(left > most - 1_000 && left <= most, "{key}: {left} ms");
    }
    // Full: another waits (no ticket: it asks again), told so.
    assert_eq!(step(&mut con, 10, "enter", "b", "b 2", 1), -100);
    assert_eq!(ttl(&mut con, "tickets"), -2, "no ticket");
    // The first request never left (its process died): past its hold, it gives way.
    assert_eq!(step(&mut con, 2_000, "enter", "b", "b 3", 1), 0);
    let in_flight: Vec<String> = redis::cmd("ZRANGE")
        .arg(format!("{TAG}:{ADDRESS}:inflight"))
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(in_flight, ["b 3"]);
    // A request that ends leaves with a plain ZREM: the key goes with its last member.
    assert_eq!(step(&mut con, 2_050, "leave", "b", "b 3", 1), 0);
    assert_eq!(ttl(&mut con, "inflight"), -2, "the last request left");
    // No connection limit: a host too soon after the last request takes a ticket, kept with
    // its time to live, and goes at its instant.
    assert_eq!(step(&mut con, 2_060, "enter", "c", "c 4", 0), 40);
    let left = ttl(&mut con, "tickets");
    assert!(left > most - 1_000 && left <= most, "tickets: {left} ms");
    assert_eq!(step(&mut con, 2_100, "enter", "c", "c 5", 0), 0);
    assert_eq!(ttl(&mut con, "tickets"), -2, "its ticket used");
}

#[test]
fn a_server_that_lost_the_library_is_given_it_again() {
    let (_server, mut con, scripts) = server_and_scripts();
    let libraries = |con: &mut Connection| -> Vec<Value> {
        redis::cmd("FUNCTION")
            .arg("LIST")
            .arg("LIBRARYNAME")
            .arg(scripts.library.name())
            .query(con)
            .expect("FUNCTION LIST")
    };
    let own = |con: &mut Connection| own(con, &scripts, BASE).expect("an own call");
    assert!(
        libraries(&mut con).is_empty(),
        "a new server holds no library"
    );
    own(&mut con);
    assert_eq!(libraries(&mut con).len(), 1, "the first call loaded it");
    // As after a restart from a snapshot taken before it was loaded.
    redis::cmd("FUNCTION")
        .arg("FLUSH")
        .exec(&mut con)
        .expect("FUNCTION FLUSH");
    own(&mut con);
    assert_eq!(libraries(&mut con).len(), 1);
}

#[test]
fn replies_are_kept_a_period_at_least_in_two_hashes_taking_turns() {
    const PERIOD: u64 = 150_000;
    let (_server, mut con, scripts) = server_and_scripts();
    let schedule = Schedule::new(10_000, 0.001, 1).expect("a schedule");
    let probes = schedule.probes(&[7; 16], "\0#body");
    // The content test of one body, at `at` ms, with request id `id`: 1 when it is new, 0
    // when it was read before (the script answers the places of those read before).
    let test = |con: &mut Connection, at: u64, id: &str| -> i64 {
        redis::cmd("SET")
            .arg(format!("{TAG}:clock"))
            .arg(at)
            .exec(con)
            .expect("SET");
        let mut call = scripts.content.prepare_invoke();
        for key in ["seen", "counts", "replies0", "replies1"] {
            call.key(format!("{TAG}:{key}"));
        }
        call.arg(TAG)
            .arg(schedule.text(0))
            .arg(id)
            .arg(probes.bytes());
        let answer: Vec<i64> = call.invoke(con, &scripts.library).expect("a content call");
        match answer[1..] {
            [] => 1,
            [1] => 0,
            _ => panic!("unexpected answer {answer:?}"),
        }
    };
    let replies = |con: &mut Connection, key: &str| -> Vec<String> {
        let mut fields: Vec<String> = redis::cmd("HKEYS")
            .arg(format!("{TAG}:{key}"))
            .query(con)
            .expect("HKEYS");
        fields.sort();
        fields
    };
    // An even period: replies go to the first hash.
    let start = (BASE / PERIOD / 2 * 2 + 2) * PERIOD;
    assert_eq!(test(&mut con, start, "a"), 1, "a new body");
    assert_eq!(test(&mut con, start + 10, "b"), 0, "read before");
    assert_eq!(
        test(&mut con, start + 20, "a"),
        1,
        "sent again: the first answer"
    );
    // The next period's replies go to the other hash; the first one's are still there.
    assert_eq!(test(&mut con, start + PERIOD, "c"), 0);
    assert_eq!(test(&mut con, start + PERIOD + 10, "a"), 1, "still kept");
    assert_eq!(replies(&mut con, "replies0"), ["_period", "a", "b"]);
    assert_eq!(replies(&mut con, "replies1"), ["_period", "c"]);
    // Two periods on, the first hash is emptied before it takes its new replies.
    assert_eq!(test(&mut con, start + 2 * PERIOD, "d"), 0);
    assert_eq!(replies(&mut con, "replies0"), ["_period", "d"]);
    // A hash deleted within its period (a crawl removed) takes replies again, and is still
    // emptied at its next turn.
    redis::cmd("DEL")
        .arg(format!("{TAG}:replies0"))
        .exec(&mut con)
        .expect("DEL");
    assert_eq!(test(&mut con, start + 2 * PERIOD + 10, "e"), 0);
    assert!(replies(&mut con, "replies0").contains(&"e".to_owned()));
    assert_eq!(test(&mut con, start + 4 * PERIOD, "f"), 0);
    assert_eq!(replies(&mut con, "replies0"), ["_period", "f"]);
}

#[test]
fn a_call_on_a_cluster_is_refused_while_its_slot_moves_before_it_writes() {
    let cluster = support::RedisCluster::start();
    let tag = "{moving-test}";
    let hosts = format!("{tag}:hosts");
    let slot: u16 = cluster.nodes[0]
        .cli(&["CLUSTER", "KEYSLOT", &hosts])
        .trim()
        .parse()
        .expect("a slot");
    let connect = |node: &support::RedisServer| {
        redis::Client::open(node.url())
            .and_then(|client| client.get_connection())
            .expect("a connection to a node")
    };
    let mut cons: Vec<Connection> = cluster.nodes.iter().map(connect).collect();
    // The slot's master, and another.
    let owner = (0..3)
        .find(|&i| {
            redis::cmd("SET")
                .arg(format!("{tag}:clock"))
                .arg(BASE)
                .exec(&mut cons[i])
                .is_ok()
        })
        .expect("the slot's master");
    let target = (owner + 1) % 3;
    let id = |i: usize| cluster.nodes[i].cli(&["CLUSTER", "MYID"]).trim().to_owned();
    let on_cluster = Scripts::with_clock(Clock::Key, true);
    let on_one_server = Scripts::with_clock(Clock::Key, false);
    // The bucket's owner writes a host's state (a declared key) and takes a URL of its
    // queue (named inside the function): the state's delay is `ms`.
    let epoch = {
        let call = on_cluster.own_call(tag, OWNER, 0, Duration::from_secs(3600), false, None);
        let answer: Vec<i64> = call
            .invoke(&mut cons[owner], &on_cluster.library)
            .expect("the bucket taken");
        answer[1]
    };
    let schedule = Schedule::new(10_000, 0.001, 1).expect("a schedule");
    let mut requests = 0;
    let mut write = |con: &mut Connection, scripts: &Scripts, ms: u64, asking: bool| {
        requests += 1;
        let state = HostState::of(
            &frontier::HostRecord::default(),
            Some(Duration::from_millis(ms)),
            Instant::now(),
            BASE as i64,
        );
        let log = Log {
            states: vec![(HOST.to_owned(), state)],
            wanted: vec![(HOST.to_owned(), 1)],
            ..Log::default()
        };
        let holder = format!("{OWNER} {epoch}");
        let request = format!("r{requests}");
        let mut call =
            scripts.batch_call(tag, schedule.text(0), &request, [0; 3], Some(&holder), 0);
        add_owner_log(&mut call, &log);
        let result: redis::RedisResult<Vec<Value>> = match asking {
            false => call.invoke(con, &scripts.library),
            true => redis::pipe()
                .cmd("ASKING")
                .add_command(call.cmd())
                .query::<Vec<Value>>(con)
                .map(|mut answers| answers.pop().map(|a| vec![a]).unwrap_or_default()),
        };
        result.map(drop)
    };
    let stored = |con: &mut Connection| -> Option<Duration> {
        let written: Vec<u8> = redis::cmd("HGET")
            .arg(&hosts)
            .arg(HOST)
            .query(con)
            .expect("HGET");
        let mut delay = None;
        let state = HostState::decode(&written).expect("a host's state");
        state.apply(
            &mut frontier::HostRecord::default(),
            &mut delay,
            Instant::now(),
            BASE as i64,
        );
        delay
    };
    let ms = Duration::from_millis;
    write(&mut cons[owner], &on_cluster, 1000, false).expect("a call on a still slot");
    assert_eq!(stored(&mut cons[owner]), Some(ms(1000)));
    // Every key the call declares exists (but `moving`), as in a busy crawl: a hash's
    // field, a set's member and a list's entry that no call here reads.
    for key in ["seen", "leases", "pages", "domains", "replies0", "replies1"] {
        redis::cmd("HSET")
            .arg(format!("{tag}:{key}"))
            .arg("placeholder")
            .arg(1)
            .exec(&mut cons[owner])
            .expect("HSET");
    }
    for (command, key) in [("SADD", "work"), ("RPUSH", "inbox"), ("RPUSH", "links")] {
        redis::cmd(command)
            .arg(format!("{tag}:{key}"))
            .arg("other.example")
            .exec(&mut cons[owner])
            .expect("a write");
    }

    // The slot starts moving, as `redis-cli --cluster reshard` moves it.
    let set_slot = |con: &mut Connection, how: &str, node: &str| {
        redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg(how)
            .arg(node)
            .exec(con)
            .expect("CLUSTER SETSLOT");
    };
    set_slot(&mut cons[target], "IMPORTING", &id(owner));
    set_slot(&mut cons[owner], "MIGRATING", &id(target));
    let refused = write(&mut cons[owner], &on_cluster, 2000, false).expect_err("refused");
    assert_eq!(refused.code(), Some("TRYAGAIN"), "{refused}");
    assert_eq!(stored(&mut cons[owner]), Some(ms(1000)));
    // On the new master, asked there (`ASKING`) as a client follows an ASK redirection.
    let refused = write(&mut cons[target], &on_cluster, 3000, true).expect_err("refused there");
    assert_eq!(refused.code(), Some("TRYAGAIN"), "{refused}");
    // What the refusal prevents: a call declaring only keys that exist runs, and fails at
    // the first key of the moving slot it names itself (the host's queue, gone to the new
    // master as far as this one knows), its first write made.
    let half = write(&mut cons[owner], &on_one_server, 4000, false).expect_err("fails half-way");
    assert!(half.to_string().contains("non local key"), "{half}");
    assert_eq!(stored(&mut cons[owner]), Some(ms(4000)));

    // Moved back to still: calls run again.
    for i in [owner, target] {
        redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg("STABLE")
            .exec(&mut cons[i])
            .expect("CLUSTER SETSLOT STABLE");
    }
    write(&mut cons[owner], &on_cluster, 5000, false).expect("a call on a still slot");
    assert_eq!(stored(&mut cons[owner]), Some(ms(5000)));
}

/// A batch of the owner's sent again (its answer lost) answers what its first run did: the
/// URLs it took with their entries, read back from the leases (the reply keeps their
/// tokens only), and changes nothing.
#[test]
fn an_owners_batch_sent_again_answers_as_it_did() {
    let (_server, mut con, scripts) = server_and_scripts();
    // The owner's first batch read the inbox; its second takes the host's URLs.
    let (mut store, epoch) = owner_with_urls(&mut con, &scripts, 3);
    let now = store.at(0);
    let log = store.owned.take_log(now, BASE as i64);
    assert!(!log.wanted.is_empty(), "URLs to take: {log:?}");
    let holder = format!("{OWNER} {epoch}");
    let schedule = Schedule::new(10_000, 0.001, 1).expect("a schedule");
    let send = |con: &mut Connection| -> Vec<Value> {
        let mut call = scripts.batch_call(TAG, schedule.text(0), "again", [0; 3], Some(&holder), 0);
        add_owner_log(&mut call, &log);
        call.invoke(con, &scripts.library).expect("a batch")
    };
    let first = send(store.con);
    let leases_after = |con: &mut Connection| -> Vec<(String, String)> {
        redis::cmd("HGETALL")
            .arg(format!("{TAG}:leases"))
            .query(con)
            .expect("HGETALL")
    };
    let leases = leases_after(store.con);
    let again = send(store.con);
    // Past the view (the clock, the count of changes): the same answer, nothing taken twice.
    assert_eq!(first[2..], again[2..]);
    assert_eq!(leases_after(store.con), leases);
    let reply = OwnerReply::read(&log, &first[HEAD..]).expect("an owner's answer");
    let urls: Vec<&String> = reply
        .taken
        .iter()
        .flat_map(|(urls, _)| urls)
        .map(|(_, e)| e)
        .collect();
    assert!(!urls.is_empty(), "{reply:?}");
    assert!(urls.iter().all(|e| e.contains("https://")), "{urls:?}");
}

/// An owner's batch trims the links it read from its bucket's list only while the bucket's
/// count of links read is the one read with them: after another owner's trim, or on a Redis
/// gone back to a state before or after other trims, the list's head may be links it never
/// read, and they stay. It answers how many links wait.
#[test]
fn an_owners_batch_trims_only_the_links_it_read() {
    let (_server, mut con, scripts) = server_and_scripts();
    let epoch = own(&mut con, &scripts, BASE).expect("the bucket taken");
    let holder = format!("{OWNER} {epoch}");
    let schedule = Schedule::new(10_000, 0.001, 1).expect("a schedule");
    let list = format!("{TAG}:links");
    let entries: Vec<String> = (0..5)
        .map(|i| queue_entry(1, &format!("http://h.example/{i}"), None, None))
        .collect();
    redis::cmd("RPUSH")
        .arg(&list)
        .arg(&entries)
        .exec(&mut con)
        .expect("RPUSH");
    let mut requests = 0;
    let mut trim = |con: &mut Connection, read: usize, before: i64| -> Vec<String> {
        requests += 1;
        let log = Log {
            links_read: (read, before),
            ..Log::default()
        };
        let mut call = scripts.batch_call(
            TAG,
            schedule.text(0),
            &format!("t{requests}"),
            [0; 3],
            Some(&holder),
            0,
        );
        add_owner_log(&mut call, &log);
        let answer: Vec<Value> = call.invoke(con, &scripts.library).expect("a batch");
        let reply = OwnerReply::read(&log, &answer[HEAD..]).expect("an owner's answer");
        let left: Vec<String> = redis::cmd("LRANGE")
            .arg(&list)
            .arg(0)
            .arg(-1)
            .query(con)
            .expect("LRANGE");
        assert_eq!(reply.links_waiting, left.len() as i64);
        left
    };
    // Read with a count of 0 (none read before): the first two go.
    assert_eq!(trim(&mut con, 2, 0), entries[2..]);
    // A read made before that trim, its count stale: nothing goes.
    assert_eq!(trim(&mut con, 3, 0), entries[2..]);
    // A read made after it: the next three go.
    assert_eq!(trim(&mut con, 3, 2), Vec::<String>::new());
    let read: i64 = redis::cmd("HGET")
        .arg(format!("{TAG}:counts"))
        .arg("links_read")
        .query(&mut con)
        .expect("HGET");
    assert_eq!(read, 5);
}

/// Leases ended in one batch, done, giving their host up or retried, one of them no longer
/// in flight (Redis went back to a state before it was taken, say): the answer tells which,
/// in the log's order, however the batch sends them (a lease ended done, unasked, is
/// answered only when it was not in flight; a retried one takes an argument more), only
/// those in flight are counted done, and the retried URL is queued again.
#[test]
fn a_batch_answers_which_leases_it_ended_were_in_flight_in_the_logs_order() {
    let (_server, mut con, scripts) = server_and_scripts();
    let (store, epoch) = owner_with_urls(&mut con, &scripts, 6);
    let holder = format!("{OWNER} {epoch}");
    let schedule = Schedule::new(10_000, 0.001, 1).expect("a schedule");
    let mut requests = 0;
    let mut send = |con: &mut Connection, log: &Log| -> OwnerReply {
        requests += 1;
        let request = format!("ended{requests}");
        let mut call =
            scripts.batch_call(TAG, schedule.text(0), &request, [0; 3], Some(&holder), 0);
        add_owner_log(&mut call, log);
        let answer: Vec<Value> = call.invoke(con, &scripts.library).expect("a batch");
        OwnerReply::read(log, &answer[HEAD..]).expect("an owner's answer")
    };
    let log = Log {
        wanted: vec![(HOST.to_owned(), 5)],
        ..Log::default()
    };
    let taken = send(store.con, &log).taken.remove(0).0;
    assert_eq!(taken.len(), 5, "{taken:?}");
    let end = |(token, entry): &(u64, String), gave_up_host: bool| EndedLease {
        token: *token,
        held: format!("{HOST} {entry}"),
        retry: None,
        gave_up_host,
    };
    let retried = |taken: &(u64, String)| EndedLease {
        retry: Some(format!("1{}", &taken.1[1..])),
        ..end(taken, false)
    };
    // The second URL's lease is gone from Redis.
    redis::cmd("HDEL")
        .arg(format!("{TAG}:leases"))
        .arg(taken[1].0)
        .exec(store.con)
        .expect("HDEL");
    let log = Log {
        ended: vec![
            end(&taken[0], false),
            end(&taken[1], false),
            end(&taken[2], true),
            retried(&taken[3]),
            end(&taken[4], false),
        ],
        ..Log::default()
    };
    let reply = send(store.con, &log);
    // The host has one URL queued when the third's end asks, the sixth; the retried one
    // after it.
    assert_eq!(
        reply.ended,
        vec![(true, -1), (false, -1), (true, 1), (true, -1), (true, -1)]
    );
    let queued: Vec<String> = redis::cmd("LRANGE")
        .arg(format!("{TAG}:q:{HOST}"))
        .arg(0)
        .arg(-1)
        .query(store.con)
        .expect("LRANGE");
    assert_eq!(queued.len(), 2, "{queued:?}");
    assert_eq!(queued[1], format!("1{}", &taken[3].1[1..]));
    let leases: Vec<String> = redis::cmd("HKEYS")
        .arg(format!("{TAG}:leases"))
        .query(store.con)
        .expect("HKEYS");
    assert!(leases.is_empty(), "{leases:?}");
    let done: i64 = redis::cmd("HGET")
        .arg(format!("{TAG}:counts"))
        .arg("done")
        .query(store.con)
        .expect("HGET");
    assert_eq!(done, 3);
}
