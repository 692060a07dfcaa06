#!/usr/bin/env python3
"""Replays the commands a shared crawl sent to Redis, as `MONITOR=FILE benches/shared.sh`
recorded them, against a fresh redis-server, and prints what Redis spent on them. A
cluster's masters are recorded a file each (`CLUSTER=3`): replayed one by one, their sum is
the cluster's work, to set beside one server's on the same crawl.

A crawl's Redis CPU a page moves by 5 to 10% from run to run on these machines (the site,
the crawlers and Redis share two cores); a replay sends the same commands in the same order
every time, with each call's clock (`TIME`) as it was in the crawl, so two versions of the
scripts meet the same work, and the state they leave can be compared. With `--callgrind`
the server runs under valgrind and the figure is the instructions it executed: the same to
a few parts in ten thousand from run to run, where timings on a shared machine are not.

    benches/redis_replay.py CAPTURE [--library OTHER_CAPTURE | --code FILE] [--callgrind]
        [--state FILE] [--once] [--merge] [--cpu [--alone]]

--library: the function library another capture loaded (a crawl by another build), in place
of CAPTURE's own: the same calls, run by other scripts. --code: the library's code from a
file (CAPTURE's, say, with a script edited), to try a change to the scripts that keeps their
arguments without building a crawler. --state: writes the keys' values
after the replay (host states decoded), to compare two replays with `cmp`. --once: each
link sent to its bucket once, the bucket's later sends of it (another process's copy, which
the seen-test finds seen) dropped from the batches before the replay: what Redis would do if
the bucket's owner knew the bucket's seen-test (the queues are unchanged, so the replay's
tokens and leases stay the crawl's). --alone: each command sent on its own, its answer
awaited before the next (else 500 go in a pipeline): what Redis's event loop costs a
request, its reads and writes, which a crawl's Redis pays on every request it wakes up for.
--cpu: Redis's CPU (user and system, `INFO cpu`) a URL done, in place of the table of each
function's time (whose log costs CPU of its own): to set beside a live crawl's, on a
machine whose cores the crawlers and the site share. KEEP=1 keeps the
callgrind profile (for callgrind_annotate; a redis-server built with symbols first in PATH
names its functions).

--merge: the batch scripts and content tests one client sent in one write (next to each
other in the capture) replayed as one call of a function that runs each in turn: what
Redis would spend if a process sent one script a tick for all its buckets (on one server:
a cluster's keys of several buckets cannot meet in one script).

--batches: no replay: what the capture's batch scripts carried (their steps of links, the
leases they ended, the host states, takes and links read of their owners' logs), a page
done and in all, and how many carried each mix of them. --dump-library FILE: no replay:
the capture's function library, written to FILE, to edit (a `return` inserted at a step of
a script, say: what the script costs up to there) and replay with --code.

Needs redis-server, and the `redis` Python package; valgrind for --callgrind.
"""
import argparse
import re
import sys

from redis_lab import Server

ESCAPES = {'n': b'\n', 'r': b'\r', 't': b'\t', 'a': b'\a', 'b': b'\b', '"': b'"', '\\': b'\\'}
LINE = re.compile(r'^(\d+)\.(\d+) \[(\d+) ([^\]]+)\] (.*)$')
# Commands of the crawlers' own that change nothing the scripts read.
SKIPPED = {b'INFO', b'MONITOR', b'CLIENT', b'CONFIG', b'PING', b'HELLO'}
# The fields of a host's state, their widths in bytes (scripts.rs, HostField::width).
HOST_WIDTHS = [4, 6, 6, 4, 6, 1, 4, 6, 6]


def arguments(text):
    """A MONITOR line's quoted arguments, as bytes."""
    out, i = [], 0
    while i < len(text):
        if text[i] != '"':
            i += 1
            continue
        i += 1
        buf = bytearray()
        while text[i] != '"':
            if text[i] == '\\':
                if text[i + 1] == 'x':
                    buf.append(int(text[i + 2:i + 4], 16))
                    i += 4
                else:
                    buf += ESCAPES[text[i + 1]]
                    i += 2
            else:
                buf += text[i].encode('latin-1')
                i += 1
        out.append(bytes(buf))
        i += 1
    return out


