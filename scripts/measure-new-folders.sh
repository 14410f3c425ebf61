#!/usr/bin/env bash
# The watcher with many new folders: 10,000 folders × 2 sessions (20,000 files) written
# under ~/.claude/projects while `skills serve` runs; prints how many messages were
# stored and how long after writing began (tests/watch_new_folders.rs with bigger
# numbers; the test suite runs 100 × 2).
# Usage: scripts/measure-new-folders.sh [FOLDERS (default 10000)] [FILES_PER_FOLDER (default 2)]
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/env.sh
NEW_FOLDERS="${1:-10000}" FILES_PER_FOLDER="${2:-2}" \
  cargo test --release --test watch_new_folders -- --nocapture
