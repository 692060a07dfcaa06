-- ABANDON: gives a lease back unfetched: its URL goes to the front of its host's queue.
-- KEYS: ready, hosts, counts, leases, due. ARGV: tag, connections per host, token, its URL,
-- how long (ms) its host is not leased again (0: as its delay says), and the crawl's delay
-- (ms). Given back until a time (its address's turn), the lease made no request: the delay
-- its start took goes back first (HostRecord::give_back_start).
-- Answers 1, or 0 when the lease was not held (or the token is another URL's, after a
-- rollback).
local ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local lease = redis.call('HGET', leases, ARGV[3])
if not lease then return 0 end
local host, start, entry = parse_lease(lease)
if string.match(entry, '^%d+ %d+ (%S+)') ~= ARGV[4] then return 0 end
redis.call('HDEL', leases, ARGV[3])
redis.call('ZREM', due, ARGV[3])
redis.call('LPUSH', queue_key(host), entry)
local h = host_state(hosts, host)
h[ACTIVE] = math.max(0, h[ACTIVE] - 1)
local wait = tonumber(ARGV[5])
if wait > 0 then
  give_back_start(h, start, delay_of(h, tonumber(ARGV[6])))
  h[NEXT] = math.max(h[NEXT], now + wait)
end
save_host(hosts, host, h)
reschedule(ready, host, h, tonumber(ARGV[2]))
redis.call('HINCRBY', counts, 'leased', -1)
redis.call('HINCRBY', counts, 'queued', 1)
redis.call('HINCRBY', counts, 'ops', 1)
return 1
