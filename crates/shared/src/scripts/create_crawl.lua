-- CREATE_CRAWL: the crawl's record, written unless it exists, in one atomic step on one key:
-- a second process starting at the same instant reads the first one's crawl whole, never
-- half of it.
-- KEYS: the crawl's meta hash. ARGV: its fields and values, in pairs.
-- Answers the record as stored (HGETALL).
if redis.call('EXISTS', KEYS[1]) == 0 then
  redis.call('HSET', KEYS[1], unpack(ARGV))
end
return redis.call('HGETALL', KEYS[1])
