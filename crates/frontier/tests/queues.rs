//! Per-host queues and politeness, on a simulated clock: order (FIFO per host, fair across
//! hosts), waiting (`WaitUntil`, `Pending`, `Done`), delays, connection limits, crawl delay,
//! Retry-After, back-off, giving hosts up, retries, foreign leases, and properties over random
//! sequences of pushes, pops, completions and clock steps.

use std::collections::{HashMap, HashSet};
use std::time::{Duration, Instant};

use frontier::{
    Completion, Fate, HostPoliteness, HostQueues, Lease, Next, Outcome, Politeness,
    PolitenessErrorKind, Pushed,
};
use proptest::prelude::*;

mod common;
use common::{ms, secs, url};

/// The lease `pop` must return.
#[track_caller]
fn lease(pop: Next) -> Lease {
    match pop {
        Next::Lease(lease) => lease,
        other => panic!("expected a lease, got {other:?}"),
    }
}

/// Queues with no delay, so that tests of order need no clock.
fn no_delay(connections: u32) -> HostQueues {
    HostQueues::new(
        Politeness::builder()
            .delay(Duration::ZERO)
            .connections_per_host(connections)
            .build()
            .unwrap(),
    )
}

fn push_all(queues: &mut HostQueues, urls: &[&str], now: Instant) {
    for u in urls {
        assert_eq!(queues.push(url(u), 0, now).unwrap(), Pushed::Queued);
    }
}

fn complete(queues: &mut HostQueues, lease: Lease, outcome: Outcome, now: Instant) -> Completion {
    queues.complete(lease, outcome, now).expect("own lease")
}

// ---- Order. ----

#[test]
fn urls_of_one_host_come_out_first_in_first_out() {
    let mut queues = no_delay(1);
    let t0 = Instant::now();
    let urls = [
        "http://a.example/3",
        "http://a.example/1",
        "http://a.example/2",
    ];
    push_all(&mut queues, &urls, t0);
    for expected in urls {
        let l = lease(queues.pop(t0).unwrap());
        assert_eq!(l.url().as_str(), expected);
        complete(&mut queues, l, Outcome::Success, t0);
    }
    assert_eq!(queues.pop(t0).unwrap(), Next::Done);
}

#[test]
fn ready_hosts_take_turns() {
    let t0 = Instant::now();
    let urls = [
        "http://a.example/1",
        "http://a.example/2",
        "http://a.example/3",
        "http://b.example/1",
        "http://b.example/2",
        "http://c.example/1",
    ];
    let expected = [
        "http://a.example/1",
        "http://b.example/1",
        "http://c.example/1",
        "http://a.example/2",
        "http://b.example/2",
        "http://a.example/3",
    ];

    // One connection each, every lease completed at once.
    let mut queues = no_delay(1);
    push_all(&mut queues, &urls, t0);
    let mut order = Vec::new();
    while let Next::Lease(l) = queues.pop(t0).unwrap() {
        order.push(l.url().as_str().to_owned());
        complete(&mut queues, l, Outcome::Success, t0);
    }
    assert_eq!(order, expected);

    // Many connections, leases held: still one URL per host in turn, not a host drained.
    let mut queues = no_delay(8);
    push_all(&mut queues, &urls, t0);
    let mut held = Vec::new();
    while let Next::Lease(l) = queues.pop(t0).unwrap() {
        held.push(l);
    }
    let order: Vec<&str> = held.iter().map(|l| l.url().as_str()).collect();
    assert_eq!(order, expected);
}

#[test]
fn the_host_ready_longest_goes_first() {
    let mut queues = HostQueues::new(Politeness::default()); // 1 s delay
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &["http://a.example/1", "http://a.example/2"],
        t0,
    );
    let a1 = lease(queues.pop(t0).unwrap());
    complete(&mut queues, a1, Outcome::Success, t0); // a.example ready again at t0 + 1 s
    // b.example gets its first URL at t0 + 5 s: a.example has been waiting since t0 + 1 s.
    push_all(&mut queues, &["http://b.example/1"], t0 + secs(5));
    assert_eq!(
        lease(queues.pop(t0 + secs(5)).unwrap()).url().as_str(),
        "http://a.example/2"
    );
    assert_eq!(
        lease(queues.pop(t0 + secs(5)).unwrap()).url().as_str(),
        "http://b.example/1"
    );
}

#[test]
fn a_host_with_a_port_is_a_host_of_its_own() {
    let mut queues = HostQueues::new(Politeness::default());
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &[
            "http://a.example/",
            "http://a.example:8080/",
            "https://a.example/x",
        ],
        t0,
    );
    assert_eq!(queues.stats().hosts, 2); // the scheme is not part of the key
    let _first = lease(queues.pop(t0).unwrap());
    let second = lease(queues.pop(t0).unwrap());
    assert_eq!(second.url().host_key(), "a.example:8080");
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending);
}

// ---- Waiting. ----

#[test]
fn wait_until_names_the_earliest_ready_instant() {
    let mut queues = HostQueues::new(Politeness::default());
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &[
            "http://a.example/1",
            "http://a.example/2",
            "http://b.example/1",
            "http://b.example/2",
        ],
        t0,
    );
    let a1 = lease(queues.pop(t0).unwrap());
    let b1 = lease(queues.pop(t0 + ms(200)).unwrap());
    complete(&mut queues, a1, Outcome::Success, t0 + ms(100)); // a.example: t0 + 1.1 s
    complete(&mut queues, b1, Outcome::Success, t0 + ms(300)); // b.example: t0 + 1.3 s
    assert_eq!(
        queues.pop(t0 + ms(500)).unwrap(),
        Next::WaitUntil(t0 + ms(1100))
    );
    assert_eq!(
        queues.pop(t0 + ms(1099)).unwrap(),
        Next::WaitUntil(t0 + ms(1100))
    );
    let a2 = lease(queues.pop(t0 + ms(1100)).unwrap());
    assert_eq!(a2.url().as_str(), "http://a.example/2");
    assert_eq!(
        queues.pop(t0 + ms(1100)).unwrap(),
        Next::WaitUntil(t0 + ms(1300))
    );
}

