//! The Lua scripts that run the frontier inside Redis, one atomic step each, and the protocol
//! between them and this crate. Each script is a file of `scripts/`, with its keys, arguments
//! and answer described at its top; all but the robots.txt claim are functions of one Redis
//! function library ([`Library`]), after the constants generated here (the host-state field
//! indices, the outcome and fate codes) and the common functions of `scripts/common.lua`;
//! each call starts by reading the clock. The host policy in those functions is
//! `frontier::HostRecord`'s, held to it by `frontier::conformance` (this module's tests).

use std::fmt::Write;
use std::time::Duration;

use redis::{Cmd, Script, ToRedisArgs};

use crate::seen::Probes;

/// The fields of a host's state in a bucket's `hosts` hash, in order: the scripts read them
/// as `h[NEXT]` and so on, with these indices (from 1) generated into their prelude.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum HostField {
    /// Leases out.
    Active = 1,
    /// The earliest start of the next lease, server ms (0: none yet).
    Next,
    /// The host's own delay, ms (-1: the crawl's).
    Delay,
    /// Errors in a row.
    Errs,
    /// When the first of them happened, server ms (0: not failing).
    Since,
    /// 1 once the host is given up.
    GaveUp,
    /// The host's own connection limit (-1: the crawl's).
    Conns,
    /// URLs admitted, counted under a per-host page budget.
    Pages,
    /// The last lease start, server ms (0: none).
    Last,
}

impl HostField {
    const ALL: [HostField; 9] = [
        HostField::Active,
        HostField::Next,
        HostField::Delay,
        HostField::Errs,
        HostField::Since,
        HostField::GaveUp,
        HostField::Conns,
        HostField::Pages,
        HostField::Last,
    ];

    /// The field's value for a host never stored, and for a state written without it.
    fn default(self) -> i64 {
        match self {
            HostField::Delay | HostField::Conns => -1,
            _ => 0,
        }
    }

    /// Bytes the field takes in a stored state: a signed big-endian integer; six for times
    /// in ms (to the year 6400) and what may grow as large.
    fn width(self) -> usize {
        match self {
            HostField::Active | HostField::Errs | HostField::Conns => 4,
            HostField::GaveUp => 1,
            HostField::Next
            | HostField::Delay
            | HostField::Since
            | HostField::Pages
            | HostField::Last => 6,
        }
    }

    /// A state as stored (see `stored_host` in `scripts/common.lua`): byte 255, the number
    /// of fields, then the fields. Fields it lacks read as their defaults; None for bytes
    /// that are not a state.
    pub(crate) fn decode(stored: &[u8]) -> Option<[i64; 9]> {
        let mut out = HostField::ALL.map(HostField::default);
        let [255, n, rest @ ..] = stored else {
            return None;
        };
        let mut at = 0;
        for (field, value) in HostField::ALL.iter().zip(&mut out).take(usize::from(*n)) {
            let bytes = rest.get(at..at + field.width())?;
            at += field.width();
            let unsigned = bytes.iter().fold(0u64, |n, &b| n << 8 | u64::from(b));
            let shift = 64 - 8 * field.width() as u32;
            *value = ((unsigned << shift) as i64) >> shift;
        }
        Some(out)
    }
}

/// A host's state as a bucket's `hosts` hash stores it for the process that owns the bucket
/// next (see [`HostField`]): its owner keeps it in memory as a `frontier::HostRecord` and
/// writes it with its batches. Times are the server's clock in ms; a process's own clock
/// maps onto it by the server's clock at an instant of its own.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HostState([i64; 9]);

