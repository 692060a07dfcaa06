-- BUMP_EPOCH: tells every process that Redis went back to an older state (they forget what
-- they remember of the crawl), only on a crawl that exists.
-- KEYS: the crawl's meta hash. Answers 0.
if redis.call('EXISTS', KEYS[1]) == 1 then
  redis.call('HINCRBY', KEYS[1], 'epoch', 1)
end
return 0
