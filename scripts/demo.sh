#!/usr/bin/env bash
# demo.sh: installs the dependencies, builds rlx into build/ and runs the main job, `rlx demo`: a
# BERT encoder with seeded weights compiled by the whole pipeline, run on the CPU backend and checked
# against the reference interpreter.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja
cmake --build build --parallel "$(nproc)" --target rlx
./build/rlx-runtime/rlx demo
