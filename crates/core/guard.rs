//! The SSRF guard: a crawl must not be turned against the network it runs in.
//!
//! Pages are written by strangers, and a link to `http://169.254.169.254/` (a cloud's metadata
//! service), `http://localhost:6379/` or `http://10.0.0.5/admin` would make the crawler fetch
//! from inside the network on their behalf. So by default a URL is fetched only if every
//! address its host resolves to is public: not loopback, private, link-local, unique-local,
//! shared (carrier-grade NAT), unspecified, broadcast or multicast. The seeds' hosts are
//! trusted whatever their addresses (that is how a crawl of an intranet site, or of the local
//! benchmark site, works), and `fetch.allow_private_addresses` lifts the guard.
//!
//! A seed that redirects to another name of the same server (`http://127.0.0.1:8080/` to
//! `http://localhost:8080/home`) extends its trust to that name, at the addresses the two
//! share and on the same port ([`Guard::trust_redirect`]); any other target (a public seed
//! answering with a redirect to `169.254.169.254`) is judged like a link.
//!
//! The check runs twice: before a fetch (so that a blocked URL gets its own record, error
//! `ssrf_blocked`, and costs its host nothing), and in the HTTP client's resolver (so that a
//! name that resolved to a public address for the check and to a private one for the
//! connection, DNS rebinding, is still refused). Both ask the crawl's [`Resolver`], whose
//! cache answers the second.
//!
//! A name the user placed at an address (`fetch.resolve`) is trusted there: the user said
//! where it lives, as for a seed; pages still cannot reach any other name's private
//! addresses.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::{Arc, PoisonError, RwLock};

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

use crate::dns::Resolver;

/// Which hosts may be fetched at which addresses.
#[derive(Debug)]
pub(crate) struct Guard {
    /// False when `fetch.allow_private_addresses` is set.
    enabled: bool,
    /// Where names live, for both checks.
    resolver: Arc<Resolver>,
    /// The seeds' host names, which the resolver (which sees no port) lets resolve to any
    /// address.
    trusted: HashSet<String>,
    /// The seeds' hosts with their ports (`host:port`, the default port left out): the
    /// pre-fetch check trusts only these, so that a seed `localhost:8080` does not open
    /// `localhost:6379`.
    trusted_ports: HashSet<String>,
    /// Redirect targets that are the same server as the seed that redirected: their host
    /// names with the non-public addresses they are trusted at, and their services
    /// (`scheme://host:port`). A
    /// std lock: read once per resolution and fetch check, written once per such redirect.
    redirected: RwLock<Redirected>,
}

/// See [`Guard::redirected`].
#[derive(Debug, Default)]
struct Redirected {
    addresses: HashMap<String, HashSet<IpAddr>>,
    ports: HashSet<String>,
}

/// The error of a blocked resolution, found again in the client's error chain.
#[derive(Debug)]
pub(crate) struct Blocked;

impl fmt::Display for Blocked {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("resolves only to non-public addresses")
    }
}

impl std::error::Error for Blocked {}

