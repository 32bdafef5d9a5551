#!/usr/bin/env bash
# Installs the Debian packages memarena needs when they are missing (fresh machine or CI).
set -euo pipefail
packages=(cmake make g++ clang libclang-rt-14-dev libfmt-dev libgtest-dev libgmock-dev
          libbenchmark-dev pkg-config python3 python3-pytest google-perftools
          libjemalloc2 libgoogle-perftools4 libmimalloc2.0)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# npm installs ONNX Runtime (onnxruntime-node) for the ort tests. Any npm will do (NodeSource's
# nodejs carries its own), so check for the command rather than Debian's package.
command -v npm >/dev/null 2>&1 || missing+=(npm)
if ((${#missing[@]})); then
  echo "bootstrap: installing ${missing[*]}"
  if [[ $(id -u) -ne 0 ]]; then sudo=sudo; else sudo=; fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
