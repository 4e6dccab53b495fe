// simd.hpp (private): the f32 math of simd_math.hpp (written so the compiler vectorises the loops
// that use it), and the hot f32 row kernels compiled for several instruction sets (AVX-512,
// AVX2+FMA, baseline x86-64, picked at load time by the dynamic linker through GCC's
// target_clones).
#pragma once

#include "simd_math.hpp"

#include <cstdint>

/// Marks a function to be compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and the
/// baseline, dispatched at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RLX_CPU_MULTIVERSION                                                                       \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RLX_CPU_MULTIVERSION
#endif

namespace rlx::cpu::simd {

// ---- multiversioned f32 row kernels (simd.cpp) -------------------------------------------------

/// Sum of \p x[0, n) with several accumulators.
float sum(const float* x, std::int64_t n);
/// Dot product of \p a and \p b over n elements.
float dot(const float* a, const float* b, std::int64_t n);
/// y[i] = x[i] * s * g[i] for i < n (RMSNorm's output step).
void scale_mul(float* y, const float* x, const float* g, float s, std::int64_t n);
/// Sum of squares of \p x[0, n).
float sum_squares(const float* x, std::int64_t n);
/// s[i] = x[i] + r[i] for i < n; \returns the sum of the new s (the residual + LayerNorm pass).
float add_sum(float* s, const float* x, const float* r, std::int64_t n);
/// s[i] = x[i] + r[i] for i < n; \returns the sum of squares of the new s (residual + RMSNorm).
float add_sum_squares(float* s, const float* x, const float* r, std::int64_t n);
/// Sum of (x[i] - m)² over i < n (LayerNorm's variance, second pass over a cached row).
float centered_sum_squares(const float* x, float m, std::int64_t n);
/// y[i] = (x[i] - m) * s * g[i] + b[i] for i < n, without the + b[i] when \p b is null
/// (LayerNorm's output step).
void center_scale_mul_add(float* y, const float* x, float m, float s, const float* g,
                          const float* b, std::int64_t n);

/// max of \p x[0, n) (n ≥ 1; NaN propagates).
float max(const float* x, std::int64_t n);
/// x[i] = e^(x[i] - m) for i < n, m >= every x[i] (their max; NaN propagates); \returns the sum
/// of the new values.
float exp_shift_sum(float* x, std::int64_t n, float m);
/// x[i] *= s for i < n.
void scale(float* x, float s, std::int64_t n);

} // namespace rlx::cpu::simd