#[test]
fn pending_while_leases_are_in_flight_done_when_none_are() {
    let mut queues = HostQueues::new(Politeness::default());
    let t0 = Instant::now();
    assert_eq!(queues.pop(t0).unwrap(), Next::Done);

    push_all(
        &mut queues,
        &["http://a.example/1", "http://a.example/2"],
        t0,
    );
    let a1 = lease(queues.pop(t0).unwrap());
    // A URL queued, but its host at its connection limit.
    assert_eq!(queues.pop(t0 + secs(10)).unwrap(), Next::Pending);
    complete(&mut queues, a1, Outcome::Success, t0 + secs(10));
    let a2 = lease(queues.pop(t0 + secs(11)).unwrap());
    // Nothing queued, a lease in flight.
    assert_eq!(queues.pop(t0 + secs(11)).unwrap(), Next::Pending);
    complete(&mut queues, a2, Outcome::Success, t0 + secs(12));
    assert_eq!(queues.pop(t0 + secs(12)).unwrap(), Next::Done);
    // Done is not final: pushing more starts again.
    push_all(&mut queues, &["http://a.example/3"], t0 + secs(12));
    assert_eq!(
        queues.pop(t0 + secs(12)).unwrap(),
        Next::WaitUntil(t0 + secs(13))
    );
}

// ---- Delays and connections. ----

#[test]
fn starts_are_a_delay_apart_and_the_delay_follows_each_completion() {
    let polite = Politeness::builder()
        .delay(secs(2))
        .connections_per_host(4)
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &[
            "http://a.example/1",
            "http://a.example/2",
            "http://a.example/3",
        ],
        t0,
    );
    let a1 = lease(queues.pop(t0).unwrap());
    // Connections to spare, but the delay runs from the start.
    assert_eq!(
        queues.pop(t0 + ms(1999)).unwrap(),
        Next::WaitUntil(t0 + secs(2))
    );
    let _a2 = lease(queues.pop(t0 + secs(2)).unwrap());
    // A completion at t0 + 3 s pushes the next start to t0 + 5 s, past the t0 + 4 s the
    // starts alone would allow.
    complete(&mut queues, a1, Outcome::Success, t0 + secs(3));
    assert_eq!(
        queues.pop(t0 + secs(4)).unwrap(),
        Next::WaitUntil(t0 + secs(5))
    );
    let _a3 = lease(queues.pop(t0 + secs(5)).unwrap());
}

#[test]
fn in_flight_never_exceeds_the_connection_limit() {
    let mut queues = no_delay(3);
    let t0 = Instant::now();
    let urls: Vec<String> = (0..10).map(|i| format!("http://a.example/{i}")).collect();
    for u in &urls {
        queues.push(url(u), 0, t0).unwrap();
    }
    let mut held: Vec<Lease> = (0..3).map(|_| lease(queues.pop(t0).unwrap())).collect();
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending);
    assert_eq!(queues.stats().in_flight, 3);
    complete(&mut queues, held.remove(0), Outcome::Success, t0);
    held.push(lease(queues.pop(t0).unwrap()));
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending);
    // Another host is not held up by this one's limit.
    push_all(&mut queues, &["http://b.example/"], t0);
    assert_eq!(lease(queues.pop(t0).unwrap()).url().host_key(), "b.example");
}

#[test]
fn crawl_delay_replaces_a_shorter_delay_up_to_the_cap() {
    let polite = Politeness::builder()
        .max_crawl_delay(secs(10))
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    assert_eq!(queues.set_crawl_delay("a.example", secs(4)), secs(4));
    assert_eq!(queues.set_crawl_delay("b.example", secs(3600)), secs(10));
    // Shorter than the configured 1 s: the configured delay holds.
    assert_eq!(queues.set_crawl_delay("c.example", ms(100)), ms(100));
    for host in ["a", "b", "c"] {
        for i in 0..2 {
            queues
                .push(url(&format!("http://{host}.example/{i}")), 0, t0)
                .unwrap();
        }
    }
    for _ in 0..3 {
        let l = lease(queues.pop(t0).unwrap());
        complete(&mut queues, l, Outcome::Success, t0);
    }
    assert_eq!(queues.pop(t0).unwrap(), Next::WaitUntil(t0 + secs(1))); // c.example
    assert_eq!(
        lease(queues.pop(t0 + secs(1)).unwrap()).url().host_key(),
        "c.example"
    );
    assert_eq!(
        queues.pop(t0 + secs(1)).unwrap(),
        Next::WaitUntil(t0 + secs(4))
    ); // a.example
    assert_eq!(
        lease(queues.pop(t0 + secs(4)).unwrap()).url().host_key(),
        "a.example"
    );
    assert_eq!(
        queues.pop(t0 + secs(4)).unwrap(),
        Next::WaitUntil(t0 + secs(10))
    ); // b.example
}

#[test]
fn a_crawl_delay_learnt_during_a_lease_spaces_the_next_start() {
    // The crawler fetches robots.txt once it holds the host's first lease.
    let mut queues = HostQueues::new(
        Politeness::builder()
            .connections_per_host(2)
            .build()
            .unwrap(),
    );
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &["http://a.example/1", "http://a.example/2"],
        t0,
    );
    let _a1 = lease(queues.pop(t0).unwrap());
    assert_eq!(queues.pop(t0).unwrap(), Next::WaitUntil(t0 + secs(1)));
    queues.set_crawl_delay("a.example", secs(5));
    assert_eq!(
        queues.pop(t0 + secs(1)).unwrap(),
        Next::WaitUntil(t0 + secs(5))
    );
}

/// The crawl's politeness (1 connection, 1 s) with a host of its own: `fast.example` takes
/// 3 connections and no delay, `slow.example` one start every 5 s.
fn with_own_hosts() -> HostQueues {
    HostQueues::new(
        Politeness::builder()
            .per_host(|host: &str| match host {
                "fast.example" => HostPoliteness::new().delay(Duration::ZERO).connections(3),
                "slow.example" => HostPoliteness::new().delay(secs(5)),
                _ => HostPoliteness::new(),
            })
            .build()
            .unwrap(),
    )
}

