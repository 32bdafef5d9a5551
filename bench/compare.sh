#!/usr/bin/env bash
# Whole-process comparison of memarena against glibc, jemalloc, tcmalloc (gperftools) and
# mimalloc. Runs every program of bench/workloads under each allocator via LD_PRELOAD,
# alternating between allocators (the order rotates every repetition, so drift on a busy
# machine hits all of them alike, and runs backwards every other one: what a run costs can
# depend on the one before it, e.g. huge pages come fast from the memory its process freed a
# moment before, so no allocator always follows the same one, and a peer runs between any
# two memarena builds), and prints per workload the
# median wall time, the median CPU time (user + system: what a loaded machine disturbs
# least, so the time ratio is taken on it), the median peak RSS and the ratio of each median
# to the best of the four peers; last, the median over rounds of each round's CPU ratio to
# that round's best peer, which a machine whose speed drifts for minutes disturbs far less.
#
# Usage: bench/compare.sh [-b BUILD_DIR] [-r REPS] [-s SCALE] [-w "WORKLOAD[:SCALE] ..."] [-o FILE]
#                        [-i FILE] [-x LABEL=PATH ...]
#   -b  build directory (default: build; configured here if it has no CMakeCache.txt)
#   -r  repetitions per allocator and workload (default 5)
#   -s  work scale passed to every workload (default: each workload's own, see
#       default_scale below: 1, except large_buffers 0.1 and testsuite 3)
#   -w  workloads, each optionally with its scale (default: all of bench/workloads)
#   -o  also write the raw measurements (workload allocator seconds rss_kib status cpu
#       output_cksum scale) to FILE
#   -i  print the table of such a FILE again, without running anything
#   -x  LABEL=PATH: one more memarena build, column memarena@LABEL, rotated with the others
#       (PATH: its libmemarena_malloc.so or its build directory; LABEL: letters, digits,
#       . _ -; repeat -x for more). Ratios stay against the four peers only.
# Every workload prints a checksum of its work; the table says when the allocators' outputs
# differ (they must not: the same work under every allocator). When `startup` (one malloc,
# one printf) is among the workloads, the table also gives each peak RSS minus that
# allocator's start-up peak: what the heap itself cost, without the loaded libraries.
# Installs libjemalloc-dev, libgoogle-perftools-dev and libmimalloc-dev with apt-get when
# one is missing (as root, or through sudo).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
build=build
reps=5
scale=""
workloads="startup larson larson_fixed churn prodcons realloc_grow mixed_heap testsuite trees false_sharing
  large_buffers factoring minimizer random_slots live_set_1t live_set_2t"
raw_out=""
raw_in=""
extra_names=()
extra_libs=()
while getopts "b:r:s:w:o:i:x:h" opt; do
  case $opt in
    b) build=$OPTARG ;;
    r) reps=$OPTARG ;;
    s) scale=$OPTARG ;;
    w) workloads=$OPTARG ;;
    o) raw_out=$OPTARG ;;
    i) raw_in=$OPTARG ;;
    x) label=${OPTARG%%=*}
       path=${OPTARG#*=}
       if [[ $OPTARG != *=* || ! $label =~ ^[A-Za-z0-9._-]+$ ]]; then
         echo "compare.sh: -x '$OPTARG': expected LABEL=PATH, LABEL of letters, digits, . _ -" >&2
         exit 2
       fi
       [ -d "$path" ] && path=$path/src/override/libmemarena_malloc.so
       if [ ! -f "$path" ]; then
         echo "compare.sh: -x $label: no library at '$path' (a libmemarena_malloc.so or the" \
           "build directory holding src/override/libmemarena_malloc.so)" >&2
         exit 2
       fi
       if [[ " ${extra_names[*]} " == *" memarena@$label "* ]]; then
         echo "compare.sh: -x $label: the label is given twice; each build needs its own" >&2
         exit 2
       fi
       extra_names+=("memarena@$label")
       extra_libs+=("$(realpath "$path")") ;;
    *) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 2 ;;
  esac
done

# The scale at which a workload runs about 0.5-2 s under the fastest allocators here, so a
# full run (15 workloads, 5 allocators, 5 rounds) takes about 10 minutes on 2 cores.
default_scale() {
  case $1 in
    large_buffers) echo 0.1 ;;  # 200 steps of 5-25 MiB zero-filled buffers, ~2 s
    testsuite) echo 3 ;;        # 0.03-0.07 s at scale 1 outside glibc: too short to time
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

