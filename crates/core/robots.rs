//! robots.txt (RFC 9309): fetched once per host and cached; rules through the
//! `texting_robots` crate, which is tested against Google's reference parser's suite.
//!
//! What each answer means, per RFC 9309 section 2.3.1:
//! * 2xx: the rules, parsed from at most the first 500 KiB;
//! * 3xx: followed, up to five hops; more than that counts as unavailable (4xx);
//! * 4xx: "unavailable": anything may be crawled;
//! * 5xx: "unreachable": nothing may be crawled for a while. The host's URLs are retried
//!   with back-off, and the file is fetched again after a while (the longest `Retry-After`
//!   honoured, at most [`UNREACHABLE_TTL`]).
//! * no answer at all (DNS, connection, TLS, timeout): the host could not be reached, for its
//!   pages as for its robots.txt. The lease that asked fails with that error, as its own
//!   fetch would have, and the file is asked for again by the next lease: nothing is kept,
//!   so a host that comes back is crawled at once, and the host's back-off spaces the tries.
//!
//! A 2xx file the parser refuses (it fails on the whole file when one rule's pattern is too
//! large to compile) disallows everything: a site that wrote rules is not crawled as if it
//! had written none.
//!
//! In a crawl shared through Redis, a host's robots.txt is fetched once for the crawl: the
//! first process to need it claims the fetch and stores what it said; the others wait for
//! that and parse it themselves ([`RobotsCache::with_shared`]).
//!
//! Rules are per scheme, host and port (RFC 9309 section 2.3): `http://` and `https://` of one
//! host have a robots.txt each. They are kept for `politeness.robots_max_age`, 24 hours at
//! most (RFC 9309 section 2.4), whether fetched here or by another process of a shared crawl;
//! and the cache holds about [`CACHE_BYTES`] of them (counted as the bytes parsed; compiled
//! rules take some more): past that, other hosts' rules are dropped and fetched again when
//! needed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use shared::RobotsRead;
use texting_robots::Robot;
use tokio::sync::OnceCell;
use url::Url;

use crate::fetch::{FetchError, Fetcher};
use crate::guard::Guard;

/// The most of a robots.txt parsed; RFC 9309 asks crawlers to parse at least 500 KiB.
pub(crate) const MAX_BYTES: u64 = 500 * 1024;
/// Redirects followed to find a robots.txt; RFC 9309 asks for at least five.
const MAX_REDIRECTS: usize = 5;
/// The longest an unreachable robots.txt keeps its host closed before it is fetched again.
pub(crate) const UNREACHABLE_TTL: Duration = Duration::from_secs(60);
/// The longest rules are used before robots.txt is fetched again.
use crate::config::ROBOTS_MAX_AGE as RULES_MAX_AGE;
/// The memory the cached rules may take, counted as the bytes parsed plus a little per host:
/// past it, other hosts' rules are dropped, to be fetched again when needed. Hostile hosts
/// serving 500 KiB files each cannot grow the cache without bound.
const CACHE_BYTES: usize = 64 << 20;
/// The cost of a host's entry beyond its robots.txt.
const ENTRY_BYTES: usize = 256;

/// What robots.txt says about one host.
#[derive(Debug)]
pub(crate) enum Rules {
    /// No robots.txt (4xx, or too many redirects): anything goes.
    AllowAll,
    /// A robots.txt the parser refused: nothing goes.
    DisallowAll,
    /// Parsed rules for our user agent.
    Parsed(Robot),
    /// A 5xx answer, with its status: nothing may be fetched until the file is fetched
    /// again.
    Unreachable(u16),
    /// No answer at all: the host cannot be reached. Kept only for the leases that waited
    /// for this fetch; the next lease asks again.
    Unanswered(FetchError),
}

impl Rules {
    /// Whether `url` may be fetched.
    pub(crate) fn allows(&self, url: &Url) -> bool {
        match self {
            Rules::AllowAll => true,
            Rules::Parsed(robot) => robot.allowed(url.as_str()),
            Rules::DisallowAll | Rules::Unreachable(_) | Rules::Unanswered(_) => false,
        }
    }

    /// The `Crawl-delay` for our user agent, if any.
    pub(crate) fn crawl_delay(&self) -> Option<Duration> {
        match self {
            // Clamped before converting: a huge value is the longest delay, not none. The
            // frontier cuts it to `max_crawl_delay`.
            Rules::Parsed(robot) => robot
                .delay
                .filter(|d| !d.is_nan() && *d >= 0.0)
                .map(|d| Duration::from_secs_f32(d.min(86_400.0))),
            _ => None,
        }
    }

