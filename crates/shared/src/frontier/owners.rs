//! The buckets this process owns: taking them (from a process gone, at once), renewing the
//! hold and letting them go at each heartbeat, loading a bucket taken over, and the owner's
//! part of each batch script: its log sent, its answer read into the bucket's [`Owned`].

use super::owned::{Log, Owned};
use super::*;

/// Other processes' links to an owned bucket's hosts wait in Redis, in the bucket's inbox,
/// until its owner's next batch reads them. While it looks for work, a process reads the
/// length of the inboxes of its buckets that sent no batch for this long (one round trip,
/// a plain command each), and sends a batch to those with hosts waiting: a script per
/// bucket polled would cost Redis some 20 times as much, for every bucket of a quiet crawl.
pub(super) const REPOLL: Duration = Duration::from_millis(100);

/// A process not heard from for this long is gone: its buckets are taken over at once,
/// rather than when its hold lapses. Longer than a request may wait for its answer and be
/// sent again on a new connection: a reshard's slot refresh held a live process's
/// heartbeat that long, and its buckets taken over at 10 s had its pages fetched twice.
const GONE_AFTER: Duration =
    Duration::from_secs(crate::store::RESPONSE_TIMEOUT.as_secs() + 2 * PRESENT_FOR.as_secs());

/// Hosts whose states are read in one request, loading a bucket taken over.
const LOAD_CHUNK: usize = 1000;

/// The buckets this process owns, each scheduled in memory.
#[derive(Default)]
pub(super) struct Owners {
    /// Each bucket owned, by number.
    pub(super) buckets: Mutex<HashMap<u32, Owned>>,
    /// The server's clock (ms) at an instant of this process's, as last heard.
    pub(super) clock: Mutex<Option<(Instant, i64)>>,
    /// Where the next pick starts, so that every bucket has its turn.
    pub(super) cursor: AtomicUsize,
    /// When the inboxes of quiet buckets were last read (see [`REPOLL`]), and whether a
    /// read is under way.
    pub(super) polled: Mutex<Option<Instant>>,
    pub(super) polling: AtomicBool,
}

impl Owners {
    pub(super) fn buckets(&self) -> std::sync::MutexGuard<'_, HashMap<u32, Owned>> {
        self.buckets.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The server's clock now, by the last instant heard (this process's clock if none).
    pub(super) fn server_now(&self, now: Instant) -> i64 {
        match *self.clock.lock().unwrap_or_else(PoisonError::into_inner) {
            Some((at, ms)) => {
                ms + i64::try_from(now.saturating_duration_since(at).as_millis()).unwrap_or(0)
            }
            None => i64::try_from(crate::store::unix_millis()).unwrap_or(0),
        }
    }

    pub(super) fn heard_clock(&self, now: Instant, server: i64) {
        *self.clock.lock().unwrap_or_else(PoisonError::into_inner) = Some((now, server));
    }
}

impl Inner {
    /// Takes the buckets this process is to own among those present (rendezvous hashing:
    /// see [`owned_buckets`]), renews its hold on those it has, and lets go of those another
    /// process present is to own once their leases ended. A bucket another holds is taken
    /// over when its holder is gone (not heard from), else when its hold lapses.
    /// The holds are renewed when `renew` (every third of their time, not every beat).
    /// Answers whether a bucket this process is to own is still held by another present
    /// process (which lets it go once its leases of it ended).
    pub(super) async fn hold_buckets(self: &Arc<Self>, present: &[String], renew: bool) -> bool {
        let mine = owned_buckets(&self.id, present, self.keys.buckets, &self.keys.sip_key);
        // All at once: one round trip, not one a bucket, however far Redis is.
        let holds = (0..self.keys.buckets).zip(mine).map(|(bucket, should)| {
            let inner = Arc::clone(self);
            async move {
                if inner.presence.left.load(Ordering::Relaxed) {
                    return false;
                }
                let (held, kept) = match inner.owners.buckets().get_mut(&bucket) {
                    // One being let go is kept if it is this process's again.
                    Some(owned) => (Some(owned.epoch), should && owned.keep()),
                    None => (None, false),
                };
                if kept {
                    tracing::debug!("bucket {bucket} kept: the process it was to go to left");
                    inner.nudge(bucket);
                }
                let result = match (held, should) {
                    (Some(epoch), true) if renew => inner.renew_bucket(bucket, epoch).await,
                    (Some(_), true) => Ok(()),
                    (None, true) => match inner.take_bucket(bucket).await {
                        Ok(false) => return true,
                        result => result.map(drop),
                    },
                    (Some(epoch), false) => inner.let_go(bucket, epoch).await,
                    (None, false) => Ok(()),
                };
                if let Err(err) = result {
                    tracing::debug!("holding bucket {bucket}: {err}");
                }
                false
            }
        });
        join_all(holds).await.into_iter().any(|waiting| waiting)
    }

