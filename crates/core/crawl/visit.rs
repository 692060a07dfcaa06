//! One lease's visit: the SSRF guard, robots.txt, the fetch, the WARC record; then
//! [`follow`](super::follow) and the lease's completion with its [`record`](super::record).
//! A visit that panics or is cancelled still gives its lease back.

use std::net::IpAddr;
use std::sync::atomic::Ordering;
use std::time::{Instant, SystemTime};

use frontier::{Outcome, Turn};
use url::Url;

use crate::backend::{self, AddressPermit, Lease, Line};
use crate::content::Digest;
use crate::errors::ErrorKind;
use crate::fetch::FetchError;
use crate::requisite::Memo;
use crate::robots::{self, Rules};
use crate::sitemap::{self};
use crate::warc::Exchange;

use super::*;

/// What a visit fetches with: the HTTP fetcher, the SSRF guard, robots.txt's cache, the
/// hosts' own rules, and the permits that bound the fetches in flight.
pub(crate) struct Fetching {
    pub(super) fetcher: Box<dyn Fetcher>,
    pub(super) guard: Arc<Guard>,
    /// Each host's own settings (`[[hosts]]`): here, whether its robots.txt is obeyed.
    pub(super) hosts: Arc<HostRules>,
    pub(super) robots: RobotsCache,
    /// `fetch.concurrency` permits, one held by each fetch in flight (see
    /// [`worker_tasks`]).
    pub(super) permits: tokio::sync::Semaphore,
}

/// The depth of the sitemaps robots.txt lists: one link from the host, as if its root linked
/// to them, so that `crawl.max_depth = 0` (exactly the seeds) reads none.
pub(super) const ROBOTS_SITEMAP_DEPTH: u32 = 1;

/// Why the SSRF guard refused `url`, and how to let the crawl fetch it, for the record's
/// `error_detail` and the summary's hosts not crawled.
pub(super) fn ssrf_detail(url: &Url) -> String {
    use std::net::IpAddr;
    let host = url.host_str().unwrap_or_default();
    let why = match url.host() {
        Some(url::Host::Ipv4(ip)) => format!("{ip} is {}", address_kind(IpAddr::V4(ip))),
        Some(url::Host::Ipv6(ip)) => format!("{ip} is {}", address_kind(IpAddr::V6(ip))),
        _ => format!("{host} resolves to an address that is not public"),
    };
    format!(
        "{why}, and links to such addresses are not fetched (the seeds' hosts excepted); \
         --allow-private-addresses true (fetch.allow_private_addresses) allows them"
    )
}

/// What kind of address the guard refuses `ip` as, in words.
pub(super) fn address_kind(ip: std::net::IpAddr) -> &'static str {
    use std::net::IpAddr;
    let ip = match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map_or(ip, IpAddr::V4),
        v4 => v4,
    };
    match ip {
        _ if ip.is_loopback() => "a loopback address (this machine)",
        _ if ip.is_unspecified() => "the unspecified address",
        _ if ip.is_multicast() => "a multicast address",
        IpAddr::V4(v4) if v4.is_private() => "a private address",
        IpAddr::V4(v4) if v4.is_link_local() => "a link-local address",
        IpAddr::V6(v6) if v6.segments()[0] & 0xfe00 == 0xfc00 => "a unique-local address",
        IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80 => "a link-local address",
        _ => "not a public address",
    }
}

/// A lease being worked on. If the work panics, dropping this gives the lease back as a
/// failure with a record, so that its host's connection is freed and the crawl can end: a
/// lease that is simply lost would keep the frontier from ever being done. If the work is
/// cancelled, the lease is abandoned: queued again, without a record.
pub(super) struct Visit<'c> {
    crawler: &'c Crawler,
    lease: Option<Lease>,
    started: Instant,
    /// When the try started, for the record.
    fetched_at: SystemTime,
}

impl Visit<'_> {
    fn lease(&self) -> &Lease {
        self.lease
            .as_ref()
            .expect("the lease is held until finished")
    }

    fn take(&mut self) -> Lease {
        self.lease.take().expect("the lease is held until finished")
    }

    /// Completes the lease and, when its URL is done with, writes its record.
    async fn finish(mut self, outcome: Outcome, result: Draft<'_>) {
        let lease = self.take();
        let facts = LeaseRecord::of(&lease);
        let crawler = self.crawler;
        let (started, fetched_at) = (self.started, self.fetched_at);
        lease
            .complete(outcome, |completion| {
                crawler.record(&facts, completion, result, started, fetched_at);
            })
            .await;
    }
}

