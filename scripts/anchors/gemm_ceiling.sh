#!/usr/bin/env bash
# gemm_ceiling.sh: BERT-base b1 s128's achieved GFLOP/s in rlx against the sgemm ceiling measured
# in the same job (../shared/anchors/gemm_bench.cpp on OpenBLAS and oneDNN, interleaved rounds).
#
# Usage: scripts/anchors/gemm_ceiling.sh [--rounds 3] [--threads 2] [--work DIR]
#                                        [--rlx-extra "--gemm onednn"]
# Environment: RLX (the rlx binary), RLX_ANCHORS (../shared/anchors), RLX_PYTHON (/usr/bin/python3).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"
[[ "${1:-}" == "-h" || "${1:-}" == "--help" ]] && { sed -n '2,7p' "$0"; exit 0; }
[[ -f "$RLX_ANCHORS/gemm_bench.cpp" ]] || die "no gemm_bench.cpp in $RLX_ANCHORS (set RLX_ANCHORS)"
exec "$PY" "$ANCHORS_SCRIPTS/gemm_ceiling.py" --rlx "$(find_rlx)" --anchors "$RLX_ANCHORS" "$@"
