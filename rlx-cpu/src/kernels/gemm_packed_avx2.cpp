// gemm_packed_avx2.cpp: the packed GEMM's tile code for x86-64-v3 (AVX2 + FMA: 16 registers of 8
// floats; a 6 x 16 tile, 12 accumulators). Compiled with -march=x86-64-v3 (rlx-cpu/CMakeLists.txt).
#define RLX_GEMM_NS avx2
#define RLX_GEMM_VW 8
#define RLX_GEMM_NV 2
#define RLX_GEMM_MR 6
#include "gemm_packed_tile.inc"
