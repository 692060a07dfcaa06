#!/usr/bin/env bash
# The real-site benchmark: the Rust toolchain's HTML documentation (about 31,800 pages reachable
# from its index, 46 links a page, some pages of several MB) served by nginx on 127.0.0.1,
# crawled to the end by `crawler` with config/local.toml, then by wget2 (16 threads), in one
# run. Prints the crawl benchmark's table: wall time, pages/s, CPU (user+sys) and CPU per page,
# peak RSS, and what nginx saw (pages fetched: distinct files answered 200, whatever the
# query; repeated fetches: requests for a request target, path and query, already requested).
#
#   benches/docs.sh                       # crawler, then wget2
#   RUNS=2 benches/docs.sh                # both, twice, alternating
#   CRAWLER_BIN=../ref/target/release/crawler CRAWLER_CONFIG=../ref/config/local.toml \
#       NAME=ref WGET2=no benches/docs.sh # another build of the crawler, to compare
#   KEEP=/tmp/paths benches/docs.sh       # also keep nginx's log of each program's requests
#                                         # ("status path target" lines, KEEP/<name>.<run>), to
#                                         # compare coverage
#
# DOCS is the tree served (default: the active toolchain's `share/doc/rust/html`). nginx runs
# with its own configuration, logs and pid file in a temporary directory, as the user running
# the script, on a free loopback port; it is stopped when the script exits. Needs nginx
# (Debian: apt-get install nginx), GNU time (/usr/bin/time) and, for the comparison, wget2.
set -euo pipefail
cd "$(dirname "$0")/.."

DOCS=${DOCS:-$(rustc --print sysroot)/share/doc/rust/html}
RUNS=${RUNS:-1}
WGET2_THREADS=${WGET2_THREADS:-16}
# wget2 keeps what it fetches (under a temporary directory, removed after each run), as in the
# peer figures of /work/shared/FACTS.md; WGET2_ARGS='--delete-after --no-directories' keeps
# nothing, as benches/crawl.sh runs it.
WGET2_ARGS=${WGET2_ARGS:-}
CRAWLER_ARGS=${CRAWLER_ARGS:-}
NAME=${NAME:-crawler (config/local.toml)}
WGET2=${WGET2:-yes}
CRAWLER_BIN=${CRAWLER_BIN:-}
CRAWLER_CONFIG=${CRAWLER_CONFIG:-config/local.toml}
NGINX=${NGINX:-$(command -v nginx || echo /usr/sbin/nginx)}
KEEP=${KEEP:-}
[ -f "$DOCS/index.html" ] || { echo "no documentation tree at $DOCS" >&2; exit 1; }
[ -x "$NGINX" ] || { echo "nginx not found (apt-get install nginx)" >&2; exit 1; }

# shellcheck source=benches/lib.sh
. benches/lib.sh
# Where wget2 writes the pages (removed after each run): the temporary directory by default;
# WGET2_DIR=/dev/shm keeps the disk's writeback out of the timing.
wget2_dir=$(mktemp -d -p "${WGET2_DIR:-$work}")
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$wget2_dir" "$work"' EXIT

if [ -z "$CRAWLER_BIN" ]; then
    cargo build --release --quiet --bin crawler -p politecrawl
    CRAWLER_BIN=${CARGO_TARGET_DIR:-target}/release/crawler
fi

