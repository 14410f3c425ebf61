# shellcheck shell=bash
# Sourced by the other scripts: sets up the build environment once per machine.
#
# - SKILLS_CACHE (default ~/.cache/skills): downloads and the cargo target directory,
#   kept outside the clone so rebuilds are incremental.
# - DUCKDB_LIB_DIR: a prebuilt libduckdb.so (DuckDB 1.5.6, MIT) from the npm package
#   @duckdb/node-bindings-linux-x64, matching crate duckdb =1.10506.0. Compiling DuckDB
#   from source (cargo feature `bundled`) takes about an hour on 2 cores.
set -euo pipefail

: "${SKILLS_CACHE:=$HOME/.cache/skills}"
export SKILLS_CACHE
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$SKILLS_CACHE/target}"

duckdb_version="1.5.6-r.1"
if [ -z "${DUCKDB_LIB_DIR:-}" ]; then
  DUCKDB_LIB_DIR="$SKILLS_CACHE/duckdb-$duckdb_version"
  if [ ! -f "$DUCKDB_LIB_DIR/libduckdb.so" ]; then
    echo "fetching libduckdb.so ($duckdb_version) from the npm registry..." >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "@duckdb/node-bindings-linux-x64@$duckdb_version" >/dev/null)
    tar -xzf "$tmp"/duckdb-node-bindings-linux-x64-*.tgz -C "$tmp"
    mkdir -p "$DUCKDB_LIB_DIR"
    mv "$tmp/package/libduckdb.so" "$tmp/package/LICENSE" "$DUCKDB_LIB_DIR/"
    rm -rf "$tmp"
  fi
fi
export DUCKDB_LIB_DIR