#[test]
fn a_host_of_its_own_takes_its_connections_and_delay_from_its_first_lease() {
    let mut queues = with_own_hosts();
    let t0 = Instant::now();
    let urls: Vec<String> = (0..5).map(|i| format!("http://fast.example/{i}")).collect();
    for u in &urls {
        queues.push(url(u), 0, t0).unwrap();
    }
    // Three at once, no delay between them, and not a fourth.
    let mut held: Vec<Lease> = (0..3).map(|_| lease(queues.pop(t0).unwrap())).collect();
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending);
    complete(&mut queues, held.remove(0), Outcome::Success, t0);
    held.push(lease(queues.pop(t0).unwrap()));
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending);
}

#[test]
fn a_host_of_its_own_waits_its_delay_and_others_the_crawls() {
    let mut queues = with_own_hosts();
    let t0 = Instant::now();
    for host in ["slow", "other"] {
        for i in 0..2 {
            queues
                .push(url(&format!("http://{host}.example/{i}")), 0, t0)
                .unwrap();
        }
    }
    for _ in 0..2 {
        let l = lease(queues.pop(t0).unwrap());
        complete(&mut queues, l, Outcome::Success, t0);
    }
    assert_eq!(queues.pop(t0).unwrap(), Next::WaitUntil(t0 + secs(1)));
    let other = lease(queues.pop(t0 + secs(1)).unwrap());
    assert_eq!(other.url().host_key(), "other.example");
    assert_eq!(
        queues.pop(t0 + secs(1)).unwrap(),
        Next::WaitUntil(t0 + secs(5))
    );
    assert_eq!(
        lease(queues.pop(t0 + secs(5)).unwrap()).url().host_key(),
        "slow.example"
    );
}

#[test]
fn a_longer_crawl_delay_wins_over_a_hosts_own_delay() {
    // The site's robots.txt asks for 2 s: a delay of 0 for the host does not undercut it,
    // and a host's own 5 s is not shortened by a Crawl-delay of 2 s.
    let mut queues = with_own_hosts();
    let t0 = Instant::now();
    queues.set_crawl_delay("fast.example", secs(2));
    queues.set_crawl_delay("slow.example", secs(2));
    for host in ["fast", "slow"] {
        for i in 0..2 {
            queues
                .push(url(&format!("http://{host}.example/{i}")), 0, t0)
                .unwrap();
        }
    }
    let first = lease(queues.pop(t0).unwrap());
    let second = lease(queues.pop(t0).unwrap());
    assert_eq!(queues.pop(t0).unwrap(), Next::WaitUntil(t0 + secs(2)));
    complete(&mut queues, first, Outcome::Success, t0);
    complete(&mut queues, second, Outcome::Success, t0);
    assert_eq!(
        lease(queues.pop(t0 + secs(2)).unwrap()).url().host_key(),
        "fast.example"
    );
    assert_eq!(
        queues.pop(t0 + secs(2)).unwrap(),
        Next::WaitUntil(t0 + secs(5))
    );
}

#[test]
fn a_policy_cannot_set_zero_connections_or_an_endless_delay() {
    let polite = Politeness::builder()
        .per_host(|_: &str| HostPoliteness::new().connections(0).delay(Duration::MAX))
        .build()
        .unwrap();
    let own = polite.host("a.example");
    assert_eq!(own.connections, Some(1));
    assert_eq!(own.delay, Some(Politeness::MAX_DURATION));
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &["http://a.example/1", "http://a.example/2"],
        t0,
    );
    let first = lease(queues.pop(t0).unwrap());
    complete(&mut queues, first, Outcome::Success, t0);
    assert_eq!(
        queues.pop(t0).unwrap(),
        Next::WaitUntil(t0 + Politeness::MAX_DURATION)
    );
}

#[test]
fn retry_after_is_honoured_up_to_the_cap() {
    let polite = Politeness::builder()
        .max_retry_after(secs(60))
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &["http://a.example/1", "http://b.example/1"],
        t0,
    );
    let a = lease(queues.pop(t0).unwrap());
    let b = lease(queues.pop(t0).unwrap());
    let after = |s| Outcome::Failure {
        retry: true,
        retry_after: Some(secs(s)),
    };
    complete(&mut queues, a, after(20), t0);
    complete(&mut queues, b, after(86_400), t0);
    assert_eq!(queues.pop(t0).unwrap(), Next::WaitUntil(t0 + secs(20)));
    let a = lease(queues.pop(t0 + secs(20)).unwrap());
    assert_eq!(a.attempts(), 2);
    assert_eq!(
        queues.pop(t0 + secs(20)).unwrap(),
        Next::WaitUntil(t0 + secs(60))
    );
}

#[test]
fn back_off_doubles_up_to_its_cap_and_resets_on_success() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(secs(1))
        .backoff_max(secs(5))
        .max_consecutive_errors(100)
        .max_attempts(100)
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let mut now = Instant::now();
    push_all(&mut queues, &["http://a.example/"], now);
    let mut waits = Vec::new();
    for _ in 0..5 {
        let l = lease(queues.pop(now).unwrap());
        complete(&mut queues, l, Outcome::RETRY, now);
        let Next::WaitUntil(next) = queues.pop(now).unwrap() else {
            panic!("backing off")
        };
        waits.push((next - now).as_secs());
        now = next;
    }
    assert_eq!(waits, [1, 2, 4, 5, 5]);

    let l = lease(queues.pop(now).unwrap());
    complete(&mut queues, l, Outcome::Success, now);
    push_all(&mut queues, &["http://a.example/2"], now);
    let l = lease(queues.pop(now).unwrap()); // no delay after a success
    complete(&mut queues, l, Outcome::RETRY, now);
    assert_eq!(queues.pop(now).unwrap(), Next::WaitUntil(now + secs(1))); // counting from one again
}

