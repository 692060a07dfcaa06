//! The connection to Redis (one server or a cluster), its retries, and the crawl's own
//! record: its layout, its settings, its seeds.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, FromRedisValue, RedisError, ScriptInvocation};

use crate::{Error, ErrorKind};

/// How long a request is retried while the server is unreachable (restarting, a network
/// blip) or refuses writes (out of memory) before the error is the caller's.
const RETRY_FOR: Duration = Duration::from_secs(120);
/// How long a request waits for its answer before it is sent again: a third of the default
/// lease time (`redis.lease_time`, 30 s). A request whose answer never comes (seen once in a
/// few hundred runs, after a cluster client's slot refresh) holds the heartbeat behind it;
/// waited out for a whole lease time, it let every lease the process held expire, and their
/// pages were fetched twice. Cut at a third, it is sent again in time for the renewal.
const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// A process not heard of for this long is gone: it owns no bucket, and a crawl it was part
/// of may be removed.
pub(crate) const PRESENT_FOR: Duration = Duration::from_secs(5);

/// The version of the keys' layout a crawl is stored in. 4: a queue entry may end with a memo
/// (`~` and base64), which version 3 would take for part of the referrer; 3: the seen-test a
/// cuckoo filter of fingerprints (version 2 was a Bloom filter in 64-byte blocks, version 1
/// one of single bits).
const VERSION: &str = "4";

/// A connection to the server or the cluster; cheap to clone, shared by every task.
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

/// The connection requests go through, and how to make it anew. A request that timed out
/// may have been sent on a connection that will never answer again, every request after it
/// timing out too until the connection is replaced: a cluster client left waiting during a
/// reshard, or a server gone without a reset (its process killed behind a proxy, a firewall
/// that dropped the connection's state), which neither answers nor closes.
struct Link {
    /// What makes a connection.
    maker: Maker,
    /// The connection in use, and how many were made before it: a request that timed out
    /// replaces the one it was sent on, not one another request made since.
    conn: std::sync::Mutex<(u64, Conn)>,
}

/// What makes a connection to the server or the cluster.
enum Maker {
    Single(redis::Client, ConnectionManagerConfig),
    Cluster(redis::cluster::ClusterClient),
}

