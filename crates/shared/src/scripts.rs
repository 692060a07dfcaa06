//! The Lua scripts that run the frontier inside Redis, one atomic step each, and the protocol
//! between them and this crate. Each script is a file of `scripts/`, with its keys, arguments
//! and answer described at its top; all but the robots.txt claim are functions of one Redis
//! function library ([`Library`]), after the constants generated here (the host-state field
//! indices, the outcome and fate codes) and the common functions of `scripts/common.lua`;
//! each call starts by reading the clock. The host policy in those functions is
//! `frontier::HostRecord`'s, held to it by `frontier::conformance` (this module's tests).

use std::fmt::Write;
use std::time::Duration;

use frontier::{Fate, Outcome, Politeness};
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

    fn lua(self) -> &'static str {
        match self {
            HostField::Active => "ACTIVE",
            HostField::Next => "NEXT",
            HostField::Delay => "DELAY",
            HostField::Errs => "ERRS",
            HostField::Since => "SINCE",
            HostField::GaveUp => "GAVEUP",
            HostField::Conns => "CONNS",
            HostField::Pages => "PAGES",
            HostField::Last => "LAST",
        }
    }

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

    /// A state as the scripts store it (see `stored_host` in `scripts/common.lua`): byte
    /// 255, the number of fields, then the fields. Fields it lacks read as their defaults.
    /// For tests, which look at what the scripts stored.
    #[cfg(test)]
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

/// An outcome as the batch script reads it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum OutcomeCode {
    Success = 0,
    Skipped = 1,
    Failure = 2,
    FailureToRetry = 3,
    ErrorAnswer = 4,
    /// Not an outcome: the lease went back unfetched ([`Ending::GivenBack`]).
    GivenBack = 5,
}

impl OutcomeCode {
    const ALL: [OutcomeCode; 6] = [
        OutcomeCode::Success,
        OutcomeCode::Skipped,
        OutcomeCode::Failure,
        OutcomeCode::FailureToRetry,
        OutcomeCode::ErrorAnswer,
        OutcomeCode::GivenBack,
    ];

    fn lua(self) -> &'static str {
        match self {
            OutcomeCode::Success => "OUTCOME_SUCCESS",
            OutcomeCode::Skipped => "OUTCOME_SKIPPED",
            OutcomeCode::Failure => "OUTCOME_FAILURE",
            OutcomeCode::FailureToRetry => "OUTCOME_FAILURE_TO_RETRY",
            OutcomeCode::ErrorAnswer => "OUTCOME_ERROR_ANSWER",
            OutcomeCode::GivenBack => "OUTCOME_GIVEN_BACK",
        }
    }

    /// An outcome's code and its `Retry-After` in ms (-1 for none), as a batch entry carries
    /// them.
    pub(crate) fn of(outcome: Outcome) -> (u8, i64) {
        let (code, retry_after) = match outcome {
            Outcome::Success => (OutcomeCode::Success, None),
            Outcome::Skipped => (OutcomeCode::Skipped, None),
            Outcome::Failure {
                retry: false,
                retry_after,
            } => (OutcomeCode::Failure, retry_after),
            Outcome::Failure {
                retry: true,
                retry_after,
            } => (OutcomeCode::FailureToRetry, retry_after),
            Outcome::ErrorAnswer { retry_after } => (OutcomeCode::ErrorAnswer, retry_after),
        };
        (code as u8, retry_after.map_or(-1, millis))
    }
}

/// What the batch script answers of an entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FateCode {
    /// An entry of links alone, with no lease.
    LinksAlone = -2,
    /// The lease is not held: it expired and went back to the crawl, or its token is
    /// another URL's after a rollback.
    NotHeld = -1,
    Succeeded = 0,
    Failed = 1,
    Retried = 2,
    Exhausted = 3,
    DroppedWithHost = 4,
    /// The lease went back unfetched, its URL first of its host's queue again.
    GivenBack = 5,
}

impl FateCode {
    const ALL: [FateCode; 8] = [
        FateCode::LinksAlone,
        FateCode::NotHeld,
        FateCode::Succeeded,
        FateCode::Failed,
        FateCode::Retried,
        FateCode::Exhausted,
        FateCode::DroppedWithHost,
        FateCode::GivenBack,
    ];

