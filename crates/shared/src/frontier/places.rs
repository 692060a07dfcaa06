//! Which bucket a host goes to: by its name or its registrable domain (a hash, the same in
//! every process), or, for a crawl bucketed by address ([`BucketsBy::Address`]), by its
//! server's address, found once per host and kept in Redis.
//!
//! A host's bucket must be the same in every process and for ever: its URLs, its state and
//! its seen-test bits live there. An address is not a hash of anything every process has:
//! two resolvers may answer a name differently (round robin, a CDN's view), and a name may
//! move. So the first process to meet a host finds its address with its [`Locate`], hashes
//! that into a bucket and writes it with `HSETNX` to `{tag}:places` (`tag`: the bucket the
//! host's name hashes to, so that places spread over a cluster's masters as hosts do); a
//! process that finds a place written keeps it. Each process keeps the places it knows in
//! memory: a link to a known host costs a map lookup, a host new to the process a read
//! (`HGET`: one round trip for a page's new hosts), one new to the crawl a locate and a
//! second round trip (`HSETNX`; and an `HGET` for the places another process wrote
//! meanwhile, whose locates were spent for nothing). A host that does not resolve (in
//! [`LOCATE_WAIT`]) is placed by its name. After Redis goes back to an older state, a process forgets its places and reads
//! them again; a host placed again there by a process whose resolver answers otherwise may
//! have URLs in two buckets (two schedules of its delay, never a page lost).

use std::collections::HashMap;
use std::future::Future;
use std::hash::Hasher;
use std::net::IpAddr;
use std::pin::Pin;
use std::sync::{Arc, OnceLock, PoisonError, RwLock};
use std::time::Duration;

use frontier::{Canonical, Url};
use futures_util::future::join_all;
use siphasher::sip128::SipHasher13;
use tokio::sync::Semaphore;

use super::Inner;
use super::batch::Link;
use crate::store::BucketsBy;
use crate::{Error, ErrorKind};

/// How long a host's address is looked for when it is placed: past it, the host goes by
/// its name (a server too slow to name is rarely one to group). Short, as a page's
/// completion waits for its links' new hosts.
pub const LOCATE_WAIT: Duration = Duration::from_secs(2);

/// The most lookups a process has under way to place hosts: a long list of seeds, or a page
/// of thousands of new names, asks its resolver a few hundred at a time.
pub(super) const LOCATING: usize = 256;

/// What [`Locate::address_of`] answers, in time.
pub type Located<'a> = Pin<Box<dyn Future<Output = Option<IpAddr>> + Send + 'a>>;

/// The most places a process keeps in memory (some 80 bytes each): a broad crawl meets
/// millions of hosts, most of them once. Past it the process forgets them all and reads
/// each from Redis again (a round trip) when it meets it again.
const MAX_PLACES: usize = 1 << 18;

/// Where a host's server is: what a crawl bucketed by address
/// ([`BucketsBy::Address`]) places hosts by. A crawler gives the same answer its fetches
/// connect to (its resolver, its fixed addresses, its SSRF guard), so that a bucket holds
/// the names its limits per address count together; without one, the frontier asks the
/// system's resolver ([`SystemLocator`]).
///
/// # Example
///
/// ```
/// use std::net::{IpAddr, Ipv4Addr};
///
/// /// Every name at one address: a test's loopback server.
/// struct Loopback;
///
/// impl shared::Locate for Loopback {
///     fn address_of<'a>(&'a self, _url: &'a frontier::Url) -> shared::Located<'a> {
///         Box::pin(async { Some(IpAddr::V4(Ipv4Addr::LOCALHOST)) })
///     }
/// }
/// ```
pub trait Locate: Send + Sync {
    /// The address a fetch of `url` connects to; `None` when its host does not resolve.
    fn address_of<'a>(&'a self, url: &'a Url) -> Located<'a>;
}

/// The system's resolver (`getaddrinfo`, through tokio): a host's first address.
///
/// # Example
///
/// ```no_run
/// # async fn f() {
/// use shared::Locate;
/// let url = frontier::Url::parse("http://localhost:8080/").unwrap();
/// assert!(shared::SystemLocator.address_of(&url).await.is_some_and(|ip| ip.is_loopback()));
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct SystemLocator;

impl Locate for SystemLocator {
    fn address_of<'a>(&'a self, url: &'a Url) -> Located<'a> {
        Box::pin(async move {
            let host = url.host_str()?;
            let host = host.trim_start_matches('[').trim_end_matches(']');
            if let Ok(ip) = host.parse() {
                return Some(ip);
            }
            let port = url.port_or_known_default().unwrap_or(80);
            let mut found = tokio::net::lookup_host((host, port)).await.ok()?;
            found.next().map(|socket| socket.ip())
        })
    }
}

