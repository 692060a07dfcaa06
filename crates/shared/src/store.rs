//! The connection to Redis (one server or a cluster) and its retries. The crawl's own
//! record (its layout, settings, seeds, epoch and end) is read and written through it in
//! `record.rs`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use redis::cluster_async::ClusterConnection;
use redis::{Cmd, FromRedisValue, RedisError, ScriptInvocation};

use crate::scripts::{Call, Library};

use crate::{Error, ErrorKind};

mod record;

/// A new crawl's buckets, on one server or a cluster (see [`Store::default_buckets`]), and
/// [`Layout::default`]'s.
const DEFAULT_BUCKETS: u32 = 16;

pub(crate) use record::Share;
pub use record::{BucketsBy, Layout, Stored};

/// How long a request is retried while the server is unreachable (restarting, a network
/// blip) or refuses writes (out of memory) before the error is the caller's.
const RETRY_FOR: Duration = Duration::from_secs(120);
/// How long a request waits for its answer before it is sent again: a third of the default
/// lease time (`redis.lease_time`, 30 s). A request whose answer never comes (seen once in a
/// few hundred runs, after a cluster client's slot refresh) holds the heartbeat behind it;
/// waited out for a whole lease time, it let every lease the process held expire, and their
/// pages were fetched twice. Cut at a third, it is sent again in time for the renewal.
pub(crate) const RESPONSE_TIMEOUT: Duration = Duration::from_secs(10);
/// A process not heard of for this long is gone: it owns no bucket, and a crawl it was part
/// of may be removed.
pub(crate) const PRESENT_FOR: Duration = Duration::from_secs(5);

/// A connection to the server or the cluster; cheap to clone, shared by every task.
#[derive(Clone)]
enum Conn {
    Single(ConnectionManager),
    Cluster(ClusterConnection),
}

impl Conn {
    /// Sends one command on whichever connection this is.
    async fn query<T: FromRedisValue>(self, cmd: &Cmd) -> redis::RedisResult<T> {
        match self {
            Conn::Single(mut c) => cmd.query_async(&mut c).await,
            Conn::Cluster(mut c) => cmd.query_async(&mut c).await,
        }
    }
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

/// The groups addresses' politeness keys go to on a cluster, spread over its masters as
/// buckets are (on a single server, one: every address's requests of a process can then go
/// in one script; an address asked a turn at a time cost a script of its own, 176,000
/// instructions, docs/benchmarks.md 2026-12-06).
pub(crate) const ADDRESS_GROUPS: u32 = 16;

/// The connection to the Redis server (or cluster) that holds a crawl, and the crawl's name.
///
/// # Example
///
/// ```no_run
/// # async fn f() -> Result<(), shared::Error> {
/// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
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
    /// The buckets' hash tags when the crawl's layout chose them ([`Layout::even_slots`]),
    /// set when its record is read or created ([`Store::use_layout`]).
    tags: Arc<std::sync::RwLock<Option<Tags>>>,
}