#[test]
fn a_host_failing_in_a_row_is_given_up_and_its_urls_handed_out_for_their_records() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(Duration::ZERO)
        .connections_per_host(2)
        .max_consecutive_errors(3)
        .give_up_after(Duration::ZERO)
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    let urls: Vec<String> = (0..6).map(|i| format!("http://a.example/{i}")).collect();
    for u in &urls {
        queues.push(url(u), 0, t0).unwrap();
    }
    push_all(&mut queues, &["http://b.example/"], t0);

    let a0 = lease(queues.pop(t0).unwrap());
    let _b = lease(queues.pop(t0).unwrap());
    let a1 = lease(queues.pop(t0).unwrap());
    assert_eq!(
        complete(&mut queues, a0, Outcome::FAILED, t0).host_given_up,
        None
    );
    let a2 = lease(queues.pop(t0).unwrap());
    // Two errors: not yet.
    assert_eq!(
        complete(&mut queues, a1, Outcome::RETRY, t0).host_given_up,
        None
    );
    let a3 = lease(queues.pop(t0).unwrap());
    assert_eq!(a3.url().as_str(), "http://a.example/3");
    // The third gives the host up: a4, a5 and the queued retry of a1 wait for their records.
    let given_up = complete(&mut queues, a2, Outcome::FAILED, t0);
    assert_eq!(given_up.fate, Fate::Failed);
    assert_eq!(given_up.host_given_up, Some(3));
    // A retry of a lease still in flight is dropped with its host, not queued.
    assert_eq!(
        complete(&mut queues, a3, Outcome::RETRY, t0).fate,
        Fate::DroppedWithHost
    );
    // A later push is queued to be recorded the same way.
    assert_eq!(
        queues.push(url("http://a.example/late"), 0, t0).unwrap(),
        Pushed::HostGivenUp
    );

    // Each comes out at once, flagged: recorded by the caller, never fetched.
    let mut handed_out = Vec::new();
    while let Next::Lease(l) = queues.pop(t0).unwrap() {
        assert!(l.host_given_up(), "{}", l.url());
        handed_out.push((l.url().as_str().to_owned(), l.attempts()));
        assert_eq!(
            complete(&mut queues, l, Outcome::Skipped, t0).fate,
            Fate::DroppedWithHost
        );
    }
    handed_out.sort();
    let expected = [("1", 2), ("4", 1), ("5", 1), ("late", 1)]
        .map(|(path, attempts)| (format!("http://a.example/{path}"), attempts));
    assert_eq!(handed_out, expected);

    let stats = queues.stats();
    assert_eq!(stats.given_up_hosts, 1);
    assert_eq!(stats.given_up_urls, 5);
    assert_eq!(stats.failed, 2);
    assert_eq!(stats.queued, 0);
    assert_eq!(stats.hosts_queued, 0);
    assert_eq!(stats.accounted_for(), Some(stats.pushed));
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending); // b.example is in flight
}

/// Regression: five broken pages at the head of a site gave the whole site up.
/// Errors in a row give a host up only once they have lasted `give_up_after`.
#[test]
fn broken_pages_cost_their_retries_not_their_site() {
    let polite = Politeness::builder().delay(Duration::ZERO).build().unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    let mut now = t0;
    for i in 0..5 {
        push_all(&mut queues, &[&format!("http://a.example/broken/{i}")], now);
    }
    for i in 0..100 {
        push_all(&mut queues, &[&format!("http://a.example/good/{i}")], now);
    }
    let answered_500 = Outcome::ErrorAnswer { retry_after: None };
    loop {
        match queues.pop(now).unwrap() {
            Next::Lease(l) => {
                assert!(!l.host_given_up());
                let outcome = if l.url().as_str().contains("broken") {
                    answered_500
                } else {
                    Outcome::Success
                };
                assert_eq!(complete(&mut queues, l, outcome, now).host_given_up, None);
            }
            Next::WaitUntil(at) => now = at,
            Next::Pending => unreachable!("one lease at a time"),
            Next::Done => break,
        }
    }
    let stats = queues.stats();
    assert_eq!((stats.succeeded, stats.exhausted), (100, 5));
    assert_eq!((stats.given_up_hosts, stats.given_up_urls), (0, 0));
    // After each of the 15 errors (5 pages, 3 tries) but the last, the base back-off, 1 s,
    // no more: doubled per error in a row, the last ten would have waited over 8 minutes.
    assert_eq!(now - t0, secs(14));
}

/// A host that does not answer is backed off more with each error in a row; one that
/// answers with errors is not.
#[test]
fn only_a_host_that_does_not_answer_is_backed_off_more_and_more() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .max_attempts(100)
        .build()
        .unwrap();
    for (outcome, waits) in [
        (Outcome::RETRY, [1, 2, 4, 8, 16]),
        (Outcome::ErrorAnswer { retry_after: None }, [1, 1, 1, 1, 1]),
        (
            Outcome::ErrorAnswer {
                retry_after: Some(secs(7)),
            },
            [7, 7, 7, 7, 7],
        ),
    ] {
        let mut queues = HostQueues::new(polite.clone());
        let mut now = Instant::now();
        push_all(&mut queues, &["http://a.example/"], now);
        let mut seen = Vec::new();
        while seen.len() < 5 {
            let l = lease(queues.pop(now).unwrap());
            complete(&mut queues, l, outcome, now);
            let Next::WaitUntil(next) = queues.pop(now).unwrap() else {
                panic!("backing off")
            };
            seen.push((next - now).as_secs());
            now = next;
        }
        assert_eq!(seen, waits, "{outcome:?}");
    }
}

#[test]
fn a_failing_host_is_given_up_only_after_give_up_after() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(secs(1))
        .backoff_max(secs(10))
        .max_consecutive_errors(3)
        .give_up_after(secs(60))
        .max_attempts(1)
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    let mut now = t0;
    for i in 0..100 {
        push_all(&mut queues, &[&format!("http://down.example/{i}")], now);
    }
    let mut failures = 0;
    let given_up_at = loop {
        match queues.pop(now).unwrap() {
            Next::Lease(l) => {
                failures += 1;
                if complete(&mut queues, l, Outcome::RETRY, now)
                    .host_given_up
                    .is_some()
                {
                    break now;
                }
                assert!(now - t0 < secs(60) || failures < 3);
            }
            Next::WaitUntil(at) => now = at,
            other => panic!("{other:?}"),
        }
    };
    // Back-offs of 1, 2, 4, 8, 10, 10, ... seconds: the first failure at or past 60 s.
    assert_eq!(given_up_at - t0, secs(65));
    assert_eq!(failures, 10);
}

