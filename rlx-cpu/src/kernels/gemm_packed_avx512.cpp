// gemm_packed_avx512.cpp: the packed GEMM's tile code for x86-64-v4 (AVX-512: 32 registers of 16
// floats; a 6 x 64 tile, 24 accumulators). Compiled with -march=x86-64-v4 (rlx-cpu/CMakeLists.txt).
// Six rows, not fourteen (a 14 x 32 tile, 28 accumulators, until session 24): A is read in place,
// and rows a multiple of 4 KiB apart (K = 1024, 3072) share one set of the L1; fourteen of them
// overflow its 12 ways, six do not.
#define RLX_GEMM_NS avx512
#define RLX_GEMM_VW 16
#define RLX_GEMM_NV 4
#define RLX_GEMM_MR 6
#include "gemm_packed_tile.inc"
