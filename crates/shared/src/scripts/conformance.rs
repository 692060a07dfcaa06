//! The scripts against the host policy's conformance table (`frontier::conformance`), on a
//! real `redis-server`, their clock set to each step's time.

use frontier::conformance::{
    BUDGET_CASES, BudgetCase, CASES, Case, HOST, Leased, Store, memo, run, run_budget, url_number,
};
use frontier::{Fate, Outcome, Politeness};
use redis::{Connection, Value};

use super::{
    ADDRESS_KEYS, Clock, Ending, FateCode, HostField, Scripts, address_leave, completion, link,
};
use crate::frontier::batch::{entry_tail, memo_text};
use crate::seen::Schedule;

#[allow(dead_code, unreachable_pub)]
#[path = "../../tests/support/redis.rs"]
mod support;

/// The bucket every case runs in.
const TAG: &str = "{conformance}";

/// Where the cases' time starts, in the scripts' ms: a real date, so that tokens (which
/// grow with the clock) look as they do in a crawl.
const BASE: u64 = 1_764_000_000_000;

struct Redis<'a> {
    con: &'a mut Connection,
    scripts: &'a Scripts,
    politeness: Politeness,
    schedule: Schedule,
    requests: u64,
}

/// A lease as the tests hold it: its token and URL.
struct Held {
    token: String,
    url: String,
}

impl Redis<'_> {
    fn clock(&mut self, at: u64) -> Result<(), String> {
        redis::cmd("SET")
            .arg(format!("{TAG}:clock"))
            .arg(BASE + at)
            .exec(self.con)
            .map_err(|err| err.to_string())
    }

    fn request(&mut self) -> String {
        self.requests += 1;
        format!("request-{}", self.requests)
    }

    /// One batch entry: a lease ended or a link alone. Answers its first five numbers.
    fn batch(
        &mut self,
        at: u64,
        lease: Option<(&str, &str, Ending)>,
        url: Option<(&str, Option<Vec<u8>>)>,
    ) -> Result<Vec<i64>, String> {
        self.clock(at)?;
        let request = self.request();
        let mut call = self.scripts.batch_call(
            TAG,
            &self.politeness,
            self.schedule.text(0),
            &request,
            [0; 3],
        );
        completion(&mut call, lease, usize::from(url.is_some()));
        if let Some((url, memo)) = url {
            let probes = self.schedule.probes(&[7; 16], url);
            let memo = memo.as_deref().map(memo_text);
            link(&mut call, &probes, HOST, 0, url, None, memo.as_deref(), "");
        }
        let answer: Vec<i64> = call
            .invoke(self.con, &self.scripts.library)
            .map_err(|err| err.to_string())?;
        Ok(answer[..5].to_vec())
    }
}

