//! Where host names live: the user's own entries first (`fetch.resolve`, `--resolve`), then
//! DNS, asked asynchronously and cached.
//!
//! A broad crawl resolves thousands of names a second, and each name is asked twice per
//! fetch (by the SSRF guard before it, and by the HTTP client's connection): so the crawler
//! keeps its own cache, as Mercator, IRLbot and Heritrix do, rather than calling the
//! system's blocking resolver each time. An answer is kept for its TTL, but at least
//! [`MIN_TTL`] (a name must not be asked for every page of its host) and at most
//! [`MAX_TTL`] (addresses do move); a name that does not exist is remembered for
//! [`NEGATIVE_TTL`] at most, so that a crawl does not ask again for each of its links, nor
//! keeps a name dead long after it was fixed. A slow answer holds up only the fetches of its
//! own name.

use std::collections::HashMap;
use std::fmt;
use std::net::{IpAddr, SocketAddr};
use std::time::Duration;

use hickory_resolver::TokioResolver;
use hickory_resolver::config::{
    LookupIpStrategy, NameServerConfig, ResolveHosts, ResolverConfig, ResolverOpts,
};
use hickory_resolver::net::NetError;
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::proto::rr::RecordType;

/// The shortest time an answer is kept, whatever its TTL.
pub(crate) const MIN_TTL: Duration = Duration::from_secs(300);

/// The longest time an answer is kept, whatever its TTL.
pub(crate) const MAX_TTL: Duration = Duration::from_secs(6 * 3600);

/// The longest time a name that does not exist is remembered as such.
pub(crate) const NEGATIVE_TTL: Duration = Duration::from_secs(60);

/// Answers kept at most: a broad crawl's active hosts.
const CACHE_SIZE: u64 = 65_536;

/// The error of a name that did not resolve, found again in the HTTP client's error chain:
/// what tells a `dns` failure from a refused connection.
#[derive(Debug)]
pub(crate) struct Unresolved {
    pub(crate) host: String,
    /// The resolver's own words, if it had any.
    pub(crate) cause: Option<String>,
    /// Whether the lookup failed for want of this machine's resources (a socket it could
    /// not open: see `fetch::FetchError::local`), not for the name.
    pub(crate) local: bool,
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

/// The crawl's resolver: the user's entries, then DNS with a cache.
#[derive(Debug)]
pub(crate) struct Resolver {
    /// Names the user placed (`fetch.resolve`), lower-case, without a trailing dot.
    fixed: HashMap<String, Vec<IpAddr>>,
    /// DNS: the servers of `fetch.dns_servers`, or the system's (none when its settings
    /// cannot be read: names then resolve from the hosts file and `fixed` alone).
    dns: TokioResolver,
}

impl Resolver {
    /// A resolver for `resolve` entries (`NAME:PORT:ADDRESS[,ADDRESS...]`, curl's form) and
    /// DNS `servers` (`ADDRESS` or `ADDRESS:PORT`; empty for the system's). Answers the
    /// resolver, and a warning to show when the system's DNS settings could not be read.
    /// Must be called inside the crawl's runtime.
    pub(crate) fn new(
        resolve: &[String],
        servers: &[String],
    ) -> Result<(Resolver, Option<String>), String> {
        let fixed = fixed_entries(resolve)?;
        let mut warning = None;
        let (config, mut options) = if servers.is_empty() {
            match hickory_resolver::system_conf::read_system_conf() {
                Ok(system) => system,
                Err(e) => {
                    warning = Some(format!(
                        "cannot read the system's DNS settings ({e}): names resolve from the \
                         hosts file and fetch.resolve alone; give fetch.dns_servers \
                         (--dns-server) to use DNS"
                    ));
                    (
                        ResolverConfig::from_name_servers(Vec::new()),
                        ResolverOpts::default(),
                    )
                }
            }
        } else {
            let servers = servers
                .iter()
                .map(|s| name_server(s))
                .collect::<Result<Vec<_>, _>>()?;
            (
                ResolverConfig::from_name_servers(servers),
                ResolverOpts::default(),
            )
        };
        options.cache_size = CACHE_SIZE;
        options.positive_min_ttl = Some(MIN_TTL);
        options.positive_max_ttl = Some(MAX_TTL);
        options.negative_min_ttl = Some(Duration::ZERO);
        options.negative_max_ttl = Some(NEGATIVE_TTL);
        options.use_hosts_file = ResolveHosts::Always;
        // IPv4 first, IPv6 only for a name without: one question a name, and the address
        // most of the web's servers are reached at.
        options.ip_strategy = LookupIpStrategy::Ipv4thenIpv6;
        // A URL's host is a whole name: no search domains appended to it.
        options.ndots = 0;
        let dns = TokioResolver::builder_with_config(config, TokioRuntimeProvider::default())
            .with_options(options)
            .build()
            .map_err(|e| format!("fetch.dns_servers: {e}"))?;
        Ok((Resolver { fixed, dns }, warning))
    }

