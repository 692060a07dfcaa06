#!/usr/bin/env bash
# A shared crawl put through what its users fear, as a user would: names on few servers
# (testweb's DNS server), two crawlers held to limits per address through one redis-server,
# a SAVE mid-crawl, one crawler killed (kill -9), Redis restarted from that older snapshot,
# and a third crawler joining. Prints what each crawler said last, the warnings, and how many
# URLs ended with a 200; exits 1 unless every one did. The integration tests cover each of
# these alone, this one all at once, at a size they do not.
#
#   benches/shared_faults.sh
#   HOSTS=400 ADDRESSES=10 PAGES=50 benches/shared_faults.sh
#   CRAWLER_ARGS="--address-connections 0 --address-delay 0" benches/shared_faults.sh
#   NAMES_BY_ADDRESS=1 CRAWLER_ARGS="--address-connections 4 --address-delay 10ms
#       --redis-buckets-by domain" benches/shared_faults.sh   # a server's names in one
#                                           # domain (hI.aJ.test), its hosts in one bucket
#
# Needs redis-server and redis-cli (tests/setup.sh installs them), python3.
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTS=${HOSTS:-200}
PAGES=${PAGES:-50}
ADDRESSES=${ADDRESSES:-20}
names_by_address=()
[ -n "${NAMES_BY_ADDRESS:-}" ] && names_by_address=(--names-by-address)
read -r -a crawler_args <<<"${CRAWLER_ARGS:---address-connections 4 --address-delay 10ms}"
for tool in redis-server redis-cli python3; do
    command -v "$tool" >/dev/null || {
        echo "benches/shared_faults.sh: $tool not found (tests/setup.sh installs it)" >&2
        exit 2
    }
done
# shellcheck source=benches/lib.sh
. benches/lib.sh
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
crawlers=()
stop_all() {
    kill -9 ${crawlers[@]+"${crawlers[@]}"} 2>/dev/null || true
    redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
    if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap stop_all EXIT
build

start_redis() {
    redis-server --port "$port" --bind 127.0.0.1 --dir "$work" --save "" --appendonly no \
        --daemonize yes >/dev/null
    until redis-cli -p "$port" PING >/dev/null 2>&1; do sleep 0.05; done
}
records() { cat "$work"/rec.* 2>/dev/null | wc -l; }
# Waits until the crawlers have written N records (a minute at most).
await_records() { # N
    local deadline=$((SECONDS + 60))
    until [ "$(records)" -ge "$1" ]; do
        [ "$SECONDS" -lt "$deadline" ] || { echo "stalled at $(records) records" >&2; exit 1; }
        sleep 0.02
    done
}

start_redis
: >"$work/seeds"
"$bin/testweb" --hosts "$HOSTS" --pages "$PAGES" --latency-ms 20 --all-roots --plain-links \
    --port 0 --addresses "$ADDRESSES" "${names_by_address[@]}" --dns-out "$work/dns" \
    >"$work/seeds" 2>"$work/server" &
server=$!
until [ -s "$work/dns" ] && [ "$(wc -l <"$work/seeds")" -ge "$HOSTS" ]; do sleep 0.05; done
total=$((HOSTS * PAGES))
crawl() { # N
    "$bin/crawler" --config config/local.toml --redis "redis://127.0.0.1:$port" \
        --seeds-file "$work/seeds" --concurrency 64 --progress off \
        --dns-server "$(cat "$work/dns")" "${crawler_args[@]}" \
        --output "$work/rec.$1" 2>"$work/err.$1" &
    crawlers+=($!)
}
crawl 1
crawl 2
await_records $((total / 4))
redis-cli -p "$port" SAVE >/dev/null
echo "Redis saved at $(records) records"
await_records $((total / 2))
kill -9 "${crawlers[0]}"
echo "crawler 1 killed (-9) at $(records) records"
redis-cli -p "$port" SHUTDOWN NOSAVE >/dev/null 2>&1 || true
start_redis
echo "Redis restarted from the snapshot"
crawl 3
status=0
for i in 1 2; do
    wait "${crawlers[$i]}" || { status=$?; echo "crawler $((i + 1)) exited $status"; }
done
crawlers=()
for i in 2 3; do
    echo "crawler $i said last:"
    tail -n 3 "$work/err.$i" | sed 's/^/    /'
done
echo "warnings:"
grep -h "WARN" "$work"/err.* | sed 's/^[^ ]* //' | sort | uniq -c | sort -rn | head | sed 's/^/   /'
cat "$work"/rec.* | python3 -c "
import json, sys
ok = set()
for line in sys.stdin:
    try:
        r = json.loads(line)
    except ValueError:
        continue  # the killed crawler's last line, torn
    if r.get('status') == 200:
        ok.add(r['url'])
print('URLs that ended with a 200: %d of %d' % (len(ok), $total))
sys.exit(0 if len(ok) == $total else 1)
" || status=1
exit "$status"
