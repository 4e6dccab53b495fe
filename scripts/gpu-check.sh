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
#                            tiled kernel and CLBlast, attention cases on the local-memory tiles
#                            and on the gpu kernel), then scripts/anchors/parity.sh --device
#                            opencl against PyTorch
#         bench.jsonl        `rlx bench --device opencl --json`: bert_base b1 / b8, bert_mini b1 / b8,
#                            llama b1 (s128), mlp b64 (then the CPU backend there, for reference);
#                            then `--profile` lines (a "kernels" array: per-node device time) of
#                            bert_base b1 and llama b1 on opencl (their tables: end of env.txt)
#         torch.jsonl        the peer on the same card: PyTorch CUDA, strict fp32 (TF32 off), the
#                            same models and GEMM shapes (scripts/anchors/gpu_torch_peer.py)
#         gemm.json          GEMM GFLOP/s: our tiled and rows kernels against CLBlast (and oneDNN on
#                            the host), anchor shapes plus 1024-row and square products to 4096
#         attention.json     the rows, tiled and gpu attention kernels on the anchor shapes
#         train.jsonl        `rlx train --device opencl` then cpu: the digits MLP, 100 AdamW steps
#         summary.txt        one line per step: its exit status and wall time
#
# Device call (as a session would make it; --budget leaves time for a rerun):
#   run(command="scripts/gpu-check.sh --budget 360", carry=[".gpu-stage"], timeout_s=420)
# (about 2 minutes to start the machine plus 6-7 to run leave room for one shorter rerun).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/device.sh
source "$root/scripts/lib/device.sh"
stage_dir="$root/.gpu-stage"

if [[ "${1:-}" == "--stage" ]]; then
  set -e
  build=${2:-"$root/build"}
  targets=(rlx rlx_opencl_conformance_test rlx_opencl_gemm_bench rlx_opencl_attention_bench)
  cmake --build "$build" --parallel "${RLX_STAGE_JOBS:-2}" --target "${targets[@]}"
  tmp=$(mktemp -d)
  mkdir -p "$tmp/anchors"
  # The peer's model definitions (same weights as the CPU anchors), for gpu_torch_peer.py.
  cp "${RLX_ANCHORS:-$root/../shared/anchors}/make_models.py" "$tmp/anchors/"
  bundle_programs "$tmp" "$build/rlx-runtime/rlx" "$build/rlx-opencl/tests/rlx_opencl_conformance_test" \
    "$build/rlx-opencl/bench/rlx_opencl_gemm_bench" "$build/rlx-opencl/bench/rlx_opencl_attention_bench"
  mkdir -p "$stage_dir"
  tar -C "$tmp" -czf "$stage_dir/bundle.tar.gz" bin lib fallback anchors
  rm -rf "$tmp"
  ls -la "$stage_dir/bundle.tar.gz"
  echo "staged; carry .gpu-stage and run scripts/gpu-check.sh on the GPU machine"
  exit 0
fi

budget=420
if [[ "${1:-}" == "--budget" ]]; then
  budget=${2:?--budget needs seconds}
fi
begin_device_run gpu-check "$stage_dir/bundle.tar.gz" /tmp/rlx-gpu
export RLX_OPENCL_CACHE_DIR=/tmp/rlx-opencl-cache RLX_GEMM_CHOICES=/tmp/rlx-gemm-choices.tsv
# The NVIDIA OpenCL driver, by its absolute path, found wherever the image mounts the driver's
# libraries. It replaces what the image sets: the CUDA image sets OCL_ICD_FILENAMES to
# "libpocl.so.2:libnvidia-opencl.so.1" (bare names), with which the loader found no platform.
nv=""
for f in /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 \
  /lib/libnvidia-opencl.so.1; do
  [[ -z "$nv" && -e "$f" ]] && nv=$f
done
[[ -z "$nv" ]] && nv=$(find / -xdev -name 'libnvidia-opencl.so.1' 2>/dev/null | head -1)
echo "image's OCL_ICD_FILENAMES=${OCL_ICD_FILENAMES:-<unset>}" >"$out/env.txt"
# The loader (ocl-icd) reads one private vendors folder naming only the NVIDIA driver, so that the
# image's pocl.icd (a CPU device) cannot stand in for the GPU.
unset OCL_ICD_FILENAMES
if [[ -n "$nv" ]]; then
  mkdir -p /tmp/rlx-icd && echo "$nv" >/tmp/rlx-icd/nvidia.icd
  export OCL_ICD_VENDORS=/tmp/rlx-icd
  export LD_LIBRARY_PATH="$LD_LIBRARY_PATH:$(dirname "$nv")"
  echo "== probe of $nv" >>"$out/env.txt"
  python3 "$root/scripts/opencl_probe.py" "$nv" >>"$out/env.txt" 2>&1
  ls -la "$(dirname "$nv")" | grep -iE 'opencl|nvvm|ptxjit|compiler' >>"$out/env.txt" 2>&1
fi

