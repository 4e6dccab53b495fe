#!/usr/bin/env bash
# grad_bench.sh: the time of one gradient evaluation (forward + sum loss + backward, every parameter's
# gradient) of an anchor model: `rlx grad --repeat N` against PyTorch's forward + backward
# (grad_bench.py), in rounds that alternate the runners so machine load hits all of them alike.
#
# Usage: scripts/anchors/grad_bench.sh [--model bert_mini] [--batch 8] [--seq 128] [--reps 10]
#                                      [--rounds 3] [--threads 2] [--base /path/to/other/rlx]
#                                      [--profile]
# --base adds a second rlx binary (e.g. a build before a change) to every round. --profile prints
# the per-kernel times of the last round's rlx runs. Each line is one round's median over --reps
# runs; compare medians of rounds. Environment: as parity.sh (RLX, RLX_ANCHORS, RLX_PYTHON).
set -euo pipefail
# shellcheck source=common.sh
source "$(dirname "${BASH_SOURCE[0]}")/common.sh"

MODEL=bert_mini
BATCH=8
SEQ=128
REPS=10
ROUNDS=3
THREADS=2
BASE=""
PROFILE=0
while [[ $# -gt 0 ]]; do
  case "$1" in
  --model) MODEL="$2"; shift 2 ;;
  --batch) BATCH="$2"; shift 2 ;;
  --seq) SEQ="$2"; shift 2 ;;
  --reps) REPS="$2"; shift 2 ;;
  --rounds) ROUNDS="$2"; shift 2 ;;
  --threads) THREADS="$2"; shift 2 ;;
  --base) BASE="$2"; shift 2 ;;
  --profile) PROFILE=1; shift ;;
  -h | --help) sed -n '2,12p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (see --help)" ;;
  esac
done
RLX_BIN="$(find_rlx)"
[[ -z $BASE || -x $BASE ]] || die "--base $BASE is not an executable"
read -r -a flags <<<"$(rlx_model_flags "$MODEL" "$BATCH" "$SEQ")"
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
echo "# $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2)"
run_rlx() { # label binary [extra flags]
  local label="$1" bin="$2"
  shift 2
  local line
  line="$("$bin" grad "${flags[@]}" --random-inputs --threads "$THREADS" --out "$out/g.safetensors" \
    --repeat "$REPS" "$@" | grep -E '^gradient evaluation|^ *[0-9.]+ (ms|us)|%' || true)"
  echo "$label: $(echo "$line" | head -n 1)"
  if [[ $# -gt 0 ]]; then echo "$line" | tail -n +2 | head -n 25; fi
}
for ((r = 1; r <= ROUNDS; r++)); do
  echo "# round $r"
  extra=()
  [[ $PROFILE == 1 && $r == "$ROUNDS" ]] && extra=(--profile)
  run_rlx "rlx" "$RLX_BIN" "${extra[@]}"
  [[ -n $BASE ]] && run_rlx "rlx base" "$BASE"
  OMP_NUM_THREADS=$THREADS "$PY" "$ANCHORS_SCRIPTS/grad_bench.py" --model "$MODEL" --batch "$BATCH" \
    --seq "$SEQ" --reps "$REPS" --threads "$THREADS"
done
