#!/usr/bin/env bash
# Whole-process comparison of memarena against glibc, jemalloc, tcmalloc (gperftools) and
# mimalloc. Runs every program of bench/workloads under each allocator via LD_PRELOAD,
# alternating between allocators (the order rotates every repetition, so drift on a busy
# machine hits all of them alike), and prints per workload the median wall time, the median
# CPU time (user + system: what a loaded machine disturbs least, so the time ratio is taken
# on it), the median peak RSS and the ratio of each median to the best of the four peers.
#
# Usage: bench/compare.sh [-b BUILD_DIR] [-r REPS] [-s SCALE] [-w "WORKLOAD[:SCALE] ..."] [-o FILE]
#   -b  build directory (default: build; configured here if it has no CMakeCache.txt)
#   -r  repetitions per allocator and workload (default 5)
#   -s  work scale passed to every workload (default: each workload's own, see
#       default_scale below: 1, except large_buffers 0.1)
#   -w  workloads, each optionally with its scale (default: all of bench/workloads)
#   -o  also write the raw measurements (workload allocator seconds rss_kib status cpu
#       output_cksum) to FILE
#   -i  print the table of such a FILE again, without running anything
# Every workload prints a checksum of its work; the table says when the allocators' outputs
# differ (they must not: the same work under every allocator).
# Installs libjemalloc-dev, libgoogle-perftools-dev and libmimalloc-dev with apt-get when
# one is missing (as root, or through sudo).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=build
reps=5
scale=""
workloads="larson larson_fixed churn prodcons realloc_grow mixed_heap testsuite trees false_sharing
  large_buffers factoring minimizer random_slots live_set_1t live_set_2t"
raw_out=""
raw_in=""
while getopts "b:r:s:w:o:i:h" opt; do
  case $opt in
    b) build=$OPTARG ;;
    r) reps=$OPTARG ;;
    s) scale=$OPTARG ;;
    w) workloads=$OPTARG ;;
    o) raw_out=$OPTARG ;;
    i) raw_in=$OPTARG ;;
    *) sed -n '2,22p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done

# The scale at which a workload runs about 0.5-2 s under the fastest allocators here, so a
# full run (15 workloads, 5 allocators, 5 rounds) takes about 10 minutes on 2 cores.
default_scale() {
  case $1 in
    large_buffers) echo 0.1 ;;  # 200 steps of 5-25 MiB zero-filled buffers, ~2 s
    *) echo 1 ;;
  esac
}

# "name:scale" -> name and its scale (-s, then the name's own scale, then default_scale).
workload_name() { echo "${1%%:*}"; }
workload_scale() {
  if [[ $1 == *:* ]]; then echo "${1#*:}"; elif [ -n "$scale" ]; then echo "$scale"; else
    default_scale "$1"; fi
}

# Path of the first of the given sonames the dynamic linker knows, or nothing.
find_lib() {
  local name path
  for name in "$@"; do
    path=$(ldconfig -p | awk -v n="$name" '$1 == n { print $NF; exit }')
    if [ -n "$path" ]; then echo "$path"; return; fi
  done
}

peers_present() {
  [ -n "$(find_lib libjemalloc.so.2)" ] && [ -n "$(find_lib libtcmalloc_minimal.so.4)" ] &&
    [ -n "$(find_lib libmimalloc.so.2 libmimalloc.so)" ]
}

names=(glibc jemalloc tcmalloc mimalloc memarena)
if [ -n "$raw_in" ]; then
  raw=$raw_in
  first=$(workload_name "$(echo $workloads | cut -d' ' -f1)")
  reps=$(awk -v w="$first" '$1 == w && $2 == "glibc"' "$raw" | wc -l)
