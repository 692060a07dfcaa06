//! The search for work: which buckets this process owns, when each is due to be asked
//! again (its [`View`]), and the lease script that fills the buffer for idle workers.

use super::*;

/// The search for work: each bucket's view as last heard, the leases Redis handed out that no
/// worker took yet, and where the next search starts.
pub(super) struct Search {
    /// Each bucket as last heard: when its next host is ready, its work, whether this
    /// process owns it.
    pub(super) views: Mutex<Vec<View>>,
    /// The fetch workers that ask for leases...
    pub(super) workers: usize,
    /// ...and how many of them hold one: a search for work takes leases for the others.
    pub(super) working: Arc<AtomicUsize>,
    /// Leases handed out by Redis not yet taken by a worker.
    pub(super) buffer: Mutex<VecDeque<SharedLease>>,
    /// One search for work at a time: the others wait for its leases.
    pub(super) turn: tokio::sync::Mutex<()>,
    /// Where the next search starts, so that every bucket is polled in turn.
    pub(super) cursor: AtomicUsize,
    /// A search ahead is under way (see [`Inner::search_ahead`]).
    pub(super) searching_ahead: AtomicBool,
    /// Buckets asked for leases so far, by every search.
    pub(super) polled: AtomicUsize,
}

impl Search {
    /// The leases handed out by Redis that no worker took yet.
    pub(super) fn buffer(&self) -> std::sync::MutexGuard<'_, VecDeque<SharedLease>> {
        self.buffer.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Buckets polled at once when a process looks for work.
pub(super) const POLL_WIDTH: usize = 8;

/// Each script's answer says when its bucket's next host is ready, and a process asks the
/// bucket for leases then. Other processes change a bucket unseen: their completions free a
/// host's connection, their links give an empty bucket work. So, while it looks for work, a
/// process asks again a bucket with work but no host ready or waiting (all at their
/// connection limit) after this long...
pub(super) const REPOLL: Duration = Duration::from_millis(100);

/// ...a bucket that had no work when last heard of after this long (a process whose links
/// give it work hears so in its script's answer, and asks it then)...
pub(super) const REPOLL_EMPTY: Duration = Duration::from_millis(1000);

/// ...and a bucket whose next host waits for its delay after this long: only another
/// process's links to a new host can make it ready sooner than it said.
pub(super) const REPOLL_WAITING: Duration = Duration::from_millis(1000);

/// Each bucket has an owner among the processes present, which asks it for leases the
/// instant it is ready; the others ask this much later, if still ready by what they know.
/// So a host ready at an instant is asked for by one process, not by every idle one, and
/// another takes it when its owner has no worker free. A bucket that gave a process all the
/// leases it asked for has more ready than its owner takes: that process asks again at once.
pub(super) const STEAL_LAG: Duration = Duration::from_millis(50);

/// The most leases one script hands out.
pub(super) const LEASE_BATCH: usize = 64;

/// The fewest leases a script is asked for: from a bucket not known to have URLs queued, or
/// when few workers are idle, a few more than needed save the next ones a round trip, and
/// hold little from other processes...
pub(super) const LEASE_MIN: usize = 4;

/// ...and for a process of many workers, up to this many: a lease script costs Redis some
/// 50 µs whatever it hands out and some 8 µs a lease, and a process of 384 workers (128
/// fetches) that asked for 4 at least took 12 a script; asking 16 at least took 15% off
/// Redis's CPU a page, as fast (docs/benchmarks.md, 2026-11-28).
pub(super) const LEASE_MIN_BUSY: usize = 16;

/// The fewest leases a script is asked for from a bucket with URLs queued, by a process of
/// `workers` workers: one for each 24 of them, from [`LEASE_MIN`] to [`LEASE_MIN_BUSY`], so
/// that a small process holds few URLs that other processes could fetch.
pub(super) fn least_asked(workers: usize) -> usize {
    (workers / 24).clamp(LEASE_MIN, LEASE_MIN_BUSY)
}

/// How many leases a search asks of each due bucket (None: not asked this time), with
/// `idle` workers to fill in a process of `workers`, and `with_work` telling which of the
/// buckets were last heard to have URLs queued: the idle workers' share of each of those,
/// at least [`least_asked`]; a few ([`LEASE_MIN`]) of each of the others, in case. As many
/// leases in all as a share of at least [`LEASE_MIN`] asked, from fewer buckets when the
/// share was raised: not more URLs held from other processes, in fewer scripts.
pub(super) fn wants(idle: usize, workers: usize, with_work: &[bool]) -> Vec<Option<usize>> {
    let n = with_work.iter().filter(|&&w| w).count().max(1);
    let share = idle.div_ceil(n).clamp(least_asked(workers), LEASE_BATCH);
    let as_before = n * idle.div_ceil(n).clamp(LEASE_MIN, LEASE_BATCH);
    let mut to_ask = as_before.div_ceil(share).max(1);
    with_work
        .iter()
        .map(|&work| {
            if !work {
                return Some(LEASE_MIN);
            }
            to_ask = to_ask.checked_sub(1)?;
            Some(share)
        })
        .collect()
}

/// What this process knows of one bucket, from the last script that answered for it.
#[derive(Clone, Copy, Debug)]
pub(super) struct View {
    /// When its first host may be leased (None: no host is ready or waiting).
    pub(super) ready: Option<Instant>,
    pub(super) queued: i64,
    pub(super) leased: i64,
    /// When it was last heard of; None: never.
    pub(super) heard: Option<Instant>,
    /// Whether this process owns it: asks it for leases the instant it is ready.
    pub(super) owned: bool,
    /// Whether it gave this process all the leases last asked of it: more are likely ready,
    /// which its owner has no worker free for.
    pub(super) plenty: bool,
}

impl View {
    /// When this process may ask for the bucket's ready host, if one is ready or waiting.
    pub(super) fn ready_for_me(&self) -> Option<Instant> {
        let lag = if self.owned || self.plenty {
            Duration::ZERO
        } else {
            STEAL_LAG
        };
        self.ready.map(|at| at + lag)
    }
}

/// Counts one in `count` until dropped, however its holder ends (an early return, a
/// panic): a lease with a worker, until the worker completes it, gives it back or drops it;
/// a completion under way (see `Sent::completing`).
#[derive(Debug)]
pub(super) struct Counted(pub(super) Arc<AtomicUsize>);

impl Counted {
    pub(super) fn new(count: &Arc<AtomicUsize>) -> Counted {
        count.fetch_add(1, Ordering::Relaxed);
        Counted(Arc::clone(count))
    }
}

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Which of `buckets` process `me` owns among `present` (itself counted present): those
/// for which its id hashes highest (rendezvous hashing).
pub(super) fn owned_buckets(
    me: &str,
    present: &[String],
    buckets: u32,
    key: &[u8; 16],
) -> Vec<bool> {
    let rank = |id: &str, bucket: u32| {
        let mut sip = SipHasher13::new_with_key(key);
        sip.write(id.as_bytes());
        sip.write_u32(bucket);
        sip.finish()
    };
    (0..buckets)
        .map(|bucket| {
            let mine = rank(me, bucket);
            present
                .iter()
                .all(|other| other == me || rank(other, bucket) < mine)
        })
        .collect()
}

impl Inner {
    pub(super) fn take_buffered(&self) -> Option<SharedLease> {
        let mut lease = self.search.buffer().pop_front()?;
        lease.working = Some(Counted::new(&self.search.working));
        Some(lease)
    }

