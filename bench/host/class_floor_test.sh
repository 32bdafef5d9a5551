#!/usr/bin/env bash
# class_floor on a trace whose answer is known. Two phases that never overlap: 64 blocks of
# 16 KiB (1 MiB), all freed, then 32 blocks of 32 KiB (1 MiB) and one of 36,000 B (class
# 36,864, whose span is 18 pages; as a run 5 pages, 40,960 B); one 100-byte block (class 112,
# whose 4-page span holds 292) stays live throughout. So the peak in use is 1.04 MiB (phase
# two), while a heap of classes holds every class's peak (2.04 MiB; 2.17 in whole spans); as
# page runs (bounds of 8 KiB and below) the two phases share their memory. Thread 2 makes
# phase two and then a third like the first: apart, each thread holds its own 1 MiB of 16 KiB
# objects.
# Also: a free of a block the trace never allocated is skipped and counted, a second
# allocation at a live block's address (its free missing) is counted and warned about, and a
# missing file or a wrong command line fails with a message.
# Usage: class_floor_test.sh CLASS_FLOOR
set -euo pipefail
tool=$1
trace=$(mktemp)
trap 'rm -f "$trace"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

{
  echo "Thread,Time,Action,Pointer,Size,Stream"
  echo "1,00:00:00.000001,free,0xdead0,64,0"
  echo "1,00:00:00.000002,allocate,0x10,100,0"
  for i in $(seq 1 64); do printf '1,00:00:00.000003,allocate,0x%x,16384,0\n' $((i << 20)); done
  for i in $(seq 1 64); do printf '1,00:00:00.000004,free,0x%x,16384,0\n' $((i << 20)); done
  for i in $(seq 1 32); do printf '2,00:00:00.000005,allocate,0x%x,32768,0\n' $((i << 24)); done
  echo "2,00:00:00.000005,allocate,0x20,36000,0"
  for i in $(seq 1 32); do printf '2,00:00:00.000006,free,0x%x,32768,0\n' $((i << 24)); done
  echo "2,00:00:00.000006,free,0x20,36000,0"
  for i in $(seq 1 64); do printf '2,00:00:00.000007,allocate,0x%x,16384,0\n' $((i << 20)); done
  for i in $(seq 1 64); do printf '2,00:00:00.000008,free,0x%x,16384,0\n' $((i << 20)); done
  echo "1,00:00:00.000009,allocate,0x40,100,0"
  echo "1,00:00:00.000009,allocate,0x40,100,0"
  echo "1,00:00:00.000010,free,0x40,100,0"
} >"$trace"

out=$("$tool" "$trace")
echo "$out"
# The row of a bound: class peaks, in whole spans, run peak, floor, floor / peak in use.
row() { awk -v b="$1" '$1 == b && ($2 == "KiB" || $2 == "KiB*") { print $3, $4, $5, $6, $7 }' <<<"$out"; }

grep -q "^164 allocations (1 frees of blocks allocated before the trace, skipped)$" <<<"$out" ||
  fail "allocation or skipped-free count"
grep -q "^warning: 1 allocations at the address of a live block: the trace lacks its free" <<<"$out" ||
  fail "the allocation at a live block's address is not reported"
grep -q "^peak in use at the host's sizes: 1.04 MiB$" <<<"$out" || fail "peak in use"
[ "$(row 64)" = "2.04 2.17 0.00 2.17 2.10" ] || fail "64 KiB (the host's bound): $(row 64)"
[ "$(row 32)" = "2.00 2.03 0.04 2.07 2.00" ] || fail "32 KiB: 32 KiB requests are class objects, 36,000 B a 5-page run: $(row 32)"
[ "$(row 16)" = "1.00 1.03 1.04 2.07 2.00" ] || fail "16 KiB: the 32 KiB blocks are runs: $(row 16)"
[ "$(row 8)" = "0.00 0.03 1.04 1.07 1.03" ] || fail "8 KiB: both phases share their runs: $(row 8)"
[ "$(row 4)" = "0.00 0.03 1.04 1.07 1.03" ] || fail "4 KiB: $(row 4)"
grep -q "^per thread: 2 threads' classes apart, in whole spans: 3.17 MiB (+ runs 0.00)$" <<<"$out" ||
  fail "per thread"

if "$tool" /nonexistent/trace.csv 2>/dev/null; then fail "a missing trace succeeded"; fi
[ "$("$tool" /nonexistent/trace.csv 2>&1 >/dev/null || true)" != "" ] || fail "a missing trace said nothing"
set +e
usage=$("$tool" 2>&1 >/dev/null)
[ $? -eq 2 ] || fail "no argument is not a usage error (2)"
set -e
grep -q "trace_file=PATH" <<<"$usage" || fail "the usage does not say how to record a trace: $usage"
exit $failed