#[test]
fn a_success_between_errors_keeps_the_host() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(Duration::ZERO)
        .max_consecutive_errors(2)
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    let urls: Vec<String> = (0..6).map(|i| format!("http://a.example/{i}")).collect();
    for u in &urls {
        queues.push(url(u), 0, t0).unwrap();
    }
    for outcome in [
        Outcome::FAILED,
        Outcome::Success,
        Outcome::FAILED,
        Outcome::Success,
        Outcome::FAILED,
    ] {
        let l = lease(queues.pop(t0).unwrap());
        assert_eq!(complete(&mut queues, l, outcome, t0).host_given_up, None);
    }
    assert_eq!(queues.stats().given_up_hosts, 0);
}

#[test]
fn retries_stop_at_max_attempts() {
    let polite = Politeness::builder()
        .delay(Duration::ZERO)
        .backoff_base(Duration::ZERO)
        .max_consecutive_errors(10)
        .max_attempts(3)
        .build()
        .unwrap();
    let mut queues = HostQueues::new(polite);
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &["http://a.example/1", "http://a.example/2"],
        t0,
    );

    let mut fates = Vec::new();
    let mut attempts = Vec::new();
    while let Next::Lease(l) = queues.pop(t0).unwrap() {
        attempts.push((l.url().as_url().path().to_owned(), l.attempts()));
        fates.push(complete(&mut queues, l, Outcome::RETRY, t0).fate);
    }
    // A retry goes to the back of its host's queue.
    let path = |p: &str, n| (p.to_owned(), n);
    assert_eq!(
        attempts,
        [
            path("/1", 1),
            path("/2", 1),
            path("/1", 2),
            path("/2", 2),
            path("/1", 3),
            path("/2", 3)
        ]
    );
    assert_eq!(
        fates,
        [
            Fate::Retried { attempts: 2 },
            Fate::Retried { attempts: 2 },
            Fate::Retried { attempts: 3 },
            Fate::Retried { attempts: 3 },
            Fate::Exhausted,
            Fate::Exhausted
        ]
    );
    let stats = queues.stats();
    assert_eq!((stats.retries, stats.exhausted, stats.leases), (4, 2, 6));
    assert_eq!(queues.pop(t0).unwrap(), Next::Done);
}

#[test]
fn depth_survives_a_retry() {
    let mut queues = no_delay(1);
    let t0 = Instant::now();
    queues.push(url("http://a.example/"), 7, t0).unwrap();
    let l = lease(queues.pop(t0).unwrap());
    complete(&mut queues, l, Outcome::RETRY, t0);
    let l = lease(queues.pop(t0 + secs(1)).unwrap());
    assert_eq!((l.depth(), l.attempts()), (7, 2));
}

// ---- Misuse and settings. ----

#[test]
fn a_lease_from_other_queues_is_refused_and_changes_nothing() {
    let t0 = Instant::now();
    let mut a = no_delay(1);
    let mut b = no_delay(1);
    push_all(&mut a, &["http://a.example/1"], t0);
    push_all(&mut b, &["http://a.example/1", "http://a.example/2"], t0);
    let from_a = lease(a.pop(t0).unwrap());
    let from_b = lease(b.pop(t0).unwrap());
    let before = b.stats();

    let err = b.complete(from_a, Outcome::Success, t0).unwrap_err();
    assert_eq!(b.stats(), before);
    assert_eq!(b.pop(t0).unwrap(), Next::Pending); // b.example's connection is still b's lease's
    assert!(err.to_string().contains("issued by other queues"));

    complete(&mut a, err.into_lease(), Outcome::Success, t0);
    complete(&mut b, from_b, Outcome::Success, t0);
    assert_eq!(a.stats().succeeded, 1);
    assert_eq!(
        lease(b.pop(t0).unwrap()).url().as_str(),
        "http://a.example/2"
    );
}

#[test]
fn settings_that_would_stall_or_overflow_are_refused() {
    let zero = |b: frontier::PolitenessBuilder| b.build().unwrap_err().kind();
    assert_eq!(
        zero(Politeness::builder().connections_per_host(0)),
        PolitenessErrorKind::Zero("connections_per_host")
    );
    assert_eq!(
        zero(Politeness::builder().max_attempts(0)),
        PolitenessErrorKind::Zero("max_attempts")
    );
    assert_eq!(
        zero(Politeness::builder().max_consecutive_errors(0)),
        PolitenessErrorKind::Zero("max_consecutive_errors")
    );
    assert_eq!(
        zero(Politeness::builder().max_retry_after(Duration::MAX)),
        PolitenessErrorKind::TooLong("max_retry_after")
    );
    assert!(
        Politeness::builder()
            .backoff_max(Politeness::MAX_DURATION)
            .build()
            .is_ok()
    );
}

#[test]
fn back_off_saturates_instead_of_overflowing() {
    let polite = Politeness::builder()
        .backoff_base(Politeness::MAX_DURATION)
        .backoff_max(Politeness::MAX_DURATION)
        .build()
        .unwrap();
    assert_eq!(polite.backoff(u32::MAX), Politeness::MAX_DURATION);
    assert_eq!(polite.backoff(64), Politeness::MAX_DURATION);
}

// ---- Properties. ----

const HOSTS: [&str; 5] = [
    "a.example",
    "b.example",
    "b.example:8080",
    "c.example",
    "d.example",
];

#[derive(Clone, Debug)]
enum Op {
    Push(usize),
    Pop,
    Advance(u64),
    /// Completes the in-flight lease at this index (modulo their number).
    Complete(usize, Outcome),
    CrawlDelay(usize, u64),
}

fn outcome() -> impl Strategy<Value = Outcome> {
    prop_oneof![
        3 => Just(Outcome::Success),
        2 => (any::<bool>(), prop::option::of(0u64..3_000)).prop_map(|(retry, after)| {
            Outcome::Failure { retry, retry_after: after.map(ms) }
        }),
        1 => prop::option::of(0u64..3_000)
            .prop_map(|after| Outcome::ErrorAnswer { retry_after: after.map(ms) }),
    ]
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        4 => (0..HOSTS.len()).prop_map(Op::Push),
        4 => Just(Op::Pop),
        3 => (0u64..1_500).prop_map(Op::Advance),
        3 => (any::<usize>(), outcome()).prop_map(|(i, o)| Op::Complete(i, o)),
        1 => (0..HOSTS.len(), 0u64..3_000).prop_map(|(h, d)| Op::CrawlDelay(h, d)),
    ]
}