else
  if ! peers_present; then
    echo "compare.sh: installing the peer allocators (jemalloc, gperftools, mimalloc)" >&2
    sudo=""
    [ "$(id -u)" -ne 0 ] && sudo=sudo
    $sudo apt-get update -qq
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      libjemalloc-dev libgoogle-perftools-dev libmimalloc-dev >&2
    peers_present || { echo "compare.sh: a peer allocator is still missing" >&2; exit 1; }
  fi

  libs=(
    ""
    "$(find_lib libjemalloc.so.2)"
    "$(find_lib libtcmalloc_minimal.so.4)"
    "$(find_lib libmimalloc.so.2 libmimalloc.so)"
    "$(cd "$root" && realpath -m "$build")/src/override/libmemarena_malloc.so"
  )

  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEMARENA_BUILD_TESTS=OFF >&2
  fi
  cmake --build "$build" -j"$(nproc)" --target memarena_malloc memarena_workloads >&2
  bin=$(realpath "$build")/bench/workloads

  raw=$(mktemp)
  out=$(mktemp)
  trap 'rm -f "$raw" "$out"' EXIT
  n=${#names[@]}
  for ((rep = 0; rep < reps; rep++)); do
    for spec in $workloads; do
      w=$(workload_name "$spec")
      for ((k = 0; k < n; k++)); do
        i=$(((k + rep) % n))
        preload=()
        [ -n "${libs[$i]}" ] && preload=(--preload "${libs[$i]}")
        read -r secs rss status cpu < <("$bin/workload_measure" "${preload[@]}" --stdout "$out" \
          -- "$bin/workload_$w" "$(workload_scale "$spec")")
        echo "$w ${names[$i]} $secs $rss $status $cpu $(cksum <"$out" | cut -d' ' -f1)" >>"$raw"
        printf '\r%s rep %d/%d %-14s %-9s %6.2f s' "compare.sh:" $((rep + 1)) "$reps" "$w" \
          "${names[$i]}" "$cpu" >&2
      done
    done
  done
  echo >&2
  [ -n "$raw_out" ] && cp "$raw" "$raw_out"
fi

scales=""
for spec in $workloads; do scales="$scales $(workload_name "$spec"):$(workload_scale "$spec")"; done
order=""
for spec in $workloads; do order="$order $(workload_name "$spec")"; done
echo "bench/compare.sh -r $reps ($(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), $(date -u +%Y-%m-%d), medians of $reps rotated rounds)"
echo "scales:$scales"
echo
echo "| workload | allocator | wall s | CPU s | peak RSS MiB | CPU / best peer | RSS / best peer |"
echo "|---|---|---:|---:|---:|---:|---:|"
sort -k1,1 -k2,2 -k3,3n "$raw" | awk -v order="$order" -v allocs="${names[*]}" '
  function median(list,   a, m, t, i, j) {
    m = split(list, a, " ")
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  { key = $1 SUBSEP $2; secs[key] = secs[key] " " $3; rss[key] = rss[key] " " $4
    cpu[key] = cpu[key] " " $6
    if ($5 != 0) failed[key] = 1
    # The outputs of a workload must match across allocators and rounds.
    if ($7 != "" && $5 == 0) {
      if (!($1 in output)) output[$1] = $7
      else if (output[$1] != $7 && index(differs[$1] " ", " " $2 " ") == 0) differs[$1] = differs[$1] " " $2
    } }
  END {
    nw = split(order, ws, " "); na = split(allocs, as, " ")
    for (w = 1; w <= nw; w++) {
      best_t = -1; best_r = -1
      for (a = 1; a <= na; a++) {
        key = ws[w] SUBSEP as[a]
        wall[a] = median(secs[key]); t[a] = median(cpu[key]); r[a] = median(rss[key]) / 1024
        if (as[a] != "memarena" && !(key in failed)) {
          if (best_t < 0 || t[a] < best_t) best_t = t[a]
          if (best_r < 0 || r[a] < best_r) best_r = r[a]
        }
      }
      for (a = 1; a <= na; a++) {
        key = ws[w] SUBSEP as[a]
        note = (key in failed) ? " FAILED" : ""
        if (as[a] == "memarena" && !(key in failed))
          note = (t[a] <= best_t && r[a] <= 1.1 * best_r) ? " (meets the bar)" : " (misses the bar)"
        printf "| %s | %s%s | %.3f | %.3f | %.1f | %.2f | %.2f |\n", ws[w], as[a], note, wall[a],
               t[a], r[a], t[a] / best_t, r[a] / best_r
      }
    }
    for (w = 1; w <= nw; w++) {
      if (ws[w] in differs) printf "\nOUTPUTS DIFFER: %s printed another result under%s\n", ws[w], differs[ws[w]]
    }
  }'