impl Guard {
    pub(crate) fn new<'a>(
        enabled: bool,
        seeds: impl IntoIterator<Item = &'a Url>,
        resolver: Arc<Resolver>,
    ) -> Guard {
        let seeds: Vec<&Url> = seeds.into_iter().collect();
        let trusted = seeds
            .iter()
            .filter_map(|url| url.host_str().map(str::to_owned))
            .collect();
        let trusted_ports = seeds.iter().map(|url| host_port(url).to_owned()).collect();
        Guard {
            enabled,
            resolver,
            trusted,
            trusted_ports,
            redirected: RwLock::default(),
        }
    }

    /// Trusts `target`, which `from` (a seed, or a target trusted so) redirected to, where it
    /// is the same server: on the same port, at the non-public addresses both names resolve
    /// to and `from` is allowed at. Answers whether it trusted anything. A target that shares
    /// no such address with `from` is judged like any link, so a public seed answering with
    /// a redirect to a private address gets nothing; the trust is this process's alone (not
    /// stored with a shared crawl's seeds).
    pub(crate) async fn trust_redirect(&self, from: &Url, target: &Url) -> bool {
        let (Some(from_host), Some(target_host)) = (from.host_str(), target.host_str()) else {
            return false;
        };
        // The same service: scheme and port (an `http://` seed's port 80 is not the
        // target's 443).
        let same_service = from.scheme() == target.scheme()
            && from.port_or_known_default() == target.port_or_known_default();
        if !self.enabled || !same_service || from_host == target_host {
            return false;
        }
        let from_addresses: HashSet<IpAddr> = self
            .resolve(from)
            .await
            .into_iter()
            .filter(|ip| !is_public(*ip) && self.allows_address(from_host, *ip))
            .collect();
        let shared: HashSet<IpAddr> = self
            .resolve(target)
            .await
            .into_iter()
            .filter(|ip| from_addresses.contains(ip))
            .collect();
        if shared.is_empty() {
            return false;
        }
        let mut redirected = self.redirected();
        redirected
            .addresses
            .entry(target_host.to_owned())
            .or_default()
            .extend(shared);
        redirected.ports.insert(service(target));
        true
    }

    fn redirected(&self) -> std::sync::RwLockWriteGuard<'_, Redirected> {
        self.redirected
            .write()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether `host` is a trusted redirect target at `ip`.
    fn redirect_trusted(&self, host: &str, ip: IpAddr) -> bool {
        let redirected = self
            .redirected
            .read()
            .unwrap_or_else(PoisonError::into_inner);
        redirected
            .addresses
            .get(host)
            .is_some_and(|addresses| addresses.contains(&ip))
    }

    /// Trusts `host` at any address in the HTTP client's resolver: the proxy the user named,
    /// which may well be on a private network. Targets are still judged before each fetch.
    pub(crate) fn trust_proxy(&mut self, host: &str) {
        self.trusted.insert(host.to_owned());
    }

    /// Whether `host` may be connected to at `ip`: asked by the HTTP client's resolver of
    /// each address it found, so that DNS rebinding is caught at the connection.
    pub(crate) fn allows_address(&self, host: &str, ip: IpAddr) -> bool {
        !self.enabled
            || self.trusted.contains(host)
            || is_public(ip)
            || self
                .resolver
                .fixed(host)
                .is_some_and(|fixed| fixed.contains(&ip))
            || self.redirect_trusted(host, ip)
    }

    /// Whether `url` may be fetched, asked before the fetch: its host is trusted, or is a
    /// public address, or resolves only to public addresses. A name that does not resolve
    /// passes: the fetch fails on its own, with the error a reader expects (`dns`).
    pub(crate) async fn allows_url(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        if !self.enabled
            || self.trusted_ports.contains(host_port(url))
            || self.resolver.fixed(host).is_some()
        {
            return true;
        }
        let redirect_target = self
            .redirected
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .ports
            .contains(&service(url));
        if redirect_target {
            // At one of its trusted addresses at least: the resolver keeps only those. A
            // lookup that failed for want of this machine's files says nothing of them: the
            // fetch's own lookup, which the resolver guards as well, is put off instead.
            let addresses = match url.host() {
                Some(Host::Domain(name)) => match self.resolver.lookup(name).await {
                    Ok(addresses) => addresses,
                    Err(err) if err.local => return true,
                    Err(_) => Vec::new(),
                },
                _ => self.resolve(url).await,
            };
            return addresses
                .into_iter()
                .any(|ip| self.allows_address(host, ip));
        }
        match url.host() {
            Some(Host::Ipv4(ip)) => is_public(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => is_public(IpAddr::V6(ip)),
            _ => match self.resolver.lookup(host).await {
                Ok(addresses) => addresses.into_iter().all(is_public),
                Err(_) => true,
            },
        }
    }

    /// The address a fetch of `url` connects to: the first its host resolves to that the
    /// guard allows (the one the HTTP client tries first); `None` when there is none.
    pub(crate) async fn address_of(&self, url: &Url) -> Option<IpAddr> {
        let host = url.host_str()?;
        self.resolve(url)
            .await
            .into_iter()
            .find(|ip| self.allows_address(host, *ip))
    }

    /// The addresses of a URL's host: itself for an IP address; none when it does not
    /// resolve.
    async fn resolve(&self, url: &Url) -> Vec<IpAddr> {
        match url.host() {
            Some(Host::Ipv4(ip)) => vec![IpAddr::V4(ip)],
            Some(Host::Ipv6(ip)) => vec![IpAddr::V6(ip)],
            Some(Host::Domain(name)) => self.resolver.lookup(name).await.unwrap_or_default(),
            None => Vec::new(),
        }
    }
}

/// A shared crawl bucketed by address puts a host in the bucket of the address its fetches
/// connect to, this guard's answer.
impl shared::Locate for Guard {
    fn address_of<'a>(&'a self, url: &'a Url) -> shared::Located<'a> {
        Box::pin(Guard::address_of(self, url))
    }
}

