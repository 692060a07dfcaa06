-- The shared frontier's server side: the functions every script of crates/shared uses, in
-- one function library (scripts.rs builds it: the host-state field indices and defaults, the
-- outcome and fate codes, then this file, then each script as a function; each call sets
-- KEYS, ARGV, `tag` and `now` first). Each script works on the keys of one bucket of
-- hosts, all tagged with the bucket's hash tag, so that on a Redis Cluster they live in one
-- slot; KEYS holds the bucket's fixed keys, and the per-host queues and seen-test sets are
-- named from the same tag (ARGV[1]).
--
-- Host state, one string per host in the `hosts` hash (see stored_host): its fields in the
-- order of `HostField` (scripts.rs), read as h[NEXT] and so on:
--   ACTIVE: leases out; NEXT: ms before which no lease starts (0: none yet); DELAY: the
--   host's own delay in ms (-1: the crawl's); ERRS: errors in a row; SINCE: ms of the first
--   of them; GAVEUP: 1 once the host is given up; CONNS: the host's own connection limit
--   (-1: the crawl's); PAGES: URLs admitted, counted only under a page budget (per host
--   or per domain);
--   LAST: ms of the last lease start (0: none).
-- These are frontier::HostRecord's fields, and the rules that change them (start_lease,
-- settle, space_starts below) are HostRecord's: frontier's conformance table holds both
-- stores to them.
-- Queue entry: "attempts depth url[ from][ ~memo]" (attempts made before, 0 for a new URL;
-- from: the page whose link led here, when known; memo: the client's bytes queued with it, in
-- base64url). URLs are canonical: they hold no space. The scripts read the first three fields
-- and carry the rest untouched.
-- Lease: the host, a space, its start (what the lease's start found, frontier::Started:
-- at, next and last as 6-byte big-endian integers, then gaveup's byte), then the entry, in
-- the `leases` hash under its token (see lease_value); its deadline in `due`.

local function split(s)
  local out = {}
  for v in string.gmatch(s, '%S+') do out[#out + 1] = v end
  return out
end

-- A host's state as stored, or nil for a host never stored: byte 255, the number of fields
-- written, then the fields (HOST_PACK; `struct` packs and unpacks them in C, a third of the
-- cost of text, which was a tenth of a page's). A field a state was written without (by an
-- earlier version) reads as its default, and fields a later version wrote past those known
-- are left out.
local function stored_host(hosts, host)
  local s = redis.call('HGET', hosts, host)
  if not s then return nil end
  local n = math.min(string.byte(s, 2), #HOST_DEFAULTS)
  local v = {struct.unpack(HOST_UNPACK[n], s, 3)}
  -- unpack's last value: where it stopped.
  v[n + 1] = nil
  for i = n + 1, #HOST_DEFAULTS do v[i] = HOST_DEFAULTS[i] end
  return v
end

local function new_host()
  local h = {}
  for i, default in ipairs(HOST_DEFAULTS) do h[i] = default end
  return h
end

local function host_state(hosts, host)
  return stored_host(hosts, host) or new_host()
end

local function save_host(hosts, host, h)
  local n = #HOST_DEFAULTS
  redis.call('HSET', hosts, host, struct.pack(HOST_PACK, 255, n, unpack(h, 1, n)))
end

-- A whole number as a command's argument: Redis formats a Lua number with "%.17g" (its
-- sprintf is a tenth of a command's cost), where "%d" takes a fraction of that.
local function int(n)
  return string.format('%d', n)
end

local function queue_key(host)
  return tag .. ':q:' .. host
end

-- The host's connection limit: its own, or the crawl's.
local function limit(h, conns)
  if h[CONNS] > 0 then return h[CONNS] end
  return conns
end

-- The host's delay now: its own (or its Crawl-delay), or the crawl's.
local function delay_of(h, delay)
  if h[DELAY] < 0 then return delay end
  return h[DELAY]
end

-- Puts the host in the ready set at the instant its next lease may start, or takes it out:
-- a host is there exactly when it has a queued URL and a free connection. A given-up host's
-- URLs go out at once, to be recorded. `queued`: the queue's length when the caller knows it.
local function reschedule(ready, host, h, conns, queued)
  if h[ACTIVE] < limit(h, conns) and (queued or redis.call('LLEN', queue_key(host))) > 0 then
    local at = h[NEXT]
    if h[GAVEUP] == 1 then at = 0 end
    redis.call('ZADD', ready, int(at), host)
  else
    redis.call('ZREM', ready, host)
  end
end

-- A lease's start as stored: packed, where text cost a number's formatting at each lease
-- and its parsing (strtod) at each completion, some 4% of Redis's CPU a page.
local START = '>i6i6i6B'
local START_BYTES = 19

-- A lease as stored, from its host, its start (start_lease's) and its queue entry.
local function lease_value(host, start, entry)
  return host .. ' ' .. start .. entry
end

-- A lease as stored: its host, its start and its queue entry.
local function parse_lease(v)
  local sp = string.find(v, ' ', 1, true)
  local at, nxt, last, gaveup = struct.unpack(START, v, sp + 1)
  local start = {at = at, next = nxt, last = last, gaveup = gaveup == 1}
  return string.sub(v, 1, sp - 1), start, string.sub(v, sp + 1 + START_BYTES)
end

-- The host policy, as frontier::HostRecord and frontier::fate define it (see there for the
-- rules and their reasons).

-- HostRecord::start: starts a lease of host h now; answers the start as a lease stores it.
local function start_lease(h, d)
  local start = struct.pack(START, now, h[NEXT], h[LAST], h[GAVEUP])
  if h[GAVEUP] ~= 1 then
    h[LAST] = now
    h[NEXT] = now + d
  end
  return start
end

-- HostRecord::give_back_start: a lease that made no request puts the host's clock back where
-- its start found it, unless something moved it since.
local function give_back_start(h, start, d)
  if h[LAST] == start.at and h[NEXT] == start.at + d then
    h[NEXT], h[LAST] = start.next, start.last
  end
end

-- fate: what becomes of a URL whose lease (attempt `attempts`) ended with `outcome`.
local function fate_of(outcome, attempts, max_attempts, gaveup)
  if outcome == OUTCOME_SUCCESS or outcome == OUTCOME_SKIPPED then return FATE_SUCCEEDED end
  if outcome == OUTCOME_FAILURE then return FATE_FAILED end
  if attempts >= max_attempts then return FATE_EXHAUSTED end
  if gaveup then return FATE_DROPPED_WITH_HOST end
  return FATE_RETRIED
end

-- HostRecord::settle: moves host h's clock for a lease's outcome, counts its errors, gives
-- it up; answers the URL's fate and whether this gave the host up. `p` holds the crawl's
-- politeness (ms): base, bmax, rmax, max_errs, give_up_after, max_attempts; retry_after is
-- -1 for none.
local function settle(h, start, outcome, retry_after, attempts, d, p)
  -- Handed out only to be recorded: nothing was fetched, nothing to learn.
  if start.gaveup then return FATE_DROPPED_WITH_HOST, false end
  local gave_up = false
  if outcome == OUTCOME_SUCCESS then
    h[ERRS] = 0
    h[SINCE] = 0
    h[NEXT] = math.max(h[NEXT], now + d)
  elseif outcome == OUTCOME_SKIPPED then
    give_back_start(h, start, d)
  elseif h[GAVEUP] ~= 1 then
    h[ERRS] = h[ERRS] + 1
    if h[SINCE] == 0 then h[SINCE] = now end
    local ra = -1
    if retry_after >= 0 then ra = math.min(retry_after, p.rmax) end
    local backoff
    if outcome == OUTCOME_ERROR_ANSWER then
      if ra >= 0 then backoff = ra else backoff = p.base end
    else
      backoff = math.max(math.min(p.base * 2 ^ (h[ERRS] - 1), p.bmax), ra)
    end
    h[NEXT] = math.max(h[NEXT], now + math.max(d, backoff))
    if h[ERRS] >= p.max_errs and now - h[SINCE] >= p.give_up_after then
      h[GAVEUP] = 1
      gave_up = true
    end
  end
  return fate_of(outcome, attempts, p.max_attempts, h[GAVEUP] == 1), gave_up
end

-- HostRecord::space_starts: a longer delay learnt while a lease may be in flight spaces
-- the next start from the last one.
local function space_starts(h, d)
  if h[LAST] > 0 and h[NEXT] > 0 and h[LAST] + d > h[NEXT] then
    h[NEXT] = h[LAST] + d
  end
end

-- The seen-test: generations of integer sets (seen.rs sizes them). The client computes the
-- sizes (SCHEDULE: the fingerprint bits, then "sets capacity" per generation, with " w"
-- after a wide one, `;` between) and each URL's probes: six bytes that pick its set in each
-- generation, one byte for the generations the process looked in already (its copies of
-- frozen ones), then its fingerprint in decimal. Generation gi's set i is the key
-- `tag:f<gi>:<i>`; a set of up to 512 integers is an intset, which `SADD` tests and sets in
-- one step, in C.
local seen_state = nil

-- What the texts of the seen-test's hash say, parsed once for the library's life (its
-- functions share these between calls): a generation's geometry by its text. Small: a text
-- per generation of each bucket.
local parsed = {gens = {}, entries = 0}

local function parse_generation(v)
  local g = parsed.gens[v]
  if not g then
    -- Bounded: a server holding many crawls parses anew what it forgot.
    if parsed.entries >= 100000 then parsed.gens, parsed.entries = {}, 0 end
    local t = split(v)
    g = {tonumber(t[1]), tonumber(t[2]), t[3] == 'w'}
    parsed.gens[v] = g
    parsed.entries = parsed.entries + 1
  end
  return {sets = g[1], n = g[2], wide = g[3]}
end

-- The seen-test's set keys, by bucket tag and generation, also kept for the library's life:
-- a key's text formats two numbers (sprintf), 2% of a crawl's Redis instructions when each
-- call built its own.
local set_keys = {tags = {}, entries = 0}

local function keys_of(gi)
  local gens = set_keys.tags[tag]
  if not gens then
    gens = {}
    set_keys.tags[tag] = gens
  end
  local keys = gens[gi]
  if not keys then
    keys = {}
    gens[gi] = keys
  end
  return keys
end

local function load_seen(seen, schedule)
  local raw = redis.call('HGETALL', seen)
  local st = {gens = {}, count = 0, fill = 0, added = 0, grew = false}
  for i = 1, #raw, 2 do
    local f, v = raw[i], raw[i + 1]
    if f == 'count' then st.count = tonumber(v)
    elseif f == 'fill' then st.fill = tonumber(v)
    elseif f == 'bits' then st.bits = tonumber(v)
    else st.gens[tonumber(string.sub(f, 2))] = parse_generation(v)
    end
  end
  -- A crawl keeps the size it started with; one not started yet takes the schedule's.
  st.bits = st.bits or tonumber(string.match(schedule, '^%d+'))
  return st
end

local function new_generation(seen, st, schedule)
  local i = st.count
  local spec = nil
  local j = -1
  for part in string.gmatch(schedule, '[^;]+') do
    if j == i then spec = part break end
    j = j + 1
  end
  if not spec then
    error({err = 'the seen-test of bucket ' .. tag .. ' is full: ' .. i .. ' generations'})
  end
  local g = parse_generation(spec)
  st.gens[i] = g
  st.count = i + 1
  st.fill = 0
  st.grew = true
  -- Its sets' keys, counted when it starts (each has a URL or two soon after).
  st.added = st.added + g.sets * SET_KEY_BITS
  redis.call('HSET', seen, 'g' .. i, spec, 'count', st.count, 'fill', 0, 'bits', st.bits)
end

-- The key of the set of generation gi that the URL of set number h and fingerprint f (its
-- decimal text) goes to, and what that set holds for it: f, or in a wide generation f's 32
-- bits as unsigned with the 21 low bits of h's quotient by the sets above them (seen.rs,
-- Generation::member: the same number), which stays below 2^53, where numbers are exact.
local function slot(st, gi, h, f)
  local g = st.gens[gi]
  local i = h % g.sets
  local keys = g.keys
  if not keys then
    keys = keys_of(gi)
    g.keys = keys
  end
  local key = keys[i]
  if not key then
    -- Bounded as `parsed` is: all forgotten, this call's generations' too.
    if set_keys.entries >= 100000 then
      set_keys.tags, set_keys.entries = {}, 0
      for _, other in pairs(st.gens) do other.keys = nil end
      keys = keys_of(gi)
      g.keys = keys
    end
    key = tag .. ':f' .. gi .. ':' .. i
    keys[i] = key
    set_keys.entries = set_keys.entries + 1
  end
  if not g.wide then return key, f end
  local low = tonumber(f)
  if low < 0 then low = low + 4294967296 end
  return key, string.format('%.0f', ((h - i) / g.sets) % 2097152 * 4294967296 + low)
end

-- Whether the URL of probes p is new, marking it seen: one atomic step, so that of several
-- processes pushing one URL at once exactly one is told it is new.
local function test_and_set(seen, schedule, p)
  local st = seen_state
  if st.count == 0 then new_generation(seen, st, schedule) end
  local h = struct.unpack('>I6', p)
  local fingerprint = string.sub(p, 8)
  local newest = st.count - 1
  -- The process looked in the first generations already (all frozen): see seen.rs.
  local skip = math.min(string.byte(p, 7) or 0, newest)
  for i = newest - 1, skip, -1 do
    if redis.call('SISMEMBER', slot(st, i, h, fingerprint)) == 1 then return false end
  end
  if redis.call('SADD', slot(st, newest, h, fingerprint)) == 0 then return false end
  st.fill = st.fill + 1
  -- A wide generation's intsets hold 8-byte integers.
  if st.gens[newest].wide then st.added = st.added + 64 else st.added = st.added + st.bits end
  if st.fill >= st.gens[newest].n then new_generation(seen, st, schedule) end
  return true
end

-- What one script changes, kept here and written once at its end: the host states it read
-- (each read once, written back if changed), and the counters' increments. A batch of many
-- pages of one host then costs one read and one write of that host, not one per page.
local ctx = {hosts = {}, dirty = {}, counts = {}, pushes = {}}

-- What each call starts with: nothing read. The library's functions share these between
-- calls (they are the library's locals, loaded once), so each call forgets the last one's.
local function forget()
  seen_state = nil
  ctx = {hosts = {}, dirty = {}, counts = {}, pushes = {}}
end

local function get_host(hosts, host)
  local h = ctx.hosts[host]
  if not h then
    h = stored_host(hosts, host)
    if not h then
      h = new_host()
      ctx.dirty[host] = true
      ctx.counts.hosts = (ctx.counts.hosts or 0) + 1
    end
    ctx.hosts[host] = h
  end
  return h
end

local function touch(host)
  ctx.dirty[host] = true
end

local function count(field, n)
  ctx.counts[field] = (ctx.counts[field] or 0) + n
end

-- Appends an entry to a host's queue: kept here, and pushed with the host's others at the end.
local function push(host, entry)
  local list = ctx.pushes[host]
  if not list then
    list = {}
    ctx.pushes[host] = list
  end
  list[#list + 1] = entry
end

-- The length of a host's queue, entries still to push included.
local function queue_len(host)
  local list = ctx.pushes[host]
  return redis.call('LLEN', queue_key(host)) + (list and #list or 0)
end

-- A registrable domain's hosts and pages admitted, as stored in the `domains` hash ("hosts
-- pages"), or zeros.
local function stored_domain(domains, name)
  local s = redis.call('HGET', domains, name)
  if not s then return {0, 0} end
  local v = split(s)
  return {tonumber(v[1]) or 0, tonumber(v[2]) or 0}
end

-- Admits the links of ARGV[i .. i + 2 * n - 1], pairs of the link's probes and its text:
-- "host domain entry", space-separated: its host, its host's registrable domain (empty but
-- where the crawl's hosts go to buckets by domain) and its queue entry as queued. A link seen
-- before (half of them in a crawl of two processes: each sends a URL it meets once) is
-- never parsed, and its fields cost one argument, not five (Redis makes each argument a Lua
-- string). New links are charged after the seen-test, as the embedded frontier
-- charges its budgets (frontier::HostBudget, the same rule): at most `budget.pages` per host
-- for the crawl, and per registrable domain at most `budget.domain_hosts` hosts (a host
-- counts once its first URL is admitted) and `budget.domain_pages` pages (0: no limit). A URL
-- over a budget stays seen, and is counted under its reason. Returns how many were queued,
-- and how many each budget refused: the host's, the domain's hosts, the domain's pages.
local function admit_links(seen, hosts, domains, schedule, i, n, budget)
  -- A page without links new to its process: the seen-test is not read (nor written).
  if n == 0 then return 0, 0, 0, 0 end
  if not seen_state then seen_state = load_seen(seen, schedule) end
  local by_domain = budget.domain_hosts > 0 or budget.domain_pages > 0
  local counted = budget.pages > 0 or by_domain
  local changed = {}
  local new, refused = 0, {host_budget = 0, domain_hosts = 0, domain_pages = 0}
  for _ = 1, n do
    if test_and_set(seen, schedule, ARGV[i]) then
      local text = ARGV[i + 1]
      local sp = string.find(text, ' ', 1, true)
      local sp2 = string.find(text, ' ', sp + 1, true)
      local host = string.sub(text, 1, sp - 1)
      -- Read only under a budget: else the host is read at the end if its queue was empty
      -- (see finish).
      local h = counted and get_host(hosts, host)
      local reason, d = nil, nil
      if budget.pages > 0 and h[PAGES] >= budget.pages then
        reason = 'host_budget'
      elseif by_domain then
        local name = string.sub(text, sp + 1, sp2 - 1)
        d = changed[name] or stored_domain(domains, name)
        changed[name] = d
        if budget.domain_hosts > 0 and h[PAGES] == 0 and d[1] >= budget.domain_hosts then
          reason = 'domain_hosts'
        elseif budget.domain_pages > 0 and d[2] >= budget.domain_pages then
          reason = 'domain_pages'
        end
      end
      if reason then
        refused[reason] = refused[reason] + 1
      else
        if d then
          if h[PAGES] == 0 then d[1] = d[1] + 1 end
          d[2] = d[2] + 1
        end
        if counted then
          h[PAGES] = h[PAGES] + 1
          touch(host)
        end
        push(host, string.sub(text, sp2 + 1))
        new = new + 1
      end
    end
    i = i + 2
  end
  for name, d in pairs(changed) do
    redis.call('HSET', domains, name, d[1] .. ' ' .. d[2])
  end
  local refusals = 0
  for reason, r in pairs(refused) do
    if r > 0 then count(reason, r) end
    refusals = refusals + r
  end
  if new > 0 then count('queued', new) end
  if new + refusals > 0 then count('seen', new + refusals) end
  return new, refused.host_budget, refused.domain_hosts, refused.domain_pages
end

-- Writes the host states the script changed and its counters' increments, counting one
-- change (`ops`: see the end of a crawl).
local function write_back(hosts, counts)
  for host, h in pairs(ctx.hosts) do
    if ctx.dirty[host] then save_host(hosts, host, h) end
  end
  count('ops', 1)
  for field, n in pairs(ctx.counts) do
    if n ~= 0 then redis.call('HINCRBY', counts, field, int(n)) end
  end
end

-- Writes what the script changed: the seen-test's fill, host states, each touched host's
-- place in the ready set, the counters.
local function finish(seen, ready, hosts, counts, conns)
  if seen_state then
    redis.call('HSET', seen, 'fill', int(seen_state.fill))
    if seen_state.added > 0 then count('bits', seen_state.added) end
    if seen_state.grew then redis.call('HSET', counts, 'generations', seen_state.count) end
  end
  local queued = {}
  for host, list in pairs(ctx.pushes) do
    for first = 1, #list, 1000 do
      queued[host] =
        redis.call('RPUSH', queue_key(host), unpack(list, first, math.min(first + 999, #list)))
    end
    -- A host whose queue held URLs already keeps its place in the ready set, whatever their
    -- number: only one whose queue was empty is read, to be put there (most links are to
    -- hosts with URLs queued, and a host's read and its place cost as much as the link).
    if queued[host] == #list then get_host(hosts, host) end
  end
  for host, h in pairs(ctx.hosts) do
    reschedule(ready, host, h, conns, queued[host])
  end
  write_back(hosts, counts)
end

-- Replies kept for a while, by request id: a script whose answer was lost after it ran (a
-- timeout, a dropped connection) is sent again with the same id, and its second run answers
-- from what the first wrote, changing nothing. Two hashes take turns, a period each: a reply
-- is kept one to two periods, and a hash is emptied whole when its turn comes again, so
-- nothing is kept per reply but its field. A period is longer than the client retries a
-- request (two minutes, and its last answer's timeout).
local KEEP_REPLIES = 150000

local function kept_reply(replies, id)
  return redis.call('HGET', replies[1], id) or redis.call('HGET', replies[2], id)
end

local function keep_reply(replies, id, text)
  local period = math.floor(now / KEEP_REPLIES)
  local key = replies[period % 2 + 1]
  if redis.call('HGET', key, '_period') ~= tostring(period) then
    redis.call('DEL', key)
    redis.call('HSET', key, '_period', period)
  end
  redis.call('HSET', key, id, text)
end

-- What a script answers besides its own result: the bucket's earliest ready instant (-1 for
-- none), the server's clock, the bucket's queued and leased counts, and its count of changes
-- (`ops`), which never goes down but when Redis went back to an older state.
local function bucket_view(ready, counts)
  local first = redis.call('ZRANGE', ready, '0', '0', 'WITHSCORES')
  local at = -1
  -- The set's skiplist member, at +inf, is first only when no host is there.
  if first[2] and first[1] ~= SKIPLIST then at = tonumber(first[2]) end
  local c = redis.call('HMGET', counts, 'queued', 'leased', 'ops')
  return {at, now, tonumber(c[1] or 0), tonumber(c[2] or 0), tonumber(c[3] or 0)}
end
