// simd.hpp (private): scalar math written so the compiler vectorises the loops that use it, and
// the hot f32 row kernels compiled for several instruction sets (AVX-512, AVX2+FMA, baseline
// x86-64, picked at load time by the dynamic linker through GCC's target_clones).
#pragma once

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

/// Marks a function to be compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2 + FMA) and the
/// baseline, dispatched at load time.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define RLX_CPU_MULTIVERSION                                                                       \
  __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define RLX_CPU_MULTIVERSION
#endif

namespace rlx::cpu::simd {

/// e^x in f32 without branches or conversions (so loops over it vectorise): Cody–Waite reduction
/// x = n ln2 + r and a degree-6 polynomial for e^r (Cephes' expf coefficients), scaled by 2^n in
/// two steps so every n in [-126, 128] stays in the normal range. Relative error ≤ 2 ulp; results
/// below FLT_MIN (x < -87.3) flush to 0, x > 88.72 gives +inf, NaN stays NaN.
inline float exp(float x) {
  // Written without nested conditionals or divisions so GCC if-converts and vectorises it.
  constexpr float kLow = -87.3f, kHigh = 88.72f;
  float xc = x < kLow ? kLow : x;
  xc = xc > kHigh ? kHigh : xc;
  // n = round(x / ln2) by the 1.5·2^23 trick (a float-to-int conversion after the clamps keeps
  // GCC 12 from vectorising the loop).
  constexpr float kMagic = 0x1.8p23f;
  float t = xc * 1.44269504088896341f + kMagic;
  std::int32_t n = std::bit_cast<std::int32_t>(t) - std::bit_cast<std::int32_t>(kMagic);
  float fnr = t - kMagic;
  float r = xc - fnr * 0.693359375f + fnr * 2.12194440e-4f;
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  float e = p * r * r + r + 1.0f;
  std::int32_t n1 = n >> 1, n2 = n - n1; // 2^n = 2^n1 · 2^n2, both normal
  float s1 = std::bit_cast<float>((n1 + 127) << 23);
  float s2 = std::bit_cast<float>((n2 + 127) << 23);
  float res = e * s1 * s2;
  res = x < kLow ? 0.0f : res;
  res = x > kHigh ? std::numeric_limits<float>::infinity() : res;
  res = x != x ? x : res;
  return res;
}

/// 1 / (1 + e^-x).
inline float sigmoid(float x) {
  return 1.0f / (1.0f + exp(-x));
}

// ---- multiversioned f32 row kernels (simd.cpp) -------------------------------------------------

/// Sum of \p x[0, n) with several accumulators.
float sum(const float* x, std::int64_t n);
/// Dot product of \p a and \p b over n elements.
float dot(const float* a, const float* b, std::int64_t n);
/// y[i] = x[i] * s * g[i] for i < n (RMSNorm's output step).
void scale_mul(float* y, const float* x, const float* g, float s, std::int64_t n);
/// Sum of squares of \p x[0, n).
float sum_squares(const float* x, std::int64_t n);
/// max of \p x[0, n) (n ≥ 1; NaN propagates).
float max(const float* x, std::int64_t n);
/// x[i] = e^(x[i] - m) for i < n; \returns the sum of the new values.
float exp_shift_sum(float* x, std::int64_t n, float m);
/// x[i] *= s for i < n.
void scale(float* x, float s, std::int64_t n);

} // namespace rlx::cpu::simd
