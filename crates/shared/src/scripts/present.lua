-- PRESENT: says a process is present, forgets processes long gone, and answers the
-- processes present. KEYS: procs. ARGV: tag (unused), the process's id, how long a process
-- counts as present after it last said so (ms), when to forget it (ms).
redis.call('ZADD', KEYS[1], now, ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - tonumber(ARGV[4]))
return redis.call('ZRANGEBYSCORE', KEYS[1], now - tonumber(ARGV[3]), '+inf')
