#!/usr/bin/env bash
# bench.sh: the performance table: rlx against ONNX Runtime on the anchor workloads, same run.
#
# Usage: scripts/anchors/bench.sh [--cases bert_base:1,bert_base:8,bert_mini,llama,mlp] [--rounds 3]
#                                 [--target-s 3] [--json FILE] [--work DIR] [--no-rlx]
#                                 [--rlx-extra "--device cpu"] [--rlx-onnx]
# Installs onnxruntime-node into /tmp/ortnode when missing, exports the ONNX anchor models once
# (make_models.py, into WORK/onnx), then runs bench.py: per round, every case timed with
# ../shared/anchors/bench_ort.js and with `rlx bench ... --json`, interleaved; prints a markdown
# table (medians, rlx/ORT ratio, GFLOP/s) and writes all figures as JSON (default WORK/bench.json).
# The whole table takes ~5-10 min with the defaults; --cases and --target-s make it shorter.
# --rlx-onnx: rlx benchmarks the same .onnx files ORT runs (`rlx bench --onnx`, rlx-onnx's importer)
# instead of its builder-made graphs.
# --cases takes model or model:batch; ONNX Runtime times all batches of a selected model (that is how
# bench_ort.js selects), only the selected rows are reported.
# Environment: RLX (the rlx binary), RLX_ANCHORS (../shared/anchors), RLX_PYTHON (/usr/bin/python3).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

WORK=/tmp/rlx-bench
PASS=()
NO_RLX=0
JSON=""
while [[ $# -gt 0 ]]; do
  case "$1" in
  --work) WORK="$2"; shift 2 ;;
  --json) JSON="$2"; shift 2 ;;
  --no-rlx) NO_RLX=1; PASS+=(--no-rlx); shift ;;
  --rlx-onnx) PASS+=(--rlx-onnx); shift ;;
  --cases | --rounds | --target-s | --rlx-extra | --min-reps) PASS+=("$1" "$2"); shift 2 ;;
  -h | --help) sed -n '2,17p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done

[[ -f "$RLX_ANCHORS/bench_ort.js" ]] || die "no bench_ort.js in $RLX_ANCHORS (set RLX_ANCHORS)"
command -v node >/dev/null 2>&1 || die "node is missing: apt-get install -y nodejs npm"
mkdir -p "$WORK"
ensure_ort
ensure_onnx_models "$WORK/onnx"
if [[ $NO_RLX == 0 ]]; then
  PASS+=(--rlx "$(find_rlx)")
  echo "# rlx: ${PASS[-1]}" >&2
fi
exec "$PY" "$ANCHORS_SCRIPTS/bench.py" --models-dir "$WORK/onnx" --bench-ort "$RLX_ANCHORS/bench_ort.js" \
  --json "${JSON:-$WORK/bench.json}" "${PASS[@]}"
