//! Batches: a page's links and its lease's completion go to Redis in the next batch script
//! of their bucket, many pages to a round trip; admission's own counts, and the links this
//! process remembers having sent.

use super::owned::{EndedLease, Log};
use super::*;

/// What this process sends Redis: each bucket's next batch and content tests, the links
/// sent and being sent, the hosts whose own politeness Redis holds.
pub(super) struct Sent {
    /// The links of each page leased to this process, sent when it is completed: those to
    /// other buckets first, those of its own bucket with the completion (one round trip).
    pub(super) pending: Mutex<HashMap<String, Pending>>,
    /// The URLs this process has had admitted (new or seen) in Redis: a link met again is
    /// not sent again. Most links of a page lead where earlier pages led, so this saves
    /// most of the seen-test's work in Redis and its round trips. Replaced by an empty one
    /// when Redis goes back to an older state ([`Inner::went_back`]); a std lock, read once
    /// per link and written only then.
    pub(super) pushed: RwLock<SeenSet>,
    /// The URLs this process has sent to their buckets' owners' lists (see
    /// [`super::links`]): not sent again, but not known seen either (the list may hold them
    /// still, for this process to read if it takes the bucket over). Replaced as `pushed` is.
    pub(super) forwarded: RwLock<SeenSet>,
    /// Scripts that change the crawl sent so far: their request ids.
    pub(super) requests_sent: AtomicU64,
    /// Hosts whose own politeness (`[[hosts]]`) this process has made sure Redis holds.
    pub(super) policies: Mutex<HashSet<String>>,
    /// Each bucket's next batch of completions and links.
    pub(super) batches: Groups<Step, StepAnswer>,
    /// Each bucket's next content-seen test.
    pub(super) bodies: Groups<Probes, bool>,
    /// Each address group's next asks (see `Store::address_group`).
    pub(super) addresses: Groups<super::addresses::HoldCall, [i64; 3]>,
    /// Links sent (or waiting to go with their page's completion) and not yet answered:
    /// the pages in flight link to one another, and one of them sends each.
    pub(super) sending: Mutex<HashSet<String>>,
    /// Completions (and give-backs) under way, each [`Counted`] while it runs: how busy
    /// this process is (see [`LINGER`]).
    pub(super) completing: Arc<AtomicUsize>,
    /// Where the process's ticks are counted from (see [`Inner::tick`]).
    pub(super) ticks_from: tokio::time::Instant,
    /// When (ms from `ticks_from`) a worker last found its next URL held by politeness: a
    /// host's delay, or its address's turn (see [`linger`]).
    pub(super) paced_at: AtomicU64,
    /// The runtime the frontier was made in, where a leave's sending task runs when its
    /// request ends outside one (dropped on a thread of its own, say).
    pub(super) runtime: tokio::runtime::Handle,
}

/// How long at most a busy process's batch waits for more steps before it goes (at the
/// process's next tick of it, see [`Inner::tick`]): a batch script costs Redis some 40 µs
/// whatever it carries and about 0.5 µs an argument, and with a hundred pages in flight over
/// 16 buckets a batch sent as soon as the last one is answered carries six of them
/// (docs/benchmarks.md, 2026-11-28). A completion's worker is free while its batch waits;
/// what waits is its host's connection count and its links.
pub(super) const LINGER: Duration = Duration::from_millis(20);

/// The period of the ticks at which a process sends its batches, content-seen tests and
/// reads of links (see [`Inner::tick`]): short beside a page's fetch, long beside the time
/// a process takes to send what its buckets have ready.
pub(super) const TICK: Duration = Duration::from_millis(2);

/// The first tick of `period`, counted from `from`, after `now` (from the time into the
/// current tick, not the count of ticks, which a process's months would overflow).
fn next_tick(
    from: tokio::time::Instant,
    now: tokio::time::Instant,
    period: Duration,
) -> tokio::time::Instant {
    let into = now.saturating_duration_since(from).as_nanos() % period.as_nanos().max(1);
    now + period.saturating_sub(Duration::from_nanos(u64::try_from(into).unwrap_or(0)))
}

impl Inner {
    /// Notes that a worker found its next URL held by politeness, its host's or its
    /// address's (see [`linger`]).
    pub(super) fn note_paced(&self) {
        let ms = self.sent.ticks_from.elapsed().as_millis();
        let ms = u64::try_from(ms).unwrap_or(u64::MAX);
        self.sent.paced_at.store(ms, Ordering::Relaxed);
    }

    /// Whether a worker found its next URL held by politeness (its host's or its address's)
    /// within the last [`LINGER`].
    fn paced(&self) -> bool {
        let at = Duration::from_millis(self.sent.paced_at.load(Ordering::Relaxed));
        let ago = self.sent.ticks_from.elapsed().saturating_sub(at);
        at > Duration::ZERO && ago < LINGER
    }

