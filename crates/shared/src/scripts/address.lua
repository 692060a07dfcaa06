-- ADDRESS: a request's turn at the IP address its connection goes to, shared by every name
-- the address serves and every process of the crawl: frontier::AddressRecord's rule (see
-- there), with the requests in flight as tokens that expire (a process killed with a
-- request out gives its place back in time) and the waiting hosts' tickets as a sorted set.
-- A request that ends leaves with a plain `ZREM` of its token from the requests in flight
-- (scripts.rs, address_leave): no script.
-- KEYS: the address's record (hash: last, free), its requests in flight (token -> deadline),
-- its tickets (host -> instant); all three tagged with the address.
-- ARGV: tag, host, the request's name ("host lease-token number": AddressRequest),
-- connections (0: no limit), delay, how long a request may hold its place, the wait when
-- full, how long a ticket is kept (all times in ms).
-- Answers 0 when the request may start now (and its leave must follow), else the wait in ms:
-- negative when the address is full (frontier::Turn::Full: ask again when a request
-- leaves, or after that long at the latest).
-- Each key is written with its time to live (an address nothing is heard of goes: its keys
-- outlive its last request and ticket); a key only read is left as it is.
local record, inflight, tickets = KEYS[1], KEYS[2], KEYS[3]
local host, token = ARGV[2], ARGV[3]
-- Sent again after its answer was lost, a request that went goes still.
if redis.call('ZSCORE', inflight, token) then return 0 end
local conns, delay, hold = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local full_wait, ticket_ttl = tonumber(ARGV[7]), tonumber(ARGV[8])
local ttl = hold + ticket_ttl + delay
local ticket = tonumber(redis.call('ZSCORE', tickets, host))
-- A ticket kept past its time is as none.
if ticket and ticket <= now - ticket_ttl then
  redis.call('ZREM', tickets, host)
  ticket = nil
end
if ticket and now < ticket then return ticket - now end
-- Requests past their time count only when they would fill the address.
if conns > 0 and redis.call('ZCARD', inflight) >= conns then
  redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
  if redis.call('ZCARD', inflight) >= conns then return -full_wait end
end
local r = redis.call('HMGET', record, 'last', 'free')
local last, free = tonumber(r[1]), tonumber(r[2])
local spaced = (not last) or now >= last + delay
-- Starts the request now; `free`: the record's next free instant, when it moves.
local function start(next_free)
  -- With no connection limit, requests past their time are not dropped when full: here.
  if conns == 0 then redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now) end
  redis.call('ZADD', inflight, now + hold, token)
  redis.call('PEXPIRE', inflight, ttl)
  if next_free then
    redis.call('HSET', record, 'last', now, 'free', next_free)
  else
    redis.call('HSET', record, 'last', now)
  end
  redis.call('PEXPIRE', record, ttl)
  return 0
end
local function wait_ticket(at)
  -- Tickets kept past their time (hosts that never came back) go as new ones come.
  redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now - ticket_ttl)
  redis.call('ZADD', tickets, at, host)
  redis.call('PEXPIRE', tickets, ttl)
end
if ticket then
  -- Its turn, kept for it; a moment later when the host before it was late.
  if spaced then
    redis.call('ZREM', tickets, host)
    -- The other hosts' tickets are kept as long as hosts come for theirs.
    redis.call('PEXPIRE', tickets, ttl)
    return start(nil)
  end
  wait_ticket(last + delay)
  return last + delay - now
end
free = math.max(free or now, now)
if free <= now and spaced then return start(now + delay) end
local at = free
if last then at = math.max(at, last + delay) end
redis.call('HSET', record, 'free', at + delay)
redis.call('PEXPIRE', record, ttl)
wait_ticket(at)
return at - now
