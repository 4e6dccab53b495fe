// residual_norm.cpp: the fused residual + norm ops ResidualLayerNorm and ResidualRmsNorm. One pass
// per row writes the sum s = x + r into part 0 of the tuple's buffer while accumulating its
// statistics, and a second pass over the row (still in cache) writes the normalised value into
// part 1; rows run in parallel (TBB). f32 is vectorised (simd.cpp, dispatched per ISA); other float
// types run a double-precision loop. Like the op's definition, the norm reads the sum as stored
// (rounded to the dtype).
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../simd.hpp"

#include <cmath>

namespace rlx::cpu {
namespace {

/// The operands, the two parts and the row geometry of a residual + norm node.
struct ResidualNormArgs {
  std::int64_t rows = 0, d = 0;
  double eps = 0;
  const std::byte* x = nullptr;
  const std::byte* r = nullptr;
  const std::byte* g = nullptr;
  const std::byte* b = nullptr; ///< beta (LayerNorm only; may be null)
  std::byte* sum = nullptr;     ///< part 0
  std::byte* y = nullptr;       ///< part 1
};

ResidualNormArgs args_of(const LowerContext& c, bool rms) {
  ResidualNormArgs a;
  a.d = c.in(0).sizes().back();
  a.rows = a.d == 0 ? 0 : c.in(0).numel() / a.d;
  a.eps = c.node().attr<ir::NormAttrs>().eps;
  a.x = c.src(0);
  a.r = c.src(1);
  a.g = c.src(2);
  a.b = !rms && c.arity() == 4 ? c.src(3) : nullptr;
  a.sum = c.dst() + c.out().part_offset(0);
  a.y = c.dst() + c.out().part_offset(1);
  return a;
}

/// f32: vectorised passes, rows in parallel. \p Rms selects RMSNorm.
template <bool Rms> class ResidualNormF32 final : public Kernel {
public:
  explicit ResidualNormF32(const LowerContext& c) : a_(args_of(c, Rms)) {}
  void run(ExecContext& ctx) override {
    const std::int64_t d = a_.d;
    const auto* x = reinterpret_cast<const float*>(a_.x);
    const auto* r = reinterpret_cast<const float*>(a_.r);
    const auto* g = reinterpret_cast<const float*>(a_.g);
    const auto* b = reinterpret_cast<const float*>(a_.b);
    auto* s = reinterpret_cast<float*>(a_.sum);
    auto* y = reinterpret_cast<float*>(a_.y);
    const double inv_d = 1.0 / static_cast<double>(d);
    parallel_for(ctx, a_.rows, grain_for(d * 4), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        const std::int64_t o = row * d;
        if constexpr (Rms) {
          const double ms = static_cast<double>(simd::add_sum_squares(s + o, x + o, r + o, d));
          const auto inv = static_cast<float>(1.0 / std::sqrt(ms * inv_d + a_.eps));
          simd::scale_mul(y + o, s + o, g, inv, d);
        } else {
          const auto mean = static_cast<float>(
              static_cast<double>(simd::add_sum(s + o, x + o, r + o, d)) * inv_d);
          const double var =
              static_cast<double>(simd::centered_sum_squares(s + o, mean, d)) * inv_d;
          const auto inv = static_cast<float>(1.0 / std::sqrt(var + a_.eps));
          simd::normalize_affine(y + o, s + o, mean, inv, g, b, d);
        }
      }
    });
  }

private:
  ResidualNormArgs a_;
};

/// Any float type: per row in double, rows in parallel.
template <class T, bool Rms> class ResidualNormLoop final : public Kernel {
public:
  explicit ResidualNormLoop(const LowerContext& c) : a_(args_of(c, Rms)) {}
  void run(ExecContext& ctx) override {
    const std::int64_t d = a_.d;
    const auto* x = reinterpret_cast<const T*>(a_.x);
    const auto* r = reinterpret_cast<const T*>(a_.r);
    const auto* g = reinterpret_cast<const T*>(a_.g);
    const auto* b = reinterpret_cast<const T*>(a_.b);
    auto* s = reinterpret_cast<T*>(a_.sum);
    auto* y = reinterpret_cast<T*>(a_.y);
    auto f = [](T v) { return static_cast<double>(to_compute<T>(v)); };
    auto store = [](double v) { return from_compute<T>(static_cast<compute_t<T>>(v)); };
    parallel_for(ctx, a_.rows, grain_for(d * 4), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        T* sr = s + row * d;
        double mean = 0;
        for (std::int64_t i = 0; i < d; ++i) {
          sr[i] = store(f(x[row * d + i]) + f(r[row * d + i]));
          mean += f(sr[i]);
        }
        mean = Rms ? 0.0 : mean / static_cast<double>(d);
        double var = 0;
        for (std::int64_t i = 0; i < d; ++i)
          var += (f(sr[i]) - mean) * (f(sr[i]) - mean);
        const double inv = 1.0 / std::sqrt(var / static_cast<double>(d) + a_.eps);
        for (std::int64_t i = 0; i < d; ++i) {
          double v = (f(sr[i]) - mean) * inv * f(g[i]);
          if (b != nullptr)
            v += f(b[i]);
          y[row * d + i] = store(v);
        }
      }
    });
  }

private:
  ResidualNormArgs a_;
};

template <bool Rms> std::unique_ptr<Kernel> make_f32(const LowerContext& c) {
  return std::make_unique<ResidualNormF32<Rms>>(c);
}

template <bool Rms> std::unique_ptr<Kernel> make_loop(const LowerContext& c) {
  return visit_dtype(c.in(0).dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (is_float_storage_v<T>)
      return std::make_unique<ResidualNormLoop<T, Rms>>(c);
    else
      throw Error("rlx-cpu: " + c.what() + ": residual + norm of a non-float type");
  });
}

/// f32 operands (the node's own dtype is its first part's, f32 too).
bool accepts_f32(const NodeView& n) {
  return n.in(0).dtype == ir::DType::f32;
}

constexpr KernelImpl kResidualLayerNorm[] = {
    {"tbb", accepts_f32, nullptr, make_f32<false>},
    {"loop", accept_all, nullptr, make_loop<false>},
};
constexpr KernelImpl kResidualRmsNorm[] = {
    {"tbb", accepts_f32, nullptr, make_f32<true>},
    {"loop", accept_all, nullptr, make_loop<true>},
};

} // namespace

std::span<const KernelImpl> residual_layer_norm_impls() {
  return kResidualLayerNorm;
}
std::span<const KernelImpl> residual_rms_norm_impls() {
  return kResidualRmsNorm;
}

} // namespace rlx::cpu
