-- BATCH: admits links and ends leases of one bucket, for many pages at once: each entry is a
-- lease to complete with its page's links of this bucket (or links alone), or a lease given
-- back, and the whole batch is one atomic step.
-- KEYS: seen, ready, hosts, counts, leases, due, replies0, replies1, domains.
-- ARGV: tag, connections per host, the seen-test's schedule, delay, back-off base, back-off
-- max, longest Retry-After, errors in a row to give up, time failing to give up, attempts
-- (all times in ms), request id, pages per host, hosts per domain, pages per domain (0: no
-- limit), then entries: token and its URL (`-` and `-` for links alone), the entry's head
-- (STEP_HEAD, packed: outcome, an OUTCOME_ code; Retry-After, -1 for none, or for
-- OUTCOME_GIVEN_BACK, a lease given back unfetched, how long its host is not leased again, 0
-- for as its delay says; the number of links: numbers that text would cost a strtod each),
-- and the links in pairs (see admit_links).
-- Answers seven numbers per entry: fate (a FATE_ code: FATE_LINKS_ALONE for links alone,
-- FATE_NOT_HELD when the lease is not held: it expired and went back to the crawl, or the
-- token is another URL's after a rollback; FATE_GIVEN_BACK), next attempt, URLs waiting on a host given up
-- now (-1 for none), new links, links refused by the host's page budget, by its domain's
-- budget of hosts, by its domain's page budget; then the bucket's view
-- (five numbers), then its seen-test's generations (-1 when it read none). Sent again with
-- its request id, it answers what the first run answered and changes nothing (kept only
-- when a completion asked for a retry: see below).
local seen, ready, hosts, counts, leases, due = KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6]
local replies = {KEYS[7], KEYS[8]}
local domains = KEYS[9]
local request = ARGV[11]
-- A second run: the first run's answer, its steps' part kept, the view read anew.
local kept = kept_reply(replies, request)
if kept then
  local answer = {}
  for v in string.gmatch(kept, '%S+') do answer[#answer + 1] = tonumber(v) end
  local generations = table.remove(answer)
  for _, v in ipairs(bucket_view(ready, counts)) do answer[#answer + 1] = v end
  answer[#answer + 1] = generations
  return answer
end
local conns = tonumber(ARGV[2])
local schedule = ARGV[3]
local delay = tonumber(ARGV[4])
local policy = {
  base = tonumber(ARGV[5]), bmax = tonumber(ARGV[6]), rmax = tonumber(ARGV[7]),
  max_errs = tonumber(ARGV[8]), give_up_after = tonumber(ARGV[9]),
  max_attempts = tonumber(ARGV[10]),
}

-- The leases of the batch, read at once; removed at once at the end.
local STEP_HEAD = '>Bi6I4'
local tokens = {}
do
  local i = 15
  while i + 2 <= #ARGV do
    if ARGV[i] ~= '-' then tokens[#tokens + 1] = ARGV[i] end
    i = i + 3 + 2 * struct.unpack('>I4', ARGV[i + 2], 8)
  end
end
local held = {}
if #tokens > 0 then
  local values = redis.call('HMGET', leases, unpack(tokens))
  for j, token in ipairs(tokens) do
    if values[j] then held[token] = values[j] end
  end
end
local done = {}

local function complete_one(token, leased_url, outcome, retry_after)
  local lease = held[token]
  if not lease then return FATE_NOT_HELD, 0, -1 end
  local host, start, entry = parse_lease(lease)
  local attempts, depth, url = string.match(entry, '^(%d+) (%d+) (.*)$')
  -- The entry's URL, before its referrer, if any.
  if string.match(url, '^%S+') ~= leased_url then return FATE_NOT_HELD, 0, -1 end
  held[token] = nil
  done[#done + 1] = token
  local h = get_host(hosts, host)
  touch(host)
  h[ACTIVE] = math.max(0, h[ACTIVE] - 1)
  if outcome == OUTCOME_GIVEN_BACK then
    -- Unfetched: first of its host's queue again, its attempts as they were. Given back for
    -- a time (its address's turn), it made no request: the delay its start took goes back
    -- (HostRecord::give_back_start), and the host waits that time.
    if retry_after > 0 then
      give_back_start(h, start, delay_of(h, delay))
      h[NEXT] = math.max(h[NEXT], now + retry_after)
    end
    redis.call('LPUSH', queue_key(host), entry)
    count('leased', -1)
    count('queued', 1)
    return FATE_GIVEN_BACK, 0, -1
  end
  attempts = tonumber(attempts) + 1
  local fate, gave_up = settle(h, start, outcome, retry_after, attempts, delay_of(h, delay), policy)
  local given_up = -1
  if gave_up then
    given_up = queue_len(host)
    count('given_up_hosts', 1)
  end
  count('leased', -1)
  if fate == FATE_RETRIED then
    push(host, attempts .. ' ' .. depth .. ' ' .. url)
    count('queued', 1)
  else
    count('done', 1)
  end
  return fate, attempts + 1, given_up
end

local answer = {}
-- Whether a completion's record waits for this answer (a retry asked for): only then must a
-- second run answer as the first did. The others' records are written before they are sent,
-- and a second run that finds them not held changes nothing.
local awaited = false
local budget = {
  pages = tonumber(ARGV[12]), domain_hosts = tonumber(ARGV[13]),
  domain_pages = tonumber(ARGV[14]),
}
local i = 15
while i + 2 <= #ARGV do
  local token, leased_url = ARGV[i], ARGV[i + 1]
  local outcome, retry_after, n = struct.unpack(STEP_HEAD, ARGV[i + 2])
  if token ~= '-' and (outcome == OUTCOME_FAILURE_TO_RETRY or outcome == OUTCOME_ERROR_ANSWER) then
    awaited = true
  end
  i = i + 3
  -- The page's links first: they are new whatever became of its lease.
  local new, by_host, by_domain_hosts, by_domain_pages =
    admit_links(seen, hosts, domains, schedule, i, n, budget)
  i = i + 2 * n
  local fate, next_attempt, given_up = FATE_LINKS_ALONE, 0, -1
  if token ~= '-' then
    fate, next_attempt, given_up = complete_one(token, leased_url, outcome, retry_after)
  end
  answer[#answer + 1] = fate
  answer[#answer + 1] = next_attempt
  answer[#answer + 1] = given_up
  answer[#answer + 1] = new
  answer[#answer + 1] = by_host
  answer[#answer + 1] = by_domain_hosts
  answer[#answer + 1] = by_domain_pages
end
if #done > 0 then
  redis.call('HDEL', leases, unpack(done))
  redis.call('ZREM', due, unpack(done))
end
finish(seen, ready, hosts, counts, conns)
local generations = seen_state and seen_state.count or -1
if awaited then
  local steps = {}
  for j, v in ipairs(answer) do steps[j] = string.format('%d', v) end
  steps[#steps + 1] = string.format('%d', generations)
  keep_reply(replies, request, table.concat(steps, ' '))
end
for _, v in ipairs(bucket_view(ready, counts)) do answer[#answer + 1] = v end
answer[#answer + 1] = generations
return answer
