#!/usr/bin/env bash
# Many names on few servers: testweb serves NAMES host names (h0.test, h1.test, ...) by name
# over ADDRESSES loopback addresses (127.0.0.1 and up, one port), with a DNS server of its own
# for them, each page answered after LATENCY_MS. The crawler (config/local.toml, every root a
# seed) reaches them three ways, one table:
#   - told where each name lives (--resolve), no limit per address;
#   - asking the DNS server (--dns-server), no limit per address: what resolving costs, and
#     how many questions each name took;
#   - asking the DNS server, with limits per address (--address-connections, --address-delay
#     ADDRESS_DELAY_MS): how close it comes to the addresses' ceiling, ADDRESSES / delay
#     requests a second, and that no address had more in flight than allowed.
#
#   benches/names.sh                          # 1,000 names x 10 pages on 4 addresses
#   NAMES=200 PAGES=5 ADDRESS_DELAY_MS=20 benches/names.sh
#   CRAWLER_BIN=../old/target/release/crawler benches/names.sh   # another build (it must
#                                             # know --resolve and --dns-server)
#
# Needs GNU time (/usr/bin/time). The crawler and testweb share the machine's cores.
set -euo pipefail
cd "$(dirname "$0")/.."

NAMES=${NAMES:-1000}
PAGES=${PAGES:-10}
ADDRESSES=${ADDRESSES:-4}
LATENCY_MS=${LATENCY_MS:-5}
ADDRESS_CONNECTIONS=${ADDRESS_CONNECTIONS:-8}
ADDRESS_DELAY_MS=${ADDRESS_DELAY_MS:-2}
# shellcheck source=benches/lib.sh
. benches/lib.sh
build
crawler=${CRAWLER_BIN:-$bin/crawler}

echo "| crawl | wall | pages/s | of the address ceiling | CPU per page | peak RSS | DNS questions per name | most in flight at an address | expected pages fetched |"
echo "|---|---|---|---|---|---|---|---|---|"
for way in resolve dns limited; do
    : >"$work/seeds"
    "$bin/testweb" --port 0 --plain-links --hosts "$NAMES" --pages "$PAGES" \
        --latency-ms "$LATENCY_MS" --all-roots --addresses "$ADDRESSES" \
        --resolve-out "$work/resolve" --dns-out "$work/dns" >"$work/seeds" 2>"$work/server" &
    server=$!
    until [ -s "$work/dns" ] && [ "$(wc -l <"$work/seeds")" -ge "$NAMES" ]; do sleep 0.1; done
    args=(--config config/local.toml --seeds-file "$work/seeds" --progress off --output /dev/null)
    case $way in
        resolve) while read -r entry; do args+=(--resolve "$entry"); done <"$work/resolve" ;;
        dns) args+=(--dns-server "$(cat "$work/dns")") ;;
        limited) args+=(--dns-server "$(cat "$work/dns")" \
            --address-connections "$ADDRESS_CONNECTIONS" --address-delay "${ADDRESS_DELAY_MS}ms") ;;
    esac
    read -r wall user sys rss < <(measure "$crawler" "${args[@]}")
    stop_site "$work/server"
    questions=$(sed -n 's/^dns: \([0-9]*\) questions.*/\1/p' "$work/server")
    most=$(sed -n 's/^address .*: at most \([0-9]*\) requests in flight/\1/p' "$work/server" |
        sort -n | tail -1)
    requests=$((expected + NAMES)) # every page and every robots.txt
    ceiling=
    if [ "$way" = limited ]; then
        ceiling=$(awk -v r="$requests" -v w="$wall" -v a="$ADDRESSES" -v d="$ADDRESS_DELAY_MS" \
            'BEGIN { printf "%.0f%%", 100 * (r / w) / (a * 1000 / d) }')
    fi
    awk -v way="$way" -v w="$wall" -v u="$user" -v s="$sys" -v m="$rss" -v f="$fetched" \
        -v e="$expected" -v q="$questions" -v n="$NAMES" -v most="$most" -v c="$ceiling" 'BEGIN {
        printf "| %s | %.1f s | %.0f | %s | %.3f ms | %.0f MB | %.2f | %s | %d of %d |\n",
            way, w, f / w, c, (u + s) * 1000 / f, m / 1024, q / n, most, f, e }'
done
