#!/usr/bin/env bash
# The shared-frontier benchmark: one crawl shared by 1, 2 and 4 crawler processes through one
# redis-server on 127.0.0.1. The site is latency-bound, as the real web is: testweb with 100
# hosts answering after 20 ms each; every process keeps 16 fetches in flight (config/local.toml,
# --concurrency 16). Prints a table: wall time, pages/s, speed-up over one process, Redis
# requests per page (round trips), Redis reads per page (wake-ups of its event loop: the
# requests that arrived together are one), Redis CPU per page, the crawlers' own CPU per page
# (user and system, all processes), Redis memory per seen URL at the end, and what the server
# saw (expected pages fetched, repeated fetches).
#
#   benches/shared.sh                       # 100 hosts x 200 pages; 1, 2 and 4 processes
#   PAGES=50 PROCESSES="1 2" benches/shared.sh
#   CONFIG=config/default.toml PAGES=10 benches/shared.sh   # polite: 1 s between requests to
#                                           # a host, one connection; bound by politeness
#                                           # (testweb's hosts share 127.0.0.1: add
#                                           # CRAWLER_ARGS="--address-connections 0
#                                           # --address-delay 0" to measure per host alone)
#   RTT_MS=4 benches/shared.sh              # Redis 4 ms away (round trip): the crawlers reach
#                                           # it through benches/delay_proxy.py
#   CRAWLER_ARGS="--content-seen false" benches/shared.sh   # more flags for every crawler
#   ADDRESSES=100 HOSTS=1000 benches/shared.sh   # the hosts by name over 100 loopback
#                                           # addresses (testweb's DNS server, one port): with
#                                           # CRAWLER_ARGS="--address-connections 8
#                                           # --address-delay 20ms", a broad crawl held to
#                                           # its servers; NAMES_BY_ADDRESS=1 names them
#                                           # hI.aJ.test (J: the address), a domain a server,
#                                           # for CRAWLER_ARGS="--redis-buckets-by domain"
#   DNS_DELAY_MS=300 ADDRESSES=100 HOSTS=1000 benches/shared.sh   # a slow name server:
#                                           # testweb's answers each 300 ms late
#   CRAWLER_BIN=../old/target/release/crawler benches/shared.sh   # another build
#   COMMANDSTATS=stats benches/shared.sh    # Redis's INFO commandstats of each run (calls and
#                                           # CPU by command), in stats.N for N processes
#   CLUSTER=3 benches/shared.sh             # a Redis Cluster of 3 masters (no replicas): Redis
#                                           # CPU and memory are the sums over the masters
#   RECORDS=dir benches/shared.sh           # keeps each run's records and stderr, in dir/N for
#                                           # N processes (fetched_at: when each began and ended);
#                                           # benches/records_report.py tells the spacing at each
#                                           # address and each process's pace from them
#   MONITOR=run.txt PROCESSES=2 benches/shared.sh   # records what the crawlers sent (MONITOR),
#                                           # for benches/redis_replay.py; with CLUSTER=N, each
#                                           # master's in run.txt.1 to run.txt.N
#
# Needs redis-server and redis-cli (Debian: apt-get install redis-server).
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTS=${HOSTS:-100}
PAGES=${PAGES:-200}
LATENCY_MS=${LATENCY_MS:-20}
CONCURRENCY=${CONCURRENCY:-16}
CONFIG=${CONFIG:-config/local.toml}
PROCESSES=${PROCESSES:-1 2 4}
RTT_MS=${RTT_MS:-0}
CLUSTER=${CLUSTER:-0}
ADDRESSES=${ADDRESSES:-0}
if [ "$CLUSTER" != 0 ] && [ "$RTT_MS" != 0 ]; then
    # The proxy reaches one node; a cluster's clients go to each node itself.
    echo "benches/shared.sh: RTT_MS and CLUSTER do not go together" >&2
    exit 2
fi
read -r -a crawler_args <<<"${CRAWLER_ARGS:-}"
for tool in redis-server redis-cli; do
    # Without it, the wait for the server below would never end.
    command -v "$tool" >/dev/null || {
        echo "benches/shared.sh: $tool not found (tests/setup.sh installs it)" >&2
        exit 2
    }