impl Link {
    /// The connection in use, and its generation.
    fn get(&self) -> (u64, Conn) {
        self.conn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// Replaces the connection of generation `sent_on`, unless it was replaced already. A
    /// connection that cannot be made now leaves the old one, for the next timeout to try.
    async fn renew(&self, sent_on: u64) {
        if self.get().0 != sent_on {
            return;
        }
        let fresh = match &self.maker {
            Maker::Single(client, config) => client
                .get_connection_manager_with_config(config.clone())
                .await
                .map(Conn::Single),
            Maker::Cluster(client) => client.get_async_connection().await.map(Conn::Cluster),
        };
        let Ok(fresh) = fresh else { return };
        let mut conn = self.conn.lock().unwrap_or_else(PoisonError::into_inner);
        if conn.0 == sent_on {
            *conn = (sent_on + 1, fresh);
        }
    }
}

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
/// # async fn f() -> Result<(), frontier_redis::Error> {
/// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "crawl").await?;
/// let crawl = store.create(frontier_redis::Layout::default(), "{\"delay\":1}", &[]).await?;
/// assert_eq!(crawl.layout.buckets, 64);
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
/// let layout = frontier_redis::Layout { buckets: 16, ..frontier_redis::Layout::default() };
/// assert_eq!(layout.seen_rate, 1e-6);
/// ```
#[derive(Clone, Debug, PartialEq)]
pub struct Layout {
    /// Buckets hosts are hashed into. Each bucket's keys share one hash slot, so a script
    /// touches one slot; more buckets spread a cluster's load more evenly. Default: 64.
    pub buckets: u32,
    /// URLs the seen-test holds before it first grows, over all buckets (each takes at least
    /// 1,024). Default: 65,536: it grows in steps of 1.5, and a small start keeps its bytes
    /// per URL near their mean at any size.
    pub seen_initial_capacity: u64,
    /// The seen-test's target false-positive rate. Default: 1e-6.
    pub seen_rate: f64,
    /// The key of the SipHash the URLs and hosts are hashed with: random per crawl, so that
    /// no page can pick URLs that collide in it.
    pub key: [u8; 16],
    /// Hosts go to buckets by their registrable domain rather than by host, so that one
    /// script counts a domain's hosts and pages (the domain budgets need it). Default:
    /// false, which spreads the hosts of one large domain (a blog platform's) over the
    /// buckets.
    pub by_domain: bool,
}

impl Default for Layout {
    fn default() -> Layout {
        let mut key = [0; 16];
        // Without the system's randomness the crawl is still correct, only predictable.
        let _ = getrandom::fill(&mut key);
        Layout {
            buckets: 64,
            seen_initial_capacity: 65_536,
            seen_rate: 1e-6,
            key,
            by_domain: false,
        }
    }
}

/// The connection to the Redis server (or cluster) that holds a crawl, and the crawl's name.
///
/// # Example
///
/// ```no_run
/// # async fn f() -> Result<(), frontier_redis::Error> {
/// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
/// match store.load().await? {
///     Some(crawl) => println!("joining a crawl of {} seeds", crawl.seeds.len()),
///     None => println!("no crawl named docs yet"),
/// }
/// # Ok(()) }
/// ```
#[derive(Clone)]
pub struct Store {
    link: Arc<Link>,
    /// The server's URL for messages, its password hidden.
    url: String,
    name: String,
    /// Requests sent, retries included: the round trips the crawl costs.
    requests: Arc<AtomicU64>,
    /// Requests are failing and being retried, and this was said: the next success says the
    /// server answers again. Shared by the clones, so that a blip is one line, not one per
    /// request waiting it out.
    troubled: Arc<AtomicBool>,
    /// The server's identity (its run id and replication id) as last read, on one server:
    /// another one after a blip means a restart or a replica promoted, whose state may be
    /// older than what the processes remember.
    server: Arc<tokio::sync::Mutex<Option<String>>>,
    /// How many times the identity changed.
    server_changes: Arc<AtomicU64>,
    /// A request failed for want of the server: its identity is read again before the next.
    recheck: Arc<AtomicBool>,
    /// When this store connected, and when (in ms after that) the server last answered
    /// again after a blip.
    connected: tokio::time::Instant,
    recovered: Arc<AtomicU64>,
}

impl Store {
    /// Connects to the server at `url` (`redis://HOST:PORT[/DB]`), finds out whether it is a
    /// cluster node (then the whole cluster is used), and checks that it will not evict the
    /// crawl's keys. `name` keeps several crawls apart on one server.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() {
    /// let err = frontier_redis::Store::connect("redis://127.0.0.1:1", "crawl").await.err().unwrap();
    /// assert!(err.to_string().contains("redis://127.0.0.1:1"));
    /// # }
    /// ```
    pub async fn connect(url: &str, name: &str) -> Result<Store, Error> {
        if name.is_empty()
            || !name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
        {
            return Err(ErrorKind::BadCrawlName(name.to_owned()).into());
        }
        // Shown in errors and logs: never with its password.
        let shown = frontier::redact_url(url).into_owned();
        let unreachable = |err: RedisError| {
            // A server that answers but refuses the password is reachable: say what to fix.
            let auth = err.kind() == redis::ErrorKind::AuthenticationFailed
                || matches!(err.code(), Some("NOAUTH" | "WRONGPASS"));
            Error::from(if auth {
                ErrorKind::Auth {
                    url: shown.clone(),
                    given: url_has_password(url),
                }
            } else {
                ErrorKind::Unreachable {
                    url: shown.clone(),
                    detail: err.to_string(),
                }
            })
        };
        let client = redis::Client::open(url).map_err(unreachable)?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(Duration::from_secs(3)))
            .set_response_timeout(Some(RESPONSE_TIMEOUT))
            .set_number_of_retries(2);
        let mut single = client
            .get_connection_manager_with_config(config.clone())
            .await
            .map_err(unreachable)?;
        let info: String = redis::cmd("INFO")
            .arg("cluster")
            .query_async(&mut single)
            .await
            .map_err(unreachable)?;
        let (maker, conn) = if info.contains("cluster_enabled:1") {
            let client = redis::cluster::ClusterClient::builder(vec![url])
                .connection_timeout(Duration::from_secs(3))
                .response_timeout(RESPONSE_TIMEOUT)
                .build()
                .map_err(unreachable)?;
            let conn = client.get_async_connection().await.map_err(unreachable)?;
            (Maker::Cluster(client), Conn::Cluster(conn))
        } else {
            (Maker::Single(client, config), Conn::Single(single))
        };
        let store = Store {
            link: Arc::new(Link {
                maker,
                conn: std::sync::Mutex::new((0, conn)),
            }),
            url: shown,
            name: name.to_owned(),
            requests: Arc::new(AtomicU64::new(0)),
            troubled: Arc::new(AtomicBool::new(false)),
            server: Arc::new(tokio::sync::Mutex::new(None)),
            server_changes: Arc::new(AtomicU64::new(0)),
            recheck: Arc::new(AtomicBool::new(true)),
            connected: tokio::time::Instant::now(),
            recovered: Arc::new(AtomicU64::new(0)),
        };
        store.check_server().await;
        store.refuse_eviction().await?;
        Ok(store)
    }

