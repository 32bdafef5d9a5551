#!/usr/bin/env bash
# Builds memarena and runs every test with ctest.
#   scripts/test.sh                       # plain RelWithDebInfo build in build/
#   SANITIZE=address,undefined scripts/test.sh   # build-asan-ubsan/, benchmarks off
#   SANITIZE=thread scripts/test.sh              # build-thread/
# BUILD_TARGET builds one target instead of all (CI's TSAN run: memarena_threads_tests, the
# binaries of the tests labelled "threads"); CTEST_ARGS go to ctest; CMAKE_ARGS to cmake.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
jobs=$(nproc)
if [[ -n "${SANITIZE:-}" ]]; then
  build=${BUILD_DIR:-build-${SANITIZE//,/-}}
  # Unity batches for the library: these builds check, their code is not what users run.
  extra=(-DMEMARENA_SANITIZE="$SANITIZE" -DMEMARENA_BUILD_BENCH=OFF -DCMAKE_BUILD_TYPE=Debug
         -DMEMARENA_UNITY_BUILD=ON)
else
  build=${BUILD_DIR:-build}
  extra=(-DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMARENA_BUILD_BENCH=ON)
fi
cmake -S . -B "$build" -DMEMARENA_BUILD_TESTS=ON "${extra[@]}" ${CMAKE_ARGS:-}
cmake --build "$build" -j"$jobs" ${BUILD_TARGET:+--target "$BUILD_TARGET"}
export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
export TSAN_OPTIONS=${TSAN_OPTIONS:-halt_on_error=1:second_deadlock_stack=1}
ctest --test-dir "$build" --output-on-failure -j"$jobs" ${CTEST_ARGS:-}