def read_capture(path, with_clients=False):
    """The clients' commands in order, each with the ms its script read from `TIME` (the
    timestamp of the `TIME` the script ran, or its own for a command that ran none), and
    with `with_clients` the client that sent it."""
    commands = []
    with open(path, encoding='latin-1') as f:
        for line in f:
            m = LINE.match(line.rstrip('\n'))
            if not m:
                continue
            ms = int(m.group(1)) * 1000 + int(m.group(2)) // 1000
            if m.group(4) == 'lua':
                if m.group(5) == '"TIME"' and commands and commands[-1][2]:
                    commands[-1] = (ms, commands[-1][1], False, commands[-1][3])
                continue
            args = arguments(m.group(5))
            if args and args[0].upper() not in SKIPPED:
                commands.append((ms, args, True, m.group(4)))
    if with_clients:
        return [(ms, args, client) for ms, args, _, client in commands]
    return [(ms, args) for ms, args, _, _ in commands]


def sent_once(commands):
    """The commands with each batch's links that its bucket was sent before dropped (see
    --once): a batch's ARGV is the tag, 7 fields, the number of steps, then each step's
    number of links and its links in pairs (probes, text), then the owner's log."""
    out, sent, dropped = [], {}, 0
    for ms, args in commands:
        if args[0].upper() != b'FCALL' or not args[1].endswith(b'_batch'):
            out.append((ms, args))
            continue
        keys = int(args[2])
        argv = args[3 + keys:]
        seen = sent.setdefault(argv[0], set())
        kept, i = list(argv[:8]), 8
        for _ in range(int(argv[7])):
            n = int(argv[i])
            pairs = [(argv[i + 1 + 2 * j], argv[i + 2 + 2 * j]) for j in range(n)]
            i += 1 + 2 * n
            new = []
            for probes, text in pairs:
                # Its 7th byte is how many generations the sender had copies of: not the URL.
                url = probes[:6] + probes[7:]
                if url in seen:
                    dropped += 1
                else:
                    seen.add(url)
                    new.append((probes, text))
            kept.append(str(len(new)).encode())
            for pair in new:
                kept.extend(pair)
        out.append((ms, list(args[:3 + keys]) + kept + list(argv[i:])))
    print('links sent again, dropped: %d' % dropped)
    return out


MERGED = ('batch', 'content')


def merged(commands):
    """The commands with each run of batch scripts and content tests one client sent next
    to each other made one call of `many` (see --merge and merging_library): its keys all
    theirs, its arguments how many calls, then each call's function, its numbers of keys
    and arguments, its clock (the ms it read, which its tokens grow with: the capture's
    later calls end leases by them), and its arguments."""
    out, run, runs, calls = [], [], 0, 0

    def close():
        nonlocal runs, calls
        if len(run) == 1:
            out.append((run[0][0], run[0][1]))
        elif run:
            keys, argv = [], [str(len(run)).encode()]
            for ms, args, _ in run:
                n = int(args[2])
                fn = args[1].decode().rsplit('_', 1)[-1]
                argv += [fn.encode(), str(n).encode(), str(len(args) - 3 - n).encode(),
                         str(ms).encode()]
                keys += args[3:3 + n]
                argv += args[3 + n:]
            name = run[0][1][1].decode().rsplit('_', 1)[0] + '_many'
            out.append((run[0][0], [b'FCALL', name.encode(), str(len(keys)).encode()]
                        + keys + argv))
            runs += 1
            calls += len(run)
        run.clear()

    for ms, args, client in commands:
        fn = args[1].decode('latin-1').rsplit('_', 1)[-1] if len(args) > 1 else ''
        if args[0].upper() == b'FCALL' and fn in MERGED:
            if run and run[-1][2] != client:
                close()
            run.append((ms, args, client))
            continue
        close()
        out.append((ms, args))
    close()
    print('calls merged: %d into %d' % (calls, runs))
    return out


