# What the benchmark scripts share, sourced (not run) from the repository's root: $work, a
# scratch directory, and $server, the site's process id while it runs, both cleaned up at exit
# (a script with more to stop sets its own trap after), and the release build in $bin.

work=$(mktemp -d)
server=
trap 'if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; fi; rm -rf "$work"' EXIT
bin=target/release

# Builds the crawler and testweb in release mode.
build() {
    cargo build --release --quiet --bin crawler --bin testweb -p politecrawl -p politecrawl-testweb
}

# Stops the site (testweb); sets $fetched, $expected and $repeated from the summary it wrote
# to FILE as it stopped.
stop_site() { # FILE
    kill -TERM "$server"
    wait "$server" || true
    server=
    read -r fetched expected repeated < <(sed -n \
        's/^expected pages fetched: \([0-9]*\) of \([0-9]*\); repeated fetches: \([0-9]*\).*/\1 \2 \3/p' \
        "$1")
}

# Runs a command under GNU time, its output dropped and its stderr kept in $work/stderr;
# prints "wall user sys maxrss_kb". An exit status other than 0 and $MEASURE_OK_STATUS (wget2
# exits with 8 when a link answered 404) shows the stderr and fails.
measure() { # COMMAND...
    local status=0
    /usr/bin/time -f '%e %U %S %M' -o "$work/time" "$@" >/dev/null 2>"$work/stderr" || status=$?
    if [ "$status" -ne 0 ] && [ "$status" -ne "${MEASURE_OK_STATUS:-0}" ]; then
        cat "$work/stderr" >&2
        return 1
    fi
    tail -n1 "$work/time"
}

# Waits until FILE is not empty, up to TENTHS tenths of a second; fails if it stays empty.
await_file() { # FILE TENTHS
    for _ in $(seq "$2"); do
        [ -s "$1" ] && return
        sleep 0.1
    done
    echo "$1 stayed empty" >&2
    return 1
}
