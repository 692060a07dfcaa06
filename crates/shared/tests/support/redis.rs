//! Real `redis-server` processes on free loopback ports, for tests: one server, or a
//! three-master cluster. Shared by this crate's tests and the crawler's (`tests/shared.rs`).

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A `redis-server` of its own, in a temporary directory, killed when dropped.
pub struct RedisServer {
    child: Option<Child>,
    /// Its port on 127.0.0.1.
    pub port: u16,
    dir: tempfile::TempDir,
    extra: Vec<String>,
}

/// A port free now (and its cluster bus port, port + 10000, too).
fn free_port() -> u16 {
    loop {
        let port = TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .expect("a free port")
            .port();
        if port < 55000 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

impl RedisServer {
    /// A server without persistence.
    pub fn start() -> RedisServer {
        RedisServer::start_with(&["--save", "", "--appendonly", "no"])
    }

    /// A server with these extra arguments (`--appendonly yes`, say).
    pub fn start_with(extra: &[&str]) -> RedisServer {
        let mut server = RedisServer {
            child: None,
            port: free_port(),
            dir: tempfile::tempdir().expect("a temporary directory"),
            extra: extra.iter().map(|s| s.to_string()).collect(),
        };
        server.spawn();
        server
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .arg("--port")
            .arg(self.port.to_string())
            .arg("--bind")
            .arg("127.0.0.1")
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server runs (install it: apt-get install redis-server; .ci/run does)");
        self.child = Some(child);
        wait_for(self.port);
    }

    /// `redis://127.0.0.1:PORT`.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Runs one command with `redis-cli` and answers its output.
    pub fn cli(&self, args: &[&str]) -> String {
        cli(self.port, args)
    }

    /// Stops the server as an operator would (`SHUTDOWN`, which writes its persistence
    /// files) and starts it again on the same port and directory.
    pub fn restart(&mut self) {
        self.stop_for(Duration::ZERO);
    }

    /// [`RedisServer::restart`], the server down for `down` in between.
    pub fn stop_for(&mut self, down: Duration) {
        let _ = self.cli(&["SHUTDOWN"]);
        if let Some(mut child) = self.child.take() {
            let _ = child.wait();
        }
        std::thread::sleep(down);
        self.spawn();
    }

    /// Kills the server (SIGKILL: nothing written) and starts it again on the same port and
    /// directory, from whatever its directory holds: after a `SAVE`, the state of that
    /// instant, as a crash without AOF or a failover to a lagging replica leaves it.
    pub fn crash_and_restart(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
        self.spawn();
    }

    /// Kills the server (SIGKILL) for good.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }

    /// The server's directory.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

fn cli(port: u16, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .arg("-p")
        .arg(port.to_string())
        .args(args)
        .output()
        .expect("redis-cli runs");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Waits until the server on `port` answers PING.
fn wait_for(port: u16) {
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Ok(mut stream) = TcpStream::connect(("127.0.0.1", port)) {
            let _ = stream.set_read_timeout(Some(Duration::from_secs(1)));
            let mut answer = [0; 7];
            if stream.write_all(b"PING\r\n").is_ok()
                && stream.read_exact(&mut answer).is_ok()
                && &answer == b"+PONG\r\n"
            {
                return;
            }
        }
        assert!(
            Instant::now() < deadline,
            "redis-server on {port} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Three masters with no replicas, made a cluster with `redis-cli --cluster create`.
pub struct RedisCluster {
    /// The nodes; any one's URL reaches the whole cluster.
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    /// Starts the nodes and waits until the cluster serves every slot.
    pub fn start() -> RedisCluster {
        RedisCluster::start_with_aof("no")
    }

    /// [`RedisCluster::start`], each node writing its append-only file, so that a node
    /// restarted ([`RedisServer::restart`]) comes back with its keys.
    pub fn start_durable() -> RedisCluster {
        RedisCluster::start_with_aof("yes")
    }

    fn start_with_aof(aof: &str) -> RedisCluster {
        let nodes: Vec<RedisServer> = (0..3)
            .map(|_| {
                RedisServer::start_with(&[
                    "--save",
                    "",
                    "--appendonly",
                    aof,
                    "--cluster-enabled",
                    "yes",
                    "--cluster-config-file",
                    "nodes.conf",
                ])
            })
            .collect();
        let addresses: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args = vec!["--cluster", "create"];
        args.extend(addresses.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        let out = cli(nodes[0].port, &args);
        assert!(out.contains("[OK]"), "cluster create: {out}");
        let deadline = Instant::now() + Duration::from_secs(20);
        while !nodes
            .iter()
            .all(|n| n.cli(&["CLUSTER", "INFO"]).contains("cluster_state:ok"))
        {
            assert!(Instant::now() < deadline, "the cluster did not become ok");
            std::thread::sleep(Duration::from_millis(50));
        }
        RedisCluster { nodes }
    }

    /// The URL of the first node.
    pub fn url(&self) -> String {
        self.nodes[0].url()
    }
}

/// A TCP proxy on 127.0.0.1 in front of `upstream` that holds every byte `one_way` in each
/// direction, as a network between machines does: what a crawl through Redis on another
/// machine meets. Bytes keep their order; a connection's two directions are independent,
/// so pipelined requests overlap as they would on a real link. Runs until the test ends.
/// Its upstream can be changed ([`DelayProxy::switch_to`]): new connections go there, as
/// a failover moves a service's address to another server. It can stall
/// ([`DelayProxy::stall`]): connections stay open and nothing goes through for a while, as
/// when a link between machines drops packets. It can drop its connections silently
/// ([`DelayProxy::black_hole`]): they stay open and carry nothing ever again, as when a
/// firewall forgets a connection or a server dies without a reset.
pub struct DelayProxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
    upstream: std::sync::Arc<std::sync::atomic::AtomicU16>,
    /// Until when nothing goes through: milliseconds after `epoch`.
    stalled_until: std::sync::Arc<std::sync::atomic::AtomicU64>,
    epoch: Instant,
    /// Connections numbered below this carry nothing; each is numbered as it opens.
    dead_below: std::sync::Arc<std::sync::atomic::AtomicU64>,
    opened: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl DelayProxy {
    pub fn start(upstream: u16, one_way: Duration) -> DelayProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the proxy");
        let port = listener.local_addr().unwrap().port();
        let upstream = std::sync::Arc::new(std::sync::atomic::AtomicU16::new(upstream));
        let target = std::sync::Arc::clone(&upstream);
        let stalled_until = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let stall = std::sync::Arc::clone(&stalled_until);
        let epoch = Instant::now();
        let dead_below = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let opened = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let (dead, count) = (
            std::sync::Arc::clone(&dead_below),
            std::sync::Arc::clone(&opened),
        );
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(client) = client else { continue };
                let to = target.load(std::sync::atomic::Ordering::Relaxed);
                let Ok(server) = TcpStream::connect(("127.0.0.1", to)) else {
                    continue;
                };
                let _ = client.set_nodelay(true);
                let _ = server.set_nodelay(true);
                let number = count.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                for (from, to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server, client),
                ] {
                    let gone = (number, std::sync::Arc::clone(&dead));
                    let stall = (epoch, std::sync::Arc::clone(&stall));
                    delay_one_way(from, to, one_way, stall, gone);
                }
            }
        });
        DelayProxy {
            port,
            upstream,
            stalled_until,
            epoch,
            dead_below,
            opened,
        }
    }

    /// Lets nothing through the connections open now, ever again, without closing them;
    /// connections opened from now on go through.
    pub fn black_hole(&self) {
        let open = self.opened.load(std::sync::atomic::Ordering::Relaxed);
        self.dead_below
            .store(open, std::sync::atomic::Ordering::Relaxed);
    }

    /// Lets nothing through, either way, for `time` from now: bytes read meanwhile go on
    /// after it, in order.
    pub fn stall(&self, time: Duration) {
        let until = (self.epoch.elapsed() + time).as_millis() as u64;
        self.stalled_until
            .store(until, std::sync::atomic::Ordering::Relaxed);
    }

    /// Sends new connections to `port` from now on.
    pub fn switch_to(&self, port: u16) {
        self.upstream
            .store(port, std::sync::atomic::Ordering::Relaxed);
    }

    /// `redis://127.0.0.1:PORT` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}

/// Copies `from` to `to`, each chunk `delay` after it was read, and none while the proxy is
/// stalled (until `stall`'s milliseconds after its instant), nor ever once the connection
/// (`gone`: its number, and the number below which connections carry nothing) is dropped: a
/// reader thread stamps the chunks, a writer thread waits out each stamp.
fn delay_one_way(
    mut from: TcpStream,
    mut to: TcpStream,
    delay: Duration,
    stall: (Instant, std::sync::Arc<std::sync::atomic::AtomicU64>),
    gone: (u64, std::sync::Arc<std::sync::atomic::AtomicU64>),
) {
    let (send, receive) = std::sync::mpsc::channel::<(Instant, Vec<u8>)>();
    std::thread::spawn(move || {
        let mut buf = vec![0; 64 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if send
                        .send((Instant::now() + delay, buf[..n].to_vec()))
                        .is_err()
                    {
                        break;
                    }
                }
            }
        }
    });
    std::thread::spawn(move || {
        let (epoch, stalled_until) = stall;
        for (due, bytes) in receive {
            loop {
                let stalled = stalled_until.load(std::sync::atomic::Ordering::Relaxed);
                let until = due.max(epoch + Duration::from_millis(stalled));
                let now = Instant::now();
                if until <= now {
                    break;
                }
                std::thread::sleep((until - now).min(Duration::from_millis(10)));
            }
            if gone.0 < gone.1.load(std::sync::atomic::Ordering::Relaxed) {
                // Dropped silently: the bytes go nowhere, the connection stays open.
                continue;
            }
            if to.write_all(&bytes).is_err() {
                break;
            }
        }
        if gone.0 < gone.1.load(std::sync::atomic::Ordering::Relaxed) {
            // Never closed either: a peer that forgot the connection does not say so.
            std::thread::sleep(Duration::from_secs(3600));
        }
        let _ = to.shutdown(std::net::Shutdown::Write);
    });
}

/// A TCP proxy on 127.0.0.1 in front of `upstream` that cuts every `every`-th answer off:
/// the chunk read from the server is dropped and the connection closed both ways, after the
/// server has run the request. What a timeout or a dropped connection does to a script whose
/// answer was on its way. Runs until the test ends.
pub struct CutProxy {
    /// Its port on 127.0.0.1.
    pub port: u16,
}

impl CutProxy {
    pub fn start(upstream: u16, every: usize) -> CutProxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the proxy");
        let port = listener.local_addr().unwrap().port();
        let answers = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        std::thread::spawn(move || {
            for client in listener.incoming() {
                let Ok(mut client) = client else { continue };
                let Ok(mut server) = TcpStream::connect(("127.0.0.1", upstream)) else {
                    continue;
                };
                let (mut to_server, mut from_client) =
                    (server.try_clone().unwrap(), client.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut from_client, &mut to_server);
                    let _ = to_server.shutdown(std::net::Shutdown::Write);
                });
                let answers = std::sync::Arc::clone(&answers);
                std::thread::spawn(move || {
                    let mut buf = vec![0; 64 * 1024];
                    loop {
                        let n = match server.read(&mut buf) {
                            Ok(0) | Err(_) => break,
                            Ok(n) => n,
                        };
                        let i = answers.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
                        if i % every == every - 1 || client.write_all(&buf[..n]).is_err() {
                            break;
                        }
                    }
                    let _ = client.shutdown(std::net::Shutdown::Both);
                    let _ = server.shutdown(std::net::Shutdown::Both);
                });
            }
        });
        CutProxy { port }
    }

    /// `redis://127.0.0.1:PORT` of the proxy.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }
}
