-- CLAIM_SHARE: claims a share of a list several processes queue between them (a recrawl's
-- earlier URLs), for `hold` ms, unless another process holds it or it is done.
-- KEYS: the crawl's shares hash. ARGV: the share, this process's id, hold (ms).
-- Answers 'mine', 'taken' or 'done'. Sent again after a cut answer, it answers the same (a
-- claim already this process's is its own).
local v = redis.call('HGET', KEYS[1], ARGV[1])
if v == 'done' then return 'done' end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
if v then
  local who, till = string.match(v, '^(%S+) (%d+)$')
  if who and who ~= ARGV[2] and tonumber(till) > now then return 'taken' end
end
redis.call('HSET', KEYS[1], ARGV[1], ARGV[2] .. ' ' .. (now + tonumber(ARGV[3])))
return 'mine'