    fn lua(self) -> &'static str {
        match self {
            FateCode::LinksAlone => "FATE_LINKS_ALONE",
            FateCode::NotHeld => "FATE_NOT_HELD",
            FateCode::Succeeded => "FATE_SUCCEEDED",
            FateCode::Failed => "FATE_FAILED",
            FateCode::Retried => "FATE_RETRIED",
            FateCode::Exhausted => "FATE_EXHAUSTED",
            FateCode::DroppedWithHost => "FATE_DROPPED_WITH_HOST",
            FateCode::GivenBack => "FATE_GIVEN_BACK",
        }
    }

    /// The fate a completion's answer says (`next_attempt` its second number); `None` when
    /// the lease was not held, for an entry of links alone, and for a lease given back.
    pub(crate) fn fate(code: i64, next_attempt: i64) -> Result<Option<Fate>, String> {
        let code = FateCode::ALL
            .into_iter()
            .find(|c| *c as i64 == code)
            .ok_or_else(|| format!("unknown fate {code}"))?;
        Ok(match code {
            FateCode::LinksAlone | FateCode::NotHeld | FateCode::GivenBack => None,
            FateCode::Succeeded => Some(Fate::Succeeded),
            FateCode::Failed => Some(Fate::Failed),
            FateCode::Retried => Some(Fate::Retried {
                attempts: u32::try_from(next_attempt).unwrap_or(u32::MAX),
            }),
            FateCode::Exhausted => Some(Fate::Exhausted),
            FateCode::DroppedWithHost => Some(Fate::DroppedWithHost),
        })
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

/// A member of the bucket's sorted sets of lease deadlines (`due`) and ready hosts (`ready`),
/// at +inf where no read reaches it: longer than a listpack's members may be
/// (`zset-max-listpack-value`, 64 bytes by default), it makes its set a skiplist for good.
/// A listpack's insert scans every member before it, parsing each (the deadlines, added
/// last, went past them all: 8% of a crawl's Redis instructions, docs/benchmarks.md); a
/// skiplist's takes a few steps.
const SKIPLIST_MEMBER: &str =
    "(kept so that this sorted set is a skiplist: a member over a listpacks 64 bytes)";

/// The constants above, as every function of the library reads them.
fn constants() -> String {
    let mut lua = String::new();
    let _ = writeln!(lua, "local SKIPLIST = '{SKIPLIST_MEMBER}'");
    let mut defaults = Vec::new();
    for field in HostField::ALL {
        let _ = writeln!(lua, "local {} = {}", field.lua(), field as u8);
        defaults.push(field.default().to_string());
    }
    let _ = writeln!(lua, "local HOST_DEFAULTS = {{{}}}", defaults.join(", "));
    let _ = writeln!(
        lua,
        "local SET_KEY_BITS = {}",
        crate::seen::SET_KEY_BYTES * 8
    );
    // A host's state as written and read (a library's top level may call no function):
    // `struct`'s formats of the fields, all of them after the marker and the count
    // (HOST_PACK), and the first n of them (HOST_UNPACK[n]).
    let n = HostField::ALL.len();
    let format = |fields: &[HostField]| -> String {
        fields.iter().map(|f| format!("i{}", f.width())).collect()
    };
    let _ = writeln!(lua, "local HOST_PACK = '>BB{}'", format(&HostField::ALL));
    let unpack: Vec<String> = (1..=n)
        .map(|k| format!("'>{}'", format(&HostField::ALL[..k])))
        .collect();
    let _ = writeln!(lua, "local HOST_UNPACK = {{{}}}", unpack.join(", "));
    for code in OutcomeCode::ALL {
        let _ = writeln!(lua, "local {} = {}", code.lua(), code as u8);
    }
    for code in FateCode::ALL {
        let _ = writeln!(lua, "local {} = {}", code.lua(), code as i64);
    }
    lua
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
const SCRIPTS: [(&str, &str); 11] = [
    ("batch", include_str!("scripts/batch.lua")),
    ("lease", include_str!("scripts/lease.lua")),
    ("renew", include_str!("scripts/renew.lua")),
    ("crawl_delay", include_str!("scripts/crawl_delay.lua")),
    ("host_policy", include_str!("scripts/host_policy.lua")),
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
    pub(crate) lease: Function,
    pub(crate) renew: Function,
    pub(crate) crawl_delay: Function,
    pub(crate) host_policy: Function,
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
            lease: function("lease"),
            renew: function("renew"),
            crawl_delay: function("crawl_delay"),
            host_policy: function("host_policy"),
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

    /// A lease script of bucket `tag`, all its arguments given (see `scripts/lease.lua`).
    pub(crate) fn lease_call(
        &self,
        tag: &str,
        politeness: &Politeness,
        max: usize,
        lease_time: Duration,
        request: &str,
    ) -> Call<'_> {
        let mut invocation = self.lease.prepare_invoke();
        for key in [
            "ready", "hosts", "counts", "leases", "due", "replies0", "replies1",
        ] {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(tag)
            .arg(politeness.connections_per_host())
            .arg(millis(politeness.delay()))
            .arg(max)
            .arg(millis(lease_time))
            .arg(request);
        invocation
    }

    /// A batch script of bucket `tag`, its entries to add with [`completion`] and [`link`]
    /// (see `scripts/batch.lua`).
    pub(crate) fn batch_call(
        &self,
        tag: &str,
        politeness: &Politeness,
        schedule: &str,
        request: &str,
        budgets: [u64; 3],
    ) -> Call<'_> {
        let p = politeness;
        let mut invocation = self.batch.prepare_invoke();
        for key in [
            "seen", "ready", "hosts", "counts", "leases", "due", "replies0", "replies1", "domains",
        ] {
            invocation.key(format!("{tag}:{key}"));
        }
        invocation
            .arg(tag)
            .arg(p.connections_per_host())
            .arg(schedule)
            .arg(millis(p.delay()))
            .arg(millis(p.backoff_base()))
            .arg(millis(p.backoff_max()))
            .arg(millis(p.max_retry_after()))
            .arg(p.max_consecutive_errors())
            .arg(millis(p.give_up_after()))
            .arg(p.max_attempts())
            .arg(request)
            .arg(budgets[0])
            .arg(budgets[1])
            .arg(budgets[2]);
        invocation
    }

    /// A crawl-delay script: `delay` is the host's whole delay now.
    pub(crate) fn crawl_delay_call(
        &self,
        tag: &str,
        host: &str,
        delay: Duration,
        politeness: &Politeness,
    ) -> Call<'_> {
        let mut invocation = self.crawl_delay.prepare_invoke();
        invocation
            .key(format!("{tag}:hosts"))
            .key(format!("{tag}:ready"))
            .arg(tag)
            .arg(host)
            .arg(millis(delay))
            .arg(politeness.connections_per_host());
        invocation
    }
}