impl Drop for Visit<'_> {
    fn drop(&mut self) {
        let Some(lease) = self.lease.take() else {
            return;
        };
        let crawler = self.crawler;
        if std::thread::panicking() {
            tracing::error!("a fetch worker panicked on {}", lease.url());
            let outcome = Outcome::FAILED;
            let facts = LeaseRecord::of(&lease);
            let (started, fetched_at) = (self.started, self.fetched_at);
            lease.complete_now(outcome, |completion| {
                let result = Draft::error(ErrorKind::Internal);
                crawler.record(&facts, completion, result, started, fetched_at);
            });
        } else {
            // Cancelled (the crawl stopped after its grace period): no fetch ended, so no
            // record; the URL goes back in line, and a checkpoint holds it as queued.
            crawler.abandon(lease);
        }
        crawler.wake.notify_waiters();
    }
}

/// What a visit holds while its request (robots.txt's, or the page's) is out: one of the
/// fetch permits, and its turn at the request's address. Dropped when the request ends.
struct Request<'c> {
    _fetch: Option<tokio::sync::SemaphorePermit<'c>>,
    _turn: AddressPermit,
}

/// The longest wait for an address's turn spent holding the lease; longer ones give it
/// back until then.
const WAIT_IN_PLACE: std::time::Duration = std::time::Duration::from_millis(50);

/// How a visit ended, for its task.
pub(super) enum Visited {
    /// Its lease was completed, or given back for a reason of its own.
    Done,
    /// The line of this process's requests waiting at its lease's full address had no room
    /// (see `backend::AddressWaits`): the lease went back, its host held off until the
    /// instant, or was parked at the address (the second field, see `Lease::park`). The task
    /// waits for room in a line, or that instant, before it takes another lease, and while
    /// leases are parked at that address with no room in its line: when most of what is
    /// ready is at such an address, a task going straight on would take and give back leases
    /// of it many times a page, each a Redis script in a shared crawl.
    LineFull(Instant, Option<IpAddr>),
}

/// How long a URL whose request could not be made for want of this machine's resources
/// waits before it is fetched again (see [`Crawler::put_off`]).
const PUT_OFF: std::time::Duration = std::time::Duration::from_secs(1);

/// How many times at most one URL is put off so (see [`Crawler::may_put_off`]).
const MOST_PUT_OFFS: u32 = 10;

impl Crawler {
    /// Everything done with one lease, by worker number `worker`.
    pub(super) async fn visit(&self, worker: usize, lease: Lease) -> Visited {
        let started = backend::now();
        let _in_flight = self.in_flight.start(worker, lease.url().as_str(), started);
        let mut visit = Visit {
            crawler: self,
            lease: Some(lease),
            started,
            fetched_at: SystemTime::now(),
        };
        if visit.lease().host_given_up() {
            // Handed out only to be recorded: the frontier gave its host up.
            let why = "its host failed for too long and was given up; not fetched";
            visit
                .finish(
                    Outcome::Skipped,
                    Draft::failed(ErrorKind::HostGivenUp, why.to_owned()),
                )
                .await;
            return Visited::Done;
        }
        let url = visit.lease().url().as_url().clone();
        if !self.fetching.guard.allows_url(&url).await {
            // Our policy, not the host's failure, and no request was made: no back-off, no
            // retry, and the host's delay is not spent.
            let result = Draft::failed(ErrorKind::SsrfBlocked, ssrf_detail(&url));
            visit.finish(Outcome::Skipped, result).await;
            return Visited::Done;
        }
        let obey_robots = self
            .fetching
            .hosts
            .for_host(visit.lease().url().host_key())
            .obey_robots;
        if obey_robots {
            if let Some(visited) = self.turn_far_off(&mut visit, &url).await {
                return visited;
            }
            // robots.txt's request, if this visit makes it, takes a turn of its own.
            match self.obey_robots(visit, &url).await {
                Ok(allowed) => visit = allowed,
                Err(visited) => return visited,
            }
        }
        // Held until the page's request has ended.
        let request = match self.address_turn(&mut visit, &url).await {
            Ok(request) => request,
            Err(visited) => return visited,
        };
        // The record's time is its request's start (WARC-Date's "the instant that data
        // capture began"), not the lease's, which may have waited for its address's turn.
        visit.fetched_at = SystemTime::now();
        self.fetch_and_follow(visit, url, request).await;
        Visited::Done
    }

