-- CONTENT: the crawl's content-seen test: tests and sets bodies' digests in the seen-test of
-- one bucket, their fingerprints beside the URLs' (hashed from a text no URL can be, so the
-- two meet only at the seen-test's false-positive rate), many bodies a script.
-- KEYS: seen, counts, replies0, replies1. ARGV: tag, the seen-test's schedule, a request id
-- (empty when no reply is to be kept), then each body's probes.
-- Answers 1 for each body new and 0 for each read before, then the seen-test's generations.
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
local answer = {}
for i = 4, #ARGV do
  if test_and_set(seen, schedule, ARGV[i]) then
    answer[#answer + 1] = 1
  else
    answer[#answer + 1] = 0
  end
end
write_seen(seen, counts)
if seen_state.added > 0 then redis.call('HINCRBY', counts, 'bits', int(seen_state.added)) end
answer[#answer + 1] = seen_state.count
-- Packed, not joined as text: a number made text is a `sprintf`, the most of a body's
-- cost after its seen-test.
if request ~= '' then keep_reply(replies, request, cmsgpack.pack(answer)) end
return answer
