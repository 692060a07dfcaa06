-- ADDRESS: a request's turn at the IP address its connection goes to, shared by every name
-- the address serves and every process of the crawl: frontier::AddressRecord's rule (see
-- there), with the requests in flight as tokens that expire (a process killed with a
-- request out gives its place back in time) and the waiting hosts' tickets as a sorted set.
-- KEYS: the address's record (hash: last, free), its requests in flight (token -> deadline),
-- its tickets (host -> instant); all three tagged with the address.
-- ARGV: tag, "enter" or "leave", host, the request's token ("host lease-token"), then for "enter": connections (0: no limit),
-- delay, how long a request may hold its place, the wait when full, how long a ticket is
-- kept (all times in ms).
-- Answers 0 when the request may start now (and leave must follow), else the wait in ms.
local record, inflight, tickets = KEYS[1], KEYS[2], KEYS[3]
local host, token = ARGV[3], ARGV[4]
if ARGV[2] == 'leave' then
  redis.call('ZREM', inflight, token)
  return 0
end
-- Sent again after its answer was lost, a request that went goes still.
if redis.call('ZSCORE', inflight, token) then return 0 end
local conns, delay, hold = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local full_wait, ticket_ttl = tonumber(ARGV[8]), tonumber(ARGV[9])
redis.call('ZREMRANGEBYSCORE', inflight, '-inf', now)
redis.call('ZREMRANGEBYSCORE', tickets, '-inf', now - ticket_ttl)
-- An address nothing is heard of goes: its keys outlive its last request and ticket.
for _, key in ipairs(KEYS) do redis.call('PEXPIRE', key, hold + ticket_ttl + delay) end
local ticket = tonumber(redis.call('ZSCORE', tickets, host))
if ticket and now < ticket then return ticket - now end
if conns > 0 and redis.call('ZCARD', inflight) >= conns then return full_wait end
local r = redis.call('HMGET', record, 'last', 'free')
local last, free = tonumber(r[1]), tonumber(r[2])
local spaced = (not last) or now >= last + delay
local function start()
  redis.call('ZADD', inflight, now + hold, token)
  redis.call('HSET', record, 'last', now)
  return 0
end
if ticket then
  -- Its turn, kept for it; a moment later when the host before it was late.
  if spaced then
    redis.call('ZREM', tickets, host)
    return start()
  end
  redis.call('ZADD', tickets, last + delay, host)
  return last + delay - now
end
free = math.max(free or now, now)
if free <= now and spaced then
  redis.call('HSET', record, 'free', now + delay)
  return start()
end
local at = free
if last then at = math.max(at, last + delay) end
redis.call('HSET', record, 'free', at + delay)
redis.call('ZADD', tickets, at, host)
return at - now