    /// Waits for the process's next tick of `period`, the same instants for all its
    /// buckets: what they have ready then leaves together, in one write of the connection,
    /// which Redis reads in one wake-up of its event loop. A wake-up costs Redis more CPU
    /// than most scripts' instructions on a busy machine: sent at ticks of [`TICK`], the
    /// 100-host crawl's Redis read 1,700 to 2,200 times where it read 2,500 to 3,100, and
    /// spent 0.93 times the CPU a page (docs/benchmarks.md, 2026-12-06).
    pub(super) async fn tick(&self, period: Duration) {
        let now = tokio::time::Instant::now();
        tokio::time::sleep_until(next_tick(self.sent.ticks_from, now, period)).await;
    }
}

/// Completions under way from which a batch waits [`LINGER`]: a process with few pages in
/// flight sends each batch at once, as a lingering batch would hold its pages' answers for
/// nothing.
pub(super) const LINGER_BUSY: usize = 32;

/// How long at most the batch of a process held by politeness waits for more steps while no
/// links wait to go (see [`linger`]): its hosts wait for their turns, not for its answers,
/// and a host's lease ends in its owner's memory before its page's links are sent. At the
/// defaults (1,000 hosts a second apart, 100 servers) it cost Redis 0.8 times the CPU a page
/// and the crawl no time; waiting so with links too, the held broad crawl found its pages 5%
/// later (docs/benchmarks.md, 2026-12-07, noon). Below [`TAKE_AHEAD`](super::owned::TAKE_AHEAD).
pub(super) const LINGER_PACED: Duration = Duration::from_millis(100);

/// How long a bucket's next batch waits for more steps, if it does, with `completing`
/// completions under way in the process, `paced` if a worker found its next URL held by
/// politeness within the last [`LINGER`] (a host's turn to come, or its address's: its
/// connections full, or its delay), and `steps` of the bucket already waiting, with
/// `links` links between them: only while the process is busy ([`LINGER`]), or held by its
/// servers' politeness rather than by what its batches bring ([`LINGER_PACED`]: its workers'
/// places free, as each waits for its completion's answer), and the batch far from full. A
/// broad crawl held to 20 ms a server sent 5,800 batches for 20,000 pages with two processes
/// where the same crawl unheld sent 1,100 (docs/benchmarks.md, 2026-12-06): carrying a page
/// or two each. A busy crawl not held waits no longer than `LINGER`: 100 ms doubled the
/// issue's 100-host crawl's time, as its hosts wait for the answers. A crawl held at its
/// servers' connection limits (10 servers, 8 connections each) sent 0.9 requests a page
/// before it counted as held, 0.34 after, in the same time (docs/benchmarks.md, 2026-12-07,
/// afternoon).
fn linger(completing: usize, paced: bool, steps: usize, links: usize) -> Option<Duration> {
    if steps >= MAX_STEPS / 2 || links >= MAX_BATCH / 2 {
        None
    } else if paced {
        Some(LINGER_PACED)
    } else if completing >= LINGER_BUSY {
        Some(LINGER)
    } else {
        None
    }
}

/// The most links one batch script takes (a step with more goes alone).
pub(super) const MAX_BATCH: usize = 1000;

/// The most steps (completions, or links alone) one batch script takes.
pub(super) const MAX_STEPS: usize = 128;

/// One step of a bucket's batch: a page's links of the bucket, and its lease's end, if
/// any, with the epoch of the hold it was leased under: written by the same script as the
/// links, in the owner's part, when this process still holds the bucket at that epoch.
pub(super) struct Step {
    pub(super) ended: Option<(i64, EndedLease)>,
    pub(super) links: Vec<Link>,
    /// Its links may go to the bucket's owner's list rather than through the seen-test
    /// here, when this process does not own the bucket (see [`super::links`]): a page's
    /// links, whose caller needs no count of the new ones.
    pub(super) forward: bool,
    /// Links read from the bucket's list by its owner, which its batch trims.
    pub(super) read: Option<super::links::Read>,
}

impl Step {
    /// A step of links alone.
    pub(super) fn links(links: Vec<Link>) -> Step {
        Step {
            ended: None,
            links,
            forward: false,
            read: None,
        }
    }

    /// Whether the step may go to the owner's list: nothing but links a caller forwards.
    fn forwardable(&self) -> bool {
        self.ended.is_none() && self.read.is_none() && (self.forward || self.links.is_empty())
    }
}

/// What the batch script answers for one step (see `scripts/batch.lua`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct StepAnswer {
    /// Links new to the crawl, queued.
    pub(crate) admitted: i64,
    /// Links the budgets refused: the host's pages, its domain's hosts, its domain's pages
    /// (as [`REFUSED_BY`]).
    pub(super) refused: [i64; 3],
    /// For a step waiting on a lease's end: whether the lease was in flight when its end
    /// was written (else it had gone back to the crawl), and the URLs its host has queued
    /// (-1: not asked). None when its end was not written (the bucket is no longer this
    /// process's).
    pub(super) ended: Option<(bool, i64)>,
    /// Its links went to the bucket owner's list: the owner counts them.
    pub(super) forwarded: bool,
}

