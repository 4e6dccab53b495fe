#!/usr/bin/env bash
# gpu-check.sh: rlx-opencl on an NVIDIA GPU through its OpenCL driver, in one short run that fits a
# lent GPU machine's budget (15 minutes of device time in all, a start included). Two halves:
#
#   scripts/gpu-check.sh --stage [BUILD]   here (the dev VM): builds the few programs the check needs
#       (rlx, rlx_opencl_conformance_test, rlx_opencl_gemm_bench, rlx_opencl_attention_bench) in
#       BUILD (default build/) and packs them with the shared libraries they use that a CUDA image
#       lacks (oneDNN, TBB, OpenBLAS, CLBlast, the OpenCL ICD loader, ...) into
#       .gpu-stage/bundle.tar.gz (.gitignore'd, ~35 MiB; carried: `carry: [".gpu-stage"]`).
#       The GPU image has no package registry and none of rlx's build dependencies, so nothing is
#       built there.
#   scripts/gpu-check.sh [--budget SECONDS]   there: unpacks the bundle, points the OpenCL loader at
#       the NVIDIA driver's libnvidia-opencl (OCL_ICD_FILENAMES; the image may lack an .icd file),
#       and runs, each step under its own timeout, writing everything under $OUT (8 files at most):
#         env.txt            nvidia-smi, the OpenCL devices rlx sees, the bundle's programs
#         conformance.txt    the conformance table on the GPU (every case; GEMM cases again on the
#                            tiled kernel and CLBlast, attention cases on the local-memory tiles)
#         bench.jsonl        `rlx bench --device opencl --json`: bert_base b1 / b8 s128, llama b1
#                            s128, mlp b64 (and the CPU backend on the same machine for reference)
#         gemm.json          GEMM GFLOP/s: our tiled and rows kernels against CLBlast (and oneDNN on
#                            the host), anchor shapes plus 1024-row and square products to 4096
#         attention.json     the rows and tiled attention kernels on the anchor shapes
#         train.jsonl        `rlx train --device opencl` then cpu: the digits MLP, 100 AdamW steps
#         summary.txt        one line per step: its exit status and wall time
#
# Device call (as a session would make it; --budget leaves time for a rerun):
#   run(command="scripts/gpu-check.sh --budget 360", carry=[".gpu-stage"], timeout_s=420)
# (about 2 minutes to start the machine plus 6-7 to run leave room for one shorter rerun).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
stage_dir="$root/.gpu-stage"

