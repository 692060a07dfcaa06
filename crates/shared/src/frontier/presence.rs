//! Presence and the end: the heartbeat that says this process is present and renews its
//! leases, the crawl's counts and the check that it is over, and what a process does when
//! it finds Redis went back to an older state.

use super::*;

/// This process among the crawl's: the heartbeat, whether the crawl is over, and what tells
/// that Redis went back to an older state.
pub(super) struct Presence {
    /// When this process, finding no work, may next check whether the crawl is over, and
    /// the wait after that.
    pub(super) idle_check: Mutex<(Instant, Duration)>,
    /// Set once the crawl is over: every worker is told so without reading Redis again.
    pub(super) over: AtomicBool,
    /// Set once this process handed its part over (see [`SharedFrontier::hand_over`]): it
    /// takes no bucket after.
    pub(super) left: AtomicBool,
    /// The store's count of server changes as last seen (see [`Inner::check_server`]).
    pub(super) server_changes: AtomicU64,
    /// Each bucket's count of changes as last heard, and when by the server's clock (ms):
    /// fewer at a later instant means Redis went back.
    pub(super) ops_seen: Mutex<Vec<(i64, i64)>>,
    /// The crawl's epoch as last read (-1 before the first heartbeat): bumped by a process
    /// that finds Redis went back, so that the others forget what they sent too.
    pub(super) epoch: AtomicI64,
    /// How many times this process forgot the links it sent (see [`Inner::forget_sent`]).
    pub(super) forgets: AtomicU64,
    /// When this process last said in the log that Redis went back (see
    /// [`Inner::say_went_back`]).
    pub(super) said_went_back: Mutex<Option<Instant>>,
    /// The seeds' redirect targets this process has in its scope: another process's join
    /// it at the next heartbeat.
    pub(super) redirect_targets: AtomicUsize,
    /// The heartbeat task (presence, renewals, totals), stopped with the frontier rather
    /// than at its next beat.
    pub(super) heartbeat: Mutex<Option<tokio::task::AbortHandle>>,
    /// The processes present, as last heard (this one among them once it said so).
    pub(super) present: Mutex<Vec<String>>,
    /// Processes heard from lately by another way than the heartbeat's list, each until
    /// when it counts as present (see [`SharedFrontier::claim_robots`]).
    pub(super) noted: Mutex<HashMap<String, Instant>>,
}

impl Presence {
    /// Makes the next check whether the crawl is over come at once, its waits short again:
    /// this process had work, or another found the crawl over.
    pub(super) fn check_soon(&self) {
        let mut check = self
            .idle_check
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if check.1 != Duration::ZERO {
            *check = (Instant::now(), Duration::ZERO);
        }
    }

    /// Whether process `id` was present when last heard, or is noted present till later.
    pub(super) fn is_present(&self, id: &str) -> bool {
        let listed = self
            .present
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .any(|p| p == id);
        listed
            || self
                .noted
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get(id)
                .is_some_and(|until| Instant::now() < *until)
    }

    /// Notes process `id` as present for `still` more.
    pub(super) fn note_present(&self, id: &str, still: Duration) {
        let mut noted = self.noted.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        noted.retain(|_, until| now < *until);
        noted.insert(id.to_owned(), now + still);
    }
}

/// How often a process says it is present and learns who else is: a process that joins
/// waits for its buckets until their owner's next beat has heard of it, so a beat of a
/// second kept a second process idle for the first second of a crawl.
pub(super) const HEARTBEAT: Duration = Duration::from_millis(250);
/// How long a process starting looks for the others before it takes its buckets.
const FIRST_LOOK: Duration = Duration::from_millis(50);
/// How often a process whose share of the buckets another still holds asks again.
const SHARE_POLL: Duration = Duration::from_millis(50);

/// Every this many beats a process reads the crawl's totals (every bucket's counts).
const TOTALS_EVERY: u64 = 20;

pub(crate) use crate::store::PRESENT_FOR;

/// A process finding no work checks whether the crawl is over (reading every bucket twice)
/// at once, then after waits that double from the shortest to the longest until it gets a
/// lease again: one idle while others finish the crawl's last hosts would otherwise read
/// every bucket many times a second.
pub(super) const IDLE_CHECK_MIN: Duration = Duration::from_millis(50);

pub(super) const IDLE_CHECK_MAX: Duration = Duration::from_secs(2);