impl HostState {
    /// The state of `record`, whose delay is `delay` (None: the crawl's), with the server's
    /// clock `server` ms at `now`.
    pub(crate) fn of(
        record: &frontier::HostRecord,
        delay: Option<Duration>,
        now: std::time::Instant,
        server: i64,
    ) -> HostState {
        let ms = |t: Option<std::time::Instant>| {
            t.map_or(0, |t| {
                let ahead = t.saturating_duration_since(now).as_millis();
                let behind = now.saturating_duration_since(t).as_millis();
                (server + i64::try_from(ahead).unwrap_or(i64::MAX / 2)
                    - i64::try_from(behind).unwrap_or(0))
                .max(1)
            })
        };
        let mut v = HostField::ALL.map(HostField::default);
        v[HostField::Next as usize - 1] = ms(record.next_allowed);
        v[HostField::Delay as usize - 1] = delay.map_or(-1, millis);
        v[HostField::Errs as usize - 1] = i64::from(record.errors_in_row);
        v[HostField::Since as usize - 1] = ms(record.failing_since);
        v[HostField::GaveUp as usize - 1] = i64::from(record.given_up);
        v[HostField::Last as usize - 1] = ms(record.last_start);
        HostState(v)
    }

    /// Sets `record` and `delay` from this state, with the server's clock `server` ms at
    /// `now`.
    pub(crate) fn apply(
        &self,
        record: &mut frontier::HostRecord,
        delay: &mut Option<Duration>,
        now: std::time::Instant,
        server: i64,
    ) {
        let v = &self.0;
        let at = |ms: i64| {
            (ms > 0).then(|| {
                let d = Duration::from_millis(ms.abs_diff(server));
                if ms >= server {
                    now.checked_add(d).unwrap_or(now)
                } else {
                    now.checked_sub(d).unwrap_or(now)
                }
            })
        };
        record.next_allowed = at(v[HostField::Next as usize - 1]);
        record.last_start = at(v[HostField::Last as usize - 1]);
        record.failing_since = at(v[HostField::Since as usize - 1]);
        record.errors_in_row = u32::try_from(v[HostField::Errs as usize - 1]).unwrap_or(0);
        record.given_up = v[HostField::GaveUp as usize - 1] == 1;
        let stored_delay = v[HostField::Delay as usize - 1];
        if stored_delay >= 0 {
            *delay = Some(Duration::from_millis(stored_delay.unsigned_abs()));
        }
    }

    /// The state in stored bytes; None for bytes that are not one.
    pub(crate) fn decode(stored: &[u8]) -> Option<HostState> {
        HostField::decode(stored).map(HostState)
    }

    /// The bytes stored.
    pub(crate) fn encode(&self) -> Vec<u8> {
        let mut out = vec![255, HostField::ALL.len() as u8];
        for (field, &value) in HostField::ALL.iter().zip(&self.0) {
            let bytes = value.to_be_bytes();
            out.extend_from_slice(&bytes[8 - field.width()..]);
        }
        out
    }
}

/// Where the scripts read the time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Clock {
    /// The server's clock (`TIME`): one clock for every process.
    Server,
    /// The number under the key `TAG:clock`, for the conformance tests, which set the time
    /// of each step.
    #[cfg(test)]
    Key,
}

/// On a Redis Cluster, the key each call declares besides its own, which no script ever
/// writes: `{TAG}:moving`, of the first key's hash tag. While a slot is being moved to
/// another master (`redis-cli --cluster reshard`), the cluster refuses a call on several keys
/// of it of which some are missing (`TRYAGAIN`, before the function runs; the client retries
/// it like a blip), and this one always is. Without the refusal, a call on the old master
/// would fail at the first key already moved, its earlier writes made (functions are not
/// rolled back), and one on the new master (sent there with `ASKING`) would read the keys not
/// moved yet as missing: the cluster checks the keys a call declares, and the per-host queues
/// and the seen-test's sets are named inside the functions. (It was a read of `CLUSTER
/// NODES` in each call, which cost a cluster's masters as much CPU as the rest of the call.)
const MOVING: &[u8] = b":moving";

/// The constants every function of the library reads: the bits of a seen-test set's key.
fn constants() -> String {
    format!("local SET_KEY_BITS = {}\n", crate::seen::SET_KEY_BYTES * 8)
}