    /// Rules from a robots.txt body: parsed, or disallow all if the parser refuses it.
    pub(crate) fn parse(agent: &str, body: &[u8]) -> Rules {
        let body = &body[..body.len().min(MAX_BYTES as usize)];
        match Robot::new(agent, body) {
            Ok(robot) => Rules::Parsed(robot),
            Err(_) => Rules::DisallowAll,
        }
    }
}

/// The caller that was to fetch a robots.txt gave its lease back until its turn at the
/// address: the rules stay unknown (see [`RobotsCache::rules`]).
#[derive(Debug)]
struct GaveBack;

/// The rules a lease gets for its host.
pub(crate) struct Answer {
    pub(crate) rules: Arc<Rules>,
    /// When they were known.
    pub(crate) known: Instant,
    /// Whether this caller fetched them (a request to the host), rather than found them
    /// cached or waited for another caller's fetch.
    pub(crate) fetched_here: bool,
}

/// One host's rules once fetched, and when.
struct Entry {
    /// The rules, when they were known, and what they cost in memory (about the bytes parsed).
    rules: OnceCell<(Arc<Rules>, Instant, usize)>,
    /// Whether the cost is in `RobotsCache::cached`: set when it is added, cleared when it is
    /// taken out, so that it is never taken out unless added (an entry can be evicted between
    /// its fetch and its own `make_room`), nor added once evicted.
    counted: std::sync::atomic::AtomicBool,
    /// Whether a lease that did not fetch the rules was answered with them: the lease that
    /// fetched robots.txt gives its page back, to be the host's next request a delay later,
    /// and rules are not fetched again before a page used them, however old (a host whose
    /// delay is longer than `politeness.robots_max_age` would never get its page).
    used: std::sync::atomic::AtomicBool,
}

impl Entry {
    /// An entry of `rules` (known or to be fetched), not counted, not used.
    fn with(rules: OnceCell<(Arc<Rules>, Instant, usize)>) -> Entry {
        Entry {
            rules,
            counted: std::sync::atomic::AtomicBool::new(false),
            used: std::sync::atomic::AtomicBool::new(false),
        }
    }
}

/// The robots.txt of every host seen, fetched once each (concurrent asks for one host wait
/// for the same fetch).
pub(crate) struct RobotsCache {
    /// The product token robots.txt groups are matched against (`crawler` for a user agent
    /// `crawler/0.1 (...)`).
    agent: String,
    /// `scheme://host:port` to its entry. A std mutex: held only to find or insert an
    /// entry, never across an await.
    hosts: Mutex<HashMap<String, Arc<Entry>>>,
    /// How long an unreachable robots.txt is kept before it is fetched again.
    unreachable_ttl: Duration,
    /// How long other rules are kept before the file is fetched again
    /// (`politeness.robots_max_age`).
    max_age: Duration,
    /// The cost of the entries whose rules are known (see [`CACHE_BYTES`]); changed under
    /// the `hosts` lock.
    cached: std::sync::atomic::AtomicUsize,
    /// The bound on `cached`.
    budget: usize,
    /// The crawl shared through Redis, if it is one: where robots.txt files are kept for all
    /// its processes.
    shared: Option<shared::SharedFrontier>,
}

/// How long a process's claim on fetching a robots.txt for the shared crawl holds, and how
/// long the others wait for it before fetching the file themselves.
const CLAIM: Duration = Duration::from_secs(60);

impl RobotsCache {
    pub(crate) fn new(user_agent: &str, unreachable_ttl: Duration) -> Self {
        // At least a second: with none, every lease that waited for an unreachable file
        // would fetch it again at once.
        let unreachable_ttl = unreachable_ttl.max(Duration::from_secs(1));
        let agent = user_agent
            .trim()
            .split(|c: char| c == '/' || c.is_whitespace())
            .next()
            .unwrap_or(user_agent)
            .to_owned();
        RobotsCache {
            agent,
            hosts: Mutex::new(HashMap::new()),
            unreachable_ttl,
            max_age: RULES_MAX_AGE,
            cached: std::sync::atomic::AtomicUsize::new(0),
            budget: CACHE_BYTES,
            shared: None,
        }
    }

    /// This cache, for a crawl shared through Redis: robots.txt files come from the crawl
    /// when another process fetched them, and are stored there when this one does.
    pub(crate) fn with_shared(mut self, frontier: Option<shared::SharedFrontier>) -> Self {
        self.shared = frontier;
        self
    }