/// How a lease of a batch entry ends.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// Its fetch ended so.
    Fetched(Outcome),
    /// It goes back unfetched, first of its host's queue, and its host is not leased again
    /// for this long (zero: as its delay says). Given back for a time (its address's turn),
    /// it made no request: the delay its start took goes back first
    /// (`HostRecord::give_back_start`).
    GivenBack(Duration),
}

impl Ending {
    /// Its code and number, as a batch entry carries them: an outcome's `Retry-After` in ms
    /// (-1 for none), or how long a host given back waits.
    fn code(self) -> (u8, i64) {
        match self {
            Ending::Fetched(outcome) => OutcomeCode::of(outcome),
            Ending::GivenBack(wait) => (OutcomeCode::GivenBack as u8, millis(wait)),
        }
    }
}

/// Adds a batch entry's head: the lease to end (`None` for links alone) and how many links
/// follow, each added with [`link`].
pub(crate) fn completion(
    invocation: &mut Call<'_>,
    lease: Option<(&str, &str, Ending)>,
    links: usize,
) {
    let (token, url, (code, number)) = match lease {
        Some((token, url, ending)) => (token, url, ending.code()),
        None => ("-", "-", (0, -1)),
    };
    invocation
        .arg(token)
        .arg(url)
        .arg(&step_head(code, number, links)[..]);
}

/// A batch entry's numbers, packed as the script unpacks them (`STEP_HEAD`, `>Bi6I4`): its
/// outcome's code, its number (48 bits, signed: ms), how many links follow.
fn step_head(code: u8, number: i64, links: usize) -> [u8; 11] {
    const MAX: i64 = (1 << 47) - 1;
    let mut head = [0; 11];
    head[0] = code;
    head[1..7].copy_from_slice(&number.clamp(-MAX, MAX).to_be_bytes()[2..]);
    head[7..].copy_from_slice(&u32::try_from(links).unwrap_or(u32::MAX).to_be_bytes());
    head
}

/// The keys of an address's politeness (`scripts/address.lua`), after its tag.
pub(crate) const ADDRESS_KEYS: [&str; 3] = ["record", "inflight", "tickets"];

/// A request's leave of the address of tag `tag` (see `scripts/address.lua`): its token out
/// of the requests in flight, a plain command, where a script cost a call's fixed part.
pub(crate) fn address_leave(tag: &str, token: &str) -> Cmd {
    let mut cmd = redis::cmd("ZREM");
    cmd.arg(format!("{tag}:inflight")).arg(token);
    cmd
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
    let mut text = format!("{host} {domain} 0 {depth} {url}");
    // What follows the URL in its entry, space-separated. A referrer is a URL, one token;
    // anything else is not one, and not kept.
    let from =
        from.filter(|from| !from.is_empty() && !from.contains(' ') && !from.starts_with('~'));
    for tail in [from, memo].into_iter().flatten() {
        text.push(' ');
        text.push_str(tail);
    }
    invocation.arg(probes.bytes()).arg(text);
}

/// A duration in whole milliseconds, as the scripts take times.
pub(crate) fn millis(d: Duration) -> i64 {
    i64::try_from(d.as_millis()).unwrap_or(i64::MAX)
}

#[cfg(test)]
mod conformance;

#[cfg(test)]
mod tests {
    use super::Scripts;
    use frontier::Politeness;
    use std::time::Duration;

    /// The keys an `FCALL` declares, after its function's name and their count.
    fn declared(cluster: bool) -> Vec<String> {
        let scripts = Scripts::new(cluster);
        let call = scripts.lease_call(
            "{c:7}",
            &Politeness::default(),
            4,
            Duration::from_secs(30),
            "r",
        );
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
        assert_eq!(single.first().map(String::as_str), Some("{c:7}:ready"));
        assert!(!single.iter().any(|key| key.ends_with(":moving")));
        let cluster = declared(true);
        // The same keys, in the same order (the scripts read KEYS by index), and the one
        // that makes a moving slot refuse the call.
        assert_eq!(cluster[..single.len()], single[..]);
        assert_eq!(cluster[single.len()..], ["{c:7}:moving".to_owned()]);
    }
}