if [[ "${1:-}" == "--stage" ]]; then
  set -e
  build=${2:-"$root/build"}
  targets=(rlx rlx_opencl_conformance_test rlx_opencl_gemm_bench rlx_opencl_attention_bench)
  cmake --build "$build" --parallel "${RLX_STAGE_JOBS:-2}" --target "${targets[@]}"
  tmp=$(mktemp -d)
  mkdir -p "$tmp/bin" "$tmp/lib" "$tmp/fallback"
  cp "$build/rlx-runtime/rlx" "$build/rlx-opencl/tests/rlx_opencl_conformance_test" \
    "$build/rlx-opencl/bench/rlx_opencl_gemm_bench" \
    "$build/rlx-opencl/bench/rlx_opencl_attention_bench" "$tmp/bin/"
  # Every shared library the programs use except glibc's own (the image's is as new or newer).
  for b in "$tmp"/bin/*; do
    ldd "$b" | awk '/=> \//{print $3}'
  done | sort -u | grep -vE '/(libc|libm|libdl|librt|libpthread|ld-linux[^/]*)\.so' |
    while read -r lib; do
      case $(basename "$lib") in
      # The C++ runtime only where the image lacks one (a newer one serves these programs too).
      libstdc++.so.* | libgcc_s.so.*) cp -L "$lib" "$tmp/fallback/" ;;
      *) cp -L "$lib" "$tmp/lib/" ;;
      esac
    done
  mkdir -p "$stage_dir"
  tar -C "$tmp" -czf "$stage_dir/bundle.tar.gz" bin lib fallback
  rm -rf "$tmp"
  ls -la "$stage_dir/bundle.tar.gz"
  echo "staged; carry .gpu-stage and run scripts/gpu-check.sh on the GPU machine"
  exit 0
fi

budget=420
if [[ "${1:-}" == "--budget" ]]; then
  budget=${2:?--budget needs seconds}
fi
out=${OUT:-"$root/gpu-check-out"}
mkdir -p "$out"
start=$(date +%s)
summary="$out/summary.txt"
: >"$summary"

# Runs "$@" under a timeout of min($1, what is left of the budget), logging to the summary.
step() {
  local name=$1 limit=$2
  shift 2
  local left=$((budget - ($(date +%s) - start)))
  ((limit > left)) && limit=$left
  if ((limit <= 5)); then
    echo "$name: skipped (budget spent)" >>"$summary"
    return
  fi
  local t0
  t0=$(date +%s)
  timeout --kill-after=5 "$limit" "$@"
  local rc=$?
  echo "$name: exit $rc in $(($(date +%s) - t0)) s (limit $limit s)" >>"$summary"
}

bundle="$stage_dir/bundle.tar.gz"
if [[ ! -f "$bundle" ]]; then
  echo "no $bundle: run scripts/gpu-check.sh --stage here first and carry .gpu-stage" |
    tee -a "$summary"
  exit 1
fi
dir=/tmp/rlx-gpu
rm -rf "$dir" && mkdir -p "$dir" && tar -C "$dir" -xzf "$bundle"
libs="$dir/lib"
ldconfig -p 2>/dev/null | grep -q 'libstdc++\.so\.6 ' || libs="$libs:$dir/fallback"
export LD_LIBRARY_PATH="$libs${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
export RLX_OPENCL_CACHE_DIR=/tmp/rlx-opencl-cache RLX_GEMM_CHOICES=/tmp/rlx-gemm-choices.tsv
# The NVIDIA OpenCL driver: found wherever the image mounts the driver's libraries.
if [[ -z "${OCL_ICD_FILENAMES:-}" ]]; then
  nv=""
  for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1; do
    [[ -z "$nv" && -e "$f" ]] && nv=$f
  done
  [[ -z "$nv" ]] && nv=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
  [[ -n "$nv" ]] && export OCL_ICD_FILENAMES="$nv"
fi
bin="$dir/bin"

{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi 2>&1 | head -20
  echo "== OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES:-<unset>}"
  echo "== rlx devices"; "$bin/rlx" devices 2>&1
  echo "== cpu"; nproc; grep -m1 'model name' /proc/cpuinfo
} >"$out/env.txt" 2>&1

# The first OpenCL device is the GPU (the loader sees only the NVIDIA driver).
step conformance 200 "$bin/rlx_opencl_conformance_test" --gtest_brief=1 \
  >"$out/conformance.txt" 2>&1
tail -3 "$out/conformance.txt" >>"$summary"

export RLX_GEMM_BENCH_LARGE=1
step gemm 120 "$bin/rlx_opencl_gemm_bench" --benchmark_min_time=0.05 \
  --benchmark_out="$out/gemm.json" --benchmark_out_format=json >/dev/null 2>>"$out/env.txt"
step attention 45 "$bin/rlx_opencl_attention_bench" --benchmark_min_time=0.05 \
  --benchmark_out="$out/attention.json" --benchmark_out_format=json >/dev/null 2>>"$out/env.txt"

declare -A flags=(
  [bert_base]="--model bert --layers 12 --hidden 768 --heads 12 --kv-heads 12 --ffn 3072 --seq 128"
  [llama]="--model llama --layers 4 --hidden 512 --heads 8 --kv-heads 8 --ffn 1376 --seq 128"
  [mlp]="--model mlp --dims 784,512,512,10"
)
: >"$out/bench.jsonl"
# The GPU first (cheapest model first), then the CPU backend on the same machine for reference.
for d in opencl cpu; do
  for c in mlp:64 llama:1 bert_base:1 bert_base:8; do
    m=${c%%:*} b=${c##*:}
    # shellcheck disable=SC2086
    step "bench $m b$b $d" 60 "$bin/rlx" bench ${flags[$m]} --batch "$b" --device "$d" \
      --runs 20 --warmup 3 --json >>"$out/bench.jsonl" 2>>"$out/env.txt"
  done
done

# Training on the GPU: the digits MLP (data/digits travels with the tree), 100 AdamW steps on
# each device, the same losses expected (Cli.OpenClTrainsTheDigitsMlpAsTheCpuDoes on pocl).
: >"$out/train.jsonl"
for d in opencl cpu; do
  step "train mlp $d" 60 "$bin/rlx" train --model mlp --data "$root/data/digits" --batch 64 \
    --steps 100 --eval-every 50 --optimizer adamw --lr 0.003 --seed 1 --json --device "$d" \
    >>"$out/train.jsonl" 2>>"$out/env.txt"
done

echo "total $(($(date +%s) - start)) s of a $budget s budget" >>"$summary"
cat "$summary"