    /// This cache, fetching each robots.txt again once its rules are `max_age` old (at most
    /// [`RULES_MAX_AGE`]).
    pub(crate) fn with_max_age(mut self, max_age: Duration) -> Self {
        self.max_age = max_age.min(RULES_MAX_AGE);
        self
    }

    /// How long an unreachable robots.txt closes its host.
    pub(crate) fn unreachable_ttl(&self) -> Duration {
        self.unreachable_ttl
    }

    /// The rules for the host of `url` (whose host key is `host`), fetching them first if
    /// need be. `asked` is when the caller's lease started: rules known since then are its
    /// answer even when they are to be fetched again (an unanswered robots.txt is one
    /// failure of its host, not one per lease waiting for it). `turn` is called only when
    /// this caller is to fetch robots.txt itself, and what it answers is held while the
    /// request is out: the caller's turn at the address and its fetch permit, which a
    /// caller waiting for another's fetch, or for the rules another process stored, does not
    /// hold. `None` when `turn` answered `None` (the caller gave its lease back until its
    /// turn): the rules are still unknown, and another caller fetches them.
    pub(crate) async fn rules<T>(
        &self,
        fetcher: &dyn Fetcher,
        guard: &Guard,
        host: &str,
        url: &Url,
        asked: Instant,
        turn: impl AsyncFnOnce() -> Option<T>,
    ) -> Option<Answer> {
        let key = format!("{}://{host}", url.scheme());
        let host = key.as_str();
        let mut turn = Some(turn);
        loop {
            let entry = {
                let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
                Arc::clone(
                    hosts
                        .entry(host.to_owned())
                        .or_insert_with(|| Arc::new(Entry::with(OnceCell::new()))),
                )
            };
            let (mut fresh, mut known_here) = (false, false);
            let known = entry
                .rules
                .get_or_try_init(|| async {
                    known_here = true;
                    let (rules, bytes, at, fetched) =
                        self.obtain(fetcher, guard, host, url, &mut turn).await?;
                    fresh = fetched;
                    Ok::<_, GaveBack>((Arc::new(rules), at, bytes + ENTRY_BYTES))
                })
                .await;
            let Ok((rules, at, _)) = known else {
                return None;
            };
            if known_here {
                self.make_room(host, &entry);
            }
            let (ttl, once_used) = match **rules {
                Rules::Unreachable(_) => (self.unreachable_ttl, false),
                Rules::Unanswered(_) => (Duration::ZERO, false),
                _ => (self.max_age, true),
            };
            // The crawl's clock, which tests pause and advance, as `at` is.
            let age = crate::backend::now().saturating_duration_since(*at);
            let used = entry.used.load(std::sync::atomic::Ordering::Relaxed);
            if age >= ttl && !known_here && asked >= *at && (used || !once_used) {
                // Time to ask again: drop the entry (unless another caller already did).
                let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
                if hosts.get(host).is_some_and(|e| Arc::ptr_eq(e, &entry)) {
                    self.forget(&mut hosts, host);
                }
                continue;
            }
            if !fresh {
                entry.used.store(true, std::sync::atomic::Ordering::Relaxed);
            }
            return Some(Answer {
                rules: Arc::clone(rules),
                known: *at,
                fetched_here: fresh,
            });
        }
    }

    /// Counts a newly known entry in the cache's memory, and drops other hosts' known
    /// entries while the cache is over its budget.
    fn make_room(&self, host: &str, entry: &Arc<Entry>) {
        use std::sync::atomic::Ordering::Relaxed;
        let mut hosts = self.hosts.lock().unwrap_or_else(PoisonError::into_inner);
        if !hosts.get(host).is_some_and(|e| Arc::ptr_eq(e, entry)) {
            return;
        }
        let cost = entry.rules.get().map_or(0, |(_, _, cost)| *cost);
        if entry.counted.swap(true, Relaxed) {
            return;
        }
        self.cached.fetch_add(cost, Relaxed);
        while self.cached.load(Relaxed) > self.budget {
            // Any other known entry: which one matters little, each costs one more fetch.
            let Some(victim) = hosts
                .iter()
                .find(|(key, e)| key.as_str() != host && e.rules.get().is_some())
                .map(|(key, _)| key.clone())
            else {
                break;
            };
            self.forget(&mut hosts, &victim);
        }
    }

