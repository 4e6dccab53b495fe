// gemm_packed_avx512.cpp: the packed GEMM's tile code for x86-64-v4 (AVX-512: 32 registers of 16
// floats; a 14 x 32 tile, 28 accumulators). Compiled with -march=x86-64-v4
// (rlx-cpu/CMakeLists.txt).
#define RLX_GEMM_NS avx512
#define RLX_GEMM_VW 16
#define RLX_GEMM_NV 2
#define RLX_GEMM_MR 14
#include "gemm_packed_tile.inc"
