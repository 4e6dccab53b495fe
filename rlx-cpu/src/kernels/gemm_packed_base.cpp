// gemm_packed_base.cpp: the packed GEMM's tile code for baseline x86-64 (SSE2: 16 registers of 4
// floats; a 6 x 8 tile) or any other target.
#define RLX_GEMM_NS base
#define RLX_GEMM_VW 4
#define RLX_GEMM_NV 2
#define RLX_GEMM_MR 6
#include "gemm_packed_tile.inc"
