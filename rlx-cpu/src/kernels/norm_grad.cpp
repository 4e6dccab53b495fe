// norm_grad.cpp: the backward ops of ops.def's "backward ops" section. LayerNormGrad and
// RmsNormGrad: rows in parallel, each row's dx in three vectorised sweeps (statistics; the two row
// sums of g = dy gamma; dx), dgamma / dbeta accumulated into one planned slice of scratch per
// thread and summed at the end (no atomics, no allocation). SoftmaxGrad / LogSoftmaxGrad: one
// vectorised dot (or sum) and one sweep per row. f32 is compiled for several instruction sets;
// f64 runs the same code in double.
#include "../axis_lanes.hpp"
#include "../lower.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>

namespace rlx::cpu {
namespace {

// ---- LayerNormGrad / RmsNormGrad
// -----------------------------------------------------------------

/// One row of a norm's backward: dx into \p dx, and dy xh (dgamma) / dy (dbeta, LayerNorm only)
/// added into the thread's partial sums \p pg / \p pb.
template <class T, bool Ln>
[[gnu::always_inline]] inline void norm_grad_row(const T* x, const T* gamma, const T* dy, T* dx,
                                                 T* pg, T* pb, std::int64_t d, T eps) {
  const T inv_d = T(1) / static_cast<T>(d);
  T mean = 0;
  if constexpr (Ln) {
    T s = 0;
#pragma omp simd reduction(+ : s)
    for (std::int64_t i = 0; i < d; ++i)
      s += x[i];
    mean = s * inv_d;
  }
  T ss = 0;
#pragma omp simd reduction(+ : ss)
  for (std::int64_t i = 0; i < d; ++i) {
    const T v = x[i] - mean;
    ss += v * v;
  }
  const T r = T(1) / std::sqrt(ss * inv_d + eps);
  T sg = 0, sgx = 0;
#pragma omp simd reduction(+ : sg, sgx)
  for (std::int64_t i = 0; i < d; ++i) {
    const T xh = (x[i] - mean) * r;
    const T g = dy[i] * gamma[i];
    sg += g;
    sgx += g * xh;
    pg[i] += dy[i] * xh;
    if constexpr (Ln)
      pb[i] += dy[i];
  }
  const T mg = Ln ? sg * inv_d : T(0), mgx = sgx * inv_d;
#pragma omp simd
  for (std::int64_t i = 0; i < d; ++i) {
    const T xh = (x[i] - mean) * r;
    dx[i] = r * (dy[i] * gamma[i] - mg - xh * mgx);
  }
}

RLX_CPU_MULTIVERSION void layer_norm_grad_row_f32(const float* x, const float* gamma,
                                                  const float* dy, float* dx, float* pg, float* pb,
                                                  std::int64_t d, float eps) {
  norm_grad_row<float, true>(x, gamma, dy, dx, pg, pb, d, eps);
}
RLX_CPU_MULTIVERSION void rms_norm_grad_row_f32(const float* x, const float* gamma, const float* dy,
                                                float* dx, float* pg, float* pb, std::int64_t d,
                                                float eps) {
  norm_grad_row<float, false>(x, gamma, dy, dx, pg, pb, d, eps);
}

template <class T, bool Ln>
void grad_row(const T* x, const T* gamma, const T* dy, T* dx, T* pg, T* pb, std::int64_t d, T eps) {
  if constexpr (std::is_same_v<T, float>) {
    if constexpr (Ln)
      layer_norm_grad_row_f32(x, gamma, dy, dx, pg, pb, d, eps);
    else
      rms_norm_grad_row_f32(x, gamma, dy, dx, pg, pb, d, eps);
  } else {
    norm_grad_row<T, Ln>(x, gamma, dy, dx, pg, pb, d, eps);
  }
}

/// Rows and row length of a norm's backward (x [.., D]).
struct NormRows {
  std::int64_t rows = 0, d = 0;
};
NormRows norm_rows(const NodeView& n) {
  NormRows r;
  r.d = n.in(0).sizes().back();
  r.rows = r.d == 0 ? 0 : n.in(0).numel() / r.d;
  return r;
}

/// Parameter gradients of a norm's backward: 2 (dgamma, dbeta) or 1 (dgamma).
std::int64_t param_grads(const NodeView& n) {
  return n.node().op == ir::OpKind::LayerNormGrad ? 2 : 1;
}

std::int64_t norm_grad_scratch(const NodeView& n) {
  return static_cast<std::int64_t>(std::max(n.threads, 1)) * param_grads(n) * norm_rows(n).d *
         static_cast<std::int64_t>(ir::dtype_size(n.out().dtype));
}

template <class T, bool Ln> class NormGradKernel final : public Kernel {
public:
  explicit NormGradKernel(const LowerContext& c)
      : r_(norm_rows(c)), slots_(std::max(c.threads, 1)),
        eps_(static_cast<T>(c.node().attr<ir::NormAttrs>().eps)),
        x_(reinterpret_cast<const T*>(c.src(0))), gamma_(reinterpret_cast<const T*>(c.src(1))),
        dy_(reinterpret_cast<const T*>(c.src(2))), dx_(reinterpret_cast<T*>(c.dst())),
        dgamma_(reinterpret_cast<T*>(c.dst() + c.out().part_offset(1))),
        dbeta_(Ln ? reinterpret_cast<T*>(c.dst() + c.out().part_offset(2)) : nullptr),
        partial_(reinterpret_cast<T*>(c.scratch(norm_grad_scratch(c)))) {}

  void run(ExecContext& ctx) override {
    const std::int64_t d = r_.d, per_slot = (Ln ? 2 : 1) * d;
    const int slots = std::min(std::max(ctx.threads, 1), slots_);
    std::fill(partial_, partial_ + slots * per_slot, T(0));
    auto rows = [&](std::int64_t b, std::int64_t e, int slot) {
      T* pg = partial_ + std::min(slot, slots - 1) * per_slot;
      T* pb = Ln ? pg + d : nullptr;
      for (std::int64_t row = b; row < e; ++row)
        grad_row<T, Ln>(x_ + row * d, gamma_, dy_ + row * d, dx_ + row * d, pg, pb, d, eps_);
    };
    if (slots > 1)
      parallel_for_slots(ctx, r_.rows, grain_for(d * 12), rows);
    else
      rows(0, r_.rows, 0);
    // the per-thread partial sums, in slot order
    for (std::int64_t i = 0; i < d; ++i) {
      T g = 0, bsum = 0;
      for (int s = 0; s < slots; ++s) {
        g += partial_[s * per_slot + i];
        if constexpr (Ln)
          bsum += partial_[s * per_slot + d + i];
      }
      dgamma_[i] = g;
      if constexpr (Ln)
        dbeta_[i] = bsum;
    }
  }

private:
  NormRows r_;
  int slots_;
  T eps_;
  const T* x_;
  const T* gamma_;
  const T* dy_;
  T* dx_;
  T* dgamma_;
  T* dbeta_;
  T* partial_;
};

bool accepts_f32_f64(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 || n.out().dtype == ir::DType::f64;
}

template <bool Ln> std::unique_ptr<Kernel> make_norm_grad(const LowerContext& c) {
  if (c.out().dtype == ir::DType::f32)
    return std::make_unique<NormGradKernel<float, Ln>>(c);
  return std::make_unique<NormGradKernel<double, Ln>>(c);
}

constexpr KernelImpl kLayerNormGrad[] = {
    {"tbb", accepts_f32_f64, norm_grad_scratch, make_norm_grad<true>}};
constexpr KernelImpl kRmsNormGrad[] = {
    {"tbb", accepts_f32_f64, norm_grad_scratch, make_norm_grad<false>}};

// ---- SoftmaxGrad / LogSoftmaxGrad
// ------------------------------------------------------------------

/// One contiguous row (the axis is the last one): softmax dx = y (dy - sum(y dy)); log-softmax
/// dx = dy - exp(y) sum(dy).
template <class T, bool Log>
[[gnu::always_inline]] inline void softmax_grad_row(const T* y, const T* dy, T* dx,
                                                    std::int64_t n) {
  T s = 0;
#pragma omp simd reduction(+ : s)
  for (std::int64_t i = 0; i < n; ++i)
    s += Log ? dy[i] : y[i] * dy[i];
#pragma omp simd
  for (std::int64_t i = 0; i < n; ++i) {
    if constexpr (Log) {
      if constexpr (std::is_same_v<T, float>)
        dx[i] = dy[i] - simd::exp(y[i]) * s;
      else
        dx[i] = dy[i] - std::exp(y[i]) * s;
    } else {
      dx[i] = y[i] * (dy[i] - s);
    }
  }
}

RLX_CPU_MULTIVERSION void softmax_grad_rows_f32(const float* y, const float* dy, float* dx,
                                                std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r)
    softmax_grad_row<float, false>(y + r * n, dy + r * n, dx + r * n, n);
}
RLX_CPU_MULTIVERSION void log_softmax_grad_rows_f32(const float* y, const float* dy, float* dx,
                                                    std::int64_t rows, std::int64_t n) {
  for (std::int64_t r = 0; r < rows; ++r)
    softmax_grad_row<float, true>(y + r * n, dy + r * n, dx + r * n, n);
}

using SoftmaxLanes = AxisLanes;
SoftmaxLanes softmax_lanes(const NodeView& n) {
  return axis_lanes(n, "softmax_grad");
}

template <class T, bool Log> class SoftmaxGradKernel final : public Kernel {
public:
  explicit SoftmaxGradKernel(const LowerContext& c)
      : l_(softmax_lanes(c)), y_(reinterpret_cast<const T*>(c.src(0))),
        dy_(reinterpret_cast<const T*>(c.src(1))), dx_(reinterpret_cast<T*>(c.dst())) {}

  void run(ExecContext& ctx) override {
    const std::int64_t n = l_.axis, inner = l_.inner;
    if (inner == 1) { // contiguous rows
      parallel_for(ctx, l_.outer, grain_for(n * 4), [&](std::int64_t b, std::int64_t e) {
        if constexpr (std::is_same_v<T, float>) {
          if constexpr (Log)
            log_softmax_grad_rows_f32(y_ + b * n, dy_ + b * n, dx_ + b * n, e - b, n);
          else
            softmax_grad_rows_f32(y_ + b * n, dy_ + b * n, dx_ + b * n, e - b, n);
        } else {
          for (std::int64_t r = b; r < e; ++r)
            softmax_grad_row<T, Log>(y_ + r * n, dy_ + r * n, dx_ + r * n, n);
        }
      });
      return;
    }
    // strided lanes: lane (o, j) holds elements o * n * inner + k * inner + j, k < n
    parallel_for(ctx, l_.outer * inner, grain_for(n * 4), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t lane = b; lane < e; ++lane) {
        const std::int64_t o = lane / inner, j = lane % inner, base = o * n * inner + j;
        T s = 0;
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t at = base + k * inner;
          s += Log ? dy_[at] : y_[at] * dy_[at];
        }
        for (std::int64_t k = 0; k < n; ++k) {
          const std::int64_t at = base + k * inner;
          dx_[at] = Log ? dy_[at] - static_cast<T>(std::exp(y_[at])) * s : y_[at] * (dy_[at] - s);
        }
      }
    });
  }

private:
  SoftmaxLanes l_;
  const T* y_;
  const T* dy_;
  T* dx_;
};

template <bool Log> std::unique_ptr<Kernel> make_softmax_grad(const LowerContext& c) {
  if (c.out().dtype == ir::DType::f32)
    return std::make_unique<SoftmaxGradKernel<float, Log>>(c);
  return std::make_unique<SoftmaxGradKernel<double, Log>>(c);
}

constexpr KernelImpl kSoftmaxGrad[] = {{"tbb", accepts_f32_f64, nullptr, make_softmax_grad<false>}};
constexpr KernelImpl kLogSoftmaxGrad[] = {
    {"tbb", accepts_f32_f64, nullptr, make_softmax_grad<true>}};

} // namespace

std::span<const KernelImpl> layer_norm_grad_impls() {
  return kLayerNormGrad;
}
std::span<const KernelImpl> rms_norm_grad_impls() {
  return kRmsNormGrad;
}
std::span<const KernelImpl> softmax_grad_impls() {
  return kSoftmaxGrad;
}
std::span<const KernelImpl> log_softmax_grad_impls() {
  return kLogSoftmaxGrad;
}

} // namespace rlx::cpu
