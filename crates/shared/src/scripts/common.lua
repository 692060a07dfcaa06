-- The shared frontier's server side: the functions every script of crates/shared uses, in
-- one function library (scripts.rs builds it: the host-state field indices and defaults, the
-- outcome and fate codes, then this file, then each script as a function; each call sets
-- KEYS, ARGV, `tag` and `now` first). Each script works on the keys of one bucket of
-- hosts, all tagged with the bucket's hash tag, so that on a Redis Cluster they live in one
-- slot; KEYS holds the bucket's fixed keys, and the per-host queues and seen-test sets are
-- named from the same tag (ARGV[1]).
--
-- A bucket's hosts are scheduled by the process that owns the bucket (`own`), in its
-- memory, by frontier::HostRecord's rules; these functions keep what every process shares
-- (the seen-test, the queues, the counts) and the owner's log (see `batch`).
--
-- Queue entry: "attempts depth url[ from][ ~memo]" (attempts made before, 0 for a new URL;
-- from: the page whose link led here, when known; memo: the client's bytes queued with it, in
-- base64url). URLs are canonical: they hold no space. The scripts carry entries untouched.
-- A URL in flight: its host, a space and its entry, in the `leases` hash under its token.
-- A bucket's `work` set holds the hosts whose queues may hold URLs, and its `inbox` list
-- those whose queues another process's links found empty since the owner last read it.

local function split(s)
  local out = {}
  for v in string.gmatch(s, '%S+') do out[#out + 1] = v end
  return out
end

-- A whole number as a command's argument: Redis formats a Lua number with "%.17g" (its
-- sprintf is a tenth of a command's cost), where "%d" takes a fraction of that.
local function int(n)
  return string.format('%d', n)
end

local function queue_key(host)
  return tag .. ':q:' .. host
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
  local st = {gens = {}, count = 0, fill = 0, written = 0, added = 0, grew = false}
  for i = 1, #raw, 2 do
    local f, v = raw[i], raw[i + 1]
    if f == 'count' then st.count = tonumber(v)
    elseif f == 'fill' then
      st.fill = tonumber(v)
      st.written = st.fill
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
  st.written = 0
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
  -- Most buckets have one generation: a test is then one command and little Lua, the
  -- most frequent work of the crawl's scripts (two or three a page).
  if newest > 0 then
    -- The process looked in the first generations already (all frozen): see seen.rs.
    local skip = math.min(string.byte(p, 7) or 0, newest)
    for i = newest - 1, skip, -1 do
      if redis.call('SISMEMBER', slot(st, i, h, fingerprint)) == 1 then return false end
    end
  end
  -- The newest generation's key looked up here when it is known (a call less a test).
  local g = st.gens[newest]
  local key = not g.wide and g.keys and g.keys[h % g.sets]
  if key then
    if redis.call('SADD', key, fingerprint) == 0 then return false end
  elseif redis.call('SADD', slot(st, newest, h, fingerprint)) == 0 then
    return false
  end
  local fill = st.fill + 1
  st.fill = fill
  -- A wide generation's intsets hold 8-byte integers.
  if g.wide then st.added = st.added + 64 else st.added = st.added + st.bits end
  if fill >= g.n then new_generation(seen, st, schedule) end
  return true
end

-- Writes the seen-test's fill, if it changed (half the links a batch tests were seen: each
-- process sends each URL it meets), and its generations, if they grew.
local function write_seen(seen, counts)
  local st = seen_state
  if st.fill ~= st.written then redis.call('HSET', seen, 'fill', int(st.fill)) end
  if st.grew then redis.call('HSET', counts, 'generations', st.count) end
end

-- What one script changes, kept here and written once at its end: the counters' increments,
-- and the entries to append to each host's queue.
local ctx = {counts = {}, pushes = {}, pages = {}}