    /// How the visit ended if its request's turn at its address is far off (another
    /// process's address, in a shared crawl, or a delay of its own): its lease goes back till
    /// then at once, its turn kept, where robots.txt, not yet known here, would first be read
    /// and claimed in Redis, and let go, each time the lease came back (a broad crawl of two
    /// processes held to 20 ms a server claimed robots.txt 4,600 times for 1,000 hosts,
    /// docs/benchmarks.md 2026-12-06).
    async fn turn_far_off(&self, visit: &mut Visit<'_>, url: &Url) -> Option<Visited> {
        if visit.lease().address_limits().is_unlimited() {
            return None;
        }
        let address = self.fetching.guard.address_of(url).await?;
        let at = visit.lease().book_address(address).await?;
        // A moment's wait is made in place, with the turn (see `address_turn`).
        if at.saturating_duration_since(backend::now()) <= WAIT_IN_PLACE {
            return None;
        }
        self.abandon_for_turn(visit.take(), at);
        self.pace.give_back();
        Some(Visited::Done)
    }

    /// The visit's turn at the address its request goes to (politeness per address), with
    /// its fetch permit: what to hold while the request is out. How the visit ended when the
    /// lease went back in line until the address's turn for its host.
    async fn address_turn(&self, visit: &mut Visit<'_>, url: &Url) -> Result<Request<'_>, Visited> {
        // Never closed: always a permit.
        let fetching = || async { self.fetching.permits.acquire().await.ok() };
        // A name that does not resolve has no address: its fetch fails on its own.
        let address = match visit.lease().address_limits().is_unlimited() {
            true => None,
            false => self.fetching.guard.address_of(url).await,
        };
        let Some(address) = address else {
            return Ok(Request {
                _fetch: fetching().await,
                _turn: AddressPermit::Unlimited,
            });
        };
        // Kept while the request asks again, so that a request ending meanwhile wakes it.
        let mut place = None;
        loop {
            // Requests of this process wait at the address: this one joins them, or goes back
            // if they are as many as may be, without asking (an ask, in a shared crawl, is a
            // Redis call); their first asks whenever a connection may be free.
            if place.is_none() {
                let full = backend::now() + visit.lease().address_limits().full_wait();
                match visit.lease().line(address) {
                    Line::None => {}
                    Line::Joined(joined) => {
                        place.insert(joined).until(full).await;
                        continue;
                    }
                    Line::Full => return Err(self.line_full(visit, address, full)),
                }
            }
            // The fetch permit first, then the turn: a turn taken before a wait for a permit
            // (a shared crawl has three workers a permit) would start its request late, and
            // the next turn, a delay after this one, could start less than a delay after it.
            // Not held while waiting for the turn: the permit serves other servers meanwhile.
            let permit = fetching().await;
            let turn = match visit.lease().enter_address(address).await {
                Ok(turn) => {
                    return Ok(Request {
                        _fetch: permit,
                        _turn: turn,
                    });
                }
                Err(turn) => turn,
            };
            drop(permit);
            let at = turn.wait().unwrap_or_else(backend::now);
            // A moment's wait (the host before was late for its turn): cheaper here than
            // a lease given back and taken again.
            if at.saturating_duration_since(backend::now()) <= WAIT_IN_PLACE {
                tokio::time::sleep_until(at.into()).await;
                continue;
            }
            // Full: one of this process's requests there ends soon, and its connection goes
            // to a request waiting here at once. The others' leases go back for a while
            // (`held_off_until`): long enough to spare Redis their coming and going, short
            // enough to refill the places as they empty.
            if matches!(turn, Turn::Full(_)) {
                if place.is_none() {
                    place = visit.lease().wait_place(address);
                }
                if let Some(place) = &place {
                    place.until(at).await;
                    continue;
                }
                return Err(self.line_full(visit, address, at));
            }
            self.abandon_for_turn(visit.take(), at);
            self.pace.give_back();
            return Err(Visited::Done);
        }
    }

    /// Parks the lease of a visit whose address was full (until `at`) and its line too (see
    /// `Lease::park`), or gives it back, its host held off (see `Lease::held_off_until`);
    /// its task to wait for room. Either way its share of the page budget goes back: a parked
    /// lease is taken again as a new one.
    fn line_full(&self, visit: &mut Visit<'_>, address: IpAddr, at: Instant) -> Visited {
        let until = visit.lease().held_off_until(at);
        let parked = match visit.take().park(address) {
            Some(lease) => {
                self.abandon_for_turn(lease, until);
                None
            }
            None => Some(address),
        };
        self.pace.give_back();
        Visited::LineFull(until, parked)
    }

    /// Whether `url`, whose request could not be made for want of this machine's resources,
    /// is put off once more (see [`put_off`](Self::put_off)): [`MOST_PUT_OFFS`] times at
    /// most, after which its failure is recorded as any other, so that a machine that never
    /// has the files (or a failure taken for the machine's that is not) cannot hold a crawl
    /// forever.
    fn may_put_off(&self, url: &Url) -> bool {
        let mut put_offs = self
            .put_offs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        // Bounded: URLs put off long ago (and fetched since) are forgotten together.
        if put_offs.len() >= 100_000 {
            put_offs.clear();
        }
        let times = put_offs.entry(url.as_str().into()).or_default();
        *times += 1;
        *times <= MOST_PUT_OFFS
    }

    /// Gives back the lease of a visit whose request could not be made for want of this
    /// machine's resources (`FetchError::local`: out of open files, say, which the fetcher
    /// frees by closing its idle connections): not the host's failure, so no error of the
    /// host's is counted, no attempt spent and no record written; the URL is fetched again
    /// after [`PUT_OFF`].
    fn put_off(&self, visit: &mut Visit<'_>) {
        if let Err(err) = visit.take().abandon_until(backend::now() + PUT_OFF) {
            tracing::error!("{err}");
        }
        self.pace.give_back();
    }

    /// The fetch of `url`, the visit's URL, once allowed; then its WARC record, its links
    /// followed and the lease completed.
    async fn fetch_and_follow<'c>(&'c self, mut visit: Visit<'c>, url: Url, request: Request<'c>) {
        let keep_headers = self.outputs.warc.is_some();
        // Queued with its earlier record by a recrawl (another version's memo is not read:
        // the page is then fetched as a new one).
        let Memo { known, hops } = Memo::read(visit.lease().memo());
        if known.is_some() && !self.recrawl() {
            // A process that joined a shared recrawl without --since: one from now on.
            self.recrawl.store(true, Ordering::Relaxed);
        }
        let validators = known.as_ref().map(|k| &k.validators);
        let fetched = self
            .fetching
            .fetcher
            .get(
                &url,
                self.config.fetch.max_body_bytes,
                keep_headers,
                validators,
            )
            .await;
        // Its address's next request may start; this visit's links and completion need
        // neither the connection nor the fetch permit.
        drop(request);
        match fetched {
            Err(FetchError {
                kind: ErrorKind::SsrfBlocked,
                ..
            }) => {
                // The resolver's refusal: the name resolved to a public address for the
                // check before, and to a non-public one for the connection.
                let result = Draft::failed(ErrorKind::SsrfBlocked, ssrf_detail(&url));
                visit.finish(Outcome::Skipped, result).await;
            }
            Err(err) if err.local && self.may_put_off(&url) => self.put_off(&mut visit),
            Err(err) => {
                let retry = Outcome::Failure {
                    // A malformed answer would be as malformed again.
                    retry: err.kind != ErrorKind::Http,
                    retry_after: None,
                };
                visit
                    .finish(retry, Draft::failed(err.kind, err.detail))
                    .await;
            }
            Ok(fetched) => {
                // Once per body, for the record, the WARC file and the content-seen test; not
                // at all when none of them wants it (`output.digest` off, no WARC, no test).
                // An unchanged body is told from a changed one by its digest.
                let digest = (self.outputs.wants_digest || known.is_some())
                    .then(|| cpu_bound(fetched.body.len(), || Digest::of(&fetched.body)));
                let outcome = match fetched.status {
                    429 | 500..=599 => Outcome::ErrorAnswer {
                        retry_after: fetched.retry_after,
                    },
                    _ => Outcome::Success,
                };
                if let (Some(warc), Some(headers), Some(digest)) =
                    (&self.outputs.warc, &fetched.headers, digest)
                {
                    let exchange = Exchange {
                        url: &url,
                        user_agent: &self.config.politeness.user_agent,
                        status: fetched.status,
                        headers,
                        body: &fetched.body,
                        truncated: fetched.too_large,
                        digest,
                        fetched_at: visit.fetched_at,
                        earlier_fetch: known.as_ref().and_then(|k| k.fetched_at),
                        earlier_digest: known
                            .as_ref()
                            .and_then(|k| k.digest)
                            .map(Digest::from_bytes),
                    };
                    if let Err(err) = cpu_bound(fetched.body.len(), || warc.write(&exchange)) {
                        // Not done with: back in line, for a resumed crawl to fetch again.
                        tracing::error!("writing the WARC file: {err}; stopping");
                        self.outputs.fail();
                        self.stop();
                        self.abandon(visit.take());
                        return;
                    }
                }
                let depth = visit.lease().depth();
                let result = self
                    .follow(depth, &url, &fetched, digest, known.as_ref(), hops)
                    .await;
                visit.finish(outcome, result).await;
            }
        }
    }

