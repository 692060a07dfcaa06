//! The Lua scripts that run the frontier inside Redis, one atomic step each. Their common
//! functions are in `scripts.lua`; each script below is that file followed by its own body.

use redis::Script;

/// The functions every script starts with: host state, queues, the seen-test.
const COMMON: &str = include_str!("scripts.lua");

/// Hands out up to `max` leases of one bucket, after returning its expired leases to their
/// queues. Tokens grow with the server's clock (see below), so that one is not handed out
/// twice when Redis comes back from an older snapshot. KEYS: ready, hosts, counts, leases,
/// due, replies0, replies1. ARGV: tag, connections per host, delay (ms), max, lease time
/// (ms), request id. Answers: the bucket's view (five numbers), leases reaped, then groups
/// of (token host entry given-up). Sent again with its request id, it answers the leases the
/// first run handed out that are still held, and hands out none.
const LEASE: &str = r#"
local ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local replies = {KEYS[6], KEYS[7]}
local conns, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
local max, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local request = ARGV[6]
-- A second run: the first run's tokens are consecutive, kept as "first n reaped".
local kept = kept_reply(replies, request)
if kept then
  local first, n, again = string.match(kept, '^(%d+) (%d+) (%d+)$')
  local view = bucket_view(ready, counts)
  local answer = {view[1], view[2], view[3], view[4], view[5], tonumber(again)}
  if tonumber(n) > 0 then
    local tokens = {}
    for j = 0, tonumber(n) - 1 do tokens[#tokens + 1] = string.format('%d', tonumber(first) + j) end
    local values = redis.call('HMGET', leases, unpack(tokens))
    for j, token in ipairs(tokens) do
      local lease = values[j]
      if lease then
        local host, entry = string.match(lease, '^(%S+) (.*)$')
        answer[#answer + 1] = token
        answer[#answer + 1] = host
        answer[#answer + 1] = entry
        answer[#answer + 1] = host_state(hosts, host)[6]
      end
    end
  end
  return answer
end
-- Leases past their deadline go back to the front of their host's queue.
local expired = redis.call('ZRANGEBYSCORE', due, '-inf', now, 'LIMIT', 0, 100)
local reaped = 0
if #expired > 0 then
  local held = redis.call('HMGET', leases, unpack(expired))
  for j, lease in ipairs(held) do
    if lease then
      local host, rest = string.match(lease, '^(%S+) (.*)$')
      redis.call('LPUSH', queue_key(host), rest)
      local h = get_host(hosts, host)
      touch(host)
      h[1] = math.max(0, h[1] - 1)
      reaped = reaped + 1
    end
  end
  redis.call('HDEL', leases, unpack(expired))
  redis.call('ZREM', due, unpack(expired))
  -- Each reaped host's place in the ready set, before leasing from it.
  for host, h in pairs(ctx.hosts) do reschedule(ready, host, h, conns) end
  count('leased', -reaped)
  count('queued', reaped)
  count('reaped', reaped)
end
local out = {}
local held, deadlines = {}, {}
local seq = tonumber(redis.call('HGET', counts, 'seq') or 0)
local leased = 0
while leased < max do
  local host = redis.call('ZRANGEBYSCORE', ready, '-inf', now, 'LIMIT', 0, 1)[1]
  if not host then break end
  local h = get_host(hosts, host)
  local d = h[3]
  if d < 0 then d = delay end
  -- As many leases from this host as it allows now, without asking the ready set again.
  while leased < max and h[1] < limit(h, conns) and (h[6] == 1 or h[2] <= now) do
    local entry = redis.call('LPOP', queue_key(host))
    if not entry then break end
    -- Never below the server's clock in ms times 1024: a crawl rolled back to an older
    -- snapshot goes back in seq, not in time, so its tokens are not handed out again (and a
    -- completion names its URL besides: see the batch script).
    seq = math.max(seq + 1, now * 1024)
    local token = string.format('%d', seq)
    held[#held + 1] = token
    held[#held + 1] = host .. ' ' .. entry
    deadlines[#deadlines + 1] = now + ttl
    deadlines[#deadlines + 1] = token
    h[1] = h[1] + 1
    if h[6] ~= 1 then h[2] = math.max(h[2], now + d) end
    touch(host)
    out[#out + 1] = token
    out[#out + 1] = host
    out[#out + 1] = entry
    out[#out + 1] = h[6]
    leased = leased + 1
  end
  reschedule(ready, host, h, conns)
end
if leased > 0 then
  redis.call('HSET', leases, unpack(held))
  redis.call('ZADD', due, unpack(deadlines))
  redis.call('HSET', counts, 'seq', seq)
  count('leased', leased)
  count('queued', -leased)
end
if leased > 0 or reaped > 0 then write_back(hosts, counts) end
-- Leases handed out are what a second run must answer (not to strand them until their
-- deadline); a run that handed none out can run again.
if leased > 0 then
  keep_reply(replies, request, out[1] .. ' ' .. leased .. ' ' .. reaped)
end
local view = bucket_view(ready, counts)
local answer = {view[1], view[2], view[3], view[4], view[5], reaped}
for _, v in ipairs(out) do answer[#answer + 1] = v end
return answer
"#;

/// Admits links and completes leases of one bucket, for many pages at once: each entry is a
/// lease to complete with its page's links of this bucket (or links alone), and the whole
/// batch is one atomic step. KEYS: seen, ready, hosts, counts, leases, due, replies0,
/// replies1. ARGV: tag,
/// connections per host, the seen-test's schedule, delay, back-off base, back-off max,
/// longest Retry-After, errors in a row to give up, time failing to give up, attempts (all
/// times in ms), request id, pages per host (0: no limit), then entries: token and its URL (`-` and `-` for links alone), outcome (0
/// success, 1 skipped, 2 failure, 3 failure to retry, 4 error answer), Retry-After (-1 for
/// none), the number of links, and the links in groups of five (probes host depth url from).
/// Answers five numbers per entry: fate (-2 for links alone; -1 when the lease is not held:
/// it expired and went back to the crawl, or the token is another URL's after a rollback),
/// next attempt, URLs waiting on a host given up now (-1 for none), new links, links the
/// host's page budget refused;
/// then the bucket's view (five numbers), then its seen-test's generations (-1 when it read
/// none). Sent again with its request id, it answers what the first run answered and changes
/// nothing (kept only when a completion asked for a retry: see below).
const BATCH: &str = r#"
local seen, ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local replies = {KEYS[7], KEYS[8]}
local request = ARGV[11]
-- A second run: the first run's answer, its steps' part kept, the view read anew.
local kept = kept_reply(replies, request)
if kept then
  local answer = {}
  for v in string.gmatch(kept, '%S+') do answer[#answer + 1] = tonumber(v) end
  local generations = table.remove(answer)
  for _, v in ipairs(bucket_view(ready, counts)) do answer[#answer + 1] = v end
  answer[#answer + 1] = generations
  return answer
end
local conns = tonumber(ARGV[2])
local schedule = ARGV[3]
local delay, base, bmax, rmax = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local max_errs, give_up_after, max_attempts = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])

-- The leases of the batch, read at once; removed at once at the end.
local tokens = {}
do
  local i = 13
  while i + 4 <= #ARGV do
    if ARGV[i] ~= '-' then tokens[#tokens + 1] = ARGV[i] end
    i = i + 5 + 5 * tonumber(ARGV[i + 4])
  end
end
local held = {}
if #tokens > 0 then
  local values = redis.call('HMGET', leases, unpack(tokens))
  for j, token in ipairs(tokens) do
    if values[j] then held[token] = values[j] end
  end
end
local done = {}

local function complete_one(token, leased_url, outcome, retry_after)
  local lease = held[token]
  if not lease then return -1, 0, -1 end
  local host, attempts, depth, url = string.match(lease, '^(%S+) (%d+) (%d+) (.*)$')
  -- The entry's URL, before its referrer, if any.
  if string.match(url, '^%S+') ~= leased_url then return -1, 0, -1 end
  held[token] = nil
  done[#done + 1] = token
  attempts = tonumber(attempts) + 1
  local h = get_host(hosts, host)
  touch(host)
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
      given_up = queue_len(host)
      count('given_up_hosts', 1)
    end
    local retry = outcome == 3 or outcome == 4
    if h[6] == 1 then
      fate = 4
    elseif retry and attempts < max_attempts then
      push(host, attempts .. ' ' .. depth .. ' ' .. url)
      count('queued', 1)
      fate = 2
    elseif retry then
      fate = 3
    else
      fate = 1
    end
  end
  count('leased', -1)
  if fate ~= 2 then count('done', 1) end
  return fate, attempts + 1, given_up
end

local answer = {}
-- Whether a completion's record waits for this answer (a retry asked for): only then must a
-- second run answer as the first did. The others' records are written before they are sent,
-- and a second run that finds them not held changes nothing.
local awaited = false
local budget = tonumber(ARGV[12])
local i = 13
while i + 4 <= #ARGV do
  local token, leased_url = ARGV[i], ARGV[i + 1]
  local outcome, retry_after = tonumber(ARGV[i + 2]), tonumber(ARGV[i + 3])
  if token ~= '-' and (outcome == 3 or outcome == 4) then awaited = true end
  local n = tonumber(ARGV[i + 4])
  i = i + 5
  -- The page's links first: they are new whatever became of its lease.
  local new, refused = admit_links(seen, hosts, schedule, i, n, budget)
  i = i + 5 * n
  local fate, next_attempt, given_up = -2, 0, -1
  if token ~= '-' then
    fate, next_attempt, given_up = complete_one(token, leased_url, outcome, retry_after)
  end
  answer[#answer + 1] = fate
  answer[#answer + 1] = next_attempt
  answer[#answer + 1] = given_up
  answer[#answer + 1] = new
  answer[#answer + 1] = refused
end
if #done > 0 then
  redis.call('HDEL', leases, unpack(done))
  redis.call('ZREM', due, unpack(done))
end
finish(seen, ready, hosts, counts, conns)
local generations = seen_state and seen_state.count or -1
if awaited then
  local steps = {}
  for j, v in ipairs(answer) do steps[j] = string.format('%d', v) end
  steps[#steps + 1] = string.format('%d', generations)
  keep_reply(replies, request, table.concat(steps, ' '))
end
for _, v in ipairs(bucket_view(ready, counts)) do answer[#answer + 1] = v end
answer[#answer + 1] = generations
return answer
"#;

/// Gives a lease back unfetched: its URL goes to the front of its host's queue. KEYS: ready,
/// hosts, counts, leases, due. ARGV: tag, connections per host, token, its URL. Answers 1,
/// or 0 when the lease was not held (or the token is another URL's, after a rollback).
const ABANDON: &str = r#"
local ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease = redis.call('HGET', leases, ARGV[3])
if not lease then return 0 end
if string.match(lease, '^%S+ %d+ %d+ (%S+)') ~= ARGV[4] then return 0 end
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

/// Sets a host's own politeness from the crawl's per-host settings, before its first links
/// are admitted: its delay (kept if a longer robots.txt `Crawl-delay` is set) and its
/// connection limit. KEYS: hosts, counts. ARGV: tag, host, delay (ms, -1 for the crawl's),
/// connections (-1 for the crawl's).
const HOST_POLICY: &str = r#"
local h = host_state(KEYS[1], ARGV[2])
local delay, conns = tonumber(ARGV[3]), tonumber(ARGV[4])
if delay >= 0 then
  if h[3] < 0 then h[3] = delay else h[3] = math.max(h[3], delay) end
end
h[7] = conns
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
  redis.call('HINCRBY', KEYS[2], 'hosts', 1)
end
save_host(KEYS[1], ARGV[2], h)
return 1
"#;

/// Says a process is present, forgets processes long gone, and answers the processes present.
/// KEYS: procs. ARGV: tag (unused), the process's id, how long a process counts as present
/// after it last said so (ms), when to forget it (ms).
const PRESENT: &str = r#"
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[4]))
return redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[3]), '+inf')
"#;

/// Claims the fetch of a robots.txt: 1 for the process whose id is ARGV[1] when it holds the
/// claim (already, as when this is sent again after its answer was lost, or now), else 0.
/// KEYS: the claim. ARGV: the process's id, the claim's time (ms).
const CLAIM_ROBOTS: &str = r"
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
";

/// The scripts, loaded once per frontier: `Script` sends EVALSHA, and the body again when
/// the server answers NOSCRIPT (after a restart).
pub(crate) struct Scripts {
    pub(crate) batch: Script,
    pub(crate) lease: Script,
    pub(crate) abandon: Script,
    pub(crate) renew: Script,
    pub(crate) crawl_delay: Script,
    pub(crate) host_policy: Script,
    pub(crate) present: Script,
    pub(crate) claim_robots: Script,
}

impl Scripts {
    pub(crate) fn new() -> Scripts {
        let with = |body: &str| Script::new(&format!("{COMMON}\n{body}"));
        Scripts {
            batch: with(BATCH),
            lease: with(LEASE),
            abandon: with(ABANDON),
            renew: with(RENEW),
            crawl_delay: with(CRAWL_DELAY),
            host_policy: with(HOST_POLICY),
            present: with(PRESENT),
            // Its own: it touches no bucket.
            claim_robots: Script::new(CLAIM_ROBOTS),
        }
    }
}
