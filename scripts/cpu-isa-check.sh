#!/usr/bin/env bash
# cpu-isa-check.sh: rlx's CPU backend on a lent device machine's host CPU, which has AVX-512 where
# the dev VMs have had only AVX2: the AVX-512 code paths (the packed GEMM's 14x32 tile, the
# x86-64-v4 clones of the multiversioned kernels, oneDNN's AVX-512 kernels) run their tests and
# the anchor models there. One short run that fits a device budget. Two halves:
#
#   scripts/cpu-isa-check.sh --stage [BUILD]   here: builds rlx, the rlx-cpu test programs and
#       scripts/anchors/fma_peak.cpp, packs them with their shared libraries into
#       .cpu-stage/cpu-bundle.tar.gz (.gitignore'd, ~53 MiB; carried: `carry: [".cpu-stage"]`).
#   scripts/cpu-isa-check.sh [--budget SECONDS] [--no-variants]   there: writes under $OUT
#         env.txt       the CPU (model, cores, AVX-512 flags), the FMA peak on 2 threads and all
#         tests.txt     every rlx-cpu test program at the CPU's widest ISA, then the packed GEMM's
#                       and the conformance table's tests again with the packed GEMM capped at
#                       AVX2 (RLX_GEMM_ISA=avx2), brief output (failures in full)
#         bench.jsonl   `rlx bench --json --threads 2` of the anchor rows: --gemm auto, then
#                       --gemm packed at avx512 and at avx2 (the two tiles on one machine; not
#                       with --no-variants); then
#                       bert_mini b1 and llama b1 --profile tables (in env.txt)
#         attention.txt the attention kernel's benchmark (rlx_cpu_kernels_bench BM_Attention) with
#                       AVX-512-wide and AVX2-wide micro-kernels
#         torch.jsonl   the peer on the same CPU: eager PyTorch on 2 threads
#                       (../shared/anchors/bench_torch.py: the forward rows and two training steps)
#         summary.txt   one line per step: its exit status and wall time
#
# Device call:
#   run(command="bash scripts/cpu-isa-check.sh --budget 300", carry=[".cpu-stage"], timeout_s=360)
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
# shellcheck source=lib/device.sh
source "$root/scripts/lib/device.sh"
stage_dir="$root/.cpu-stage"
tests=(conformance gemm_packed kernels attention_block residual_norm transformer_layer
  transformer_fusions region executable)

if [[ "${1:-}" == "--stage" ]]; then
  set -e
  build=${2:-"$root/build"}
  targets=(rlx rlx_cpu_kernels_bench)
  for t in "${tests[@]}"; do targets+=("rlx_cpu_${t}_test"); done
  cmake --build "$build" --parallel "${RLX_STAGE_JOBS:-2}" --target "${targets[@]}"
  tmp=$(mktemp -d)
  mkdir -p "$tmp/anchors"
  g++ -O2 -pthread "$root/scripts/anchors/fma_peak.cpp" -o "$tmp/fma_peak"
  anchors=${RLX_ANCHORS:-$root/../shared/anchors}
  cp "$anchors/make_models.py" "$anchors/bench_torch.py" "$tmp/anchors/"
  programs=("$build/rlx-runtime/rlx" "$build/rlx-cpu/bench/rlx_cpu_kernels_bench")
  for t in "${tests[@]}"; do programs+=("$build/rlx-cpu/tests/rlx_cpu_${t}_test"); done
  bundle_programs "$tmp" "${programs[@]}" "$tmp/fma_peak"
  rm "$tmp/fma_peak"
  mkdir -p "$stage_dir"
  tar -C "$tmp" -czf "$stage_dir/cpu-bundle.tar.gz" bin lib fallback anchors
  rm -rf "$tmp"
  ls -la "$stage_dir/cpu-bundle.tar.gz"
  echo "staged; carry .cpu-stage and run scripts/cpu-isa-check.sh on the device machine"
  exit 0
fi

budget=300
variants=1
while [[ $# -gt 0 ]]; do
  case "$1" in
  --budget) budget=${2:?--budget needs seconds}; shift 2 ;;
  --no-variants) variants=0; shift ;;
  *) echo "cpu-isa-check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
