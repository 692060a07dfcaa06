-- MARK_FINISHED: notes when the crawl finished, only on a crawl that exists: a crawl removed
-- meanwhile is not brought back as a record with nothing but this field.
-- KEYS: the crawl's meta hash. ARGV: the instant (ms since the Unix epoch). Answers 0.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HSET', KEYS[1], 'finished', ARGV[1])
end
return 0
