#!/usr/bin/env bash
# Regenerates the figures in docs/ that come from the memarena tool, so a page never shows
# numbers an older build produced: each block between "<!-- figures:NAME BEGIN -->" and
# "<!-- figures:NAME END -->" is replaced by a fresh run of its command.
# Usage: scripts/docs_figures.sh [BUILD_DIR]   (default build; configured here if missing)
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
[[ -f $build/CMakeCache.txt ]] || cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo
cmake --build "$build" -j"$(nproc)" --target memarena_cli
cli=$build/tools/memarena

# replace_block FILE NAME COMMAND...: the block NAME in FILE becomes "$ COMMAND" and its output.
replace_block() {
  local file=$1 name=$2
  shift 2
  local body
  body=$(mktemp)
  {
    echo '  ```'
    echo "  \$ memarena ${*:2}"
    "$@" | sed 's/^/  /'
    echo '  ```'
  } > "$body"
  python3 - "$file" "$name" "$body" <<'PY'
import sys
path, name, body_path = sys.argv[1:4]
text = open(path).read()
begin = f"<!-- figures:{name} BEGIN"
end = f"<!-- figures:{name} END -->"
start = text.index(begin)
start = text.index("\n", start) + 1
stop = text.index(end)
text = text[:start] + open(body_path).read() + text[stop:]
open(path, "w").write(text)
PY
  rm -f "$body"
  echo "docs_figures: $file: $name regenerated"
}

replace_block docs/observability.md compare "$cli" compare data/traces/recorded_python.csv --no-progress