/// Says at each beat that this process is present, takes the buckets it is to own and lets
/// go of the others, renews its hold on its own every third of their time, and reads the
/// crawl's totals every five seconds, until the frontier is dropped or hands its part over.
pub(super) async fn renew(inner: std::sync::Weak<Inner>) {
    for beat in 0u64.. {
        let pause = {
            let Some(inner) = inner.upgrade() else {
                return;
            };
            if inner.presence.left.load(Ordering::Relaxed) {
                return;
            }
            if beat == 0 {
                // Processes started together see one another before taking buckets, and
                // each takes its share, rather than the first all of them, handed over
                // after. (The frontier is not held while it waits: dropped, it stops.)
                if let Err(err) = inner.present().await {
                    tracing::debug!("saying this process is present: {err}");
                }
                FIRST_LOOK
            } else {
                let waiting = match inner.present().await {
                    Ok(present) => {
                        // Redis restarted or failed over: its buckets are taken anew.
                        inner.check_server();
                        let third = inner.rules.lease_time / 3;
                        let every = (third.as_millis() / HEARTBEAT.as_millis()).max(1);
                        inner
                            .hold_buckets(&present, u128::from(beat - 1) % every == 0)
                            .await
                    }
                    Err(err) => {
                        tracing::debug!("saying this process is present: {err}");
                        false
                    }
                };
                inner.check_epoch().await;
                inner.widen_scope().await;
                // Its share still held by another, which lets it go within a fetch's
                // time: asked again sooner than a beat.
                if waiting { SHARE_POLL } else { HEARTBEAT }
            }
        };
        tokio::time::sleep(pause).await;
        let Some(inner) = inner.upgrade() else {
            return;
        };
        if beat % TOTALS_EVERY == 0
            && let Ok(totals) = inner.read_totals().await
        {
            *inner
                .counts
                .totals
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = totals;
        }
    }
}

/// What a batch script says of its bucket after it ran, first in its answer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct BucketView {
    /// The server's clock as the script ran (ms).
    pub(super) server_now: i64,
    /// The bucket's count of changes: it only grows, unless Redis went back.
    pub(super) ops: i64,
}

impl BucketView {
    /// The numbers a script answers for its bucket.
    pub(super) const LEN: usize = 2;

    /// The view in the first [`BucketView::LEN`] numbers of `n`.
    pub(super) fn of(n: &[i64]) -> BucketView {
        BucketView {
            server_now: n[0],
            ops: n[1],
        }
    }
}

/// How long after saying that Redis went back the signs of the same event are not said
/// again: they come within milliseconds of each other, or at the next heartbeat.
const WENT_BACK_QUIET: Duration = Duration::from_secs(10);

impl Inner {
    /// Notes what a script said of a bucket. A bucket whose count of changes went down is
    /// older than what this process saw of it: Redis went back to an older state (see
    /// [`Inner::went_back`]).
    pub(super) fn note_bucket(&self, bucket: u32, view: BucketView) {
        self.check_server();
        let BucketView { server_now, ops } = view;
        // Answers of scripts in flight together may come in another order than they ran:
        // only one that ran later by the server's clock, with fewer changes, shows that
        // Redis went back; a clock a second behind is another server.
        let went_back = {
            let mut seen = self
                .presence
                .ops_seen
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (earlier_ops, earlier_at) = seen[bucket as usize];
            let back =
                (server_now > earlier_at && ops < earlier_ops) || server_now + 1_000 < earlier_at;
            if server_now >= earlier_at || back {
                seen[bucket as usize] = (ops, server_now);
            }
            back.then(|| {
                format!("bucket {bucket} had {earlier_ops} changes, and {ops} at a later instant")
            })
        };
        if let Some(why) = went_back {
            self.went_back(why);
        }
    }

    /// Redis is another server than when this process last looked (restarted, or a replica
    /// promoted in its place): what it holds may be older than what this process sent, so
    /// it is treated as gone back. Read before the links a page leads to are filtered by what
    /// was sent: a page fetched again after a failover pushes all its links again.
    pub(super) fn check_server(&self) {
        let now = self.store.server_changes();
        if self.presence.server_changes.swap(now, Ordering::Relaxed) != now {
            self.say_went_back(|| {
                "Redis is another server than before (restarted, or a replica promoted): its \
                 state may be older than what this process sent, so it forgets the links it \
                 sent; pages the crawl lost are fetched again"
                    .to_owned()
            });
            self.forget_and_tell();
        }
    }

    /// Redis went back to an older state: restarted from an older snapshot, or failed over
    /// to a replica that lagged. What this process remembers of the crawl may be newer than
    /// the crawl: links it sent (and would not send again) and copies of seen-test
    /// generations may hold URLs the crawl has forgotten. Both go; the crawl's epoch is
    /// bumped so that the other processes learn it at their next heartbeat, and do the same.
    pub(super) fn went_back(&self, why: String) {
        self.say_went_back(|| {
            format!(
                "Redis went back to an older state ({why}: a restart from an older snapshot, \
                 or a failover): this process forgets the links it sent; pages the crawl lost \
                 are fetched again"
            )
        });
        self.forget_and_tell();
    }

