#!/usr/bin/env bash
# Compiles the library, the drop-in, the CUDA backend and the tool with clang and
# -Wthread-safety -Werror: every MEMARENA_GUARDED_BY field must be touched with its lock
# held and every MEMARENA_REQUIRES function called with it (docs/design.md, "Locks").
# Compile only, no tests run; build-thread-safety/ keeps objects between runs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
build=${BUILD_DIR:-build-thread-safety}
cmake -S . -B "$build" -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_CXX_FLAGS="-Wthread-safety" -DCMAKE_BUILD_TYPE=Debug \
  -DMEMARENA_BUILD_TESTS=OFF -DMEMARENA_BUILD_BENCH=OFF -DMEMARENA_UNITY_BUILD=ON ${CMAKE_ARGS:-}
# Every target the annotated code compiles into (tests and benchmarks hold no locks of ours).
targets=(memarena memarena_dropin memarena_malloc memarena_gtest memarena_tools memarena_cli)
# Read the whole list first: grep -q would close the pipe early, and under pipefail the
# writer's SIGPIPE would make the test false.
target_list=$(cmake --build "$build" --target help)
if grep -q 'memarena_cuda_logic' <<<"$target_list"; then
  targets+=(memarena_cuda_logic memarena_cuda_fake_runtime)
fi
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}"
