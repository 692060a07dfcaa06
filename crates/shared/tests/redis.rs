//! The shared frontier against real `redis-server` processes: exactly-once admission under a
//! race, buckets of a dead process taken over and their leases back, fencing, a cluster.

#[allow(dead_code, unreachable_pub)]
mod support;

use std::sync::Arc;
use std::time::Duration;

use frontier::{Canonical, Canonicalizer, Outcome, Politeness, ScopeRules};
use shared::{Layout, Next, SharedFrontier, Store};
use support::redis::{RedisCluster, RedisServer};

fn urls(n: usize) -> Vec<Canonical> {
    let canon = Canonicalizer::new();
    (0..n)
        .map(|i| {
            canon
                .canonicalize(&format!("http://h{}.example/p/{i}", i % 100))
                .unwrap()
        })
        .collect()
}

/// The next lease of `f`, waiting for it as a worker does: a process takes its buckets at
/// its first heartbeat, and their URLs with their first batches.
async fn next_lease(f: &SharedFrontier) -> shared::SharedLease {
    loop {
        match f.next().await.unwrap() {
            Next::Lease(lease) => return lease,
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            other => panic!("URLs are queued: {other:?}"),
        }
    }
}

/// The first lease of either process, from the one that owns its bucket (each bucket has
/// one owner at a time), and which one that is (0: `a`).
async fn lease_of_either(a: &SharedFrontier, b: &SharedFrontier) -> (usize, shared::SharedLease) {
    loop {
        for (i, f) in [a, b].into_iter().enumerate() {
            match f.next().await.unwrap() {
                Next::Lease(lease) => return (i, lease),
                Next::WaitUntil(_) => {}
                other => panic!("URLs are queued: {other:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// Pushes `urls` as seeds, `chunk` at a call: how many were new.
async fn push_in_chunks(frontier: &SharedFrontier, urls: &[Canonical], chunk: usize) -> u64 {
    let mut new = 0;
    for part in urls.chunks(chunk) {
        new += frontier.push_seeds(part.to_vec()).await.unwrap();
    }
    new
}

async fn frontier(url: &str, name: &str, lease_time: Duration) -> SharedFrontier {
    frontier_of(url, name, lease_time, Layout::default()).await
}

async fn frontier_of(
    url: &str,
    name: &str,
    lease_time: Duration,
    layout: Layout,
) -> SharedFrontier {
    frontier_with(url, name, lease_time, layout, per_host(4, Duration::ZERO)).await
}

/// Politeness of `connections` per host and `delay` between a host's starts.
fn per_host(connections: u32, delay: Duration) -> Politeness {
    Politeness::builder()
        .delay(delay)
        .connections_per_host(connections)
        .build()
        .unwrap()
}

/// A process of the crawl `name`, held to `polite`.
async fn frontier_with(
    url: &str,
    name: &str,
    lease_time: Duration,
    layout: Layout,
    polite: Politeness,
) -> SharedFrontier {
    let store = Store::connect(url, name).await.expect("redis answers");
    let crawl = store.create(layout, "test settings", &[]).await.unwrap();
    let scope = ScopeRules::builder()
        .mode(frontier::ScopeMode::AnyHost)
        .build()
        .unwrap();
    SharedFrontier::new(
        store,
        &crawl,
        Canonicalizer::new(),
        scope,
        polite,
        lease_time,
    )
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_processes_racing_over_a_million_urls_admit_each_once() {
    let server = RedisServer::start();
    let all = urls(1_000_000);
    let mut tasks = Vec::new();
    for client in 0..4 {
        let f = frontier(&server.url(), "race", Duration::from_secs(30)).await;
        // Each client in its own order, so that they meet on the same URLs all the time.
        let mut mine = all.clone();
        mine.rotate_left(client * 250_000);
        tasks.push(tokio::spawn(async move {
            let new = push_in_chunks(&f, &mine, 20_000).await;
            (new, f)
        }));
    }
    let mut new = 0;
    let mut last = None;
    for task in tasks {
        let (n, f) = task.await.unwrap();
        new += n;
        last = Some(f);
    }
    let totals = last.unwrap().totals().await.unwrap();
    // Exactly one client is told a URL is new: a second would count it twice, above the
    // million. A false positive of the seen-test (1e-6 target) makes none told: below.
    assert!(new <= 1_000_000, "{new} admissions of 1,000,000 URLs");
    assert!(
        new >= 1_000_000 - 10,
        "{new} admissions: too many false positives"
    );
    assert_eq!(totals.seen, new);
    // Queued, or taken by the buckets' owners for their hosts' next leases.
    assert_eq!(totals.queued + totals.leased, new);
    let info = server.cli(&["INFO", "memory"]);
    eprintln!(
        "seen-test: {} bytes per URL; {}",
        totals.seen_bits as f64 / 8.0 / new as f64,
        info.lines()
            .find(|l| l.starts_with("used_memory:"))
            .unwrap_or("")
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seen_tests_false_positives_stay_within_its_rate_as_it_grows() {
    let server = RedisServer::start();
    // A rate high enough to count false positives, and a small start: every bucket grows
    // through several generations.
    let layout = Layout {
        seen_rate: 1e-3,
        seen_initial_capacity: 10_000,
        ..Layout::default()
    };
    let f = frontier_of(&server.url(), "rate", Duration::from_secs(30), layout).await;
    let n = 400_000;
    let mut new = 0;
    for chunk in urls(n).chunks(20_000) {
        new += f.push_seeds(chunk.to_vec()).await.unwrap();
    }
    let totals = f.totals().await.unwrap();
    assert!(totals.seen_generations >= 3, "{totals:?}");
    // Each URL is distinct: every one not admitted is a false positive.
    let false_positives = n as u64 - new;
    eprintln!("{false_positives} false positives in {n} URLs at a 1e-3 target");
    assert!(
        false_positives <= n as u64 / 1000,
        "{false_positives} false positives in {n} URLs"
    );
}

/// Each key of the seen-test's sets on `server`, with its encoding and members.
fn seen_sets(server: &RedisServer) -> Vec<(String, String, u64)> {
    let keys = server.cli(&["--scan", "--pattern", "*:f*"]);
    keys.lines()
        .filter(|k| !k.is_empty())
        .map(|k| {
            let encoding = server.cli(&["OBJECT", "ENCODING", k]).trim().to_owned();
            let members = server.cli(&["SCARD", k]).trim().parse().unwrap();
            (k.to_owned(), encoding, members)
        })
        .collect()
}

/// The seen-test's generations of the first `buckets` buckets of crawl `name`: each one's
/// field in its bucket's `seen` hash ("g" and its number) and geometry ("sets capacity",
/// and " w" when wide).
fn generations_of(server: &RedisServer, name: &str, buckets: u32) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let keys = server.cli(&["KEYS", &format!("{{{name}:*}}:seen")]);
    for key in keys.lines() {
        if bucket_of(key, name).is_none_or(|b| b >= buckets) {
            continue;
        }
        let seen = server.cli(&["HGETALL", key.trim()]);
        let lines: Vec<&str> = seen.lines().collect();
        for pair in lines.chunks(2) {
            if pair[0].starts_with('g') {
                out.push((pair[0].to_owned(), pair[1].to_owned()));
            }
        }
    }
    out
}

/// The sets of `generations` (as [`generations_of`] reads them).
fn sets_begun(generations: &[(String, String)]) -> u64 {
    let sets = |geometry: &str| geometry.split(' ').next().unwrap().parse::<u64>().unwrap();
    generations.iter().map(|(_, g)| sets(g)).sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seen_test_keeps_4_byte_intsets_and_stays_exact_in_hash_tables() {
    // Four buckets of 1,024 URLs to start with: 20,000 URLs grow each through three
    // generations.
    let layout = || Layout {
        buckets: 4,
        seen_initial_capacity: 4_096,
        ..Layout::default()
    };
    let all = urls(20_000);
    // Redis keeps a set of integers as an intset up to `set-max-intset-entries` (512 by
    // default), as a hash table past it.
    for (extra, limit) in [
        (&[][..], 512),
        (&["--set-max-intset-entries", "16"][..], 16),
    ] {
        let server = RedisServer::start_with(extra);
        let f = frontier_of(&server.url(), "sets", Duration::from_secs(30), layout()).await;
        assert_eq!(f.push_seeds(all.clone()).await.unwrap(), 20_000);
        assert_eq!(f.push_seeds(all.clone()).await.unwrap(), 0, "seen before");
        let totals = f.totals().await.unwrap();
        assert!(totals.seen_generations >= 3, "{totals:?}");
        // 32 bits a URL, and each set of the generations begun counted at 84 bytes.
        let sets_begun = sets_begun(&generations_of(&server, "sets", 4));
        assert!(sets_begun >= 3 * 4, "{sets_begun} sets");
        assert_eq!(totals.seen_bits, 20_000 * 32 + sets_begun * 84 * 8);
        let sets = seen_sets(&server);
        // Every URL once, in one set; none near where Redis stops keeping an intset.
        assert_eq!(sets.iter().map(|s| s.2).sum::<u64>(), 20_000);
        assert!(sets.iter().all(|s| s.2 < 400), "{sets:?}");
        let intset = |s: &(String, String, u64)| (s.1 == "intset") == (s.2 <= limit);
        assert!(sets.iter().all(intset), "{sets:?}");
        if limit == 16 {
            assert!(sets.iter().any(|s| s.1 == "hashtable"), "{sets:?}");
        }
    }
}

/// `SISMEMBER` and `SADD` calls the server has run since its statistics were reset: the
/// seen-test's lookups, one a generation.
fn seen_lookups(server: &RedisServer) -> u64 {
    let stats = server.cli(&["INFO", "commandstats"]);
    ["cmdstat_sismember:", "cmdstat_sadd:"]
        .iter()
        .filter_map(|command| {
            let line = stats.lines().find(|l| l.starts_with(command))?;
            line.split(['=', ',']).nth(1)?.parse::<u64>().ok()
        })
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_process_looks_urls_up_in_its_copies_of_the_frozen_generations() {
    let server = RedisServer::start();
    // A small start: each bucket's seen-test grows through several generations.
    let layout = Layout {
        seen_initial_capacity: 10_000,
        ..Layout::default()
    };
    let first = frontier_of(&server.url(), "copies", Duration::from_secs(30), layout).await;
    let all = urls(300_000);
    let (old, fresh) = all.split_at(200_000);
    let new = push_in_chunks(&first, old, 20_000).await;
    assert!(new >= 200_000 - 2, "{new} of 200,000 admitted");
    let generations = first.totals().await.unwrap().seen_generations;
    assert!(generations >= 3, "{generations} generations");

    // Another process, which has pushed nothing: each URL goes to its copies of the frozen
    // generations (made as its batches come back), then to Redis.
    let second = frontier(&server.url(), "copies", Duration::from_secs(30)).await;
    copies_find_what_redis_holds(&server, &second, old, fresh, 10_000).await;
}

/// Checks that `second`, a process that pushed nothing yet, looks URLs up in its copies of
/// the frozen generations as Redis holds them: the first half of `old` (all pushed before
/// by another process) brings it its copies; the second half is then found seen, with fewer
/// lookups in Redis than URLs; and `fresh` (never pushed) is admitted. Pushes `chunk` at a
/// call.
async fn copies_find_what_redis_holds(
    server: &RedisServer,
    second: &SharedFrontier,
    old: &[Canonical],
    fresh: &[Canonical],
    chunk: usize,
) {
    let (early, late) = old.split_at(old.len() / 2);
    let mut again = push_in_chunks(second, early, chunk).await;
    server.cli(&["CONFIG", "RESETSTAT"]);
    again += push_in_chunks(second, late, chunk).await;
    // A copy that missed a URL would let the script skip the generation holding it: the URL
    // would be admitted twice.
    assert_eq!(again, 0, "URLs seen before admitted again");
    // Without the copies each URL is looked up in every generation (three or more
    // lookups); with them, only the URLs of the newest generation are looked up in Redis.
    let lookups = seen_lookups(server);
    assert!(
        lookups < late.len() as u64,
        "{lookups} lookups for {} URLs seen before",
        late.len()
    );
    // A copy that answered yes wrongly would drop new URLs.
    let admitted = push_in_chunks(second, fresh, chunk).await;
    assert!(
        admitted >= fresh.len() as u64 - 2,
        "{admitted} of {} new URLs admitted",
        fresh.len()
    );
}

/// A crawl whose rate leaves room for one 32-bit generation (1e-7) goes on in wide ones:
/// Redis and a process's copies agree on their members, and nothing is admitted twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn past_its_32_bit_generations_a_bucket_goes_on_in_wide_ones_exactly() {
    let server = RedisServer::start();
    let layout = || Layout {
        buckets: 4,
        seen_initial_capacity: 4_096,
        seen_rate: 1e-7,
        ..Layout::default()
    };
    let first = frontier_of(&server.url(), "wide", Duration::from_secs(30), layout()).await;
    let all = urls(60_000);
    let (old, fresh) = all.split_at(40_000);
    let new = push_in_chunks(&first, old, 5_000).await;
    assert!(new >= 40_000 - 2, "{new} of 40,000 admitted");
    // Each bucket: its first generation of 32 bits, then wide ones ("sets capacity w").
    let generations = generations_of(&server, "wide", 4);
    for (field, geometry) in &generations {
        assert_eq!(
            geometry.ends_with(" w"),
            field != "g0",
            "{field} {geometry}"
        );
    }
    assert!(generations.len() >= 4 * 3, "{generations:?}");
    // Wide members pass 32 bits: their sets are intsets of 8-byte integers, counted so.
    let sets = seen_sets(&server);
    assert!(sets.iter().all(|s| s.1 == "intset"), "{sets:?}");
    let members = |narrow: bool| -> u64 {
        let in_first = |s: &&(String, String, u64)| s.0.contains(":f0:") == narrow;
        sets.iter().filter(in_first).map(|s| s.2).sum()
    };
    let wide_key = sets
        .iter()
        .find(|s| s.0.contains(":f2:") && s.2 > 0)
        .unwrap();
    let wide_members = server.cli(&["SMEMBERS", &wide_key.0]);
    assert!(
        wide_members
            .lines()
            .any(|m| m.trim().parse::<i64>().unwrap() > i64::from(i32::MAX)),
        "{wide_members}"
    );
    let totals = first.totals().await.unwrap();
    assert_eq!(
        totals.seen_bits,
        members(true) * 32 + members(false) * 64 + sets_begun(&generations) * 84 * 8
    );

    // Another process: its copies of the frozen generations, wide ones among them, must
    // find what Redis holds, or the script would skip them and admit URLs again.
    let second = frontier_of(&server.url(), "wide", Duration::from_secs(30), layout()).await;
    copies_find_what_redis_holds(&server, &second, old, fresh, 5_000).await;
}

/// A bucket's owner takes a host's URLs for all its free connections in one batch, and
/// hands them out from memory: a lease is no Redis request of its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_owner_takes_urls_for_a_hosts_free_connections_and_hands_them_out_from_memory() {
    let server = RedisServer::start();
    let connections = 16;
    let frontier = frontier_with(
        &server.url(),
        "idle",
        Duration::from_secs(30),
        Layout::default(),
        per_host(connections, Duration::ZERO),
    )
    .await;
    let canon = Canonicalizer::new();
    let one_host: Vec<Canonical> = (0..100)
        .map(|i| {
            canon
                .canonicalize(&format!("http://one.example/{i}"))
                .unwrap()
        })
        .collect();
    frontier.push_seeds(one_host).await.unwrap();
    let first = next_lease(&frontier).await;
    // One more than the host's connections: the next lease is there when one ends.
    assert_eq!(frontier.buffered(), connections as usize);
    let before = frontier.store().requests();
    let mut leases = vec![first];
    for _ in 1..connections {
        match frontier.next().await.unwrap() {
            Next::Lease(lease) => leases.push(lease),
            other => panic!("URLs are taken for every connection: {other:?}"),
        }
    }
    assert_eq!(frontier.store().requests(), before, "leases from memory");
    // Every connection busy: the URL taken ahead waits for one.
    assert!(matches!(frontier.next().await.unwrap(), Next::WaitUntil(_)));
    assert_eq!(frontier.buffered(), 1);
    for lease in leases {
        frontier.complete(lease, Outcome::Success).await.unwrap();
    }
    let totals = frontier.totals().await.unwrap();
    assert_eq!(totals.done, u64::from(connections));
}

/// Regression: a process took its buckets in turn, whatever their hosts (see
/// `SharedFrontier::next`): it leases to the host whose turn came first, whatever its bucket.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn leases_go_to_the_host_that_waited_longest_whatever_its_bucket() {
    let server = RedisServer::start();
    let frontier = frontier_with(
        &server.url(),
        "fair",
        Duration::from_secs(30),
        Layout::default(),
        per_host(64, Duration::ZERO),
    )
    .await;
    // Six hosts in 16 buckets: most buckets empty, maybe two hosts in one.
    let (hosts, each) = (6, 40);
    let canon = Canonicalizer::new();
    let seeds: Vec<Canonical> = (0..hosts * each)
        .map(|i| {
            canon
                .canonicalize(&format!("http://h{}.example/{i}", i % hosts))
                .unwrap()
        })
        .collect();
    frontier.push_seeds(seeds).await.unwrap();
    let mut leases = vec![next_lease(&frontier).await];
    // Every host's URLs in memory first, so that each lease may go to any host.
    let taken = async {
        while frontier.buffered() < hosts * each - 1 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    };
    tokio::time::timeout(Duration::from_secs(20), taken)
        .await
        .expect("every host's URLs taken");
    for _ in 1..10 * hosts {
        match frontier.next().await.unwrap() {
            Next::Lease(lease) => leases.push(lease),
            other => panic!("every host has URLs and free connections: {other:?}"),
        }
    }
    let mut by_host = std::collections::BTreeMap::<String, usize>::new();
    for lease in &leases {
        *by_host
            .entry(lease.url().host_key().to_owned())
            .or_default() += 1;
    }
    assert_eq!(by_host.len(), hosts, "{by_host:?}");
    assert!(by_host.values().all(|&n| n == 10), "{by_host:?}");
}

/// Answers from a table of `host -> last octet of 10.0.0.x`, counting its calls.
struct TableLocator {
    table: fn(&str) -> Option<u8>,
    calls: std::sync::atomic::AtomicUsize,
}

impl shared::Locate for TableLocator {
    fn address_of<'a>(&'a self, url: &'a frontier::Url) -> shared::Located<'a> {
        self.calls
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let found = url.host_str().and_then(self.table);
        Box::pin(async move { found.map(|x| std::net::Ipv4Addr::new(10, 0, 0, x).into()) })
    }
}

impl TableLocator {
    fn calls(&self) -> usize {
        self.calls.load(std::sync::atomic::Ordering::Relaxed)
    }
}

/// The places a crawl by address keeps (host to bucket), read from Redis.
fn places(server: &RedisServer) -> std::collections::HashMap<String, u32> {
    let mut conn = connection(server);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*:places").query(&mut conn).unwrap();
    let mut all = std::collections::HashMap::new();
    for key in keys {
        let hash: std::collections::HashMap<String, u32> =
            redis::cmd("HGETALL").arg(&key).query(&mut conn).unwrap();
        all.extend(hash);
    }
    all
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_bucketed_by_address_stay_where_the_first_process_placed_them() {
    let server = RedisServer::start();
    let layout = Layout {
        buckets: 16,
        buckets_by: shared::BucketsBy::Address,
        ..Layout::default()
    };
    // Twelve names on three servers as the first process sees them (and one that does not
    // resolve); the second's resolver sees them all elsewhere, as round robin or a CDN may.
    let first_sees = |host: &str| match host {
        "lost.example" => None,
        host => Some(host[1..host.find('.')?].parse::<u8>().ok()? % 3),
    };
    let first_locator = Arc::new(TableLocator {
        table: first_sees,
        calls: Default::default(),
    });
    let second_locator = Arc::new(TableLocator {
        table: |_| Some(99),
        calls: Default::default(),
    });
    let polite = || per_host(2, Duration::ZERO);
    let first = frontier_with(
        &server.url(),
        "placed",
        Duration::from_secs(30),
        layout.clone(),
        polite(),
    )
    .await
    .with_locator(Arc::clone(&first_locator) as Arc<dyn shared::Locate>);
    let second = frontier_with(
        &server.url(),
        "placed",
        Duration::from_secs(30),
        layout,
        polite(),
    )
    .await
    .with_locator(Arc::clone(&second_locator) as Arc<dyn shared::Locate>);
    let canon = Canonicalizer::new();
    let url = |host: &str, i: usize| canon.canonicalize(&format!("http://{host}/{i}")).unwrap();
    let hosts: Vec<String> = (0..12)
        .map(|n| format!("s{n}.example"))
        .chain(["lost.example".to_owned()])
        .collect();
    let seeds: Vec<Canonical> = hosts.iter().map(|h| url(h, 0)).collect();
    assert_eq!(first.push_seeds(seeds).await.unwrap(), 13);
    // Each host looked up once, by the process that met it first.
    assert_eq!(first_locator.calls(), 13);
    let placed = places(&server);
    assert_eq!(placed.len(), 13, "{placed:?}");
    for n in 3..12 {
        assert_eq!(
            placed[&format!("s{n}.example")],
            placed[&format!("s{}.example", n % 3)],
            "the names of one server in one bucket: {placed:?}"
        );
    }
    // The second process meets the same hosts (their places read, not looked up) and one
    // new to the crawl, which it places itself.
    let more: Vec<Canonical> = hosts
        .iter()
        .map(|h| url(h, 1))
        .chain([url("t.example", 0)])
        .collect();
    assert_eq!(second.push_seeds(more).await.unwrap(), 14);
    assert_eq!(second_locator.calls(), 1);
    let after = places(&server);
    assert_eq!(after.len(), 14);
    assert!(
        placed.iter().all(|(host, b)| after[host] == *b),
        "{after:?}"
    );
    // Every URL is fetched once, whichever process owns its host's bucket.
    let mut fetched = std::collections::HashSet::new();
    let crawl = async {
        while fetched.len() < 27 {
            let (i, lease) = lease_of_either(&first, &second).await;
            assert!(
                fetched.insert(lease.url().to_string()),
                "{} twice",
                lease.url()
            );
            let owner = if i == 0 { &first } else { &second };
            owner.complete(lease, Outcome::Success).await.unwrap();
        }
    };
    tokio::time::timeout(Duration::from_secs(30), crawl)
        .await
        .expect("every URL leased");
    let totals = first.totals().await.unwrap();
    assert_eq!((totals.done, totals.queued, totals.leased), (27, 0, 0));
    // Each host was scheduled in its place's bucket, and there alone: its state is there.
    let mut conn = connection(&server);
    let states: Vec<String> = redis::cmd("KEYS").arg("*:hosts").query(&mut conn).unwrap();
    for (host, bucket) in &after {
        let mut holding = Vec::new();
        for key in &states {
            let held: bool = redis::cmd("HEXISTS")
                .arg(key)
                .arg(host)
                .query(&mut conn)
                .unwrap();
            if held {
                holding.push(key.clone());
            }
        }
        let placed_in = format!("{}:hosts", first.store().tag(*bucket));
        assert_eq!(holding, [placed_in], "{host}");
    }
}

/// Regression: a process letting buckets go to one that joined, while it still had leases
/// of them out, kept letting them go after the other left: busy, leasing nothing, and its
/// crawl never ended (`domain_budgets_hold_across_processes` hung in CI).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn buckets_let_go_to_a_process_that_left_are_kept_and_the_crawl_ends() {
    let server = RedisServer::start();
    let first = frontier(&server.url(), "kept", Duration::from_secs(30)).await;
    // A URL on each of 100 hosts: every bucket has some, and all are leased.
    first.push_seeds(urls(100)).await.unwrap();
    let mut leases = Vec::new();
    while leases.len() < 100 {
        leases.push(next_lease(&first).await);
    }
    // A second process joins: the first lets its share go, once its leases of it end.
    let second = frontier(&server.url(), "kept", Duration::from_secs(30)).await;
    tokio::time::sleep(Duration::from_secs(1)).await;
    // And leaves before they did.
    second.hand_over().await.unwrap();
    drop(second);
    tokio::time::sleep(Duration::from_secs(1)).await;
    for lease in leases {
        first.complete(lease, Outcome::Success).await.unwrap();
    }
    let end = tokio::time::timeout(Duration::from_secs(20), async {
        loop {
            match first.next().await.unwrap() {
                Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
                Next::Done => break,
                other => panic!("nothing is left: {other:?}"),
            }
        }
    });
    assert!(end.await.is_ok(), "the crawl never ended");
    let totals = first.totals().await.unwrap();
    assert_eq!((totals.done, totals.queued, totals.leased), (100, 0, 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_lease_of_a_dead_process_comes_back_and_its_completion_is_refused() {
    let server = RedisServer::start();
    let first = frontier(&server.url(), "leases", Duration::from_secs(1)).await;
    let second = frontier(&server.url(), "leases", Duration::from_secs(1)).await;
    first.push_seeds(urls(1)).await.unwrap();
    // The one whose bucket it is leases the URL, and dies.
    let (which, lost) = lease_of_either(&first, &second).await;
    let (dead, alive) = if which == 0 {
        (first, second)
    } else {
        (second, first)
    };
    // The process "dies": it stops renewing its hold and saying it is present (dropping
    // the frontier stops its heartbeat).
    let url = lost.url().clone();
    drop(dead);
    // Its bucket is held until the hold lapses and the process is no longer counted
    // present: the other process then takes it over, the URL back in its queue.
    let again = loop {
        match alive.next().await.unwrap() {
            Next::Lease(lease) => break lease,
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            Next::Pending => panic!("a shared frontier says when to ask again"),
            Next::Done => panic!("a leased URL is not done"),
        }
    };
    assert_eq!(again.url(), &url);
    assert_eq!(again.attempts(), 1, "an expired lease is not a try");
    // The first holder wakes up: its completion is refused (fenced), the new one counts.
    assert!(
        alive
            .complete(lost, Outcome::Success)
            .await
            .unwrap()
            .is_none()
    );
    assert!(
        alive
            .complete(again, Outcome::Success)
            .await
            .unwrap()
            .is_some()
    );
    let totals = alive.totals().await.unwrap();
    assert_eq!((totals.done, totals.queued, totals.leased), (1, 0, 0));
    assert_eq!(totals.reaped, 1);
    loop {
        match alive.next().await.unwrap() {
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            Next::Done => break,
            other => panic!("nothing is left: {other:?}"),
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_cluster_serves_the_same_scripts() {
    let cluster = RedisCluster::start();
    let f = frontier(&cluster.url(), "cluster", Duration::from_secs(30)).await;
    let all = urls(5_000);
    assert_eq!(f.push_seeds(all.clone()).await.unwrap(), 5_000);
    assert_eq!(f.push_seeds(all).await.unwrap(), 0);
    let mut done = 0;
    loop {
        match f.next().await.unwrap() {
            Next::Lease(lease) => {
                f.complete(lease, Outcome::Success).await.unwrap().unwrap();
                done += 1;
            }
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            Next::Pending => panic!("a shared frontier says when to ask again"),
            Next::Done => break,
        }
    }
    assert_eq!(done, 5_000);
    // The keys are spread over the masters.
    for node in &cluster.nodes {
        let keys: u64 = node.cli(&["DBSIZE"]).trim().parse().unwrap();
        assert!(keys > 0, "node {} holds none of the crawl", node.port);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawl_of_another_key_layout_is_refused() {
    let server = RedisServer::start();
    // A crawl as the crawler of layout version 1 stored it.
    server.cli(&[
        "HSET",
        "old:meta",
        "version",
        "1",
        "buckets",
        "64",
        "seen_initial_capacity",
        "1000000",
        "seen_rate",
        "0.000001",
        "key",
        "000102030405060708090a0b0c0d0e0f",
        "settings",
        "{}",
    ]);
    let store = Store::connect(&server.url(), "old").await.unwrap();
    let err = store.load().await.expect_err("version 1 is refused");
    assert!(err.to_string().contains("version 1"), "{err}");
    let err = store
        .create(Layout::default(), "", &[])
        .await
        .expect_err("creating over it too");
    assert!(err.to_string().contains("new crawl name"), "{err}");
}

/// Regression: a seed's redirect target went into the crawl's seed list, which processes that
/// join later trust as seeds the user gave (their SSRF guard let them be fetched at private
/// addresses). Targets are kept apart now.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_seeds_redirect_target_is_not_among_the_seeds_processes_join_with() {
    let server = RedisServer::start();
    let first = frontier(&server.url(), "c", Duration::from_secs(5)).await;
    let target = Canonicalizer::new()
        .canonicalize("http://10.0.0.5:8080/")
        .unwrap();
    first.add_seed(&target).await.unwrap();
    let store = Store::connect(&server.url(), "c").await.unwrap();
    let stored = store.load().await.unwrap().expect("the crawl is there");
    assert!(stored.seeds.is_empty(), "{:?}", stored.seeds);
    assert_eq!(stored.redirect_targets, vec![target.as_str().to_owned()]);
}

/// Regression: a crawl's keys could not be removed but by hand (77 keys after a small crawl).
/// On a cluster, every bucket's keys go, slot by slot, and another crawl's stay.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removing_a_crawl_on_a_cluster_leaves_none_of_its_keys_and_all_of_another() {
    let cluster = RedisCluster::start();
    let other = frontier(&cluster.url(), "other", Duration::from_secs(30)).await;
    other.push_seeds(urls(300)).await.unwrap();
    let gone = frontier(&cluster.url(), "gone", Duration::from_secs(30)).await;
    gone.push_seeds(urls(300)).await.unwrap();
    let store = Store::connect(&cluster.url(), "gone").await.unwrap();
    // Its process is there: removing would race it.
    let err = store.remove().await.expect_err("a process is present");
    assert!(err.to_string().contains("running"), "{err}");
    loop {
        match gone.next().await.unwrap() {
            Next::Lease(lease) => drop(gone.complete(lease, Outcome::Success).await.unwrap()),
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            Next::Pending => panic!("a shared frontier says when to ask again"),
            // Over: the process has left, and hands its buckets over as a crawler does.
            Next::Done => break,
        }
    }
    gone.hand_over().await.unwrap();
    assert!(store.load().await.unwrap().unwrap().finished.is_some());
    let removed = store.remove().await.unwrap();
    assert!(removed > 0);
    let keys_of = |name: &str| -> usize {
        cluster
            .nodes
            .iter()
            .map(|n| {
                let keys = n.cli(&["KEYS", &format!("*{name}*")]);
                keys.lines().filter(|k| !k.trim().is_empty()).count()
            })
            .sum()
    };
    assert_eq!(
        keys_of("gone"),
        0,
        "none of the removed crawl's keys is left"
    );
    assert!(keys_of("other") > 0, "the other crawl's keys are left");
    assert!(store.load().await.unwrap().is_none());
    let again = Store::connect(&cluster.url(), "other").await.unwrap();
    assert!(again.load().await.unwrap().is_some());
}

/// A connection to `server` that reads values as bytes (a lease's start is packed).
fn connection(server: &RedisServer) -> redis::Connection {
    redis::Client::open(server.url())
        .and_then(|client| client.get_connection())
        .expect("a connection to the test's redis-server")
}

/// The leases hash of the crawl `name`'s one bucket holding leases, and its (token, value)
/// pairs.
fn leases(server: &RedisServer, name: &str) -> (String, Vec<(String, Vec<u8>)>) {
    let keys = server.cli(&["KEYS", &format!("{{{name}:*}}:leases")]);
    let key = keys
        .lines()
        .next()
        .expect("a bucket holds leases")
        .to_owned();
    let pairs = redis::cmd("HGETALL")
        .arg(&key)
        .query(&mut connection(server))
        .unwrap();
    (key, pairs)
}

/// A process stalled longer than its hold (its owner keys expired) with no other process
/// taking its buckets since: its batches are still its own, and its lease completes, where
/// the batch was refused, the bucket taken over anew and its leases out fetched again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hold_that_lapsed_with_no_owner_since_still_writes_its_batches() {
    let server = RedisServer::start();
    let f = frontier(&server.url(), "lapse", Duration::from_secs(30)).await;
    f.push_seeds(urls(2)).await.unwrap();
    let lease = next_lease(&f).await;
    // The holds lapse: every bucket's holder key gone, as when its time ran out.
    for key in server.cli(&["KEYS", "{lapse:*}:owner"]).lines() {
        server.cli(&["DEL", key.trim()]);
    }
    assert!(
        f.complete(lease, Outcome::Success).await.unwrap().is_some(),
        "the completion of a lapsed hold's lease was refused"
    );
    loop {
        match f.next().await.unwrap() {
            Next::Lease(lease) => {
                f.complete(lease, Outcome::Success).await.unwrap().unwrap();
            }
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            Next::Pending => panic!("a shared frontier says when to ask again"),
            Next::Done => break,
        }
    }
    let totals = f.totals().await.unwrap();
    assert_eq!((totals.done, totals.reaped), (2, 0), "{totals:?}");
}

/// Regression: after Redis went back to an older snapshot, a bucket's counter handed its lease
/// tokens out again, and a process's completion of its old lease landed on another URL's
/// lease, whose URL then never had a record. Tokens now grow with the server's clock, and
/// a completion names its URL.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_token_is_not_handed_out_again_and_completes_only_its_own_url() {
    let mut server = RedisServer::start();
    let f = frontier(&server.url(), "t", Duration::from_secs(30)).await;
    let canon = Canonicalizer::new();
    let page = canon.canonicalize("http://h1.example/a").unwrap();
    f.push_seeds(vec![page.clone()]).await.unwrap();
    server.cli(&["SAVE"]);
    let first = next_lease(&f).await;
    let (_, before) = leases(&server, "t");
    // Back to the snapshot, where no token was handed out yet. The first process is gone
    // too, as is its hold: the next takes its buckets over at once.
    server.crash_and_restart();
    drop(f);
    let owners = server.cli(&["KEYS", "{t:*}:owner"]);
    for key in owners.lines().chain(["t:procs"]) {
        server.cli(&["DEL", key.trim()]);
    }
    let g = frontier(&server.url(), "t", Duration::from_secs(30)).await;
    let second = next_lease(&g).await;
    let (key, after) = leases(&server, "t");
    assert_ne!(before[0].0, after[0].0, "a token handed out twice");
    // As if the token were another URL's now: the old completion leaves that lease alone.
    let mut other = after[0].1.clone();
    let url = b"http://h1.example/a";
    let at = other
        .windows(url.len())
        .rposition(|w| w == url)
        .expect("the lease names its URL");
    other[at + url.len() - 1] = b'b';
    redis::cmd("HSET")
        .arg(&key)
        .arg(&after[0].0)
        .arg(other)
        .exec(&mut connection(&server))
        .unwrap();
    drop(first);
    assert!(
        g.complete(second, Outcome::Success)
            .await
            .unwrap()
            .is_none()
    );
    assert_eq!(
        server.cli(&["HLEN", &key]).trim(),
        "1",
        "the other URL's lease stays"
    );
}

/// A queue entry no process can read (another program's, or damaged) is dropped with an
/// error naming it: left in flight, it held its host's connection and the crawl's end for
/// ever. Its host's other URLs are fetched, and the crawl ends.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreadable_queue_entry_is_dropped_with_an_error_and_the_crawl_ends() {
    let server = RedisServer::start();
    let canon = Canonicalizer::new();
    let pages = ["http://h1.example/a", "http://h1.example/b"];
    let seeds = pages.iter().map(|p| canon.canonicalize(p).unwrap());
    // Queued by a process that then leaves: the URLs it took are back in their queue.
    let first = frontier(&server.url(), "t", Duration::from_secs(30)).await;
    first.push_seeds(seeds.collect()).await.unwrap();
    first.hand_over().await.unwrap();
    drop(first);
    // Its entry damaged where it is: in its host's queue, or in flight (its leases move back
    // to the queues when the next process takes the bucket).
    let mut con = connection(&server);
    let mut damaged = 0;
    let queue: Option<String> = redis::cmd("KEYS")
        .arg("{t:*}:q:h1.example")
        .query::<Vec<String>>(&mut con)
        .unwrap()
        .pop();
    if let Some(queue) = queue {
        let entries: Vec<String> = redis::cmd("LRANGE")
            .arg(&queue)
            .arg(0)
            .arg(-1)
            .query(&mut con)
            .unwrap();
        for (i, entry) in entries.iter().enumerate() {
            if entry.ends_with(pages[0]) {
                redis::cmd("LSET")
                    .arg(&queue)
                    .arg(i)
                    .arg("0 damaged")
                    .exec(&mut con)
                    .unwrap();
                damaged += 1;
            }
        }
    }
    for key in redis::cmd("KEYS")
        .arg("{t:*}:leases")
        .query::<Vec<String>>(&mut con)
        .unwrap()
    {
        let leases: Vec<(String, String)> =
            redis::cmd("HGETALL").arg(&key).query(&mut con).unwrap();
        for (token, lease) in leases {
            if lease.ends_with(pages[0]) {
                redis::cmd("HSET")
                    .arg(&key)
                    .arg(token)
                    .arg("h1.example 0 damaged")
                    .exec(&mut con)
                    .unwrap();
                damaged += 1;
            }
        }
    }
    assert_eq!(damaged, 1);
    let f = frontier(&server.url(), "t", Duration::from_secs(30)).await;
    let mut errors = Vec::new();
    let mut fetched = Vec::new();
    let crawl = async {
        loop {
            match f.next().await {
                Err(err) => errors.push(err.to_string()),
                Ok(Next::Lease(lease)) => {
                    fetched.push(lease.url().to_string());
                    f.complete(lease, Outcome::Success).await.unwrap();
                }
                Ok(Next::WaitUntil(at)) => tokio::time::sleep_until(at.into()).await,
                Ok(Next::Pending) => tokio::time::sleep(Duration::from_millis(5)).await,
                Ok(Next::Done) => break,
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(60), crawl)
        .await
        .expect("the crawl ends");
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert!(errors[0].contains("0 damaged"), "{errors:?}");
    assert_eq!(fetched, [pages[1]]);
    let in_flight = server.cli(&["KEYS", "{t:*}:leases"]);
    assert_eq!(in_flight.trim(), "", "nothing left in flight");
}

/// A removal cut short (the process stopped, Redis went away) left the crawl's record gone
/// and its buckets' keys behind, for a new crawl of that name to take for its own. The
/// record is now marked first and removed last: the crawl reads as being removed, and
/// removing it again finishes the job.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_cut_short_is_finished_by_the_next() {
    let server = RedisServer::start();
    {
        let f = frontier(&server.url(), "cut", Duration::from_secs(30)).await;
        f.push_seeds(urls(100)).await.unwrap();
        // The process stops, as a crawler does: its buckets handed over, nothing more sent.
        f.hand_over().await.unwrap();
    }
    // As a removal stopped after its mark and a few keys.
    server.cli(&["HSET", "cut:meta", "removing", "1"]);
    server.cli(&["DEL", "cut:seeds"]);
    let store = Store::connect(&server.url(), "cut").await.unwrap();
    let stored = store
        .load()
        .await
        .unwrap()
        .expect("the record is still there");
    assert!(stored.removing);
    // Its processes are still counted present for a few seconds: wait them out, as an
    // operator would after stopping them.
    server.cli(&["DEL", "cut:procs"]);
    assert!(store.remove().await.unwrap() > 0);
    assert_eq!(
        server.cli(&["DBSIZE"]).trim(),
        "0",
        "{}",
        server.cli(&["KEYS", "*"])
    );
}

/// Regression: the content-seen test of a crawl, shared by its processes: of two processes
/// reading the same bodies at once, exactly one takes each for new; its seen-test's URLs
/// and the bodies' digests never meet.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_is_new_to_exactly_one_process_of_the_crawl() {
    let server = RedisServer::start();
    let a = frontier(&server.url(), "bodies", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "bodies", Duration::from_secs(30)).await;
    let digests: Vec<[u8; 20]> = (0..500u32)
        .map(|i| {
            let mut d = [0; 20];
            d[..4].copy_from_slice(&i.to_be_bytes());
            d
        })
        .collect();
    let ask = |f: &SharedFrontier| {
        let f = f.clone();
        let digests = digests.clone();
        tokio::spawn(async move {
            let answers = futures_util::future::join_all(digests.iter().map(|d| f.seen_body(d)));
            answers
                .await
                .into_iter()
                .map(Result::unwrap)
                .collect::<Vec<bool>>()
        })
    };
    let (x, y) = (ask(&a), ask(&b));
    let (x, y) = (x.await.unwrap(), y.await.unwrap());
    for (i, (x, y)) in x.iter().zip(&y).enumerate() {
        assert!(x != y, "digest {i}: {x} and {y}");
    }
    for digest in &digests[..10] {
        assert!(a.seen_body(digest).await.unwrap());
    }
    // URLs pushed after are new all the same.
    assert_eq!(a.push_seeds(urls(200)).await.unwrap(), 200);
}

/// The bucket a key of crawl `name` is of: its tag is `{NAME:B}` or `{NAME:B:SALT}`.
fn bucket_of(key: &str, name: &str) -> Option<u32> {
    key.trim()
        .strip_prefix(&format!("{{{name}:"))?
        .split(['}', ':'])
        .next()?
        .parse()
        .ok()
}

/// A new crawl's buckets are tagged for even slots, and its keys are where `Store::tag`
/// says; a record that does not say (a crawl created before even slots) keeps hashed tags.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crawls_tags_are_as_its_record_says() {
    let server = RedisServer::start();
    let f = frontier(&server.url(), "even", Duration::from_secs(30)).await;
    f.push_seeds(urls(200)).await.unwrap();
    let store = Store::connect(&server.url(), "even").await.unwrap();
    let stored = store.load().await.unwrap().expect("the crawl");
    assert!(stored.layout.even_slots);
    let keys = server.cli(&["KEYS", "{even:*}:seen"]);
    let mut tags: Vec<&str> = keys
        .lines()
        .map(|k| k.trim().trim_end_matches(":seen"))
        .collect();
    tags.sort();
    let mut expected: Vec<String> = (0..stored.layout.buckets + stored.layout.content_buckets)
        .map(|b| store.tag(b))
        .filter(|t| tags.contains(&t.as_str()))
        .collect();
    expected.sort();
    assert!(tags.len() > 10, "{tags:?}");
    assert_eq!(tags, expected);
    assert!(
        tags.iter().any(|t| t.matches(':').count() == 2),
        "no salt in {tags:?}"
    );
    // A record of before: no `slots` field.
    let old = Store::connect(&server.url(), "old").await.unwrap();
    old.create(Layout::default(), "s", &[]).await.unwrap();
    server.cli(&["HDEL", "old:meta", "slots"]);
    let stored = old.load().await.unwrap().expect("the crawl");
    assert!(!stored.layout.even_slots);
    assert_eq!(old.tag(7), "{old:7}");
}

/// The buckets of the keys of crawl `name` that hold a seen-test (`{NAME:B}:seen`).
fn seen_buckets(server: &RedisServer, name: &str) -> Vec<u32> {
    let keys = server.cli(&["KEYS", &format!("{{{name}:*}}:seen")]);
    let mut buckets: Vec<u32> = keys.lines().filter_map(|k| bucket_of(k, name)).collect();
    buckets.sort();
    buckets
}

/// The content-seen test has buckets of its own, after the hosts' (one script then tests
/// many pages' bodies); a crawl created without any tests bodies in the hosts' buckets; a
/// record that names none, or more than a cluster has slots, is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bodies_are_tested_in_buckets_of_their_own() {
    let server = RedisServer::start();
    let digests: Vec<[u8; 20]> = (0..200u32)
        .map(|i| {
            let mut d = [0; 20];
            d[..4].copy_from_slice(&i.to_be_bytes());
            d
        })
        .collect();
    let layout = |content_buckets| Layout {
        buckets: 8,
        content_buckets,
        ..Layout::default()
    };
    let f = frontier_of(&server.url(), "own", Duration::from_secs(30), layout(2)).await;
    for digest in &digests {
        assert!(!f.seen_body(digest).await.unwrap());
    }
    assert_eq!(seen_buckets(&server, "own"), [8, 9]);
    assert!(f.seen_body(&digests[7]).await.unwrap());
    let totals = f.totals().await.unwrap();
    assert!(
        totals.seen_bits > 0 && totals.seen_generations >= 1,
        "{totals:?}"
    );
    let store = Store::connect(&server.url(), "own").await.unwrap();
    let stored = store.load().await.unwrap().expect("the crawl");
    assert_eq!(stored.layout.content_buckets, 2);

    let f = frontier_of(&server.url(), "none", Duration::from_secs(30), layout(0)).await;
    for digest in &digests {
        assert!(!f.seen_body(digest).await.unwrap());
    }
    let buckets = seen_buckets(&server, "none");
    assert!(
        buckets.len() > 2 && buckets.iter().all(|&b| b < 8),
        "{buckets:?}"
    );
    for digest in &digests {
        assert!(f.seen_body(digest).await.unwrap());
    }

    server.cli(&["HSET", "own:meta", "content_buckets", "100000"]);
    let err = store.load().await.expect_err("a bad record");
    assert!(err.to_string().contains("content_buckets"), "{err}");
    server.cli(&["HDEL", "own:meta", "content_buckets"]);
    let err = store.load().await.expect_err("a record without the field");
    assert!(err.to_string().contains("content_buckets"), "{err}");
    let err = Store::connect(&server.url(), "big")
        .await
        .unwrap()
        .create(layout(100_000), "", &[])
        .await
        .expect_err("too many to create");
    assert!(err.to_string().contains("content buckets"), "{err}");
}

/// Regression: sitemaps known to the crawl, with a host's cap held across processes; a mark
/// sent again by the process that made it (its answer lost) is still its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sitemaps_are_known_to_the_crawl_and_capped_per_host_across_processes() {
    use shared::SitemapMark::{Known, OverCap, Taken};
    let server = RedisServer::start();
    let a = frontier(&server.url(), "maps", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "maps", Duration::from_secs(30)).await;
    let canon = Canonicalizer::new();
    let map = |i: u32| {
        canon
            .canonicalize(&format!("http://h.example/s{i}.xml"))
            .unwrap()
    };
    assert_eq!(a.mark_sitemap(&map(0), 1, 2).await.unwrap(), Taken);
    assert_eq!(a.mark_sitemap(&map(0), 1, 2).await.unwrap(), Taken);
    assert_eq!(b.mark_sitemap(&map(0), 0, 2).await.unwrap(), Known);
    assert_eq!(b.sitemap_level(&map(0)).await.unwrap(), Some(1));
    assert_eq!(b.mark_sitemap(&map(1), 0, 2).await.unwrap(), Taken);
    assert_eq!(a.mark_sitemap(&map(2), 0, 2).await.unwrap(), OverCap);
    // One not admitted gives its place back.
    b.unmark_sitemap(&map(1)).await.unwrap();
    b.unmark_sitemap(&map(1)).await.unwrap();
    assert_eq!(a.sitemap_level(&map(1)).await.unwrap(), None);
    assert_eq!(a.mark_sitemap(&map(2), 0, 2).await.unwrap(), Taken);
    assert_eq!(a.mark_sitemap(&map(3), 0, 2).await.unwrap(), OverCap);
}

/// A link repeated on a page is judged once, and its repeats are counted as its first
/// occurrence decided: the counters are those of pushing each link on its own.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_repeated_on_a_page_count_as_if_pushed_one_by_one() {
    let server = RedisServer::start();
    let page = frontier::Url::parse("http://a.example/dir/page").unwrap();
    let hrefs: Vec<String> = [
        "/x",
        "/x#part",
        "y",
        "mailto:me@a.example",
        "/x",
        "mailto:me@a.example",
        "y#top",
        "http://b.example/",
    ]
    .map(String::from)
    .to_vec();
    let at_once = frontier(&server.url(), "at-once", Duration::from_secs(30)).await;
    at_once.push_links(&page, &page, &hrefs, 1).await.unwrap();
    let one_by_one = frontier(&server.url(), "one-by-one", Duration::from_secs(30)).await;
    for href in &hrefs {
        let one = std::slice::from_ref(href);
        one_by_one.push_links(&page, &page, one, 1).await.unwrap();
    }
    let (a, b) = (at_once.stats().admission, one_by_one.stats().admission);
    assert_eq!((a.new, a.seen), (3, 3), "{a:?}");
    assert_eq!((a.new, a.seen, &a.invalid), (b.new, b.seen, &b.invalid));
    assert_eq!(a.invalid.iter().map(|(_, n)| n).sum::<u64>(), 2, "{a:?}");
}

/// Regression: processes given the same list (an earlier crawl's records) each queue a share
/// of it, claimed chunk by chunk; a chunk whose claimer died is queued once its claim
/// lapses; a process given the list after it was queued whole sends none of it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_list_given_to_several_processes_is_queued_once_between_them() {
    let server = RedisServer::start();
    let list: Vec<shared::Listed> = urls(3 * shared::SHARE_CHUNK)
        .into_iter()
        .map(|url| (url, 1, None))
        .collect();
    let a = frontier(&server.url(), "shares", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "shares", Duration::from_secs(30)).await;
    // A process that claimed the second chunk and died: its claim lapses in a second.
    let time = server.cli(&["TIME"]);
    let now: u64 = time.lines().next().unwrap().trim().parse().unwrap();
    let lapses = format!("dead {}", now * 1000 + 1000);
    server.cli(&["HSET", "shares:shares", "L:1", &lapses]);
    let (queued_a, queued_b) = tokio::join!(
        a.push_shared("L", list.clone(), false),
        b.push_shared("L", list.clone(), false)
    );
    let (queued_a, queued_b) = (queued_a.unwrap(), queued_b.unwrap());
    assert_eq!(queued_a + queued_b, list.len() as u64);
    let totals = a.totals().await.unwrap();
    assert_eq!(totals.queued + totals.leased, list.len() as u64);
    let shares = server.cli(&["HGETALL", "shares:shares"]);
    assert_eq!(shares.matches("done").count(), 3, "{shares}");
    // Late: every chunk is done, so nothing of it is sent for admission (it would take a
    // script per bucket at least, 64), only a claim asked per chunk.
    let c = frontier(&server.url(), "shares", Duration::from_secs(30)).await;
    assert_eq!(c.push_shared("L", list, false).await.unwrap(), 0);
    let admission = c.stats().admission;
    assert_eq!((admission.new, admission.seen), (0, 0), "none of it sent");
}

/// Regression: what a process queued with a URL (a recrawl's earlier validators) comes back
/// with its lease in any process, as in one process: with and without a referrer, empty,
/// binary, after a retry and after a lease that expired; a URL pushed again with another
/// memo keeps its first.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_memo_comes_back_with_its_lease_through_retries_and_expiry() {
    let server = RedisServer::start();
    let a = frontier(&server.url(), "memos", Duration::from_secs(1)).await;
    let b = frontier(&server.url(), "memos", Duration::from_secs(1)).await;
    let canon = Canonicalizer::new();
    let memos: [(&str, Option<&str>, &[u8]); 3] = [
        ("http://m.example/1", None, b"\x00 etag \"x\"\n\xff"),
        ("http://m.example/2", Some("http://m.example/"), b"memo"),
        ("http://m.example/3", None, b""),
    ];
    for (url, from, memo) in memos {
        let url = canon.canonicalize(url).unwrap();
        assert!(
            a.push_canonical_with(url, from, Some(memo), 1)
                .await
                .unwrap()
        );
    }
    let again = canon.canonicalize("http://m.example/1").unwrap();
    assert!(
        !a.push_canonical_with(again, None, Some(b"other"), 1)
            .await
            .unwrap()
    );
    // Leased by the process that owns the host's bucket, whichever: it is `b` from here on.
    let mut leases = Vec::new();
    let mut owner = None;
    while leases.len() < memos.len() {
        for (i, f) in [&a, &b].into_iter().enumerate() {
            if owner.is_some_and(|o| o != i) {
                continue;
            }
            match f.next().await.unwrap() {
                Next::Lease(lease) => {
                    owner = Some(i);
                    leases.push(lease);
                }
                Next::WaitUntil(_) => {}
                other => panic!("three URLs are queued: {other:?}"),
            }
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let (a, b) = if owner == Some(0) { (b, a) } else { (a, b) };
    leases.sort_by(|x, y| x.url().as_str().cmp(y.url().as_str()));
    for (lease, (url, from, memo)) in leases.iter().zip(memos) {
        assert_eq!(lease.url().as_str(), url);
        assert_eq!((lease.referrer(), lease.memo()), (from, Some(memo)));
    }
    // The first fails and is retried; the second is left to expire (b "dies").
    let mut leases = leases.into_iter();
    let retry = Outcome::RETRY;
    b.complete(leases.next().unwrap(), retry).await.unwrap();
    let expiring = leases.next().unwrap();
    b.complete(leases.next().unwrap(), Outcome::Success)
        .await
        .unwrap();
    std::mem::forget(expiring);
    drop(b);
    let mut back = Vec::new();
    while back.len() < 2 {
        match a.next().await.unwrap() {
            Next::Lease(lease) => back.push(lease),
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            other => panic!("two URLs come back: {other:?}"),
        }
    }
    back.sort_by(|x, y| x.url().as_str().cmp(y.url().as_str()));
    assert_eq!(back[0].attempts(), 2);
    assert_eq!(back[0].memo(), Some(memos[0].2));
    assert_eq!(back[1].attempts(), 1, "an expired lease is not a try");
    assert_eq!(
        (back[1].referrer(), back[1].memo()),
        (memos[1].1, Some(memos[1].2))
    );
}

/// The address scripts the server has run since `SLOWLOG RESET`, all logged (see
/// `log_every_command`).
fn address_scripts(server: &RedisServer) -> usize {
    let log = server.cli(&["SLOWLOG", "GET", "100000"]);
    log.lines()
        .filter(|l| l.trim().ends_with("_address"))
        .count()
}

/// Has the server log every command, from now on, in its slow log.
fn log_every_command(server: &RedisServer) {
    server.cli(&["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    server.cli(&["CONFIG", "SET", "slowlog-max-len", "100000"]);
    server.cli(&["SLOWLOG", "RESET"]);
}

/// A process holding an address answers its requests' turns there in its memory, by the
/// embedded frontier's rule: the turns asked at once cost one script (the address asked
/// for), those after it none; a leave frees its place at once.
#[tokio::test(flavor = "current_thread")]
async fn a_process_holding_an_address_answers_its_turns_in_memory() {
    use frontier::{AddressLimits, Turn};

    let server = RedisServer::start();
    let frontier = frontier(&server.url(), "held", Duration::from_secs(30)).await;
    let address = "192.0.2.8".parse().unwrap();
    // A delay of a second: a term of eight, the keeper's first look a second on, after the
    // test (its renewals would be scripts too).
    let limits = AddressLimits {
        connections: 3,
        delay: Duration::from_secs(1),
    };
    let hold = Duration::from_secs(60);
    let hosts: Vec<String> = (0..11).map(|n| format!("h{n}.example")).collect();
    // A turn elsewhere first: the server is given the scripts' library on their first call,
    // which the first call then makes again.
    let elsewhere = "192.0.2.9".parse().unwrap();
    let first = frontier.enter_address(elsewhere, "a.example", limits, hold);
    assert_eq!(first.await.unwrap(), Turn::Go);
    log_every_command(&server);
    let turns = futures_util::future::join_all(
        (0..10).map(|n| frontier.enter_address(address, &hosts[n], limits, hold)),
    )
    .await;
    assert_eq!(address_scripts(&server), 1, "one script for ten turns");
    assert!(matches!(turns[0], Ok(Turn::Go)), "{:?}", turns[0]);
    // The others a delay apart, in the order asked.
    let at: Vec<std::time::Instant> = turns[1..]
        .iter()
        .map(|t| match t {
            Ok(Turn::WaitUntil(at)) => *at,
            other => panic!("not a delay's wait: {other:?}"),
        })
        .collect();
    assert!(at.windows(2).all(|w| w[1] - w[0] == limits.delay), "{at:?}");
    frontier.leave_address(address);
    let next = frontier.enter_address(address, &hosts[10], limits, hold);
    let next = next.await.unwrap().wait().expect("after the nine");
    assert_eq!(next - at[8], limits.delay);
    assert_eq!(address_scripts(&server), 1, "held: none asked of Redis");
}

/// An address one process holds is another's a while later: that one's requests wait
/// (not in line, as at a full address: the address may be the first's for a term), and ask
/// Redis once for all of them, whatever they are; booking a turn asks Redis only for an
/// address the process has not heard of, which it then holds.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_another_process_holds_makes_this_ones_requests_wait() {
    use frontier::{AddressLimits, Turn};

    let server = RedisServer::start();
    let a = frontier(&server.url(), "two", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "two", Duration::from_secs(30)).await;
    let address = "192.0.2.10".parse().unwrap();
    // A delay of a second: a term of eight, the keepers' first look a second on, after the
    // test (their renewals would be scripts too).
    let limits = AddressLimits {
        connections: 2,
        delay: Duration::from_secs(1),
    };
    let hold = Duration::from_secs(60);
    assert_eq!(
        a.enter_address(address, "a.example", limits, hold)
            .await
            .unwrap(),
        Turn::Go
    );
    log_every_command(&server);
    let asked = std::time::Instant::now();
    for host in ["b.example", "c.example", "b.example"] {
        match b.enter_address(address, host, limits, hold).await.unwrap() {
            Turn::WaitUntil(at) => {
                let wait = at - asked;
                // Counted from the answer: the round trip on.
                let most = shared::address_term(limits) / 4 + Duration::from_millis(100);
                assert!(wait <= most, "{wait:?}: a quarter of a term at most");
            }
            other => panic!("held by another, {host} went: {other:?}"),
        }
    }
    assert_eq!(address_scripts(&server), 1, "asked once");
    let elsewhere = b
        .book_address(address, "b.example", limits, hold)
        .await
        .unwrap();
    assert!(
        matches!(elsewhere, Turn::WaitUntil(_)),
        "held by a, as b heard"
    );
    // a holds it: a turn a delay after its request's start, kept for the host booking it.
    let booked = a
        .book_address(address, "e.example", limits, hold)
        .await
        .unwrap();
    assert!(matches!(booked, Turn::WaitUntil(_)), "{booked:?}");
    let entered = a
        .enter_address(address, "e.example", limits, hold)
        .await
        .unwrap();
    assert_eq!(entered, booked, "the turn booked");
    assert_eq!(address_scripts(&server), 1, "nothing more asked");
    let free = "192.0.2.11".parse().unwrap();
    let asked = b.book_address(free, "d.example", limits, hold).await;
    assert_eq!(asked.unwrap(), Turn::Go, "a free address taken");
    assert_eq!(address_scripts(&server), 2, "asked for");
    let turn = b
        .enter_address(free, "d.example", limits, hold)
        .await
        .unwrap();
    assert_eq!(turn, Turn::Go, "held: its turn in memory");
    assert_eq!(address_scripts(&server), 2);
}

/// Redis restarted from an older snapshot, where another process held an address this one
/// holds now: this one asks again rather than go on answering turns from its memory (both
/// would start requests there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_address_held_before_redis_went_back_is_asked_for_again() {
    use frontier::{AddressLimits, Turn};

    let mut server = RedisServer::start();
    let a = frontier(&server.url(), "back", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "back", Duration::from_secs(30)).await;
    let address: std::net::IpAddr = "192.0.2.12".parse().unwrap();
    // A term of eight seconds: the snapshot's holder not gone by the time it is back.
    let limits = AddressLimits {
        connections: 2,
        delay: Duration::from_secs(1),
    };
    let hold = Duration::from_secs(60);
    let turn = b.enter_address(address, "b.example", limits, hold).await;
    assert_eq!(turn.unwrap(), Turn::Go);
    server.cli(&["SAVE"]);
    // b gone, its hold with it: a takes the address.
    drop(b);
    let keys = server.cli(&["KEYS", "{back:a:*}:192.0.2.12"]);
    server.cli(&["DEL", keys.trim()]);
    let turn = a.enter_address(address, "a.example", limits, hold).await;
    assert_eq!(turn.unwrap(), Turn::Go);
    server.crash_and_restart();
    // Any request of a finds the server another one.
    let elsewhere = "192.0.2.13".parse().unwrap();
    let _ = a.enter_address(elsewhere, "c.example", limits, hold).await;
    let turn = a.enter_address(address, "a.example", limits, hold).await;
    assert!(
        matches!(turn, Ok(Turn::WaitUntil(_))),
        "b holds it in the snapshot: {turn:?}"
    );
}

/// Regression: a process killed while it fetched a robots.txt held its claim on the fetch
/// for the claim's whole time (a minute), and every lease of that host, in every other
/// process, waited for it: a crawl whose other hosts were done stalled for half a minute
/// (one kill -9 trial in three). A claim whose process has not said it is present for ten
/// seconds is now taken over; one whose process was heard of lately is waited for, and a
/// process that lost its claim cannot let go of the one that took it over.
/// Whether `f` claims the fetch of `key`, a robots.txt of h.example, for a minute.
async fn claims(f: &SharedFrontier, key: &str) -> bool {
    f.claim_robots(key, "h.example", Duration::from_secs(60))
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robots_claim_of_a_process_gone_is_taken_over_and_a_present_ones_is_not() {
    let server = RedisServer::start();
    let a = frontier(&server.url(), "claims", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "claims", Duration::from_secs(30)).await;
    assert!(claims(&a, "https://h.example").await);
    assert!(!claims(&b, "https://h.example").await, "a is present");
    assert!(claims(&a, "https://h.example").await, "still a's");

    // Claims of other processes, on the same host's other robots.txt files: one never
    // heard of, one last heard of a minute ago, one heard of 7 s ago (by the server's
    // clock): not gone, and not in any heartbeat's list (those heard of in the last 5 s).
    let claim = server.cli(&["KEYS", "*:robots:https://h.example"]);
    let claim_of = |key: &str| claim.trim().replace("https://h.example", key);
    let time = server.cli(&["TIME"]);
    let mut time = time.split_whitespace().map(|t| t.parse::<i64>().unwrap());
    let now = time.next().unwrap() * 1000 + time.next().unwrap() / 1000;
    let (old, new) = ((now - 60_000).to_string(), (now - 7_000).to_string());
    server.cli(&["ZADD", "claims:procs", &old, "4343-old", &new, "4444-new"]);
    for (key, holder) in [
        ("http://h.example", "4242-never"),
        ("http://h.example:81", "4343-old"),
        ("http://h.example:82", "4444-new"),
    ] {
        server.cli(&["SET", &claim_of(key), holder, "PX", "60000"]);
    }
    assert!(claims(&b, "http://h.example").await, "never present");
    assert!(claims(&b, "http://h.example:81").await, "gone");
    assert!(!claims(&b, "http://h.example:82").await, "heard of 7 s ago");
    // Present as last heard now: asked again (a waiting process asks every few tens of ms),
    // the claim is the one request, not the claim and when its holder was heard from.
    // (Up to ten tries: a heartbeat's requests may fall between two counts, on a loaded
    // machine in three tries running; without the note, every try costs two.)
    let mut costs = Vec::new();
    for _ in 0..10 {
        let before = b.store().requests();
        assert!(!claims(&b, "http://h.example:82").await);
        costs.push(b.store().requests() - before);
        if costs.contains(&1) {
            break;
        }
    }
    assert!(costs.contains(&1), "requests a claim cost: {costs:?}");
    assert!(
        server
            .cli(&["PTTL", &claim_of("http://h.example")])
            .trim()
            .parse::<i64>()
            .unwrap()
            > 50_000
    );
    // The claim taken over is b's: a's release leaves it, and a waits for it.
    a.release_robots("http://h.example", "h.example")
        .await
        .unwrap();
    assert!(!claims(&a, "http://h.example").await, "b's");
    b.release_robots("http://h.example", "h.example")
        .await
        .unwrap();
    assert!(claims(&a, "http://h.example").await, "let go");
    // The file stored lets go of the claim, in one request (up to ten tries, as above: a
    // heartbeat may fall between two counts).
    let mut costs = Vec::new();
    for _ in 0..10 {
        let before = a.store().requests();
        a.put_robots("http://h.example", "h.example", b"allow")
            .await
            .unwrap();
        costs.push(a.store().requests() - before);
        if costs.contains(&1) {
            break;
        }
    }
    assert!(costs.contains(&1), "requests a store cost: {costs:?}");
    let stored = b.robots("http://h.example", "h.example").await.unwrap();
    assert_eq!(stored.map(|(_, text)| text), Some(b"allow".to_vec()));
    assert!(
        claims(&b, "http://h.example").await,
        "let go as it was stored"
    );
}

/// Regression (the review of 98a816e, whose bucket owners wrote a host's state only when a
/// lease ended): a process stopping mid-fetch gives its fetch back and hands its buckets
/// over, the URL going back to its queue; the fetch's start must reach Redis with its
/// host's state, or the next owner, finding no lease out to reap the host by, leases it at
/// once, less than its delay after that start.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fetch_given_back_as_its_process_stops_keeps_its_hosts_delay_for_the_next() {
    let server = RedisServer::start();
    let delay = Duration::from_secs(3);
    let url = server.url();
    let process = || {
        frontier_with(
            &url,
            "stops",
            Duration::from_secs(30),
            Layout::default(),
            per_host(1, delay),
        )
    };
    let first = process().await;
    first.push_seeds(urls(200)).await.unwrap();
    let lease = next_lease(&first).await;
    let host = lease.url().host_key().to_owned();
    let started = std::time::Instant::now();
    // Its request out, the process quits at once: the fetch goes back unfinished.
    first.abandon(lease).await.unwrap();
    first.hand_over().await.unwrap();
    drop(first);
    let second = process().await;
    loop {
        match second.next().await.unwrap() {
            Next::Lease(lease) if lease.url().host_key() == host => {
                // Half the delay: the lease was picked a moment before `started`; without
                // the start in Redis it comes as soon as the bucket is taken over.
                let after = started.elapsed();
                assert!(
                    after >= delay / 2,
                    "its host leased again {after:?} after its start"
                );
                break;
            }
            Next::Lease(other) => second.abandon(other).await.unwrap(),
            Next::WaitUntil(at) => tokio::time::sleep_until(at.into()).await,
            other => panic!("URLs are queued: {other:?}"),
        }
    }
}

/// A host's first visit read its robots.txt's state from Redis and then claimed the file's
/// fetch: two requests of every host (a broad crawl of 1,000 hosts sent 1,740 reads and
/// 1,752 claims, docs/benchmarks.md 2026-12-07). One request reads the file or claims it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_robots_txt_is_read_or_claimed_in_one_request() {
    use shared::RobotsRead;
    let server = RedisServer::start();
    let a = frontier(&server.url(), "robots", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "robots", Duration::from_secs(30)).await;
    let minute = Duration::from_secs(60);
    let read = |f: &SharedFrontier, key: &'static str| {
        let f = f.clone();
        async move { f.robots_or_claim(key, "h.example", minute).await.unwrap() }
    };
    // Present first (a claim is never of a process no other has heard of).
    assert_eq!(read(&a, "http://h.example").await, RobotsRead::Claimed);
    // Up to ten tries: a heartbeat's requests may fall between two counts.
    let mut costs = Vec::new();
    for _ in 0..10 {
        let before = a.store().requests();
        assert_eq!(read(&a, "https://h.example").await, RobotsRead::Claimed);
        costs.push(a.store().requests() - before);
        if costs.contains(&1) {
            break;
        }
    }
    assert!(
        costs.contains(&1),
        "requests a read-or-claim cost: {costs:?}"
    );
    assert_eq!(read(&b, "https://h.example").await, RobotsRead::Elsewhere);
    // Stored: read, by either process, and nothing claimed.
    a.put_robots("https://h.example", "h.example", b"allow")
        .await
        .unwrap();
    let claim = server.cli(&["KEYS", "*:robots:https://h.example"]);
    assert_eq!(claim.trim(), "", "the claim let go as the file was stored");
    for f in [&a, &b] {
        match read(f, "https://h.example").await {
            RobotsRead::Stored(age, text) => {
                assert_eq!(text, b"allow");
                assert!(age < minute, "{age:?}");
            }
            other => panic!("{other:?}"),
        }
    }
    let claim = server.cli(&["KEYS", "*:robots:https://h.example"]);
    assert_eq!(claim.trim(), "", "a read claims nothing");
    let mut costs = Vec::new();
    for _ in 0..10 {
        let before = b.store().requests();
        assert!(matches!(
            read(&b, "https://h.example").await,
            RobotsRead::Stored(..)
        ));
        costs.push(b.store().requests() - before);
        if costs.contains(&1) {
            break;
        }
    }
    assert!(costs.contains(&1), "requests a read cost: {costs:?}");
    // Bytes that are not a stored file are no file: claimed as if none.
    let robots = server.cli(&["KEYS", "*:robots"]);
    server.cli(&["HSET", robots.trim(), "http://h.example:81", "junk"]);
    assert_eq!(read(&b, "http://h.example:81").await, RobotsRead::Claimed);
    assert_eq!(read(&a, "http://h.example:81").await, RobotsRead::Elsewhere);
}

/// A page's links to a bucket another process owns go to that bucket's list (a plain
/// command, where a script cost Redis some 100,000 instructions), and its owner admits them:
/// each URL once, however many processes found it, the lists left empty and the crawl over
/// only when they are.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn links_to_another_processs_bucket_go_through_its_list_once_each() {
    let server = RedisServer::start();
    let a = frontier(&server.url(), "lists", Duration::from_secs(30)).await;
    let b = frontier(&server.url(), "lists", Duration::from_secs(30)).await;
    a.push_seeds(urls(100)).await.unwrap();
    // A lease from each process: each owns buckets.
    let mut leased = std::collections::BTreeMap::new();
    let mut held: [Option<shared::SharedLease>; 2] = [None, None];
    while held.iter().any(Option::is_none) {
        let (i, lease) = lease_of_either(&a, &b).await;
        *leased.entry(lease.url().as_str().to_owned()).or_insert(0) += 1;
        match &held[i] {
            None => held[i] = Some(lease),
            Some(_) => b_or_a(i, &a, &b)
                .complete(lease, Outcome::Success)
                .await
                .map(drop)
                .unwrap(),
        }
    }
    // Both pages link to the same 300 new URLs on every host: each process sends each.
    let links: Vec<String> = (0..300)
        .map(|i| format!("http://h{}.example/new/{i}", i % 100))
        .collect();
    for (i, lease) in held.into_iter().enumerate() {
        let (f, lease) = (b_or_a(i, &a, &b), lease.unwrap());
        let page = lease.url().as_url().clone();
        f.push_links(&page, &page, &links, 1).await.unwrap();
        f.complete(lease, Outcome::Success).await.unwrap();
    }
    // Both crawl to the end: every URL leased once.
    let mut over = [false, false];
    let end = tokio::time::timeout(Duration::from_secs(60), async {
        while !over.iter().all(|&o| o) {
            for (i, f) in [&a, &b].into_iter().enumerate() {
                match f.next().await.unwrap() {
                    Next::Lease(lease) => {
                        *leased.entry(lease.url().as_str().to_owned()).or_insert(0) += 1;
                        f.complete(lease, Outcome::Success).await.unwrap();
                    }
                    Next::Done => over[i] = true,
                    _ => {}
                }
            }
            tokio::time::sleep(Duration::from_millis(2)).await;
        }
    });
    assert!(end.await.is_ok(), "the crawl never ended");
    assert_eq!(leased.len(), 100 + 300, "{leased:?}");
    assert!(leased.values().all(|&n| n == 1), "{leased:?}");
    let totals = a.totals().await.unwrap();
    assert_eq!((totals.seen, totals.done, totals.links), (400, 400, 0));
    // The lists were used, and are empty.
    let mut read = 0;
    for key in server.cli(&["KEYS", "lists*:links"]).lines() {
        assert_eq!(server.cli(&["LLEN", key]).trim(), "0", "{key}");
    }
    for key in server.cli(&["KEYS", "{lists*:counts"]).lines() {
        read += server
            .cli(&["HGET", key, "links_read"])
            .trim()
            .parse::<u64>()
            .unwrap_or(0);
    }
    assert!(read >= 150, "links read from the lists: {read}");
    // Between them the processes counted each link once as new.
    let (sa, sb) = (a.stats().admission, b.stats().admission);
    assert_eq!(sa.new + sb.new, 400);
}

/// `a` for 0, else `b`.
fn b_or_a<'a>(i: usize, a: &'a SharedFrontier, b: &'a SharedFrontier) -> &'a SharedFrontier {
    if i == 0 { a } else { b }
}
