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
//! The check runs twice: before a fetch (so that a blocked URL gets its own record, error
//! `ssrf_blocked`, and costs its host nothing), and in the HTTP client's resolver (so that a
//! name that resolved to a public address for the check and to a private one for the
//! connection, DNS rebinding, is still refused).

use std::collections::HashSet;
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::sync::Arc;

use reqwest::dns::{Addrs, Name, Resolve, Resolving};
use url::{Host, Url};

/// Which hosts may be fetched at which addresses.
#[derive(Debug)]
pub(crate) struct Guard {
    /// False when `fetch.allow_private_addresses` is set.
    enabled: bool,
    /// The seeds' host names, which the resolver (which sees no port) lets resolve to any
    /// address.
    trusted: HashSet<String>,
    /// The seeds' hosts with their ports (`host:port`, the default port left out): the
    /// pre-fetch check trusts only these, so that a seed `localhost:8080` does not open
    /// `localhost:6379`.
    trusted_ports: HashSet<String>,
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

/// The error of a name that did not resolve, found again in the client's error chain: what
/// tells a `dns` failure from a refused connection.
#[derive(Debug)]
pub(crate) struct Unresolved {
    pub(crate) host: String,
    /// The resolver's own words, if it had any.
    pub(crate) cause: Option<std::io::Error>,
}

impl fmt::Display for Unresolved {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.cause {
            Some(cause) => write!(f, "cannot resolve {}: {cause}", self.host),
            None => write!(f, "cannot resolve {}: no addresses", self.host),
        }
    }
}

impl std::error::Error for Unresolved {}

impl Guard {
    pub(crate) fn new<'a>(enabled: bool, seeds: impl IntoIterator<Item = &'a Url>) -> Guard {
        let seeds: Vec<&Url> = seeds.into_iter().collect();
        let trusted = seeds
            .iter()
            .filter_map(|url| url.host_str().map(str::to_owned))
            .collect();
        let trusted_ports = seeds.iter().map(|url| host_port(url).to_owned()).collect();
        Guard {
            enabled,
            trusted,
            trusted_ports,
        }
    }

    /// Trusts `host` at any address in the HTTP client's resolver: the proxy the user named,
    /// which may well be on a private network. Targets are still judged before each fetch.
    pub(crate) fn trust_proxy(&mut self, host: &str) {
        self.trusted.insert(host.to_owned());
    }

    /// Whether `host` may be connected to at `ip`: asked by the HTTP client's resolver of
    /// each address it found, so that DNS rebinding is caught at the connection.
    pub(crate) fn allows_address(&self, host: &str, ip: IpAddr) -> bool {
        !self.enabled || self.trusted.contains(host) || is_public(ip)
    }

    /// Whether `url` may be fetched, asked before the fetch: its host is trusted, or is a
    /// public address, or resolves only to public addresses. A name that does not resolve
    /// passes: the fetch fails on its own, with the error a reader expects (`dns`).
    pub(crate) async fn allows_url(&self, url: &Url) -> bool {
        let Some(host) = url.host_str() else {
            return false;
        };
        if !self.enabled || self.trusted_ports.contains(host_port(url)) {
            return true;
        }
        match url.host() {
            Some(Host::Ipv4(ip)) => is_public(IpAddr::V4(ip)),
            Some(Host::Ipv6(ip)) => is_public(IpAddr::V6(ip)),
            _ => match tokio::net::lookup_host((host, url.port_or_known_default().unwrap_or(80)))
                .await
            {
                Ok(addrs) => addrs.into_iter().all(|a| is_public(a.ip())),
                Err(_) => true,
            },
        }
    }
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

/// The HTTP client's resolver: the system's, with non-public addresses of untrusted hosts
/// removed.
pub(crate) struct GuardedResolver(pub(crate) Arc<Guard>);

impl Resolve for GuardedResolver {
    fn resolve(&self, name: Name) -> Resolving {
        let guard = Arc::clone(&self.0);
        Box::pin(async move {
            let host = name.as_str().to_owned();
            let found = tokio::net::lookup_host((host.as_str(), 0))
                .await
                .map(Iterator::collect::<Vec<SocketAddr>>);
            let addrs = match found {
                Ok(addrs) => addrs,
                Err(cause) => {
                    let cause = Some(cause);
                    return Err(Box::new(Unresolved { host, cause }) as Box<_>);
                }
            };
            if addrs.is_empty() {
                return Err(Box::new(Unresolved { host, cause: None }) as Box<_>);
            }
            let allowed: Vec<SocketAddr> = addrs
                .iter()
                .copied()
                .filter(|a| guard.allows_address(&host, a.ip()))
                .collect();
            if allowed.is_empty() && !addrs.is_empty() {
                return Err(Box::new(Blocked) as Box<dyn std::error::Error + Send + Sync>);
            }
            Ok(Box::new(allowed.into_iter()) as Addrs)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        let guard = Guard::new(true, [&seed]);
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        assert!(guard.allows_address("127.0.0.1", loopback));
        assert!(!guard.allows_address("localhost", loopback));
        assert!(Guard::new(false, [&seed]).allows_address("localhost", loopback));
    }

    #[tokio::test]
    async fn links_to_private_addresses_are_refused_before_any_request() {
        let seed = Url::parse("https://example.com/").unwrap();
        let guard = Guard::new(true, [&seed]);
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
        let guard = Guard::new(true, [&local]);
        assert!(guard.allows_url(&url("http://localhost:8080/page")).await);
        assert!(!guard.allows_url(&url("http://localhost:6379/")).await);
    }
}
