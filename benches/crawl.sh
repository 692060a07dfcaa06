#!/usr/bin/env bash
# The crawl benchmark: a 100,000-page site (about 8.5 KB a page, 30 links a page: 10 to
# children in a tree, 20 to random pages) served by testweb on 127.0.0.1, crawled to completion
# by `crawler` with config/local.toml, then by wget2 (16 threads) on a fresh copy of the same
# site. Prints a table: wall time, pages/s, CPU per page, peak RSS, and what the server saw
# (expected pages fetched, repeated fetches).
#
#   benches/crawl.sh              # the full run (a few minutes)
#   PAGES=10000 benches/crawl.sh  # a quicker one
#   PAGES=20000 RANDOM_LINKS=1000 benches/crawl.sh  # pages with 1,010 links (memory per link)
#   CRAWLER_ARGS='--state-dir @STATE@' NAME='with --state-dir' WGET2=no benches/crawl.sh
#                                 # other flags (@STATE@: a fresh directory), no wget2
#   CRAWLER_BIN=../old/target/release/crawler CRAWLER_CONFIG=../old/config/local.toml \
#       NAME=old WGET2=no benches/crawl.sh   # another build of the crawler, to compare
#
# Needs GNU time (/usr/bin/time) and, for the comparison, wget2 (Debian: apt-get install wget2).
# Both programs share the machine's cores with the server, as in the published peer figures.
set -euo pipefail
cd "$(dirname "$0")/.."

PAGES=${PAGES:-100000}
RANDOM_LINKS=${RANDOM_LINKS:-20}
WGET2_THREADS=${WGET2_THREADS:-16}
CRAWLER_ARGS=${CRAWLER_ARGS:-}
NAME=${NAME:-crawler (config/local.toml)}
WGET2=${WGET2:-yes}
CRAWLER_BIN=${CRAWLER_BIN:-}
CRAWLER_CONFIG=${CRAWLER_CONFIG:-config/local.toml}
# shellcheck source=benches/lib.sh
. benches/lib.sh
build

# Starts a fresh site; sets $server and $seed.
serve() {
    "$bin/testweb" --pages "$PAGES" --children 10 --random-links "$RANDOM_LINKS" --page-bytes 8500 \
        --plain-links --port 0 >"$work/seed" 2>"$work/server.$1" &
    server=$!
    await_file "$work/seed" 100
    seed=$(head -n1 "$work/seed")
    : >"$work/seed"
}

row() { # name wall user sys rss_kb fetched expected repeated
    awk -v n="$1" -v w="$2" -v u="$3" -v s="$4" -v m="$5" -v f="$6" -v e="$7" -v r="$8" 'BEGIN {
        printf "| %s | %.1f s | %.0f | %.3f ms | %.0f MB | %d of %d | %d |\n",
            n, w, f / w, (u + s) * 1000 / f, m / 1024, f, e, r }'
}

echo "| crawler | wall | pages/s | CPU per page | peak RSS | expected pages fetched | repeated fetches |"
echo "|---|---|---|---|---|---|---|"

serve crawler
# shellcheck disable=SC2086 # CRAWLER_ARGS is a list of flags
read -r wall user sys rss < <(measure "${CRAWLER_BIN:-$bin/crawler}" --config "$CRAWLER_CONFIG" --seed "$seed" \
    --output "$work/records.jsonl" --progress off ${CRAWLER_ARGS//@STATE@/$work/state})
stop_site "$work/server.crawler"
records=$(wc -l <"$work/records.jsonl")
[ "$records" -eq "$expected" ] || echo "note: $records records for $expected expected pages" >&2
row "$NAME" "$wall" "$user" "$sys" "$rss" "$fetched" "$expected" "$repeated"

if [ "$WGET2" != yes ]; then
    :
elif command -v wget2 >/dev/null; then
    serve wget2
    mkdir -p "$work/wget2"
    read -r wall user sys rss < <(measure wget2 --recursive --level=inf --no-parent \
        --max-threads="$WGET2_THREADS" --delete-after --no-directories --quiet \
        --directory-prefix="$work/wget2" "$seed")
    stop_site "$work/server.wget2"
    row "wget2 $(wget2 --version | head -n1 | awk '{print $3}'), $WGET2_THREADS threads" \
        "$wall" "$user" "$sys" "$rss" "$fetched" "$expected" "$repeated"
else
    echo "(wget2 not installed: apt-get install wget2)" >&2
fi