    async fn renew_bucket(&self, bucket: u32, epoch: i64) -> Result<(), Error> {
        let tag = self.store.tag(bucket);
        let call = self
            .scripts
            .own_call(&tag, &self.id, epoch, self.rules.lease_time, false, None);
        let answer: Vec<redis::Value> = self.call(&call).await?;
        if !matches!(answer.first(), Some(redis::Value::Int(1))) {
            // Another holds it (this process stalled past its hold, or Redis went back):
            // its leases out are refused, and come back with the bucket's next owner.
            self.drop_bucket(bucket, epoch, "its hold lapsed");
        }
        Ok(())
    }

    /// Forgets an owned bucket: its workers' completions are refused (fenced), and the URLs
    /// it had in flight go back to the crawl with its next owner.
    pub(super) fn drop_bucket(&self, bucket: u32, epoch: i64, why: &str) {
        let mut buckets = self.owners.buckets();
        if buckets.get(&bucket).is_some_and(|o| o.epoch == epoch) {
            tracing::debug!("bucket {bucket} is no longer this process's: {why}");
            buckets.remove(&bucket);
        }
    }

    /// Takes `bucket` unless another process holds it: answers false when that one is
    /// present (it lets the bucket go once its leases of it ended), else true.
    async fn take_bucket(self: &Arc<Self>, bucket: u32) -> Result<bool, Error> {
        let tag = self.store.tag(bucket);
        let mut gone = None;
        loop {
            let call = self.scripts.own_call(
                &tag,
                &self.id,
                0,
                self.rules.lease_time,
                false,
                gone.as_deref(),
            );
            let answer: Vec<redis::Value> = self.call(&call).await?;
            let int = |v: Option<&redis::Value>| match v {
                Some(redis::Value::Int(n)) => Some(*n),
                Some(redis::Value::BulkString(b)) => std::str::from_utf8(b).ok()?.parse().ok(),
                _ => None,
            };
            let text = |v: &redis::Value| match v {
                redis::Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
                _ => String::new(),
            };
            match int(answer.first()) {
                Some(2) => {
                    let bad = || Error::from(ErrorKind::Server("unexpected answer to own".into()));
                    let epoch = int(answer.get(1)).ok_or_else(bad)?;
                    let server = int(answer.get(2)).ok_or_else(bad)?;
                    let reaped: HashSet<String> = answer.iter().skip(4).map(text).collect();
                    return self
                        .load_bucket(bucket, epoch, server, reaped)
                        .await
                        .map(|()| true);
                }
                Some(0) if gone.is_none() => {
                    // Held by another: taken over at once if that process is gone.
                    let holder = answer.get(1).map(text).unwrap_or_default();
                    let id = holder.split(' ').next().unwrap_or_default();
                    if id.is_empty() || self.presence.is_present(id) {
                        return Ok(false);
                    }
                    match self.heard_ago(id).await? {
                        // Not present, heard from lately: taken over once it is gone, at
                        // a heartbeat (it lets nothing go meanwhile).
                        Some(ago) if ago < GONE_AFTER => return Ok(true),
                        _ => gone = Some(holder),
                    }
                }
                _ => return Ok(true),
            }
        }
    }