/// The budgets of [`StepAnswer::refused`], in its order.
const REFUSED_BY: [frontier::DropReason; 3] = [
    frontier::DropReason::HostBudget,
    frontier::DropReason::DomainHosts,
    frontier::DropReason::DomainPages,
];

impl StepAnswer {
    /// Reads `n` steps' answers from the start of `values`, as `scripts/batch.lua` gives
    /// them: a step's new links, or, when a budget refused some, -1 minus them and the
    /// three refusals. Answers them and the values they took; None when `values` is not
    /// such an answer.
    pub(crate) fn read(values: &[redis::Value], n: usize) -> Option<(Vec<StepAnswer>, usize)> {
        let mut at = 0;
        let mut next = || {
            let value = values.get(at)?;
            at += 1;
            match value {
                redis::Value::Int(v) => Some(*v),
                _ => None,
            }
        };
        let mut answers = Vec::with_capacity(n);
        for _ in 0..n {
            let first = next()?;
            answers.push(if first >= 0 {
                StepAnswer {
                    admitted: first,
                    ..StepAnswer::default()
                }
            } else {
                StepAnswer {
                    admitted: -1 - first,
                    refused: [next()?, next()?, next()?],
                    ..StepAnswer::default()
                }
            });
        }
        Some((answers, at))
    }
}

/// A link on its way to Redis: its seen-test probes, host and entry.
#[derive(Clone)]
pub(super) struct Link {
    pub(super) bucket: u32,
    pub(super) probes: Probes,
    pub(super) host: String,
    pub(super) depth: u32,
    pub(super) url: Canonical,
    /// The page whose link this is, shared by its links; `None` for a seed.
    pub(super) from: Option<Arc<str>>,
    /// The memo queued with it, as its entry holds it (see [`memo_text`]).
    pub(super) memo: Option<Box<str>>,
    /// Its host's registrable domain, under domain budgets; empty otherwise.
    pub(super) domain: Box<str>,
}

/// What marks a memo's token in a queue entry, before its base64: a referrer is a URL, which
/// never starts with it.
const MEMO_MARK: char = '~';

/// A memo as its queue entry holds it: `~` and its bytes in base64url, so that the entry
/// stays space-separated text that the scripts carry without reading.
pub(crate) fn memo_text(memo: &[u8]) -> Box<str> {
    let mut text = String::with_capacity(1 + memo.len().div_ceil(3) * 4);
    text.push(MEMO_MARK);
    data_encoding::BASE64URL_NOPAD.encode_append(memo, &mut text);
    text.into()
}

/// What follows the URL in a queue entry, read: the referrer and the memo, each optional.
/// Lenient, as an entry that fails to read would fail its whole lease script's answer, and
/// come back to fail it again: a memo that is not base64 is dropped (its URL is fetched as
/// if queued without it), and tokens beyond a referrer and a memo are ignored.
pub(crate) fn entry_tail(rest: Option<&str>) -> (Option<String>, Option<Vec<u8>>) {
    let (mut referrer, mut memo) = (None, None);
    for token in rest.into_iter().flat_map(|rest| rest.split(' ')) {
        match token.strip_prefix(MEMO_MARK) {
            Some(text) => {
                let decoded = data_encoding::BASE64URL_NOPAD.decode(text.as_bytes());
                if decoded.is_err() {
                    tracing::warn!("a queue entry's memo is not base64: dropped");
                }
                memo = memo.or(decoded.ok());
            }
            None if referrer.is_none() && memo.is_none() && !token.is_empty() => {
                referrer = Some(token.to_owned());
            }
            None => {}
        }
    }
    (referrer, memo)
}

/// Counts one more of `reason`.
pub(super) fn count_one(counts: &Mutex<HashMap<&'static str, u64>>, reason: &'static str) {
    count_n(counts, reason, 1);
}

fn count_n(counts: &Mutex<HashMap<&'static str, u64>>, reason: &'static str, n: u64) {
    *counts
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .entry(reason)
        .or_default() += n;
}

impl Inner {
    pub(super) fn count_drop(&self, reason: &'static str) {
        count_one(&self.counts.dropped, reason);
    }

    pub(super) fn count_invalid(&self, reason: &'static str) {
        count_one(&self.counts.invalid, reason);
    }

    /// Counts what a step's links became: new and queued, refused by a budget (new, but
    /// over it), or seen before.
    pub(super) fn count_admitted(&self, sent: usize, new: i64, refused: [i64; 3]) {
        let new = u64::try_from(new).unwrap_or(0);
        self.counts.new.fetch_add(new, Ordering::Relaxed);
        let mut refusals = 0;
        for (reason, n) in REFUSED_BY.iter().zip(refused) {
            let n = u64::try_from(n).unwrap_or(0);
            if n > 0 {
                count_n(&self.counts.dropped, reason.reason(), n);
            }
            refusals += n;
        }
        self.counts.seen.fetch_add(
            (sent as u64).saturating_sub(new + refusals),
            Ordering::Relaxed,
        );
    }

