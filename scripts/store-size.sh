#!/usr/bin/env bash
# Store size against the demo API, as a user sees it: for store formats 1 and 2, at full
# speed and at 100 requests a second (format 2 then seals a block each second), two
# 3,000-request runs (seeds 1 and 2) into one new store; after each run, the store's bytes
# (without reports/) and the gzip -9 size of that run's HAR export.
# Build first: cargo build --release. Writes under a temporary directory it removes.
set -euo pipefail
probe="$(cd "$(dirname "$0")/.." && pwd)/target/release/probe"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
size() { if [ -e "$1" ]; then du -sb "$1" | cut -f1; else echo 0; fi; }
for format in 1 2; do
  for rate in 0 100; do
    store="$work/f$format-r$rate"
    limit=()
    if [ "$rate" != 0 ]; then limit=(--rate-limit "$rate"); fi
    for seed in 1 2; do
      PROBE_STORE_FORMAT=$format timeout 300 "$probe" demo --store "$store" --requests 3000 \
        --seed "$seed" --no-progress "${limit[@]}" > /dev/null 2>&1 || true
      total=$(du -sb --exclude=reports --exclude=writers "$store" | cut -f1)
      run=$("$probe" --store "$store" log --json | head -1 |
        python3 -c 'import json,sys; print(json.loads(sys.stdin.readline())["data"]["id"])')
      har=$("$probe" --store "$store" export "$run" --format har | gzip -9 | wc -c)
      echo "format $format, rate ${rate:-full}, after seed $seed: store $total B" \
        "(packs $(( $(size "$store/packs") + $(size "$store/packs-2") ))," \
        "index $(( $(size "$store/index.sqlite") + $(size "$store/index-2.sqlite") )), dicts $(size "$store/dicts"));" \
        "gzip -9 HAR of this run $har B"
    done
  done
done
