-- BATCH: a bucket's one step for many pages: admits links to its hosts from any process,
-- and, sent by the bucket's owner, writes what its owner decided in memory (see
-- frontier/owned.rs): leases ended (done, or retried at the back of their host's queue),
-- URLs given back untaken (to the front of their queues), host states, and URLs taken from
-- the queues of the hosts the owner is about to lease, each in flight under a new token.
-- It answers the hosts that other processes' links gave work, with their stored states.
-- KEYS: seen, counts, leases, hosts, work, inbox, owner, pages, domains, replies0, replies1,
-- links (other processes' links to the bucket's hosts, as queue entries, which its owner
-- reads with LRANGE and sends back in a step of its own: see frontier/links.rs).
-- ARGV: tag, the seen-test's schedule, request id, pages per host, hosts per domain, pages
-- per domain (0: no limit), the owner's "id epoch" ('' from a process that does not own
-- the bucket), the number of link steps, then each step: its number of links and the links
-- in pairs (see admit_links); then, from the owner: the leases ended done whose host's
-- queue is not asked (their number, then token and lease each: the lease as the leases
-- hash holds it, its host, a space and its entry as taken, for the lease under the token
-- must be this one), the other leases ended (their number, then each: token, 'D' done or
-- 'r' retried, 'R' retried and its host's queue counted, the lease, and, retried, the
-- retry's entry), the tokens given back (their number, then each), host states (their
-- number, then host and state each), hosts to take URLs of (their number, then host and
-- how many each), hosts new to the crawl, hosts given up, and the links read from the
-- `links` list for this batch with the bucket's count of links read before (its
-- `links_read`): they are trimmed if that count is still this one.
-- Answers: the bucket's view (two numbers: see bucket_view), its seen-test's generations
-- (-1 when it read none), 1 when the owner's part was written (0: fenced, the bucket is
-- another's; -1: none), each step's new links, or, when a budget refused some, -1 minus
-- them and three numbers (links refused by the host's page budget, by its domain's budget
-- of hosts, by its domain's page budget); then, when the owner's part was written: the
-- number of the leases ended done, unasked, that were not in flight, and their places
-- among those (from 1); for each other lease ended 0 if it was not in flight, else its
-- host's queued URLs plus 2 (1: not asked); when hosts were asked, the first token taken
-- (0: none; the next URL's is the next number), then for each host the number taken,
-- their entries and the URLs left; the number of hosts given work, then each host and its
-- stored state ('' for none); the links waiting in `links`. Sent again with its request
-- id, it answers what the first run did and changes nothing.
local seen, counts, leases, hosts = KEYS[1], KEYS[2], KEYS[3], KEYS[4]
local work, inbox, owner_key, pages, domains = KEYS[5], KEYS[6], KEYS[7], KEYS[8], KEYS[9]
local replies = {KEYS[10], KEYS[11]}
local links = KEYS[12]
local request = ARGV[3]
-- A URL taken is kept in the reply as TAKEN, read back from the leases when the reply is:
-- the reply is kept minutes, the URL is in the leases already. Its token is the first
-- token taken (kept last) plus the URLs taken before it: a batch's tokens follow one another.
local TAKEN = '\0'
-- Only an owner's batch keeps its reply (another's writes links, which a second run finds
-- seen): no other looks for one.
local kept = ARGV[7] ~= '' and kept_reply(replies, request)
if kept then
  local answer = cmsgpack.unpack(kept)
  local token = table.remove(answer)
  answer[1], answer[2] = bucket_view(counts)
  for j = 3, #answer do
    if answer[j] == TAKEN then
      local lease = redis.call('HGET', leases, int(token)) or ''
      token = token + 1
      answer[j] = string.sub(lease, (string.find(lease, ' ', 1, true) or 0) + 1)
    end
  end
  return answer
end
local schedule = ARGV[2]
local budget = {
  pages = tonumber(ARGV[4]), domain_hosts = tonumber(ARGV[5]), domain_pages = tonumber(ARGV[6]),
}
local owner = ARGV[7]
local status = -1
local taken = nil
-- The first token taken (0: none).
local first = 0
if owner ~= '' then
  -- A hold that lapsed with no owner since is still its owner's (its next beat renews it):
  -- refused, its leases out would all be fetched again.
  if holds(redis.call('GET', owner_key), owner, counts) then status = 1 else status = 0 end
end
-- The answer, the bucket's view first (filled in last), then the seen-test's generations
-- (once the steps read it), and its length, counted as it grows: `#out` is a search in Lua
-- 5.1, and the answer grows by a value or two a page.
local out = {0, 0, -1, status}
local n = 4
local i = 9
for _ = 1, tonumber(ARGV[8]) do
  local sent = tonumber(ARGV[i])
  i = i + 1
  local new, by_host, by_domain_hosts, by_domain_pages =
    admit_links(seen, pages, domains, schedule, i, sent, budget)
  i = i + 2 * sent
  -- One number for a step no budget refused (nearly all): each answer's value costs
  -- Redis more than the Lua that makes it (the reply, the kept copy).
  if by_host + by_domain_hosts + by_domain_pages == 0 then
    n = n + 1
    out[n] = new
  else
    out[n + 1] = -1 - new
    out[n + 2] = by_host
    out[n + 3] = by_domain_hosts
    out[n + 4] = by_domain_pages
    n = n + 4
  end
end
finish(seen, counts, work, inbox, pages)
if seen_state then out[3] = seen_state.count end
if status == 1 then
  -- Leases ended: first those done whose host's queue is not asked (nearly all), token and
  -- lease each, answered by the number of them not in flight and their places; then the
  -- others, each answered.
  local plain = tonumber(ARGV[i])
  local p0 = i + 1
  i = p0 + 2 * plain
  local others = tonumber(ARGV[i])
  i = i + 1
  local tokens = {}
  for j = 1, plain do tokens[j] = ARGV[p0 + 2 * j - 2] end
  local at = i
  for j = 1, others do
    tokens[plain + j] = ARGV[at]
    local mark = ARGV[at + 1]
    if mark == 'r' or mark == 'R' then at = at + 4 else at = at + 3 end
  end
  n = n + 1
  local lost_at = n
  out[lost_at] = 0
  if plain + others > 0 then
    local held = redis.call('HMGET', leases, unpack(tokens))
    local gone, g = {}, 0
    local lost = 0
    for j = 1, plain do
      -- This lease, or not: a token another URL holds after Redis went back. The same
      -- text, compared whole (Lua's strings are interned: no parsing, no copy).
      if held[j] == ARGV[p0 + 2 * j - 1] then
        g = g + 1
        gone[g] = tokens[j]
      else
        lost = lost + 1
        n = n + 1
        out[n] = j
      end
    end
    out[lost_at] = lost
    local done = plain - lost
    for j = 1, others do
      local mark, text = ARGV[i + 1], ARGV[i + 2]
      local retried = mark == 'r' or mark == 'R'
      local entry = retried and ARGV[i + 3]
      if retried then i = i + 4 else i = i + 3 end
      n = n + 1
      if held[plain + j] ~= text then
        out[n] = 0
      else
        g = g + 1
        gone[g] = tokens[plain + j]
        local host = string.sub(text, 1, string.find(text, ' ', 1, true) - 1)
        if retried then
          append(work, inbox, host, {entry}, true)
          count('queued', 1)
        else
          done = done + 1
        end
        if mark == 'D' or mark == 'R' then
          out[n] = redis.call('LLEN', queue_key(host)) + 2
        else
          out[n] = 1
        end
      end
    end
    if done > 0 then count('done', done) end
    if g > 0 then
      redis.call('HDEL', leases, unpack(gone))
      count('leased', -g)
    end
  end
  -- URLs given back untaken: first of their queues again, in the order they were taken.
  local back = tonumber(ARGV[i])
  i = i + 1
  if back > 0 then
    local tokens = {unpack(ARGV, i, i + back - 1)}
    i = i + back
    local held = redis.call('HMGET', leases, unpack(tokens))
    local gone = {}
    for j = #tokens, 1, -1 do
      local lease = held[j]
      if lease then
        local sp = string.find(lease, ' ', 1, true)
        local host = string.sub(lease, 1, sp - 1)
        redis.call('LPUSH', queue_key(host), string.sub(lease, sp + 1))
        redis.call('SADD', work, host)
        gone[#gone + 1] = tokens[j]
      end
    end
    if #gone > 0 then
      redis.call('HDEL', leases, unpack(gone))
      count('leased', -#gone)
      count('queued', #gone)
    end
  end
  -- Host states.
  local states = tonumber(ARGV[i])
  i = i + 1
  if states > 0 then
    redis.call('HSET', hosts, unpack(ARGV, i, i + 2 * states - 1))
    i = i + 2 * states
  end
  -- URLs taken, each in flight under a token that grows with the server's clock (in ms
  -- times 1024): a crawl rolled back to an older snapshot goes back in seq, not in time, so
  -- its tokens are not handed out again.
  local wanted = tonumber(ARGV[i])
  i = i + 1
  if wanted > 0 then
    local seq = tonumber(redis.call('HGET', counts, 'seq') or 0)
    local clock = now * 1024
    local flight, f = {}, 0
    -- The places of the URLs taken in the answer.
    taken = {}
    local t = 0
    local took = 0
    -- The first token, once known: the others follow it, one a URL, and are not answered.
    n = n + 1
    local first_at = n
    out[first_at] = 0
    for _ = 1, wanted do
      local host, k = ARGV[i], tonumber(ARGV[i + 1])
      i = i + 2
      local q = queue_key(host)
      local entries = redis.call('LPOP', q, k) or {}
      local got = #entries
      n = n + 1
      out[n] = got
      for j = 1, got do
        local entry = entries[j]
        seq = seq + 1
        if seq < clock then seq = clock end
        if first == 0 then first = seq end
        flight[f + 1] = string.format('%d', seq)
        flight[f + 2] = host .. ' ' .. entry
        f = f + 2
        n = n + 1
        out[n] = entry
        t = t + 1
        taken[t] = n
      end
      took = took + got
      -- Fewer than asked: the queue is empty, which a broad crawl's short queues mostly
      -- are (a command a host taken saved).
      local left = 0
      if got == k then left = redis.call('LLEN', q) end
      if left == 0 then redis.call('SREM', work, host) end
      n = n + 1
      out[n] = left
    end
    out[first_at] = first
    if took > 0 then
      redis.call('HSET', leases, unpack(flight))
      redis.call('HSET', counts, 'seq', string.format('%d', seq))
      count('queued', -took)
      count('leased', took)
    end
  end
  count('hosts', tonumber(ARGV[i]))
  count('given_up_hosts', tonumber(ARGV[i + 1]))
  -- Links read from the bucket's list, admitted above: trimmed unless they may not be the
  -- list's first any more (another owner trimmed it since, or Redis went back to a state
  -- before or after other trims), when they stay, to be read again (seen then).
  local read = tonumber(ARGV[i + 2])
  if read > 0 and tonumber(redis.call('HGET', counts, 'links_read') or 0) == tonumber(ARGV[i + 3]) then
    redis.call('LTRIM', links, int(read), '-1')
    count('links_read', read)
  end
  -- Hosts given work by other processes' links (this one's too: its links go the same
  -- way), with their states.
  local given = redis.call('LRANGE', inbox, '0', '-1')
  local listed = {}
  local names = {}
  for _, host in ipairs(given) do
    if not listed[host] then
      listed[host] = true
      names[#names + 1] = host
    end
  end
  n = n + 1
  out[n] = #names
  if #names > 0 then
    redis.call('DEL', inbox)
    local stored = redis.call('HMGET', hosts, unpack(names))
    for j, host in ipairs(names) do
      n = n + 1
      out[n] = host
      n = n + 1
      out[n] = stored[j] or ''
    end
  end
  n = n + 1
  out[n] = redis.call('LLEN', links)
end
out[1], out[2] = bucket_view(counts, write_counts(counts))
if status == 1 then
  -- Kept with each URL taken as TAKEN and the first token last, put back after.
  local entries = {}
  if taken then
    for x, j in ipairs(taken) do
      entries[x] = out[j]
      out[j] = TAKEN
    end
  end
  out[n + 1] = first
  keep_reply(replies, request, cmsgpack.pack(out))
  out[n + 1] = nil
  if taken then
    for x, j in ipairs(taken) do out[j] = entries[x] end
  end
end
return out
