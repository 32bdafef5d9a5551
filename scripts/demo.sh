#!/usr/bin/env bash
# Builds memarena and runs the main demo: the test-suite-under-a-ceiling scenario against
# glibc, then `memarena demo`, which replays built-in scenarios and writes memarena-demo.html.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/bootstrap.sh
cmake -S . -B build -DCMAKE_BUILD_TYPE=RelWithDebInfo ${CMAKE_ARGS:-}
# Only what the demo needs, so it is quick and shares build/ with scripts/test.sh.
cmake --build build -j"$(nproc)" --target ceiling_demo memarena_cli
./build/examples/ceiling_demo
echo
./build/tools/memarena demo