/// The globals the functions use, as locals of the library, set by a call's `begin` the
/// first time (the library's top level sees only `redis.register_function`, kept as
/// `library`): a function's global is looked up in an empty table, then through its
/// metatable in Redis's, where a local is one step (3% of a crawl's Redis instructions,
/// docs/benchmarks.md).
const GLOBALS: &str = "local library = redis\n\
    local function globals()\n\
    return redis, string, math, table, struct, tonumber, tostring, pairs, ipairs, unpack, type, error\n\
    end\n\
    local redis, string, math, table, struct, tonumber, tostring, pairs, ipairs, unpack, type, error\n";

/// What every call of a function does first: take its keys and arguments, the bucket's tag
/// (ARGV[1]) and the time in ms, and start with nothing read (see `scripts/common.lua`).
fn begin(clock: Clock) -> String {
    let mut lua = String::from(
        "local function begin(keys, args)\n\
         if not string then\n\
         redis, string, math, table, struct, tonumber, tostring, pairs, ipairs, unpack, type, error = globals()\n\
         end\n\
         KEYS, ARGV = keys, args\n\
         tag = ARGV[1]\n",
    );
    lua.push_str(match clock {
        Clock::Server => {
            "local t = redis.call('TIME')\n\
             now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)\n"
        }
        #[cfg(test)]
        Clock::Key => "now = tonumber(redis.call('GET', tag .. ':clock'))\n",
    });
    lua.push_str("forget()\nend\n");
    lua
}

/// The functions every bucket script uses: host state and policy, queues, the seen-test.
const COMMON: &str = include_str!("scripts/common.lua");

/// The bucket scripts, by name and source: each becomes a function of the library.
const SCRIPTS: [(&str, &str); 8] = [
    ("batch", include_str!("scripts/batch.lua")),
    ("own", include_str!("scripts/own.lua")),
    ("present", include_str!("scripts/present.lua")),
    ("mark_sitemap", include_str!("scripts/mark_sitemap.lua")),
    ("unmark_sitemap", include_str!("scripts/unmark_sitemap.lua")),
    ("content", include_str!("scripts/content.lua")),
    ("address", include_str!("scripts/address.lua")),
    ("heard_from", include_str!("scripts/heard_from.lua")),
];

/// The frontier's Lua, as one Redis function library (`FUNCTION LOAD`): the common functions
/// are defined once, when the library loads, where a script (`EVALSHA`) defines them anew on
/// every run, some 7 µs of Redis's CPU a call (docs/benchmarks.md). The library and its
/// functions are named by a hash of their code, so that crawlers of other versions, which
/// may share a server, each call their own.
pub(crate) struct Library {
    /// `politecrawl_` and the hash.
    name: String,
    /// What `FUNCTION LOAD` takes.
    code: String,
}

impl Library {
    fn new(clock: Clock) -> Library {
        let mut body = String::from("-- Generated by scripts.rs.\n");
        // Set by `begin` for each call: the common functions read them.
        body.push_str("local KEYS, ARGV, tag, now\n");
        body.push_str(GLOBALS);
        body.push_str(&constants());
        body.push_str(COMMON);
        body.push('\n');
        body.push_str(&begin(clock));
        for (name, source) in SCRIPTS {
            let _ = write!(
                body,
                "library.register_function('pc_{PLACE}_{name}', function(keys, args)\n\
                 begin(keys, args)\n\
                 {source}\nend)\n"
            );
        }
        let hash = Script::new(&body).get_hash()[..16].to_owned();
        let body = body.replace(&format!("pc_{PLACE}_"), &format!("pc_{hash}_"));
        Library {
            name: format!("politecrawl_{hash}"),
            code: format!("#!lua name=politecrawl_{hash}\n{body}"),
        }
    }

