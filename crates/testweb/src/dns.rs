//! A DNS server on loopback that knows the site's names: it answers A and AAAA questions
//! for the names it was given, `NXDOMAIN` for any other, each name after its own delay if it
//! has one, and counts the questions each name received. What a crawler's resolver is tested
//! against: how often it asks, and whether a slow name holds up the others.

use std::collections::{HashMap, HashSet};
use std::io;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use hickory_proto::op::{Message, MessageType, OpCode, ResponseCode};
use hickory_proto::rr::rdata::{A, AAAA, SOA};
use hickory_proto::rr::{Name, RData, Record, RecordType};
use tokio::net::UdpSocket;
use tokio::task::JoinHandle;

/// What the server knows and has seen, shared with its task.
#[derive(Debug, Default)]
struct Zone {
    /// Addresses by name (lower-case, no trailing dot).
    names: HashMap<String, Vec<IpAddr>>,
    /// Names answered only after a while.
    delays: HashMap<String, Duration>,
    /// Questions received, by name as asked (lower-case, no trailing dot).
    questions: HashMap<String, usize>,
    /// Every query heard, by its id and its question: a resolver sends a query again when
    /// its answer is late (hickory after a third of a second, sooner than a loaded machine
    /// may answer, and from a port of its own each time), and that is not a second question.
    heard: HashSet<(u16, String, RecordType)>,
    /// The TTL of every answer, seconds.
    ttl: u32,
}

/// A running DNS server on 127.0.0.1 (UDP). Dropping it stops it.
///
/// # Example
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// let dns = testweb::DnsServer::start([("h0.test".to_owned(), "127.0.0.1".parse().unwrap())]).await?;
/// assert_ne!(dns.addr().port(), 0);
/// assert_eq!(dns.questions("h0.test"), 0);
/// # Ok(())
/// # }
/// ```
#[derive(Debug)]
pub struct DnsServer {
    addr: SocketAddr,
    zone: Arc<Mutex<Zone>>,
    task: JoinHandle<()>,
}

impl DnsServer {
    /// Starts a server answering `names` (name and address; a name given twice has both
    /// addresses) with a TTL of 300 s.
    ///
    /// # Errors
    ///
    /// The error of binding a UDP port on 127.0.0.1.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let dns = testweb::DnsServer::start([]).await?;
    /// assert!(dns.addr().ip().is_loopback());
    /// # Ok(())
    /// # }
    /// ```
    pub async fn start(names: impl IntoIterator<Item = (String, IpAddr)>) -> io::Result<DnsServer> {
        let socket = Arc::new(bind()?);
        let addr = socket.local_addr()?;
        let mut zone = Zone {
            ttl: 300,
            ..Zone::default()
        };
        for (name, ip) in names {
            zone.names.entry(normal(&name)).or_default().push(ip);
        }
        let zone = Arc::new(Mutex::new(zone));
        let task = tokio::spawn(serve(socket, Arc::clone(&zone)));
        Ok(DnsServer { addr, zone, task })
    }

    /// Where it listens (UDP), as a resolver's server setting takes it.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let dns = testweb::DnsServer::start([]).await?;
    /// assert_eq!(dns.addr().ip(), std::net::Ipv4Addr::LOCALHOST);
    /// # Ok(())
    /// # }
    /// ```
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Answers questions about `name` only after `delay` (others are not held up).
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let dns = testweb::DnsServer::start([]).await?;
    /// dns.delay("slow.test", std::time::Duration::from_secs(1));
    /// # Ok(())
    /// # }
    /// ```
    pub fn delay(&self, name: &str, delay: Duration) {
        self.lock().delays.insert(normal(name), delay);
    }

    /// Sets the TTL of every answer from now on, in seconds.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// testweb::DnsServer::start([]).await?.set_ttl(1);
    /// # Ok(())
    /// # }
    /// ```
    pub fn set_ttl(&self, seconds: u32) {
        self.lock().ttl = seconds;
    }

    /// The questions (of any type) received about `name` so far. A query sent again (the
    /// same id, from any port) counts once: it is answered again, but it is the same
    /// question.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// let dns = testweb::DnsServer::start([]).await?;
    /// assert_eq!(dns.questions("any.test"), 0);
    /// # Ok(())
    /// # }
    /// ```
    pub fn questions(&self, name: &str) -> usize {
        self.lock()
            .questions
            .get(&normal(name))
            .copied()
            .unwrap_or(0)
    }