    /// Notes links as sent, whether admitted in Redis or (`forwarded`) pushed to their
    /// owners' lists: this process sends them no more.
    pub(super) fn note_sent(&self, links: &[Link], forwarded: bool) {
        let set = match forwarded {
            true => &self.sent.forwarded,
            false => &self.sent.pushed,
        };
        let set = set.read().unwrap_or_else(PoisonError::into_inner);
        for link in links {
            // A filter that cannot grow (memory) only costs round trips: Redis still knows.
            let _ = set.insert(&link.url);
        }
        self.not_sending(links);
    }

    /// Whether `url` is to be sent to Redis: not admitted there by this process before, nor
    /// sent to its owner's list, nor being sent now (then it is noted as being sent). One
    /// not sent is counted as seen.
    pub(super) fn first_send(&self, url: &Canonical) -> bool {
        let forwarded = self
            .sent
            .forwarded
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(url);
        !forwarded && self.owner_first(url)
    }

    /// Whether a link read from an owned bucket's list is to be sent to Redis: not admitted
    /// there by this process before, nor being sent now (see [`Inner::first_send`]).
    pub(super) fn owner_first(&self, url: &Canonical) -> bool {
        let pushed = self
            .sent
            .pushed
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .contains(url);
        let first = !pushed
            && self
                .sent
                .sending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(url.as_str().to_owned());
        if !first {
            self.counts.seen.fetch_add(1, Ordering::Relaxed);
        }
        first
    }

    /// Takes links off the list of those being sent: answered, or not sent after all (their
    /// page is fetched again, and sends them again).
    pub(super) fn not_sending(&self, links: &[Link]) {
        let mut sending = self
            .sent
            .sending
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        for link in links {
            sending.remove(link.url.as_str());
        }
    }

    pub(super) fn link(
        &self,
        url: Canonical,
        depth: u32,
        from: Option<Arc<str>>,
        memo: Option<&[u8]>,
        placed: &Placed,
    ) -> Link {
        let host = url.host_key().to_owned();
        Link {
            bucket: self.bucket_in(placed, &host),
            domain: match self.keys.layout.buckets_by {
                BucketsBy::Domain => frontier::registrable_domain_of(&host).into(),
                BucketsBy::Host | BucketsBy::Address => Box::from(""),
            },
            probes: self.keys.schedule.probes(&self.keys.sip_key, url.as_str()),
            host,
            depth,
            url,
            from,
            memo: memo.map(memo_text),
        }
    }

    /// Admits links: a step (of at most [`MAX_BATCH`] links) of each bucket's next batch,
    /// all at once. Answers how many were new.
    pub(super) async fn admit(self: &Arc<Self>, links: Vec<Link>) -> Result<u64, Error> {
        self.admit_or_forward(links, false).await
    }

    /// [`admit`](Self::admit), or, `forward`, the links to buckets this process does not
    /// own sent to their owners' lists (see [`super::links`]): those are not counted here,
    /// nor in the answer.
    pub(super) async fn admit_or_forward(
        self: &Arc<Self>,
        links: Vec<Link>,
        forward: bool,
    ) -> Result<u64, Error> {
        self.check_server();
        if links.is_empty() {
            return Ok(0);
        }
        let mut by_bucket: HashMap<u32, Vec<Link>> = HashMap::new();
        for link in links {
            by_bucket.entry(link.bucket).or_default().push(link);
        }
        // A script blocks the server while it runs: a page's links are one step, a long
        // seed list many of bounded size.
        let mut steps = Vec::new();
        for (bucket, mut links) in by_bucket {
            while links.len() > MAX_BATCH {
                let rest = links.split_off(MAX_BATCH);
                steps.push((bucket, links));
                links = rest;
            }
            steps.push((bucket, links));
        }
        let requests = steps.into_iter().map(|(bucket, links)| {
            let sent = links.len();
            let inner = Arc::clone(self);
            async move {
                let step = Step {
                    forward,
                    ..Step::links(links)
                };
                let StepAnswer {
                    admitted: new,
                    refused,
                    forwarded,
                    ..
                } = Arc::clone(&inner).submit(bucket, step).await?;
                if forwarded {
                    return Ok(0);
                }
                inner.count_admitted(sent, new, refused);
                Ok::<u64, Error>(u64::try_from(new).unwrap_or(0))
            }
        });
        let mut new = 0;
        for answer in join_all(requests).await {
            new += answer?;
        }
        Ok(new)
    }

    /// Adds a step to its bucket's next batch and waits for the answer (see [`group`]).
    pub(super) async fn submit(
        self: Arc<Self>,
        bucket: u32,
        step: Step,
    ) -> Result<StepAnswer, Error> {
        let (answered, start) = self.sent.batches.wait(bucket, step);
        if let Some(sending) = start {
            tokio::spawn(Arc::clone(&self).flush(bucket, sending));
        }
        group::answer(answered, "a batch").await
    }