/// `scheme://host:port`, the port always written: what a trusted redirect target is trusted
/// on, and nothing else (not the same host's other scheme).
fn service(url: &Url) -> String {
    format!(
        "{}://{}:{}",
        url.scheme(),
        url.host_str().unwrap_or_default(),
        url.port_or_known_default().unwrap_or(0)
    )
}

/// `host:port` as a URL spells it, the default port left out.
fn host_port(url: &Url) -> &str {
    &url[url::Position::BeforeHost..url::Position::AfterPort]
}

/// Whether an address is on the public internet.
pub(crate) fn is_public(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(ip) => is_public_v4(ip),
        IpAddr::V6(ip) => match embedded_v4(ip) {
            Some(v4) => is_public_v4(v4),
            None => is_public_v6(ip),
        },
    }
}

/// The IPv4 address an IPv6 address carries to an IPv4 host: mapped (`::ffff:a.b.c.d`),
/// compatible (`::a.b.c.d`), NAT64 (`64:ff9b::a.b.c.d`) or 6to4 (`2002:AABB:CCDD::`).
fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = Ipv4Addr::new((s[6] >> 8) as u8, s[6] as u8, (s[7] >> 8) as u8, s[7] as u8);
    match s {
        [0, 0, 0, 0, 0, 0xffff, ..] => Some(tail),
        [0, 0, 0, 0, 0, 0, ..] if !ip.is_loopback() && !ip.is_unspecified() => Some(tail),
        [0x64, 0xff9b, 0, 0, 0, 0, ..] => Some(tail),
        [0x2002, hi, lo, ..] => Some(Ipv4Addr::new(
            (hi >> 8) as u8,
            hi as u8,
            (lo >> 8) as u8,
            lo as u8,
        )),
        _ => None,
    }
}

fn is_public_v4(ip: Ipv4Addr) -> bool {
    let [a, b, c, _] = ip.octets();
    let shared = a == 100 && (64..128).contains(&b); // 100.64.0.0/10, carrier-grade NAT
    let special = (a == 192 && b == 0 && c == 0) // 192.0.0.0/24, protocol assignments
        || (a == 198 && (b == 18 || b == 19)) // 198.18.0.0/15, benchmarking
        || a >= 240; // 240.0.0.0/4, reserved
    !(special
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_unspecified()
        || ip.is_broadcast()
        || ip.is_multicast()
        || shared
        || a == 0)
}

fn is_public_v6(ip: Ipv6Addr) -> bool {
    let first = ip.segments()[0];
    let unique_local = first & 0xfe00 == 0xfc00; // fc00::/7
    let link_local = first & 0xffc0 == 0xfe80; // fe80::/10
    let site_local = first & 0xffc0 == 0xfec0; // fec0::/10, deprecated but routed inside
    !(ip.is_loopback()
        || ip.is_unspecified()
        || ip.is_multicast()
        || unique_local
        || link_local
        || site_local)
}

