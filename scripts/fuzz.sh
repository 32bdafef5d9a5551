#!/usr/bin/env bash
# Builds the libFuzzer harnesses of tests/fuzz with clang, ASAN and UBSAN, then runs each
# for FUZZ_SECONDS (default 20) on a scratch copy of its seed corpus (tests/fuzz/corpus/).
#   scripts/fuzz.sh                                  # CI: every harness, 20 s each
#   FUZZ_SECONDS=36000 FUZZERS=host_ops_fuzzer scripts/fuzz.sh   # one harness for 10 hours
# Extra libFuzzer flags go in FUZZ_ARGS (e.g. "-jobs=4 -workers=4"). A crash, a sanitizer
# report or a broken invariant exits non-zero and leaves the input in $build/artifacts/.
# Each harness prints "fuzz: N operations checked" every 2^20 operations and at exit.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
build=${BUILD_DIR:-build-fuzz}
seconds=${FUZZ_SECONDS:-20}
fuzzers=${FUZZERS:-host_ops_fuzzer arena_ops_fuzzer config_fuzzer planner_csv_fuzzer trace_reader_fuzzer}
# fuzzer-no-link: the library gets libFuzzer's coverage instrumentation, so inputs that
# reach new code in the heap, the arena or the parsers are kept.
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-fsanitize=fuzzer-no-link" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMARENA_SANITIZE=address,undefined \
  -DMEMARENA_BUILD_FUZZERS=ON -DMEMARENA_BUILD_TESTS=OFF -DMEMARENA_BUILD_BENCH=OFF \
  -DMEMARENA_BUILD_CUDA=OFF -DMEMARENA_UNITY_BUILD=ON ${CMAKE_ARGS:-}
# shellcheck disable=SC2086
cmake --build "$build" -j"$(nproc)" --target $fuzzers
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$build/artifacts"
for fuzzer in $fuzzers; do
  corpus="$build/corpus/$fuzzer"
  mkdir -p "$corpus"
  cp -n tests/fuzz/corpus/"$fuzzer"/* "$corpus"/ 2>/dev/null || true
  # A dictionary of the format's tokens (tests/fuzz/dict/) keeps mutated text well formed
  # often enough that inputs reach the planner, the replay and the arena, not only the errors.
  dict=()
  [[ -f tests/fuzz/dict/$fuzzer.dict ]] && dict=(-dict="tests/fuzz/dict/$fuzzer.dict")
  echo "== $fuzzer for ${seconds}s"
  # shellcheck disable=SC2086
  "$build/tests/fuzz/$fuzzer" -max_total_time="$seconds" -print_final_stats=1 "${dict[@]}" \
    -artifact_prefix="$build/artifacts/$fuzzer-" ${FUZZ_ARGS:-} "$corpus"
done
echo "fuzz: no crash, no sanitizer report, no broken invariant"
