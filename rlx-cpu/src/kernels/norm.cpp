// norm.cpp: LayerNorm and RmsNorm: our vectorised, TBB-parallel rows for f32, double-precision
// loops for the other float types.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../simd.hpp"

#include <cmath>

namespace rlx::cpu {
namespace {

/// Rows and row length of a normalisation over the last axis.
struct Rows {
  std::int64_t rows = 0, d = 0;
};
Rows rows_of(const NodeView& n) {
  Rows r;
  r.d = n.in(0).sizes().back();
  r.rows = r.d == 0 ? 0 : n.in(0).numel() / r.d;
  return r;
}

// ---- LayerNorm
// -----------------------------------------------------------------------------------

/// Any float dtype: per row in double, rows in parallel. \p rms selects RmsNorm.
template <class T> class NormLoop final : public Kernel {
public:
  NormLoop(const LowerContext& c, bool rms)
      : r_(rows_of(c)), rms_(rms), eps_(c.node().attr<ir::NormAttrs>().eps),
        x_(reinterpret_cast<const T*>(c.src(0))), g_(reinterpret_cast<const T*>(c.src(1))),
        b_(!rms && c.arity() == 3 ? reinterpret_cast<const T*>(c.src(2)) : nullptr),
        y_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    std::int64_t d = r_.d;
    parallel_for(ctx, r_.rows, grain_for(d * 4), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t row = b; row < e; ++row) {
        const T* x = x_ + row * d;
        T* y = y_ + row * d;
        double mean = 0;
        if (!rms_) {
          for (std::int64_t i = 0; i < d; ++i)
            mean += static_cast<double>(to_compute<T>(x[i]));
          mean /= static_cast<double>(d);
        }
        double var = 0;
        for (std::int64_t i = 0; i < d; ++i) {
          double v = static_cast<double>(to_compute<T>(x[i])) - mean;
          var += v * v;
        }
        var /= static_cast<double>(d);
        double inv = 1.0 / std::sqrt(var + eps_);
        for (std::int64_t i = 0; i < d; ++i) {
          double v = (static_cast<double>(to_compute<T>(x[i])) - mean) * inv *
                     static_cast<double>(to_compute<T>(g_[i]));
          if (b_)
            v += static_cast<double>(to_compute<T>(b_[i]));
          y[i] = from_compute<T>(static_cast<compute_t<T>>(v));
        }
      }
    });
  }

private:
  Rows r_;
  bool rms_;
  double eps_;
  const T* x_;
  const T* g_;
  const T* b_;
  T* y_;
};

template <bool Rms> std::unique_ptr<Kernel> make_norm_loop(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (is_float_storage_v<T>)
      return std::make_unique<NormLoop<T>>(c, Rms);
    else
      throw Error("rlx-cpu: " + c.what() + ": normalisation of a non-float type");
  });
}

/// f32 LayerNorm on our own pool: per row the vectorised mean, the centred sum of squares (the
/// row still in L1) and the affine output step; rows in parallel. Replaces oneDNN's primitive,
/// whose OpenMP pool had to wake between two TBB kernels (rlx-cpu DESIGN, "Threading").
class LayerNormF32 final : public Kernel {
public:
  explicit LayerNormF32(const LowerContext& c)
      : r_(rows_of(c)), eps_(c.node().attr<ir::NormAttrs>().eps),
        x_(reinterpret_cast<const float*>(c.src(0))), g_(reinterpret_cast<const float*>(c.src(1))),
        b_(c.arity() == 3 ? reinterpret_cast<const float*>(c.src(2)) : nullptr),
        y_(reinterpret_cast<float*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    const std::int64_t d = r_.d;
    const double inv_d = 1.0 / static_cast<double>(d);
    parallel_for(ctx, r_.rows, grain_for(d * 4), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        const float* x = x_ + row * d;
        const auto mean = static_cast<float>(static_cast<double>(simd::sum(x, d)) * inv_d);
        const double var = static_cast<double>(simd::centered_sum_squares(x, mean, d)) * inv_d;
        const auto inv = static_cast<float>(1.0 / std::sqrt(var + eps_));
        simd::center_scale_mul_add(y_ + row * d, x, mean, inv, g_, b_, d);
      }
    });
  }

private:
  Rows r_;
  double eps_;
  const float* x_;
  const float* g_;
  const float* b_;
  float* y_;
};

std::unique_ptr<Kernel> make_ln_f32(const LowerContext& c) {
  return std::make_unique<LayerNormF32>(c);
}

constexpr KernelImpl kLayerNorm[] = {
    {"tbb", accept_f32, nullptr, make_ln_f32},
    {"loop", accept_all, nullptr, make_norm_loop<false>},
};

// ---- RmsNorm
// -------------------------------------------------------------------------------------

/// f32 RmsNorm: vectorised sum of squares and scaling per row, rows in parallel.
class RmsNormF32 final : public Kernel {
public:
  explicit RmsNormF32(const LowerContext& c)
      : r_(rows_of(c)), eps_(c.node().attr<ir::NormAttrs>().eps),
        x_(reinterpret_cast<const float*>(c.src(0))), g_(reinterpret_cast<const float*>(c.src(1))),
        y_(reinterpret_cast<float*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    std::int64_t d = r_.d;
    parallel_for(ctx, r_.rows, grain_for(d * 2), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t row = b; row < e; ++row) {
        const float* x = x_ + row * d;
        double ms = static_cast<double>(simd::sum_squares(x, d)) / static_cast<double>(d);
        auto inv = static_cast<float>(1.0 / std::sqrt(ms + eps_));
        simd::scale_mul(y_ + row * d, x, g_, inv, d);
      }
    });
  }

private:
  Rows r_;
  double eps_;
  const float* x_;
  const float* g_;
  float* y_;
};

std::unique_ptr<Kernel> make_rms_f32(const LowerContext& c) {
  return std::make_unique<RmsNormF32>(c);
}

constexpr KernelImpl kRmsNorm[] = {
    {"tbb", accept_f32, nullptr, make_rms_f32},
    {"loop", accept_all, nullptr, make_norm_loop<true>},
};

} // namespace

std::span<const KernelImpl> layer_norm_impls() {
  return kLayerNorm;
}
std::span<const KernelImpl> rms_norm_impls() {
  return kRmsNorm;
}

} // namespace rlx::cpu