-- What each call starts with: nothing read. The library's functions share these between
-- calls (they are the library's locals, loaded once), so each call forgets the last one's.
local function forget()
  seen_state = nil
  ctx = {counts = {}, pushes = {}, pages = {}}
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
-- over a budget stays seen, and is counted under its reason; a host's pages are counted in
-- the bucket's `pages` hash. Returns how many were queued,
-- and how many each budget refused: the host's, the domain's hosts, the domain's pages.
local function admit_links(seen, pages, domains, schedule, i, n, budget)
  -- A page without links new to its process: the seen-test is not read (nor written).
  if n == 0 then return 0, 0, 0, 0 end
  if not seen_state then seen_state = load_seen(seen, schedule) end
  local by_domain = budget.domain_hosts > 0 or budget.domain_pages > 0
  local counted = budget.pages > 0 or by_domain
  -- Locals, not tables: a step's links are most pages' only Lua.
  local changed = by_domain and {}
  local new, by_host, by_hosts, by_pages = 0, 0, 0, 0
  for _ = 1, n do
    if test_and_set(seen, schedule, ARGV[i]) then
      local text = ARGV[i + 1]
      local sp = string.find(text, ' ', 1, true)
      local sp2 = string.find(text, ' ', sp + 1, true)
      local host = string.sub(text, 1, sp - 1)
      -- The host's pages admitted, read only under a budget.
      local p = 0
      if counted then
        p = ctx.pages[host]
        if not p then p = tonumber(redis.call('HGET', pages, host) or 0) end
      end
      local refused, d = false, nil
      if budget.pages > 0 and p >= budget.pages then
        by_host, refused = by_host + 1, true
      elseif by_domain then
        local name = string.sub(text, sp + 1, sp2 - 1)
        d = changed[name] or stored_domain(domains, name)
        changed[name] = d
        if budget.domain_hosts > 0 and p == 0 and d[1] >= budget.domain_hosts then
          by_hosts, refused = by_hosts + 1, true
        elseif budget.domain_pages > 0 and d[2] >= budget.domain_pages then
          by_pages, refused = by_pages + 1, true
        end
      end
      if not refused then
        if d then
          if p == 0 then d[1] = d[1] + 1 end
          d[2] = d[2] + 1
        end
        if counted then ctx.pages[host] = p + 1 end
        push(host, string.sub(text, sp2 + 1))
        new = new + 1
      end
    end
    i = i + 2
  end
  if changed then
    for name, d in pairs(changed) do
      redis.call('HSET', domains, name, d[1] .. ' ' .. d[2])
    end
  end
  if by_host > 0 then count('host_budget', by_host) end
  if by_hosts > 0 then count('domain_hosts', by_hosts) end
  if by_pages > 0 then count('domain_pages', by_pages) end
  local refusals = by_host + by_hosts + by_pages
  if new > 0 then count('queued', new) end
  if new + refusals > 0 then count('seen', new + refusals) end
  return new, by_host, by_hosts, by_pages
end

-- Appends `entries` to host's queue; a queue that was empty puts its host in the bucket's
-- work, and, unless its owner is the one appending (`owner`), in its inbox.
local function append(work, inbox, host, entries, owner)
  local len = 0
  for first = 1, #entries, 1000 do
    len = redis.call('RPUSH', queue_key(host), unpack(entries, first, math.min(first + 999, #entries)))
  end
  if len == #entries then
    redis.call('SADD', work, host)
    if not owner then redis.call('RPUSH', inbox, host) end
  end
end

-- Writes the counters' increments, counting one change (`ops`: see bucket_view), in two
-- commands however many counters changed (a command is most of a script's cost, and five
-- or six counters change in an owner's batch), or one each when there are two at most;
-- answers the bucket's count of changes after it.
local function write_counts(counts)
  count('ops', 1)
  local fields, adds = {}, {}
  for field, n in pairs(ctx.counts) do
    if n ~= 0 then
      fields[#fields + 1] = field
      adds[#adds + 1] = n
    end
  end
  if #fields <= 2 then
    local ops = 0
    for j, field in ipairs(fields) do
      local v = redis.call('HINCRBY', counts, field, int(adds[j]))
      if field == 'ops' then ops = v end
    end
    return ops
  end
  local stored = redis.call('HMGET', counts, unpack(fields))
  local values, ops = {}, 0
  for j, field in ipairs(fields) do
    local v = (tonumber(stored[j]) or 0) + adds[j]
    if field == 'ops' then ops = v end
    values[#values + 1] = field
    values[#values + 1] = int(v)
  end
  redis.call('HSET', counts, unpack(values))
  return ops
end

-- Writes what admission changed: the seen-test's fill, the queues, the pages counted.
local function finish(seen, counts, work, inbox, pages)
  if seen_state then
    write_seen(seen, counts)
    if seen_state.added > 0 then count('bits', seen_state.added) end
  end
  for host, list in pairs(ctx.pushes) do append(work, inbox, host, list, false) end
  local written = {}
  for host, p in pairs(ctx.pages) do
    written[#written + 1] = host
    written[#written + 1] = int(p)
  end
  if #written > 0 then redis.call('HSET', pages, unpack(written)) end
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

-- Whether the process whose "id epoch" is `mine` holds the bucket, its holder's key reading
-- `held`: its hold, or one that lapsed with no owner since (the bucket's epoch is still its
-- own, as after a stall longer than the hold; a release or a take-over moves the epoch on).
-- Its renewal (`own`) and its batches' fence (`batch`) both ask this.
local function holds(held, mine, counts)
  if held == mine then return true end
  if held then return false end
  return redis.call('HGET', counts, 'epoch') == string.match(mine, '%S+$')
end

-- What a batch answers besides its own result: the server's clock, and the bucket's count
-- of changes (`ops`), which never goes down but when Redis went back to an older state;
-- `ops` when the caller knows it (write_counts answered it).
local function bucket_view(counts, ops)
  return now, ops or tonumber(redis.call('HGET', counts, 'ops') or 0)
end
