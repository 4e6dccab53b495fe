#!/usr/bin/env bash
# parity.sh: external parity: rlx reproduces PyTorch's outputs of the anchor models from their weights.
#
# Usage: scripts/anchors/parity.sh [--work DIR] [--models bert_base,bert_mini,llama,mlp]
#                                  [--factor 8] [--no-perturbed] [--ort] [--device cpu|opencl[:N]]
# For each model: export_weights.py writes the torch weights (renamed to rlx's names) as safetensors,
# the reference input and torch's float32 and float64 outputs; `rlx run` builds the same model from
# config flags, loads the weights and runs the input; compare.py prints max abs / relative errors and
# fails past tolerance (see compare.py for why the tolerance is what it is).
# Two variants run: "anchor" (make_models.py's exact weights, as the ONNX files hold them) and
# "perturbed" (norm gammas/betas randomised, so that a misplaced norm parameter shows).
# --ort adds ONNX Runtime's error on the anchor variant as a second independent float32 yardstick.
# Environment: RLX (the rlx binary; default: build*/rlx-runtime/rlx), RLX_ANCHORS (../shared/anchors),
# RLX_PYTHON (/usr/bin/python3), ORT_NODE_DIR.
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

WORK=/tmp/rlx-parity
MODELS=bert_base,bert_mini,llama,mlp
FACTOR=8
VARIANTS="anchor perturbed"
WITH_ORT=0
DEVICE=cpu
while [[ $# -gt 0 ]]; do
  case "$1" in
  --work) WORK="$2"; shift 2 ;;
  --models) MODELS="$2"; shift 2 ;;
  --factor) FACTOR="$2"; shift 2 ;;
  --no-perturbed) VARIANTS="anchor"; shift ;;
  --ort) WITH_ORT=1; shift ;;
  --device) DEVICE="$2"; shift 2 ;;
  -h | --help) sed -n '2,16p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done

RLX_BIN="$(find_rlx)"
echo "# rlx: $RLX_BIN"
echo "# work dir: $WORK"
mkdir -p "$WORK"
rm -f "$WORK/parity.jsonl"
if [[ $WITH_ORT == 1 ]]; then
  ensure_ort
  ensure_onnx_models "$WORK/onnx"
fi

status=0
for variant in $VARIANTS; do
  dir="$WORK/$variant"
  extra=()
  [[ $variant == perturbed ]] && extra=(--perturb-norms)
  echo "# exporting $variant weights into $dir"
  "$PY" "$ANCHORS_SCRIPTS/export_weights.py" "$dir" --models "$MODELS" "${extra[@]}"
  for name in ${MODELS//,/ }; do
    rm -f "$dir/$name.rlx.npy" "$dir/$name.ort.npy"
    if [[ $name == mlp ]]; then batch=64; else batch=2; fi
    read -r -a flags <<<"$(rlx_model_flags "$name" "$batch" 128)"
    cmd=("$RLX_BIN" run "${flags[@]}" --weights "$dir/$name.safetensors"
      --input "x=$dir/$name.x.npy" --output "y=$dir/$name.rlx.npy" --device "$DEVICE")
    echo "# ${cmd[*]}"
    start=$(date +%s%N)
    if ! "${cmd[@]}" >"$dir/$name.rlx.log" 2>&1; then
      echo "parity.sh: rlx run failed for $name ($variant):" >&2
      tail -n 5 "$dir/$name.rlx.log" >&2
      status=1
    fi
    echo "#   $((($(date +%s%N) - start) / 1000000)) ms"
    if [[ $WITH_ORT == 1 && $variant == anchor ]]; then
      node "$ANCHORS_SCRIPTS/ort_run.js" "$WORK/onnx/$name.onnx" "$dir/$name.x.npy" "$dir/$name.ort.npy"
    fi
  done
  "$PY" "$ANCHORS_SCRIPTS/compare.py" "$dir" --models "$MODELS" --factor "$FACTOR" \
    --label "$variant weights" --json "$WORK/parity.jsonl" || status=1
done
if [[ $status == 0 ]]; then
  echo "parity: all models within tolerance"
else
  echo "parity: FAILED (see above)" >&2
fi
exit $status
