#!/usr/bin/env python3
"""What a shared crawl's records say of its politeness per address and of its pace.

    benches/records_report.py ADDRESSES [--delay MS] DIR/records.1 DIR/records.2 ...

Reads the records a run of `benches/shared.sh` kept (`RECORDS=DIR`; one file a process) of
a site served by name over ADDRESSES loopback addresses (`ADDRESSES=N`: testweb puts host
`hI` on the address I % N), and prints:
- the starts at each address one after another (`fetched_at`, stamped in ms after the
  request's turn): the closest two, the hundredth closest, the median and, given the
  address's delay, how many came closer than 95% of it (the stamps are ms; a crawler that
  ignores its delay starts them together), and the same for two starts of different
  processes in a row (an address passing between them);
- each process's pages a half second, over the run: a process that idles while another
  crawls (an address's turns, or slices, in step at every address) shows as runs of zeros.

robots.txt requests are not records: the spacing counted is that of the pages.
"""

import datetime
import json
import re
import statistics
import sys


def main() -> int:
    args = sys.argv[1:]
    delay = None
    if len(args) >= 3 and args[1] == "--delay":
        try:
            delay = float(args[2])
        except ValueError:
            print(f"records_report.py: --delay takes ms, not {args[2]!r}", file=sys.stderr)
            return 2
        del args[1:3]
    if len(args) < 2:
        print(__doc__.strip().splitlines()[2].strip(), file=sys.stderr)
        return 2
    try:
        addresses = int(args[0])
    except ValueError:
        print(f"records_report.py: ADDRESSES is a number, not {args[0]!r}", file=sys.stderr)
        return 2
    if addresses < 1:
        print("records_report.py: ADDRESSES is 1 at least", file=sys.stderr)
        return 2
    starts = {}
    times = []
    for process, path in enumerate(args[1:], start=1):
        mine = []
        with open(path, encoding="utf-8") as records:
            for n, line in enumerate(records, start=1):
                try:
                    record = json.loads(line)
                    host = re.match(r"https?://h(\d+)\.", record["url"])
                    stamp = record["fetched_at"].replace("Z", "+00:00")
                    at = datetime.datetime.fromisoformat(stamp).timestamp()
                except (ValueError, KeyError, TypeError) as err:
                    print(f"{path}:{n}: not a record of a testweb page: {err}", file=sys.stderr)
                    return 1
                if host is None:
                    print(f"{path}:{n}: not a testweb host name: {record['url']}", file=sys.stderr)
                    return 1
                starts.setdefault(int(host.group(1)) % addresses, []).append((at, process))
                mine.append(at)
        times.append(mine)
    gaps, passes = [], []
    for run in starts.values():
        run.sort()
        for (t0, p0), (t1, p1) in zip(run, run[1:]):
            gap = (t1 - t0) * 1000
            gaps.append(gap)
            if p0 != p1:
                passes.append(gap)
    describe("starts at an address in a row", gaps, delay)
    describe("of two processes in a row", passes, delay)
    first = min(t for mine in times for t in mine)
    last = max(t for mine in times for t in mine)
    halves = int((last - first) * 2) + 1
    print("pages a half second, by process:")
    for process, mine in enumerate(times, start=1):
        counts = [0] * halves
        for t in mine:
            counts[int((t - first) * 2)] += 1
        print(f"  {process}: " + " ".join(str(c) for c in counts))
    return 0


def describe(what: str, gaps: list, delay) -> None:
    if not gaps:
        print(f"{what}: none")
        return
    gaps.sort()
    line = (
        f"{what}: {len(gaps)}, closest {gaps[0]:.1f} ms, hundredth {gaps[len(gaps) // 100]:.1f},"
        f" median {statistics.median(gaps):.1f}"
    )
    if delay is not None:
        line += f", closer than 95% of {delay:g} ms: {sum(g < 0.95 * delay for g in gaps)}"
    print(line)


if __name__ == "__main__":
    sys.exit(main())