    /// The connection a request goes through: on a cluster, the newest made.
    fn connection(&self) -> (u64, Conn) {
        self.link.get()
    }

    /// Milliseconds since this store connected, from 1.
    fn since_connected(&self) -> u64 {
        1 + self.connected.elapsed().as_millis() as u64
    }

    /// How many times the server turned out to be another one (restarted, or a replica
    /// promoted in its place) since this store connected: its state may then be older than
    /// what the processes remember (see `SharedFrontier`).
    pub(crate) fn server_changes(&self) -> u64 {
        self.server_changes.load(Ordering::Relaxed)
    }

    /// Reads the server's identity if a request failed since it was last read, and counts
    /// a change: whether it is known now. On a cluster, whose nodes each have their own,
    /// nothing: a failover there shows in the buckets' counts of changes only.
    async fn check_server(&self) -> bool {
        let (sent_on, Conn::Single(mut conn)) = self.connection() else {
            return true;
        };
        let mut known = self.server.lock().await;
        if !self.recheck.load(Ordering::Relaxed) {
            return true;
        }
        let info = match redis::cmd("INFO")
            .arg("server")
            .arg("replication")
            .query_async::<String>(&mut conn)
            .await
        {
            Ok(info) => info,
            // Not reachable yet: asked again before the next request.
            Err(err) if err.is_io_error() || err.is_connection_dropped() || err.is_timeout() => {
                if err.is_timeout() {
                    self.link.renew(sent_on).await;
                }
                return false;
            }
            Err(_) => {
                // INFO refused (renamed away on a managed server, say): the identity cannot
                // be known, and requests go on without it, as the buckets' counts of
                // changes still show a rollback.
                self.recheck.store(false, Ordering::Relaxed);
                return true;
            }
        };
        let field = |name: &str| {
            info.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .map(str::trim)
                .unwrap_or_default()
                .to_owned()
        };
        let id = format!("{} {}", field("run_id"), field("master_replid"));
        if known.as_ref().is_some_and(|k| *k != id) {
            self.server_changes.fetch_add(1, Ordering::Relaxed);
        }
        *known = Some(id);
        self.recheck.store(false, Ordering::Relaxed);
        true
    }

    /// A server that evicts keys when full would drop queued URLs and seen-test bits
    /// silently; one that refuses writes (`noeviction`) makes the crawl pause instead.
    async fn refuse_eviction(&self) -> Result<(), Error> {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("maxmemory-policy");
        // CONFIG may be renamed away on a managed server: nothing to check then.
        let Ok(answer) = self.query::<Vec<String>>(&cmd).await else {
            return Ok(());
        };
        match answer.get(1).map(String::as_str) {
            None | Some("noeviction") => Ok(()),
            // volatile-* policies evict only keys with a time to live, which the crawl's
            // keys never have.
            Some(policy) if policy.starts_with("volatile-") => Ok(()),
            Some(policy) => Err(ErrorKind::Evicting(policy.to_owned()).into()),
        }
    }

    /// The crawl's name.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// assert_eq!(store.name(), "docs");
    /// # Ok(()) }
    /// ```
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Requests sent to Redis so far by this process, retries included.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let before = store.requests();
    /// store.load().await?;
    /// assert!(store.requests() > before);
    /// # Ok(()) }
    /// ```
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

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
        let script = redis::Script::new(include_str!("scripts/claim_share.lua"));
        let mut invocation = script.key(self.shares_key());
        invocation.arg(share).arg(me).arg(hold.as_millis() as u64);
        let answer: String = self.invoke(&invocation).await?;
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