fn politeness() -> impl Strategy<Value = Politeness> {
    (
        1u32..=3,
        0u64..1_500,
        0u64..2_000,
        (0u64..500, 0u64..3_000),
        0u64..2_000,
        (1u32..=4, 0u64..5_000),
        1u32..=3,
        // c.example's own connections and delay, if it has its own.
        prop::option::of((1u32..=4, 0u64..3_000)),
    )
        .prop_map(
            |(
                connections,
                delay,
                max_crawl,
                (base, max_backoff),
                max_after,
                (errors, give_up_after),
                attempts,
                own,
            )| {
                let builder = match own {
                    Some((connections, delay)) => {
                        Politeness::builder().per_host(move |host: &str| {
                            if host == "c.example" {
                                HostPoliteness::new()
                                    .connections(connections)
                                    .delay(ms(delay))
                            } else {
                                HostPoliteness::new()
                            }
                        })
                    }
                    None => Politeness::builder(),
                };
                builder
                    .connections_per_host(connections)
                    .delay(ms(delay))
                    .max_crawl_delay(ms(max_crawl))
                    .backoff_base(ms(base))
                    .backoff_max(ms(max_backoff))
                    .max_retry_after(ms(max_after))
                    .max_consecutive_errors(errors)
                    .give_up_after(ms(give_up_after))
                    .max_attempts(attempts)
                    .build()
                    .unwrap()
            },
        )
}

/// How a URL's story ended.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum End {
    Succeeded,
    Failed,
    Exhausted,
    /// Handed out flagged, never fetched, because its host was given up.
    DroppedQueued,
    /// A retry refused because the host was given up.
    DroppedWithHost,
}

/// What the model's `pop` saw; the lease itself is kept in the model.
#[derive(Debug)]
enum Popped {
    Leased,
    WaitUntil(Instant),
    Pending,
    Done,
}

/// A model of the queues, checking every answer against the properties.
struct Model {
    queues: HostQueues,
    polite: Politeness,
    now: Instant,
    next_url: usize,
    in_flight: Vec<Lease>,
    in_flight_by_host: HashMap<String, u32>,
    queued_by_host: HashMap<String, HashSet<String>>,
    leases_by_url: HashMap<String, u32>,
    retries_by_url: HashMap<String, u32>,
    ends: HashMap<String, End>,
    last_start: HashMap<String, Instant>,
    crawl_delay: HashMap<String, Duration>,
    errors: HashMap<String, u32>,
    failing_since: HashMap<String, Instant>,
    given_up: HashSet<String>,
}

impl Model {
    fn new(polite: Politeness) -> Self {
        Model {
            queues: HostQueues::new(polite.clone()),
            polite,
            now: Instant::now(),
            next_url: 0,
            in_flight: Vec::new(),
            in_flight_by_host: HashMap::new(),
            queued_by_host: HashMap::new(),
            leases_by_url: HashMap::new(),
            retries_by_url: HashMap::new(),
            ends: HashMap::new(),
            last_start: HashMap::new(),
            crawl_delay: HashMap::new(),
            errors: HashMap::new(),
            failing_since: HashMap::new(),
            given_up: HashSet::new(),
        }
    }

    fn end(&mut self, url: &str, end: End) {
        let before = self.ends.insert(url.to_owned(), end);
        assert_eq!(before, None, "{url} ended twice");
    }

    fn push(&mut self, host: usize) {
        let host = HOSTS[host];
        let u = format!("http://{host}/{}", self.next_url);
        self.next_url += 1;
        let pushed = self.queues.push(url(&u), 0, self.now).unwrap();
        if self.given_up.contains(host) {
            assert_eq!(pushed, Pushed::HostGivenUp);
        } else {
            assert_eq!(pushed, Pushed::Queued);
        }
        self.queued_by_host
            .entry(host.to_owned())
            .or_default()
            .insert(u);
    }

    /// Pops once, checking a lease against the properties and keeping it in flight.
    fn pop(&mut self) -> Popped {
        let pop = self.queues.pop(self.now).unwrap();
        match pop {
            Next::Lease(lease) => {
                let u = lease.url().as_str().to_owned();
                let host = lease.url().host_key().to_owned();
                // A given-up host's URLs come out flagged, to be recorded, and only they.
                let flagged = self.given_up.contains(&host);
                assert_eq!(lease.host_given_up(), flagged, "{u}");
                assert!(
                    self.queued_by_host
                        .entry(host.clone())
                        .or_default()
                        .remove(&u),
                    "{u} leased but not queued"
                );
                // (a) Leased once, and once more per retry.
                let leases = self.leases_by_url.entry(u.clone()).or_default();
                *leases += 1;
                let retries = self.retries_by_url.get(&u).copied().unwrap_or(0);
                assert_eq!(*leases, retries + 1, "{u} leased again without a retry");
                assert_eq!(lease.attempts(), *leases);
                // (b) Starts at least the host's delay apart (flagged leases make no request):
                // its own or the crawl's, or its crawl delay if longer.
                let own = self.polite.host(&host);
                let delay = own
                    .delay
                    .unwrap_or(self.polite.delay())
                    .max(self.crawl_delay.get(&host).copied().unwrap_or_default());
                if !flagged && let Some(last) = self.last_start.insert(host.clone(), self.now) {
                    assert!(
                        self.now - last >= delay,
                        "{host}: starts {:?} apart, delay {delay:?}",
                        self.now - last
                    );
                }
                // (c) In flight within the connection limit.
                let n = self.in_flight_by_host.entry(host.clone()).or_default();
                *n += 1;
                let limit = own
                    .connections
                    .unwrap_or(self.polite.connections_per_host());
                assert!(*n <= limit, "{host}: {n} in flight, limit {limit}");
                self.in_flight.push(lease);
                Popped::Leased
            }
            Next::WaitUntil(at) => {
                assert!(at > self.now);
                Popped::WaitUntil(at)
            }
            Next::Pending => {
                assert!(!self.in_flight.is_empty(), "pending with nothing in flight");
                Popped::Pending
            }
            Next::Done => {
                assert!(self.in_flight.is_empty());
                assert!(self.queued_by_host.values().all(HashSet::is_empty));
                Popped::Done
            }
        }
    }

