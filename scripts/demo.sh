#!/usr/bin/env bash
# demo.sh: installs the dependencies, builds rlx into build/ and runs the main job: a BERT layer and
# a LLaMA block built as HIR graphs, verified, printed, lowered and evaluated.
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
cmake -S . -B build -G Ninja
cmake --build build --parallel "$(nproc)" --target rlx_example_hir_models
./build/examples/rlx_example_hir_models
