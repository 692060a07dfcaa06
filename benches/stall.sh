#!/usr/bin/env bash
# A stall longer than the hold: one crawler process on Redis, stopped (SIGSTOP) for STOP_S
# seconds while its buckets' hold (--lease-time HOLD) lapses, then resumed, with no other
# process to take its buckets. Prints what testweb counted: every page fetched, and how many
# were fetched again (a lapsed hold whose batches were refused had its bucket taken over by
# its own process, and its leases out fetched twice).
#
#   benches/stall.sh                        # 20 hosts x 300 pages, stopped 5 s at 1.5 s, 2 s hold
#   ROUNDS=4 CRAWLER_BIN=../old/target/release/crawler benches/stall.sh
#
# Needs redis-server and redis-cli.
set -euo pipefail
cd "$(dirname "$0")/.."
ROUNDS=${ROUNDS:-1}
STOP_S=${STOP_S:-5}
HOLD=${HOLD:-2s}
# shellcheck source=benches/lib.sh
. benches/lib.sh
redis=
trap 'kill $server $redis 2>/dev/null || true; rm -rf "$work"' EXIT
build
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" >/dev/null &
redis=$!
until redis-cli -p "$port" ping >/dev/null 2>&1; do sleep 0.05; done
for round in $(seq "$ROUNDS"); do
    redis-cli -p "$port" FLUSHALL >/dev/null
    "$bin/testweb" --hosts 20 --pages 300 --latency-ms 50 --all-roots --plain-links --port 0 \
        >"$work/seeds" 2>"$work/server" &
    server=$!
    until [ "$(wc -l <"$work/seeds")" -ge 20 ]; do sleep 0.05; done
    "${CRAWLER_BIN:-$bin/crawler}" --config config/local.toml --redis "redis://127.0.0.1:$port" \
        --seeds-file "$work/seeds" --concurrency 16 --progress off --lease-time "$HOLD" \
        --output "$work/records" 2>"$work/stderr" &
    crawler=$!
    sleep 1.5
    kill -STOP "$crawler"
    sleep "$STOP_S"
    kill -CONT "$crawler"
    wait "$crawler"
    stop_site "$work/server"
    echo "round $round: $fetched of $expected pages fetched, $repeated fetched again"
done
