// epilogue.cpp: bias_act_f32, one multiversioned loop per activation.
#include "epilogue.hpp"

#include "simd.hpp"
#include "unary_math.hpp"

namespace rlx::cpu {

RLX_CPU_MULTIVERSION void bias_act_f32(float* z, std::int64_t rows, std::int64_t cols,
                                       std::int64_t ld, const float* bias, ir::Activation act) {
  const std::optional<ir::OpKind> op = ir::activation_op(act);
  if (!op) {
    if (bias)
      for (std::int64_t r = 0; r < rows; ++r) {
        float* y = z + r * ld;
#pragma omp simd
        for (std::int64_t j = 0; j < cols; ++j)
          y[j] += bias[j];
      }
    return;
  }
  with_unary<float>(*op, [&](auto f) {
    for (std::int64_t r = 0; r < rows; ++r) {
      float* y = z + r * ld;
      if (bias) {
#pragma omp simd
        for (std::int64_t j = 0; j < cols; ++j)
          y[j] = f(y[j] + bias[j]);
      } else {
#pragma omp simd
        for (std::int64_t j = 0; j < cols; ++j)
          y[j] = f(y[j]);
      }
    }
  });
}

} // namespace rlx::cpu