    fn complete(&mut self, index: usize, outcome: Outcome) {
        if self.in_flight.is_empty() {
            return;
        }
        let lease = self.in_flight.swap_remove(index % self.in_flight.len());
        let u = lease.url().as_str().to_owned();
        let host = lease.url().host_key().to_owned();
        let attempts = lease.attempts();
        let flagged = lease.host_given_up();
        *self.in_flight_by_host.get_mut(&host).unwrap() -= 1;
        let done = self
            .queues
            .complete(lease, outcome, self.now)
            .expect("own lease");

        if flagged {
            assert_eq!(done.fate, Fate::DroppedWithHost, "{u}");
            assert_eq!(done.host_given_up, None);
            self.end(&u, End::DroppedQueued);
            return;
        }
        let was_given_up = self.given_up.contains(&host);
        let errors = self.errors.entry(host.clone()).or_default();
        let gives_up = match outcome {
            Outcome::Success => {
                *errors = 0;
                self.failing_since.remove(&host);
                false
            }
            Outcome::Skipped => false,
            Outcome::Failure { .. } | Outcome::ErrorAnswer { .. } if was_given_up => false,
            Outcome::Failure { .. } | Outcome::ErrorAnswer { .. } => {
                *errors += 1;
                let since = *self.failing_since.entry(host.clone()).or_insert(self.now);
                *errors >= self.polite.max_consecutive_errors()
                    && self.now - since >= self.polite.give_up_after()
            }
        };
        if gives_up {
            self.given_up.insert(host.clone());
            let queued = self.queued_by_host.entry(host.clone()).or_default().len();
            assert_eq!(done.host_given_up, Some(queued as u64));
        } else {
            assert_eq!(done.host_given_up, None);
        }
        let retried = matches!(
            outcome,
            Outcome::Failure { retry: true, .. } | Outcome::ErrorAnswer { .. }
        );
        let expected = match outcome {
            Outcome::Success | Outcome::Skipped => Fate::Succeeded,
            Outcome::Failure { retry: false, .. } => Fate::Failed,
            _ if retried && attempts >= self.polite.max_attempts() => Fate::Exhausted,
            _ if self.given_up.contains(&host) => Fate::DroppedWithHost,
            _ => Fate::Retried {
                attempts: attempts + 1,
            },
        };
        assert_eq!(done.fate, expected, "{u}");
        match done.fate {
            Fate::Succeeded => self.end(&u, End::Succeeded),
            Fate::Failed => self.end(&u, End::Failed),
            Fate::Exhausted => self.end(&u, End::Exhausted),
            Fate::DroppedWithHost => self.end(&u, End::DroppedWithHost),
            Fate::Retried { .. } => {
                *self.retries_by_url.entry(u.clone()).or_default() += 1;
                self.queued_by_host.entry(host).or_default().insert(u);
            }
            other => panic!("unknown fate {other:?}"),
        }
    }

    fn apply(&mut self, op: Op) {
        match op {
            Op::Push(host) => self.push(host),
            Op::Pop => {
                let _ = self.pop();
            }
            Op::Advance(n) => self.now += ms(n),
            Op::Complete(i, outcome) => self.complete(i, outcome),
            Op::CrawlDelay(host, delay) => {
                let applied = self.queues.set_crawl_delay(HOSTS[host], ms(delay));
                assert_eq!(applied, ms(delay).min(self.polite.max_crawl_delay()));
                self.crawl_delay.insert(HOSTS[host].to_owned(), applied);
            }
        }
    }

    /// Completes everything with success, waiting as told, until the queues are done.
    fn drain(&mut self) {
        for _ in 0..100_000 {
            match self.pop() {
                Popped::Done => return,
                Popped::WaitUntil(at) if self.in_flight.is_empty() => self.now = at,
                Popped::Leased | Popped::WaitUntil(_) | Popped::Pending => {
                    self.complete(0, Outcome::Success);
                }
            }
        }
        panic!("the queues never ran dry");
    }

    /// Every URL accounted for exactly once, and the stats agree.
    fn check_accounts(&self) {
        assert_eq!(self.ends.len(), self.next_url, "some URL never ended");
        for (u, end) in &self.ends {
            let leases = self.leases_by_url.get(u).copied().unwrap_or(0);
            let retries = self.retries_by_url.get(u).copied().unwrap_or(0);
            assert_eq!(leases, retries + 1, "{u} ({end:?}) leased {leases} times");
        }
        let count = |e: End| self.ends.values().filter(|&&x| x == e).count() as u64;
        let stats = self.queues.stats();
        assert_eq!(stats.pushed, self.next_url as u64);
        assert_eq!(
            (stats.queued, stats.in_flight, stats.hosts_queued),
            (0, 0, 0)
        );
        assert_eq!(stats.succeeded, count(End::Succeeded));
        assert_eq!(stats.failed, count(End::Failed));
        assert_eq!(stats.exhausted, count(End::Exhausted));
        assert_eq!(
            stats.given_up_urls,
            count(End::DroppedQueued) + count(End::DroppedWithHost)
        );
        assert_eq!(stats.given_up_hosts, self.given_up.len() as u64);
        assert_eq!(
            stats.retries,
            self.retries_by_url
                .values()
                .map(|&n| u64::from(n))
                .sum::<u64>()
        );
        assert_eq!(
            stats.leases,
            self.leases_by_url
                .values()
                .map(|&n| u64::from(n))
                .sum::<u64>()
        );
    }

