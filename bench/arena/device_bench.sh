#!/usr/bin/env bash
# Builds and runs the device comparison (BfcArena vs cudaMalloc/cudaFree vs cudaMallocAsync)
# and the GPU tests on a machine with a CUDA device. Writes the table to $OUT (default .).
# Usage: bench/arena/device_bench.sh [build-dir]
set -euo pipefail
cd "$(dirname "$0")/../.."
build="${1:-build-device}"
out="${OUT:-.}"
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release -DMEMARENA_BUILD_CUDA=ON >/dev/null
cmake --build "$build" -j "$(nproc)" --target arena_device_bench cuda_arena_test
"$build/tests/cuda/cuda_arena_test" | tee "$out/cuda_arena_test.txt"
"$build/bench/arena/arena_device_bench" | tee "$out/arena_device_bench.txt"