/// The buckets of a push's hosts (empty but by address), for [`Inner::bucket_in`].
#[derive(Default)]
pub(super) struct Placed(HashMap<String, u32>);

/// This process's places (see the module's comment): what it knows, and how it finds more.
pub(super) struct Places {
    /// Hosts (`host_key`) and their buckets, as Redis keeps them.
    known: RwLock<HashMap<String, u32>>,
    /// The crawler's locator, if it gave one.
    locator: OnceLock<Arc<dyn Locate>>,
    /// Lookups under way, at most [`LOCATING`].
    locating: Semaphore,
}

impl Default for Places {
    fn default() -> Places {
        Places {
            known: RwLock::default(),
            locator: OnceLock::new(),
            locating: Semaphore::new(LOCATING),
        }
    }
}

impl Places {
    /// Sets the locator; false if one was set already.
    pub(super) fn set_locator(&self, locator: Arc<dyn Locate>) -> bool {
        self.locator.set(locator).is_ok()
    }

    /// Forgets every place: Redis went back, and may hold fewer.
    pub(super) fn forget(&self) {
        self.known
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }

    /// Keeps a place; past [`MAX_PLACES`] it forgets the others first (read again from
    /// Redis when met again: the pushes use the places [`Inner::place`] answered, not
    /// these).
    fn keep(&self, host: String, bucket: u32) {
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        if known.len() >= MAX_PLACES {
            known.clear();
        }
        known.entry(host).or_insert(bucket);
    }

    fn get(&self, host: &str) -> Option<u32> {
        self.known
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(host)
            .copied()
    }
}

impl Inner {
    /// The bucket of `host` (its `host_key`) by name or domain; by address, the place this
    /// process knows (see [`Inner::place`], which every push runs first), or, for a host it
    /// does not know, its name's bucket.
    pub(super) fn bucket_of(&self, host: &str) -> u32 {
        match self.keys.layout.buckets_by {
            BucketsBy::Host => self.hash_bucket(host.as_bytes()),
            // A crawl by domain keeps a domain's hosts in one bucket: its script then counts
            // the domain's hosts and pages in one atomic step, and one process holds the
            // servers that only the domain's names share.
            BucketsBy::Domain => self.hash_bucket(frontier::registrable_domain_of(host).as_bytes()),
            BucketsBy::Address => self
                .places
                .get(host)
                .unwrap_or_else(|| self.hash_bucket(host.as_bytes())),
        }
    }

    /// The bucket whose tag a host's robots.txt files and sitemaps are kept under: any
    /// bucket every process finds alike, its own but by address (its name's, found without
    /// a place: the callers name hosts without their ports, too).
    pub(super) fn site_bucket(&self, host: &str) -> u32 {
        match self.keys.layout.buckets_by {
            BucketsBy::Address => self.hash_bucket(host.as_bytes()),
            BucketsBy::Host | BucketsBy::Domain => self.bucket_of(host),
        }
    }

    /// A lease's host is in the bucket it came from: so this process knows the places of
    /// the hosts it fetches from, whoever placed them.
    pub(super) fn learn_place(&self, host: &str, bucket: u32) {
        if self.keys.layout.buckets_by == BucketsBy::Address && self.places.get(host).is_none() {
            self.places.keep(host.to_owned(), bucket);
        }
    }

