-- LEASE: hands out up to `max` leases of one bucket, after returning its expired leases to
-- their queues. Tokens grow with the server's clock (see below), so that one is not handed
-- out twice when Redis comes back from an older snapshot.
-- KEYS: ready, hosts, counts, leases, due, replies0, replies1.
-- ARGV: tag, connections per host, delay (ms), max, lease time (ms), request id.
-- Answers: the bucket's view (five numbers), leases reaped, then groups of (token host entry
-- given-up). Sent again with its request id, it answers the leases the first run handed out
-- that are still held, and hands out none.
local ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5]
local replies = {KEYS[6], KEYS[7]}
local conns, delay = tonumber(ARGV[2]), tonumber(ARGV[3])
local max, ttl = tonumber(ARGV[4]), tonumber(ARGV[5])
local request = ARGV[6]
-- A second run: the first run's tokens are consecutive, kept as "first n reaped".
local kept = kept_reply(replies, request)
if kept then
  local first, n, again = string.match(kept, '^(%d+) (%d+) (%d+)$')
  local view = bucket_view(ready, counts)
  local answer = {view[1], view[2], view[3], view[4], view[5], tonumber(again)}
  if tonumber(n) > 0 then
    local tokens = {}
    for j = 0, tonumber(n) - 1 do tokens[#tokens + 1] = string.format('%d', tonumber(first) + j) end
    local values = redis.call('HMGET', leases, unpack(tokens))
    for j, token in ipairs(tokens) do
      local lease = values[j]
      if lease then
        local host, start, entry = parse_lease(lease)
        local gaveup = host_state(hosts, host)[GAVEUP]
        if start.gaveup then gaveup = 1 end
        answer[#answer + 1] = token
        answer[#answer + 1] = host
        answer[#answer + 1] = entry
        answer[#answer + 1] = gaveup
      end
    end
  end
  return answer
end
-- Leases past their deadline go back to the front of their host's queue.
local expired = redis.call('ZRANGEBYSCORE', due, '-inf', int(now), 'LIMIT', '0', '100')
local reaped = 0
if #expired > 0 then
  local held = redis.call('HMGET', leases, unpack(expired))
  for _, lease in ipairs(held) do
    if lease then
      local host, _, entry = parse_lease(lease)
      redis.call('LPUSH', queue_key(host), entry)
      local h = get_host(hosts, host)
      touch(host)
      h[ACTIVE] = math.max(0, h[ACTIVE] - 1)
      reaped = reaped + 1
    end
  end
  redis.call('HDEL', leases, unpack(expired))
  redis.call('ZREM', due, unpack(expired))
  -- Each reaped host's place in the ready set, before leasing from it.
  for host, h in pairs(ctx.hosts) do reschedule(ready, host, h, conns) end
  count('leased', -reaped)
  count('queued', reaped)
  count('reaped', reaped)
end
local out = {}
local held, deadlines = {}, {}
-- One deadline for the call's leases, as text once (Redis formats a number it is passed
-- anew each time).
local deadline = string.format('%d', now + ttl)
local seq = tonumber(redis.call('HGET', counts, 'seq') or 0)
local leased = 0
-- A lease of each ready host in turn, as the embedded frontier hands them out: taken many at
-- once from one host (up to its connection limit), they opened as many connections to it,
-- which the fetching process then kept idle for the host's next pages; with a thousand hosts
-- and two processes, tens of thousands of idle connections, more than the server could hold.
-- Each pass asks the ready set once; a pass that leases nothing has rescheduled every host
-- it asked out of the ready set (or to a later time), so the passes are bounded by `max`.
for _ = 1, max do
  if leased >= max then break end
  local turn = {}
  for _, host in ipairs(redis.call('ZRANGEBYSCORE', ready, '-inf', int(now), 'LIMIT', '0', int(max - leased))) do
    local h = get_host(hosts, host)
    turn[#turn + 1] = {host = host, h = h, d = delay_of(h, delay), open = true}
  end
  if #turn == 0 then break end
  local took = true
  while took and leased < max do
    took = false
    for _, t in ipairs(turn) do
      if leased >= max then break end
      local h = t.h
      if t.open and h[ACTIVE] < limit(h, conns) and (h[GAVEUP] == 1 or h[NEXT] <= now) then
        local entry = redis.call('LPOP', queue_key(t.host))
        if entry then
          -- Never below the server's clock in ms times 1024: a crawl rolled back to an older
          -- snapshot goes back in seq, not in time, so its tokens are not handed out again
          -- (and a completion names its URL besides: see the batch script).
          seq = math.max(seq + 1, now * 1024)
          local token = string.format('%d', seq)
          local gaveup = h[GAVEUP]
          local start = start_lease(h, t.d)
          held[#held + 1] = token
          held[#held + 1] = lease_value(t.host, start, entry)
          deadlines[#deadlines + 1] = deadline
          deadlines[#deadlines + 1] = token
          h[ACTIVE] = h[ACTIVE] + 1
          touch(t.host)
          out[#out + 1] = token
          out[#out + 1] = t.host
          out[#out + 1] = entry
          out[#out + 1] = gaveup
          leased = leased + 1
          took = true
        else
          t.open = false
        end
      else
        t.open = false
      end
    end
  end
  for _, t in ipairs(turn) do reschedule(ready, t.host, t.h, conns) end
end
if leased > 0 then
  redis.call('HSET', leases, unpack(held))
  -- Both sets kept skiplists (see SKIPLIST): a lease call adds many deadlines, and
  -- reschedules its hosts.
  redis.call('ZADD', due, 'inf', SKIPLIST, unpack(deadlines))
  redis.call('ZADD', ready, 'inf', SKIPLIST)
  redis.call('HSET', counts, 'seq', int(seq))
  count('leased', leased)
  count('queued', -leased)
end
if leased > 0 or reaped > 0 then write_back(hosts, counts) end
-- Leases handed out are what a second run must answer (not to strand them until their
-- deadline); a run that handed none out can run again.
if leased > 0 then
  keep_reply(replies, request, out[1] .. ' ' .. leased .. ' ' .. reaped)
end
local view = bucket_view(ready, counts)
local answer = {view[1], view[2], view[3], view[4], view[5], reaped}
for _, v in ipairs(out) do answer[#answer + 1] = v end
return answer
