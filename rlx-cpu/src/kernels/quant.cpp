// quant.cpp: int8 Quantize, Dequantize and FakeQuantize, per tensor or per channel, computed in
// double exactly as the op table defines them (so results match the reference bit for bit).
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>

namespace rlx::cpu {
namespace {

/// clamp(round_half_even(x / scale) + zp, -128, 127); nearbyint rounds ties to even in the
/// default rounding mode.
inline double quantize_value(double x, double scale, double zp) {
  return std::clamp(std::nearbyint(x / scale) + zp, -128.0, 127.0);
}

template <class S, class D> class QuantKernel final : public Kernel {
public:
  explicit QuantKernel(const LowerContext& c)
      : op_(c.node().op), q_(c.node().attr<ir::QuantAttrs>()),
        x_(reinterpret_cast<const S*>(c.src(0))), y_(reinterpret_cast<D*>(c.dst())),
        n_(c.out().numel()), what_(c.what()) {
    if (q_.axis) {
      auto s = c.in(0).sizes();
      auto ax = static_cast<std::size_t>(ir::normalize_axis(*q_.axis, s.size(), "quantize"));
      channels_ = s[ax];
      for (std::size_t i = ax + 1; i < s.size(); ++i)
        inner_ *= s[i];
    }
  }
  void run(ExecContext& ctx) override {
    parallel_for(ctx, n_, kTaskWork / 8, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i) {
        auto ch = static_cast<std::size_t>((i / inner_) % channels_);
        double scale = q_.scales[ch];
        auto zp = static_cast<double>(q_.zero_points[ch]);
        auto x = static_cast<double>(to_compute<S>(x_[i]));
        double y;
        if (op_ == ir::OpKind::Dequantize) {
          y = (x - zp) * scale;
        } else {
          if (x != x)
            throw Error("rlx-cpu: " + what_ + ": NaN input at element " + std::to_string(i));
          y = quantize_value(x, scale, zp);
          if (op_ == ir::OpKind::FakeQuantize)
            y = (y - zp) * scale;
        }
        y_[i] = from_compute<D>(static_cast<compute_t<D>>(y));
      }
    });
  }

private:
  ir::OpKind op_;
  ir::QuantAttrs q_;
  const S* x_;
  D* y_;
  std::int64_t n_, channels_ = 1, inner_ = 1;
  std::string what_;
};

std::unique_ptr<Kernel> make_quant(const LowerContext& c) {
  return visit_dtype(c.in(0).dtype, [&]<class S>() -> std::unique_ptr<Kernel> {
    return visit_dtype(c.out().dtype, [&]<class D>() -> std::unique_ptr<Kernel> {
      if constexpr (std::is_same_v<S, bool> || std::is_same_v<D, bool>)
        throw Error("rlx-cpu: " + c.what() + ": quantization of bool");
      else
        return std::make_unique<QuantKernel<S, D>>(c);
    });
  });
}

constexpr KernelImpl kQuant[] = {{"tbb", accept_all, nullptr, make_quant}};

} // namespace

std::span<const KernelImpl> quant_impls() {
  return kQuant;
}

} // namespace rlx::cpu