    /// Sends the waiting steps of a bucket, batch after batch, until none waits.
    pub(super) async fn flush(
        self: Arc<Self>,
        bucket: u32,
        mut sending: Sending<Step, StepAnswer>,
    ) {
        let fit = |waiting: &[(Step, Reply<StepAnswer>)]| {
            let mut links = 0;
            let mut take = 0;
            for (step, _) in waiting {
                if take > 0 && (links + step.links.len() > MAX_BATCH || take == MAX_STEPS) {
                    break;
                }
                links += step.links.len();
                take += 1;
            }
            take
        };
        loop {
            let (steps, links) = self.sent.batches.waiting(bucket, |step| step.links.len());
            let completing = self.sent.completing.load(Ordering::Relaxed);
            // Not while a host of the bucket would reach its turn with no URL: a quiet
            // bucket's take goes when its host is due (see `nudge`). Looked at only for a
            // batch that would wait (the owners' lock and a walk of the bucket's hosts).
            let wait = linger(completing, self.paced(), steps, links).filter(|_| {
                let by = Instant::now() + LINGER_PACED;
                !(self.owners.buckets().get(&bucket)).is_some_and(|o| o.wants_urls_by(by))
            });
            match wait {
                None => self.tick(TICK).await,
                Some(LINGER_PACED) => {
                    // A `LINGER` at a time, until links wait to go (see `LINGER_PACED`).
                    let until = Instant::now() + LINGER_PACED;
                    loop {
                        self.tick(LINGER).await;
                        let (steps, links) =
                            self.sent.batches.waiting(bucket, |step| step.links.len());
                        if links > 0 || steps >= MAX_STEPS / 2 || Instant::now() >= until {
                            break;
                        }
                    }
                }
                Some(period) => self.tick(period).await,
            }
            let Some(steps) = sending.next(fit) else {
                break;
            };
            // Forgotten first if Redis is another server already: the script is built with
            // what this process knows of the seen-test (copies of frozen generations).
            self.check_server();
            // Links sent before Redis is found to have gone back are not to be remembered
            // after: their answer may come from the state that was lost.
            let forgets = self.presence.forgets.load(Ordering::Relaxed);
            let server = self.store.server_changes();
            let result = self.send_batch(bucket, &steps).await;
            if result.is_ok()
                && (
                    self.store.server_changes(),
                    self.presence.forgets.load(Ordering::Relaxed),
                ) != (server, forgets)
            {
                // The script, built with what the lost state knew (links it held as seen were
                // left out), may have run on the one that replaced it, sent again after a
                // cut (a completion among them, its page now done): its links go again,
                // whole. The seen-test drops those Redis holds.
                // A step of this bucket's batch (its links are this bucket's), which this
                // loop sends next; nobody waits for its answer.
                let links: Vec<Link> = steps
                    .iter()
                    .flat_map(|(step, _)| step.links.iter().cloned())
                    .collect();
                if !links.is_empty() {
                    let (unheard, _) = oneshot::channel();
                    // This task sends the bucket's steps: none is to start.
                    let none = self.sent.batches.push(bucket, Step::links(links), unheard);
                    debug_assert!(none.is_none());
                }
            }
            match result {
                Ok((answers, generations)) => {
                    let remember = self.presence.forgets.load(Ordering::Relaxed) == forgets;
                    let bytes = |index| self.keys.schedule.bytes(bucket, index);
                    if let Some(index) = self.keys.frozen.wanted(bucket, generations, bytes) {
                        tokio::spawn(Arc::clone(&self).copy_generation(bucket, index));
                    }
                    for ((step, answer), got) in steps.into_iter().zip(answers) {
                        match remember {
                            true => self.note_sent(&step.links, got.forwarded),
                            false => self.not_sending(&step.links),
                        }
                        let _ = answer.send(Ok(got));
                    }
                    self.read_links_if_waiting(bucket);
                }
                Err(err) => {
                    for (step, answer) in steps {
                        self.not_sending(&step.links);
                        let _ = answer.send(Err(err.clone()));
                    }
                }
            }
        }
    }

    /// Copies generation `index` of a bucket's seen-test, which no script writes any more.
    pub(super) async fn copy_generation(self: Arc<Self>, bucket: u32, index: usize) {
        let copy = self.read_generation(bucket, index).await;
        // Not copied: URLs are looked up in Redis, and the copy is tried again later.
        self.keys.frozen.add(bucket, index, copy.ok());
    }

    pub(super) async fn read_generation(
        &self,
        bucket: u32,
        index: usize,
    ) -> Result<FrozenGen, Error> {
        let tag = self.store.tag(bucket);
        let mut cmd = redis::cmd("HGET");
        cmd.arg(format!("{tag}:seen")).arg(format!("g{index}"));
        let geometry: Option<String> = self.store.query(&cmd).await?;
        let bad = || ErrorKind::BadLayout(format!("generation {index} of bucket {tag} is missing"));
        let geometry = geometry.ok_or_else(bad)?;
        let sets = Generation::parse(&geometry).ok_or_else(bad)?.sets;
        let reads: Vec<redis::Cmd> = (0..sets)
            .map(|i| {
                let mut cmd = redis::cmd("SMEMBERS");
                cmd.arg(format!("{tag}:f{index}:{i}"));
                cmd
            })
            .collect();
        FrozenGen::new(&geometry, self.store.query_each(&reads).await?)
    }

