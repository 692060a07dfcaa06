-- ADDRESS: which process holds each IP address's politeness (frontier/addresses.rs). One
-- process at a time holds an address, for a term, and runs frontier::AddressRecord's rule for
-- it in its memory: a turn costs Redis nothing, and the starts one process makes there are
-- spaced by its own clock. Redis only passes an address from one process to the next: when
-- another asks, the holder keeps it to the end of a term of at least `term` ms, starting its
-- last request a delay before that end, and gives it back when its requests there have
-- ended, saying when it started its last; the next holder starts a delay after that. Past
-- its term's end, a holder keeps the address while its requests there are out and it is
-- heard from (its keeper asks while they are), a request's hold at most: a process killed
-- while it holds an address loses it four terms after it was last heard from (its requests
-- died with it), and the next holder counts the term's end as the last start. Times go to
-- and from the processes as spans (ms from Redis's instant): two machines' clocks are never
-- compared.
-- KEYS: one hash an address (fields: by (the holder), until (its term's end), since (when
-- it took the address), seen (when the holder last asked), last (the last start given
-- back), prev (the last holder), final (the end of a term the holder was told is its last),
-- and `w:PROCESS` for each process that asked while another held it: when it last asked),
-- tagged with the addresses' group.
-- ARGV: tag, the process, the term (ms), the delay between two starts (ms), how long a
-- request may be out (ms), the number of addresses, then for each key its ask: `h` to hold
-- it (take it, or keep it), or, to give it back, the ms since the process's last start
-- there (`-1`: none).
-- Answers, three numbers for each `h`: 1, the term's ms, then the ms before its first start
-- may go (held: the process holds it); 2, the ms to its term's end, 0 (its last term:
-- another waits; give it back when its requests end); or 0, the ms before asking again, 0
-- (another holds it).
local me, term, delay = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local grace = tonumber(ARGV[5])
-- How long a holder past its term's end may go unheard from before it counts as gone.
local silent = 4 * term
-- How long at most a process waits before asking again for an address another holds.
local ask_again = math.max(1, math.floor(term / 4))
-- How soon a process asks again for an address whose holder is giving it back (its term
-- over at `till`, its requests still out): soon at first, then less often, half the time
-- it has waited, up to `ask_again` (a slow request would have it asked every few ms).
local function drain_retry(till)
  local soon = math.max(delay, 10)
  return math.max(1, math.min(ask_again, math.max(soon, math.floor((now - till) / 2))))
end
local now_text = int(now)
-- An ask older than this is of a process that no longer waits.
local fresh = now - 2 * term
-- A key outlives a term's end by a delay and a waiter's ask by its freshness.
local ttl = int(3 * term + delay + grace)
local answers = {}
for k = 1, tonumber(ARGV[6]) do
  local key, ask = KEYS[k], ARGV[6 + k]
  local f = redis.call('HGETALL', key)
  local by, till, since, seen, last, prev, final = nil, 0, 0, nil, nil, nil, nil
  -- Another process asked lately; asks too old to count.
  local waiting, stale = false, {}
  for i = 1, #f, 2 do
    local field, value = f[i], f[i + 1]
    if field == 'by' then by = value
    elseif field == 'until' then till = tonumber(value)
    elseif field == 'since' then since = tonumber(value)
    elseif field == 'seen' then seen = tonumber(value)
    elseif field == 'last' then last = tonumber(value)
    elseif field == 'prev' then prev = value
    elseif field == 'final' then final = tonumber(value)
    elseif tonumber(value) <= fresh then stale[#stale + 1] = field
    elseif field ~= 'w:' .. me then waiting = true
    end
  end
  -- Past its term, a holder's requests may still be out: it gives the address back when
  -- they have ended, or loses it when no longer heard from, or a hold later.
  local held = by and (now < till or (now < till + grace and now < (seen or since) + silent))
  -- The holder asking is heard from.
  if by == me and ask == 'h' then redis.call('HSET', key, 'seen', now_text) end
  if ask == 'h' then
    if held and by ~= me then
      redis.call('HSET', key, 'w:' .. me, now_text)
      redis.call('PEXPIRE', key, ttl)
      answers[#answers + 1] = 0
      -- Asked again at its term's end, or sooner (a holder left idle gives it back early)
      -- but when that term is the holder's last: it gives the address back by its end.
      local wait = drain_retry(till)
      if till > now and final == till then wait = till - now
      elseif till > now then wait = math.min(till - now, ask_again)
      end
      answers[#answers + 1] = wait
      answers[#answers + 1] = 0
    elseif held and waiting and now - since >= term then
      -- Its last term: marked by its end (a term renewed since has another).
      if final ~= till then redis.call('HSET', key, 'final', int(till)) end
      answers[#answers + 1] = 2
      answers[#answers + 1] = till - now
      answers[#answers + 1] = 0
    elseif held then
      -- Kept another term: renewed by its keeper while in use. Its first start as when it
      -- took the address: a take sent again after its answer was lost is answered so.
      redis.call('HSET', key, 'until', int(now + term))
      redis.call('PEXPIRE', key, ttl)
      answers[#answers + 1] = 1
      answers[#answers + 1] = term
      answers[#answers + 1] = last and math.max(0, last + delay - now) or 0
    elseif waiting and prev == me then
      -- Free, given back by this process while another waited: that one's turn. (Should it
      -- never come, its ask goes stale, and this process takes the address back then.)
      redis.call('HSET', key, 'w:' .. me, now_text)
      redis.call('PEXPIRE', key, ttl)
      answers[#answers + 1] = 0
      answers[#answers + 1] = drain_retry(till)
      answers[#answers + 1] = 0
    else
      -- A holder that never gave it back started its last request before its term's end.
      if by then last = math.max(last or 0, till) end
      local first = 0
      if last then first = math.max(0, last + delay - now) end
      stale[#stale + 1] = 'w:' .. me
      redis.call('HDEL', key, unpack(stale))
      local fields = {'by', me, 'until', int(now + term), 'since', now_text, 'seen', now_text,
        'prev', me}
      if last then
        fields[#fields + 1] = 'last'
        fields[#fields + 1] = int(last)
      end
      redis.call('HSET', key, unpack(fields))
      redis.call('PEXPIRE', key, ttl)
      answers[#answers + 1] = 1
      answers[#answers + 1] = term
      answers[#answers + 1] = first
    end
  elseif by == me then
    -- Given back (a holder whose term ended and another took it gives back nothing).
    local ago = tonumber(ask)
    redis.call('HDEL', key, 'by')
    if ago >= 0 then
      redis.call('HSET', key, 'last', int(math.max(last or 0, now - ago)))
    end
    redis.call('PEXPIRE', key, ttl)
  end
end
return answers
