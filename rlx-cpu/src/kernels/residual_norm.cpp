// residual_norm.cpp: the fused residual + norm ops ResidualLayerNorm and ResidualRmsNorm. The sum
// s = x + r goes into part 0 of the tuple's buffer, the normalised sum into part 1. f32 RMSNorm:
// one vectorised pass per row writes s and accumulates its sum of squares, a second (the row still
// in cache) writes the scaled row; f32 LayerNorm: the same first pass accumulating the row's sum,
// then the centred sum of squares and the affine output step (all on our TBB pool, no oneDNN
// primitive whose OpenMP pool would wake between two TBB kernels); other float types: a
// double-precision loop. Rows run in parallel (TBB). Like the op's definition, the norm reads the
// sum as stored (rounded to the dtype).
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

/// f32 ResidualRmsNorm: the sum and its sum of squares in one vectorised pass, then the scaled
/// row from the sum as stored; rows in parallel.
class ResidualRmsNormF32 final : public Kernel {
public:
  explicit ResidualRmsNormF32(const LowerContext& c) : a_(args_of(c, true)) {}
  void run(ExecContext& ctx) override {
    const std::int64_t d = a_.d;
    const auto* x = reinterpret_cast<const float*>(a_.x);
    const auto* r = reinterpret_cast<const float*>(a_.r);
    const auto* g = reinterpret_cast<const float*>(a_.g);
    auto* s = reinterpret_cast<float*>(a_.sum);
    auto* y = reinterpret_cast<float*>(a_.y);
    const double inv_d = 1.0 / static_cast<double>(d);
    parallel_for(ctx, a_.rows, grain_for(d * 4), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        const std::int64_t o = row * d;
        const double ms = static_cast<double>(simd::add_sum_squares(s + o, x + o, r + o, d));
        const auto inv = static_cast<float>(1.0 / std::sqrt(ms * inv_d + a_.eps));
        simd::scale_mul(y + o, s + o, g, inv, d);
      }
    });
  }

private:
  ResidualNormArgs a_;
};

/// f32 ResidualLayerNorm: the sum and its row total in one vectorised pass, then the centred sum of
/// squares and the affine output step from the sum as stored (the row still in L1); rows in
/// parallel, all on our own pool.
class ResidualLayerNormF32 final : public Kernel {
public:
  explicit ResidualLayerNormF32(const LowerContext& c) : a_(args_of(c, false)) {}
  void run(ExecContext& ctx) override {
    const std::int64_t d = a_.d;
    const auto* x = reinterpret_cast<const float*>(a_.x);
    const auto* r = reinterpret_cast<const float*>(a_.r);
    const auto* g = reinterpret_cast<const float*>(a_.g);
    const auto* b = reinterpret_cast<const float*>(a_.b);
    auto* s = reinterpret_cast<float*>(a_.sum);
    auto* y = reinterpret_cast<float*>(a_.y);
    const double inv_d = 1.0 / static_cast<double>(d);
    parallel_for(ctx, a_.rows, grain_for(d * 5), [&](std::int64_t lo, std::int64_t hi) {
      for (std::int64_t row = lo; row < hi; ++row) {
        const std::int64_t o = row * d;
        const auto mean =
            static_cast<float>(static_cast<double>(simd::add_sum(s + o, x + o, r + o, d)) * inv_d);
        const double var = static_cast<double>(simd::centered_sum_squares(s + o, mean, d)) * inv_d;
        const auto inv = static_cast<float>(1.0 / std::sqrt(var + a_.eps));
        simd::center_scale_mul_add(y + o, s + o, mean, inv, g, b, d);
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

std::unique_ptr<Kernel> make_rms_f32(const LowerContext& c) {
  return std::make_unique<ResidualRmsNormF32>(c);
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

std::unique_ptr<Kernel> make_ln_f32(const LowerContext& c) {
  return std::make_unique<ResidualLayerNormF32>(c);
}

constexpr KernelImpl kResidualLayerNorm[] = {
    {"tbb", accepts_f32, nullptr, make_ln_f32},
    {"loop", accept_all, nullptr, make_loop<false>},
};
constexpr KernelImpl kResidualRmsNorm[] = {
    {"tbb", accepts_f32, nullptr, make_rms_f32},
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
