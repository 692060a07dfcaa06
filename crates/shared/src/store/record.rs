//! The crawl's own record in Redis: how its keys are laid out ([`Layout`]), its settings
//! and seeds ([`Stored`]), its epoch and end, the shares of lists its processes divide, and
//! its removal; read and written through the parent module's connection.

use super::*;

/// The version of the keys' layout a crawl is stored in. 9: a bucket's hosts are scheduled by
/// the process that owns it (`owner`, `work`, `inbox`; no `ready` nor `due`; a URL in flight
/// is "host entry"; pages per host in `pages`), which version 8 would lease from without
/// owning; 8: a seen-test past its 32-bit
/// generations goes on in wide ones (version 7 would look their members up as 32-bit
/// fingerprints, and find none); 7: a lease's start is packed
/// (version 6 would read its bytes as part of the lease's queue entry); 6: the seen-test in
/// integer sets (version 5 would read the newest generation's geometry as a cuckoo table's,
/// and look URLs up in strings that are not there); 5: a host's state is packed (version 4
/// would read it as text, and take it for a new host's), and the record names the content
/// buckets; 4: a queue entry may end with a memo (`~` and base64), which version 3 would
/// take for part of the referrer; 3: the seen-test a cuckoo filter of fingerprints (version
/// 2 was a Bloom filter in 64-byte blocks, version 1 one of single bits).
const VERSION: &str = "9";

/// What became of a share of a list several processes were given (see
/// [`Store::claim_share`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Share {
    /// This process claimed it: it queues it, then says it is done.
    Mine,
    /// Another process holds it now.
    Taken,
    /// Queued whole, by some process.
    Done,
}

/// The crawl as stored: how its keys are laid out, the caller's settings, and its seeds.
///
/// # Example
///
/// ```no_run
/// # async fn f() -> Result<(), shared::Error> {
/// let store = shared::Store::connect("redis://127.0.0.1:6379", "crawl").await?;
/// let crawl = store.create(shared::Layout::default(), "{\"delay\":1}", &[]).await?;
/// assert_eq!(crawl.layout.buckets, 32);
/// # Ok(()) }
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Stored {
    /// How the crawl's keys and seen-test are laid out.
    pub layout: Layout,
    /// The settings the crawl was created with, as the creator wrote them.
    pub settings: String,
    /// Every seed given to the crawl by any process.
    pub seeds: Vec<String>,
    /// Targets of the seeds' redirects ([`Store::add_redirect_targets`]): seeds of the
    /// scope, but not seeds a user gave, so not to be trusted as such (by an SSRF guard).
    pub redirect_targets: Vec<String>,
    /// When a process found the crawl over, in milliseconds since the Unix epoch by its
    /// clock ([`Store::mark_finished`]); `None` while it runs, and again once seeds new to
    /// it are added. Advisory: a process that adds new seeds as another finds the crawl over
    /// may leave it marked finished with work in it.
    pub finished: Option<u64>,
    /// A removal ([`Store::remove`]) began and did not finish: the crawl is not to be joined,
    /// and removing it again finishes the job.
    pub removing: bool,
}

