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

/// tanh(x) in f32 without branches (so loops over it vectorise): Eigen's 13/6 rational minimax
/// approximation (generic_fast_tanh_float, MPL-2.0), within 6 ulp (tested to 8); the input is
/// clamped to ±7.9 (beyond it tanh rounds to ±1) and |x| < 0.0004 returns x. NaN stays NaN.
inline float tanh(float x) {
  constexpr float kClamp = 7.90531110763549805f;
  float xc = x < -kClamp ? -kClamp : x;
  xc = xc > kClamp ? kClamp : xc;
  const float x2 = xc * xc;
  float p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = xc * p;
  float q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  float r = p / q;
  r = (x < 0.0004f && x > -0.0004f) ? x : r;
  return x != x ? x : r;
}

/// erf(x) in f32 without branches: Eigen's 13/8 rational approximation (generic_fast_erf_float,
/// MPL-2.0), within 7 ulp (tested to 8); the input is clamped to ±4 (beyond it erf rounds to ±1).
/// NaN stays NaN.
inline float erf(float x) {
  float xc = x < -4.0f ? -4.0f : x;
  xc = xc > 4.0f ? 4.0f : xc;
  const float x2 = xc * xc;
  float p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  p = xc * p;
  float q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  float r = p / q;
  return x != x ? x : r;
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
/// x[i] = e^(x[i] - m) for i < n; \returns the sum of the new values.
float exp_shift_sum(float* x, std::int64_t n, float m);
/// x[i] *= s for i < n.
void scale(float* x, float s, std::int64_t n);

} // namespace rlx::cpu::simd
