-- OWN: takes a bucket for a process, renews its hold, or lets it go. A bucket has one owner
-- at a time, which schedules its hosts in memory (frontier/owned.rs) and writes what it
-- decided with its batches, each fenced by the owner's "id epoch" (see batch). A new owner
-- takes the bucket over: the URLs its last owner had in flight go back to the front of
-- their queues, and its epoch is new, so that the last owner's batches are refused.
-- KEYS: owner, counts, leases, work, inbox.
-- ARGV: tag, the process's id, the epoch it holds the bucket at ('0': none), how long the
-- hold lasts unless renewed (ms), 'take' or 'release', and optionally the "id epoch" of a
-- holder known gone (not heard from: killed), whose hold is taken over at once.
-- Answers, to 'take': 1 and the epoch when renewed (a hold that lapsed with no owner
-- since is renewed too); 2, the new epoch, the server's clock, the URLs returned and the
-- hosts they are of when taken over; 0 and the holder's "id epoch" when another process
-- holds it. To 'release': 1 when it was this process's at that epoch, and is no more.
local owner_key, counts, leases, work, inbox = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local id, epoch, ttl, mode = ARGV[2], ARGV[3], ARGV[4], ARGV[5]
local held = redis.call('GET', owner_key)
local mine = id .. ' ' .. epoch
if mode == 'release' then
  if held == mine then
    redis.call('DEL', owner_key)
    -- The epoch is no one's now: a renewal sent before the release cannot hold it again.
    redis.call('HINCRBY', counts, 'epoch', 1)
    return {1}
  end
  return {0}
end
-- Renewed: its hold, or one that lapsed with no owner since (the bucket's epoch is still
-- its own), as after a stall longer than the hold; its leases out stay valid. A renewal
-- never takes a bucket.
if epoch ~= '0' then
  if holds(held, mine, counts) then
    redis.call('SET', owner_key, mine, 'PX', ttl)
    return {1, epoch}
  end
  return {0, held or ''}
end
-- Held by another process: by this one too at another epoch (a process that lost track of
-- its hold, as after Redis went back) takes it over anew.
if held and string.sub(held, 1, #id + 1) ~= id .. ' ' and held ~= ARGV[6] then
  return {0, held}
end
local new = math.max(tonumber(redis.call('HGET', counts, 'epoch') or 0) + 1, now)
local flat = redis.call('HGETALL', leases)
local flight = {}
for j = 1, #flat, 2 do flight[#flight + 1] = {tonumber(flat[j]), flat[j + 1]} end
-- Back to the front of their queues in the order they were taken: the last first.
table.sort(flight, function(a, b) return a[1] > b[1] end)
local hosts = {}
local reaped = {}
for _, f in ipairs(flight) do
  local sp = string.find(f[2], ' ', 1, true)
  local host = string.sub(f[2], 1, sp - 1)
  redis.call('LPUSH', queue_key(host), string.sub(f[2], sp + 1))
  if not hosts[host] then
    hosts[host] = true
    reaped[#reaped + 1] = host
    redis.call('SADD', work, host)
  end
end
redis.call('DEL', leases, inbox)
if #flight > 0 then
  count('leased', -#flight)
  count('queued', #flight)
  count('reaped', #flight)
end
redis.call('HSET', counts, 'epoch', string.format('%d', new))
write_counts(counts)
redis.call('SET', owner_key, id .. ' ' .. string.format('%d', new), 'PX', ttl)
local answer = {2, string.format('%d', new), now, #flight}
for _, host in ipairs(reaped) do answer[#answer + 1] = host end
return answer
