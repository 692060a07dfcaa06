#!/usr/bin/env sh
# Installs what the test suite needs beyond a Rust toolchain, on a Debian or Ubuntu machine,
# and nothing that is there already:
#   redis-server and redis-cli  the shared-frontier tests start real servers (one, and a
#                               three-master cluster) on loopback ports of their own
#   warcio (Python)             tests/warc.rs checks the crawler's WARC files with it
#   openssl                     tests/names.rs makes a private CA and serves HTTPS with it
#   pywb, cdxj-indexer, wacz   tests/warc.rs replays the crawler's archives in pywb,
#     (Python)                  compares its CDXJ index with pywb's indexer's, and validates
#                               its WACZ files with py-wacz
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

# Installs Python package $1 (importable as $2) with pip, unless it is there; $3 says what
# skips without it. In CI (CI set) the tests need it: fail here, where the cause is plain.
pip_install() {
    if command -v python3 >/dev/null && ! python3 -c "import $2" 2>/dev/null; then
        echo "tests/setup.sh: installing $1 (pip)" >&2
        python3 -m pip install --quiet --user "$1" 2>/dev/null ||
            python3 -m pip install --quiet "$1" 2>/dev/null ||
            python3 -m pip install --quiet --break-system-packages "$1" || {
            [ -z "${CI:-}" ] || { echo "tests/setup.sh: cannot install $1" >&2; exit 1; }
            echo "tests/setup.sh: $1 not installed; $3" >&2
        }
    fi
}
pip_install warcio warcio "tests/warc.rs skips its warcio check"
pip_install pywb pywb.apps.cli "tests/warc.rs skips its replay test"
pip_install cdxj-indexer cdxj_indexer.main "tests/warc.rs skips its index tests"
pip_install wacz wacz.main "tests/warc.rs skips its WACZ test"