# A free loopback port: bound by the kernel, released, then taken by nginx.
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
mkdir -p "$work/nginx/logs" "$work/nginx/tmp"
# Started as root, nginx's workers would drop to `nobody`, who may not read the tree (the
# toolchain lives under /root): they stay the user that runs the script.
user=
[ "$(id -u)" -ne 0 ] || user="user root;"
cat >"$work/nginx/nginx.conf" <<EOF
$user
worker_processes auto;
pid $work/nginx/nginx.pid;
error_log $work/nginx/logs/error.log warn;
events { worker_connections 1024; }
http {
    types { text/html html htm; text/css css; text/javascript js; image/svg+xml svg;
            image/png png; font/woff2 woff2; application/json json; }
    default_type application/octet-stream;
    sendfile on;
    gzip ${GZIP:-off};
    tcp_nopush on;
    keepalive_requests 1000000;
    client_body_temp_path $work/nginx/tmp/body;
    proxy_temp_path $work/nginx/tmp/proxy;
    fastcgi_temp_path $work/nginx/tmp/fastcgi;
    uwsgi_temp_path $work/nginx/tmp/uwsgi;
    scgi_temp_path $work/nginx/tmp/scgi;
    log_format paths '\$status \$uri \$request_uri';
    access_log $work/nginx/logs/access.log paths buffer=1m;
    server {
        listen 127.0.0.1:$port;
        root $DOCS;
    }
}
EOF

# Starts nginx with an empty access log; sets $server.
serve() {
    : >"$work/nginx/logs/access.log"
    "$NGINX" -p "$work/nginx" -c "$work/nginx/nginx.conf" -e "$work/nginx/logs/error.log" \
        -g 'daemon off;' &
    server=$!
    for _ in $(seq 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null && return
        sleep 0.1
    done
    echo "nginx did not start:" >&2
    cat "$work/nginx/logs/error.log" >&2
    exit 1
}

# Stops nginx (which flushes its log); sets $fetched and $repeated from the log, and keeps
# the paths as KEEP/$1 when asked.
stop() {
    kill -QUIT "$server"
    wait "$server" || true
    server=
    fetched=$(awk '$1 == 200 { print $2 }' "$work/nginx/logs/access.log" | sort -u | wc -l)
    repeated=$(awk '{ print $3 }' "$work/nginx/logs/access.log" | sort | uniq -d -c |
        awk '{ n += $1 - 1 } END { print n + 0 }')
    if [ -n "$KEEP" ]; then
        mkdir -p "$KEEP"
        cp "$work/nginx/logs/access.log" "$KEEP/$1"
    fi
}

row() { # name wall user sys rss_kb fetched repeated
    awk -v n="$1" -v w="$2" -v u="$3" -v s="$4" -v m="$5" -v f="$6" -v r="$7" 'BEGIN {
        printf "| %s | %.2f s | %.0f | %.2f s | %.3f ms | %.0f MB | %d | %d |\n",
            n, w, f / w, u + s, (u + s) * 1000 / f, m / 1024, f, r }'
}

seed=http://127.0.0.1:$port/index.html
echo "| crawler | wall | pages/s | CPU (user+sys) | CPU per page | peak RSS | pages fetched | repeated fetches |"
echo "|---|---|---|---|---|---|---|---|"
for run in $(seq "$RUNS"); do
    serve
    # shellcheck disable=SC2086 # CRAWLER_ARGS is a list of flags
    read -r wall user sys rss < <(measure "$CRAWLER_BIN" --config "$CRAWLER_CONFIG" \
        --seed "$seed" --output "$work/records.jsonl" --progress off ${CRAWLER_ARGS//@STATE@/$work/state})
    stop "crawler.$run"
    row "$NAME" "$wall" "$user" "$sys" "$rss" "$fetched" "$repeated"
    rm -rf "$work/records.jsonl" "$work/state"

    if [ "$WGET2" != yes ]; then
        :
    elif command -v wget2 >/dev/null; then
        serve
        rm -rf "${wget2_dir:?}"/*
        read -r wall user sys rss < <(MEASURE_OK_STATUS=8 measure wget2 --recursive --level=inf --no-parent \
            --max-threads="$WGET2_THREADS" --quiet $WGET2_ARGS \
            --directory-prefix="$wget2_dir" "$seed")
        stop "wget2.$run"
        row "wget2 $(wget2 --version | head -n1 | awk '{print $3}'), $WGET2_THREADS threads" \
            "$wall" "$user" "$sys" "$rss" "$fetched" "$repeated"
    else
        echo "(wget2 not installed: apt-get install wget2)" >&2
    fi
done
