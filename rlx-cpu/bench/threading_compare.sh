#!/usr/bin/env bash
# threading_compare.sh: compares how the CPU backend's thread pools share the cores on a BERT-base
# layer (b1 s128 by default): OpenMP wait policies × GEMM providers × thread counts. Alternatives
# are interleaved round by round (so a change in machine load hits all of them alike) and each line
# of the summary is the median over the rounds of each run's median latency.
#
#   threading_compare.sh <build-dir> [rounds] [extra threading_bench args...]
set -euo pipefail
build=${1:?usage: threading_compare.sh <build-dir> [rounds] [args...]}
rounds=${2:-5}
shift $(( $# >= 2 ? 2 : 1 ))
bench="$build/rlx-cpu/bench/rlx_cpu_threading_bench"
configs=(
  "default|onednn|2|"
  "OMP_WAIT_POLICY=PASSIVE|onednn|2|OMP_WAIT_POLICY=PASSIVE"
  "GOMP_SPINCOUNT=0|onednn|2|GOMP_SPINCOUNT=0"
  "OMP_WAIT_POLICY=ACTIVE|onednn|2|OMP_WAIT_POLICY=ACTIVE"
  "default|onednn|1|"
  "OMP_WAIT_POLICY=PASSIVE|onednn|1|OMP_WAIT_POLICY=PASSIVE"
  "default|openblas|2|"
  "OMP_WAIT_POLICY=PASSIVE|openblas|2|OMP_WAIT_POLICY=PASSIVE"
)
declare -A results
for ((r = 0; r < rounds; ++r)); do
  for c in "${configs[@]}"; do
    IFS='|' read -r label gemm threads envs <<<"$c"
    ms=$(env -u OMP_WAIT_POLICY -u GOMP_SPINCOUNT RLX_NO_REEXEC=1 $envs \
           "$bench" --gemm "$gemm" --threads "$threads" --reps 15 "$@" |
         sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
    results["$c"]+="$ms "
  done
done
printf '%-26s %-9s %-7s %s\n' "environment" "gemm" "threads" "median of $rounds run medians (ms)  [all]"
for c in "${configs[@]}"; do
  IFS='|' read -r label gemm threads envs <<<"$c"
  med=$(tr ' ' '\n' <<<"${results[$c]}" | sed '/^$/d' | sort -g | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}')
  printf '%-26s %-9s %-7s %8s   [%s]\n' "$label" "$gemm" "$threads" "$med" "${results[$c]% }"
done
