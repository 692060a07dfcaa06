//! The Lua scripts that run the frontier inside Redis, one atomic step each. Their common
//! functions are in `scripts.lua`; each script below is that file followed by its own body.

use redis::Script;

/// The functions every script starts with: host state, queues, the seen-test.
const COMMON: &str = include_str!("scripts.lua");

/// Admits a batch of links of one bucket. KEYS: seen, ready, hosts, counts. ARGV: tag,
/// connections per host, the seen-test's sizing (initial, rate, growth, tightening), then
/// groups of (h1 h2 h3 host depth url). Answers: new URLs, then the bucket's view.
const ADMIT: &str = r#"
local sizing = {tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])}
local new = admit(KEYS[1], KEYS[2], KEYS[3], KEYS[4], tonumber(ARGV[2]), sizing, 7)
local view = bucket_view(KEYS[2], KEYS[4])
return {new, view[1], view[2], view[3], view[4]}
"#;

/// Hands out up to `max` leases of one bucket, after returning its expired leases to their
/// queues. KEYS: ready, hosts, counts, leases, due. ARGV: tag, connections per host, delay
/// (ms), max, lease time (ms). Answers: the bucket's view, leases reaped, then groups of
/// (token host entry given-up).
const LEASE: &str = r#"
local ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local conns, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
local max, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local expired = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, 100)
local reaped = 0
for _, token in ipairs(expired) do
  local lease = redis.call('HGET', leases, token)
  redis.call('ZREM', due, token)
  if lease then
    redis.call('HDEL', leases, token)
    local host, rest = string.match(lease, '^(%S+) (.*)$')
    redis.call('LPUSH', queue_key(host), rest)
    local h = host_state(hosts, host)
    h[1] = math.max(0, h[1] - 1)
    save_host(hosts, host, h)
    reschedule(ready, host, h, conns)
    reaped = reaped + 1
  end
end
if reaped > 0 then
  redis.call('HINCRBY', counts, 'leased', -reaped)
  redis.call('HINCRBY', counts, 'queued', reaped)
  redis.call('HINCRBY', counts, 'reaped', reaped)