def merging_library(code):
    """The library with the merged functions' bodies kept as locals, and `many`, which
    runs each call of a merged run in turn, on its own clock (see merged)."""
    prefix = re.search(r"register_function\('(pc_[0-9a-f]+)_batch'", code).group(1)
    clock = "now = tonumber(redis.call('GET', 'replay:now'))\n"
    if code.count(clock) != 1:
        sys.exit('the library reads its clock in a way this replay does not know')
    code = code.replace(clock, "now = forced_now or tonumber(redis.call('GET', 'replay:now'))\n")
    code = code.replace('local KEYS, ARGV, tag, now\n', 'local KEYS, ARGV, tag, now, forced_now\n', 1)
    for fn in MERGED:
        head = "library.register_function('%s_%s', function(keys, args)" % (prefix, fn)
        start = code.index(head)
        end = code.index('library.register_function(', start + len(head))
        body = code[start + len(head):end]
        close = body.rindex('end)')
        code = (code[:start] + 'local %s_body = function(keys, args)' % fn + body[:close]
                + "end\nlibrary.register_function('%s_%s', %s_body)\n" % (prefix, fn, fn)
                + body[close + 4:] + code[end:])
    bodies = ', '.join('%s = %s_body' % (fn, fn) for fn in MERGED)
    return code + '''
library.register_function('%s_many', function(keys, args)
  local bodies = {%s}
  local out, k, a = {}, 1, 2
  for c = 1, tonumber(args[1]) do
    local fn, nk, na = args[a], tonumber(args[a + 1]), tonumber(args[a + 2])
    forced_now = tonumber(args[a + 3])
    a = a + 4
    local ks, as = {}, {}
    for j = 1, nk do ks[j] = keys[k]; k = k + 1 end
    for j = 1, na do as[j] = args[a]; a = a + 1 end
    out[c] = bodies[fn](ks, as)
  end
  forced_now = nil
  return out
end)
''' % (prefix, bodies)


def library_of(commands):
    """The code of the function library a capture loaded."""
    for _, args in commands:
        if args[0].upper() == b'FUNCTION' and args[1].upper() == b'LOAD':
            return args[-1].decode('latin-1')
    sys.exit('the capture loads no function library')


def batch_contents(commands):
    """What each batch script of the capture carried, as a dict of counts: link steps,
    links, leases ended, URLs given back, host states, hosts taken from, links read (see
    batch.lua's ARGV: the tag, 7 fields, the steps, then, from the bucket's owner, its
    log)."""
    out = []
    for _, args in commands:
        if args[0].upper() != b'FCALL' or not args[1].endswith(b'_batch'):
            continue
        argv = args[3 + int(args[2]):]
        steps, i, links = int(argv[7]), 8, 0
        for _ in range(steps):
            n = int(argv[i])
            links += n
            i += 1 + 2 * n
        got = {'steps': steps, 'links': links}
        if argv[6]:
            plain = int(argv[i])
            i += 1 + 2 * plain
            others = int(argv[i])
            i += 1
            for _ in range(others):
                i += 4 if argv[i + 1] in (b'r', b'R') else 3
            back = int(argv[i])
            i += 1 + back
            states = int(argv[i])
            i += 1 + 2 * states
            taken = int(argv[i])
            i += 1 + 2 * taken
            got.update(ended=plain + others, back=back, states=states, taken=taken,
                       read=int(argv[i + 2]))
        out.append(got)
    return out


def print_batches(commands):
    """Prints what the capture's batch scripts carried (see --batches)."""
    batches = batch_contents(commands)
    fields = ['steps', 'links', 'ended', 'back', 'states', 'taken', 'read']
    totals = {f: sum(b.get(f, 0) for b in batches) for f in fields}
    pages = totals['ended'] or 1
    print('batch scripts: %d (%.2f a lease ended)\n' % (len(batches), len(batches) / pages))
    print('| carried | in all | a lease ended |')
    print('|---|---|---|')
    for f in fields:
        print('| %s | %d | %.2f |' % (f, totals[f], totals[f] / pages))
    mixes = {}
    for b in batches:
        mix = ' '.join(f for f in fields[1:] if b.get(f)) or '(nothing)'
        if 'ended' not in b:
            mix = "another's: " + mix
        mixes[mix] = mixes.get(mix, 0) + 1
    print('\n| scripts | carrying |')
    print('|---|---|')
    for mix, n in sorted(mixes.items(), key=lambda kv: -kv[1])[:12]:
        print('| %d | %s |' % (n, mix))


def replayable(code, name):
    """The library under the captured one's name, its clock read from a key the replay sets
    before each call."""
    own = re.search(r'politecrawl_([0-9a-f]+)', code).group(1)
    code = code.replace(own, name)
    code, n = re.subn(r"local t = redis.call\('TIME'\)\nnow = [^\n]*\n",
                      "now = tonumber(redis.call('GET', 'replay:now'))\n", code)
    if n != 1:
        sys.exit('the library reads its clock in a way this replay does not know')
    return code


def host_text(value):
    """A host's state as text, whichever way it was stored."""
    if value[:1] != b'\xff':
        return value
    fields, at = [], 2
    for width in HOST_WIDTHS[:value[1]]:
        fields.append(str(int.from_bytes(value[at:at + width], 'big', signed=True)))
        at += width
    return ' '.join(fields).encode()


