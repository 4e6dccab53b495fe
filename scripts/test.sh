#!/usr/bin/env bash
# test.sh: installs the dependencies, configures rlx with warnings as errors into build/, builds it
# with every core and runs the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja -DRLX_WERROR=ON
cmake --build build --parallel "$(nproc)"
bash scripts/run-ctest.sh build
