-- RELEASE_ROBOTS: lets go of the claim on a robots.txt's fetch, if it is still the
-- process's whose id is ARGV[1] (another may have taken it over: see claim_robots.lua);
-- with a second key (the hash of the bucket's robots.txt files) and ARGV[2], ARGV[3] (the
-- file's field and what the process stores of it), stores it first, whoever holds the
-- claim: a fetch's answer is worth keeping, and one call does both (a request a host).
-- KEYS: the claim[, the hash]. Answers 1 when it let go, else 0. It touches no bucket's
-- queues: run without the common functions.
if KEYS[2] then redis.call('HSET', KEYS[2], ARGV[2], ARGV[3]) end
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
