-- MARK_SITEMAP: takes a URL as a sitemap of the crawl at an index level, unless it is known
-- already or its host has the most sitemaps it may. KEYS: sitemaps (URL to "level process"),
-- sitemap-hosts (host to sitemaps taken), both of the host's bucket. ARGV: tag, URL, host,
-- level, the most per host, the process's id. Answers 1 when taken (now, or by this process
-- before: a mark sent again after its answer was lost), 0 when known, -1 when over the cap.
local sitemaps, per_host = KEYS[1], KEYS[2]
local url, host, level, most, me = ARGV[2], ARGV[3], ARGV[4], tonumber(ARGV[5]), ARGV[6]
local known = redis.call('HGET', sitemaps, url)
if known then
  if string.match(known, '^%d+ (.*)$') == me then return 1 end
  return 0
end
if tonumber(redis.call('HGET', per_host, host) or 0) >= most then return -1 end
redis.call('HSET', sitemaps, url, level .. ' ' .. me)
redis.call('HINCRBY', per_host, host, 1)
return 1
