#!/usr/bin/env bash
# Builds and stages the GPU check bundle (gpu-bundle/, ignored by git): stripped GPU test and
# benchmark binaries (the device-logic rows on the fake and on the real runtime included), libmemarena_cuda.so and the shared libraries they need that a machine
# with only a driver, the CUDA toolkit and PyTorch lacks (fmt, cudart), the PyTorch helper, the
# PyTorch checks and scripts/gpu_check.sh. Copy the folder to the GPU machine and run
# `gpu-bundle/gpu_check.sh` there (no GoogleTest, Google Benchmark or fmt needed).
# Usage: scripts/gpu_bundle.sh [build-dir] [bundle-dir]   (defaults build-gpu, gpu-bundle)
set -euo pipefail
cd "$(dirname "$0")/.."
build="${1:-build-gpu}"
bundle="${2:-gpu-bundle}"
limit_mib=64
targets=(memarena_cuda cuda_arena_test device_logic_test device_logic_gpu_test arena_device_bench)

launcher=()
if command -v ccache >/dev/null; then
  launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
fi
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMARENA_BUILD_TESTS=ON \
  -DMEMARENA_BUILD_BENCH=ON -DMEMARENA_BUILD_CUDA=ON "${launcher[@]}" >/dev/null
if ! grep -q '^CMAKE_CUDA_COMPILER:.*nvcc' "$build/CMakeCache.txt"; then
  echo "gpu_bundle: no CUDA compiler found in $build; libmemarena_cuda.so cannot be built" >&2
  exit 1
fi
cmake --build "$build" -j "${JOBS:-2}" --target "${targets[@]}"

rm -rf "$bundle"
mkdir -p "$bundle/bin" "$bundle/lib" "$bundle/python" "$bundle/checks"
for exe in tests/cuda/cuda_arena_test tests/cuda/device_logic_test tests/cuda/device_logic_gpu_test \
  bench/arena/arena_device_bench; do
  strip --strip-unneeded -o "$bundle/bin/$(basename "$exe")" "$build/$exe"
done
strip --strip-unneeded -o "$bundle/lib/libmemarena_cuda.so" "$build/cuda/libmemarena_cuda.so"
# The shared libraries the binaries load besides the C/C++ runtime and the driver: fmt (not on
# the GPU machine) and cudart (so that the binaries do not depend on where the toolkit is).
ldd "$build/cuda/libmemarena_cuda.so" "$build/tests/cuda/cuda_arena_test" |
  awk '/=> \// && /lib(fmt|cudart)\.so/ {print $3}' | sort -u |
  while read -r lib; do cp -L "$lib" "$bundle/lib/"; done
cp cuda/python/memarena_torch_hooks.py cuda/python/memarena_torch_hooks.cpp "$bundle/python/"
cp tests/pytest/torch_cuda_checks.py "$bundle/checks/"
cp scripts/gpu_check.sh "$bundle/"
{
  echo "memarena GPU check bundle"
  echo "commit: $(git rev-parse HEAD)$(git diff --quiet HEAD -- . 2>/dev/null || echo ' (with uncommitted changes)')"
  echo "built: $(date -u +%Y-%m-%dT%H:%MZ) on $(uname -m), $(g++ --version | head -1), $(nvcc --version 2>/dev/null | tail -1 || true)"
  (cd "$bundle" && find . -type f ! -name MANIFEST | sort | xargs sha256sum)
} >"$bundle/MANIFEST"

for lib in fmt cudart; do
  compgen -G "$bundle/lib/lib$lib.so*" >/dev/null ||
    { echo "gpu_bundle: lib$lib was not staged" >&2; exit 1; }
done
size_kib=$(du -sk "$bundle" | cut -f1)
if ((size_kib > limit_mib * 1024)); then
  echo "gpu_bundle: $bundle is $((size_kib / 1024)) MiB, over the ${limit_mib} MiB a device run carries" >&2
  exit 1
fi
echo "gpu_bundle: staged $bundle ($((size_kib / 1024)) MiB, $(find "$bundle" -type f | wc -l) files)"