    /// Loads a bucket just taken over: the hosts with work, and their states.
    async fn load_bucket(
        self: &Arc<Self>,
        bucket: u32,
        epoch: i64,
        server: i64,
        reaped: HashSet<String>,
    ) -> Result<(), Error> {
        let tag = self.store.tag(bucket);
        let mut hosts: Vec<String> = Vec::new();
        let mut cursor = 0u64;
        loop {
            let mut cmd = redis::cmd("SSCAN");
            cmd.arg(format!("{tag}:work"))
                .arg(cursor)
                .arg("COUNT")
                .arg(LOAD_CHUNK);
            let (next, page): (u64, Vec<String>) = self.store.query(&cmd).await?;
            hosts.extend(page);
            if next == 0 {
                break;
            }
            cursor = next;
        }
        hosts.sort_unstable();
        hosts.dedup();
        let mut owned = Owned::new(epoch, self.rules.politeness.clone());
        for chunk in hosts.chunks(LOAD_CHUNK) {
            let mut cmd = redis::cmd("HMGET");
            cmd.arg(format!("{tag}:hosts")).arg(chunk);
            let states: Vec<Option<Vec<u8>>> = self.store.query(&cmd).await?;
            let now = Instant::now();
            for (host, state) in chunk.iter().zip(states) {
                let state = state.as_deref().and_then(scripts::HostState::decode);
                owned.has_work(host, state.as_ref(), now, server, reaped.contains(host));
            }
        }
        self.owners.heard_clock(Instant::now(), server);
        self.owners.buckets().insert(bucket, owned);
        // Its first batch: URLs of its ready hosts taken.
        self.nudge(bucket);
        Ok(())
    }

    /// Lets go of a bucket another process is to own: no lease handed out from it after,
    /// and once none is out, its URLs taken go back to their queues and its hold ends.
    async fn let_go(self: &Arc<Self>, bucket: u32, epoch: i64) -> Result<(), Error> {
        let out = {
            let mut buckets = self.owners.buckets();
            let Some(owned) = buckets.get_mut(&bucket) else {
                return Ok(());
            };
            owned.give_back_untaken();
            owned.leases_out()
        };
        if out > 0 {
            return Ok(());
        }
        Arc::clone(self).release(bucket, epoch).await
    }

    /// Writes an owned bucket's log (its URLs taken and not leased given back: see
    /// [`Owned::give_back_untaken`]), then ends this process's hold of it. A bucket kept
    /// meanwhile (see [`Owned::keep`]) is not released.
    pub(super) async fn release(self: Arc<Self>, bucket: u32, epoch: i64) -> Result<(), Error> {
        {
            let mut buckets = self.owners.buckets();
            match buckets
                .get_mut(&bucket)
                .filter(|owned| owned.epoch == epoch)
            {
                // URLs that came back since it began to be let go (a lease given back, a
                // batch answered late) go back to their queues with the rest.
                Some(owned) if owned.letting_go() => {
                    owned.give_back_untaken();
                }
                _ => return Ok(()),
            }
        }
        let step = Step::links(Vec::new());
        Arc::clone(&self).submit(bucket, step).await?;
        // Kept while its log was written (or no longer this process's): not let go.
        let going = self
            .owners
            .buckets()
            .get(&bucket)
            .is_some_and(|owned| owned.epoch == epoch && owned.letting_go());
        if !going {
            return Ok(());
        }
        let tag = self.store.tag(bucket);
        let call = self
            .scripts
            .own_call(&tag, &self.id, epoch, self.rules.lease_time, true, None);
        self.call::<Vec<i64>>(&call).await?;
        self.drop_bucket(bucket, epoch, "let go");
        Ok(())
    }

    /// Reads the inboxes of the owned buckets `quiet` (see [`REPOLL`]) unless read within
    /// that time or being read, and sends a batch to those with hosts waiting.
    pub(super) fn poll_inboxes(self: &Arc<Self>, quiet: Vec<u32>) {
        let now = Instant::now();
        {
            let mut polled = self
                .owners
                .polled
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            if polled.is_some_and(|at| now.saturating_duration_since(at) < REPOLL)
                || self.owners.polling.swap(true, Ordering::Relaxed)
            {
                return;
            }
            *polled = Some(now);
        }
        let inner = Arc::clone(self);
        tokio::spawn(async move {
            // Its hosts given work, and its list of links (see `links`): a batch reads the
            // first and says whether the second holds any.
            let reads: Vec<redis::Cmd> = quiet
                .iter()
                .flat_map(|&bucket| {
                    ["inbox", "links"].map(|list| {
                        let mut cmd = redis::cmd("LLEN");
                        cmd.arg(format!("{}:{list}", inner.store.tag(bucket)));
                        cmd
                    })
                })
                .collect();
            match inner.store.query_each::<i64>(&reads).await {
                Ok(lengths) => {
                    for (bucket, n) in quiet.into_iter().zip(lengths.chunks(2)) {
                        if n.iter().any(|&n| n > 0) {
                            inner.nudge(bucket);
                        }
                    }
                }
                Err(err) => tracing::debug!("reading the inboxes of quiet buckets: {err}"),
            }
            inner.owners.polling.store(false, Ordering::Relaxed);
        });
    }

