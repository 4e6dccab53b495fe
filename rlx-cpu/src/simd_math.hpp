// simd_math.hpp (private): the f32 elementwise math of the CPU kernels (exp, tanh, erf and the
// activations built on them), one definition each, as branch-free templates over float and GCC
// float vectors (float __attribute__((vector_size(N)))). On float, loops over them vectorise
// (unary_math.hpp, softmax, attention); on a vector, the packed GEMM's tile applies its activation
// to the accumulators in registers (gemm_packed_tile.inc).
//
// Every function is always inlined and the header calls nothing from a library (only compiler
// builtins): gemm_packed_tile.inc is compiled for several instruction sets, and an out-of-line copy
// compiled there for a wider ISA could be the one the linker keeps for the whole program.
#pragma once

#include <cstdint>
#include <type_traits>

namespace rlx::cpu::simd {

/// float, or a GCC vector of floats.
template <class F> struct IsF32 : std::is_same<F, float> {};
template <class F>
requires requires(F v) {
  v[0];
}
struct IsF32<F> : std::is_same<std::remove_cvref_t<decltype(std::declval<F&>()[0])>, float> {};

/// The 32-bit integer of the same shape as \p F (what a comparison of two F's gives on vectors).
template <class F>
using IntOf = std::conditional_t<std::is_same_v<F, float>, std::int32_t, decltype(F{} < F{})>;

#define RLX_SIMD_F32(F) static_assert(IsF32<F>::value, "simd math is f32 (float or float vectors)")

/// exp's lower and upper input bounds: below kExpLow e^x is under FLT_MIN (flushed to 0), above
/// kExpHigh it overflows.
inline constexpr float kExpLow = -87.3f, kExpHigh = 88.72f;

/// The core of exp and exp_nonpositive, for \p xc in [kExpLow, kExpHigh]: e^xc = e · 2^n, with
/// n = round(xc / ln2) (by the 1.5·2^23 trick: a float-to-int conversion after the clamps keeps
/// GCC 12 from vectorising the loop) into \p n, and e = e^r for the Cody–Waite reduced
/// r = xc - n ln2 (a degree-6 polynomial, Cephes' expf coefficients) returned.
template <class F> [[gnu::always_inline]] inline F exp_reduced(F xc, IntOf<F>& n) {
  using I = IntOf<F>;
  constexpr float kMagic = 0x1.8p23f;
  F t = xc * 1.44269504088896341f + kMagic;
  n = __builtin_bit_cast(I, t) - __builtin_bit_cast(std::int32_t, kMagic);
  F fnr = t - kMagic;
  F r = xc - fnr * 0.693359375f + fnr * 2.12194440e-4f;
  F p = r * 1.9875691500e-4f + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}

/// e^x without branches or conversions (so loops over it vectorise): exp_reduced scaled by 2^n
/// in two steps so every n in [-126, 128] stays in the normal range. Relative error ≤ 2 ulp;
/// results below FLT_MIN (x < -87.3) flush to 0, x > 88.72 gives +inf, NaN stays NaN.
template <class F> [[gnu::always_inline]] inline F exp(F x) {
  RLX_SIMD_F32(F);
  // Written without nested conditionals or divisions so GCC if-converts and vectorises it.
  F xc = x < kExpLow ? kExpLow : x;
  xc = xc > kExpHigh ? kExpHigh : xc;
  IntOf<F> n;
  const F e = exp_reduced(xc, n);
  const IntOf<F> n1 = n >> 1, n2 = n - n1; // 2^n = 2^n1 · 2^n2, both normal
  F res = e * __builtin_bit_cast(F, (n1 + 127) << 23) * __builtin_bit_cast(F, (n2 + 127) << 23);
  res = x < kExpLow ? 0.0f : res;
  res = x > kExpHigh ? __builtin_inff() : res;
  return x != x ? x : res;
}

/// e^x for x <= 0, -inf or NaN (the softmax's shifted scores): exp without the upper clamp and
/// with 2^n in one step (n >= -126 is normal), the same values to the bit. A positive x gives a
/// wrong value.
template <class F> [[gnu::always_inline]] inline F exp_nonpositive(F x) {
  RLX_SIMD_F32(F);
  const F xc = x < kExpLow ? kExpLow : x;
  IntOf<F> n;
  F res = exp_reduced(xc, n) * __builtin_bit_cast(F, (n + 127) << 23);
  res = x < kExpLow ? 0.0f : res;
  return x != x ? x : res;
}

/// 1 / (1 + e^-x).
template <class F> [[gnu::always_inline]] inline F sigmoid(F x) {
  return 1.0f / (1.0f + simd::exp(-x));
}

/// tanh(x) without branches (so loops over it vectorise): Eigen's 13/6 rational minimax
/// approximation (generic_fast_tanh_float, MPL-2.0), within 6 ulp (tested to 8); the input is
/// clamped to ±7.9 (beyond it tanh rounds to ±1) and |x| < 0.0004 returns x. NaN stays NaN.
template <class F> [[gnu::always_inline]] inline F tanh(F x) {
  RLX_SIMD_F32(F);
  constexpr float kClamp = 7.90531110763549805f;
  F xc = x < -kClamp ? -kClamp : x;
  xc = xc > kClamp ? kClamp : xc;
  const F x2 = xc * xc;
  F p = x2 * -2.76076847742355e-16f + 2.00018790482477e-13f;
  p = x2 * p + -8.60467152213735e-11f;
  p = x2 * p + 5.12229709037114e-08f;
  p = x2 * p + 1.48572235717979e-05f;
  p = x2 * p + 6.37261928875436e-04f;
  p = x2 * p + 4.89352455891786e-03f;
  p = xc * p;
  F q = x2 * 1.19825839466702e-06f + 1.18534705686654e-04f;
  q = x2 * q + 2.26843463243900e-03f;
  q = x2 * q + 4.89352518554385e-03f;
  F r = p / q;
  r = (x < 0.0004f && x > -0.0004f) ? x : r;
  return x != x ? x : r;
}

/// erf(x) without branches: Eigen's 13/8 rational approximation (generic_fast_erf_float,
/// MPL-2.0), within 7 ulp (tested to 8); the input is clamped to ±4 (beyond it erf rounds to ±1).
/// NaN stays NaN.
template <class F> [[gnu::always_inline]] inline F erf(F x) {
  RLX_SIMD_F32(F);
  F xc = x < -4.0f ? -4.0f : x;
  xc = xc > 4.0f ? 4.0f : xc;
  const F x2 = xc * xc;
  F p = x2 * -2.72614225801306e-10f + 2.77068142495902e-08f;
  p = x2 * p + -2.10102402082508e-06f;
  p = x2 * p + -5.69250639462346e-05f;
  p = x2 * p + -7.34990630326855e-04f;
  p = x2 * p + -2.95459980854025e-03f;
  p = x2 * p + -1.60960333262415e-02f;
  p = xc * p;
  F q = x2 * -1.45660718464996e-05f + -2.13374055278905e-04f;
  q = x2 * q + -1.68282697438203e-03f;
  q = x2 * q + -7.37332916720468e-03f;
  q = x2 * q + -1.42647390514189e-02f;
  F r = p / q;
  return x != x ? x : r;
}

/// max(x, 0) (NaN stays NaN).
template <class F> [[gnu::always_inline]] inline F relu(F x) {
  RLX_SIMD_F32(F);
  return x < 0.0f ? 0.0f : x;
}

/// GELU, erf form: x/2 · (1 + erf(x / √2)).
template <class F> [[gnu::always_inline]] inline F gelu(F x) {
  return 0.5f * x * (1.0f + simd::erf(x * 0.70710678118654752440f));
}

/// GELU, tanh form: x/2 · (1 + tanh(√(2/π) · (x + 0.044715 x³))).
template <class F> [[gnu::always_inline]] inline F gelu_tanh(F x) {
  constexpr float k = 0.79788456080286535588f; // sqrt(2 / pi)
  return 0.5f * x * (1.0f + simd::tanh(k * (x + 0.044715f * x * x * x)));
}

/// SiLU: x / (1 + e^-x).
template <class F> [[gnu::always_inline]] inline F silu(F x) {
  return x / (1.0f + simd::exp(-x));
}

#undef RLX_SIMD_F32

} // namespace rlx::cpu::simd