    /// What robots.txt says of `url`, the visit's URL: the visit to go on with the fetch, or
    /// how it ended when robots.txt ended it (a refusal, an unreachable file, back in line
    /// behind the file another lease fetched, or until its address's turn to fetch the
    /// file), with its record if it has one.
    async fn obey_robots<'c>(
        &'c self,
        mut visit: Visit<'c>,
        url: &Url,
    ) -> Result<Visit<'c>, Visited> {
        let host = visit.lease().url().host_key().to_owned();
        let started = visit.started;
        // How the visit ended if its turn for robots.txt was refused.
        let mut refused = Visited::Done;
        // Taken only if this visit fetches robots.txt itself: one waiting for another's
        // fetch holds neither a turn nor a fetch permit meanwhile.
        let turn = async || match self.address_turn(&mut visit, url).await {
            Ok(request) => Some(request),
            Err(visited) => {
                refused = visited;
                None
            }
        };
        let Some(robots::Answer {
            rules,
            known,
            fetched_here: fresh,
        }) = self
            .fetching
            .robots
            .rules(
                &*self.fetching.fetcher,
                &self.fetching.guard,
                &host,
                url,
                started,
                turn,
            )
            .await
        else {
            return Err(refused);
        };
        // Leases that waited for the robots.txt another lease of the host was fetching
        // started before its rules were known.
        let waited = !fresh && started < known;
        if let Some(delay) = rules.crawl_delay()
            && fresh
        {
            self.frontier.set_crawl_delay(&host, delay).await;
        }
        if fresh
            && self.leads.sitemaps.enabled
            && let Rules::Parsed(robot) = &*rules
            && !robot.sitemaps.is_empty()
        {
            // Once per fetch of the host's robots.txt; a sitemap seen before is dropped
            // by the seen-test, so a robots.txt fetched again reads none twice.
            let listed: Vec<sitemap::Entry> = robot
                .sitemaps
                .iter()
                .map(|loc| sitemap::Entry {
                    loc: loc.clone(),
                    lastmod: None,
                })
                .collect();
            let robots_txt = url.join("/robots.txt").ok();
            let from = robots_txt.as_ref().map(Url::as_str);
            self.push_listed(url, from, &listed, ROBOTS_SITEMAP_DEPTH, Some(0))
                .await;
        }
        let failed = matches!(*rules, Rules::Unreachable(_) | Rules::Unanswered(_));
        if waited && (rules.crawl_delay().is_some() || failed) {
            // Back in line: to start when the Crawl-delay allows, or, when robots.txt
            // could not be had, after the back-off the fetching lease's failure sets,
            // so that it counts as one error of the host, not one per connection.
            self.abandon(visit.take());
            self.pace.give_back();
            return Err(Visited::Done);
        }
        match &*rules {
            Rules::Unreachable(status) => {
                let retry = Outcome::ErrorAnswer {
                    retry_after: Some(self.fetching.robots.unreachable_ttl()),
                };
                let why = format!("robots.txt answered {status}");
                let result = Draft::failed(ErrorKind::RobotsUnreachable, why);
                visit.finish(retry, result).await;
                return Err(Visited::Done);
            }
            Rules::Unanswered(err) if err.local && self.may_put_off(url) => {
                self.put_off(&mut visit);
                return Err(Visited::Done);
            }
            Rules::Unanswered(err) => {
                // The host cannot be reached: the page's own fetch would fail the same.
                let retry = Outcome::RETRY;
                let why = format!("fetching robots.txt: {}", err.detail);
                visit.finish(retry, Draft::failed(err.kind, why)).await;
                return Err(Visited::Done);
            }
            _ => {}
        }
        if !rules.allows(url) {
            // No request made for the page: the host's delay is not spent on it, so that
            // thousands of disallowed links do not take thousands of delays. Unless this
            // lease fetched robots.txt, which was a request.
            let outcome = if fresh {
                Outcome::Success
            } else {
                Outcome::Skipped
            };
            visit
                .finish(outcome, Draft::error(ErrorKind::RobotsDenied))
                .await;
            return Err(Visited::Done);
        }
        if fresh {
            // robots.txt was this lease's request, and started the host's delay: the page
            // goes back in line, first of its host's, to be the host's next request when the
            // delay allows (and the slot serves another host meanwhile).
            self.abandon(visit.take());
            self.pace.give_back();
            return Err(Visited::Done);
        }
        Ok(visit)
    }
}
