#!/usr/bin/env bash
# run-ctest.sh BUILD_DIR [CTEST_ARGS...]: runs the whole ctest suite of BUILD_DIR on every core.
# When tests fail, their output is printed again at the very end (CI keeps only the tail of a log),
# after a line naming the machine (CPU, its widest vector ISA, cores, memory), since a test that
# passes on one machine and fails on another is a result about that machine. The exit status stays
# the suite's: a failure is never turned into a pass.
set -uo pipefail
build="$1"
shift
ctest --test-dir "$build" --output-on-failure --parallel "$(nproc)" "$@"
status=$?
if [ "$status" -ne 0 ]; then
  isa=$(grep -m1 -o -w -E 'avx512f' /proc/cpuinfo || grep -m1 -o -w -E 'avx2' /proc/cpuinfo || echo baseline)
  cpu=$(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2-)
  mem=$(awk '/MemTotal/ {printf "%.1f GiB", $2 / 1048576}' /proc/meminfo)
  log=$(mktemp)
  ctest --test-dir "$build" --rerun-failed --output-on-failure "$@" >"$log" 2>&1
  echo "==== the failed tests run again, their output:"
  tail -n 200 "$log"
  # The lines that say why, last, where a truncated log still shows them.
  echo "==== why (machine:$cpu, $isa, $(nproc) cores, $mem):"
  grep -E 'Failure|Expected|Which is|difference|error|Error|ERROR|Sanitizer|SUMMARY|terminate|exception|  Passed|\*\*\*' "$log" |
    grep -v -E '^\s*$' | tail -n 25
  rm -f "$log"
  echo "==== ctest exit status $status"
fi
exit "$status"