/// What every process of a crawl must agree on, fixed when the crawl is created.
///
/// # Example
///
/// ```
/// let layout = shared::Layout { buckets: 16, ..shared::Layout::default() };
/// assert_eq!(layout.seen_rate, 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Buckets hosts are hashed into. Each bucket's keys share one hash slot, so a script
    /// touches one slot; more buckets spread a cluster's load more evenly, and let more
    /// processes share the crawl (a bucket's hosts are leased by one process), but put
    /// fewer pages in each script. Default: 16 ([`Store::default_buckets`]).
    pub buckets: u32,
    /// URLs the seen-test holds before it first grows, over all buckets (each takes at least
    /// 1,024). Default: 65,536: it doubles at each step, and sets take only their members'
    /// bytes, so a small start costs nothing and leaves the fewest sets at any size.
    pub seen_initial_capacity: u64,
    /// The seen-test's target false-positive rate. Default: 1e-6.
    pub seen_rate: f64,
    /// The key of the SipHash the URLs and hosts are hashed with: random per crawl, so that
    /// no page can pick URLs that collide in it.
    pub key: [u8; 16],
    /// What puts hosts in one bucket: their name, their registrable domain or their
    /// server's address (see [`BucketsBy`]). Default: [`BucketsBy::Host`].
    pub buckets_by: BucketsBy,
    /// Buckets of their own for the content-seen test ([`crate::SharedFrontier::seen_body`]),
    /// its bodies' digests hashed into them: tagged after the hosts' buckets, they hold no
    /// URL and no host, so that one script tests the bodies of many pages, where spread over
    /// the hosts' buckets it met one or two a script (its fixed part, a third of Redis's CPU
    /// a page; docs/benchmarks.md). 0: in the hosts' buckets. At most 16,384. Default: 1.
    pub content_buckets: u32,
    /// The buckets' hash tags are chosen so that their slots are evenly spaced, each kind
    /// (hosts', content) over the 16,384 ([`Store::tag`]): on a cluster whose masters hold
    /// equal ranges of slots, each holds an equal share of the buckets, where hashed tags
    /// leave some masters more (the busiest of three 1.22 times its share of 32 buckets, for
    /// the median crawl name). Up to 1,024 buckets of a kind; past that, hashed tags are
    /// even within a few percent. Default: true; crawls created before it have hashed tags.
    pub even_slots: bool,
}

impl Default for Layout {
    fn default() -> Layout {
        let mut key = [0; 16];
        // Without the system's randomness the crawl is still correct, only predictable.
        let _ = getrandom::fill(&mut key);
        Layout {
            buckets: super::DEFAULT_BUCKETS,
            seen_initial_capacity: 65_536,
            seen_rate: 1e-6,
            key,
            buckets_by: BucketsBy::Host,
            content_buckets: 1,
            even_slots: true,
        }
    }
}

/// What puts a crawl's hosts in one bucket, and so with one process (a bucket's hosts are
/// scheduled by its owner): fixed when the crawl is created, as its record says
/// (`buckets_by`).
///
/// # Example
///
/// ```
/// let layout = shared::Layout { buckets_by: shared::BucketsBy::Address, ..Default::default() };
/// assert_eq!(layout.buckets_by.as_str(), "address");
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum BucketsBy {
    /// Each host by its name (with its port): a large domain's hosts (a blog platform's)
    /// spread over the buckets.
    #[default]
    Host,
    /// Each host by its registrable domain, so that one script counts a domain's hosts and
    /// pages (the domain budgets need it), and the servers only a domain's names share are
    /// one process's.
    Domain,
    /// Each host by the address of its server, as the frontier's locator finds it when the
    /// host is first met ([`crate::SharedFrontier::with_locator`]), and kept in Redis so
    /// that every process puts it in the same bucket: the names of one server (shared
    /// hosting) are one process's, whose limits per address then never pass between
    /// processes. A host that does not resolve goes by its name.
    Address,
}

impl BucketsBy {
    /// The name the crawl's record keeps it under: `host`, `domain` or `address`.
    ///
    /// # Example
    ///
    /// ```
    /// assert_eq!(shared::BucketsBy::Domain.as_str(), "domain");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            BucketsBy::Host => "host",
            BucketsBy::Domain => "domain",
            BucketsBy::Address => "address",
        }
    }

    fn from_str(text: &str) -> Option<BucketsBy> {
        [BucketsBy::Host, BucketsBy::Domain, BucketsBy::Address]
            .into_iter()
            .find(|by| by.as_str() == text)
    }
}

