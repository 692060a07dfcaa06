//! The owner's rule and the batch script together against the host policy's conformance
//! table (`frontier::conformance`), on a real `redis-server`, its clock set to each step's
//! time; the page budgets' table against the batch script; the address script's passing of
//! an address from process to process.

use std::time::{Duration, Instant};

use frontier::conformance::{
    BUDGET_CASES, BudgetCase, CASES, Case, HOST, Leased, Store, memo, run, run_budget,
};
use frontier::{Fate, Outcome};
use redis::{Connection, Value};

use super::{Clock, HostState, Scripts, link, links_step, queue_entry};
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

/// Two processes asking for an address ([`hold`]).
const P1: &str = "p1";
const P2: &str = "p2";

/// The term, the delay and the hold every ask of [`hold`] is made under (ms).
const TERM: u64 = 1_000;
const DELAY: u64 = 20;
const GRACE: u64 = 5_000;

/// The address every hold test asks for, and its key.
fn address_key() -> String {
    super::address_key(TAG, "192.0.2.1".parse().unwrap())
}

/// One address script at `at` ms, of process `me`, with one ask: `h` to hold the address, or
/// the ms since its last start to give it back; the answer (three numbers for a hold).
fn hold(
    con: &mut Connection,
    scripts: &Scripts,
    at: u64,
    me: &str,
    ask: &str,
) -> Result<Vec<i64>, String> {
    set_clock(con, BASE + at)?;
    let mut call = scripts.address.prepare_invoke();
    call.key(address_key());
    call.arg(TAG)
        .arg(me)
        .arg(TERM)
        .arg(DELAY)
        .arg(GRACE)
        .arg(1)
        .arg(ask);
    call.invoke(con, &scripts.library)
        .map_err(|err| err.to_string())
}

/// One process at a time holds an address: another is told to ask again (at a quarter of a
/// term at most), the holder keeps it a term at least and is then told its last term; given
/// back, the address goes to the process that waited, whose first start comes a delay after
/// the holder's last; the one that gave it back does not take it again while the other
/// waits.
#[test]
fn an_address_passes_from_process_to_process_a_delay_after_the_last_start() {
    let (_server, mut con, scripts) = server_and_scripts();
    let mut ask = |at, me, what: &str| hold(&mut con, &scripts, at, me, what).unwrap();
    assert_eq!(ask(0, P1, "h"), [1, 1_000, 0], "free: taken");
    assert_eq!(ask(100, P2, "h"), [0, 250, 0], "held: ask again");
    // Within its first term the holder keeps it, though another waits.
    assert_eq!(ask(500, P1, "h"), [1, 1_000, 0], "renewed till 1,500");
    assert_eq!(
        ask(900, P2, "h"),
        [0, 250, 0],
        "a quarter of a term at most"
    );
    assert_eq!(
        ask(1_200, P1, "h"),
        [2, 300, 0],
        "its last term: another waits"
    );
    assert_eq!(
        ask(1_210, P2, "h"),
        [0, 290, 0],
        "at its last term's end (not a quarter of a term)"
    );
    // Given back at 1,450, its last start 10 ms before.
    assert!(ask(1_450, P1, "10").is_empty());
    assert_eq!(ask(1_450, P1, "h"), [0, 20, 0], "the waiting one's turn");
    assert_eq!(ask(1_450, P2, "h"), [1, 1_000, 10], "a delay after 1,440");
    let again = ask(1_450, P2, "h");
    assert_eq!(
        again,
        [1, 1_000, 10],
        "sent again, its answer lost: the same wait"
    );
    assert_eq!(ask(1_500, P1, "h"), [0, 250, 0], "held by the other now");
}

/// A holder that never gives the address back (killed) keeps it past its term while it
/// was heard from in the last four terms (its requests may be out), and no longer: its
/// requests died with it. Without another waiting, a holder past its term keeps it on asking.
#[test]
fn an_address_a_killed_holder_kept_is_taken_four_terms_after_it_was_heard_from() {
    let (_server, mut con, scripts) = server_and_scripts();
    let mut ask = |at, me, what: &str| hold(&mut con, &scripts, at, me, what).unwrap();
    assert_eq!(ask(0, P1, "h"), [1, 1_000, 0]);
    let kept = ask(1_100, P1, "h");
    assert_eq!(kept, [1, 1_000, 0], "no one waits: kept past its term");
    let out = ask(2_200, P2, "h");
    assert_eq!(
        out,
        [0, 50, 0],
        "past its term, asked again in half the time since"
    );
    let later = ask(5_050, P2, "h");
    assert_eq!(
        later,
        [0, 250, 0],
        "heard from at 1,100: a quarter of a term at most"
    );
    let gone = ask(5_100, P2, "h");
    assert_eq!(gone, [1, 1_000, 0], "not heard from for four terms: gone");
    assert_eq!(
        ask(5_200, P1, "h"),
        [0, 250, 0],
        "back, the killed one waits"
    );
}

/// A holder in its last term, heard from while its requests are out, keeps the address past
/// its term's end a request's hold at most.
#[test]
fn an_address_a_holder_heard_from_keeps_a_hold_past_its_term_at_most() {
    let (_server, mut con, scripts) = server_and_scripts();
    let mut ask = |at, me, what: &str| hold(&mut con, &scripts, at, me, what).unwrap();
    assert_eq!(ask(0, P1, "h"), [1, 1_000, 0]);
    assert_eq!(ask(100, P2, "h")[0], 0);
    for at in [1_000, 2_500, 4_000, 5_000] {
        assert_eq!(
            ask(at, P1, "h"),
            [2, 1_000 - at as i64, 0],
            "its last term, at {at}"
        );
        assert_eq!(ask(at + 1, P2, "h")[0], 0, "still out at {at}");
    }
    assert_eq!(ask(5_999, P2, "h")[0], 0, "within its hold");
    assert_eq!(ask(6_000, P2, "h"), [1, 1_000, 0], "its hold over");
}

/// A process that gives back an address it no longer holds (its term and hold over, the
/// address taken by another) changes nothing; an address's key goes with its last write's
/// time to live.
#[test]
fn a_late_give_back_changes_nothing_and_the_key_expires() {
    let (_server, mut con, scripts) = server_and_scripts();
    assert_eq!(hold(&mut con, &scripts, 0, P1, "h").unwrap()[0], 1);
    assert_eq!(hold(&mut con, &scripts, 6_001, P2, "h").unwrap()[0], 1);
    assert!(hold(&mut con, &scripts, 6_002, P1, "0").unwrap().is_empty());
    assert_eq!(
        hold(&mut con, &scripts, 6_003, P2, "h").unwrap(),
        [1, 1_000, 0]
    );
    let ttl: i64 = redis::cmd("PTTL")
        .arg(address_key())
        .query(&mut con)
        .unwrap();
    let most = (3 * TERM + DELAY + GRACE) as i64;
    assert!(ttl > most - 1_000 && ttl <= most, "{ttl} ms");
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