    /// The page budgets the batch script charges: pages per host, hosts and pages per
    /// registrable domain (0: no limit).
    fn budgets(&self) -> [u64; 3] {
        let (hosts, pages) = self.rules.scope.per_domain_budget();
        [self.rules.scope.per_host_budget(), hosts, pages].map(|limit| limit.unwrap_or(0))
    }

    /// One batch script: its steps' links, in order, and its owner's log if this process
    /// owns the bucket. Answers each step's numbers ([`StepAnswer::LEN`]), and how many
    /// generations the bucket's seen-test has (-1: not read).
    pub(super) async fn send_batch(
        &self,
        bucket: u32,
        steps: &[(Step, Reply<StepAnswer>)],
    ) -> Result<(Vec<StepAnswer>, i64), Error> {
        let tag = self.store.tag(bucket);
        let mut owner = self.owner_log(bucket);
        if owner.is_none() && steps.iter().all(|(step, _)| step.forwardable()) {
            return self.forward(bucket, steps).await;
        }
        // The ends of the leases whose pages' links this batch carries (see `Ended::lease`),
        // by their steps' places.
        let mut carried = Vec::new();
        if let Some((_, epoch, log)) = &mut owner {
            let reached = self.reached();
            for (step, _) in steps {
                if let Some(read) = step.read.as_ref().filter(|read| read.reached == reached) {
                    log.links_read = (read.links, read.before);
                }
            }
            for (place, (step, _)) in steps.iter().enumerate() {
                if let Some((at, end)) = &step.ended
                    && at == epoch
                {
                    log.ended.push(end.clone());
                    carried.push(place);
                }
            }
        }
        // Links a copy of a frozen generation knows are seen, and not sent; a step left
        // with none is not sent either (its answer is all zeros: most completions' steps,
        // whose links the process had sent before).
        let sent: Vec<Vec<(&Link, Probes)>> = steps
            .iter()
            .map(|(step, _)| {
                let mut sent = Vec::with_capacity(step.links.len());
                for link in &step.links {
                    let mut probes = link.probes;
                    if self.keys.frozen.holds(bucket, &mut probes) {
                        tracing::trace!(url = %link.url, "link not sent: a frozen generation holds it");
                    } else {
                        sent.push((link, probes));
                    }
                }
                sent
            })
            .collect();
        let sent_steps = sent.iter().filter(|links| !links.is_empty()).count();
        let mut invocation = self.scripts.batch_call(
            &tag,
            self.keys.schedule.text(bucket),
            &self.request_id(),
            self.budgets(),
            owner.as_ref().map(|(owner, _, _)| owner.as_str()),
            sent_steps,
        );
        for links in sent.iter().filter(|links| !links.is_empty()) {
            scripts::links_step(&mut invocation, links.len());
            for &(link, probes) in links {
                scripts::link(
                    &mut invocation,
                    &probes,
                    &link.host,
                    link.depth,
                    link.url.as_str(),
                    link.from.as_deref(),
                    link.memo.as_deref(),
                    &link.domain,
                );
            }
        }
        if let Some((_, _, log)) = &owner {
            add_owner_log(&mut invocation, log);
        }
        // Written or not, or its answer unread: the bucket is taken over anew (its URLs
        // in flight back to their queues), rather than its log guessed at. Kept, it would
        // wait for ever for the URLs its log asked for.
        let owner_epoch = owner.as_ref().map(|(_, epoch, _)| *epoch);
        let failed = |err: Error| {
            if let Some(epoch) = owner_epoch {
                self.drop_bucket(bucket, epoch, "a batch of its log failed");
            }
            err
        };
        let answer: Vec<redis::Value> = self.call(&invocation).await.map_err(failed)?;
        let bad = || {
            failed(Error::from(ErrorKind::Server(format!(
                "unexpected answer to a batch of {}",
                steps.len()
            ))))
        };
        let head = BucketView::LEN + 2;
        let numbers = answer
            .get(..head)
            .ok_or_else(bad)?
            .iter()
            .map(|v| match v {
                redis::Value::Int(n) => Ok(*n),
                _ => Err(bad()),
            })
            .collect::<Result<Vec<i64>, Error>>()?;
        let view = BucketView::of(&numbers);
        self.note_bucket(bucket, view);
        let generations = numbers[BucketView::LEN];
        let status = numbers[BucketView::LEN + 1];
        let (answered, read) = StepAnswer::read(&answer[head..], sent_steps).ok_or_else(bad)?;
        let mut answered = answered.into_iter();
        let mut answers: Vec<StepAnswer> = sent
            .iter()
            .map(|links| match links.is_empty() {
                true => StepAnswer::default(),
                false => answered.next().unwrap_or_default(),
            })
            .collect();
        let head = head + read;
        if let Some((_, epoch, log)) = owner {
            let ended = self
                .owner_answer(bucket, epoch, log, status, &answer[head..], view.server_now)
                .map_err(failed)?;
            for (place, end) in carried.into_iter().zip(ended) {
                answers[place].ended = Some(end);
            }
        }
        Ok((answers, generations))
    }
}

