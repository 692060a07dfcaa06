-- CRAWL_DELAY: sets a host's delay (from its robots.txt `Crawl-delay`, at least its own or
-- the crawl's), spacing its next start from its last one by it.
-- KEYS: hosts, ready. ARGV: tag, host, delay (ms), connections per host.
local hosts, ready, host = KEYS[1], KEYS[2], ARGV[2]
local h = host_state(hosts, host)
h[DELAY] = tonumber(ARGV[3])
space_starts(h, h[DELAY])
save_host(hosts, host, h)
reschedule(ready, host, h, tonumber(ARGV[4]))
return 1