end
local out = {}
local leased = 0
while leased < max do
  local first = redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, 1)
  local host = first[1]
  if not host then break end
  local entry = redis.call('LPOP', queue_key(host))
  local h = host_state(hosts, host)
  if entry then
    local token = redis.call('HINCRBY', counts, 'seq', 1)
    redis.call('HSET', leases, token, host .. ' ' .. entry)
    redis.call('ZADD', due, now + ttl, token)
    h[1] = h[1] + 1
    if h[6] ~= 1 then
      local d = h[3]
      if d < 0 then d = delay end
      h[2] = math.max(h[2], now + d)
    end
    save_host(hosts, host, h)
    out[#out + 1] = token
    out[#out + 1] = host
    out[#out + 1] = entry
    out[#out + 1] = h[6]
    leased = leased + 1
  end
  reschedule(ready, host, h, conns)
end
if leased > 0 then
  redis.call('HINCRBY', counts, 'leased', leased)
  redis.call('HINCRBY', counts, 'queued', -leased)
end
if leased > 0 or reaped > 0 then redis.call('HINCRBY', counts, 'ops', 1) end
local view = bucket_view(ready, counts)
local answer = {view[1], view[2], view[3], view[4], reaped}
for _, v in ipairs(out) do answer[#answer + 1] = v end
return answer
"#;

/// Completes a lease with its fetch's outcome and admits the page's links of the same
/// bucket, as one step. KEYS: seen, ready, hosts, counts, leases, due. ARGV: tag, connections
/// per host, the seen-test's sizing (4), token, outcome (0 success, 1 skipped, 2 failure,
/// 3 failure to retry, 4 error answer), Retry-After (ms, -1 for none), delay, back-off base,
/// back-off max, longest Retry-After, errors in a row to give up, time failing to give up,
/// attempts, then link groups as ADMIT's. Answers: fate (-1 when the lease is not held: it
/// expired and went back to the crawl), next attempt, URLs waiting on a host given up now
/// (-1 for none), new links, then the bucket's view.
const COMPLETE: &str = r#"
local seen, ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local conns = tonumber(ARGV[2])
local sizing = {tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])}
local token, outcome, retry_after = ARGV[7], tonumber(ARGV[8]), tonumber(ARGV[9])
local delay, base, bmax, rmax = tonumber(ARGV[10]), tonumber(ARGV[11]), tonumber(ARGV[12]), tonumber(ARGV[13])
local max_errs, give_up_after, max_attempts = tonumber(ARGV[14]), tonumber(ARGV[15]), tonumber(ARGV[16])
-- The page's links first: they are new whatever became of the lease.
local new = admit(seen, ready, hosts, counts, conns, sizing, 17)
local lease = redis.call('HGET', leases, token)
if not lease then
  local view = bucket_view(ready, counts)
  return {-1, 0, -1, new, view[1], view[2], view[3], view[4]}
end
redis.call('HDEL', leases, token)
redis.call('ZREM', due, token)
local host, attempts, depth, url = string.match(lease, '^(%S+) (%d+) (%d+) (.*)$')
attempts = tonumber(attempts) + 1
local h = host_state(hosts, host)
h[1] = math.max(0, h[1] - 1)
local d = h[3]
if d < 0 then d = delay end
local fate, given_up = 0, -1
if h[6] == 1 then
  fate = 4
elseif outcome == 0 or outcome == 1 then
  if outcome == 0 then
    h[4] = 0
    h[5] = 0
    h[2] = math.max(h[2], now + d)
  end
else
  h[4] = h[4] + 1
  if h[5] == 0 then h[5] = now end
  local ra = -1
  if retry_after >= 0 then ra = math.min(retry_after, rmax) end
  local wait
  if outcome == 4 then
    if ra >= 0 then wait = ra else wait = base end
  else
    wait = math.max(math.min(base * 2 ^ (h[4] - 1), bmax), ra)
  end
  h[2] = math.max(h[2], now + math.max(wait, d))
  if h[4] >= max_errs and now - h[5] >= give_up_after then
    h[6] = 1
    given_up = redis.call('LLEN', queue_key(host))
    redis.call('HINCRBY', counts, 'given_up_hosts', 1)
  end
  local retry = outcome == 3 or outcome == 4
  if h[6] == 1 then
    fate = 4
  elseif retry and attempts < max_attempts then
    redis.call('RPUSH', queue_key(host), attempts .. ' ' .. depth .. ' ' .. url)
    redis.call('HINCRBY', counts, 'queued', 1)
    fate = 2
  elseif retry then
    fate = 3
  else
    fate = 1
  end
end
save_host(hosts, host, h)
reschedule(ready, host, h, conns)
redis.call('HINCRBY', counts, 'leased', -1)
if fate ~= 2 then redis.call('HINCRBY', counts, 'done', 1) end
redis.call('HINCRBY', counts, 'ops', 1)
local view = bucket_view(ready, counts)
return {fate, attempts + 1, given_up, new, view[1], view[2], view[3], view[4]}
"#;

/// Gives a lease back unfetched: its URL goes to the front of its host's queue. KEYS: ready,
/// hosts, counts, leases, due. ARGV: tag, connections per host, token. Answers 1, or 0 when
/// the lease was not held.
const ABANDON: &str = r#"
local ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease = redis.call('HGET', leases, ARGV[3])
if not lease then return 0 end
redis.call('HDEL', leases, ARGV[3])
redis.call('ZREM', due, ARGV[3])
local host, rest = string.match(lease, '^(%S+) (.*)$')
redis.call('LPUSH', queue_key(host), rest)
local h = host_state(hosts, host)
h[1] = math.max(0, h[1] - 1)
save_host(hosts, host, h)
reschedule(ready, host, h, tonumber(ARGV[2]))
redis.call('HINCRBY', counts, 'leased', -1)
redis.call('HINCRBY', counts, 'queued', 1)
redis.call('HINCRBY', counts, 'ops', 1)
return 1
"#;

/// Moves the deadlines of leases still held. KEYS: leases, due. ARGV: tag, lease time (ms),
/// tokens. Answers how many were still held.
const RENEW: &str = r#"
local held = 0
for i = 3, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[i])
    held = held + 1
  end
end
return held
"#;

/// Sets a host's own delay (robots.txt `Crawl-delay`). KEYS: hosts. ARGV: tag, host, delay
/// (ms).
const CRAWL_DELAY: &str = r#"
local h = host_state(KEYS[1], ARGV[2])
h[3] = tonumber(ARGV[3])
save_host(KEYS[1], ARGV[2], h)
return 1
"#;

/// The scripts, loaded once per frontier: `Script` sends EVALSHA, and the body again when
/// the server answers NOSCRIPT (after a restart).
pub(crate) struct Scripts {
    pub(crate) admit: Script,
    pub(crate) lease: Script,
    pub(crate) complete: Script,
    pub(crate) abandon: Script,
    pub(crate) renew: Script,
    pub(crate) crawl_delay: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        let with = |body: &str| Script::new(&format!("{COMMON}\n{body}"));
        Scripts {
            admit: with(ADMIT),
            lease: with(LEASE),
            complete: with(COMPLETE),
            abandon: with(ABANDON),
            renew: with(RENEW),
            crawl_delay: with(CRAWL_DELAY),
        }
    }
}
