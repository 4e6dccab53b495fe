// epilogue.hpp (private): the f32 bias + activation epilogue of a GEMM's output block, compiled
// for AVX-512, AVX2 + FMA and baseline x86-64 (picked at load time), so the activation's
// branch-free polynomial (simd.hpp) runs 8 or 16 lanes wide whatever the caller was compiled for.
#pragma once

#include "rlx/ir/attrs.hpp"

#include <cstdint>

namespace rlx::cpu {

/// z[r * ld + j] = act(z[r * ld + j] + bias[j]) for r < rows, j < cols; \p bias may be null (no
/// add), \p act none (no activation). The same functions as the one-op kernels (unary_math.hpp).
void bias_act_f32(float* z, std::int64_t rows, std::int64_t cols, std::int64_t ld,
                  const float* bias, ir::Activation act);

} // namespace rlx::cpu
