#!/usr/bin/env python3
"""What a page would cost Redis if the process owning a bucket kept its hosts' states and
its seen-test in memory, and Redis only the crawl's durable log: the floor under the design
of DESIGN.md's bucket leases, measured before building it (issue 38's aim is 25 µs a page).

A simulated crawl of HOSTS x PAGES pages in 16 buckets, owned by this one process: each page
completed adds its host's next LINKS new URLs, and each flush of a bucket is one function
call, fenced by the owner's epoch, of plain commands with many arguments: the completed
URLs out of the in-flight hash, the new URLs' fingerprints into the seen-test's sets (and
each page's body into the content sets), the new URLs onto their hosts' queues, the leased
ones off them and into the in-flight hash, the touched hosts' states written back. What the
process decides (politeness, budgets, which URL is new) it decides in memory, as the
embedded frontier does; Redis holds what a crash or another process needs.

    benches/redis_floor.py [--hosts 100] [--pages 200] [--links 2] [--per-call 16] [--callgrind]

Prints Redis CPU a page (`INFO cpu`, user and system, before and after) and requests a page;
with --callgrind, the instructions redis-server executed a page instead, to set beside
`benches/redis_replay.py CAPTURE --callgrind` of a real crawl (same machine-independent
unit). Needs redis-server and the `redis` Python package; valgrind for --callgrind.
"""
import argparse
import zlib

from redis_lab import Server

BUCKETS = 16
SETS = 64

LIBRARY = r"""#!lua name=floor
-- KEYS: the bucket's owner, in-flight hash, counts, host states. ARGV: epoch, tag, then
-- sections, each a count first: done URLs; sets (set, n, members); hosts (host, n pushed,
-- entries, n leased); leases (url, entry); host states (host, state).
redis.register_function('apply', function(keys, args)
  if redis.call('GET', keys[1]) ~= args[1] then return redis.error_reply('FENCED') end
  local tag, i = args[2], 3
  local n = tonumber(args[i]); i = i + 1
  if n > 0 then redis.call('HDEL', keys[2], unpack(args, i, i + n - 1)); i = i + n end
  local s = tonumber(args[i]); i = i + 1
  for _ = 1, s do
    local set, m = args[i], tonumber(args[i + 1]); i = i + 2
    redis.call('SADD', tag .. ':f:' .. set, unpack(args, i, i + m - 1)); i = i + m
  end
  local q = tonumber(args[i]); i = i + 1
  for _ = 1, q do
    local key, m = tag .. ':q:' .. args[i], tonumber(args[i + 1]); i = i + 2
    if m > 0 then redis.call('RPUSH', key, unpack(args, i, i + m - 1)); i = i + m end
    local k = tonumber(args[i]); i = i + 1
    if k > 0 then redis.call('LPOP', key, k) end
  end
  local f = tonumber(args[i]); i = i + 1
  if f > 0 then redis.call('HSET', keys[2], unpack(args, i, i + 2 * f - 1)); i = i + 2 * f end
  local h = tonumber(args[i]); i = i + 1
  if h > 0 then redis.call('HSET', keys[4], unpack(args, i, i + 2 * h - 1)) end
  redis.call('HINCRBY', keys[3], 'done', n)
  return n
end)
"""


def fingerprint(text):
    return zlib.crc32(text.encode())


def url(host, page):
    return 'http://h%d.example:40000/p/%d' % (host, page)


class Bucket:
    def __init__(self, b, hosts):
        self.tag = '{floor:%d}' % b
        self.queues = {h: [] for h in hosts}
        self.next_page = {h: 1 for h in hosts}
        self.inflight = []
        for h in hosts:
            self.queues[h].append((url(h, 0), '0 0 %s' % url(h, 0)))

    def flush(self, per_call, links, pages, calls):
        """One call's arguments: completes what is in flight, leases up to per_call."""
        done = [u for u, _ in self.inflight]
        sets, pushes, touched = {}, {h: [] for h in self.queues}, set()
        for u, _ in self.inflight:
            host = int(u.split('.')[0][8:])
            touched.add(host)
            body = fingerprint('body ' + u)
            sets.setdefault('c%d' % (body % SETS), []).append(body)
            for _ in range(links):
                p = self.next_page[host]
                if p >= pages:
                    break
                self.next_page[host] = p + 1
                new = url(host, p)
                fp = fingerprint(new)
                sets.setdefault(str(fp % SETS), []).append(fp)
                pushes[host].append('0 1 %s %s' % (new, u))
        for host, entries in pushes.items():
            self.queues[host].extend((e.split(' ')[2], e) for e in entries)
        leased, pops = [], {}
        while len(leased) < per_call:
            took = False
            for host, q in self.queues.items():
                if q and len(leased) < per_call:
                    leased.append(q.pop(0))
                    pops[host] = pops.get(host, 0) + 1
                    touched.add(host)
                    took = True
            if not took:
                break
        self.inflight = leased
        args = ['1', self.tag, len(done)] + done + [len(sets)]
        for name, members in sets.items():
            args += [name, len(members)] + members
        hosts = [h for h in self.queues if pushes[h] or pops.get(h)]
        args.append(len(hosts))
        for h in hosts:
            args += ['h%d' % h, len(pushes[h])] + pushes[h] + [pops.get(h, 0)]
        args.append(len(leased))
        for u, e in leased:
            args += [u, e]
        args.append(len(touched))
        for h in touched:
            args += ['h%d' % h, b'\xff\x09' + bytes(43)]
        keys = ['%s:%s' % (self.tag, k) for k in ('owner', 'inflight', 'counts', 'hosts')]
        calls.append((keys, args))
        return len(done)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--hosts', type=int, default=100)
    parser.add_argument('--pages', type=int, default=200)
    parser.add_argument('--links', type=int, default=2)
    parser.add_argument('--per-call', type=int, default=16)
    parser.add_argument('--callgrind', action='store_true')
    opts = parser.parse_args()

    # The crawl's calls, made first: the simulation's own time is not Redis's.
    buckets = [Bucket(b, [h for h in range(opts.hosts) if h % BUCKETS == b])
               for b in range(BUCKETS)]
    rounds, done = [], 0
    while True:
        calls = []
        n = sum(b.flush(opts.per_call, opts.links, opts.pages, calls) for b in buckets)
        done += n
        if not any(b.inflight for b in buckets) and n == 0 and rounds:
            break
        rounds.append(calls)

    server = Server(opts.callgrind)
    con = server.con
    try:
        con.execute_command('FUNCTION', 'LOAD', 'REPLACE', LIBRARY)
        for b in buckets:
            con.set('%s:owner' % b.tag, '1')

        def cpu():
            info = con.info('cpu')
            return info['used_cpu_user'] + info['used_cpu_sys']

        before, requests = cpu(), 0
        for calls in rounds:
            pipe = con.pipeline(transaction=False)
            for keys, args in calls:
                pipe.execute_command('FCALL', 'apply', len(keys), *keys, *args)
            pipe.execute()
            requests += len(calls)
        spent = cpu() - before
        counted = sum(int(con.hget('%s:counts' % b.tag, 'done') or 0) for b in buckets)
        print('| pages | calls | requests a page | Redis CPU a page |')
        print('|---|---|---|---|')
        print('| %d | %d | %.3f | %.1f µs |' % (counted, requests, requests / counted,
                                               spent / counted * 1e6))
    finally:
        server.stop()
    if opts.callgrind:
        total = server.instructions()
        print('instructions redis-server executed: %d (%d a page)' % (total, total / counted))

if __name__ == '__main__':
    main()
