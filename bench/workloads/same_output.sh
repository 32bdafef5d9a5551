#!/usr/bin/env bash
# Runs every workload_* program in DIR at a tiny scale under glibc and under the preloaded
# LIB and fails unless each exits 0 both times with the same output (the workloads print a
# checksum of their work, so a difference means the allocator changed what a program did).
# Usage: same_output.sh DIR LIB [SCALE]
set -euo pipefail
dir=$1
lib=$2
scale=${3:-0.01}
failed=0
count=0
for program in "$dir"/workload_*; do
  name=$(basename "$program")
  [ "$name" = workload_measure ] && continue
  count=$((count + 1))
  if ! plain=$("$program" "$scale"); then
    echo "FAIL $name: exit status $? under glibc"; failed=1; continue
  fi
  if ! preloaded=$(LD_PRELOAD=$lib "$program" "$scale"); then
    echo "FAIL $name: exit status $? under $lib"; failed=1; continue
  fi
  if [ "$plain" != "$preloaded" ]; then
    echo "FAIL $name: glibc printed '$plain', the preload '$preloaded'"; failed=1; continue
  fi
  echo "ok   $name: $plain"
done
[ "$count" -ge 15 ] || { echo "FAIL: only $count workloads found in $dir"; exit 1; }
exit $failed