    /// Removes a host's entry, and its cost if it was counted.
    fn forget(&self, hosts: &mut HashMap<String, Arc<Entry>>, host: &str) {
        use std::sync::atomic::Ordering::Relaxed;
        if let Some(entry) = hosts.remove(host)
            && entry.counted.swap(false, Relaxed)
            && let Some((_, _, cost)) = entry.rules.get()
        {
            self.cached.fetch_sub(*cost, Relaxed);
        }
    }

    /// The rules at `url`'s robots.txt (`key`: `scheme://host:port`): from the shared crawl
    /// when another process stored them, else fetched here (and stored for the others).
    /// Answers them, the bytes parsed, when they were fetched, and whether this process
    /// fetched them.
    async fn obtain<T>(
        &self,
        fetcher: &dyn Fetcher,
        guard: &Guard,
        key: &str,
        url: &Url,
        turn: &mut Option<impl AsyncFnOnce() -> Option<T>>,
    ) -> Result<(Rules, usize, Instant, bool), GaveBack> {
        let here = |(rules, bytes, _): (Rules, usize, Option<Vec<u8>>)| {
            Ok((rules, bytes, crate::backend::now(), true))
        };
        // Held while robots.txt's request is out; taken once, by the one caller that fetches.
        let mut take_turn = async || match turn.take() {
            Some(turn) => turn().await.ok_or(GaveBack),
            None => Err(GaveBack),
        };
        let Some(shared) = &self.shared else {
            let _held = take_turn().await?;
            return here(self.fetch(fetcher, guard, url).await);
        };
        let host = url.host_str().unwrap_or_default();
        let deadline = crate::backend::now() + CLAIM;
        while crate::backend::now() < deadline {
            // The file as stored, or the claim on its fetch, in one request; one stored too
            // long ago (or unreadable) is claimed anew.
            let claimed = match shared.robots_or_claim(key, host, CLAIM).await {
                Ok(RobotsRead::Stored(age, text)) => {
                    if let Some((rules, bytes)) = self.decode(&text) {
                        let ttl = match rules {
                            Rules::Unreachable(_) => self.unreachable_ttl,
                            _ => self.max_age,
                        };
                        if age < ttl {
                            let now = crate::backend::now();
                            return Ok((rules, bytes, now.checked_sub(age).unwrap_or(now), false));
                        }
                    }
                    shared.claim_robots(key, host, CLAIM).await
                }
                Ok(RobotsRead::Claimed) => Ok(true),
                Ok(RobotsRead::Elsewhere) => Ok(false),
                Err(err) => {
                    tracing::debug!("robots.txt of {key} from the shared crawl: {err}");
                    break;
                }
            };
            match claimed {
                Ok(true) => {
                    let held = match take_turn().await {
                        Ok(held) => held,
                        Err(gave_back) => {
                            // Another process (or a lease of this one) fetches it instead.
                            if let Err(err) = shared.release_robots(key, host).await {
                                tracing::debug!("releasing the robots.txt of {key}: {err}");
                            }
                            return Err(gave_back);
                        }
                    };
                    let fetched = self.fetch(fetcher, guard, url).await;
                    drop(held);
                    let stored = match &fetched.2 {
                        Some(text) => shared.put_robots(key, host, text).await,
                        None => shared.release_robots(key, host).await,
                    };
                    if let Err(err) = stored {
                        tracing::debug!("storing the robots.txt of {key}: {err}");
                    }
                    return here(fetched);
                }
                // Another process fetches it: its answer is stored in a moment.
                Ok(false) => tokio::time::sleep(Duration::from_millis(50)).await,
                Err(err) => {
                    tracing::debug!("claiming the robots.txt of {key}: {err}");
                    break;
                }
            }
        }
        let _held = take_turn().await?;
        here(self.fetch(fetcher, guard, url).await)
    }

    /// Rules from what a process stored of a robots.txt ([`RobotsCache::fetch`]'s text):
    /// `200` and the body, `allow`, or `unreachable` and the status.
    fn decode(&self, text: &[u8]) -> Option<(Rules, usize)> {
        let (kind, rest) = match text.iter().position(|&b| b == b'\n') {
            Some(end) => (&text[..end], &text[end + 1..]),
            None => (text, &[][..]),
        };
        match kind {
            b"200" => Some((Rules::parse(&self.agent, rest), rest.len())),
            b"allow" => Some((Rules::AllowAll, 0)),
            _ => {
                let status = std::str::from_utf8(kind.strip_prefix(b"unreachable ")?)
                    .ok()?
                    .parse()
                    .ok()?;
                Some((Rules::Unreachable(status), 0))
            }
        }
    }