/// A crawl's bucket tags chosen for even slots, and the bucket counts they were chosen for.
struct Tags {
    buckets: u32,
    content_buckets: u32,
    tags: Vec<String>,
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
    /// let err = shared::Store::connect("redis://127.0.0.1:1", "crawl").await.err().unwrap();
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
                    detail: connect_detail(&err),
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
            tags: Arc::default(),
        };
        store.check_server().await;
        store.refuse_eviction().await?;
        store.check_intsets().await;
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

    /// The seen-test keeps its fingerprints in sets of a few hundred integers, which Redis
    /// stores as intsets (4 bytes each) up to `set-max-intset-entries`; a server set below
    /// Redis's default keeps them as hash tables, about ten times larger: said in the log,
    /// as the crawl is correct all the same.
    async fn check_intsets(&self) {
        let mut cmd = redis::cmd("CONFIG");
        cmd.arg("GET").arg("set-max-intset-entries");
        let Ok(answer) = self.query::<Vec<String>>(&cmd).await else {
            return;
        };
        if let Some(entries) = answer.get(1).and_then(|n| n.parse::<u64>().ok())
            && entries < crate::seen::INTSET_ENTRIES
        {
            tracing::warn!(
                "Redis's set-max-intset-entries is {entries}: the seen-test's sets of up to \
                 some 350 URLs will take about ten times their memory; {} (Redis's default) \
                 or more keeps them at 4 bytes a URL",
                crate::seen::INTSET_ENTRIES
            );
        }
    }

    /// The crawl's name.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
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
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let before = store.requests();
    /// store.load().await?;
    /// assert!(store.requests() > before);
    /// # Ok(()) }
    /// ```
    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::Relaxed)
    }

    /// The processes working on the crawl, by when each last said so.
    pub(crate) fn procs_key(&self) -> String {
        format!("{}:procs", self.name)
    }

    /// The buckets a new crawl's hosts are hashed into unless its creator says otherwise:
    /// 16, on one server or a cluster. Each bucket's scripts take the pages that wait while
    /// its previous one runs, so fewer, busier buckets put more pages in a script: a
    /// 3-master cluster's masters together executed 1.04 to 1.11 times one server's
    /// instructions at 16, 1.23 to 1.30 at 32 (`docs/benchmarks.md`, 2026-12-07). A cluster
    /// spreads 32 more evenly over its masters (its busiest holds 6 of 16 buckets, 11 of
    /// 32), but at 16 the busiest still did less (some 790 M instructions against 900 to
    /// 950 M). A bucket is leased by one process at a time, so at most as many processes as
    /// buckets share a crawl's work: a crawl meant for more is created with more.
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// let layout = shared::Layout {
    ///     buckets: store.default_buckets(),
    ///     ..shared::Layout::default()
    /// };
    /// # Ok(()) }
    /// ```
    pub fn default_buckets(&self) -> u32 {
        DEFAULT_BUCKETS
    }

    /// Whether the store is a Redis Cluster.
    pub(crate) fn is_cluster(&self) -> bool {
        matches!(self.link.maker, Maker::Cluster(_))
    }

    /// The key prefix of bucket `bucket`: its hash tag, so that every key of it is in one
    /// slot (`{NAME:BUCKET}`, or, for a crawl of [`Layout::even_slots`], `{NAME:BUCKET}` or
    /// `{NAME:BUCKET:SALT}`, whichever puts it in its share of the slots), for tools that read
    /// a crawl's keys. Known once the crawl's record was read ([`Store::load`],
    /// [`Store::create`]).
    ///
    /// # Example
    ///
    /// ```no_run
    /// # async fn f() -> Result<(), shared::Error> {
    /// let store = shared::Store::connect("redis://127.0.0.1:6379", "docs").await?;
    /// store.load().await?;
    /// println!("bucket 3's queues: {}:q:*", store.tag(3));
    /// # Ok(()) }
    /// ```
    pub fn tag(&self, bucket: u32) -> String {
        let tags = self.tags.read().unwrap_or_else(PoisonError::into_inner);
        match tags.as_ref().and_then(|t| t.tags.get(bucket as usize)) {
            Some(tag) => tag.clone(),
            None => plain_tag(&self.name, bucket),
        }
    }

    /// Takes the buckets' tags of a crawl of `layout` (see [`Layout::even_slots`]); the
    /// search for them runs once for a layout, however many times its record is read.
    pub(crate) fn use_layout(&self, layout: &Layout) {
        let (buckets, content_buckets) = (layout.buckets, layout.content_buckets);
        let mut held = self.tags.write().unwrap_or_else(PoisonError::into_inner);
        let same = |t: &Tags| (t.buckets, t.content_buckets) == (buckets, content_buckets);
        if layout.even_slots && held.as_ref().is_some_and(same) {
            return;
        }
        *held = layout
            .even_slots
            .then(|| even_tags(&self.name, buckets, content_buckets))
            .flatten()
            .map(|tags| Tags {
                buckets,
                content_buckets,
                tags,
            });
    }

    /// The group of an IP address's politeness (see [`ADDRESS_GROUPS`]): one script of a
    /// process carries the requests of many addresses of one group.
    pub(crate) fn address_group(&self, address: std::net::IpAddr) -> u32 {
        if !self.is_cluster() {
            return 0;
        }
        // FNV-1a of its octets: the same group in every process.
        let octets = match address {
            std::net::IpAddr::V4(v4) => v4.to_ipv6_mapped().octets(),
            std::net::IpAddr::V6(v6) => v6.octets(),
        };
        let hash = octets.iter().fold(0x811c_9dc5_u32, |h, &b| {
            (h ^ u32::from(b)).wrapping_mul(0x0100_0193)
        });
        hash % ADDRESS_GROUPS
    }

    /// The hash tag of an address group's keys.
    pub(crate) fn address_tag(&self, group: u32) -> String {
        format!("{{{}:a:{group}}}", self.name)
    }

    /// Sends a command, retrying while the server is unreachable or full.
    pub(crate) async fn query<T: FromRedisValue>(&self, cmd: &Cmd) -> Result<T, Error> {
        self.retrying(|conn| conn.query(cmd)).await
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

    /// Calls a function of the library, retrying while the server is unreachable or full,
    /// and loading the library into a server that lacks it.
    pub(crate) async fn invoke<T: FromRedisValue>(
        &self,
        call: &Call<'_>,
        library: &Library,
    ) -> Result<T, Error> {
        let cmd = &call.cmd();
        self.retrying(|conn| async move {
            match conn.clone().query(cmd).await {
                // Not run: loaded (on every master of a cluster), then called again. The
                // library's code (some 40 KB) is copied into a command only then.
                Err(err) if Library::missing(&err) => {
                    conn.clone().query::<redis::Value>(&library.load()).await?;
                    conn.query(cmd).await
                }
                answer => answer,
            }
        })
        .await
    }

    /// Runs a script, retrying while the server is unreachable or full.
    pub(crate) async fn eval<T: FromRedisValue>(
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
                let mut said = err.to_string();
                if err.code() == Some("NOPERM") {
                    // A user restricted by ACL: what the frontier needs of it.
                    said.push_str(
                        " (the shared frontier's Redis user needs FCALL and FUNCTION LOAD, and \
                         the data commands its scripts run)",
                    );
                } else if said.contains("unknown command") && said.contains("FCALL") {
                    // Functions came with Redis 7.0.
                    said.push_str(" (the shared frontier needs Redis 7 or later)");
                }
                return Err(ErrorKind::Server(said).into());
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

/// What a failed connection's error says, for a person: the client's words, on one line;
/// but a server that answers something else than Redis's protocol (an HTTP server on that
/// port, say) gets a sentence, not the parser's bytes.
fn connect_detail(err: &RedisError) -> String {
    match err.kind() {
        redis::ErrorKind::Parse | redis::ErrorKind::UnexpectedReturnType => {
            "what answers there does not speak Redis's protocol: is this the port of a Redis \
             server?"
                .to_owned()
        }
        _ => err.to_string().replace('\n', " "),
    }
}

/// Whether a Redis URL carries a password (`redis://:PW@host`, `redis://USER:PW@host`).
fn url_has_password(url: &str) -> bool {
    frontier::Url::parse(url).is_ok_and(|u| u.password().is_some())
}

/// The hash tag of bucket `bucket` of the crawl `name`, as crawls before even slots have them.
fn plain_tag(name: &str, bucket: u32) -> String {
    format!("{{{name}:{bucket}}}")
}

/// Redis Cluster's hash slots.
const SLOTS: u32 = 16_384;

/// The hash slot of a hash tag's text: CRC16 (XMODEM) modulo 16,384, as Redis Cluster
/// computes it (`CLUSTER KEYSLOT`).
fn slot_of(text: &[u8]) -> u32 {
    u32::from(crc16::State::<crc16::XMODEM>::calculate(text)) % SLOTS
}

/// Buckets of a kind (hosts', content) up to which their tags are chosen for evenly spaced
/// slots: past it, hashed tags fall on a cluster's masters within a tenth or so of even
/// anyway, and the search would take longer (some 2,000 tags hashed a bucket at 256).
const EVEN_SLOTS_UP_TO: u32 = 256;

/// The buckets' hash tags of the crawl `name`, chosen so that each kind's slots are evenly
/// spaced over the 16,384 (the content buckets', after the hosts', half a share on), so
/// that a cluster whose masters hold equal ranges of slots (as `redis-cli --cluster create`
/// makes it) holds each kind's share give or take one, where hashed tags left the busiest
/// of three masters 1.22 times its share of 32 buckets (docs/benchmarks.md). A bucket's
/// slot is in the middle eighth of its share of the slots, so that a share a master's range
/// ends in goes to the master its middle is in. Its tag is `{NAME:I}` when that fits, else
/// `{NAME:I:S}` for the first S that does. None past [`EVEN_SLOTS_UP_TO`] buckets of a kind.
fn even_tags(name: &str, buckets: u32, content: u32) -> Option<Vec<String>> {
    if buckets > EVEN_SLOTS_UP_TO || content > EVEN_SLOTS_UP_TO {
        return None;
    }
    let mut tags = Vec::with_capacity((buckets + content) as usize);
    for (first, n, shift) in [(0, buckets, 0), (buckets, content, 1)] {
        if n == 0 {
            continue;
        }
        let width = SLOTS / n;
        let middle = (width / 8).max(1);
        for k in 0..n {
            let bucket = first + k;
            let start = (k * SLOTS / n + shift * width / 2 + (width - middle) / 2) % SLOTS;
            let fits = |text: &str| (slot_of(text.as_bytes()) + SLOTS - start) % SLOTS < middle;
            let plain = format!("{name}:{bucket}");
            // Some salt fits within a few times SLOTS / middle tries (some 2,000 at most
            // here); the bound only makes the loop's end plain.
            let text = std::iter::once(plain.clone())
                .chain((1..=64 * SLOTS).map(|salt| format!("{plain}:{salt}")))
                .find(|text| fits(text))?;
            tags.push(format!("{{{text}}}"));
        }
    }
    Some(tags)
}

#[cfg(test)]
mod tests {
    use super::{EVEN_SLOTS_UP_TO, SLOTS, even_tags, plain_tag, slot_of};

    #[test]
    fn a_slot_is_redis_clusters() {
        // CRC16/XMODEM's check value, and slots `CLUSTER KEYSLOT` answers.
        assert_eq!(slot_of(b"123456789"), 0x31c3);
        assert_eq!(slot_of(b"foo"), 12182);
        assert_eq!(slot_of(b"somekey"), 11058);
    }

    /// The masters of a 3-master cluster as `redis-cli --cluster create` splits the slots.
    fn master_of(slot: u32) -> usize {
        match slot {
            0..=5460 => 0,
            5461..=10922 => 1,
            _ => 2,
        }
    }

    #[test]
    fn even_tags_give_each_master_of_three_its_share_of_each_kind() {
        for i in 0..200 {
            let name = format!("crawl-{i}");
            let tags = even_tags(&name, 32, 4).expect("tags");
            assert_eq!(tags.len(), 36);
            let mut hosts = [0; 3];
            let mut content = [0; 3];
            for (bucket, tag) in tags.iter().enumerate() {
                let text = tag
                    .strip_prefix('{')
                    .and_then(|t| t.strip_suffix('}'))
                    .unwrap();
                assert!(text.starts_with(&format!("{name}:{bucket}")), "{tag}");
                let master = master_of(slot_of(text.as_bytes()));
                if bucket < 32 {
                    hosts[master] += 1
                } else {
                    content[master] += 1
                }
            }
            assert!(
                hosts.iter().all(|&n| (10..=11).contains(&n)),
                "{name}: {hosts:?}"
            );
            assert!(content.iter().all(|&n| n <= 2), "{name}: {content:?}");
            let mut distinct = tags.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), tags.len());
        }
    }

    #[test]
    fn a_bucket_in_its_share_keeps_the_plain_tag_and_many_buckets_stay_hashed() {
        // A tag in its bucket's share keeps its plain form.
        let tags = even_tags("c", 1, 0).expect("tags");
        let slot = slot_of(b"c:0");
        let fits = (SLOTS * 7 / 16..SLOTS * 9 / 16).contains(&slot);
        assert_eq!(tags[0] == plain_tag("c", 0), fits, "{tags:?}");
        assert!(even_tags("c", EVEN_SLOTS_UP_TO + 1, 0).is_none());
        let many = even_tags("c", EVEN_SLOTS_UP_TO, 0).expect("tags");
        for (k, tag) in many.iter().enumerate() {
            let slot = slot_of(tag.trim_matches(['{', '}']).as_bytes());
            let width = SLOTS / EVEN_SLOTS_UP_TO;
            assert_eq!(slot / width, k as u32, "{tag}");
            let within = slot % width;
            assert!((width * 7 / 16..width * 9 / 16).contains(&within), "{tag}");
        }
    }
}
