-- RENEW: moves the deadlines of leases still held. KEYS: leases, due. ARGV: tag, lease time
-- (ms), tokens. Answers how many were still held.
local held = 0
for i = 3, #ARGV do
  if redis.call('HEXISTS', KEYS[1], ARGV[i]) == 1 then
    redis.call('ZADD', KEYS[2], 'XX', now + tonumber(ARGV[2]), ARGV[i])
    held = held + 1
  end
end
return held