    /// The buckets of the hosts of `urls`: by address, each host's place, placed first if
    /// this process does not know it.
    pub(super) async fn place<'a>(
        &self,
        urls: impl IntoIterator<Item = &'a Canonical>,
    ) -> Result<Placed, Error> {
        if self.keys.layout.buckets_by != BucketsBy::Address {
            return Ok(Placed::default());
        }
        let mut placed = HashMap::new();
        let mut new: HashMap<&str, &Url> = HashMap::new();
        {
            let known = self
                .places
                .known
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            for url in urls {
                let host = url.host_key();
                if placed.contains_key(host) {
                    // A page's links are mostly to a few hosts: each copied once.
                    continue;
                }
                match known.get(host) {
                    Some(&bucket) => {
                        placed.insert(host.to_owned(), bucket);
                    }
                    None => {
                        new.entry(host).or_insert(url.as_url());
                    }
                }
            }
        }
        if !new.is_empty() {
            let hosts = new
                .into_iter()
                .map(|(host, url)| (host.to_owned(), url.clone()))
                .collect();
            placed.extend(self.place_hosts(hosts).await?);
        }
        Ok(Placed(placed))
    }

    /// Puts `links` in their hosts' buckets, placing the hosts this process does not know
    /// (by address; a lease's links wait for its completion unplaced, see
    /// [`crate::SharedFrontier::push_links`]).
    pub(super) async fn place_links(&self, links: &mut [Link]) -> Result<(), Error> {
        if self.keys.layout.buckets_by != BucketsBy::Address || links.is_empty() {
            return Ok(());
        }
        let placed = self.place(links.iter().map(|link| &link.url)).await?;
        for link in links {
            link.bucket = self.bucket_in(&placed, &link.host);
        }
        Ok(())
    }

    /// The bucket of a link's `host`, as [`Inner::place`] answered for it.
    pub(super) fn bucket_in(&self, placed: &Placed, host: &str) -> u32 {
        placed
            .0
            .get(host)
            .copied()
            .unwrap_or_else(|| self.bucket_of(host))
    }

    /// Reads the places of `hosts` from Redis; locates each host not placed there, and
    /// writes its place unless another process wrote one meanwhile: the place Redis keeps
    /// is the one this process keeps. A host is looked up by the pushes that meet it
    /// before its place is written: one, but for a race.
    async fn place_hosts(&self, hosts: Vec<(String, Url)>) -> Result<HashMap<String, u32>, Error> {
        let reads: Vec<_> = hosts
            .iter()
            .map(|(host, _)| {
                let mut get = redis::cmd("HGET");
                get.arg(self.places_key(host)).arg(host);
                get
            })
            .collect();
        let read: Vec<redis::Value> = self.store.query_each(&reads).await?;
        let mut placed = HashMap::with_capacity(hosts.len());
        let mut new = Vec::new();
        for ((host, url), answer) in hosts.into_iter().zip(read) {
            match answer {
                redis::Value::Nil => new.push((host, url)),
                answer => {
                    let bucket = self.read_place(&host, answer)?;
                    placed.insert(host, bucket);
                }
            }
        }
        if new.is_empty() {
            return Ok(placed);
        }
        let locator: Arc<dyn Locate> = self
            .places
            .locator
            .get()
            .cloned()
            .unwrap_or_else(|| Arc::new(SystemLocator));
        let located = join_all(new.iter().map(|(_, url)| {
            let locator = Arc::clone(&locator);
            async move {
                // The wait is the lookup's own: a page of many new names (or a long list of
                // seeds) waits its turn, not to be placed by name.
                let _turn = self.places.locating.acquire().await.ok()?;
                tokio::time::timeout(LOCATE_WAIT, locator.address_of(url))
                    .await
                    .ok()
                    .flatten()
            }
        }))
        .await;
        let mut sets = Vec::with_capacity(new.len());
        let mut mine = Vec::with_capacity(new.len());
        for ((host, _), address) in new.iter().zip(located) {
            let bucket = match address {
                Some(IpAddr::V4(ip)) => self.hash_bucket(&ip.octets()),
                Some(IpAddr::V6(ip)) => self.hash_bucket(&ip.octets()),
                None => self.hash_bucket(host.as_bytes()),
            };
            let mut set = redis::cmd("HSETNX");
            set.arg(self.places_key(host)).arg(host).arg(bucket);
            sets.push(set);
            mine.push(bucket);
        }
        let written: Vec<i64> = self.store.query_each(&sets).await?;
        // A place another process wrote meanwhile is read after the writes (on a cluster
        // the commands of one call go apart, in no order).
        let mut theirs = Vec::new();
        for (((host, _), bucket), written) in new.into_iter().zip(mine).zip(written) {
            if written == 1 {
                self.places.keep(host.clone(), bucket);
                placed.insert(host, bucket);
            } else {
                theirs.push(host);
            }
        }
        if theirs.is_empty() {
            return Ok(placed);
        }
        let reads: Vec<_> = theirs
            .iter()
            .map(|host| {
                let mut get = redis::cmd("HGET");
                get.arg(self.places_key(host)).arg(host);
                get
            })
            .collect();
        let read: Vec<redis::Value> = self.store.query_each(&reads).await?;
        for (host, answer) in theirs.into_iter().zip(read) {
            let bucket = self.read_place(&host, answer)?;
            placed.insert(host, bucket);
        }
        Ok(placed)
    }

    /// A place Redis answered for `host`, kept in memory.
    fn read_place(&self, host: &str, answer: redis::Value) -> Result<u32, Error> {
        let bucket: Option<u32> = redis::from_redis_value(answer).ok();
        let Some(bucket) = bucket.filter(|&b| b < self.keys.buckets) else {
            return Err(
                ErrorKind::Server(format!("the place of host {host} does not read")).into(),
            );
        };
        self.places.keep(host.to_owned(), bucket);
        Ok(bucket)
    }

    /// Where `host`'s place is kept: beside its name's bucket.
    fn places_key(&self, host: &str) -> String {
        format!(
            "{}:places",
            self.store.tag(self.hash_bucket(host.as_bytes()))
        )
    }

    fn hash_bucket(&self, key: &[u8]) -> u32 {
        let mut sip = SipHasher13::new_with_key(&self.keys.sip_key);
        sip.write(key);
        (sip.finish() % u64::from(self.keys.buckets)) as u32
    }
}
