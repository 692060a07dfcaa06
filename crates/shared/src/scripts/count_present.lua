-- COUNT_PRESENT: how many processes of the crawl said they are present within the last
-- `for` ms, on the server's clock.
-- KEYS: the crawl's procs sorted set. ARGV: for (ms). Answers the count.
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
return redis.call('ZCOUNT', KEYS[1], now - tonumber(ARGV[1]), '+inf')
