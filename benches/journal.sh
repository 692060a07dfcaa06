#!/usr/bin/env bash
# What the journal costs a crawl: the crawl benchmark (benches/crawl.sh, 100,000 pages,
# config/local.toml) with --state-dir, with the journal (the default, synced every 100 ms)
# and without it (--journal-sync-interval 0), in alternating runs (A B A B ...) so that
# drift on the machine hits both alike. Prints one table row per run.
#
#   benches/journal.sh             # 3 runs of each
#   RUNS=5 PAGES=20000 benches/journal.sh
set -euo pipefail
cd "$(dirname "$0")/.."
RUNS=${RUNS:-3}
echo "| crawler | wall | pages/s | CPU per page | peak RSS | expected pages fetched | repeated fetches |"
echo "|---|---|---|---|---|---|---|"
for _ in $(seq "$RUNS"); do
    CRAWLER_ARGS='--state-dir @STATE@' NAME='--state-dir, journal every 100 ms' WGET2=no \
        benches/crawl.sh | tail -n +3
    CRAWLER_ARGS='--state-dir @STATE@ --journal-sync-interval 0' NAME='--state-dir, no journal' \
        WGET2=no benches/crawl.sh | tail -n +3
done
