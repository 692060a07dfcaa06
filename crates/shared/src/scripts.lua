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

-- The seen-test: a growing blocked Bloom filter of generations, each split over chunk keys
-- of at most 8 MiB (no allocation that stalls the server). The client computes the sizes
-- (SCHEDULE: "chunks blocks probes first capacity" per generation, `;` between) and each
-- URL's probes: two 32-bit block selectors, then per probe the byte of a 64-byte block and
-- the bit in it. Probes 0 .. first-1 go to the first block, the rest to the second.
local seen_state = nil

local function parse_generation(v)
  local g = split(v)
  return {c = tonumber(g[1]), nb = tonumber(g[2]), k = tonumber(g[3]), first = tonumber(g[4]),
    n = tonumber(g[5])}
end

local function load_seen(seen)
  local raw = redis.call('HGETALL', seen)
  local st = {gens = {}, count = 0, fill = 0, added = 0}
  for i = 1, #raw, 2 do
    local f, v = raw[i], raw[i + 1]
    if f == 'count' then st.count = tonumber(v)
    elseif f == 'fill' then st.fill = tonumber(v)
    else st.gens[tonumber(string.sub(f, 2))] = parse_generation(v)
    end
  end
  return st
end

local function new_generation(seen, st, schedule)
  local i = st.count
  local spec = nil
  local j = 0
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
  st.added = st.added + g.c * g.nb * 512
  redis.call('HSET', seen, 'g' .. i, spec, 'count', st.count, 'fill', 0)
end

-- The chunk key and byte offset of the block a selector picks in generation i.
local function block(i, g, p, at)
  local a, b, c, d = string.byte(p, at, at + 3)
  local n = (((a * 256 + b) * 256 + c) * 256 + d) % (g.c * g.nb)
  return tag .. ':s' .. i .. ':' .. math.floor(n / g.nb), (n % g.nb) * 64
end

-- Whether probes first .. last (from 0) of p hit set bits of block s (shorter than 64
-- bytes where it was never written).
local function hits(s, p, first, last)
  for j = first, last do
    local byte = string.byte(s, string.byte(p, 9 + 2 * j) + 1) or 0
    if bit.band(byte, string.byte(p, 10 + 2 * j)) == 0 then return false end
  end
  return true
end

-- Writes block s at key and offset with probes first .. last of p set. A chunk's first
-- write creates it whole: its string then gets exactly the allocation it needs, where
-- growing it write by write would leave room to spare.
local function write_block(g, key, at, s, p, first, last)
  if s == '' and redis.call('EXISTS', key) == 0 then
    redis.call('SETRANGE', key, g.nb * 64 - 1, '\0')
  end
  local t = {string.byte(s, 1, 64)}
  for j = #t + 1, 64 do t[j] = 0 end
  for j = first, last do
    local x = string.byte(p, 9 + 2 * j) + 1
    t[x] = bit.bor(t[x], string.byte(p, 10 + 2 * j))
  end
  redis.call('SETRANGE', key, at, string.char(unpack(t)))
end

local function contains(i, g, p)
  local key, at = block(i, g, p, 1)
  if not hits(redis.call('GETRANGE', key, at, at + 63), p, 0, g.first - 1) then return false end
  if g.first == g.k then return true end
  key, at = block(i, g, p, 5)
  return hits(redis.call('GETRANGE', key, at, at + 63), p, g.first, g.k - 1)
end

-- Sets the URL's bits in generation i; answers false when all were set already.
local function insert(i, g, p)
  local k1, a1 = block(i, g, p, 1)
  local s1 = redis.call('GETRANGE', k1, a1, a1 + 63)
  local in1 = hits(s1, p, 0, g.first - 1)
  if g.first == g.k then
    if in1 then return false end
    write_block(g, k1, a1, s1, p, 0, g.k - 1)
    return true
  end
  local k2, a2 = block(i, g, p, 5)
  if k1 == k2 and a1 == a2 then
    if in1 and hits(s1, p, g.first, g.k - 1) then return false end
    write_block(g, k1, a1, s1, p, 0, g.k - 1)
    return true
  end
  local s2 = redis.call('GETRANGE', k2, a2, a2 + 63)
  local in2 = hits(s2, p, g.first, g.k - 1)
  if in1 and in2 then return false end
  if not in1 then write_block(g, k1, a1, s1, p, 0, g.first - 1) end
  if not in2 then write_block(g, k2, a2, s2, p, g.first, g.k - 1) end
  return true
end

-- Whether the URL of probes p is new, marking it seen: one atomic step, so that of several
-- processes pushing one URL at once exactly one is told it is new.
local function test_and_set(seen, schedule, p)
  local st = seen_state
  if st.count == 0 then new_generation(seen, st, schedule) end
  local newest = st.count - 1
  for i = 0, newest - 1 do
    if contains(i, st.gens[i], p) then return false end
  end
  if not insert(newest, st.gens[newest], p) then return false end
  st.fill = st.fill + 1
  if st.fill >= st.gens[newest].n then new_generation(seen, st, schedule) end
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

-- Admits the links of ARGV[i .. i + 5 * n - 1], groups of five (probes host depth url
-- from; from is empty when unknown). Returns how many were new.
local function admit_links(seen, hosts, schedule, i, n)
  if not seen_state then seen_state = load_seen(seen) end
  local new = 0
  for _ = 1, n do
    local host = ARGV[i + 1]
    if test_and_set(seen, schedule, ARGV[i]) then
      local entry = '0 ' .. ARGV[i + 2] .. ' ' .. ARGV[i + 3]
      if ARGV[i + 4] ~= '' then entry = entry .. ' ' .. ARGV[i + 4] end
      push(host, entry)
      get_host(hosts, host)
      new = new + 1
    end
    i = i + 5
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
