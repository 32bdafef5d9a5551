#!/usr/bin/env bash
# compare.sh's table from a raw file (-i) with an extra memarena build's column (-x): the
# column is printed, and the "/ best peer" ratios of every column are against the four peers
# only, never against the extra build, which here is faster and leaner than all of them.
# Also: a malformed -x is refused with the form it expects. Needs no peer allocator.
# Usage: compare_table_test.sh COMPARE_SH LIB (LIB: any file, the path given to -x)
set -euo pipefail
compare=$1
lib=$2
raw=$(mktemp)
trap 'rm -f "$raw"' EXIT
failed=0
fail() { echo "FAIL: $*"; failed=1; }

# workload allocator wall_s rss_kib status cpu_s output_cksum scale; three rounds each.
# Best peer: tcmalloc, 0.80 s and 10240 KiB. memarena 0.60 s / 9216 KiB; memarena@old
# 0.40 s / 5120 KiB: counted as a peer it would become the best and double every ratio.
for round in 1 2 3; do
  cat >>"$raw" <<EOF
larson glibc 1.0 12288 0 1.00 42 1
larson jemalloc 0.9 11264 0 0.90 42 1
larson tcmalloc 0.8 10240 0 0.80 42 1
larson mimalloc 0.85 10752 0 0.85 42 1
larson memarena 0.6 9216 0 0.60 42 1
larson memarena@old 0.4 5120 0 0.40 42 1
EOF
done

table=$("$compare" -i "$raw" -w larson)
row() { grep -E "^\| larson \| $1[ |]" <<<"$table" || true; }
# The CPU and RSS ratio columns are the 8th and 9th fields of a |-split row.
ratios() { row "$1" | awk -F'|' '{ gsub(/ /, "", $8); gsub(/ /, "", $9); print $8, $9 }'; }

[ -n "$(row 'memarena@old')" ] || fail "no memarena@old row in:"$'\n'"$table"
[ "$(ratios tcmalloc)" = "1.00 1.00" ] || fail "tcmalloc, the best peer, is not 1.00 1.00: $(row tcmalloc)"
[ "$(ratios memarena)" = "0.75 0.90" ] || fail "memarena's ratios are not against tcmalloc: $(row memarena)"
[ "$(ratios 'memarena@old')" = "0.50 0.50" ] || fail "memarena@old's ratios: $(row 'memarena@old')"
grep -q "memarena@old (meets the bar)" <<<"$table" || fail "memarena@old carries no bar note"

for bad in "no_label_here" "bad label=$lib" "=$lib" "x=/nonexistent/libmemarena_malloc.so"; do
  if message=$("$compare" -i "$raw" -x "$bad" 2>&1); then
    fail "-x '$bad' was accepted"
  elif ! grep -q -- "-x" <<<"$message"; then
    fail "-x '$bad': the message does not name the option: $message"
  fi
done
"$compare" -i "$raw" -w larson -x "new=$lib" >/dev/null || fail "-x new=$lib was refused"
"$compare" -i "$raw" -x "a=$lib" -x "a=$lib" >/dev/null 2>&1 && fail "a label given twice was accepted"

[ "$failed" -eq 0 ] && echo "compare.sh -i/-x: table and ratios as expected"
exit "$failed"
