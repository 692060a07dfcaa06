-- UNMARK_SITEMAP: forgets a sitemap just taken whose push was not admitted, so that it does
-- not count against its host. KEYS: sitemaps, sitemap-hosts. ARGV: tag, URL, host.
if redis.call('HDEL', KEYS[1], ARGV[2]) == 1 then
  redis.call('HINCRBY', KEYS[2], ARGV[3], -1)
end
return 1
