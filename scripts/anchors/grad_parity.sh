#!/usr/bin/env bash
# grad_parity.sh: gradient parity: `rlx grad` reproduces torch autograd's gradients of the anchor models.
#
# Usage: scripts/anchors/grad_parity.sh [--work DIR] [--models bert_mini,llama,mlp] [--loss sum|mse]
#                                       [--batch 2] [--seq 32] [--factor 8] [--device cpu|opencl[:N]]
# export_weights.py writes each anchor's weights (rlx names) and a reference input; grad_torch.py
# computes the loss (sum of the output, or mse against a seeded target) and every parameter's gradient
# with torch autograd in float32 and float64; `rlx grad` builds the same model from config flags,
# loads the weights and writes its loss and gradients as safetensors; grad_torch.py compare prints
# per tensor max abs / relative errors and fails past tolerance (see grad_torch.py for why).
# Norm parameters are perturbed (export_weights.py --perturb-norms) so that their gradients are not
# those of an identity norm. Environment: as parity.sh (RLX, RLX_ANCHORS, RLX_PYTHON).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

WORK=/tmp/rlx-grad-parity
MODELS=bert_mini,llama,mlp
LOSS=sum
BATCH=2
SEQ=32
FACTOR=8
DEVICE=cpu
while [[ $# -gt 0 ]]; do
  case "$1" in
  --work) WORK="$2"; shift 2 ;;
  --models) MODELS="$2"; shift 2 ;;
  --loss) LOSS="$2"; shift 2 ;;
  --batch) BATCH="$2"; shift 2 ;;
  --seq) SEQ="$2"; shift 2 ;;
  --factor) FACTOR="$2"; shift 2 ;;
  --device) DEVICE="$2"; shift 2 ;;
  -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done
[[ $LOSS == sum || $LOSS == mse ]] || die "--loss must be sum or mse, got '$LOSS'"

RLX_BIN="$(find_rlx)"
echo "# rlx: $RLX_BIN"
dir="$WORK/$LOSS"
echo "# work dir: $dir"
mkdir -p "$dir"
rm -f "$WORK/grad_parity.jsonl"
"$PY" "$ANCHORS_SCRIPTS/export_weights.py" "$dir" --models "$MODELS" --batch "$BATCH" --seq "$SEQ" \
  --mlp-batch "$((BATCH * 4))" --perturb-norms
"$PY" "$ANCHORS_SCRIPTS/grad_torch.py" torch "$dir" --models "$MODELS" --loss "$LOSS"
status=0
for name in ${MODELS//,/ }; do
  rm -f "$dir/$name.rlx.safetensors"
  if [[ $name == mlp ]]; then batch=$((BATCH * 4)); else batch=$BATCH; fi
  read -r -a flags <<<"$(rlx_model_flags "$name" "$batch" "$SEQ")"
  loss=(--loss "$LOSS")
  [[ $LOSS == mse ]] && loss+=(--target "$dir/$name.target.npy")
  cmd=("$RLX_BIN" grad "${flags[@]}" --weights "$dir/$name.safetensors" --input "x=$dir/$name.x.npy"
    "${loss[@]}" --out "$dir/$name.rlx.safetensors" --device "$DEVICE" -q)
  echo "# ${cmd[*]}"
  start=$(date +%s%N)
  if ! "${cmd[@]}" >"$dir/$name.rlx.log" 2>&1; then
    echo "grad_parity.sh: rlx grad failed for $name:" >&2
    tail -n 5 "$dir/$name.rlx.log" >&2
    status=1
  fi
  echo "#   $((($(date +%s%N) - start) / 1000000)) ms"
done
"$PY" "$ANCHORS_SCRIPTS/grad_torch.py" compare "$dir" --models "$MODELS" --loss "$LOSS" \
  --factor "$FACTOR" --json "$WORK/grad_parity.jsonl" || status=1
if [[ $status == 0 ]]; then
  echo "grad parity: all gradients within tolerance"
else
  echo "grad parity: FAILED (see above)" >&2
fi
exit $status