done
# shellcheck source=benches/lib.sh
. benches/lib.sh
redis=()
proxy=
trap 'kill $server ${redis[@]+"${redis[@]}"} $proxy 2>/dev/null || true; rm -rf "$work"' EXIT
build

free_port() {
    # A port free now, and (for a cluster node) its bus port, port + 10000.
    python3 -c 'import socket
while True:
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]
    if p < 55000:
        t = socket.socket()
        try:
            t.bind(("127.0.0.1", p + 10000)); break
        except OSError:
            pass
print(p)'
}
ports=()
for i in $(seq "$([ "$CLUSTER" != 0 ] && echo "$CLUSTER" || echo 1)"); do
    p=$(free_port)
    ports+=("$p")
    cluster_args=()
    if [ "$CLUSTER" != 0 ]; then
        cluster_args=(--cluster-enabled yes --cluster-config-file "$work/nodes-$p.conf")
    fi
    redis-server --port "$p" --bind 127.0.0.1 --save "" --appendonly no --dir "$work" \
        "${cluster_args[@]}" >"$work/redis-$p.log" &
    redis+=($!)
    until redis-cli -p "$p" ping >/dev/null 2>&1; do sleep 0.05; done
done
port=${ports[0]}
if [ "$CLUSTER" != 0 ]; then
    nodes=()
    for p in "${ports[@]}"; do nodes+=("127.0.0.1:$p"); done
    redis-cli --cluster create "${nodes[@]}" --cluster-replicas 0 --cluster-yes >"$work/cluster.log"
    for p in "${ports[@]}"; do
        until redis-cli -p "$p" CLUSTER INFO | grep -q cluster_state:ok; do sleep 0.1; done
    done
fi
# The crawlers' way to Redis: direct, or through a proxy holding each byte half the round trip.
reach=$port
if [ "$RTT_MS" != 0 ]; then
    reach=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    python3 benches/delay_proxy.py "$port" "$reach" "$(echo "$RTT_MS / 2000" | bc -l)" &
    proxy=$!
    until redis-cli -p "$reach" ping >/dev/null 2>&1; do sleep 0.05; done
fi
# Summed over the servers (a cluster's masters).
cpu() {
    for p in "${ports[@]}"; do redis-cli -p "$p" INFO cpu; done | tr -d '\r' |
        awk -F: '/^used_cpu_(sys|user):/ { s += $2 } END { printf "%.3f", s }'
}
reads() {
    for p in "${ports[@]}"; do redis-cli -p "$p" INFO stats; done | tr -d '\r' |
        awk -F: '/^total_reads_processed:/ { s += $2 } END { print s + 0 }'
}
mem() {
    for p in "${ports[@]}"; do redis-cli -p "$p" INFO memory; done | tr -d '\r' |
        awk -F: '/^used_memory:/ { s += $2 } END { print s }'
}

