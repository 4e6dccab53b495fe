# common.sh: what parity.sh and bench.sh share: paths, the rlx binary, and each anchor's rlx flags.
# Sourced, not run.
# shellcheck shell=bash

ANCHORS_SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
REPO_ROOT="$(cd "$ANCHORS_SCRIPTS/../.." && pwd)"
# The peer workloads (make_models.py, bench_ort.js): ../shared/anchors next to the checkout.
RLX_ANCHORS="${RLX_ANCHORS:-$(cd "$REPO_ROOT/.." && pwd)/shared/anchors}"
export RLX_ANCHORS
# Debian's python3 has torch, numpy and onnx; a pyenv python on PATH does not.
PY="${RLX_PYTHON:-/usr/bin/python3}"
ORT_NODE_PREFIX="${ORT_NODE_PREFIX:-/tmp/ortnode}"
export ORT_NODE_DIR="${ORT_NODE_DIR:-$ORT_NODE_PREFIX/node_modules/onnxruntime-node}"

die() {
  echo "$(basename "$0"): $*" >&2
  exit 1
}

# Finds the rlx command: $RLX, else the first built one under build*/ of the checkout, else PATH.
find_rlx() {
  if [[ -n "${RLX:-}" ]]; then
    [[ -x "$RLX" ]] || die "RLX=$RLX is not an executable"
    echo "$RLX"
    return
  fi
  local c
  for c in "$REPO_ROOT"/build/rlx-runtime/rlx "$REPO_ROOT"/build*/rlx-runtime/rlx; do
    if [[ -x "$c" ]]; then
      echo "$c"
      return
    fi
  done
  if command -v rlx >/dev/null 2>&1; then
    command -v rlx
    return
  fi
  die "no rlx command: build it (ninja -C build rlx) or set RLX=/path/to/rlx"
}

# Prints the `rlx run` / `rlx bench` flags that build anchor model $1 at batch $2, seq $3
# (anchor_config.py holds the table).
rlx_model_flags() {
  "$PY" "$ANCHORS_SCRIPTS/anchor_config.py" "$1" "$2" "$3" || die "no flags for anchor '$1'"
}

# Installs onnxruntime-node into $ORT_NODE_PREFIX unless it is there (the npm registry, once).
ensure_ort() {
  if [[ -f "$ORT_NODE_DIR/package.json" ]]; then
    return
  fi
  command -v npm >/dev/null 2>&1 || die "npm is missing: apt-get install -y nodejs npm"
  echo "# installing onnxruntime-node into $ORT_NODE_PREFIX" >&2
  mkdir -p "$ORT_NODE_PREFIX"
  (cd "$ORT_NODE_PREFIX" && { [[ -f package.json ]] || npm init -y >/dev/null; } &&
    npm install onnxruntime-node --ignore-scripts >/dev/null) || die "npm install onnxruntime-node failed"
}

# Writes the ONNX anchor models and their reference data into $1 unless they are there already.
ensure_onnx_models() {
  local dir="$1" n missing=0
  for n in bert_base bert_mini llama mlp; do
    [[ -f "$dir/$n.onnx" && -f "$dir/$n.json" ]] || missing=1
  done
  if [[ $missing == 1 ]]; then
    [[ -f "$RLX_ANCHORS/make_models.py" ]] || die "no make_models.py in $RLX_ANCHORS (set RLX_ANCHORS)"
    echo "# exporting the ONNX anchor models into $dir" >&2
    "$PY" "$RLX_ANCHORS/make_models.py" "$dir" 2>&1 | grep -v -i warning >&2 ||
      die "make_models.py failed"
    [[ -f "$dir/mlp.onnx" ]] || die "make_models.py wrote no models into $dir"
  fi
}