/// Content buckets a crawl may have: one per hash slot of a cluster, at most.
const MAX_CONTENT_BUCKETS: u32 = 16_384;

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn unhex(text: &str) -> Option<[u8; 16]> {
    let mut key = [0; 16];
    if text.len() != 32 {
        return None;
    }
    for (i, byte) in key.iter_mut().enumerate() {
        *byte = u8::from_str_radix(text.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(key)
}

impl Store {
    fn meta_key(&self) -> String {
        format!("{}:meta", self.name)
    }

    fn seeds_key(&self) -> String {
        format!("{}:seeds", self.name)
    }

    fn redirect_targets_key(&self) -> String {
        format!("{}:seed-redirects", self.name)
    }

    /// The shares of lists given to several processes (see [`Store::claim_share`]).
    fn shares_key(&self) -> String {
        format!("{}:shares", self.name)
    }

    /// Claims share `share` (a list's name and a chunk's number) for process `me`, for
    /// `hold` (long enough to queue it): [`Share::Mine`] if no process has done it and none
    /// other holds it now (a claim of a process that died lapses), [`Share::Taken`] while
    /// another holds it, [`Share::Done`] once [`Store::share_done`] was said of it. Sent
    /// again after a cut answer, it answers the same.
    pub(crate) async fn claim_share(
        &self,
        share: &str,
        me: &str,
        hold: Duration,
    ) -> Result<Share, Error> {
        let script = redis::Script::new(include_str!("../scripts/claim_share.lua"));
        let mut invocation = script.key(self.shares_key());
        invocation.arg(share).arg(me).arg(hold.as_millis() as u64);
        let answer: String = self.eval(&invocation).await?;
        match answer.as_str() {
            "mine" => Ok(Share::Mine),
            "taken" => Ok(Share::Taken),
            "done" => Ok(Share::Done),
            other => {
                Err(ErrorKind::Server(format!("unexpected answer to a claim: {other}")).into())
            }
        }
    }

    /// Says share `share` is done: queued whole (see [`Store::claim_share`]).
    pub(crate) async fn share_done(&self, share: &str) -> Result<(), Error> {
        let mut cmd = redis::cmd("HSET");
        cmd.arg(self.shares_key()).arg(share).arg("done");
        self.query::<i64>(&cmd).await.map(drop)
    }

    /// The crawl as stored, or `None` when no crawl of this name exists.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "nothing-here").await?;
    /// assert!(store.load().await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn load(&self) -> Result<Option<Stored>, Error> {
        let mut cmd = redis::cmd("HGETALL");
        cmd.arg(self.meta_key());
        let meta: HashMap<String, String> = self.query(&cmd).await?;
        if meta.is_empty() {
            return Ok(None);
        }
        self.stored(meta).await.map(Some)
    }

    /// Creates the crawl with `layout`, `settings` and `seeds` unless one of this name exists,
    /// and answers the crawl as stored: the existing one's layout, settings and seeds win, so
    /// that every process started with the same command agrees with the first, and a process
    /// started at the same instant as the first sees its seeds.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let seeds = ["https://example.com/".to_owned()];
    /// let first = store.create(shared::Layout::default(), "A", &seeds).await?;
    /// let again = store.create(shared::Layout::default(), "B", &[]).await?;
    /// assert_eq!(again.settings, "A");
    /// assert_eq!(again.seeds, seeds);
    /// assert_eq!(first.layout.key, again.layout.key);
    /// # Ok(()) }
    /// ```
    pub async fn create(
        &self,
        layout: Layout,
        settings: &str,
        seeds: &[String],
    ) -> Result<Stored, Error> {
        if layout.content_buckets > MAX_CONTENT_BUCKETS {
            return Err(ErrorKind::BadLayout(format!(
                "{} content buckets: at most {MAX_CONTENT_BUCKETS}",
                layout.content_buckets
            ))
            .into());
        }
        let script = redis::Script::new(include_str!("../scripts/create_crawl.lua"));
        let mut invocation = script.key(self.meta_key());
        invocation
            .arg("version")
            .arg(VERSION)
            .arg("buckets")
            .arg(layout.buckets)
            .arg("seen_initial_capacity")
            .arg(layout.seen_initial_capacity)
            .arg("seen_rate")
            .arg(layout.seen_rate.to_string())
            .arg("key")
            .arg(hex(&layout.key))
            .arg("buckets_by")
            .arg(layout.buckets_by.as_str())
            .arg("content_buckets")
            .arg(layout.content_buckets)
            .arg("slots")
            .arg(if layout.even_slots { "even" } else { "hashed" })
            .arg("settings")
            .arg(settings)
            // In the record itself, written in the same step: the seeds' set is another key,
            // of another hash slot on a cluster.
            .arg("created_with_seeds")
            .arg(seeds.join("\n"));
        let meta: HashMap<String, String> = self.eval(&invocation).await?;
        self.stored(meta).await
    }

    /// Adds seeds to the crawl's list, read by processes that join it (their scope).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// store.add_seeds(&["https://example.com/".to_owned()]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_seeds(&self, seeds: &[String]) -> Result<(), Error> {
        if seeds.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("SADD");
        cmd.arg(self.seeds_key()).arg(seeds);
        let added: i64 = self.query(&cmd).await?;
        if added > 0 {
            // New seeds: the crawl has work again.
            let mut cmd = redis::cmd("HDEL");
            cmd.arg(self.meta_key()).arg("finished");
            self.query::<i64>(&cmd).await?;
        }
        Ok(())
    }

    /// Marks the crawl finished (nothing queued or leased anywhere): a process started
    /// later with the seeds the crawl has is told so ([`Stored::finished`]) rather than
    /// crawl nothing.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// store.mark_finished().await?;
    /// assert!(store.load().await?.unwrap().finished.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn mark_finished(&self) -> Result<(), Error> {
        let now = unix_millis();
        let script = redis::Script::new(include_str!("../scripts/mark_finished.lua"));
        let mut invocation = script.key(self.meta_key());
        invocation.arg(now);
        self.eval::<i64>(&invocation).await.map(drop)
    }

    /// The crawl's epoch: 0 until a process finds that Redis went back to an older state
    /// and bumps it ([`Store::bump_epoch`]). Any change tells a process to forget what it
    /// remembers of the crawl.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let before = store.epoch().await?;
    /// store.bump_epoch().await?;
    /// assert_ne!(store.epoch().await?, before);
    /// # Ok(()) }
    /// ```
    pub async fn epoch(&self) -> Result<i64, Error> {
        let mut cmd = redis::cmd("HGET");
        cmd.arg(self.meta_key()).arg("epoch");
        let epoch: Option<i64> = self.query(&cmd).await?;
        Ok(epoch.unwrap_or(0))
    }

    /// The crawl's epoch ([`Store::epoch`]), and whether a process found the crawl over
    /// (`finished` in its record), in one read: what each heartbeat looks at.
    pub(crate) async fn epoch_and_finished(&self) -> Result<(i64, bool), Error> {
        let mut cmd = redis::cmd("HMGET");
        cmd.arg(self.meta_key()).arg("epoch").arg("finished");
        let (epoch, finished): (Option<i64>, Option<String>) = self.query(&cmd).await?;
        Ok((epoch.unwrap_or(0), finished.is_some()))
    }

    /// Bumps the crawl's epoch ([`Store::epoch`]), if the crawl exists.
    ///
    /// # Example
    ///
    /// See [`Store::epoch`].
    pub async fn bump_epoch(&self) -> Result<(), Error> {
        let script = redis::Script::new(include_str!("../scripts/bump_epoch.lua"));
        let invocation = script.key(self.meta_key());
        self.eval::<i64>(&invocation).await.map(drop)
    }

    /// Removes every key of the crawl: its record is marked as being removed first (so that
    /// no process joins what is being removed, and a removal cut short is run again, knowing
    /// the buckets), then its buckets' keys go in batches, by `SCAN` on one server, by each
    /// bucket's hash slot on a cluster (no other crawl's key is touched), and the record
    /// last. Refused
    /// while a process of the crawl is present (it would write keys back). Answers how many
    /// keys were removed; 0 when there was no such crawl.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let removed = store.remove().await?;
    /// println!("{removed} keys removed");
    /// assert!(store.load().await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn remove(&self) -> Result<u64, Error> {
        let Some(stored) = self.load().await? else {
            return Ok(0);
        };
        let script = redis::Script::new(include_str!("../scripts/count_present.lua"));
        let mut invocation = script.key(self.procs_key());
        invocation.arg(PRESENT_FOR.as_millis() as u64);
        let present: u64 = self.eval(&invocation).await?;
        if present > 0 {
            return Err(ErrorKind::InUse(present).into());
        }
        let mut mark = redis::cmd("HSET");
        mark.arg(self.meta_key()).arg("removing").arg(1);
        self.query::<i64>(&mark).await?;
        let mut removed = 0;
        for key in [
            self.seeds_key(),
            self.redirect_targets_key(),
            self.procs_key(),
            self.shares_key(),
        ] {
            removed += self.unlink(&[key]).await?;
        }
        if self.is_cluster() {
            let layout = &stored.layout;
            for bucket in 0..layout.buckets + layout.content_buckets {
                removed += self.remove_bucket(bucket).await?;
            }
        } else {
            // Every key of the crawl begins with `NAME:` or `{NAME:` (its buckets' tag);
            // the record goes last.
            let meta = self.meta_key();
            for pattern in [format!("{}:*", self.name), format!("{{{}:*", self.name)] {
                let mut cursor = 0u64;
                loop {
                    let mut cmd = redis::cmd("SCAN");
                    cmd.arg(cursor)
                        .arg("MATCH")
                        .arg(&pattern)
                        .arg("COUNT")
                        .arg(1000);
                    let (next, mut keys): (u64, Vec<String>) = self.query(&cmd).await?;
                    keys.retain(|key| *key != meta);
                    removed += self.unlink(&keys).await?;
                    cursor = next;
                    if cursor == 0 {
                        break;
                    }
                }
            }
        }
        removed += self.unlink(&[self.meta_key()]).await?;
        Ok(removed)
    }

    /// Removes a bucket's keys on a cluster: they all sit in the hash slot of its tag, which
    /// other crawls' keys may share.
    async fn remove_bucket(&self, bucket: u32) -> Result<u64, Error> {
        let tag = self.tag(bucket);
        let prefix = format!("{tag}:");
        let mut cmd = redis::cmd("CLUSTER");
        cmd.arg("KEYSLOT").arg(&tag);
        let slot: u64 = self.query(&cmd).await?;
        let mut removed = 0;
        let mut count = 1000u64;
        loop {
            let mut cmd = redis::cmd("CLUSTER");
            cmd.arg("GETKEYSINSLOT").arg(slot).arg(count);
            let keys: Vec<String> = self.query(&cmd).await?;
            let ours: Vec<String> = keys
                .iter()
                .filter(|k| k.starts_with(&prefix))
                .cloned()
                .collect();
            if ours.is_empty() {
                if (keys.len() as u64) < count {
                    return Ok(removed);
                }
                // Other crawls' keys come first in this slot: look further.
                count *= 2;
                continue;
            }
            removed += self.unlink(&ours).await?;
        }
    }

    /// Unlinks keys (one slot's, on a cluster); answers how many there were.
    async fn unlink(&self, keys: &[String]) -> Result<u64, Error> {
        if keys.is_empty() {
            return Ok(0);
        }
        let mut cmd = redis::cmd("UNLINK");
        cmd.arg(keys);
        self.query(&cmd).await
    }

    /// Adds targets of the seeds' redirects, read by processes that join the crawl: in their
    /// scope, kept apart from the seeds a user gave ([`Stored::redirect_targets`]), because
    /// a server chose them.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// store.add_redirect_targets(&["https://www.example.com/".to_owned()]).await?;
    /// # Ok(()) }
    /// ```
    pub async fn add_redirect_targets(&self, targets: &[String]) -> Result<(), Error> {
        if targets.is_empty() {
            return Ok(());
        }
        let mut cmd = redis::cmd("SADD");
        cmd.arg(self.redirect_targets_key()).arg(targets);
        self.query::<i64>(&cmd).await.map(drop)
    }

    /// The targets of the seeds' redirects, if there are more than `known` (their count
    /// first, so that a process that knows them all reads one number).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// if let Some(targets) = store.redirect_targets_beyond(0).await? {
    ///     println!("{} hosts joined the scope", targets.len());
    /// }
    /// # Ok(()) }
    /// ```
    pub async fn redirect_targets_beyond(
        &self,
        known: usize,
    ) -> Result<Option<Vec<String>>, Error> {
        let mut cmd = redis::cmd("SCARD");
        cmd.arg(self.redirect_targets_key());
        let count: usize = self.query(&cmd).await?;
        if count <= known {
            return Ok(None);
        }
        let mut cmd = redis::cmd("SMEMBERS");
        cmd.arg(self.redirect_targets_key());
        self.query(&cmd).await.map(Some)
    }

    async fn stored(&self, meta: HashMap<String, String>) -> Result<Stored, Error> {
        let field = |name: &str| {
            meta.get(name)
                .ok_or_else(|| Error::from(ErrorKind::BadLayout(format!("no field {name}"))))
        };
        let bad = |name: &str| Error::from(ErrorKind::BadLayout(format!("bad field {name}")));
        let version = field("version")?;
        if version != VERSION {
            return Err(ErrorKind::BadLayout(format!(
                "version {version}, which this crawler cannot work on (it writes version \
                 {VERSION}): finish that crawl with the crawler that started it, or start \
                 another under a new crawl name"
            ))
            .into());
        }
        let layout = Layout {
            buckets: field("buckets")?
                .parse()
                .ok()
                .filter(|&b| b > 0)
                .ok_or_else(|| bad("buckets"))?,
            seen_initial_capacity: field("seen_initial_capacity")?
                .parse()
                .ok()
                .filter(|&n| n > 0)
                .ok_or_else(|| bad("seen_initial_capacity"))?,
            seen_rate: field("seen_rate")?
                .parse()
                .ok()
                .filter(|r: &f64| *r > 0.0 && *r < 1.0)
                .ok_or_else(|| bad("seen_rate"))?,
            key: unhex(field("key")?).ok_or_else(|| bad("key"))?,
            // Absent from the crawls of earlier versions, which kept hosts by host.
            buckets_by: match meta.get("buckets_by").map(String::as_str) {
                None => BucketsBy::Host,
                Some(by) => BucketsBy::from_str(by).ok_or_else(|| bad("buckets_by"))?,
            },
            content_buckets: field("content_buckets")?
                .parse()
                .ok()
                .filter(|&n| n <= MAX_CONTENT_BUCKETS)
                .ok_or_else(|| bad("content_buckets"))?,
            // Absent from the crawls of earlier versions, whose tags were hashed.
            even_slots: match meta.get("slots").map(String::as_str) {
                None | Some("hashed") => false,
                Some("even") => true,
                Some(_) => return Err(bad("slots")),
            },
        };
        self.use_layout(&layout);
        let mut cmd = redis::cmd("SMEMBERS");
        cmd.arg(self.seeds_key());
        let mut seeds: Vec<String> = self.query(&cmd).await?;
        if let Some(first) = meta.get("created_with_seeds") {
            seeds.extend(first.lines().filter(|s| !s.is_empty()).map(str::to_owned));
        }
        seeds.sort();
        seeds.dedup();
        let mut cmd = redis::cmd("SMEMBERS");
        cmd.arg(self.redirect_targets_key());
        let mut redirect_targets: Vec<String> = self.query(&cmd).await?;
        redirect_targets.sort();
        Ok(Stored {
            layout,
            settings: field("settings")?.clone(),
            seeds,
            redirect_targets,
            finished: meta.get("finished").and_then(|t| t.parse().ok()),
            removing: meta.contains_key("removing"),
        })
    }
}
