#!/usr/bin/env bash
# Peak memory of `skills ingest` on one Claude Code transcript whose user message is a
# single line of SIZE_MB megabytes (default 300): the RSS high-water mark of the import
# child, from `/usr/bin/time -v` (issue 43, finding 4). Usage:
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
text = chunk * (size_mb * 1024 * 1024 // len(chunk))
head = {"parentUuid": None, "isSidechain": False, "userType": "external",
        "cwd": "/home/dev/huge", "sessionId": session, "version": "2.0.14", "type": "user",
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
SKILLS_DATA_DIR="$work/data" /usr/bin/time -v "$bin" ingest --quiet "$work/$session.jsonl" \
    2> "$work/time.txt" || { cat "$work/time.txt" >&2; exit 1; }
grep -E "Maximum resident set size|Elapsed \(wall clock\)" "$work/time.txt"
