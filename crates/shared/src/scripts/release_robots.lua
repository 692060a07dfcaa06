-- RELEASE_ROBOTS: lets go of the claim on a robots.txt's fetch, if it is still the
-- process's whose id is ARGV[1] (another may have taken it over: see claim_robots.lua).
-- KEYS: the claim. Answers 1 when it let go, else 0. It touches no bucket: run without the
-- common functions.
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