names=(glibc jemalloc tcmalloc mimalloc memarena "${extra_names[@]}")
if [ -n "$raw_in" ]; then
  raw=$raw_in
  # The extra builds' columns (-x) of that run, in the order they first appear.
  names=(glibc jemalloc tcmalloc mimalloc memarena $(awk '$2 ~ /^memarena@/ && !seen[$2]++ { print $2 }' "$raw"))
  reps=$(awk '$2 == "glibc" { n[$1]++ } END { m = 0; for (w in n) if (n[w] > m) m = n[w]; print m }' "$raw")
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
    "${extra_libs[@]}"
  )

  if [ ! -f "$build/CMakeCache.txt" ]; then
    cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEMARENA_BUILD_TESTS=OFF >&2
  fi
  cmake --build "$build" -j"$(nproc)" --target memarena_malloc memarena_workloads >&2
  bin=$(realpath "$build")/bench/workloads

  load_start=$(cut -d' ' -f1 /proc/loadavg)
  raw=$(mktemp)
  out=$(mktemp)
  trap 'rm -f "$raw" "$out"' EXIT
  n=${#names[@]}
  # The cycle the rounds rotate through puts a peer between any two memarena builds (-x): a
  # memarena process leaves the memory it freed so that the next one's huge pages come fast,
  # and with the builds side by side the second of each round gained (mixed_heap 0.61-0.66 s
  # after the other build, 0.97-1.18 s after a peer; large_buffers alike; 2026-12-04). Past
  # four builds the rest follow each other.
  cycle=()
  for ((p = 0; p < 4 || 4 + p < n; p++)); do
    ((p < 4)) && cycle+=("$p")
    ((4 + p < n)) && cycle+=("$((4 + p))")
  done
  for ((rep = 0; rep < reps; rep++)); do
    for spec in $workloads; do
      w=$(workload_name "$spec")
      for ((k = 0; k < n; k++)); do
        i=${cycle[$(((rep + k) % n))]}
        ((rep % 2)) && i=${cycle[$(((rep - k + n) % n))]}
        preload=()
        [ -n "${libs[$i]}" ] && preload=(--preload "${libs[$i]}")
        read -r secs rss status cpu < <("$bin/workload_measure" "${preload[@]}" --stdout "$out" \
          -- "$bin/workload_$w" "$(workload_scale "$spec")")
        echo "$w ${names[$i]} $secs $rss $status $cpu $(cksum <"$out" | cut -d' ' -f1)" \
          "$(workload_scale "$spec")" >>"$raw"
        printf '\r%s rep %d/%d %-14s %-9s %6.2f s' "compare.sh:" $((rep + 1)) "$reps" "$w" \
          "${names[$i]}" "$cpu" >&2
      done
    done
  done
  echo >&2
  [ -n "$raw_out" ] && cp "$raw" "$raw_out"
fi

order=""
for spec in $workloads; do
  w=$(workload_name "$spec")
  # A FILE given with -i lists only the workloads that were run.
  [ -z "$raw_in" ] || grep -q "^$w " "$raw" && order="$order $w"
done
load="load average $(cut -d' ' -f1 /proc/loadavg) at the end"
[ -n "${load_start:-}" ] && load="load average $load_start at the start, $(cut -d' ' -f1 /proc/loadavg) at the end"
echo "bench/compare.sh -r $reps ($(nproc) CPUs, $load, $(date -u '+%Y-%m-%d %H:%M UTC'), medians of $reps rotated rounds)"
scales=""
for w in $order; do
  # The scale each workload ran at (the raw file's 8th column; older files lack it).
  scales="$scales $w:$(awk -v w="$w" '$1 == w { print ($8 == "" ? "?" : $8); exit }' "$raw")"
done
echo "scales:$scales"
for ((k = 0; k < ${#extra_names[@]}; k++)); do echo "${extra_names[$k]}: ${extra_libs[$k]}"; done
echo
echo "| workload | allocator | wall s | CPU s | peak RSS MiB | RSS - start-up MiB | CPU / best peer | RSS / best peer | RSS - start-up / best peer | CPU / best peer, per round |"
echo "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"
# The raw file is in the order of the runs, so the n-th row of a workload and allocator is
# its n-th round: the last column is the median over rounds of the CPU ratio to that round's
# best peer, which a machine whose speed changes for minutes at a time (this 2-core VM
# switched between two speeds 1.5x apart) moves far less than the ratio of the medians.
awk -v order="$order" -v allocs="${names[*]}" '
  function median(list,   a, m, t, i, j) {
    m = split(list, a, " ")
    for (i = 2; i <= m; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    return m % 2 ? a[(m + 1) / 2] : (a[m / 2] + a[m / 2 + 1]) / 2
  }
  { key = $1 SUBSEP $2; secs[key] = secs[key] " " $3; rss[key] = rss[key] " " $4
    cpu[key] = cpu[key] " " $6
    round_cpu[key, ++rounds[key]] = $6
    if ($5 != 0) failed[key] = 1
    # The outputs of a workload must match across allocators and rounds.
    if ($7 != "" && $5 == 0) {
      if (!($1 in output)) output[$1] = $7
      else if (output[$1] != $7 && index(differs[$1] " ", " " $2 " ") == 0) differs[$1] = differs[$1] " " $2
    } }
  END {
    nw = split(order, ws, " "); na = split(allocs, as, " ")
    for (a = 1; a <= na; a++) {
      key = "startup" SUBSEP as[a]
      has_base[a] = key in rss
      if (has_base[a]) base[a] = median(rss[key]) / 1024
    }
    for (w = 1; w <= nw; w++) {
      best_t = -1; best_r = -1; best_h = ""
      for (a = 1; a <= na; a++) {
        key = ws[w] SUBSEP as[a]
        wall[a] = median(secs[key]); t[a] = median(cpu[key]); r[a] = median(rss[key]) / 1024
        if (has_base[a]) h[a] = r[a] - base[a]
        # The best peer is one of the four peers: never memarena, nor an extra build (-x).
        if (as[a] !~ /^memarena/ && !(key in failed)) {
          if (best_t < 0 || t[a] < best_t) best_t = t[a]
          if (best_r < 0 || r[a] < best_r) best_r = r[a]
          if (has_base[a] && (best_h == "" || h[a] < best_h)) best_h = h[a]
        }
      }
      for (a = 1; a <= na; a++) per_round[a] = ""
      for (n = 1; ; n++) {
        best_n = -1
        for (a = 1; a <= na; a++) {
          key = ws[w] SUBSEP as[a]
          if (as[a] !~ /^memarena/ && !(key in failed) && (key SUBSEP n) in round_cpu &&
              (best_n < 0 || round_cpu[key, n] < best_n)) best_n = round_cpu[key, n]
        }
        if (best_n < 0) break
        for (a = 1; a <= na; a++) {
          key = ws[w] SUBSEP as[a]
          if ((key SUBSEP n) in round_cpu && best_n > 0) per_round[a] = per_round[a] " " round_cpu[key, n] / best_n
        }
      }
      for (a = 1; a <= na; a++) {
        key = ws[w] SUBSEP as[a]
        round_ratio = per_round[a] == "" ? "-" : sprintf("%.2f", median(per_round[a]))
        note = (key in failed) ? " FAILED" : ""
        if (as[a] ~ /^memarena/ && !(key in failed))
          note = (t[a] <= best_t && r[a] <= 1.1 * best_r) ? " (meets the bar)" : " (misses the bar)"
        # The start-up bar is on RSS alone: the glibc peak + 0.5 MiB.
        if (as[a] ~ /^memarena/ && ws[w] == "startup" && !(key in failed))
          note = (r[a] <= r[1] + 0.5) ? " (meets the bar)" : " (misses the bar)"
        heap = has_base[a] ? sprintf("%.1f", h[a]) : "-"
        # Below 1 MiB of heap the difference of two peaks is noise, not a ratio.
        heap_ratio = (!has_base[a] || best_h == "" || best_h < 1 || ws[w] == "startup") ? "-" : sprintf("%.2f", h[a] / best_h)
        printf "| %s | %s%s | %.3f | %.3f | %.1f | %s | %.2f | %.2f | %s | %s |\n", ws[w], as[a], note,
               wall[a], t[a], r[a], heap, t[a] / best_t, r[a] / best_r, heap_ratio, round_ratio
      }
    }
    for (w = 1; w <= nw; w++) {
      if (ws[w] in differs) printf "\nOUTPUTS DIFFER: %s printed another result under%s\n", ws[w], differs[ws[w]]
    }
  }' "$raw"