    /// The command that loads the library, replacing one of its name (the same code).
    pub(crate) fn load(&self) -> Cmd {
        let mut cmd = redis::cmd("FUNCTION");
        cmd.arg("LOAD").arg("REPLACE").arg(&self.code);
        cmd
    }

    /// Whether a call failed because the server does not hold the library: a server
    /// restarted without it (from an older snapshot, or none), another master after a
    /// reshard, `FUNCTION FLUSH`.
    pub(crate) fn missing(err: &redis::RedisError) -> bool {
        err.to_string().contains("Function not found")
    }

    /// Its name, as `FUNCTION LIST` shows it.
    #[cfg(test)]
    pub(crate) fn name(&self) -> &str {
        &self.name
    }
}

/// What stands for the hash in the library's code while it is hashed.
const PLACE: &str = "@";

/// A function of the library.
pub(crate) struct Function {
    name: String,
    /// Called on a cluster: each call declares [`MOVING`] too.
    cluster: bool,
}

impl Function {
    /// A call, its keys and arguments to add.
    pub(crate) fn prepare_invoke(&self) -> Call<'_> {
        Call {
            function: self,
            keys: Vec::new(),
            args: Vec::new(),
        }
    }
}

/// A function call being built, as `redis::ScriptInvocation` builds a script's.
pub(crate) struct Call<'a> {
    function: &'a Function,
    keys: Vec<Vec<u8>>,
    args: Vec<Vec<u8>>,
}

impl Call<'_> {
    pub(crate) fn key(&mut self, key: impl ToRedisArgs) -> &mut Self {
        key.write_redis_args(&mut self.keys);
        self
    }

    pub(crate) fn arg(&mut self, arg: impl ToRedisArgs) -> &mut Self {
        arg.write_redis_args(&mut self.args);
        self
    }

    /// The `FCALL` command.
    pub(crate) fn cmd(&self) -> Cmd {
        let moving = self
            .keys
            .first()
            .filter(|_| self.function.cluster)
            .and_then(|key| {
                let end = key.iter().position(|&b| b == b'}')?;
                key.starts_with(b"{")
                    .then(|| [&key[..=end], MOVING].concat())
            });
        let mut cmd = redis::cmd("FCALL");
        cmd.arg(&self.function.name)
            .arg(self.keys.len() + usize::from(moving.is_some()));
        for key in self.keys.iter().chain(&moving) {
            cmd.arg(&key[..]);
        }
        for arg in &self.args {
            cmd.arg(&arg[..]);
        }
        cmd
    }

    /// Calls it on a plain connection, loading the library first if the server lacks it.
    #[cfg(test)]
    pub(crate) fn invoke<T: redis::FromRedisValue>(
        &self,
        con: &mut redis::Connection,
        library: &Library,
    ) -> redis::RedisResult<T> {
        match self.cmd().query(con) {
            Err(err) if Library::missing(&err) => {
                library.load().exec(con)?;
                self.cmd().query(con)
            }
            answer => answer,
        }
    }
}

/// The scripts, as functions of one library, loaded once per server.
pub(crate) struct Scripts {
    pub(crate) library: Library,
    pub(crate) batch: Function,
    pub(crate) own: Function,
    pub(crate) present: Function,
    pub(crate) mark_sitemap: Function,
    pub(crate) unmark_sitemap: Function,
    pub(crate) content: Function,
    pub(crate) address: Function,
    pub(crate) heard_from: Function,
    /// Not a bucket's: scripts of their own, sent with `EVALSHA`.
    pub(crate) claim_robots: Script,
    pub(crate) release_robots: Script,
}

impl Scripts {
    /// The scripts for a single server, or (`cluster`) for a Redis Cluster.
    pub(crate) fn new(cluster: bool) -> Scripts {
        Scripts::with_clock(Clock::Server, cluster)
    }

