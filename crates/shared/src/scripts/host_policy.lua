-- HOST_POLICY: sets a host's own politeness from the crawl's per-host settings, before its
-- first links are admitted: its delay (kept if a longer robots.txt `Crawl-delay` is set)
-- and its connection limit.
-- KEYS: hosts, counts. ARGV: tag, host, delay (ms, -1 for the crawl's), connections (-1 for
-- the crawl's).
local h = host_state(KEYS[1], ARGV[2])
local delay, conns = tonumber(ARGV[3]), tonumber(ARGV[4])
if delay >= 0 then
  if h[DELAY] < 0 then h[DELAY] = delay else h[DELAY] = math.max(h[DELAY], delay) end
end
h[CONNS] = conns
if redis.call('HEXISTS', KEYS[1], ARGV[2]) == 0 then
  redis.call('HINCRBY', KEYS[2], 'hosts', 1)
end
save_host(KEYS[1], ARGV[2], h)
return 1