/// The HTTP client's resolver: the crawl's, with non-public addresses of untrusted hosts
/// removed.
pub(crate) struct GuardedResolver(pub(crate) Arc<Guard>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = Arc::clone(&self.0);
        Box::pin(async move {
            let host = name.as_str();
            let addresses = guard
                .resolver
                .lookup(host)
                .await
                .map_err(|e| Box::new(e) as Box<dyn std::error::Error + Send + Sync>)?;
            let allowed: Vec<SocketAddr> = addresses
                .iter()
                .filter(|ip| guard.allows_address(host, **ip))
                .map(|ip| SocketAddr::new(*ip, 0))
                .collect();
            if allowed.is_empty() {
                return Err(Box::new(Blocked) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A guard over the system's DNS and no names of the user's.
    fn guard_of<'a>(enabled: bool, seeds: impl IntoIterator<Item = &'a Url>) -> Guard {
        let (resolver, _) = Resolver::new(&[], &[]).expect("the system's DNS settings");
        Guard::new(enabled, seeds, Arc::new(resolver))
    }

    #[test]
    fn private_and_special_addresses_are_not_public() {
        for ip in [
            "127.0.0.1",
            "10.1.2.3",
            "172.16.0.1",
            "192.168.1.1",
            "169.254.169.254",
            "0.0.0.0",
            "100.64.0.1",
            "255.255.255.255",
            "224.0.0.1",
            "::1",
            "::",
            "fd00::1",
            "fe80::1",
            "::ffff:127.0.0.1",
            "::ffff:169.254.169.254",
            "::127.0.0.1",
            "64:ff9b::a9fe:a9fe",
            "2002:c0a8:0101::1",
            "192.0.0.1",
            "198.18.0.1",
            "240.0.0.1",
            "fec0::1",
        ] {
            assert!(!is_public(ip.parse().unwrap()), "{ip}");
        }
        for ip in [
            "93.184.216.34",
            "8.8.8.8",
            "2606:4700::1111",
            "::ffff:8.8.8.8",
            "64:ff9b::808:808",
        ] {
            assert!(is_public(ip.parse().unwrap()), "{ip}");
        }
    }

    #[test]
    fn seeds_hosts_are_trusted_and_the_guard_can_be_lifted() {
        let seed = Url::parse("http://127.0.0.1:8080/").unwrap();
        let guard = guard_of(true, [&seed]);
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(guard.allows_address("127.0.0.1", loopback));
        assert!(!guard.allows_address("localhost", loopback));
        assert!(guard_of(false, [&seed]).allows_address("localhost", loopback));
    }

    /// Regression: a seed `127.0.0.1:PORT` answering with a redirect to `localhost:PORT` had
    /// its target blocked; a public seed's redirect to a private address must stay blocked.
    #[tokio::test]
    async fn a_seeds_redirect_to_the_same_server_is_trusted_and_no_other() {
        let url = |u: &str| Url::parse(u).unwrap();
        let seed = url("http://127.0.0.1:8080/");
        let guard = guard_of(true, [&seed]);
        let target = url("http://localhost:8080/home");
        assert!(!guard.allows_url(&target).await);
        // Another port of the same server is another service: not trusted.
        assert!(
            !guard
                .trust_redirect(&seed, &url("http://localhost:6379/"))
                .await
        );
        assert!(!guard.allows_url(&url("http://localhost:6379/")).await);
        assert!(guard.trust_redirect(&seed, &target).await);
        assert!(guard.allows_url(&target).await);
        assert!(guard.allows_url(&url("http://localhost:8080/other")).await);
        assert!(!guard.allows_url(&url("http://localhost:6379/")).await);
        // Trusted at the seed's address only: localhost's ::1 is not the seed's.
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(guard.allows_address("localhost", loopback));
        assert!(!guard.allows_address("localhost", "::1".parse().unwrap()));
        assert!(!guard.allows_address("localhost", "10.0.0.1".parse().unwrap()));

        // A public seed's redirect to a private address shares no address with it.
        let public = url("http://93.184.216.34/");
        let guard = guard_of(true, [&public]);
        let metadata = url("http://169.254.169.254/latest/meta-data/");
        assert!(!guard.trust_redirect(&public, &metadata).await);
        assert!(!guard.allows_url(&metadata).await);
        // A private seed's redirect to another private address: not the same server.
        let guard = guard_of(true, [&seed]);
        assert!(
            !guard
                .trust_redirect(&seed, &url("http://10.0.0.5:8080/"))
                .await
        );
        assert!(!guard.allows_url(&url("http://10.0.0.5:8080/")).await);
        // Another scheme is another service, whatever the ports say.
        let plain = url("http://127.0.0.1/");
        let guard = guard_of(true, [&plain]);
        assert!(
            !guard
                .trust_redirect(&plain, &url("https://localhost/"))
                .await
        );
        assert!(
            guard
                .trust_redirect(&plain, &url("http://localhost/"))
                .await
        );
        assert!(!guard.allows_url(&url("https://localhost/")).await);
        // Lifted, the guard has nothing to trust.
        let off = guard_of(false, [&seed]);
        assert!(!off.trust_redirect(&seed, &target).await);
    }

    #[tokio::test]
    async fn links_to_private_addresses_are_refused_before_any_request() {
        let seed = Url::parse("https://example.com/").unwrap();
        let guard = guard_of(true, [&seed]);
        let url = |u: &str| Url::parse(u).unwrap();
        assert!(
            !guard
                .allows_url(&url("http://169.254.169.254/latest/meta-data/"))
                .await
        );
        assert!(!guard.allows_url(&url("http://[::1]:6379/")).await);
        assert!(!guard.allows_url(&url("http://localhost:8080/")).await);
        assert!(guard.allows_url(&url("https://example.com/admin")).await);
        // A seed's host is trusted on the seed's port only.
        let local = Url::parse("http://localhost:8080/").unwrap();
        let guard = guard_of(true, [&local]);
        assert!(guard.allows_url(&url("http://localhost:8080/page")).await);
        assert!(!guard.allows_url(&url("http://localhost:6379/")).await);
    }
}
