#!/usr/bin/env bash
# Issue 10's checks on a machine with an NVIDIA GPU, from the bundle scripts/gpu_bundle.sh
# stages (prebuilt, stripped; only a driver, the CUDA toolkit and a CUDA build of PyTorch are
# needed there, no GoogleTest, Google Benchmark or fmt). Runs, each under its own time limit,
# ~9 minutes at most in all:
#   cuda_arena_test        the GPU tests, PluggableOnDevice.* included
#   device_logic_test      the device-logic rows on the fake runtime (as in CI)
#   device_logic_gpu_test  the same rows on the real runtime and device 0, streams held by a
#                          spin kernel (the fake-only rows, injected failures, are left out)
#   arena_device_bench     pairs of 256 B / 64 KiB / 4 MiB through the C++ API and the pluggable
#                          ABI vs cudaMalloc and cudaMallocAsync, the mixed trace with 1,000 live
#                          blocks, host RSS over 1,000,000 same-stream pairs
#   torch_cuda_checks      every row of the issue's table through PyTorch (three routes)
# Full logs go to $OUT (or <bundle>/out); stdout ends with one PASS/FAIL line per step.
# Usage: gpu-bundle/gpu_check.sh        (PYTHON=... picks the Python that has PyTorch)
set -uo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
out="${OUT:-$here/out}"
mkdir -p "$out"
export LD_LIBRARY_PATH="$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export MEMARENA_CUDA_LIBRARY="$here/lib/libmemarena_cuda.so"
export TORCH_EXTENSIONS_DIR="$out/torch_extensions"
python="${PYTHON:-python3}"
summary=()

# step NAME SECONDS COMMAND...: runs it under a limit, keeps its log, records PASS/FAIL. A
# step that exits 0 but says it measured nothing, or skipped tests, is not a plain PASS: the
# point of this script is the device.
step() {
  local name=$1 limit=$2
  shift 2
  local start=$SECONDS
  echo "== $name (limit ${limit} s)"
  timeout --kill-after=10 "$limit" "$@" >"$out/$name.log" 2>&1
  local rc=$?
  local verdict=PASS
  ((rc == 0)) || verdict="FAIL (exit $rc$( ((rc == 124)) && echo ', timed out'))"
  grep -q "nothing measured\|no usable CUDA device" "$out/$name.log" &&
    verdict="FAIL (no usable device: nothing ran on a GPU)"
  local skipped
  skipped=$(grep -c '^\[  SKIPPED \] .* ms)$' "$out/$name.log")
  ((skipped == 0)) || verdict="$verdict ($skipped tests skipped: see the log for why)"
  tail -n 30 "$out/$name.log"
  summary+=("$verdict $name, $((SECONDS - start)) s")
}

if gpus=$(nvidia-smi -L 2>&1); then
  summary+=("PASS device: ${gpus%%$'\n'*}")
else
  summary+=("FAIL device: nvidia-smi sees no GPU ($gpus); every step below skips or fails")
fi

{
  date -u
  nvidia-smi || echo "nvidia-smi failed"
  "$python" -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda,
"available", torch.cuda.is_available())' || echo "no PyTorch in $python"
  head -n 3 "$here/MANIFEST" 2>/dev/null
} >"$out/machine.log" 2>&1
head -n 40 "$out/machine.log"

step cuda_arena_test 90 "$here/bin/cuda_arena_test" --gtest_color=no
step device_logic_test 40 "$here/bin/device_logic_test" --gtest_color=no
step device_logic_gpu_test 60 "$here/bin/device_logic_gpu_test" --gtest_color=no
step arena_device_bench 120 "$here/bin/arena_device_bench"
step torch_cuda_checks 240 "$python" "$here/checks/torch_cuda_checks.py" --timeout 60 \
  --library "$MEMARENA_CUDA_LIBRARY" --python-dir "$here/python"

echo "== summary (logs in $out)"
grep -h "^\[  FAILED  \]\|^\[  SKIPPED \]" "$out/cuda_arena_test.log" "$out/device_logic_test.log" \
  "$out/device_logic_gpu_test.log" | sort -u
grep -h "^PASS \|^FAIL \|^torch_cuda_checks:" "$out/torch_cuda_checks.log"
printf '%s\n' "${summary[@]}"
! printf '%s\n' "${summary[@]}" | grep -q '^FAIL'
