-- CLAIM_ROBOTS: claims the fetch of a robots.txt: 1 for the process whose id is ARGV[1]
-- when it holds the claim (already, as when this is sent again after its answer was lost,
-- or now), else 0. KEYS: the claim. ARGV: the process's id, the claim's time (ms). It
-- touches no bucket: run without the common functions.
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return 1 end
return 0
