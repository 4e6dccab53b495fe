#!/usr/bin/env bash
# test-sanitizers.sh: the sanitizer job. Installs the dependencies, builds rlx with
# AddressSanitizer + UndefinedBehaviorSanitizer into build-asan/ (warnings as errors, assertions on)
# and runs the whole ctest suite under them. Any ASan / UBSan report fails the run: UBSan halts on
# the first error, and LeakSanitizer reports every leak except the reviewed third-party ones in
# scripts/sanitizers/lsan.supp (never rlx's own code).
set -euo pipefail
cd "$(dirname "$0")/.."

bash scripts/install-deps.sh
san="-fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all"
# GCC 12 reports false -Wmaybe-uninitialized inside libstdc++ (<regex>, std::function) when the
# sanitizers instrument it; the warning stays on in the ordinary build.
warn="-Wno-maybe-uninitialized"
# CI time (a cold build on 2 cores, after scripts/test.sh's): -O1 (the sanitizers' advice, and the
# tests run several times faster than at -O0) without debug information (reports name functions,
# not lines: rebuild with -g1 locally to get lines), and no benchmark programs (never tests). The
# examples are tests and stay.
cmake -S . -B build-asan -G Ninja -DRLX_WERROR=ON -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g0" \
  -DCMAKE_CXX_FLAGS="$san $warn" -DCMAKE_EXE_LINKER_FLAGS="$san" -DCMAKE_SHARED_LINKER_FLAGS="$san" \
  -DRLX_BUILD_EXAMPLES=ON -DRLX_BUILD_BENCHMARKS=OFF
cmake --build build-asan --parallel "$(nproc)"

supp="$PWD/scripts/sanitizers/lsan.supp"
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=0:strict_string_checks=1:detect_stack_use_after_return=0"
export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
# Tests that scale their sizes down under the sanitizers read this.
export RLX_SANITIZER_BUILD=1
# A fresh pocl kernel cache: the OpenCL tests then always run pocl's kernel compiler (LLVM) under
# the sanitizers, whatever an earlier run left in ~/.cache/pocl.
rm -rf build-asan/pocl-cache
export POCL_CACHE_DIR="$PWD/build-asan/pocl-cache"
bash scripts/run-ctest.sh build-asan --timeout 900