    /// Says once in the log that Redis went back: the first sign of it, of the many that
    /// come together (a bucket's count of changes each, the server's identity, the other
    /// processes' word), is a warning; those within [`WENT_BACK_QUIET`] after it are debug.
    fn say_went_back(&self, message: impl FnOnce() -> String) {
        let now = Instant::now();
        let mut said = self
            .presence
            .said_went_back
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let quiet = said.is_some_and(|at| now.saturating_duration_since(at) < WENT_BACK_QUIET);
        if quiet {
            tracing::debug!("{}", message());
        } else {
            tracing::warn!("{}", message());
            *said = Some(now);
        }
    }

    /// Forgets what this process sent, and bumps the crawl's epoch so that the others do.
    fn forget_and_tell(&self) {
        self.forget_sent();
        let store = self.store.clone();
        tokio::spawn(async move {
            if let Err(err) = store.bump_epoch().await {
                tracing::debug!("telling the other processes that Redis went back: {err}");
            }
        });
    }

    /// Forgets the links sent, the copies of frozen generations, the hosts' places, the
    /// hosts whose politeness it set, and the buckets it owns (see [`Inner::went_back`]): what it holds
    /// of them in memory may be newer than Redis, so they are taken anew at the next
    /// heartbeat, with their URLs in flight as Redis has them back in their queues.
    pub(super) fn forget_sent(&self) {
        self.presence.forgets.fetch_add(1, Ordering::Relaxed);
        let dropped = std::mem::take(&mut *self.owners.buckets());
        if !dropped.is_empty() {
            tracing::debug!("{} buckets to take anew: Redis went back", dropped.len());
        }
        for set in [&self.sent.pushed, &self.sent.forwarded] {
            match new_pushed(&self.keys.layout) {
                Ok(fresh) => *set.write().unwrap_or_else(PoisonError::into_inner) = fresh,
                Err(err) => tracing::warn!("{err}"),
            }
        }
        self.keys.frozen.clear();
        self.places.forget();
        self.sent
            .policies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Puts the seeds' redirect targets other processes met in this process's scope (not
    /// among its trusted seeds: that is the caller's SSRF guard's business, which never sees
    /// them).
    pub(super) async fn widen_scope(&self) {
        let known = self.presence.redirect_targets.load(Ordering::Relaxed);
        let Ok(Some(targets)) = self.store.redirect_targets_beyond(known).await else {
            return;
        };
        for target in &targets {
            if let Ok(url) = self.rules.canon.canonicalize(target) {
                self.rules.scope.add_seed(&url);
            }
        }
        self.presence
            .redirect_targets
            .store(targets.len(), Ordering::Relaxed);
    }

    /// Reads the crawl's epoch; a change since the last read (up, or down with Redis) means
    /// a process found that Redis went back: this one forgets what it sent too.
    pub(super) async fn check_epoch(&self) {
        let Ok((epoch, finished)) = self.store.epoch_and_finished().await else {
            return;
        };
        if finished && !self.presence.over.load(Ordering::Relaxed) {
            // Another process found the crawl over: this one checks at once, rather than
            // at the end of its wait (2 s once idle for long, as a process whose hosts
            // were done early is).
            self.presence.check_soon();
        }
        let known = self.presence.epoch.swap(epoch, Ordering::Relaxed);
        if known >= 0 && known != epoch {
            self.forget_sent();
            self.say_went_back(|| {
                "another process found that Redis went back to an older state: this process \
                 forgets the links it sent; pages the crawl lost are fetched again"
                    .to_owned()
            });
        }
    }

    pub(super) async fn read_totals(&self) -> Result<Totals, Error> {
        self.read_counts().await.map(|(totals, _)| totals)
    }

    /// The crawl's totals, and which buckets have URLs queued or leased, or links waiting.
    pub(super) async fn read_counts(&self) -> Result<(Totals, Vec<bool>), Error> {
        // The content buckets count the content-seen test's bits and generations.
        let reads: Vec<redis::Cmd> = (0..self.keys.buckets + self.keys.layout.content_buckets)
            .map(|b| {
                let mut cmd = redis::cmd("HMGET");
                cmd.arg(format!("{}:counts", self.store.tag(b))).arg(&[
                    "seen",
                    "queued",
                    "leased",
                    "done",
                    "reaped",
                    "given_up_hosts",
                    "hosts",
                    "bits",
                    "generations",
                    "ops",
                    "host_budget",
                    "domain_hosts",
                    "domain_pages",
                ]);
                cmd
            })
            .collect();
        let answers = self.store.query_each::<Vec<Option<i64>>>(&reads).await?;
        // Links waiting for their bucket's owner (see `links`), not yet seen-tested.
        let lists: Vec<redis::Cmd> = (0..self.keys.buckets)
            .map(|b| {
                let mut cmd = redis::cmd("LLEN");
                cmd.arg(format!("{}:links", self.store.tag(b)));
                cmd
            })
            .collect();
        let waiting = self.store.query_each::<u64>(&lists).await?;
        let mut totals = Totals::default();
        let mut busy = Vec::with_capacity(self.keys.buckets as usize);
        for (b, answer) in answers.into_iter().enumerate() {
            let links = waiting.get(b).copied().unwrap_or(0);
            let v: Vec<u64> = answer
                .into_iter()
                .map(|n| u64::try_from(n.unwrap_or(0)).unwrap_or(0))
                .collect();
            let [
                seen,
                queued,
                leased,
                done,
                reaped,
                given_up_hosts,
                hosts,
                bits,
                generations,
                ops,
                host_budget,
                domain_hosts,
                domain_pages,
            ] = v[..]
            else {
                return Err(ErrorKind::Server("unexpected answer to HMGET".into()).into());
            };
            busy.push(queued > 0 || leased > 0 || links > 0);
            totals.links += links;
            totals.seen += seen;
            totals.queued += queued;
            totals.leased += leased;
            totals.done += done;
            totals.reaped += reaped;
            totals.given_up_hosts += given_up_hosts;
            totals.hosts += hosts;
            totals.seen_bits += bits;
            totals.seen_generations = totals.seen_generations.max(generations);
            totals.ops += ops;
            totals.host_budget += host_budget;
            totals.domain_hosts += domain_hosts;
            totals.domain_pages += domain_pages;
        }
        busy.truncate(self.keys.buckets as usize);
        Ok((totals, busy))
    }

    /// Says this process is present and takes the buckets it owns: each bucket goes to the
    /// process present whose id hashes highest with it (rendezvous hashing), so that a
    /// process coming or going moves only its share. Answers the processes present.
    pub(super) async fn present(&self) -> Result<Vec<String>, Error> {
        let mut invocation = self.scripts.present.prepare_invoke();
        invocation
            .key(self.store.procs_key())
            .arg("")
            .arg(&self.id)
            .arg(millis(PRESENT_FOR))
            .arg(millis(PRESENT_FOR * 60));
        let present: Vec<String> = self.call(&invocation).await?;
        *self
            .presence
            .present
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = present.clone();
        Ok(present)
    }

    /// Says this process has left, so that its buckets go to the others now rather than
    /// when it is no longer counted present.
    pub(super) async fn leave(&self) {
        let mut cmd = redis::cmd("ZREM");
        cmd.arg(self.store.procs_key()).arg(&self.id);
        if let Err(err) = self.store.query::<i64>(&cmd).await {
            tracing::debug!("saying this process left: {err}");
        }
    }

    /// Whether nothing is queued or leased anywhere: two reads of every bucket, with
    /// nothing queued, leased or waiting in its list of links and no change between them, prove that at one instant
    /// between the two the whole crawl held no work, and none can appear after.
    pub(super) async fn is_over(&self) -> Result<bool, Error> {
        if self.owners.buckets().values().any(|o| o.leases_out() > 0) {
            return Ok(false);
        }
        if self.presence.over.load(Ordering::Relaxed) {
            return Ok(true);
        }
        {
            let now = Instant::now();
            let mut check = self
                .presence
                .idle_check
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let (next, wait) = &mut *check;
            if *next > now {
                return Ok(false);
            }
            *wait = (*wait * 2).clamp(IDLE_CHECK_MIN, IDLE_CHECK_MAX);
            *next = now + *wait;
        }
        let (first, _) = self.read_counts().await?;
        if first.queued > 0 || first.leased > 0 || first.links > 0 {
            return Ok(false);
        }
        let second = self.read_totals().await?;
        *self
            .counts
            .totals
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = second;
        let over = second == first;
        if over && !self.presence.over.swap(true, Ordering::Relaxed) {
            // Nothing can come after: the heartbeat takes no bucket again.
            self.presence.left.store(true, Ordering::Relaxed);
            // Told to a later run of the same command, which would otherwise crawl nothing.
            if let Err(err) = self.store.mark_finished().await {
                tracing::debug!("marking the crawl finished: {err}");
            }
            self.leave().await;
        }
        Ok(over)
    }
}