    /// The processes working on the crawl, by when each last said so.
    pub(crate) fn procs_key(&self) -> String {
        format!("{}:procs", self.name)
    }

    /// Whether the store is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.link.maker, Maker::Cluster(_))
    }

    /// The key prefix of bucket `b`: its hash tag, so that every key of it is in one slot.
    pub(crate) fn tag(&self, bucket: u32) -> String {
        format!("{{{}:{bucket}}}", self.name)
    }

    /// The hash tag of an IP address's keys (politeness per address): its own, so that on a
    /// cluster addresses spread over the masters.
    pub(crate) fn address_tag(&self, address: std::net::IpAddr) -> String {
        format!("{{{}:a:{address}}}", self.name)
    }

    /// The crawl as stored, or `None` when no crawl of this name exists.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "nothing-here").await?;
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
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let seeds = ["https://example.com/".to_owned()];
    /// let first = store.create(frontier_redis::Layout::default(), "A", &seeds).await?;
    /// let again = store.create(frontier_redis::Layout::default(), "B", &[]).await?;
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
        let script = redis::Script::new(include_str!("scripts/create_crawl.lua"));
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
            .arg(if layout.by_domain { "domain" } else { "host" })
            .arg("settings")
            .arg(settings)
            // In the record itself, written in the same step: the seeds' set is another key,
            // of another hash slot on a cluster.
            .arg("created_with_seeds")
            .arg(seeds.join("\n"));
        let meta: HashMap<String, String> = self.invoke(&invocation).await?;
        self.stored(meta).await
    }

    /// Adds seeds to the crawl's list, read by processes that join it (their scope).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
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
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// store.mark_finished().await?;
    /// assert!(store.load().await?.unwrap().finished.is_some());
    /// # Ok(()) }
    /// ```
    pub async fn mark_finished(&self) -> Result<(), Error> {
        let now = unix_millis();
        let script = redis::Script::new(include_str!("scripts/mark_finished.lua"));
        let mut invocation = script.key(self.meta_key());
        invocation.arg(now);
        self.invoke::<i64>(&invocation).await.map(drop)
    }

    /// The crawl's epoch: 0 until a process finds that Redis went back to an older state
    /// and bumps it ([`Store::bump_epoch`]). Any change tells a process to forget what it
    /// remembers of the crawl.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
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

    /// Bumps the crawl's epoch ([`Store::epoch`]), if the crawl exists.
    ///
    /// # Example
    ///
    /// See [`Store::epoch`].
    pub async fn bump_epoch(&self) -> Result<(), Error> {
        let script = redis::Script::new(include_str!("scripts/bump_epoch.lua"));
        let invocation = script.key(self.meta_key());
        self.invoke::<i64>(&invocation).await.map(drop)
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
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let removed = store.remove().await?;
    /// println!("{removed} keys removed");
    /// assert!(store.load().await?.is_none());
    /// # Ok(()) }
    /// ```
    pub async fn remove(&self) -> Result<u64, Error> {
        let Some(stored) = self.load().await? else {
            return Ok(0);
        };
        let script = redis::Script::new(include_str!("scripts/count_present.lua"));
        let mut invocation = script.key(self.procs_key());
        invocation.arg(PRESENT_FOR.as_millis() as u64);
        let present: u64 = self.invoke(&invocation).await?;
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
            for bucket in 0..stored.layout.buckets {
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
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
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
    /// # async fn f() -> Result<(), frontier_redis::Error> {
    /// let store = frontier_redis::Store::connect("redis://127.0.0.1:6379", "docs").await?;
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
            by_domain: match meta.get("buckets_by").map(String::as_str) {
                None | Some("host") => false,
                Some("domain") => true,
                Some(_) => return Err(bad("buckets_by")),
            },
        };
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

    /// Sends a command, retrying while the server is unreachable or full.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T, Error> {
        self.retrying(|conn| async move {
            match conn {
                Conn::Single(mut c) => cmd.query_async(&mut c).await,
                Conn::Cluster(mut c) => cmd.query_async(&mut c).await,
            }
        })
        .await
    }

    /// Sends commands that each stand alone, answering theirs in order: in one round trip
    /// (a pipeline) on a single server; one by one, at once, on a cluster, whose nodes each
    /// hold some of their keys.
    pub(crate) async fn query_each<T: FromRedisValue>(
        &self,
        cmds: &[Cmd],
    ) -> Result<Vec<T>, Error> {
        if self.is_cluster() {
            let each = cmds.iter().map(|cmd| self.query::<T>(cmd));
            return futures_util::future::join_all(each)
                .await
                .into_iter()
                .collect();
        }
        let mut pipe = redis::pipe();
        for cmd in cmds {
            pipe.add_command(cmd.clone());
        }
        let pipe = &pipe;
        self.retrying(|conn| async move {
            match conn {
                Conn::Single(mut c) => pipe.query_async(&mut c).await,
                Conn::Cluster(mut c) => pipe.query_async(&mut c).await,
            }
        })
        .await
    }

    /// Runs a script, retrying while the server is unreachable or full.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        invocation: &ScriptInvocation<'_>,
    ) -> Result<T, Error> {
        self.retrying(|conn| async move {
            match conn {
                Conn::Single(mut c) => invocation.invoke_async(&mut c).await,
                Conn::Cluster(mut c) => invocation.invoke_async(&mut c).await,
            }
        })
        .await
    }

    async fn retrying<T, F: Future<Output = redis::RedisResult<T>>>(
        &self,
        send: impl Fn(Conn) -> F,
    ) -> Result<T, Error> {
        let started = tokio::time::Instant::now();
        let mut wait = Duration::from_millis(50);
        loop {
            // Not sent before the server after a blip is known: it may be another one (a
            // restart from an older snapshot, a promoted replica), which the frontier must
            // learn before any answer of it is taken for the one it knew.
            if self.recheck.load(Ordering::Relaxed) && !self.check_server().await {
                if started.elapsed() > RETRY_FOR {
                    return Err(ErrorKind::Unreachable {
                        url: self.url.clone(),
                        detail: "its identity (INFO) cannot be read".to_owned(),
                    }
                    .into());
                }
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(2));
                continue;
            }
            self.requests.fetch_add(1, Ordering::Relaxed);
            let sent = self.since_connected();
            let (sent_on, conn) = self.connection();
            let result = send(conn).await;
            let err = match result {
                Ok(value) => {
                    // The first request through after a blip says so, for all of them.
                    if self.troubled.swap(false, Ordering::Relaxed) {
                        self.recovered
                            .store(self.since_connected(), Ordering::Relaxed);
                        tracing::warn!("Redis at {} answers again", self.url);
                    }
                    return Ok(value);
                }
                Err(err) => err,
            };
            // A request sent before the server answered again fails with the blip it was
            // sent in: retried, but not a new blip to tell of.
            let straggler = sent <= self.recovered.load(Ordering::Relaxed);
            let out_of_memory = err.code() == Some("OOM");
            let transient = out_of_memory
                || err.is_io_error()
                || err.is_connection_dropped()
                || err.is_timeout()
                || matches!(
                    err.code(),
                    Some("LOADING" | "TRYAGAIN" | "CLUSTERDOWN" | "MASTERDOWN" | "BUSY")
                );
            if !transient {
                return Err(ErrorKind::Server(err.to_string()).into());
            }
            if !out_of_memory {
                self.recheck.store(true, Ordering::Relaxed);
            }
            if err.is_timeout() {
                self.link.renew(sent_on).await;
            }
            if started.elapsed() > RETRY_FOR {
                return Err(if out_of_memory {
                    ErrorKind::Server(err.to_string())
                } else {
                    ErrorKind::Unreachable {
                        url: self.url.clone(),
                        detail: err.to_string(),
                    }
                }
                .into());
            }
            // One line per blip for the whole process, however many requests wait it out.
            if !straggler && !self.troubled.swap(true, Ordering::Relaxed) {
                if out_of_memory {
                    tracing::warn!(
                        "Redis at {} is full (maxmemory): pausing until it has room",
                        self.url
                    );
                } else {
                    tracing::warn!("Redis at {}: {err}; retrying", self.url);
                }
            }
            tokio::time::sleep(wait).await;
            wait = (wait * 2).min(Duration::from_secs(2));
        }
    }
}

/// Milliseconds since the Unix epoch by this machine's clock: what the crawl's record and its
/// robots.txt files are stamped with.
pub(crate) fn unix_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Whether a Redis URL carries a password (`redis://:PW@host`, `redis://USER:PW@host`).
fn url_has_password(url: &str) -> bool {
    frontier::Url::parse(url).is_ok_and(|u| u.password().is_some())
}

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