    /// Every name asked about, with its count of questions.
    ///
    /// # Example
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() -> std::io::Result<()> {
    /// assert!(testweb::DnsServer::start([]).await?.all_questions().is_empty());
    /// # Ok(())
    /// # }
    /// ```
    pub fn all_questions(&self) -> HashMap<String, usize> {
        self.lock().questions.clone()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Zone> {
        self.zone.lock().unwrap_or_else(|e| e.into_inner())
    }
}

impl Drop for DnsServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// A UDP socket on a loopback port, its receive buffer as large as the machine allows: a
/// crawl of thousands of names asks hundreds at once, and a datagram the default buffer
/// (some 160 small ones) drops is sent again a third of a second later (hickory's resend),
/// a lookup late for the machine's sake, not the name's.
fn bind() -> io::Result<UdpSocket> {
    let socket = socket2::Socket::new(socket2::Domain::IPV4, socket2::Type::DGRAM, None)?;
    // The kernel caps it at its maximum (net.core.rmem_max) without an error.
    socket.set_recv_buffer_size(16 << 20)?;
    socket.set_nonblocking(true)?;
    socket.bind(&SocketAddr::from((Ipv4Addr::LOCALHOST, 0)).into())?;
    UdpSocket::from_std(socket.into())
}

/// A name as the zone keys it.
fn normal(name: &str) -> String {
    name.trim_end_matches('.').to_ascii_lowercase()
}

/// Answers every datagram, each in its own task (a delayed name holds up no other).
async fn serve(socket: Arc<UdpSocket>, zone: Arc<Mutex<Zone>>) {
    let mut buf = vec![0; 4096];
    loop {
        let Ok((n, from)) = socket.recv_from(&mut buf).await else {
            continue;
        };
        let Ok(question) = Message::from_vec(&buf[..n]) else {
            continue;
        };
        let (answer, delay) = answer(&question, &zone);
        let socket = Arc::clone(&socket);
        tokio::spawn(async move {
            if let Some(delay) = delay {
                tokio::time::sleep(delay).await;
            }
            if let Ok(bytes) = answer.to_vec() {
                let _ = socket.send_to(&bytes, from).await;
            }
        });
    }
}

/// The answer to `question`, and how long to wait before sending it.
fn answer(question: &Message, zone: &Mutex<Zone>) -> (Message, Option<Duration>) {
    let mut zone = zone.lock().unwrap_or_else(|e| e.into_inner());
    let mut answer = Message::new(question.metadata.id, MessageType::Response, OpCode::Query);
    answer.metadata.recursion_desired = question.metadata.recursion_desired;
    answer.metadata.recursion_available = true;
    answer.metadata.authoritative = true;
    let mut delay = None;
    for query in &question.queries {
        answer.add_query(query.clone());
        let name = normal(&query.name().to_ascii());
        let query_id = (question.metadata.id, name.clone(), query.query_type());
        if zone.heard.insert(query_id) {
            *zone.questions.entry(name.clone()).or_default() += 1;
        }
        delay = delay.max(zone.delays.get(&name).copied());
        let mut found = false;
        match zone.names.get(&name) {
            None => answer.metadata.response_code = ResponseCode::NXDomain,
            Some(ips) => {
                for ip in ips {
                    let rdata = match (ip, query.query_type()) {
                        (IpAddr::V4(v4), RecordType::A) => RData::A(A(*v4)),
                        (IpAddr::V6(v6), RecordType::AAAA) => RData::AAAA(AAAA(*v6)),
                        _ => continue,
                    };
                    answer.add_answer(Record::from_rdata(query.name().clone(), zone.ttl, rdata));
                    found = true;
                }
            }
        }
        if !found {
            // A negative answer carries the zone's SOA, whose minimum is how long the
            // answer may be kept (RFC 2308), as a real server's does.
            let soa = SOA::new(Name::root(), Name::root(), 1, 3600, 600, 86_400, zone.ttl);
            answer.add_authority(Record::from_rdata(Name::root(), zone.ttl, RData::SOA(soa)));
        }
    }
    (answer, delay)
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::op::Query;

    /// A query for `name`'s A record, with `id`.
    fn query(name: &str, id: u16) -> Vec<u8> {
        let mut message = Message::new(id, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(Name::from_ascii(name).unwrap(), RecordType::A));
        message.to_vec().unwrap()
    }

    #[tokio::test]
    async fn a_query_sent_again_is_answered_again_and_counted_once() {
        let dns = DnsServer::start([("a.test".to_owned(), IpAddr::from([127, 0, 0, 9]))])
            .await
            .unwrap();
        let client = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        let mut buf = [0; 512];
        for id in [7, 7, 8] {
            client
                .send_to(&query("a.test.", id), dns.addr())
                .await
                .unwrap();
            let n = client.recv(&mut buf).await.unwrap();
            let answer = Message::from_vec(&buf[..n]).unwrap();
            assert_eq!(answer.metadata.id, id);
            assert_eq!(answer.answers.len(), 1);
        }
        assert_eq!(dns.questions("a.test"), 2);
        // From another port, as a resolver sends a query again: still the same question.
        let other = UdpSocket::bind((Ipv4Addr::LOCALHOST, 0)).await.unwrap();
        other
            .send_to(&query("a.test.", 8), dns.addr())
            .await
            .unwrap();
        other.recv(&mut buf).await.unwrap();
        assert_eq!(dns.questions("a.test"), 2);
    }
}