    /// The stats' conservation law, at any time.
    fn check_balance(&self) {
        let s = self.queues.stats();
        assert_eq!(s.accounted_for(), Some(s.pushed));
        assert_eq!(s.in_flight, self.in_flight.len() as u64);
        let queued: usize = self.queued_by_host.values().map(HashSet::len).sum();
        assert_eq!(s.queued, queued as u64);
        let hosts_queued = self
            .queued_by_host
            .values()
            .filter(|q| !q.is_empty())
            .count();
        assert_eq!(s.hosts_queued, hosts_queued as u64);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// (a) Every pushed URL is leased exactly once unless retried, and ends exactly once;
    /// (b) per host, lease starts are never closer than its delay; (c) per host, leases in
    /// flight never exceed its connection limit. Checked at every step by `Model`.
    #[test]
    fn every_url_is_leased_once_politely_and_accounted_for(
        polite in politeness(),
        ops in prop::collection::vec(op(), 0..300),
    ) {
        let mut model = Model::new(polite);
        for op in ops {
            model.apply(op);
            model.check_balance();
        }
        model.drain();
        model.check_balance();
        model.check_accounts();
    }
}

/// Regression: `Instant + Duration` panicked when `now` was near the largest instant the
/// platform represents (in `pop`, in `complete`'s back-off and in `set_crawl_delay`).
#[test]
fn instants_near_the_end_of_time_saturate_instead_of_panicking() {
    let mut far = Instant::now();
    let mut step = Duration::from_secs(u64::MAX / 2);
    while !step.is_zero() {
        if let Some(t) = far.checked_add(step) {
            far = t;
        } else {
            step /= 2;
        }
    }
    let mut queues = HostQueues::new(Politeness::default());
    push_all(
        &mut queues,
        &["https://a.example/1", "https://a.example/2"],
        far,
    );
    let first = lease(queues.pop(far).unwrap());
    queues.set_crawl_delay("a.example", secs(3_600));
    let throttled = Outcome::Failure {
        retry: true,
        retry_after: Some(Duration::MAX),
    };
    complete(&mut queues, first, throttled, far);
    assert!(matches!(
        queues.pop(far).unwrap(),
        Next::WaitUntil(_) | Next::Lease(_)
    ));
}

/// A lease whose fetch never happened goes back to the front of its host's queue, with its
/// attempt count, and the accounting still balances.
#[test]
fn an_abandoned_lease_is_queued_again_first() {
    let t0 = Instant::now();
    let mut queues = no_delay(1);
    push_all(
        &mut queues,
        &["https://a.example/1", "https://a.example/2"],
        t0,
    );
    let first = lease(queues.pop(t0).unwrap());
    assert_eq!(queues.pop(t0).unwrap(), Next::Pending);
    queues.abandon(first, t0).unwrap();
    let again = lease(queues.pop(t0).unwrap());
    assert_eq!(again.url().as_str(), "https://a.example/1");
    assert_eq!(again.attempts(), 1);
    let stats = queues.stats();
    assert_eq!((stats.queued, stats.in_flight, stats.pushed), (1, 1, 2));
    // Leases of other queues are refused and change nothing.
    let mut other = no_delay(1);
    push_all(&mut other, &["https://b.example/"], t0);
    let foreign = lease(other.pop(t0).unwrap());
    assert!(queues.abandon(foreign, t0).is_err());
    assert_eq!(queues.stats(), stats);
}

/// Regression: with no delay, completing a lease re-stamped its host as ready "now", so a
/// host that had been ready all along lost its turn to one that became ready later.
#[test]
fn a_host_ready_longer_keeps_its_turn_with_no_delay() {
    let t0 = Instant::now();
    let (t1, t2) = (t0 + ms(1), t0 + ms(2));
    let mut queues = no_delay(2);
    push_all(
        &mut queues,
        &["https://a.example/1", "https://a.example/2"],
        t0,
    );
    let a1 = lease(queues.pop(t0).unwrap());
    push_all(&mut queues, &["https://b.example/1"], t1);
    complete(&mut queues, a1, Outcome::Success, t2);
    assert_eq!(
        lease(queues.pop(t2).unwrap()).url().as_str(),
        "https://a.example/2"
    );
}

#[test]
fn a_skipped_lease_gives_back_the_delay_its_start_took() {
    let mut queues = HostQueues::new(Politeness::default()); // 1 s delay, 1 connection
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &[
            "http://a.example/1",
            "http://a.example/2",
            "http://a.example/3",
        ],
        t0,
    );
    let first = lease(queues.pop(t0).unwrap());
    queues.complete(first, Outcome::Success, t0).unwrap();
    // The next start waits for the delay after the first...
    assert_eq!(queues.pop(t0).unwrap(), Next::WaitUntil(t0 + secs(1)));
    let denied = lease(queues.pop(t0 + secs(1)).unwrap());
    // ... but a lease that made no request (robots.txt said no) gives its slot back: the next
    // URL may start at once, a delay after the last real request.
    let done = queues
        .complete(denied, Outcome::Skipped, t0 + secs(1) + ms(10))
        .unwrap();
    assert_eq!(done.fate, Fate::Succeeded);
    let third = lease(queues.pop(t0 + secs(1) + ms(10)).unwrap());
    assert_eq!(third.url().as_str(), "http://a.example/3");
    assert_eq!(queues.stats().succeeded, 2);
}

#[test]
fn a_skipped_lease_gives_nothing_back_once_another_lease_moved_the_hosts_clock() {
    let mut queues = HostQueues::new(
        Politeness::builder()
            .connections_per_host(2)
            .build()
            .unwrap(),
    );
    let t0 = Instant::now();
    push_all(
        &mut queues,
        &[
            "http://a.example/1",
            "http://a.example/2",
            "http://a.example/3",
        ],
        t0,
    );
    let other = lease(queues.pop(t0).unwrap());
    // The last start of the host: the lease that will be skipped.
    let denied = lease(queues.pop(t0 + secs(1)).unwrap());
    // 429 with Retry-After: 60 on the other lease: the host waits a minute.
    let throttled = Outcome::Failure {
        retry: false,
        retry_after: Some(secs(60)),
    };
    queues.complete(other, throttled, t0 + secs(2)).unwrap();
    queues
        .complete(denied, Outcome::Skipped, t0 + secs(2))
        .unwrap();
    assert_eq!(
        queues.pop(t0 + secs(2)).unwrap(),
        Next::WaitUntil(t0 + secs(62))
    );
}