{
  echo "== date"; date -u
  echo "== nvidia-smi"; nvidia-smi 2>&1 | head -20
  echo "== OCL_ICD_VENDORS=${OCL_ICD_VENDORS:-<unset>}"
  echo "== rlx devices"; "$bin/rlx" devices 2>&1
  echo "== driver libraries"; ldconfig -p 2>/dev/null | grep -iE 'nvidia-opencl|libcuda\.' | head -5
  ls /usr/local/nvidia/lib64 2>/dev/null | head -40
  ls /etc/OpenCL/vendors 2>/dev/null
  echo "== cpu"; nproc; grep -m1 'model name' /proc/cpuinfo
  echo "== the loader's trace (OCL_ICD_DEBUG)"; OCL_ICD_DEBUG=15 "$bin/rlx" devices 2>&1 | head -40
  echo "== LD_DEBUG=libs (opencl lines)"; LD_DEBUG=libs "$bin/rlx" devices 2>&1 | grep -iE 'opencl|nvidia|cuda|error' | head -30
} >>"$out/env.txt" 2>&1

# Runs `rlx bench` on device $1 for every case, appending to bench.jsonl.
bench_all() {
  local d=$1 c m b
  for c in "${anchor_cases[@]}"; do
    m=${c%%:*} b=${c##*:}
    # shellcheck disable=SC2086
    step "bench $m b$b $d" 45 "$bin/rlx" bench $(anchor_flags "$m" "$b") --device "$d" \
      --runs 30 --warmup 5 --json >>"$out/bench.jsonl" 2>>"$out/env.txt"
  done
}
: >"$out/bench.jsonl"
# The first OpenCL device is the GPU (the loader sees only the NVIDIA driver). Most valuable first:
# the model latencies on the GPU, then the peer (PyTorch CUDA, strict fp32) on the same card.
bench_all opencl
step "torch peer" 90 python3 "$root/scripts/anchors/gpu_torch_peer.py" --anchors "$dir/anchors" \
  --json "$out/torch.jsonl" --reps 50 >/dev/null 2>>"$out/env.txt"

step conformance 90 "$bin/rlx_opencl_conformance_test" --gtest_brief=1 \
  >"$out/conformance.txt" 2>&1
tail -3 "$out/conformance.txt" >>"$summary"
# Parity against PyTorch on the GPU: torch's weights and output, rlx on the OpenCL device (the
# table is appended to conformance.txt).
step parity 90 env RLX="$bin/rlx" RLX_ANCHORS="$dir/anchors" RLX_PYTHON=python3 \
  bash "$root/scripts/anchors/parity.sh" --device opencl --work /tmp/rlx-parity \
  >>"$out/conformance.txt" 2>&1
tail -1 "$out/conformance.txt" >>"$summary"

export RLX_GEMM_BENCH_LARGE=1
step gemm 90 "$bin/rlx_opencl_gemm_bench" --benchmark_min_time=0.05 \
  --benchmark_out="$out/gemm.json" --benchmark_out_format=json >/dev/null 2>>"$out/env.txt"
step attention 40 "$bin/rlx_opencl_attention_bench" --benchmark_min_time=0.05 \
  --benchmark_out="$out/attention.json" --benchmark_out_format=json >/dev/null 2>>"$out/env.txt"

# Where the GPU's time goes: per-node device time (OpenCL profiling events) of bert_base b1 and
# llama b1, as JSON lines ("kernels") appended to bench.jsonl and as tables at the end of env.txt.
for c in bert_base:1 llama:1; do
  m=${c%%:*} b=${c##*:}
  # shellcheck disable=SC2086
  step "profile $m b$b opencl" 30 "$bin/rlx" bench $(anchor_flags "$m" "$b") --device opencl \
    --runs 20 --warmup 5 --profile --json >>"$out/bench.jsonl" 2>>"$out/env.txt"
  echo "== rlx bench --profile: $m b$b opencl" >>"$out/env.txt"
  # shellcheck disable=SC2086
  step "profile table $m b$b opencl" 30 "$bin/rlx" bench $(anchor_flags "$m" "$b") \
    --device opencl --runs 20 --warmup 5 --profile >>"$out/env.txt" 2>&1
done

# Training on the GPU: the digits MLP (data/digits travels with the tree), 100 AdamW steps on
# each device, the same losses expected (Cli.OpenClTrainsTheDigitsMlpAsTheCpuDoes on pocl).
: >"$out/train.jsonl"
for d in opencl cpu; do
  step "train mlp $d" 45 "$bin/rlx" train --model mlp --data "$root/data/digits" --batch 64 \
    --steps 100 --eval-every 50 --optimizer adamw --lr 0.003 --seed 1 --json --device "$d" \
    >>"$out/train.jsonl" 2>>"$out/env.txt"
done

# The CPU backend on the same machine, for reference, last (least needed).
bench_all cpu

echo "total $(($(date +%s) - start)) s of a $budget s budget" >>"$summary"
cat "$summary"
