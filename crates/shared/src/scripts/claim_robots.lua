-- CLAIM_ROBOTS: claims the fetch of a robots.txt: 1 for the process whose id is ARGV[1]
-- when it holds the claim (already, as when this is sent again after its answer was lost,
-- or now), else the id of the process that holds it. KEYS: the claim. ARGV: the process's
-- id, the claim's time (ms), and optionally the id of a holder to take the claim over from
-- (a process no longer present: it died holding it). It touches no bucket: run without
-- the common functions.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then return 1 end
if not holder or holder == ARGV[3] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return 1
end
return holder
