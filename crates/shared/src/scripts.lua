-- The shared frontier's server side: the functions every script of crates/shared starts with.
-- Each script works on the keys of one bucket of hosts, all tagged with the bucket's hash tag,
-- so that on a Redis Cluster they live in one slot; KEYS holds the bucket's fixed keys, and
-- the per-host queues and seen-test chunks are named from the same tag (ARGV[1]).
--
-- Host state, one string per host in the `hosts` hash:
-- "active next delay errs since gaveup conns"
--   active: leases out; next: ms before which no lease starts; delay: the host's own delay
--   in ms (-1: the crawl's); errs: errors in a row; since: ms of the first of them; gaveup: 1
--   once the host is given up; conns: the host's own connection limit (-1: the crawl's).
-- Queue entry: "attempts depth url[ from]" (attempts made before, 0 for a new URL; from: the
-- page whose link led here, when known). URLs are canonical: they hold no space.
-- Lease: "host " and the entry, in the `leases` hash under its token; its deadline in `due`.

local tag = ARGV[1]
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)

local function split(s)
  local out = {}
  for v in string.gmatch(s, '%S+') do out[#out + 1] = v end
  return out
end

-- A host's state as stored, or nil for a host never stored. A state written before the
-- connections field existed reads it as the crawl's.
local function stored_host(hosts, host)
  local s = redis.call('HGET', hosts, host)
  if not s then return nil end
  local v = split(s)
  for i = 1, 6 do v[i] = tonumber(v[i]) end
  v[7] = tonumber(v[7]) or -1
  return v
end

local function host_state(hosts, host)
  return stored_host(hosts, host) or {0, 0, -1, 0, 0, 0, -1}
end

local function save_host(hosts, host, h)
  redis.call('HSET', hosts, host, table.concat(h, ' '))
end

local function queue_key(host)
  return tag .. ':q:' .. host
end

-- Puts the host in the ready set at the instant its next lease may start, or takes it out:
-- a host is there exactly when it has a queued URL and a free connection.
local function limit(h, conns)
  if h[7] > 0 then return h[7] end
  return conns
end

local function reschedule(ready, host, h, conns)
  if h[1] < limit(h, conns) and redis.call('LLEN', queue_key(host)) > 0 then
    local at = h[2]
    if h[6] == 1 then at = 0 end
    redis.call('ZADD', ready, at, host)
  else
    redis.call('ZREM', ready, host)
  end
end

-- The seen-test: a growing Bloom filter of generations, each split over chunk keys of at most
-- 2^26 bits (8 MiB: no allocation that stalls the server). Generation i holds n0 * growth^i
-- URLs at rate * (1 - tightening) * tightening^i. The client sends three 32-bit hashes of
-- the URL (keyed SipHash): h3 picks the chunk, h1 + j * h2 the k bits in it.
local seen_state = nil

local function load_seen(seen)
  local raw = redis.call('HGETALL', seen)
  local st = {gens = {}, count = 0, fill = 0, added = 0}
  for i = 1, #raw, 2 do
    local f, v = raw[i], raw[i + 1]
    if f == 'count' then st.count = tonumber(v)
    elseif f == 'fill' then st.fill = tonumber(v)
    else
      local g = split(v)
      st.gens[tonumber(string.sub(f, 2))] = {
        m = tonumber(g[1]), k = tonumber(g[2]), c = tonumber(g[3]), n = tonumber(g[4])}
    end
  end
  return st
end

local function new_generation(seen, st, n0, rate, growth, tightening)
  local i = st.count
  local n = n0 * growth ^ i
  local p = rate * (1 - tightening) * tightening ^ i
  local ln2 = math.log(2)
  local m = math.ceil(-n * math.log(p) / (ln2 * ln2))
  local k = math.max(1, math.floor(m / n * ln2 + 0.5))
  local c = math.ceil(m / 67108864)
  local mc = math.ceil(m / c)
  st.gens[i] = {m = mc, k = k, c = c, n = n}
  st.count = i + 1
  st.fill = 0
  st.added = st.added + mc * c
  redis.call('HSET', seen, 'g' .. i, mc .. ' ' .. k .. ' ' .. c .. ' ' .. n,
    'count', st.count, 'fill', 0)
end

local function probe(op, i, g, h1, h2, h3)
  local args = {}
  for j = 0, g.k - 1 do
    args[#args + 1] = op
    args[#args + 1] = 'u1'
    args[#args + 1] = (h1 + j * h2) % g.m
    if op == 'SET' then args[#args + 1] = 1 end
  end
  local key = tag .. ':s' .. i .. ':' .. (h3 % g.c)
  if op == 'SET' then
    return redis.call('BITFIELD', key, unpack(args))
  end
  return redis.call('BITFIELD_RO', key, unpack(args))
end

local function all_set(bits)
  for _, b in ipairs(bits) do
    if b == 0 then return false end
  end
  return true
end

-- Whether the URL of these hashes is new, marking it seen: one atomic step, so that of
-- several processes pushing one URL at once exactly one is told it is new.
local function test_and_set(seen, sizing, h1, h2, h3)
  local st = seen_state
  if st.count == 0 then
    new_generation(seen, st, sizing[1], sizing[2], sizing[3], sizing[4])
  end
  local newest = st.count - 1
  for i = 0, newest - 1 do
    if all_set(probe('GET', i, st.gens[i], h1, h2, h3)) then return false end
  end
  if all_set(probe('SET', newest, st.gens[newest], h1, h2, h3)) then return false end
  st.fill = st.fill + 1
  if st.fill >= st.gens[newest].n then
    new_generation(seen, st, sizing[1], sizing[2], sizing[3], sizing[4])
  end
  return true
end

-- What one script changes, kept here and written once at its end: the host states it read
-- (each read once, written back if changed), and the counters' increments. A batch of many
-- pages of one host then costs one read and one write of that host, not one per page.
local ctx = {hosts = {}, dirty = {}, counts = {}, pushes = {}}

local function get_host(hosts, host)
  local h = ctx.hosts[host]
  if not h then
    h = stored_host(hosts, host)
    if not h then
      h = {0, 0, -1, 0, 0, 0, -1}
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

-- Admits the links of ARGV[i .. i + 7 * n - 1], groups of seven (h1 h2 h3 host depth url
-- from; from is empty when unknown). Returns how many were new.
local function admit_links(seen, hosts, sizing, i, n)
  if not seen_state then seen_state = load_seen(seen) end
  local new = 0
  for _ = 1, n do
    local h1, h2, h3 = tonumber(ARGV[i]), tonumber(ARGV[i + 1]), tonumber(ARGV[i + 2])
    local host = ARGV[i + 3]
    if test_and_set(seen, sizing, h1, h2, h3) then
      local entry = '0 ' .. ARGV[i + 4] .. ' ' .. ARGV[i + 5]
      if ARGV[i + 6] ~= '' then entry = entry .. ' ' .. ARGV[i + 6] end
      push(host, entry)
      get_host(hosts, host)
      new = new + 1
    end
    i = i + 7
  end
  if new > 0 then
    count('queued', new)
    count('seen', new)
  end
  return new
end

-- Writes the host states the script changed and its counters' increments, counting one
-- change (`ops`: see the end of a crawl).
local function write_back(hosts, counts)
  for host, h in pairs(ctx.hosts) do
    if ctx.dirty[host] then save_host(hosts, host, h) end
  end
  count('ops', 1)
  for field, n in pairs(ctx.counts) do
    if n ~= 0 then redis.call('HINCRBY', counts, field, n) end
  end
end

-- Writes what the script changed: the seen-test's fill, host states, each touched host's
-- place in the ready set, the counters.
local function finish(seen, ready, hosts, counts, conns)
  if seen_state then
    redis.call('HSET', seen, 'fill', seen_state.fill)
    if seen_state.added > 0 then
      count('bits', seen_state.added)
      redis.call('HSET', counts, 'generations', seen_state.count)
    end
  end
  for host, list in pairs(ctx.pushes) do
    for first = 1, #list, 1000 do
      redis.call('RPUSH', queue_key(host), unpack(list, first, math.min(first + 999, #list)))
    end
  end
  for host, h in pairs(ctx.hosts) do
    reschedule(ready, host, h, conns)
  end
  write_back(hosts, counts)
end

-- What a script answers besides its own result: the bucket's earliest ready instant (-1 for
-- none), the server's clock, and the bucket's queued and leased counts.
local function bucket_view(ready, counts)
  local first = redis.call('ZRANGE', ready, 0, 0, 'WITHSCORES')
  local at = -1
  if first[2] then at = tonumber(first[2]) end
  local c = redis.call('HMGET', counts, 'queued', 'leased')
  return {at, now, tonumber(c[1] or 0), tonumber(c[2] or 0)}
end
