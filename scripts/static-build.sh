#!/usr/bin/env bash
# Builds probe as a Linux binary that needs no shared library (glibc's C runtime linked in,
# crt-static, the `dist` profile, the target of this machine's toolchain) and runs
# `probe demo` with it: the demo exits 1 when it finds its planted faults; anything else,
# or a binary that still names an interpreter or a shared library, fails this script.
# Takes as long as a `dist` build (8-9 minutes from nothing on 2 cores).
#   bash scripts/static-build.sh [OUT_DIR]
set -euo pipefail
cd "$(dirname "$0")/.."
target=$(rustc -vV | sed -n 's/^host: //p')
case "$target" in
  *-linux-gnu) ;;
  *) echo "static-build: $target is not a linux-gnu target; the release workflow builds the others"; exit 1 ;;
esac
RUSTFLAGS="${RUSTFLAGS:-} -C target-feature=+crt-static" \
  cargo build --locked --profile dist --target "$target"
bin="$PWD/target/$target/dist/probe"
if readelf -l "$bin" | grep -q "INTERP" || readelf -d "$bin" | grep -q "(NEEDED)"; then
  readelf -d "$bin" | grep NEEDED || true
  echo "static-build: $bin is not static"; exit 1
fi
"$bin" --version
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
set +e
(cd "$dir" && "$bin" demo --requests 200 --no-progress)
code=$?
set -e
[ "$code" = 1 ] || { echo "static-build: probe demo exited $code, not 1"; exit 1; }
if [ $# -ge 1 ]; then mkdir -p "$1" && cp "$bin" "$1/"; fi
echo "static-build: $bin is static and runs the demo"
