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

# The per-round column: round by round against that round's best peer, then the median.
# trees' rounds: tcmalloc 0.40, 0.80, 1.00 s; memarena 0.90, 0.72, 0.95 (2.25, 0.90, 0.95
# of tcmalloc's): per round 0.95, where the ratio of the medians (0.90 / 0.80) is 1.12.
for pair in "0.40 0.90" "0.80 0.72" "1.00 0.95"; do
  read -r tc ma <<<"$pair"
  cat >>"$raw" <<EOF
trees glibc 2.0 12288 0 2.00 7 1
trees jemalloc 2.0 11264 0 2.00 7 1
trees tcmalloc $tc 10240 0 $tc 7 1
trees mimalloc 2.0 10752 0 2.00 7 1
trees memarena $ma 9216 0 $ma 7 1
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

per_round() { "$compare" -i "$raw" -w trees | grep -E "^\| trees \| $1[ |]" | awk -F'|' '{ gsub(/ /, "", $8); gsub(/ /, "", $11); print $8, $11 }'; }
[ "$(per_round memarena)" = "1.12 0.95" ] || fail "trees, memarena: CPU ratio of medians and per round: $(per_round memarena)"
[ "$(per_round tcmalloc)" = "1.00 1.00" ] || fail "trees, tcmalloc: $(per_round tcmalloc)"
[ "$(row memarena | awk -F'|' '{ gsub(/ /, "", $11); print $11 }')" = "0.75" ] ||
  fail "larson's identical rounds give the same ratio per round: $(row memarena)"

[ "$failed" -eq 0 ] && echo "compare.sh -i/-x: table and ratios as expected"
exit "$failed"
