#!/usr/bin/env bash
# The broad-crawl benchmark: what a fetch in flight and an active host cost. Three crawls, one
# table:
#   - one host of 100,000 pages with config/local.toml (no delay): the cost of a page alone;
#   - 5,000 hosts x 20 pages, each host answering after 20 ms and allowing one connection and
#     one request a second (--delay 1s), every root a seed, half of each page's random links
#     to other hosts: with 250 fetches in flight, then with 4,000.
# A polite crawl cannot beat its politeness ceiling, hosts / (delay + latency) pages a second:
# the table says how close it came, and what it cost in CPU a page and peak RSS.
#
#   benches/broad.sh                                  # the full run (about two minutes)
#   IN_FLIGHT="250 1000 4000" ONE_HOST=no benches/broad.sh
#   CRAWLER_BIN=../old/target/release/crawler NAME=old benches/broad.sh   # another build
#
# Needs GNU time (/usr/bin/time). The crawler and testweb share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."

HOSTS=${HOSTS:-5000}
PAGES=${PAGES:-20}
LATENCY_MS=${LATENCY_MS:-20}
DELAY_MS=${DELAY_MS:-1000}
IN_FLIGHT=${IN_FLIGHT:-250 4000}
ONE_HOST=${ONE_HOST:-yes}
ONE_HOST_PAGES=${ONE_HOST_PAGES:-100000}
NAME=${NAME:-crawler}
CRAWLER_BIN=${CRAWLER_BIN:-}
# shellcheck source=benches/lib.sh
. benches/lib.sh
build
crawler=${CRAWLER_BIN:-$bin/crawler}

# Starts a fresh site with the given testweb flags; its seeds go to $work/seeds.
serve() {
    : >"$work/seeds"
    "$bin/testweb" --port 0 --plain-links "$@" >"$work/seeds" 2>"$work/server" &
    server=$!
    await_file "$work/seeds" 600
    # All roots are printed at once, before the site serves.
    sleep 0.5
}

# Runs the crawler with the given flags under GNU time; prints "wall user sys maxrss_kb".
crawl() {
    measure "$crawler" --seeds-file "$work/seeds" --output /dev/null --progress off "$@"
}

row() { # name ceiling wall user sys rss_kb fetched expected repeated
    awk -v n="$1" -v c="$2" -v w="$3" -v u="$4" -v s="$5" -v m="$6" -v f="$7" -v e="$8" \
        -v r="$9" 'BEGIN {
        rate = f / w
        of = c > 0 ? sprintf("%.0f%% of %.0f", 100 * rate / c, c) : "no delay"
        printf "| %s | %.1f s | %.0f | %s | %.3f ms | %.0f MB | %d of %d | %d |\n",
            n, w, rate, of, (u + s) * 1000 / f, m / 1024, f, e, r }'
}

echo "| crawl ($NAME) | wall | pages/s | of the politeness ceiling | CPU per page | peak RSS | expected pages fetched | repeated fetches |"
echo "|---|---|---|---|---|---|---|---|"

if [ "$ONE_HOST" = yes ]; then
    serve --pages "$ONE_HOST_PAGES" --children 10 --random-links 20 --page-bytes 8500
    # One seed: the root.
    head -n1 "$work/seeds" >"$work/seed" && mv "$work/seed" "$work/seeds"
    read -r wall user sys rss < <(crawl --config config/local.toml)
    stop_site "$work/server"
    row "one host, $ONE_HOST_PAGES pages, config/local.toml" 0 "$wall" "$user" "$sys" "$rss" \
        "$fetched" "$expected" "$repeated"
fi

ceiling=$(awk -v h="$HOSTS" -v d="$DELAY_MS" -v l="$LATENCY_MS" 'BEGIN { print h * 1000 / (d + l) }')
for n in $IN_FLIGHT; do
    serve --hosts "$HOSTS" --pages "$PAGES" --latency-ms "$LATENCY_MS" --inter-host 0.5 --all-roots
    read -r wall user sys rss < <(crawl --config config/local.toml --delay "${DELAY_MS}ms" \
        --connections-per-host 1 --concurrency "$n")
    stop_site "$work/server"
    row "$HOSTS hosts x $PAGES pages, $n in flight" "$ceiling" "$wall" "$user" "$sys" "$rss" \
        "$fetched" "$expected" "$repeated"
done