    /// Makes a bucket's next batch go soon, for its owner's log (URLs to take).
    pub(super) fn nudge(self: &Arc<Self>, bucket: u32) {
        let (unheard, _) = oneshot::channel();
        let step = Step::links(Vec::new());
        if let Some(sending) = self.sent.batches.push(bucket, step, unheard) {
            tokio::spawn(Arc::clone(self).flush(bucket, sending));
        }
    }

    /// The owner's log of `bucket`, if this process owns it: what its batch script writes.
    pub(super) fn owner_log(&self, bucket: u32) -> Option<(String, i64, Log)> {
        let now = Instant::now();
        let server = self.owners.server_now(now);
        let mut buckets = self.owners.buckets();
        let owned = buckets.get_mut(&bucket)?;
        let log = owned.take_log(now, server);
        Some((format!("{} {}", self.id, owned.epoch), owned.epoch, log))
    }

    /// Reads the owner's part of a batch's answer (`rest`, after the steps' numbers) into
    /// its bucket, `log` the log it carried; `status` the script's word on the owner's part.
    /// Answers what became of the log's leases ended, in its order (none when the owner's
    /// part was refused): whether each was in flight, and the URLs its host has queued.
    pub(super) fn owner_answer(
        &self,
        bucket: u32,
        epoch: i64,
        log: Log,
        status: i64,
        rest: &[redis::Value],
        server: i64,
    ) -> Result<Vec<(bool, i64)>, Error> {
        if status != 1 {
            self.drop_bucket(
                bucket,
                epoch,
                "its batch was refused: another process holds it",
            );
            return Ok(Vec::new());
        }
        let reply = super::batch::OwnerReply::read(&log, rest)
            .ok_or_else(|| Error::from(ErrorKind::Server("unexpected answer to a batch".into())))?;
        let now = Instant::now();
        self.owners.heard_clock(now, server);
        let ended = reply.ended.clone();
        let mut buckets = self.owners.buckets();
        if let Some(owned) = buckets.get_mut(&bucket).filter(|o| o.epoch == epoch) {
            owned.links_waiting = reply.links_waiting > 0;
            owned.answered(&log, reply, now, server);
        }
        Ok(ended)
    }
}

impl Inner {
    /// Ends lease `token` of `bucket`, whose queue entry [`Inner::lease_of`] could not read
    /// (written by another program, or damaged), as a URL not fetched: left in flight, it
    /// would hold one of its host's connections, and the crawl's end, for ever.
    pub(super) async fn drop_unread(self: &Arc<Self>, bucket: u32, epoch: i64, token: u64) {
        let ended = self
            .owners
            .buckets()
            .get_mut(&bucket)
            .filter(|owned| owned.epoch == epoch)
            .and_then(|owned| owned.complete(token, Outcome::Skipped, Instant::now()));
        let Some(ended) = ended else { return };
        let step = super::batch::Step {
            ended: Some((epoch, ended.lease)),
            ..super::batch::Step::links(Vec::new())
        };
        if let Err(err) = Arc::clone(self).submit(bucket, step).await {
            // Its bucket is given up on the error, and its leases come back to the crawl.
            tracing::warn!("dropping an unreadable queue entry: {err}");
        }
    }

