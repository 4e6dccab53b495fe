// simd.cpp: the multiversioned f32 row kernels of simd.hpp.
#include "simd.hpp"

#include <limits>

namespace rlx::cpu::simd {

RLX_CPU_MULTIVERSION float sum(const float* x, std::int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i)
    s += x[i];
  return s;
}

RLX_CPU_MULTIVERSION float dot(const float* a, const float* b, std::int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i)
    s += a[i] * b[i];
  return s;
}

RLX_CPU_MULTIVERSION void scale_mul(float* y, const float* x, const float* g, float s,
                                    std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = x[i] * s * g[i];
}

RLX_CPU_MULTIVERSION float sum_squares(const float* x, std::int64_t n) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i)
    s += x[i] * x[i];
  return s;
}

// The residual-norm reductions keep kLanes independent partial sums (4 AVX2 / 2 AVX-512 vectors)
// so a row's reduction is not bound by the latency of one vector add. (On the loaded shared
// machine this measured the same as one accumulator; kept, as it cannot be slower.)
namespace {
constexpr std::int64_t kLanes = 32;
} // namespace

RLX_CPU_MULTIVERSION float add_sum(float* s, const float* x, const float* r, std::int64_t n) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::int64_t j = 0; j < kLanes; ++j) {
      s[i + j] = x[i + j] + r[i + j];
      acc[j] += s[i + j];
    }
  }
  float t = 0.0f;
  for (; i < n; ++i) {
    s[i] = x[i] + r[i];
    t += s[i];
  }
  for (std::int64_t j = 0; j < kLanes; ++j)
    t += acc[j];
  return t;
}

RLX_CPU_MULTIVERSION float add_sum_squares(float* s, const float* x, const float* r,
                                           std::int64_t n) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::int64_t j = 0; j < kLanes; ++j) {
      s[i + j] = x[i + j] + r[i + j];
      acc[j] += s[i + j] * s[i + j];
    }
  }
  float t = 0.0f;
  for (; i < n; ++i) {
    s[i] = x[i] + r[i];
    t += s[i] * s[i];
  }
  for (std::int64_t j = 0; j < kLanes; ++j)
    t += acc[j];
  return t;
}

RLX_CPU_MULTIVERSION float centered_sum_squares(const float* x, float m, std::int64_t n) {
  float acc[kLanes] = {};
  std::int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma omp simd
    for (std::int64_t j = 0; j < kLanes; ++j) {
      const float v = x[i + j] - m;
      acc[j] += v * v;
    }
  }
  float t = 0.0f;
  for (; i < n; ++i)
    t += (x[i] - m) * (x[i] - m);
  for (std::int64_t j = 0; j < kLanes; ++j)
    t += acc[j];
  return t;
}

RLX_CPU_MULTIVERSION void center_scale_mul_add(float* y, const float* x, float m, float s,
                                               const float* g, const float* b, std::int64_t n) {
  if (b == nullptr) {
#pragma omp simd
    for (std::int64_t i = 0; i < n; ++i)
      y[i] = (x[i] - m) * s * g[i];
    return;
  }
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i)
    y[i] = (x[i] - m) * s * g[i] + b[i];
}

RLX_CPU_MULTIVERSION float max(const float* x, std::int64_t n) {
  float m = x[0];
  bool nan = false;
#pragma omp simd reduction(max : m) reduction(|| : nan)
  for (std::int64_t i = 0; i < n; ++i) {
    m = x[i] > m ? x[i] : m;
    nan = nan || (x[i] != x[i]);
  }
  return nan ? std::numeric_limits<float>::quiet_NaN() : m;
}

RLX_CPU_MULTIVERSION float exp_shift_sum(float* x, std::int64_t n, float m) {
  float s = 0.0f;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i) {
    x[i] = exp_nonpositive(x[i] - m);
    s += x[i];
  }
  return s;
}

RLX_CPU_MULTIVERSION void scale(float* x, float s, std::int64_t n) {
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i)
    x[i] *= s;
}

} // namespace rlx::cpu::simd