    /// Keeps a few leases waiting for the workers that will finish next: when the buffer
    /// runs low, one round of a search in the background (unless one is under way), so that
    /// a worker finishing a page seldom waits a round trip for its next. A quarter of the
    /// workers' worth: few enough that a process does not hold URLs the others' idle workers
    /// could fetch.
    pub(super) fn search_ahead(self: &Arc<Self>) {
        let ahead = (self.search.workers / 4).max(1);
        let buffered = self.search.buffer().len();
        if buffered >= ahead
            || self.presence.over.load(Ordering::Relaxed)
            || self.search.searching_ahead.swap(true, Ordering::Relaxed)
        {
            return;
        }
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            if let Ok(_searching) = inner.search.turn.try_lock()
                && let Err(err) = inner.poll(ahead).await
            {
                tracing::debug!("searching ahead for work: {err}");
            }
            inner.search.searching_ahead.store(false, Ordering::Relaxed);
        });
    }

    /// Asks the buckets most likely to have work for leases: those ready by now, and those
    /// not heard of for a while. Answers how many buckets were asked, and how many leases
    /// came.
    pub(super) async fn poll(&self, ahead: usize) -> Result<(usize, usize), Error> {
        let now = Instant::now();
        let n = self.keys.buckets as usize;
        let start = self.search.cursor.load(Ordering::Relaxed);
        let buffered = self.search.buffer().len();
        // Leases for every idle worker, not only those asking now: the others wait for a
        // time, and a search for each would cost a round trip where one does; and `ahead`
        // more, for the workers that will finish soon.
        let idle = (self.search.workers + ahead)
            .saturating_sub(self.search.working.load(Ordering::Relaxed) + buffered)
            .max(1);
        let chosen: Vec<(u32, usize)> = {
            let views = self
                .search
                .views
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let due: Vec<usize> = (0..n)
                .map(|i| (start + i) % n)
                .filter(|&b| {
                    let v = views[b];
                    let repoll = if v.ready.is_some() {
                        REPOLL_WAITING
                    } else if v.queued > 0 || v.leased > 0 {
                        REPOLL
                    } else {
                        REPOLL_EMPTY
                    };
                    v.ready_for_me().is_some_and(|at| at <= now)
                        || v.heard
                            .is_none_or(|heard| now.duration_since(heard) >= repoll)
                })
                .take(POLL_WIDTH)
                .collect();
            let with_work: Vec<bool> = due.iter().map(|&b| views[b].queued > 0).collect();
            due.iter()
                .zip(wants(idle, self.search.workers, &with_work))
                .filter_map(|(&b, want)| Some((b as u32, want?)))
                .collect()
        };
        if let Some(&(last, _)) = chosen.last() {
            self.search
                .cursor
                .store(last as usize + 1, Ordering::Relaxed);
        }
        let asked = chosen.len();
        self.search.polled.fetch_add(asked, Ordering::Relaxed);
        let answers = join_all(
            chosen
                .into_iter()
                .map(|(bucket, want)| self.lease_from(bucket, want)),
        )
        .await;
        let mut got = 0;
        for answer in answers {
            got += answer?;
        }
        if got > 0 {
            *self
                .presence
                .idle_check
                .lock()
                .unwrap_or_else(PoisonError::into_inner) = (now, Duration::ZERO);
        }
        Ok((asked, got))
    }

    /// Leases from one bucket into the buffer.
    pub(super) async fn lease_from(&self, bucket: u32, max: usize) -> Result<usize, Error> {
        let tag = self.store.tag(bucket);
        let invocation = self.scripts.lease_call(
            &tag,
            &self.rules.politeness,
            max,
            self.rules.lease_time,
            &self.request_id(),
        );
        let answer: Vec<redis::Value> = self.call(&invocation).await?;
        let bad = || Error::from(ErrorKind::Server("unexpected answer to a lease".into()));
        let int = |v: &redis::Value| match v {
            redis::Value::Int(n) => Ok(*n),
            // Tokens come as text: formatted as integers, never as floats, in the script.
            redis::Value::BulkString(b) => std::str::from_utf8(b)
                .ok()
                .and_then(|t| t.parse().ok())
                .ok_or_else(bad),
            _ => Err(bad()),
        };
        let text = |v: &redis::Value| match v {
            redis::Value::BulkString(b) => String::from_utf8(b.clone()).map_err(|_| bad()),
            _ => Err(bad()),
        };
        if answer.len() < 6 || !(answer.len() - 6).is_multiple_of(4) {
            return Err(bad());
        }
        let view = answer[..BucketView::LEN]
            .iter()
            .map(int)
            .collect::<Result<Vec<i64>, Error>>()?;
        self.note_bucket(bucket, BucketView::of(&view));
        let mut leases = Vec::new();
        for group in answer[6..].chunks(4) {
            let token = u64::try_from(int(&group[0])?).map_err(|_| bad())?;
            let entry = text(&group[2])?;
            let given_up = int(&group[3])? == 1;
            let mut parts = entry.splitn(4, ' ');
            let (Some(attempts), Some(depth), Some(url)) =
                (parts.next(), parts.next(), parts.next())
            else {
                return Err(bad());
            };
            let (referrer, memo) = super::batch::entry_tail(parts.next());
            let attempts: u32 = attempts.parse().map_err(|_| bad())?;
            let depth: u32 = depth.parse().map_err(|_| bad())?;
            // Canonical already when pushed: parsing again gives it back as it was.
            let url = match self.rules.canon.canonicalize(url) {
                Ok(url) => url,
                Err(_) => return Err(bad()),
            };
            leases.push(SharedLease {
                url,
                referrer,
                memo,
                depth,
                attempts: attempts + 1,
                given_up,
                bucket,
                token,
                working: None,
            });
        }
        // A URL out of this process's scope was in another's: a seed's redirect target it
        // met a moment ago, or a page of one. This process's scope takes the targets in
        // before it judges the page's links.
        let outside = leases.iter().any(|lease| {
            self.rules.scope.check(&lease.url, lease.depth) == Err(frontier::DropReason::OutOfScope)
        });
        if outside {
            self.widen_scope().await;
        }
        let got = leases.len();
        self.search
            .views
            .lock()
            .unwrap_or_else(PoisonError::into_inner)[bucket as usize]
            .plenty = got == max;
        self.counts.leases.fetch_add(got as u64, Ordering::Relaxed);
        {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            for lease in &leases {
                held.insert((lease.bucket, lease.token));
            }
        }
        for lease in &leases {
            // Added to, not replaced: a lease of the same page may be held already.
            self.hold_pending(lease.url.as_str());
        }
        self.search.buffer().extend(leases);
        Ok(got)
    }
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_search_asks_as_many_leases_as_before_from_fewer_buckets_when_it_asks_more_of_each() {
        let busy = vec![true; 8];
        // 16 fetches (48 workers): 4 of each bucket at least, as ever.
        assert_eq!(wants(10, 48, &busy), vec![Some(4); 8]);
        assert_eq!(wants(80, 48, &busy), vec![Some(10); 8]);
        // 128 fetches (384 workers), 20 idle: the 32 leases a share of 4 asked, 16 from each
        // of 2 buckets; the others are asked at the next search.
        let some = wants(20, 384, &busy);
        assert_eq!(some[..2], [Some(16), Some(16)]);
        assert_eq!(some[2..], [None; 6]);
        // 200 idle: each bucket's share is more than the least already.
        assert_eq!(wants(200, 384, &busy), vec![Some(25); 8]);
        // Buckets with nothing queued when last heard: a few each, whatever the rest.
        let mixed = wants(20, 384, &[false, true, false, true, true]);
        assert_eq!(
            mixed,
            vec![Some(LEASE_MIN), Some(16), Some(LEASE_MIN), Some(16), None]
        );
    }

    #[test]
    fn a_process_of_many_workers_asks_a_script_for_more_leases_at_least() {
        // 16 fetches (48 workers) or fewer: as few as ever.
        assert_eq!(least_asked(1), LEASE_MIN);
        assert_eq!(least_asked(48), LEASE_MIN);
        // 64 fetches, 128, and many more: more, up to the most.
        assert_eq!(least_asked(192), 8);
        assert_eq!(least_asked(384), LEASE_MIN_BUSY);
        assert_eq!(least_asked(100_000), LEASE_MIN_BUSY);
        const { assert!(LEASE_MIN_BUSY <= LEASE_BATCH) };
    }

    #[test]
    fn each_bucket_has_one_owner_and_a_process_leaving_moves_only_its_own() {
        let key = [3; 16];
        let ids: Vec<String> = (0..4).map(|i| format!("process-{i}")).collect();
        let of_all: Vec<Vec<bool>> = ids
            .iter()
            .map(|me| owned_buckets(me, &ids, 64, &key))
            .collect();
        for bucket in 0..64 {
            assert_eq!(
                of_all.iter().filter(|o| o[bucket]).count(),
                1,
                "bucket {bucket}"
            );
        }
        assert!(of_all.iter().all(|o| o.iter().filter(|&&b| b).count() >= 4));
        // Alone (or not yet in the list it read): everything.
        assert!(owned_buckets("process-9", &[], 64, &key).iter().all(|&b| b));
        // Process 3 leaves: the others keep what they had and share its buckets.
        let rest = &ids[..3];
        for (me, before) in rest.iter().zip(&of_all) {
            let after = owned_buckets(me, rest, 64, &key);
            for bucket in 0..64 {
                assert!(!before[bucket] || after[bucket]);
                assert_eq!(
                    after[bucket],
                    before[bucket] || (of_all[3][bucket] && after[bucket])
                );
            }
        }
    }
}
