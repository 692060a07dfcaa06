-- HEARD_FROM: how long ago (ms) a process last said it was present, by the server's clock;
-- -1 when it never did (or went long ago). KEYS: procs. ARGV: tag (unused), the process's
-- id.
local at = redis.call('ZSCORE', KEYS[1], ARGV[2])
if not at then return -1 end
return now - tonumber(at)
