#!/usr/bin/env bash
# The recrawl benchmark: the crawl benchmark's site (testweb, 100,000 pages of about 8.5 KB,
# 30 links each) crawled once with config/local.toml, then served again on the same port as
# generation 1, with CHANGED of its pages changed (0 and 0.1 by default), and recrawled with
# --since the first crawl's records. Prints, for the first crawl and each recrawl: wall time,
# CPU per page, peak RSS (of the largest process), the bytes of pages the server sent, the pages it answered 304, and the
# records by what became of their page. With PROCESSES=2 the first crawl and the recrawls are
# each two processes sharing them through a redis-server started here.
#
#   benches/recrawl.sh                  # 100,000 pages; recrawls with 0% and 10% changed
#   PAGES=10000 CHANGED="0.1" benches/recrawl.sh
#   PROCESSES=2 benches/recrawl.sh      # every crawl by two processes on Redis
#   CRAWLER_BIN=../ref/target/release/crawler benches/recrawl.sh   # another build's crawler
#
# Needs GNU time (/usr/bin/time); with PROCESSES=2, redis-server.
set -euo pipefail
cd "$(dirname "$0")/.."

PAGES=${PAGES:-100000}
CHANGED=${CHANGED:-0 0.1}
PROCESSES=${PROCESSES:-1}
# shellcheck source=benches/lib.sh
. benches/lib.sh
redis=
trap 'kill $server $redis 2>/dev/null || true; rm -rf "$work"' EXIT
build
crawler=${CRAWLER_BIN:-$bin/crawler}
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')

# Serves generation $1 with $2 of the pages changed on $port; sets $server and $seed.
serve() {
    for _ in $(seq 50); do
        "$bin/testweb" --pages "$PAGES" --children 10 --random-links 20 --page-bytes 8500 \
            --plain-links --no-log --port "$port" --generation "$1" --changed "$2" \
            >"$work/seed" 2>"$work/server" &
        server=$!
        for _ in $(seq 50); do
            [ -s "$work/seed" ] && break
            kill -0 "$server" 2>/dev/null || break
            sleep 0.1
        done
        [ -s "$work/seed" ] && break
        sleep 0.2 # the port of the last site still closing
    done
    seed=$(head -n1 "$work/seed")
    : >"$work/seed"
}

# Stops the site; sets $sent (bytes of pages) and $unsent (304s) from its summary.
stop() {
    kill -TERM "$server"
    wait "$server" || true
    server=
    read -r sent unsent < <(sed -n \
        's/.*; \([0-9]*\) bytes of pages, \([0-9]*\) pages not modified.*/\1 \2/p' "$work/server")
}

# Runs the crawl, $PROCESSES processes; prints "wall user sys rss" (CPU summed, the largest
# process's peak RSS in KB).
crawl() { # name, more flags...
    local name=$1
    shift
    if [ "$PROCESSES" = 1 ]; then
        /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$crawler" --config config/local.toml \
            --seed "$seed" --output "$work/$name.jsonl" --progress off "$@" 2>"$work/$name.err"
        cat "$work/time"
        return
    fi
    redis-cli -p "$rport" FLUSHALL >/dev/null
    local start end pids=()
    start=$(date +%s.%N)
    for i in $(seq "$PROCESSES"); do
        /usr/bin/time -f '%U %S %M' -o "$work/time.$i" "$crawler" --config config/local.toml \
            --redis "redis://127.0.0.1:$rport" --seed "$seed" --output "$work/$name.$i.jsonl" \
            --progress off "$@" 2>"$work/$name.err.$i" &
        pids+=($!)
    done
    for pid in "${pids[@]}"; do wait "$pid"; done
    end=$(date +%s.%N)
    cat "$work"/"$name".*.jsonl >"$work/$name.jsonl"
    awk -v w="$(echo "$end - $start" | bc -l)" '{ u += $1; s += $2; if ($3 > m) m = $3 }
        END { print w, u, s, m }' \
        "$work"/time.*
}

if [ "$PROCESSES" != 1 ]; then
    rport=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
    redis-server --port "$rport" --bind 127.0.0.1 --save "" --appendonly no >"$work/redis.log" &
    redis=$!
    until redis-cli -p "$rport" ping >/dev/null 2>&1; do sleep 0.05; done
fi

kinds() { # records file: "unchanged changed new gone"
    for kind in unchanged changed new gone; do
        grep -c "\"revisit\":\"$kind\"" "$1" || true
    done | paste -sd' '
}

echo "| crawl | processes | wall | CPU per page | peak RSS | bytes of pages sent | 304s | unchanged, changed, new, gone |"
echo "|---|---|---|---|---|---|---|---|"
serve 0 0
read -r wall user sys rss < <(crawl first)
stop
pages=$(wc -l <"$work/first.jsonl")
awk -v P="$PROCESSES" -v w="$wall" -v u="$user" -v s="$sys" -v p="$pages" -v b="$sent" -v r="$rss" 'BEGIN {
    printf "| first | %d | %.1f s | %.3f ms | %d MB | %.1f MB | 0 | |\n", P, w, (u + s) * 1000 / p, r / 1024, b / 1e6 }'
for changed in $CHANGED; do
    name="recrawl-$changed"
    serve 1 "$changed"
    read -r wall user sys rss < <(crawl "$name" --since "$work/first.jsonl")
    stop
    pages=$(wc -l <"$work/$name.jsonl")
    read -r u c n g < <(kinds "$work/$name.jsonl")
    awk -v name="recrawl, $changed changed" -v P="$PROCESSES" -v w="$wall" -v u="$user" -v s="$sys" \
        -v p="$pages" -v b="$sent" -v nm="$unsent" -v k="$u, $c, $n, $g" -v r="$rss" 'BEGIN {
        printf "| %s | %d | %.1f s | %.3f ms | %d MB | %.1f MB | %d | %s |\n",
            name, P, w, (u + s) * 1000 / p, r / 1024, b / 1e6, nm, k }'
done