def write_state(con, path):
    with open(path, 'w') as out:
        for key in sorted(con.scan_iter(count=1000)):
            if key == b'replay:now':
                continue
            kind = con.type(key)
            if kind == b'hash':
                value = sorted(con.hgetall(key).items())
                if key.endswith(b':hosts'):
                    value = [(host, host_text(state)) for host, state in value]
            elif kind == b'list':
                value = con.lrange(key, 0, -1)
            elif kind == b'zset':
                value = con.zrange(key, 0, -1, withscores=True)
            elif kind == b'set':
                value = sorted(con.smembers(key))
            else:
                value = con.get(key)
            out.write('%r %r\n' % (key, value))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('capture')
    parser.add_argument('--library')
    parser.add_argument('--code')
    parser.add_argument('--callgrind', action='store_true')
    parser.add_argument('--state')
    parser.add_argument('--once', action='store_true')
    parser.add_argument('--cpu', action='store_true')
    parser.add_argument('--alone', action='store_true')
    parser.add_argument('--batches', action='store_true')
    parser.add_argument('--dump-library')
    parser.add_argument('--merge', action='store_true')
    opts = parser.parse_args()
    commands = read_capture(opts.capture)
    if opts.batches:
        print_batches(commands)
        return
    if opts.dump_library:
        with open(opts.dump_library, 'w', encoding='latin-1') as f:
            f.write(library_of(commands))
        return
    if opts.once:
        commands = sent_once(commands)
    captured = library_of(commands)
    name = re.search(r'politecrawl_([0-9a-f]+)', captured).group(1)
    code = library_of(read_capture(opts.library)) if opts.library else captured
    if opts.code:
        with open(opts.code, encoding='latin-1') as f:
            code = f.read()
    code = replayable(code, name)
    if opts.merge:
        if opts.once:
            sys.exit('--merge and --once do not go together')
        commands = merged(read_capture(opts.capture, with_clients=True))
        code = merging_library(code)

    server = Server(opts.callgrind)
    con = server.con
    try:
        if not opts.callgrind and not opts.cpu:
            # Each call's time, by function (the log's own cost would count as instructions).
            con.config_set('slowlog-max-len', 1000000)
            con.config_set('slowlog-log-slower-than', 0)
        pipe = con.pipeline(transaction=False)
        clock = None
        for i, (ms, args) in enumerate(commands):
            if args[0].upper() == b'FUNCTION' and args[1].upper() == b'LOAD':
                args = args[:-1] + [code.encode('latin-1')]
            if ms != clock:
                pipe.execute_command('SET', 'replay:now', ms)
                clock = ms
            pipe.execute_command(args[0].decode(), *args[1:])
            if opts.alone or i % 500 == 499:
                pipe.execute(raise_on_error=False)
        pipe.execute(raise_on_error=False)
        calls = {}
        # Under valgrind the log holds only the calls over its default 10 ms.
        for entry in [] if opts.callgrind or opts.cpu else con.slowlog_get(1000000):
            words = entry['command'].split(b' ')
            if words[0].upper() == b'FCALL':
                name_of = words[1].decode().rsplit('_', 1)[-1]
                n, us = calls.get(name_of, (0, 0))
                calls[name_of] = (n + 1, us + entry['duration'])
        if calls:
            total = sum(us for _, us in calls.values())
            print('| function | calls | µs | µs a call | share |')
            print('|---|---|---|---|---|')
            for fn, (n, us) in sorted(calls.items(), key=lambda kv: -kv[1][1]):
                print('| %s | %d | %d | %.1f | %.0f%% |' % (fn, n, us, us / n, 100 * us / total))
            print('\nfunctions: %d µs' % total)
        done = sum(int(con.hget(k, 'done') or 0) for k in con.scan_iter(match='*:counts'))
        print('URLs done in the replay: %d' % done)
        if opts.cpu and done:
            cpu = con.info('cpu')
            spent = cpu['used_cpu_user'] + cpu['used_cpu_sys']
            print('Redis CPU a URL done: %.1f µs (%.1f system)'
                  % (spent * 1e6 / done, cpu['used_cpu_sys'] * 1e6 / done))
        if opts.state:
            write_state(con, opts.state)
    finally:
        server.stop()
    if opts.callgrind:
        print('instructions redis-server executed: %d' % server.instructions())


if __name__ == '__main__':
    main()
