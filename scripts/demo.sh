#!/usr/bin/env bash
# Builds memarena and runs the main demo: the test-suite-under-a-ceiling scenario against
# glibc, then (when the CLI is built) `memarena demo`, which writes memarena-demo.html.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo -DMEMARENA_BUILD_TESTS=OFF \
      -DMEMARENA_BUILD_BENCH=OFF ${CMAKE_ARGS:-}
cmake --build build -j"$(nproc)"
./build/examples/ceiling_demo
if [[ -x build/tools/memarena ]]; then
  echo
  ./build/tools/memarena demo
fi
