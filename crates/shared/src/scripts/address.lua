-- ADDRESS: the turns of a process's requests at the IP addresses their connections go to,
-- all those that came while its last script for the addresses' group was under way
-- (frontier/addresses.rs), shared by every name an address serves and every process of the
-- crawl: frontier::AddressRecord's rule (see there) applied to each request in turn, as
-- scripts of their own run one after another at one instant would, with the requests in
-- flight as tokens that expire (a process killed with a request out gives its place back in
-- time) and the waiting hosts' tickets as a sorted set. What an address's requests find is
-- read once and what they change written once, and one script carries the requests of many
-- addresses (those of a group: one group on a single server), so that an address asked a
-- turn or two at a time still shares a call's fixed cost (docs/benchmarks.md, 2026-12-06).
-- KEYS: for each address, its record (hash: last, free), its requests in flight (name ->
-- deadline), its tickets (host -> instant); all tagged with the addresses' group.
-- ARGV: tag, connections (0: no limit), delay, how long a request may hold its place, the
-- wait when full, how long a ticket is kept (all times in ms); then for each address, in the
-- order of KEYS: the number of its requests that ended, then their names (they leave first);
-- the number of its requests asking their turns, then their hosts, then their names ("host
-- lease-token number": AddressRequest), in the same order (blocks, not pairs: each goes to
-- Redis whole, with no table made of it).
-- Answers, for each request asking, address after address, 0 when it may start now (and
-- its leave must follow), else the wait in ms: negative when the address is full
-- (frontier::Turn::Full: ask again when a request leaves, or after that long at the latest).
-- Each key is written with its time to live (an address nothing is heard of goes: its keys
-- outlive its last request and ticket); a key only read is left as it is.
local conns, delay, hold = tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4])
local full_wait, ticket_ttl = tonumber(ARGV[5]), tonumber(ARGV[6])
local ttl = int(hold + ticket_ttl + delay)
local now_text = int(now)
local answers = {}
-- The requests at one address, its keys KEYS[k .. k + 2], its block from ARGV[a]: answers
-- them, and answers where the next address's block starts.
local function at_address(k, a)
  local record, inflight, tickets = KEYS[k], KEYS[k + 1], KEYS[k + 2]
  local ended = tonumber(ARGV[a])
  if ended > 0 then redis.call('ZREM', inflight, unpack(ARGV, a + 1, a + ended)) end
  -- The j-th request asking: its host ARGV[h + j], its name ARGV[h + asking + j].
  local h = a + 1 + ended
  local asking = tonumber(ARGV[h])
  local next_block = h + 1 + 2 * asking
  if asking < 1 then return next_block end
  -- Sent again after its answer was lost, a request that went goes still.
  local went = redis.call('ZMSCORE', inflight, unpack(ARGV, h + asking + 1, h + 2 * asking))
  -- Each host's ticket (false: none) as the requests before change it, and the hosts whose
  -- ticket changed, in order.
  local ticket_of, changed = {}, {}
  local held = redis.call('ZMSCORE', tickets, unpack(ARGV, h + 1, h + asking))
  for j = 1, asking do
    local host = ARGV[h + j]
    if ticket_of[host] == nil then ticket_of[host] = tonumber(held[j]) or false end
  end
  local function set_ticket(host, at)
    if ticket_of[host] == at then return end
    if not changed[host] then
      changed[host] = true
      changed[#changed + 1] = host
    end
    ticket_of[host] = at
  end
  -- The record, read when a request first needs it; `dirty`: its fields to write.
  local last, free, read = nil, nil, false
  local dirty = {}
  -- The requests in flight: those Redis holds (`stored`, counted when first needed), and those
  -- started here (`starts`: deadline and name each, added at the end; `started` of them).
  -- Numbers go to Redis as texts made here: a number passed to redis.call is printed as a
  -- double, which cost more than the rest of a request's turn.
  local stored, pruned = nil, false
  local starts, started, deadline = {}, 0, nil
  -- Tickets given here (old ones go then) and kept ones renewed.
  local gave, renew = false, false
  local function prune()
    if not pruned then
      redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now_text)
      pruned = true
      stored = nil
    end
  end
  local function start(name, next_free)
    -- With no connection limit, requests past their time are not dropped when full: here.
    if conns == 0 then prune() end
    deadline = deadline or int(now + hold)
    starts[2 * started + 1] = deadline
    starts[2 * started + 2] = name
    started = started + 1
    last, dirty.last = now, true
    if next_free then free, dirty.free = next_free, true end
    return 0
  end
  local function wait_ticket(host, at)
    set_ticket(host, at)
    gave = true
  end
  local function turn(host, name)
    local ticket = ticket_of[host]
    -- A ticket kept past its time is as none.
    if ticket and ticket <= now - ticket_ttl then
      set_ticket(host, false)
      ticket = false
    end
    if ticket and now < ticket then return ticket - now end
    -- Requests past their time count only when they would fill the address.
    if conns > 0 then
      if not stored then stored = redis.call('ZCARD', inflight) end
      if stored + started >= conns then
        prune()
        stored = redis.call('ZCARD', inflight)
        if stored + started >= conns then return -full_wait end
      end
    end
    if not read then
      local r = redis.call('HMGET', record, 'last', 'free')
      last, free, read = tonumber(r[1]), tonumber(r[2]), true
    end
    local spaced = (not last) or now >= last + delay
    if ticket then
      -- Its turn, kept for it; a moment later when the host before it was late.
      if spaced then
        set_ticket(host, false)
        -- The other hosts' tickets are kept as long as hosts come for theirs.
        renew = true
        return start(name, nil)
      end
      wait_ticket(host, last + delay)
      return last + delay - now
    end
    local from = math.max(free or now, now)
    if from <= now and spaced then return start(name, now + delay) end
    local at = from
    if last then at = math.max(at, last + delay) end
    free, dirty.free = at + delay, true
    wait_ticket(host, at)
    return at - now
  end
  for j = 1, asking do
    -- Gone since if an earlier request here dropped it past its time (as its own script
    -- run after that one's would have found).
    local answer = 0
    if not (went[j] and (not pruned or tonumber(went[j]) > now)) then
      answer = turn(ARGV[h + j], ARGV[h + asking + j])
    end
    answers[#answers + 1] = answer
  end
  if started > 0 then
    redis.call('ZADD', inflight, unpack(starts))
    redis.call('PEXPIRE', inflight, ttl)
  end
  if dirty.last or dirty.free then
    local fields = {}
    if dirty.last then
      fields[#fields + 1] = 'last'
      fields[#fields + 1] = now_text
    end
    if dirty.free then
      fields[#fields + 1] = 'free'
      fields[#fields + 1] = int(free)
    end
    redis.call('HSET', record, unpack(fields))
    redis.call('PEXPIRE', record, ttl)
  end
  local gone, given = {}, {}
  for _, host in ipairs(changed) do
    local at = ticket_of[host]
    if at then
      given[#given + 1] = int(at)
      given[#given + 1] = host
    else
      gone[#gone + 1] = host
    end
  end
  if #gone > 0 then redis.call('ZREM', tickets, unpack(gone)) end
  -- Tickets kept past their time (hosts that never came back) go as new ones come.
  if gave then redis.call('ZREMRANGEBYSCORE', tickets, '-inf', int(now - ticket_ttl)) end
  if #given > 0 then redis.call('ZADD', tickets, unpack(given)) end
  if gave or renew then redis.call('PEXPIRE', tickets, ttl) end
  return next_block
end
local a = 7
-- (On a cluster, KEYS ends with one more, declared only: see scripts.rs, MOVING.)
for k = 1, #KEYS - 2, 3 do a = at_address(k, a) end
return answers
