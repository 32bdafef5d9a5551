#!/usr/bin/env bash
# Regenerates the lists of functions in the drop-in's first two text segments: the blocks
# between the "startup functions" and the "busy functions" markers of
# src/override/libmemarena_malloc_startup.ld.
#   scripts/startup_functions.sh [BUILD_DIR]     # default build/, a RelWithDebInfo build
#                                                # with MEMARENA_BUILD_BENCH=ON
# Each workload below runs under valgrind --tool=callgrind with the build's
# libmemarena_malloc.so preloaded; every function of the library that executes an
# instruction is listed. The start-up list is what small single-threaded programs run (a
# one-malloc C program, factoring, minimizer, and ls, which also callocs, frees page runs
# and flushes its thread cache at exit); the busy list is the rest of what every program of
# bench/workloads/ runs, up to threads that free each other's blocks. Relink, then check
# that override_footprint_test passes (a trivial C program must touch no text outside the
# first segment). Needs valgrind and /usr/bin/python3. Run it after renaming or adding a
# function on the start-up path; docs/dropin.md, "Start-up footprint", has the why.
set -euo pipefail
cd "$(dirname "$0")/.."
build=${1:-build}
lib=$build/src/override/libmemarena_malloc.so
workloads=$build/bench/workloads
script=src/override/libmemarena_malloc_startup.ld
for f in "$lib" "$workloads/workload_startup"; do
  [[ -e $f ]] || { echo "startup_functions.sh: $f is missing; build $build first" >&2; exit 1; }
done
command -v valgrind >/dev/null || { echo "startup_functions.sh: needs valgrind" >&2; exit 1; }

out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
# Small scales: callgrind runs about 50x slower. Each runs long enough for the clocks that
# every program reaches (the thread cache's scavenge, the page heap's release check).
# Profiles a command under the drop-in; the profile's name starts with the list it feeds.
profile() {
  local name=$1
  shift
  valgrind --tool=callgrind --trace-children=yes --dump-instr=yes --compress-pos=no \
    --compress-strings=no --callgrind-out-file="$out/$name.%p" \
    env LD_PRELOAD="$(realpath "$lib")" "$@" >/dev/null 2>&1
}
# The first word names the list a workload's functions go to.
for run in "startup startup" "startup factoring 1" "startup minimizer 1" "busy churn 0.1" \
           "busy random_slots 0.05" "busy larson_fixed 0.05" "busy testsuite 0.2" \
           "busy trees 0.05" "busy larson 0.05" "busy prodcons 0.05" "busy realloc_grow 0.3" \
           "busy mixed_heap 0.02" "busy live_set_1t 0.05" "busy live_set_2t 0.05" \
           "busy false_sharing 0.05" "busy large_buffers 0.005"; do
  read -r list name scale <<<"$run"
  profile "$list.$name" "$workloads/workload_$name" $scale
done
profile startup.ls ls -la /usr/lib

/usr/bin/python3 - "$lib" "$script" "$out"/* <<'EOF'
import bisect, os, re, subprocess, sys
lib, script, profiles = sys.argv[1], sys.argv[2], sys.argv[3:]
functions = []  # (start, size, symbol) of the library's code
for line in subprocess.run(['nm', '-S', '--defined-only', lib], capture_output=True,
                           text=True, check=True).stdout.splitlines():
    fields = line.split(None, 3)
    if len(fields) == 4 and fields[2] in 'tTwW':
        functions.append((int(fields[0], 16), int(fields[1], 16), fields[3]))
functions.sort()
starts = [f[0] for f in functions]
malloc_at = next(f[0] for f in functions if f[2] == 'malloc')
run = {'startup': set(), 'busy': set()}  # by the list the profile's workload feeds
for path in profiles:
    ran = run[os.path.basename(path).split('.')[0]]
    lines = open(path).read().splitlines()
    # callgrind gives the library's addresses relative to its load address where it read the
    # object's debug information, and absolute under "???" where it did not; the load address
    # is where it saw malloc's first instruction under "???".
    ob, base = None, None
    for i, line in enumerate(lines):
        if line.startswith('ob='):
            ob = line[3:]
        elif line == 'fn=malloc' and ob == '???' and lines[i + 1].startswith('0x'):
            base = int(lines[i + 1].split()[0], 16) - malloc_at
    ob = None
    for line in lines:
        if line.startswith('ob='):
            ob = line[3:]
            continue
        if not line.startswith('0x') or not (ob.endswith('/libmemarena_malloc.so') or
                                             (ob == '???' and base is not None)):
            continue
        address = int(line.split()[0], 16) - (base if ob == '???' else 0)
        i = bisect.bisect_right(starts, address) - 1
        if i >= 0 and address < functions[i][0] + functions[i][1]:
            ran.add(functions[i][2])
# Every function that ran, by the name of its section (-ffunction-sections: .text.NAME, and
# .text.NAME.constprop.0 and the like for its clones): the library's own, the C++ operators,
# the private C++ runtime's. The constructors (.text.startup) and the exit-time destructors
# are placed by the script's own lines above the markers and are left out.
placed = re.compile(r'_GLOBAL__sub_I_|_ZN12_GLOBAL__N_113constant_init|_ZNSt3pmr12_GLOBAL__N_113constant_init')
def base(name):
    return re.sub(r'\.(constprop|isra|part|cold)\.?\d*.*$', '', name)
text = open(script).read()
# Which functions run varies a little from run to run (where a reservation lands decides
# whether PageHeap::PlacesBeside runs), so the names already listed stay while the library
# still has them: a list only loses a function that no longer exists, or, for the busy list,
# one that the start-up list takes.
existing = {base(f[2]) for f in functions}
def split(text, marker):
    begin, end = f'/* {marker} functions: begin */\n', f'    /* {marker} functions: end */'
    head, rest = text.split(begin)
    block, tail = rest.split(end)
    return head + begin, block, end + tail
def listed(marker):
    return {n for n in re.findall(r'\*\(\.text\.(\S+) ', split(text, marker)[1])
            if n in existing and not placed.match(n)}
def ran_names(marker):
    return {base(n) for n in run[marker] if not placed.match(n)}
startup = ran_names('startup') | listed('startup')
busy = (ran_names('busy') | listed('busy')) - startup
for marker, names in (('startup', startup), ('busy', busy)):
    head, _, tail = split(text, marker)
    text = head + ''.join(f'    *(.text.{n} .text.{n}.*)\n' for n in sorted(names)) + tail
open(script, 'w').write(text)
print(f'startup_functions.sh: {len(startup)} start-up and {len(busy)} busy functions listed '
      f'in {script}')
EOF