    pub(crate) fn with_clock(clock: Clock, cluster: bool) -> Scripts {
        let library = Library::new(clock);
        let hash = library.name.trim_start_matches("politecrawl_").to_owned();
        let function = |name: &str| Function {
            name: format!("pc_{hash}_{name}"),
            cluster,
        };
        Scripts {
            batch: function("batch"),
            own: function("own"),
            present: function("present"),
            mark_sitemap: function("mark_sitemap"),
            unmark_sitemap: function("unmark_sitemap"),
            content: function("content"),
            address: function("address"),
            heard_from: function("heard_from"),
            claim_robots: Script::new(include_str!("scripts/claim_robots.lua")),
            release_robots: Script::new(include_str!("scripts/release_robots.lua")),
            library,
        }
    }

    /// A batch script of bucket `tag`: its steps of links to add with [`links_step`] and
    /// [`link`], then, sent by the bucket's owner (`owner`: its "id epoch"), its log with
    /// [`owner_log`] (see `scripts/batch.lua`).
    pub(crate) fn batch_call(
        &self,
        tag: &str,
        schedule: &str,
        request: &str,
        budgets: [u64; 3],
        owner: Option<&str>,
        steps: usize,
    ) -> Call<'_> {
        let mut invocation = self.batch.prepare_invoke();
        for key in BATCH_KEYS {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(tag)
            .arg(schedule)
            .arg(request)
            .arg(budgets[0])
            .arg(budgets[1])
            .arg(budgets[2])
            .arg(owner.unwrap_or(""))
            .arg(steps);
        invocation
    }

    /// An own script of bucket `tag` (see `scripts/own.lua`): process `id`, holding it at
    /// `epoch` (0: not), takes it (or renews its hold) for `ttl`, taking it over from
    /// `gone` (a holder's "id epoch") if that holds it; or, `release`, lets it go.
    pub(crate) fn own_call(
        &self,
        tag: &str,
        id: &str,
        epoch: i64,
        ttl: Duration,
        release: bool,
        gone: Option<&str>,
    ) -> Call<'_> {
        let mut invocation = self.own.prepare_invoke();
        for key in ["owner", "counts", "leases", "work", "inbox"] {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(tag)
            .arg(id)
            .arg(epoch)
            .arg(millis(ttl).max(1))
            .arg(if release { "release" } else { "take" });
        if let Some(gone) = gone {
            invocation.arg(gone);
        }
        invocation
    }
}

/// The keys of a batch script, after its bucket's tag (see `scripts/batch.lua`).
pub(crate) const BATCH_KEYS: [&str; 12] = [
    "seen", "counts", "leases", "hosts", "work", "inbox", "owner", "pages", "domains", "replies0",
    "replies1", "links",
];

/// Adds a batch step's head: how many links follow, each added with [`link`].
pub(crate) fn links_step(invocation: &mut Call<'_>, links: usize) {
    invocation.arg(links);
}

/// The key of `address`'s politeness (`scripts/address.lua`), in its group of tag `tag`.
pub(crate) fn address_key(tag: &str, address: std::net::IpAddr) -> String {
    format!("{tag}:{address}")
}

/// Adds a link to a batch entry: its seen-test probes, then one text the script reads only
/// if the link is new: its host, its host's registrable domain (for the domain budgets; may
/// be empty) and its queue entry (attempts 0, depth, URL, referrer and memo, as
/// [`memo_text`](crate::frontier::batch::memo_text) writes it), space-separated.
#[expect(
    clippy::too_many_arguments,
    reason = "one per field of the script's link, in the script's order"
)]
pub(crate) fn link(
    invocation: &mut Call<'_>,
    probes: &Probes,
    host: &str,
    depth: u32,
    url: &str,
    from: Option<&str>,
    memo: Option<&str>,
    domain: &str,
) {
    let text = format!("{host} {domain} {}", queue_entry(depth, url, from, memo));
    invocation.arg(probes.bytes()).arg(text);
}

