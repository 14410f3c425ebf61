#!/usr/bin/env bash
# Runs the official MCP conformance suite (@modelcontextprotocol/conformance, server
# scenarios, baseline in scripts/mcp-conformance-baseline.yml; then the SEP-2640 skills
# scenarios, which must all pass) and MCP Inspector's CLI
# (`tools/list` over HTTP and stdio) against `skills serve`.
#
# Needs npm; installs Node 22 and both tools into "$SKILLS_CACHE/node22" on first use
# (about 30 s), then takes a few seconds. Exit status: 0 when every scenario matches
# the baseline and Inspector lists the tools.
#
#   CONFORMANCE_VERSION / INSPECTOR_VERSION  pin other versions of the tools
#   MCP_CONFORMANCE_OUT                      keep per-scenario results (checks.json) here
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh

conformance_version="${CONFORMANCE_VERSION:-0.2.0-alpha.12}"
inspector_version="${INSPECTOR_VERSION:-0.15.0}"
prefix="$SKILLS_CACHE/node22"
stamp="$prefix/.installed-$conformance_version-$inspector_version"
if [ ! -f "$stamp" ]; then
  echo "installing Node 22, conformance $conformance_version and inspector $inspector_version into $prefix..." >&2
  mkdir -p "$prefix"
  npm install --prefix "$prefix" --no-audit --no-fund --loglevel=error \
    node@22 "@modelcontextprotocol/conformance@$conformance_version" \
    "@modelcontextprotocol/inspector@$inspector_version" >&2
  touch "$stamp"
fi
export PATH="$prefix/node_modules/.bin:$PATH"
case "$(node --version)" in
  v2[2-9].*|v[3-9][0-9].*) ;;
  *) echo "error: Node >= 22 needed, found $(node --version)" >&2; exit 1 ;;
esac

cargo build --release --quiet
work=$(mktemp -d)
# A private copy: other builds sharing the target folder cannot swap it mid-run.
cp "$CARGO_TARGET_DIR/release/skills" "$work/skills"
export SKILLS_DIR="$PWD/skills" SKILLS_DATA_DIR="$work/data"
mkdir -p "$SKILLS_DATA_DIR"

"$work/skills" serve --http 127.0.0.1:0 2>"$work/serve.log" &
server=$!
trap 'kill "$server" 2>/dev/null || true; rm -rf "$work"' EXIT
url=""
for _ in $(seq 100); do
  url=$(grep -o 'http://[^ ]*' "$work/serve.log" || true)
  [ -n "$url" ] && break
  sleep 0.1
done
[ -n "$url" ] || { cat "$work/serve.log" >&2; echo "error: serve did not start" >&2; exit 1; }
echo "server: $url" >&2

status=0
conformance server --url "$url" --suite active \
  --expected-failures scripts/mcp-conformance-baseline.yml \
  --output-dir "${MCP_CONFORMANCE_OUT:-$work/results}" || status=1

# The SEP-2640 (Skills extension) scenarios are not in the active suite: run them over an
# exported copy of the skills, whose `references/` subfolders the directory scenario needs.
"$work/skills" export --agent-skills "$work/exported" >/dev/null
"$work/skills" --skills-dir "$work/exported" serve --http 127.0.0.1:0 2>"$work/serve-exported.log" &
exported_server=$!
trap 'kill "$server" "$exported_server" 2>/dev/null || true; rm -rf "$work"' EXIT
exported_url=""
for _ in $(seq 100); do
  exported_url=$(grep -o 'http://[^ ]*' "$work/serve-exported.log" || true)
  [ -n "$exported_url" ] && break
  sleep 0.1
done
for scenario in sep-2640-skills-enumeration sep-2640-skills-manifest sep-2640-skills-directory; do
  echo "== conformance: $scenario" >&2
  conformance server --url "$exported_url" --scenario "$scenario" || status=1
done

echo "== inspector: tools/list over HTTP" >&2
mcp-inspector --cli "$url" --transport http --method tools/list >"$work/tools-http.json" || status=1
echo "== inspector: tools/list over stdio" >&2
mcp-inspector --cli -e "SKILLS_DIR=$SKILLS_DIR" -e "SKILLS_DATA_DIR=$SKILLS_DATA_DIR" \
  "$work/skills" serve --method tools/list >"$work/tools-stdio.json" || status=1
for f in "$work"/tools-*.json; do
  node -e '
    const tools = JSON.parse(require("fs").readFileSync(process.argv[1], "utf8")).tools;
    if (!tools.length || tools.some(t => t.inputSchema.type !== "object")) process.exit(1);
    console.error(`${process.argv[1].split("/").pop()}: ${tools.map(t => t.name).join(", ")}`);
  ' "$f" || { echo "error: unexpected tools/list in $f" >&2; status=1; }
done
exit "$status"