    /// The rules at `page`'s robots.txt, the bytes parsed for them, and what to store of
    /// them for other processes (none for a fetch without an answer: each tries itself).
    async fn fetch(
        &self,
        fetcher: &dyn Fetcher,
        guard: &Guard,
        page: &Url,
    ) -> (Rules, usize, Option<Vec<u8>>) {
        let allow = || (Rules::AllowAll, 0, Some(b"allow".to_vec()));
        let Ok(mut url) = page.join("/robots.txt") else {
            return allow();
        };
        for _ in 0..=MAX_REDIRECTS {
            let response = match fetcher.get(&url, MAX_BYTES, false, None).await {
                Ok(response) => response,
                Err(err) => return (Rules::Unanswered(err), 0, None),
            };
            match response.status {
                200..=299 => {
                    let mut text = b"200\n".to_vec();
                    text.extend_from_slice(&response.body);
                    return (
                        Rules::parse(&self.agent, &response.body),
                        response.body.len(),
                        Some(text),
                    );
                }
                300..=399 => {
                    let next = response.location.and_then(|to| url.join(&to).ok());
                    match next {
                        // A redirect is followed only where the SSRF guard lets a page go; one
                        // that leads elsewhere leaves the file unavailable, as RFC 9309 says of
                        // redirects that cannot be followed.
                        Some(next) if guard.allows_url(&next).await => url = next,
                        _ => return allow(),
                    }
                }
                400..=499 => return allow(),
                status => {
                    let text = format!("unreachable {status}").into_bytes();
                    return (Rules::Unreachable(status), 0, Some(text));
                }
            }
        }
        allow()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_a_process_stores_of_a_robots_txt_reads_back_the_same() {
        let cache = RobotsCache::new("crawler", UNREACHABLE_TTL);
        let url = Url::parse("http://example.com/x/a").unwrap();
        // Bytes that are not UTF-8 stay as sent.
        let (rules, bytes) = cache
            .decode(b"200\nUser-agent: *\nDisallow: /x/\xe9")
            .unwrap();
        assert!(matches!(rules, Rules::Parsed(_)));
        assert_eq!(bytes, 28);
        assert!(matches!(cache.decode(b"allow"), Some((Rules::AllowAll, 0))));
        assert!(matches!(
            cache.decode(b"unreachable 503"),
            Some((Rules::Unreachable(503), 0))
        ));
        assert!(cache.decode(b"junk").is_none());
        let (rules, _) = cache.decode(b"200\nUser-agent: *\nDisallow: /x/").unwrap();
        assert!(!rules.allows(&url));
    }

    #[test]
    fn the_cache_stays_within_its_memory_budget() {
        let mut cache = RobotsCache::new("crawler", UNREACHABLE_TTL);
        cache.budget = 3 * (1000 + ENTRY_BYTES);
        for i in 0..10 {
            let host = format!("http://h{i}.example");
            let entry = Arc::new(Entry::with(OnceCell::new_with(Some((
                Arc::new(Rules::AllowAll),
                Instant::now(),
                1000 + ENTRY_BYTES,
            )))));
            cache
                .hosts
                .lock()
                .unwrap()
                .insert(host.clone(), Arc::clone(&entry));
            cache.make_room(&host, &entry);
            let hosts = cache.hosts.lock().unwrap();
            assert!(hosts.contains_key(&host), "the newest entry stays");
            assert!(hosts.len() <= 3, "{} entries", hosts.len());
            let cached = cache.cached.load(std::sync::atomic::Ordering::Relaxed);
            assert!(cached <= cache.budget, "{cached}");
        }
    }

    /// Regression: an entry evicted between its fetch and its own `make_room` had
    /// its cost taken out of the count without ever being added, so the count fell below
    /// what the cache held and the cache could outgrow its budget.
    #[test]
    fn an_entry_evicted_before_it_was_counted_leaves_the_count_alone() {
        let cache = RobotsCache::new("crawler", UNREACHABLE_TTL);
        let entry = |cost: usize| {
            Arc::new(Entry::with(OnceCell::new_with(Some((
                Arc::new(Rules::AllowAll),
                Instant::now(),
                cost,
            )))))
        };
        let (counted, uncounted) = (entry(1000), entry(500));
        {
            let mut hosts = cache.hosts.lock().unwrap();
            hosts.insert("http://a.example".into(), Arc::clone(&counted));
            hosts.insert("http://b.example".into(), Arc::clone(&uncounted));
        }
        cache.make_room("http://a.example", &counted);
        let cached = || cache.cached.load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(cached(), 1000);
        // b.example's rules are known but not yet counted when it is evicted...
        cache.forget(&mut cache.hosts.lock().unwrap(), "http://b.example");
        assert_eq!(cached(), 1000);
        // ... and its own make_room, coming late, finds it gone and counts nothing.
        cache.make_room("http://b.example", &uncounted);
        assert_eq!(cached(), 1000);
        cache.forget(&mut cache.hosts.lock().unwrap(), "http://a.example");
        assert_eq!(cached(), 0);
    }

    #[test]
    fn rules_follow_the_group_of_our_product_token() {
        let cache = RobotsCache::new(" crawler/0.1 (+https://example.com)", UNREACHABLE_TTL);
        assert_eq!(cache.agent, "crawler");
        let txt = b"User-agent: crawler\nDisallow: /private\nCrawl-delay: 2.5\n\nUser-agent: *\nDisallow: /\n";
        let rules = Rules::parse(&cache.agent, txt);
        let url = |p: &str| Url::parse(&format!("http://a.example{p}")).unwrap();
        assert!(rules.allows(&url("/public")));
        assert!(!rules.allows(&url("/private/x")));
        assert_eq!(rules.crawl_delay(), Some(Duration::from_millis(2500)));
        let others = Rules::parse("otherbot", txt);
        assert!(!others.allows(&url("/public")));
    }

    #[test]
    fn only_the_first_500_kib_count() {
        let mut txt = b"User-agent: *\nDisallow: /a\n".to_vec();
        txt.resize(MAX_BYTES as usize, b'\n');
        txt.extend_from_slice(b"Disallow: /b\n");
        let rules = Rules::parse("crawler", &txt);
        let url = |p: &str| Url::parse(&format!("http://a.example{p}")).unwrap();
        assert!(!rules.allows(&url("/a")));
        assert!(rules.allows(&url("/b")));
    }

    #[test]
    fn huge_crawl_delays_are_the_longest_not_none() {
        let rules = Rules::parse("crawler", b"User-agent: *\nCrawl-delay: 1e30\n");
        assert_eq!(rules.crawl_delay(), Some(Duration::from_secs(86_400)));
    }

    /// Binary garbage served as robots.txt holds no rule: everything is allowed, as with an
    /// empty file, and there is no crawl delay.
    #[test]
    fn binary_garbage_allows_all() {
        let garbage: Vec<u8> = (0..4096u32)
            .map(|i| (i.wrapping_mul(2_654_435_761) >> 13) as u8)
            .filter(|b| !b.is_ascii_alphabetic())
            .collect();
        let rules = Rules::parse("crawler", &garbage);
        assert!(matches!(rules, Rules::Parsed(_)), "{rules:?}");
        for path in ["/", "/a/b?c=d", "/robots.txt"] {
            let url = Url::parse(&format!("http://a.example{path}")).unwrap();
            assert!(rules.allows(&url), "{path}");
        }
        assert_eq!(rules.crawl_delay(), None);
    }

    #[test]
    fn failed_robots_have_no_rules_and_no_delay() {
        let url = Url::parse("http://a.example/").unwrap();
        let unanswered = Rules::Unanswered(FetchError {
            kind: crate::errors::ErrorKind::Dns,
            detail: "no such host".into(),
            local: false,
        });
        for rules in [Rules::Unreachable(503), unanswered, Rules::DisallowAll] {
            assert!(!rules.allows(&url), "{rules:?}");
            assert_eq!(rules.crawl_delay(), None, "{rules:?}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::test_runner::Config::with_cases(crate::fuzz_cases(256)))]

        /// Any robots.txt, line-shaped or not, parses without a panic, and its rules answer
        /// for any path.
        #[test]
        fn fuzz_robots_never_panics(
            lines in proptest::collection::vec(
                "(User-agent|Disallow|Allow|Crawl-delay|Sitemap|[a-z]{0,8}): ?[ -~]{0,40}",
                0..40,
            ),
            noise in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..64),
            path in "/[ -~]{0,40}",
        ) {
            let mut body = lines.join("\n").into_bytes();
            body.extend_from_slice(&noise);
            let rules = Rules::parse("crawler", &body);
            // A printable path always makes a URL: every case asks the rules.
            let url = Url::parse(&format!("http://a.example{path}")).expect("a URL");
            let _ = rules.allows(&url);
            let _ = rules.crawl_delay();
        }
    }
}