/// Adds the owner's log to a batch script, after its steps (see `scripts/batch.lua`).
pub(crate) fn add_owner_log(invocation: &mut scripts::Call<'_>, log: &Log) {
    // Nearly every lease ends done, its host's queue unasked: two arguments each, where a
    // mark would be a third (Redis makes each argument a Lua string).
    let (plain, others): (Vec<&EndedLease>, Vec<&EndedLease>) =
        log.ended.iter().partition(|ended| ended.plain());
    invocation.arg(plain.len());
    for ended in plain {
        invocation.arg(ended.token).arg(&ended.held);
    }
    invocation.arg(others.len());
    for ended in others {
        let mark = match (&ended.retry, ended.gave_up_host) {
            (None, _) => "D",
            (Some(_), false) => "r",
            (Some(_), true) => "R",
        };
        invocation.arg(ended.token).arg(mark).arg(&ended.held);
        if let Some(retry) = &ended.retry {
            invocation.arg(retry);
        }
    }
    invocation.arg(log.back.len());
    for token in &log.back {
        invocation.arg(token);
    }
    invocation.arg(log.states.len());
    for (host, state) in &log.states {
        invocation.arg(host).arg(state.encode());
    }
    invocation.arg(log.wanted.len());
    for (host, n) in &log.wanted {
        invocation.arg(host).arg(n);
    }
    invocation.arg(log.new_hosts).arg(log.given_up_hosts);
    invocation.arg(log.links_read.0).arg(log.links_read.1);
}

/// The owner's part of a batch script's answer, read against the log it carried (see
/// `scripts/batch.lua`).
#[derive(Debug, Default, PartialEq, Eq)]
pub(crate) struct OwnerReply {
    /// For each lease ended, in the log's order: whether it was still in flight, and the
    /// URLs its host has queued (-1: not asked).
    pub(crate) ended: Vec<(bool, i64)>,
    /// For each host asked for URLs, in the log's order: the URLs taken (token and entry),
    /// and the URLs its queue holds after.
    pub(crate) taken: Vec<(Vec<(u64, String)>, i64)>,
    /// The hosts other processes' links gave work, with their stored states.
    pub(crate) given: Vec<(String, Option<scripts::HostState>)>,
    /// Other processes' links waiting in the bucket's list (see [`super::links`]).
    pub(crate) links_waiting: i64,
}

impl OwnerReply {
    /// Reads `rest`, the answer after its steps' numbers, of a batch that carried `log`;
    /// None when it is not such an answer.
    pub(crate) fn read(log: &Log, rest: &[redis::Value]) -> Option<OwnerReply> {
        use redis::Value;
        let mut values = rest.iter();
        let number = |v: Option<&Value>| match v? {
            Value::Int(n) => Some(*n),
            Value::BulkString(b) => std::str::from_utf8(b).ok()?.parse().ok(),
            _ => None,
        };
        let mut reply = OwnerReply::default();
        // The leases ended done, unasked: those not in flight, by their places among them.
        let mut in_flight = vec![true; log.ended.iter().filter(|ended| ended.plain()).count()];
        for _ in 0..number(values.next())? {
            let place = usize::try_from(number(values.next())?).ok()?;
            *in_flight.get_mut(place.checked_sub(1)?)? = false;
        }
        let mut in_flight = in_flight.into_iter();
        for ended in &log.ended {
            reply.ended.push(match ended.plain() {
                true => (in_flight.next()?, -1),
                // 0: not in flight; else the host's queued URLs plus 2 (1: not asked).
                false => match number(values.next())? {
                    0 => (false, -1),
                    n => (true, n - 2),
                },
            });
        }
        let mut next = || values.next();
        let text = |v: Option<&Value>| match v? {
            Value::BulkString(b) => Some(String::from_utf8_lossy(b).into_owned()),
            _ => None,
        };
        let int = |v: Option<&Value>| match v? {
            Value::Int(n) => Some(*n),
            _ => None,
        };
        // The first token taken, the others following it one a URL.
        let mut token = match log.wanted.is_empty() {
            true => 0,
            false => u64::try_from(number(next())?).ok()?,
        };
        for _ in &log.wanted {
            let n = int(next())?;
            let mut urls = Vec::with_capacity(usize::try_from(n).ok()?);
            for _ in 0..n {
                urls.push((token, text(next())?));
                token += 1;
            }
            reply.taken.push((urls, int(next())?));
        }
        for _ in 0..int(next())? {
            let host = text(next())?;
            let state = match next()? {
                Value::BulkString(b) if !b.is_empty() => scripts::HostState::decode(b),
                _ => None,
            };
            reply.given.push((host, state));
        }
        reply.links_waiting = int(next())?;
        Some(reply)
    }
}