    /// A lease handed out by an owned bucket, for a worker.
    pub(super) fn lease_of(
        &self,
        bucket: u32,
        epoch: i64,
        taken: super::owned::Taken,
    ) -> Result<SharedLease, Error> {
        let bad = || {
            Error::from(ErrorKind::BadLayout(format!(
                "queue entry {:?}, dropped",
                taken.entry
            )))
        };
        let mut parts = taken.entry.splitn(4, ' ');
        let (Some(_), Some(depth), Some(url)) = (parts.next(), parts.next(), parts.next()) else {
            return Err(bad());
        };
        let (referrer, memo) = super::batch::entry_tail(parts.next());
        let depth: u32 = depth.parse().map_err(|_| bad())?;
        let url = canonical_again(&self.rules.canon, url).ok_or_else(bad)?;
        self.learn_place(url.host_key(), bucket);
        self.counts.leases.fetch_add(1, Ordering::Relaxed);
        // Added to, not replaced: a lease of the same page may be held already.
        self.hold_pending(url.as_str());
        Ok(SharedLease {
            url,
            referrer,
            memo,
            depth,
            attempts: taken.attempts,
            given_up: taken.given_up,
            bucket,
            token: taken.token,
            epoch,
            working: Some(Counted::new(&self.search.working)),
        })
    }
}

/// The fetch workers' leases: how many of them hold one.
pub(super) struct Search {
    /// Workers holding a lease.
    pub(super) working: Arc<AtomicUsize>,
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

/// Which of `buckets` process `me` owns among `present` (itself counted present): each
/// bucket in turn goes to the process whose id hashes highest with it (rendezvous
/// hashing) among those not yet at their share, `buckets` over the processes.
/// Every process computes the same from the same list. Bounded so: by the hash alone, two
/// processes split 16 buckets 10 to 6 or worse in nearly one crawl in two, and the one
/// with ten did 62% of the crawl while the other idled.
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
    let mut ids: Vec<&str> = present.iter().map(String::as_str).collect();
    ids.push(me);
    ids.sort_unstable();
    ids.dedup();
    // Each process's share: the buckets over the processes, one more for as many as the
    // division leaves over.
    let (share, over) = (buckets as usize / ids.len(), buckets as usize % ids.len());
    let mut held = vec![0usize; ids.len()];
    let mut above = 0;
    (0..buckets)
        .map(|bucket| {
            let owner = (0..ids.len())
                .filter(|&i| held[i] < share || (held[i] == share && above < over))
                .max_by_key(|&i| (rank(ids[i], bucket), ids[i]))
                .expect("the shares add up to the buckets");
            held[owner] += 1;
            above += usize::from(held[owner] == share + 1);
            ids[owner] == me
        })
        .collect()
}

/// A URL of a queue entry or a list of links, canonical when it was pushed: read back with a
/// parse alone, not the rules' work again (a lease each page, and each link another process
/// sent), or, text in another form (another build's), canonicalized again.
pub(super) fn canonical_again(canon: &Canonicalizer, url: &str) -> Option<Canonical> {
    Canonical::from_stored(url).or_else(|| canon.canonicalize(url).ok())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bucket_has_one_owner_the_shares_are_even_and_a_process_leaving_moves_few() {
        let key = [3; 16];
        let ids: Vec<String> = (0..4).map(|i| format!("process-{i}")).collect();
        let owners = |ids: &[String], buckets: u32| -> Vec<Vec<bool>> {
            ids.iter()
                .map(|me| owned_buckets(me, ids, buckets, &key))
                .collect()
        };
        for buckets in [16, 64] {
            for n in 1..=4 {
                let of_all = owners(&ids[..n], buckets);
                for bucket in 0..buckets as usize {
                    let holders = of_all.iter().filter(|o| o[bucket]).count();
                    assert_eq!(holders, 1, "bucket {bucket} of {buckets}, {n} processes");
                }
                let shares: Vec<usize> = of_all
                    .iter()
                    .map(|o| o.iter().filter(|&&b| b).count())
                    .collect();
                let (least, most) = (shares.iter().min(), shares.iter().max());
                assert!(most.unwrap() - least.unwrap() <= 1, "{shares:?}");
            }
        }
        // Alone (or not yet in the list it read): everything.
        assert!(owned_buckets("process-9", &[], 64, &key).iter().all(|&b| b));
        // Process 3 leaves: its buckets go to the others, and few of theirs move.
        let before = owners(&ids, 64);
        let after = owners(&ids[..3], 64);
        let moved = (0..64)
            .filter(|&b| !before[3][b] && (0..3).any(|p| before[p][b] != after[p][b]))
            .count();
        assert!(moved <= 8, "{moved} of the others' 48 buckets moved");
    }
}
