-- CONTENT: the crawl's content-seen test: tests and sets bodies' digests in the seen-test of
-- one bucket, their fingerprints beside the URLs' (hashed from a text no URL can be, so the
-- two meet only at the seen-test's false-positive rate), many bodies a script.
-- KEYS: seen, counts, replies0, replies1. ARGV: tag, the seen-test's schedule, a request id
-- (empty when no reply is to be kept), then each body's probes.
-- Answers the seen-test's generations, then the places (from 1) of the bodies read before,
-- few or none: an answer's value costs Redis more than the Lua that makes it.
-- Sent again with its request id, it answers what the first run did.
local seen, counts = KEYS[1], KEYS[2]
local replies = {KEYS[3], KEYS[4]}
local request = ARGV[3]
if request ~= '' then
  local kept = kept_reply(replies, request)
  if kept then return cmsgpack.unpack(kept) end
end
local schedule = ARGV[2]
seen_state = load_seen(seen, schedule)
local answer = {0}
for i = 4, #ARGV do
  if not test_and_set(seen, schedule, ARGV[i]) then answer[#answer + 1] = i - 3 end
end
write_seen(seen, counts)
if seen_state.added > 0 then redis.call('HINCRBY', counts, 'bits', int(seen_state.added)) end
answer[1] = seen_state.count
-- Packed, not joined as text: a number made text is a `sprintf`.
if request ~= '' then keep_reply(replies, request, cmsgpack.pack(answer)) end
return answer