begin_device_run cpu-isa-check "$stage_dir/cpu-bundle.tar.gz" /tmp/rlx-cpu-isa
export RLX_GEMM_CHOICES=/tmp/rlx-gemm-choices.tsv
rm -f "$RLX_GEMM_CHOICES"

{
  echo "== date"; date -u
  echo "== cpu"; nproc; grep -m1 'model name' /proc/cpuinfo
  grep -m1 '^flags' /proc/cpuinfo | tr ' ' '\n' | grep -E 'avx512|amx|avx_vnni|fma' | tr '\n' ' '
  echo
  echo "== fma peak"; "$bin/fma_peak" 2; "$bin/fma_peak" "$(nproc)"
} >"$out/env.txt" 2>&1

# Correctness first: every test program at the widest ISA, then the GEMM and conformance tests
# with the packed GEMM capped at AVX2 (the dev VMs' tile, checked on this machine too).
: >"$out/tests.txt"
for t in "${tests[@]}"; do
  echo "== rlx_cpu_${t}_test" >>"$out/tests.txt"
  step "test $t" 90 "$bin/rlx_cpu_${t}_test" --gtest_brief=1 >>"$out/tests.txt" 2>&1
  tail -2 "$out/tests.txt" | grep -E 'PASSED|FAILED' >>"$summary"
done
for t in gemm_packed conformance; do
  echo "== rlx_cpu_${t}_test, RLX_GEMM_ISA=avx2" >>"$out/tests.txt"
  step "test $t avx2" 60 env RLX_GEMM_ISA=avx2 "$bin/rlx_cpu_${t}_test" --gtest_brief=1 \
    >>"$out/tests.txt" 2>&1
done

: >"$out/bench.jsonl"
# bench_all TAG "RLX FLAGS" [NAME=VALUE...]: every case on 2 threads with the extra flags and
# environment, one JSON line each (after a line naming the variant and case).
bench_all() {
  local tag=$1 extra=$2 c m b
  shift 2
  for c in "${anchor_cases[@]}"; do
    m=${c%%:*} b=${c##*:}
    echo "{\"variant\": \"$tag\", \"case\": \"$m b$b\"}" >>"$out/bench.jsonl"
    # shellcheck disable=SC2086
    step "bench $tag $m b$b" 40 env "$@" "$bin/rlx" bench $(anchor_flags "$m" "$b") --threads 2 \
      --runs 30 --warmup 5 $extra --json >>"$out/bench.jsonl" 2>>"$out/env.txt"
  done
}
bench_all auto ""
step "torch peer" 90 env OMP_NUM_THREADS=2 MKL_NUM_THREADS=2 OPENBLAS_NUM_THREADS=2 \
  python3 "$dir/anchors/bench_torch.py" --target-s 1 --json "$out/torch.jsonl" \
  >>"$out/env.txt" 2>&1
if ((variants)); then
  bench_all packed-avx512 "--gemm packed" RLX_GEMM_ISA=avx512
  bench_all packed-avx2 "--gemm packed" RLX_GEMM_ISA=avx2
fi
# The attention kernel alone, AVX-512-wide micro-kernels against AVX2-wide ones on this CPU
# (RLX_GEMM_ISA caps both the packed GEMM's tile and the attention micro-kernels' width).
for isa in avx512 avx2; do
  echo "== BM_Attention, RLX_GEMM_ISA=$isa" >>"$out/attention.txt"
  step "attention bench $isa" 40 env RLX_GEMM_ISA=$isa "$bin/rlx_cpu_kernels_bench" \
    --benchmark_filter='BM_Attention/' --benchmark_min_time=0.1 >>"$out/attention.txt" 2>&1
done
for c in bert_mini:1 llama:1; do
  m=${c%%:*} b=${c##*:}
  echo "== rlx bench --profile: $m b$b" >>"$out/env.txt"
  # shellcheck disable=SC2086
  step "profile $m b$b" 30 "$bin/rlx" bench $(anchor_flags "$m" "$b") --threads 2 --runs 30 \
    --warmup 5 --profile >>"$out/env.txt" 2>&1
done

echo "total $(($(date +%s) - start)) s of a $budget s budget" >>"$summary"
cat "$summary"
