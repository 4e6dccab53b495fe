#!/usr/bin/env bash
# install-deps.sh: installs the Debian 12 packages rlx's build and tests need. Idempotent: when every
# package is already installed it does nothing (not even `apt-get update`). Uses sudo only when not
# run as root.
set -euo pipefail

packages=(
  # toolchain
  g++ cmake ninja-build ccache
  # rlx-ir
  nlohmann-json3-dev libeigen3-dev
  # rlx-cpu
  libdnnl-dev libopenblas-dev libtbb-dev
  # rlx-opencl (pocl runs the OpenCL tests on the CPU)
  ocl-icd-opencl-dev opencl-headers opencl-clhpp-headers pocl-opencl-icd
  # rlx-opencl's optional CLBlast GEMM (chosen per shape by measurement)
  libclblast-dev
  # rlx-onnx (optional, RLX_WITH_ONNX): ONNX protos + protobuf; the ONNX backend test suite
  libonnx-dev libprotobuf-dev protobuf-compiler libonnx-testdata
  # rlx-runtime
  libcli11-dev
  # tests and benchmarks
  libgtest-dev libgmock-dev libbenchmark-dev
  # graph pictures (rlx inspect --svg)
  graphviz
)

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
fi

sudo=()
if [ "$(id -u)" -ne 0 ]; then
  sudo=(sudo)
fi
echo "install-deps: installing ${missing[*]}"
"${sudo[@]}" apt-get update
"${sudo[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends \
  "${missing[@]}"
