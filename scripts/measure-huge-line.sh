#!/usr/bin/env bash
# One Claude Code transcript whose user message is a single line of SIZE_MB megabytes
# (default 300), issue 43 finding 4. Measures:
#  1. `skills ingest` of it: the RSS high-water mark and wall time, from
#     `/usr/bin/time -v`;
#  2. `skills serve` (stdio) watching a folder the transcript is moved into: the peak
#     RSS of its background import child and of serve itself (`VmHWM` in
#     `/proc/PID/status`), and `search_conversations` calls made every 200 ms while
#     the import runs — how many, and how long they took.
# Usage (serve's stderr goes to $SERVE_LOG when set):
#   scripts/measure-huge-line.sh [path/to/skills] [SIZE_MB]
set -euo pipefail
bin=${1:-${CARGO_TARGET_DIR:-target}/release/skills}
size_mb=${2:-300}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
session=5e0d7a11-0000-4000-8000-000000000300
python3 - "$work/$session.jsonl" "$size_mb" "$session" <<'PY'
import json, sys
path, size_mb, session = sys.argv[1], int(sys.argv[2]), sys.argv[3]
# Words and escaped newlines, as a pasted log looks in a transcript.
chunk = "log line with some words in it\n" * 32
text = "zebrafinch " + chunk * (size_mb * 1024 * 1024 // len(chunk))
head = {"parentUuid": None, "isSidechain": False, "userType": "external",
        "cwd": "/tmp/huge", "sessionId": session, "version": "2.0.14", "type": "user",
        "uuid": "00000000-0000-4000-8000-0000000003a1",
        "timestamp": "2025-03-10T09:14:02.118Z"}
with open(path, "w") as f:
    line = json.dumps(dict(head, message={"role": "user", "content": "MARK"}))
    before, after = line.split('"MARK"')
    f.write(before)
    f.write(json.dumps(text))
    f.write(after + "\n")
PY
ls -l "$work/$session.jsonl" >&2
echo "== skills ingest"
SKILLS_DATA_DIR="$work/data" /usr/bin/time -v "$bin" ingest --quiet "$work/$session.jsonl" \
    2> "$work/time.txt" || { cat "$work/time.txt" >&2; exit 1; }
grep -E "Maximum resident set size|Elapsed \(wall clock\)" "$work/time.txt"

echo "== skills serve, the transcript moved into a watched folder"
mkdir -p "$work/home" "$work/watched"
env -u CLAUDE_CONFIG_DIR -u CODEX_HOME -u COPILOT_HOME -u SKILLS_CHATGPT_EXPORT \
    -u SKILLS_CLAUDE_AI_EXPORT -u SKILLS_WATCH \
    HOME="$work/home" SKILLS_DATA_DIR="$work/serve-data" SKILLS_EMBEDDER=none \
    python3 - "$bin" "$work/watched" "$work/$session.jsonl" <<'PY'
import json, os, subprocess, sys, time
bin, watched, huge = sys.argv[1:4]
# A small session first: the store exists (and its index is current) before the import.
small = {"parentUuid": None, "isSidechain": False, "userType": "external", "cwd": "/w",
         "sessionId": "s1", "version": "2.0.14", "type": "user", "uuid": "u1",
         "timestamp": "2025-03-10T09:00:00.000Z",
         "message": {"role": "user", "content": "Where do marmoset monkeys sleep?"}}
with open(os.path.join(watched, "s1.jsonl"), "w") as f:
    f.write(json.dumps(small) + "\n")
serve = subprocess.Popen([bin, "serve", "--watch", watched], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=open(os.environ.get("SERVE_LOG", os.devnull), "w"), text=True)
ids = iter(range(1, 10**9))
def rpc(method, params=None, notify=False):
    msg = {"jsonrpc": "2.0", "method": method}
    if params is not None:
        msg["params"] = params
    if not notify:
        msg["id"] = next(ids)
    serve.stdin.write(json.dumps(msg) + "\n")
    serve.stdin.flush()
    if notify:
        return None
    while True:
        reply = json.loads(serve.stdout.readline())
        if reply.get("id") == msg["id"]:
            return reply
def search(term):
    r = rpc("tools/call", {"name": "search_conversations", "arguments": {"term": term}})
    return "".join(c.get("text", "") for c in r["result"]["content"])
def status(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            return {l.split(":")[0]: l.split(":")[1].strip() for l in f}
    except OSError:
        return {}
def kb(pid):
    return int(status(pid).get("VmHWM", "0 kB").split()[0])
def children(pid):
    # Of every thread: the import child is started from one of serve's threads.
    out = []
    for task in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{task}/children") as f:
                out += [int(c) for c in f.read().split()]
        except OSError:
            pass
    return out
rpc("initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "measure", "version": "0"}})
rpc("notifications/initialized", notify=True)
started = time.time()
while "marmoset" not in search("marmoset") or children(serve.pid):
    assert time.time() - started < 120, "the small session was not imported"
    time.sleep(0.2)
# The huge transcript appears at once (a rename), as one file to import.
os.rename(huge, os.path.join(watched, os.path.basename(huge)))
moved = time.time()
child_peak, child_seen, calls = 0, None, []
while True:
    for c in children(serve.pid):
        child_seen = child_seen or time.time()
        child_peak = max(child_peak, kb(c))
    if child_seen and not children(serve.pid):
        break
    assert time.time() - moved < 300, f"the import did not end (child seen: {child_seen is not None}, found: {'zebrafinch' in search('zebrafinch')})"
    t = time.time()
    answer = search("marmoset")
    took = time.time() - t
    if child_seen and children(serve.pid):
        calls.append((took, "marmoset" in answer))
    time.sleep(0.2)
ended = time.time()
found = "zebrafinch" in search("zebrafinch")
print(f"import child: peak RSS >= {child_peak / 1024:.0f} MB (sampled VmHWM), "
      f"ran ~{ended - child_seen:.1f} s")
print(f"serve: peak RSS {kb(serve.pid) / 1024:.0f} MB (VmHWM)")
if calls:
    times = sorted(t for t, _ in calls)
    print(f"calls during the import: {len(calls)}, answered {sum(ok for _, ok in calls)}, "
          f"median {times[len(times) // 2] * 1000:.0f} ms, max {times[-1] * 1000:.0f} ms")
else:
    print("calls during the import: none completed while it ran")
print(f"the huge message found after the import: {found}")
serve.stdin.close()
serve.wait(timeout=30)
PY