#[cfg(test)]
mod tests {
    use super::{
        LINGER, LINGER_BUSY, LINGER_PACED, MAX_BATCH, MAX_STEPS, TICK, entry_tail, linger,
        memo_text, next_tick,
    };
    use crate::frontier::owners::Counted;
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_batch_waits_for_more_only_while_the_process_is_busy_and_the_batch_far_from_full() {
        // A lone completion, or a few, in a crawl not held by politeness: sent at once, as
        // their answers (and the workers' places waiting for them) may be what it waits for.
        assert_eq!(linger(0, false, 0, 0), None);
        assert_eq!(linger(LINGER_BUSY - 1, false, 3, 10), None);
        // Busy: it waits a little for more; held by politeness, longer (its hosts wait for
        // their turns, not for its answers)...
        assert_eq!(linger(LINGER_BUSY, false, 0, 0), Some(LINGER));
        assert_eq!(linger(1, true, 0, 0), Some(LINGER_PACED));
        assert_eq!(linger(10 * LINGER_BUSY, true, 0, 0), Some(LINGER_PACED));
        assert!(LINGER < LINGER_PACED && LINGER_PACED < crate::frontier::owned::TAKE_AHEAD);
        assert_eq!(
            linger(
                10 * LINGER_BUSY,
                false,
                MAX_STEPS / 2 - 1,
                MAX_BATCH / 2 - 1
            ),
            Some(LINGER)
        );
        // ...unless half a batch waits already, in steps or in links.
        assert_eq!(linger(10 * LINGER_BUSY, false, MAX_STEPS / 2, 0), None);
        assert_eq!(linger(0, true, MAX_STEPS / 2, 0), None);
        assert_eq!(linger(10 * LINGER_BUSY, false, 10 * MAX_STEPS, 0), None);
        assert_eq!(linger(10 * LINGER_BUSY, true, 3, MAX_BATCH / 2), None);
    }

    #[test]
    fn every_bucket_of_a_process_sends_at_the_same_ticks() {
        let from = tokio::time::Instant::now();
        // Whenever in a tick a bucket has something ready, it goes at the tick's end...
        for part in [0, 1, 3] {
            assert_eq!(next_tick(from, from + TICK * part / 4, TICK), from + TICK);
            let later = from + 6 * TICK + TICK * part / 4;
            assert_eq!(next_tick(from, later, TICK), from + 7 * TICK);
        }
        // ...never at once, however close to a tick it is ready.
        assert_eq!(next_tick(from, from + TICK, TICK), from + 2 * TICK);
        // A lingering batch goes at the next tick of its own, longer period.
        assert_eq!(
            next_tick(from, from + LINGER * 5 / 4, LINGER),
            from + 2 * LINGER
        );
        // A process's hundredth day, past 2^32 ticks of 2 ms, ticks as its first.
        let day = std::time::Duration::from_secs(86_400);
        let late = from + 100 * day + TICK / 4;
        assert_eq!(next_tick(from, late, TICK), from + 100 * day + TICK);
        // A clock read before the ticks start (it cannot be): a period on.
        assert_eq!(next_tick(from + TICK, from, TICK), from + TICK);
    }

    #[test]
    fn a_completion_counts_as_under_way_until_its_guard_is_dropped() {
        let count = Arc::new(AtomicUsize::new(0));
        let first = Counted::new(&count);
        let second = Counted::new(&count);
        assert_eq!(count.load(Ordering::Relaxed), 2);
        drop(first);
        assert_eq!(count.load(Ordering::Relaxed), 1);
        // An early return (an error) drops it too.
        let early = || -> Result<(), ()> {
            let _under_way = Counted::new(&count);
            Err(())
        };
        assert!(early().is_err());
        drop(second);
        assert_eq!(count.load(Ordering::Relaxed), 0);
    }

    #[test]
    fn an_entry_tail_reads_back_what_was_queued_and_never_fails() {
        let memo = memo_text(b"\x00\xff etag");
        let tail = |text: &str| entry_tail(Some(text));
        assert_eq!(entry_tail(None), (None, None));
        assert_eq!(tail("http://a/"), (Some("http://a/".into()), None));
        let both = format!("http://a/ {memo}");
        assert_eq!(
            tail(&both),
            (Some("http://a/".into()), Some(b"\x00\xff etag".to_vec()))
        );
        assert_eq!(tail(&memo), (None, Some(b"\x00\xff etag".to_vec())));
        assert_eq!(tail("~"), (None, Some(Vec::new())));
        // Damaged or unexpected: the URL is still leased, without what cannot be read.
        assert_eq!(
            tail("http://a/ ~not*base64"),
            (Some("http://a/".into()), None)
        );
        assert_eq!(tail(" ~"), (None, Some(Vec::new())));
        assert_eq!(
            tail("http://a/ http://b/ ~ x"),
            (Some("http://a/".into()), Some(Vec::new()))
        );
    }
}
