-- CLAIM_ROBOTS: claims the fetch of a robots.txt: 1 for the process whose id is ARGV[1]
-- when it holds the claim (already, as when this is sent again after its answer was lost,
-- or now), else the id of the process that holds it. KEYS: the claim, and optionally the
-- hash of the bucket's robots.txt files. ARGV: the process's id, the claim's time (ms), the
-- id of a holder to take the claim over from (a process no longer present: it died holding
-- it) or '', and with the hash, the file's field: a file stored there is answered (a table
-- of its stored text) and nothing claimed, so that a process reads or claims a file in one
-- request. It touches no bucket: run without the common functions.
if KEYS[2] then
  local stored = redis.call('HGET', KEYS[2], ARGV[4])
  if stored then return {stored} end
end
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return 1 end
if not holder or (ARGV[3] and ARGV[3] ~= '' and holder == ARGV[3]) then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return holder