echo "| processes | wall | pages/s | speed-up | Redis requests per page | Redis reads per page | Redis CPU per page | crawlers' CPU per page | Redis bytes per seen URL | expected pages fetched | repeated fetches | records by process |"
echo "|---|---|---|---|---|---|---|---|---|---|---|---|"
base=
# bash's `time` of each crawler: user and system seconds, with a decimal point for awk.
TIMEFORMAT='%U %S'
export LC_NUMERIC=C
for n in $PROCESSES; do
    # A run of fewer processes after one of more reads only its own.
    rm -f "$work"/cpu.* "$work"/records.* "$work"/stderr.*
    for p in "${ports[@]}"; do redis-cli -p "$p" FLUSHALL >/dev/null; done
    # There before the server writes it: the wait below reads it at once.
    : >"$work/seeds"
    by_name=()
    if [ "$ADDRESSES" != 0 ]; then
        rm -f "$work/dns"
        by_name=(--addresses "$ADDRESSES" --dns-out "$work/dns")
        if [ "${NAMES_BY_ADDRESS:-0}" != 0 ]; then
            by_name+=(--names-by-address)
        fi
        by_name+=(--dns-delay-ms "${DNS_DELAY_MS:-0}")
    fi
    "$bin/testweb" --hosts "$HOSTS" --pages "$PAGES" --latency-ms "$LATENCY_MS" --all-roots \
        --plain-links --port 0 "${by_name[@]}" >"$work/seeds" 2>"$work/server" &
    server=$!
    until [ "$(wc -l <"$work/seeds")" -ge "$HOSTS" ]; do sleep 0.05; done
    dns=()
    if [ "$ADDRESSES" != 0 ]; then
        until [ -s "$work/dns" ]; do sleep 0.05; done
        dns=(--dns-server "$(cat "$work/dns")")
    fi
    monitors=()
    if [ -n "${MONITOR:-}" ]; then
        k=0
        for p in "${ports[@]}"; do
            out=$MONITOR
            if [ "$CLUSTER" != 0 ]; then k=$((k + 1)); out=$MONITOR.$k; fi
            redis-cli -p "$p" MONITOR >"$out" &
            monitors+=($!)
            # MONITOR's first line: it is recording.
            await_file "$out" 50
        done
    fi
    if [ -n "${COMMANDSTATS:-}" ]; then
        for p in "${ports[@]}"; do redis-cli -p "$p" CONFIG RESETSTAT >/dev/null; done
    fi
    mem0=$(mem)
    cpu0=$(cpu)
    reads0=$(reads)
    start=$(date +%s.%N)
    pids=()
    for i in $(seq "$n"); do
        # Each crawler's own CPU (user and system, bash's `time`), in cpu.N.
        { time "${CRAWLER_BIN:-$bin/crawler}" --config "$CONFIG" \
            --redis "redis://127.0.0.1:$reach" --seeds-file "$work/seeds" \
            --concurrency "$CONCURRENCY" --progress off --output "$work/records.$i" \
            "${dns[@]}" "${crawler_args[@]}" 2>"$work/stderr.$i"; } 2>"$work/cpu.$i" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    end=$(date +%s.%N)
    if [ "${#monitors[@]}" -gt 0 ]; then kill "${monitors[@]}"; fi
    cpu1=$(cpu)
    reads1=$(reads)
    if [ -n "${COMMANDSTATS:-}" ]; then
        for p in "${ports[@]}"; do redis-cli -p "$p" INFO commandstats; done | tr -d '\r' |
            grep '^cmdstat_' >"$COMMANDSTATS.$n"
    fi
    mem1=$(mem)
    seen=$(sed -n 's/.*URLs done, \([0-9,]*\) seen.*/\1/p' "$work/stderr.1" | tr -d ,)
    requests=$(cat "$work"/stderr.* | sed -n 's/.*this process sent \([0-9,]*\) Redis requests.*/\1/p' | tr -d , | paste -sd+ | bc)
    pages=$(cat "$work"/records.* | wc -l)
    crawlers=$(cat "$work"/cpu.* | awk '{ s += $1 + $2 } END { printf "%.3f", s }')
    # How evenly the processes shared the crawl.
    split=$(for i in $(seq "$n"); do wc -l <"$work/records.$i"; done | paste -sd/)
    if [ -n "${RECORDS:-}" ]; then
        mkdir -p "$RECORDS/$n"
        cp "$work"/records.* "$work"/stderr.* "$RECORDS/$n/"
    fi
    stop_site "$work/server"
    [ "$pages" -eq "$expected" ] || echo "note: $pages records for $expected expected pages" >&2
    wall=$(echo "$end - $start" | bc)
    rate=$(echo "$pages / $wall" | bc -l)
    [ -n "$base" ] || base=$rate
    awk -v n="$n" -v w="$wall" -v r="$rate" -v b="$base" -v q="$requests" -v p="$pages" \
        -v c0="$cpu0" -v c1="$cpu1" -v m0="$mem0" -v m1="$mem1" -v s="$seen" \
        -v r0="$reads0" -v r1="$reads1" -v k="$crawlers" \
        -v f="$fetched" -v e="$expected" -v rep="$repeated" -v shares="$split" 'BEGIN {
        printf "| %d | %.1f s | %.0f | %.2fx | %.2f | %.3f | %.3f ms | %.3f ms | %.1f B | %d of %d | %d | %s |\n",
            n, w, r, r / b, q / p, (r1 - r0) / p, (c1 - c0) * 1000 / p, k * 1000 / p, (m1 - m0) / s,
            f, e, rep, shares }'
done
