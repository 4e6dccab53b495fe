// norm.cpp: LayerNorm (oneDNN layer_normalization for f32) and RmsNorm (our vectorised,
// TBB-parallel rows for f32), with double-precision loops for f64.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../onednn.hpp"
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

struct OnednnLayerNorm {
  dnnl::memory::desc data, scale;
  dnnl::layer_normalization_forward::primitive_desc pd;
};

OnednnLayerNorm onednn_layer_norm(const NodeView& n) {
  Rows r = rows_of(n);
  OnednnLayerNorm m;
  m.data = onednn::plain_md({r.rows, r.d});
  m.scale = onednn::plain_md({r.d});
  auto flags = dnnl::normalization_flags::use_scale;
  if (n.arity() == 3)
    flags = flags | dnnl::normalization_flags::use_shift;
  auto eps = static_cast<float>(n.node().attr<ir::NormAttrs>().eps);
  m.pd = dnnl::layer_normalization_forward::primitive_desc(
      dnnl::layer_normalization_forward::desc(dnnl::prop_kind::forward_inference, m.data, eps,
                                              flags),
      onednn::user_scratchpad(), onednn::engine());
  return m;
}

bool accepts_onednn_ln(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 && rows_of(n).rows > 0 && rows_of(n).d > 0;
}
std::int64_t onednn_ln_scratch(const NodeView& n) {
  return onednn::scratchpad_bytes(onednn_layer_norm(n).pd);
}
std::unique_ptr<Kernel> make_onednn_ln(const LowerContext& c) {
  OnednnLayerNorm m = onednn_layer_norm(c);
  onednn::BoundPrimitive p{dnnl::layer_normalization_forward(m.pd)};
  p.bind(DNNL_ARG_SRC, m.data, c.src(0));
  p.bind(DNNL_ARG_SCALE, m.scale, c.src(1));
  if (c.arity() == 3)
    p.bind(DNNL_ARG_SHIFT, m.scale, c.src(2));
  p.bind(DNNL_ARG_DST, m.data, c.dst());
  if (onednn::scratchpad_bytes(m.pd) > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, m.pd.scratchpad_desc(), c.scratch(onednn::scratchpad_bytes(m.pd)));
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), c.out().numel());
}

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

constexpr KernelImpl kLayerNorm[] = {
    {"onednn", accepts_onednn_ln, onednn_ln_scratch, make_onednn_ln},
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
