# shellcheck shell=bash
# Sourced by the other scripts: sets up the build environment once per machine.
#
# - SKILLS_CACHE (default ~/.cache/skills): downloads and the cargo target directory,
#   kept outside the clone so rebuilds are incremental.
# - DUCKDB_LIB_DIR: a prebuilt libduckdb.so (DuckDB 1.5.6, MIT) from the npm package
#   @duckdb/node-bindings-linux-x64 (-linux-arm64, -darwin-arm64, -darwin-x64 with
#   libduckdb.dylib on those machines; only linux-x64 is built and tested here),
#   matching crate duckdb =1.10506.0. Compiling DuckDB from source (cargo feature
#   `bundled`) takes about an hour on 2 cores.
set -euo pipefail

: "${SKILLS_CACHE:=$HOME/.cache/skills}"
export SKILLS_CACHE
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$SKILLS_CACHE/target}"

duckdb_version="1.5.6-r.1"
case "$(uname -sm)" in
  "Linux x86_64") duckdb_platform=linux-x64 DUCKDB_LIB_FILE=libduckdb.so ;;
  "Linux aarch64") duckdb_platform=linux-arm64 DUCKDB_LIB_FILE=libduckdb.so ;;
  "Darwin arm64") duckdb_platform=darwin-arm64 DUCKDB_LIB_FILE=libduckdb.dylib ;;
  "Darwin x86_64") duckdb_platform=darwin-x64 DUCKDB_LIB_FILE=libduckdb.dylib ;;
  *) echo "env.sh: no prebuilt libduckdb for $(uname -sm); set DUCKDB_LIB_DIR or build with --features bundled" >&2
     duckdb_platform="" DUCKDB_LIB_FILE=libduckdb.so ;;
esac
if [ -z "${DUCKDB_LIB_DIR:-}" ] && [ -n "$duckdb_platform" ]; then
  DUCKDB_LIB_DIR="$SKILLS_CACHE/duckdb-$duckdb_version"
  [ "$duckdb_platform" = linux-x64 ] || DUCKDB_LIB_DIR="$DUCKDB_LIB_DIR-$duckdb_platform"
  if [ ! -f "$DUCKDB_LIB_DIR/$DUCKDB_LIB_FILE" ]; then
    echo "fetching $DUCKDB_LIB_FILE ($duckdb_version, $duckdb_platform) from the npm registry..." >&2
    tmp=$(mktemp -d)
    (cd "$tmp" && npm pack --silent "@duckdb/node-bindings-$duckdb_platform@$duckdb_version" >/dev/null)
    tar -xzf "$tmp"/duckdb-node-bindings-"$duckdb_platform"-*.tgz -C "$tmp"
    mkdir -p "$DUCKDB_LIB_DIR"
    mv "$tmp/package/$DUCKDB_LIB_FILE" "$tmp/package/LICENSE" "$DUCKDB_LIB_DIR/"
    rm -rf "$tmp"
  fi
fi
export DUCKDB_LIB_DIR DUCKDB_LIB_FILE