    /// The addresses the user gave `name`, if any.
    pub(crate) fn fixed(&self, name: &str) -> Option<&[IpAddr]> {
        if self.fixed.is_empty() {
            return None;
        }
        self.fixed
            .get(name.trim_end_matches('.'))
            .map(Vec::as_slice)
    }

    /// The addresses of `name`: the user's, or DNS's (from the cache when it has them). An
    /// IP address is itself.
    pub(crate) async fn lookup(&self, name: &str) -> Result<Vec<IpAddr>, Unresolved> {
        if let Some(addresses) = self.fixed(name) {
            return Ok(addresses.to_vec());
        }
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        if let Ok(ip) = bare.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        // Fully qualified: the name as written, never a search domain's.
        let fqdn = if name.ends_with('.') {
            name.to_owned()
        } else {
            format!("{name}.")
        };
        let unresolved = |cause: Option<String>, local: bool| Unresolved {
            host: name.to_owned(),
            cause,
            local,
        };
        match self.dns.lookup_ip(fqdn.as_str()).await {
            Ok(found) => {
                let addresses: Vec<IpAddr> = found.iter().collect();
                if addresses.is_empty() {
                    Err(unresolved(None, false))
                } else {
                    Ok(addresses)
                }
            }
            Err(e) => {
                // A lookup that failed for want of files may come back as any error: the
                // resolver says "no connections available" when every socket it tried failed
                // (as when the servers refuse them), and asks AAAA when A failed, so that a
                // name with no AAAA reads "no address". So the machine is asked whether it
                // has a file to spare; if not, the failure is its own, and the negative
                // answers it may have left in the cache for the name go.
                let local = match &e {
                    // A server's answer: the name's, whatever the machine's state.
                    _ if e.is_nx_domain() => false,
                    NetError::Io(io) if crate::open_files::is_local(&**io) => true,
                    _ => crate::open_files::exhausted(),
                };
                if local {
                    for record in [RecordType::A, RecordType::AAAA] {
                        self.dns.clear_lookup_cache(fqdn.as_str(), record);
                    }
                }
                Err(unresolved(Some(cause(&e)), local))
            }
        }
    }
}

/// What a failed lookup says to a reader.
fn cause(e: &NetError) -> String {
    // A name only the user's network knows is the likely case of a crawl's own seed.
    const HINT: &str = "; a name only your network knows is given its address with \
                        --resolve NAME:PORT:ADDRESS";
    if e.is_nx_domain() {
        format!("no such name (NXDOMAIN){HINT}")
    } else if e.is_no_records_found() {
        format!("the name has no address (no A or AAAA record){HINT}")
    } else if matches!(e, NetError::Timeout) {
        "no answer from the DNS servers in time".into()
    } else {
        e.to_string()
    }
}

/// Checks `fetch.resolve` entries and `fetch.dns_servers`, as [`Resolver::new`] reads them.
pub(crate) fn check(resolve: &[String], servers: &[String]) -> Result<(), String> {
    fixed_entries(resolve)?;
    servers.iter().try_for_each(|s| name_server(s).map(drop))
}

/// The user's entries by name, checked: `NAME:PORT:ADDRESS[,ADDRESS...]`.
fn fixed_entries(resolve: &[String]) -> Result<HashMap<String, Vec<IpAddr>>, String> {
    let mut fixed: HashMap<String, Vec<IpAddr>> = HashMap::new();
    for entry in resolve {
        let (name, addresses) = parse_entry(entry)?;
        match fixed.get(&name) {
            Some(earlier) if *earlier != addresses => {
                return Err(format!(
                    "fetch.resolve: {name} is given twice, at different addresses (an entry \
                     holds for every port of its name)"
                ));
            }
            _ => {
                fixed.insert(name, addresses);
            }
        }
    }
    Ok(fixed)
}

/// One `--resolve` entry, curl's form: `NAME:PORT:ADDRESS[,ADDRESS...]`, an IPv6 address
/// in brackets or not; PORT a number or `*`. Answers the name (lower-case, no trailing dot)
/// and its addresses.
pub(crate) fn parse_entry(entry: &str) -> Result<(String, Vec<IpAddr>), String> {
    let bad = |why: &str| {
        Err(format!(
            "fetch.resolve: {entry:?} {why} (the form is NAME:PORT:ADDRESS, as curl's --resolve: \
             example.com:443:192.0.2.7)"
        ))
    };
    let mut parts = entry.splitn(3, ':');
    let (Some(name), Some(port), Some(addresses)) = (parts.next(), parts.next(), parts.next())
    else {
        return bad("is not NAME:PORT:ADDRESS");
    };
    let name = name.trim_end_matches('.').to_ascii_lowercase();
    if name.is_empty() || name.parse::<IpAddr>().is_ok() || name.contains(['/', ' ', '[']) {
        return bad("does not start with a host name");
    }
    if port != "*" && port.parse::<u16>().is_err() {
        return bad("has no port (a number, or *)");
    }
    let mut ips = Vec::new();
    for address in addresses.split(',') {
        let bare = address.trim().trim_start_matches('[').trim_end_matches(']');
        match bare.parse::<IpAddr>() {
            Ok(ip) => ips.push(ip),
            Err(_) => return bad(&format!("has {address:?}, which is not an IP address")),
        }
    }
    Ok((name, ips))
}

/// A DNS server of `fetch.dns_servers`: `ADDRESS` (port 53) or `ADDRESS:PORT`, an IPv6
/// address in brackets when a port follows.
fn name_server(text: &str) -> Result<NameServerConfig, String> {
    let (ip, port) = match text.parse::<SocketAddr>() {
        Ok(socket) => (socket.ip(), socket.port()),
        Err(_) => match text
            .trim_start_matches('[')
            .trim_end_matches(']')
            .parse::<IpAddr>()
        {
            Ok(ip) => (ip, 53),
            Err(_) => {
                return Err(format!(
                    "fetch.dns_servers: {text:?} is not ADDRESS or ADDRESS:PORT (192.0.2.53, \
                     192.0.2.53:5353, [2001:db8::53]:53)"
                ));
            }
        },
    };
    let mut server = NameServerConfig::udp_and_tcp(ip);
    for connection in &mut server.connections {
        connection.port = port;
    }
    Ok(server)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn entries_are_read_as_curl_writes_them() {
        let (name, ips) = parse_entry("Intranet.Example.:8443:10.0.0.5,[::1]").unwrap();
        assert_eq!(name, "intranet.example");
        assert_eq!(
            ips,
            [
                "10.0.0.5".parse::<IpAddr>().unwrap(),
                "::1".parse().unwrap()
            ]
        );
        assert_eq!(
            parse_entry("a.test:*:::1").unwrap().1,
            ["::1".parse::<IpAddr>().unwrap()]
        );
        for bad in [
            "a.test",
            "a.test:80",
            "a.test:http:10.0.0.1",
            "a.test:80:ten",
            ":80:10.0.0.1",
            "10.0.0.2:80:10.0.0.1",
        ] {
            let err = parse_entry(bad).unwrap_err();
            assert!(err.contains("NAME:PORT:ADDRESS"), "{bad}: {err}");
        }
    }

    #[test]
    fn a_name_given_twice_must_be_at_the_same_place() {
        let same = [
            "a.test:80:10.0.0.1".to_owned(),
            "a.test:443:10.0.0.1".to_owned(),
        ];
        assert_eq!(fixed_entries(&same).unwrap().len(), 1);
        let moved = [
            "a.test:80:10.0.0.1".to_owned(),
            "A.test:443:10.0.0.2".to_owned(),
        ];
        assert!(fixed_entries(&moved).unwrap_err().contains("given twice"));
    }

    #[test]
    fn name_servers_take_a_port_or_dns_s_own() {
        assert_eq!(name_server("192.0.2.53").unwrap().connections[0].port, 53);
        assert_eq!(
            name_server("127.0.0.1:5353").unwrap().connections[1].port,
            5353
        );
        assert_eq!(
            name_server("[::1]:5353").unwrap().ip,
            "::1".parse::<IpAddr>().unwrap()
        );
        assert!(
            name_server("dns.example")
                .unwrap_err()
                .contains("ADDRESS:PORT")
        );
    }

    #[tokio::test]
    async fn the_users_names_and_ip_addresses_need_no_dns() {
        let entries = ["staging.test:443:10.1.2.3".to_owned()];
        // A DNS server that answers nothing: only the entries and literals may resolve.
        let (resolver, _) = Resolver::new(&entries, &["127.0.0.1:9".to_owned()]).unwrap();
        let ten: IpAddr = "10.1.2.3".parse().unwrap();
        assert_eq!(resolver.lookup("staging.test").await.unwrap(), [ten]);
        assert_eq!(resolver.lookup("staging.test.").await.unwrap(), [ten]);
        assert_eq!(resolver.fixed("staging.test"), Some(&[ten][..]));
        assert_eq!(
            resolver.lookup("[::1]").await.unwrap(),
            ["::1".parse::<IpAddr>().unwrap()]
        );
        assert_eq!(resolver.fixed("other.test"), None);
    }

    /// A resolver asking `dns` alone.
    fn asking(dns: &testweb::DnsServer) -> Resolver {
        Resolver::new(&[], &[dns.addr().to_string()]).unwrap().0
    }

    #[tokio::test]
    async fn each_name_is_asked_once_however_often_it_is_looked_up() {
        let names: Vec<(String, IpAddr)> = (0..500)
            .map(|i| {
                (
                    format!("h{i}.test"),
                    IpAddr::from([127, 0, 0, 1 + (i % 3) as u8]),
                )
            })
            .collect();
        let dns = testweb::DnsServer::start(names.clone()).await.unwrap();
        let resolver = Arc::new(asking(&dns));
        // Every name looked up four times, as four fetches of its host would (the guard's
        // check and the connection's, twice), two hundred at once.
        let mut tasks = tokio::task::JoinSet::new();
        for round in 0..4 {
            for chunk in names.chunks(200) {
                let resolver = Arc::clone(&resolver);
                let chunk = chunk.to_vec();
                tasks.spawn(async move {
                    for (name, ip) in chunk {
                        assert_eq!(
                            resolver.lookup(&name).await.unwrap(),
                            [ip],
                            "{name} {round}"
                        );
                    }
                });
            }
            while let Some(done) = tasks.join_next().await {
                done.unwrap();
            }
        }
        for (name, _) in &names {
            assert_eq!(dns.questions(name), 1, "{name}");
        }
        // A name that does not exist is remembered too, for a while.
        for _ in 0..3 {
            let err = resolver.lookup("gone.test").await.unwrap_err();
            assert!(err.to_string().contains("NXDOMAIN"), "{err}");
        }
        assert!(
            dns.questions("gone.test") <= 2,
            "{}",
            dns.questions("gone.test")
        );
    }

    #[tokio::test]
    async fn lookups_of_a_name_at_once_ask_dns_once_and_share_its_answer() {
        // Several fetches of a host start together (a seed and links to its host): the
        // resolver shares the question under way, which the cache alone would not.
        let names = [("a.test".to_owned(), IpAddr::from([127, 0, 0, 1]))];
        let dns = testweb::DnsServer::start(names).await.unwrap();
        // Slow enough that every lookup starts before the first answer comes.
        dns.delay("a.test", Duration::from_millis(200));
        dns.delay("gone.test", Duration::from_millis(200));
        let resolver = Arc::new(asking(&dns));
        let mut lookups = tokio::task::JoinSet::new();
        for name in ["a.test", "a.test.", "gone.test"].repeat(20) {
            let resolver = Arc::clone(&resolver);
            lookups.spawn(async move { (name, resolver.lookup(name).await) });
        }
        while let Some(done) = lookups.join_next().await {
            match done.unwrap() {
                ("gone.test", answer) => {
                    let err = answer.unwrap_err();
                    assert!(err.to_string().contains("NXDOMAIN"), "{err}");
                }
                (name, answer) => {
                    assert_eq!(answer.unwrap(), [IpAddr::from([127, 0, 0, 1])], "{name}");
                }
            }
        }
        assert_eq!(dns.questions("a.test"), 1);
        // NXDOMAIN for A, then perhaps AAAA (IPv4, then IPv6): once each.
        let gone = dns.questions("gone.test");
        assert!((1..=2).contains(&gone), "{gone}");
    }

    #[tokio::test]
    async fn a_slow_name_holds_up_no_other() {
        let names = [("slow.test", 1), ("fast.test", 2)]
            .map(|(name, i)| (name.to_owned(), IpAddr::from([127, 0, 0, i])));
        let dns = testweb::DnsServer::start(names).await.unwrap();
        dns.delay("slow.test", Duration::from_millis(1500));
        let resolver = Arc::new(asking(&dns));
        let slow = tokio::spawn({
            let resolver = Arc::clone(&resolver);
            async move { resolver.lookup("slow.test").await }
        });
        tokio::time::sleep(Duration::from_millis(50)).await;
        let started = std::time::Instant::now();
        for i in 0..20 {
            let fast = resolver.lookup("fast.test").await.unwrap();
            assert_eq!(fast, [IpAddr::from([127, 0, 0, 2])], "{i}");
        }
        assert!(
            started.elapsed() < Duration::from_millis(1000),
            "{:?}",
            started.elapsed()
        );
        assert!(!slow.is_finished());
        assert_eq!(slow.await.unwrap().unwrap(), [IpAddr::from([127, 0, 0, 1])]);
    }
}