impl Store for Redis<'_> {
    type Lease = Held;

    fn push(&mut self, n: u32) -> Result<(), String> {
        let url = format!("https://{HOST}/{n}");
        let answer = self.batch(0, None, Some((&url, memo(n))))?;
        match answer[3] {
            1 => Ok(()),
            _ => Err(format!("{url} not admitted: {answer:?}")),
        }
    }

    fn lease(&mut self, at: u64) -> Result<Leased<Held>, String> {
        self.clock(at)?;
        let request = self.request();
        let call = self.scripts.lease_call(
            TAG,
            &self.politeness,
            1,
            std::time::Duration::from_secs(3600),
            &request,
        );
        let answer: Vec<Value> = call
            .invoke(self.con, &self.scripts.library)
            .map_err(|err| err.to_string())?;
        let text = |v: &Value| match v {
            Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
            Value::Int(n) => Ok(n.to_string()),
            other => Err(format!("unexpected {other:?}")),
        };
        let number = |v: &Value| text(v)?.parse::<i64>().map_err(|err| err.to_string());
        if answer.len() == 6 {
            let ready = number(&answer[0])?;
            return Ok(match u64::try_from(ready) {
                // -1 exactly: the bucket's skiplist member (at +inf) is no ready host.
                Err(_) if ready == -1 => Leased::Nothing,
                Err(_) => return Err(format!("ready at {ready}")),
                Ok(ready) if ready > BASE + at => Leased::WaitUntil(ready - BASE),
                Ok(ready) => return Err(format!("ready at {ready} but no lease")),
            });
        }
        let [token, host, entry, given_up] = &answer[6..] else {
            return Err(format!("unexpected answer {answer:?}"));
        };
        let (token, entry) = (text(token)?, text(entry)?);
        if text(host)? != HOST {
            return Err(format!("a lease of {host:?}"));
        }
        let mut parts = entry.splitn(4, ' ');
        let (Some(before), Some(_depth), Some(url)) = (parts.next(), parts.next(), parts.next())
        else {
            return Err(format!("unexpected entry {entry:?}"));
        };
        let (_, memo) = entry_tail(parts.next());
        let before: u32 = before.parse().map_err(|_| format!("entry {entry:?}"))?;
        Ok(Leased::Granted {
            url: url_number(url)?,
            attempts: before + 1,
            given_up: number(given_up)? == 1,
            memo,
            lease: Held {
                token,
                url: url.to_string(),
            },
        })
    }

    fn complete(
        &mut self,
        lease: Held,
        outcome: Outcome,
        at: u64,
    ) -> Result<(Fate, Option<u64>), String> {
        let ending = Ending::Fetched(outcome);
        let answer = self.batch(at, Some((&lease.token, &lease.url, ending)), None)?;
        let fate = FateCode::fate(answer[0], answer[1])?.ok_or("the lease is not held")?;
        Ok((fate, u64::try_from(answer[2]).ok()))
    }

    fn crawl_delay(&mut self, delay: u64) -> Result<(), String> {
        let call = self.scripts.crawl_delay_call(
            TAG,
            HOST,
            std::time::Duration::from_millis(delay),
            &self.politeness,
        );
        call.invoke::<i64>(self.con, &self.scripts.library)
            .map(drop)
            .map_err(|err| err.to_string())
    }

    fn abandon(&mut self, lease: Held, at: u64, until: Option<u64>) -> Result<(), String> {
        let wait = std::time::Duration::from_millis(until.map_or(0, |u| u.saturating_sub(at)));
        let ending = Ending::GivenBack(wait);
        let answer = self.batch(at, Some((&lease.token, &lease.url, ending)), None)?;
        match FateCode::ALL.into_iter().find(|c| *c as i64 == answer[0]) {
            Some(FateCode::GivenBack) => Ok(()),
            _ => Err(format!("the lease was not given back: fate {}", answer[0])),
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

fn run_case(con: &mut Connection, scripts: &Scripts, case: &Case) -> Result<(), String> {
    redis::cmd("FLUSHALL")
        .exec(con)
        .map_err(|err| err.to_string())?;
    let settings = case.settings;
    if settings.own_delay.is_some() || settings.own_connections.is_some() {
        // As a process stores a `[[hosts]]` entry's settings before the host's first links.
        let mut call = scripts.host_policy.prepare_invoke();
        call.key(format!("{TAG}:hosts"))
            .key(format!("{TAG}:counts"))
            .arg(TAG)
            .arg(HOST)
            .arg(settings.own_delay.map_or(-1, |ms| ms as i64))
            .arg(settings.own_connections.map_or(-1, i64::from));
        call.invoke::<i64>(con, &scripts.library)
            .map_err(|err| err.to_string())?;
    }
    let mut store = Redis {
        con,
        scripts,
        politeness: case.settings.politeness(),
        schedule: Schedule::new(10_000, 0.001, 1).map_err(|err| err.to_string())?,
        requests: 0,
    };
    run(case, &mut store)
}

#[test]
fn the_scripts_pass_the_table() {
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
    let politeness = frontier::conformance::Settings::DEFAULT.politeness();
    let budgets = [case.host_pages, case.domain_hosts, case.domain_pages];
    let mut n = 0;
    run_budget(case, |host| {
        n += 1;
        let url = format!("https://{host}/{n}");
        let request = format!("budget-{n}");
        let mut call = scripts.batch_call(TAG, &politeness, schedule.text(0), &request, budgets);
        completion(&mut call, None, 1);
        let probes = schedule.probes(&[7; 16], &url);
        let domain = frontier::registrable_domain_of(host);
        link(&mut call, &probes, host, 0, &url, None, None, domain);
        let answer: Vec<i64> = call
            .invoke(con, &scripts.library)
            .map_err(|err| err.to_string())?;
        match answer.get(3..7) {
            Some([1, 0, 0, 0]) => Ok(None),
            Some([0, 1, 0, 0]) => Ok(Some(DropReason::HostBudget)),
            Some([0, 0, 1, 0]) => Ok(Some(DropReason::DomainHosts)),
            Some([0, 0, 0, 1]) => Ok(Some(DropReason::DomainPages)),
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

/// One step of an address's requests, as the address script answers it: 0 to go, or the
/// wait in ms.
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
    redis::cmd("SET")
        .arg(format!("{TAG}:clock"))
        .arg(BASE + at)
        .exec(con)
        .map_err(|err| err.to_string())?;
    if op == "leave" {
        return address_leave(TAG, token)
            .query::<i64>(con)
            .map(|_| 0)
            .map_err(|err| err.to_string());
    }
    let mut call = scripts.address.prepare_invoke();
    for key in ADDRESS_KEYS {
        call.key(format!("{TAG}:{key}"));
    }
    call.arg(TAG).arg(host).arg(token);
    call.arg(limits.connections)
        .arg(limits.delay.as_millis() as u64)
        .arg(hold)
        .arg(limits.delay.max(frontier::FULL_RETRY).as_millis() as u64)
        .arg(frontier::TICKET_TTL.as_millis() as u64);
    call.invoke(con, &scripts.library)
        .map_err(|err| err.to_string())
}

/// The address script and `frontier::AddressRecord` answer every step of many sequences of
/// requests alike: hosts asking turns at times a few ms apart, some coming back at their
/// turn, some late, requests leaving, under several limits.
#[test]
fn the_address_script_follows_the_address_rule() {
    use std::time::{Duration, Instant};

    use frontier::{AddressLimits, AddressRecord, Turn};

    let (_server, mut con, scripts) = server_and_scripts();
    let t0 = Instant::now();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut random = |n: u64| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed % n
    };
    for (connections, delay) in [(2, 100), (0, 50), (3, 0), (1, 30)] {
        redis::cmd("FLUSHALL").exec(&mut con).expect("FLUSHALL");
        let limits = AddressLimits {
            connections,
            delay: Duration::from_millis(delay),
        };
        let mut record = AddressRecord::default();
        let mut in_flight: Vec<String> = Vec::new();
        let (mut at, mut tokens) = (0u64, 0u64);
        for step in 0..400 {
            at += random(40);
            if !in_flight.is_empty() && random(3) == 0 {
                let token = in_flight.swap_remove(random(in_flight.len() as u64) as usize);
                let host = token.split(' ').next().unwrap_or_default().to_owned();
                address_step(&mut con, &scripts, at, "leave", &host, &token, limits, HOUR).unwrap();
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
            let answer = address_step(&mut con, &scripts, at, "enter", &host, &token, limits, HOUR);
            assert_eq!(
                answer,
                Ok(expected),
                "limits {limits:?}, step {step} at {at} ms: {host} asked"
            );
            if expected == 0 {
                in_flight.push(token);
            }
        }
    }
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
            .arg(format!("{TAG}:{key}"))
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
        .arg(format!("{TAG}:inflight"))
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
    let lease = |con: &mut Connection, request: &str| -> Vec<i64> {
        let call = scripts.lease_call(
            TAG,
            &Politeness::default(),
            1,
            std::time::Duration::from_secs(60),
            request,
        );
        call.invoke(con, &scripts.library).expect("a lease call")
    };
    redis::cmd("SET")
        .arg(format!("{TAG}:clock"))
        .arg(BASE)
        .exec(&mut con)
        .expect("SET");
    assert!(
        libraries(&mut con).is_empty(),
        "a new server holds no library"
    );
    // Nothing queued: the bucket's view, and no lease reaped.
    assert_eq!(lease(&mut con, "r1").len(), 6);
    assert_eq!(libraries(&mut con).len(), 1, "the first call loaded it");
    // As after a restart from a snapshot taken before it was loaded.
    redis::cmd("FUNCTION")
        .arg("FLUSH")
        .exec(&mut con)
        .expect("FUNCTION FLUSH");
    assert_eq!(lease(&mut con, "r2").len(), 6);
    assert_eq!(libraries(&mut con).len(), 1);
}

/// A host's state as the scripts stored it, its fields as text.
fn host_text(stored: &[u8]) -> String {
    let fields = HostField::decode(stored).expect("a host's state");
    fields.map(|n| n.to_string()).join(" ")
}

#[test]
fn a_host_state_of_another_version_reads_with_defaults_for_what_it_lacks() {
    let (_server, mut con, scripts) = server_and_scripts();
    let politeness = Politeness::default();
    let mut state_after_delay = |stored: &[u8]| -> String {
        let hosts = format!("{TAG}:hosts");
        redis::cmd("HSET")
            .arg(&hosts)
            .arg(HOST)
            .arg(stored)
            .exec(&mut con)
            .expect("HSET");
        redis::cmd("SET")
            .arg(format!("{TAG}:clock"))
            .arg(BASE)
            .exec(&mut con)
            .expect("SET");
        let call = scripts.crawl_delay_call(
            TAG,
            HOST,
            std::time::Duration::from_millis(5000),
            &politeness,
        );
        call.invoke::<i64>(&mut con, &scripts.library)
            .expect("a crawl-delay call");
        let written: Vec<u8> = redis::cmd("HGET")
            .arg(&hosts)
            .arg(HOST)
            .query(&mut con)
            .expect("HGET");
        assert_eq!(
            written[..2],
            [255, 9],
            "written whole, as this version writes"
        );
        host_text(&written)
    };
    // Fields: active, next, delay, errors, since, given up, connections, pages, last.
    assert_eq!(
        state_after_delay(&host_bytes(&[2, 1000, -1, 1, 900, 0, 4, 7, 800])),
        "2 5800 5000 1 900 0 4 7 800",
        "the next start spaced from the last by the new delay"
    );
    // Written before pages and the last start were kept: they read as 0 (no last start to
    // space from).
    assert_eq!(
        state_after_delay(&host_bytes(&[2, 1000, -1, 1, 900, 0, 4])),
        "2 1000 5000 1 900 0 4 0 0"
    );
    // Written by a later version with a tenth field: the nine known are kept.
    let mut later = host_bytes(&[2, 1000, -1, 1, 900, 0, 4, 7, 800]);
    later[1] = 10;
    later.extend([0, 0, 0, 3]);
    assert_eq!(state_after_delay(&later), "2 5800 5000 1 900 0 4 7 800");
    // Negative values and times in ms past 2^32 come back as they went.
    assert_eq!(
        state_after_delay(&host_bytes(&[0, 1_795_796_411_199, -1, 0, 0, 0, -1, 0, 0])),
        "0 1795796411199 5000 0 0 0 -1 0 0"
    );
}

/// A host's state as the scripts store it: byte 255, the number of fields, the fields.
fn host_bytes(fields: &[i64]) -> Vec<u8> {
    let mut out = vec![255, fields.len() as u8];
    for (field, value) in HostField::ALL.iter().zip(fields) {
        out.extend_from_slice(&value.to_be_bytes()[8 - field.width()..]);
    }
    out
}

#[test]
fn replies_are_kept_a_period_at_least_in_two_hashes_taking_turns() {
    const PERIOD: u64 = 150_000;
    let (_server, mut con, scripts) = server_and_scripts();
    let schedule = Schedule::new(10_000, 0.001, 1).expect("a schedule");
    let probes = schedule.probes(&[7; 16], "\0#body");
    // The content test of one body, at `at` ms, with request id `id`.
    let test = |con: &mut Connection, at: u64, id: &str| -> Vec<i64> {
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
        call.invoke(con, &scripts.library).expect("a content call")
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
    assert_eq!(test(&mut con, start, "a")[0], 1, "a new body");
    assert_eq!(test(&mut con, start + 10, "b")[0], 0, "read before");
    assert_eq!(
        test(&mut con, start + 20, "a")[0],
        1,
        "sent again: the first answer"
    );
    // The next period's replies go to the other hash; the first one's are still there.
    assert_eq!(test(&mut con, start + PERIOD, "c")[0], 0);
    assert_eq!(test(&mut con, start + PERIOD + 10, "a")[0], 1, "still kept");
    assert_eq!(replies(&mut con, "replies0"), ["_period", "a", "b"]);
    assert_eq!(replies(&mut con, "replies1"), ["_period", "c"]);
    // Two periods on, the first hash is emptied before it takes its new replies.
    assert_eq!(test(&mut con, start + 2 * PERIOD, "d")[0], 0);
    assert_eq!(replies(&mut con, "replies0"), ["_period", "d"]);
    // A hash deleted within its period (a crawl removed) takes replies again, and is still
    // emptied at its next turn.
    redis::cmd("DEL")
        .arg(format!("{TAG}:replies0"))
        .exec(&mut con)
        .expect("DEL");
    assert_eq!(test(&mut con, start + 2 * PERIOD + 10, "e")[0], 0);
    assert!(replies(&mut con, "replies0").contains(&"e".to_owned()));
    assert_eq!(test(&mut con, start + 4 * PERIOD, "f")[0], 0);
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
    let politeness = Politeness::default();
    let set_delay = |con: &mut Connection, scripts: &Scripts, ms: u64| {
        let call =
            scripts.crawl_delay_call(tag, HOST, std::time::Duration::from_millis(ms), &politeness);
        call.invoke::<i64>(con, &scripts.library)
    };
    let stored = |con: &mut Connection| -> String {
        let written: Vec<u8> = redis::cmd("HGET")
            .arg(&hosts)
            .arg(HOST)
            .query(con)
            .expect("HGET");
        host_text(&written)
    };
    set_delay(&mut cons[owner], &on_cluster, 1000).expect("a call on a still slot");
    assert_eq!(stored(&mut cons[owner]), "0 0 1000 0 0 0 -1 0 0");
    // Another host ready: every key the call declares exists.
    redis::cmd("ZADD")
        .arg(format!("{tag}:ready"))
        .arg(0)
        .arg("other.example")
        .exec(&mut cons[owner])
        .expect("ZADD");

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
    let refused = set_delay(&mut cons[owner], &on_cluster, 2000).expect_err("refused");
    assert_eq!(refused.code(), Some("TRYAGAIN"), "{refused}");
    assert_eq!(stored(&mut cons[owner]), "0 0 1000 0 0 0 -1 0 0");
    // On the new master, asked there (`ASKING`) as a client follows an ASK redirection.
    let asked: redis::RedisResult<Vec<Value>> = redis::pipe()
        .cmd("ASKING")
        .add_command(
            on_cluster
                .crawl_delay_call(
                    tag,
                    HOST,
                    std::time::Duration::from_millis(3000),
                    &politeness,
                )
                .cmd(),
        )
        .query(&mut cons[target]);
    let refused = asked.expect_err("refused on the new master");
    assert_eq!(refused.code(), Some("TRYAGAIN"), "{refused}");
    // What the refusal prevents: a call declaring only keys that exist runs, and fails at
    // the first key of the moving slot it names itself (the host's queue, gone to the new
    // master as far as this one knows), its first write made.
    let half = set_delay(&mut cons[owner], &on_one_server, 4000).expect_err("fails half-way");
    assert!(half.to_string().contains("non local key"), "{half}");
    assert_eq!(stored(&mut cons[owner]), "0 0 4000 0 0 0 -1 0 0");

    // Moved back to still: calls run again.
    for i in [owner, target] {
        redis::cmd("CLUSTER")
            .arg("SETSLOT")
            .arg(slot)
            .arg("STABLE")
            .exec(&mut cons[i])
            .expect("CLUSTER SETSLOT STABLE");
    }
    set_delay(&mut cons[owner], &on_cluster, 5000).expect("a call on a still slot");
    assert_eq!(stored(&mut cons[owner]), "0 0 5000 0 0 0 -1 0 0");
}
