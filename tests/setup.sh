#!/usr/bin/env sh
# Installs what the test suite needs beyond a Rust toolchain, on a Debian or Ubuntu machine,
# and nothing that is there already:
#   redis-server and redis-cli  the shared-frontier tests start real servers (one, and a
#                               three-master cluster) on loopback ports of their own
#   warcio (Python)             tests/warc.rs checks the crawler's WARC files with it
#   openssl                     tests/names.rs makes a private CA and serves HTTPS with it
#   pywb (Python)               tests/warc.rs replays the crawler's archives in it
# Then: cargo test --workspace --locked
set -eu

as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; elif command -v sudo >/dev/null; then sudo "$@"; else
        echo "tests/setup.sh: run as root (or install sudo) to install: $*" >&2
        exit 1
    fi
}

if ! command -v redis-server >/dev/null || ! command -v redis-cli >/dev/null; then
    if ! command -v apt-get >/dev/null; then
        echo "tests/setup.sh: install Redis 7 or newer (redis-server and redis-cli) with your" \
            "system's package manager, then run this again" >&2
        exit 1
    fi
    echo "tests/setup.sh: installing redis-server" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq redis-server >/dev/null
fi
redis-server --version

if ! command -v openssl >/dev/null; then
    command -v apt-get >/dev/null || {
        echo "tests/setup.sh: install openssl with your system's package manager" >&2
        exit 1
    }
    echo "tests/setup.sh: installing openssl" >&2
    as_root apt-get update -qq
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openssl >/dev/null
fi

if command -v python3 >/dev/null && ! python3 -c 'import warcio' 2>/dev/null; then
    echo "tests/setup.sh: installing warcio (pip)" >&2
    python3 -m pip install --quiet --user warcio 2>/dev/null ||
        python3 -m pip install --quiet warcio 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages warcio || {
        # In CI (CI set) the WARC test needs it: fail here, where the cause is plain.
        [ -z "${CI:-}" ] || { echo "tests/setup.sh: cannot install warcio" >&2; exit 1; }
        echo "tests/setup.sh: warcio not installed; tests/warc.rs skips its warcio check" >&2
    }
fi

if command -v python3 >/dev/null && ! python3 -c 'import pywb.apps.cli' 2>/dev/null; then
    echo "tests/setup.sh: installing pywb (pip)" >&2
    python3 -m pip install --quiet --user pywb 2>/dev/null ||
        python3 -m pip install --quiet pywb 2>/dev/null ||
        python3 -m pip install --quiet --break-system-packages pywb || {
        [ -z "${CI:-}" ] || { echo "tests/setup.sh: cannot install pywb" >&2; exit 1; }
        echo "tests/setup.sh: pywb not installed; tests/warc.rs skips its replay test" >&2
    }
fi