/// A new URL's queue entry (see `scripts/common.lua`): attempts 0, its depth, the URL, and
/// its referrer and memo (as [`memo_text`](crate::frontier::batch::memo_text) writes it)
/// when it has them, space-separated.
pub(crate) fn queue_entry(depth: u32, url: &str, from: Option<&str>, memo: Option<&str>) -> String {
    let mut text = format!("0 {depth} {url}");
    // A referrer is a URL, one token; anything else is not one, and not kept.
    let from =
        from.filter(|from| !from.is_empty() && !from.contains(' ') && !from.starts_with('~'));
    for tail in [from, memo].into_iter().flatten() {
        text.push(' ');
        text.push_str(tail);
    }
    text
}

/// A duration in whole milliseconds, as the scripts take times.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests {
    use super::{HostField, HostState, Scripts};
    use std::time::Duration;

    /// The keys an `FCALL` declares, after its function's name and their count.
    fn declared(cluster: bool) -> Vec<String> {
        let scripts = Scripts::new(cluster);
        let call = scripts.own_call("{c:7}", "p", 0, Duration::from_secs(30), false, None);
        let args: Vec<String> = call
            .cmd()
            .args_iter()
            .map(|arg| match arg {
                redis::Arg::Simple(bytes) => String::from_utf8_lossy(bytes).into_owned(),
                _ => String::new(),
            })
            .collect();
        assert_eq!(args[0], "FCALL");
        let n: usize = args[2].parse().expect("a key count");
        args[3..3 + n].to_vec()
    }

    #[test]
    fn a_call_on_a_cluster_declares_a_key_no_script_writes() {
        let single = declared(false);
        assert_eq!(single.first().map(String::as_str), Some("{c:7}:owner"));
        assert!(!single.iter().any(|key| key.ends_with(":moving")));
        let cluster = declared(true);
        // The same keys, in the same order (the scripts read KEYS by index), and the one
        // that makes a moving slot refuse the call.
        assert_eq!(cluster[..single.len()], single[..]);
        assert_eq!(cluster[single.len()..], ["{c:7}:moving".to_owned()]);
    }

    /// A host's state as stored: byte 255, the number of fields, the fields.
    fn host_bytes(fields: &[i64]) -> Vec<u8> {
        let mut out = vec![255, fields.len() as u8];
        for (field, value) in HostField::ALL.iter().zip(fields) {
            out.extend_from_slice(&value.to_be_bytes()[8 - field.width()..]);
        }
        out
    }

    #[test]
    fn a_host_state_of_another_version_reads_with_defaults_for_what_it_lacks() {
        let read = |bytes: &[u8]| HostState::decode(bytes).map(|s| s.0);
        // Fields: active, next, delay, errors, since, given up, connections, pages, last.
        let whole = [2, 1000, -1, 1, 900, 0, 4, 7, 800];
        assert_eq!(read(&host_bytes(&whole)), Some(whole));
        // Written before pages and the last start were kept: they read as 0.
        assert_eq!(
            read(&host_bytes(&whole[..7])),
            Some([2, 1000, -1, 1, 900, 0, 4, 0, 0])
        );
        // Written by a later version with a tenth field: the nine known are read.
        let mut later = host_bytes(&whole);
        later[1] = 10;
        later.extend([0, 0, 0, 3]);
        assert_eq!(read(&later), Some(whole));
        // Negative values and times in ms past 2^32 come back as they went.
        let far = [0, 1_795_796_411_199, -1, 0, 0, 0, -1, 0, 0];
        assert_eq!(read(&host_bytes(&far)), Some(far));
        // Not a state: None, never a panic.
        for bad in [&b""[..], b"\x00\x09", b"\xff", b"\xff\x09\x00"] {
            assert_eq!(read(bad), None, "{bad:?}");
        }
        // A state as written reads back.
        let state = HostState(whole);
        assert_eq!(HostState::decode(&state.encode()), Some(state));
    }
}
