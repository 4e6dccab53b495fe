// loss_grad.cpp: SoftmaxCrossEntropyGrad (ops.def "backward ops 2"): dlogits_n = dloss_n
// (softmax(logits_n) - onehot(label_n)). Labels are checked first (an out-of-range label is an
// Error naming its row, as in the forward); then rows in parallel, each in one read of the row for
// its max, one vectorised sweep writing e^(x - max) and summing it, and one sweep scaling by
// dloss / sum (the label's element then less dloss). f32 is compiled for several instruction sets;
// f64 runs the same code in double.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>
#include <limits>
#include <memory>

namespace rlx::cpu {
namespace {

template <class T>
[[gnu::always_inline]] inline void xent_grad_row(const T* x, T* dx, std::int64_t c,
                                                 std::int64_t label, T up) {
  T m = -std::numeric_limits<T>::infinity();
#pragma omp simd reduction(max : m)
  for (std::int64_t j = 0; j < c; ++j)
    m = x[j] > m ? x[j] : m;
  T sum = 0;
  if constexpr (std::is_same_v<T, float>) {
#pragma omp simd reduction(+ : sum)
    for (std::int64_t j = 0; j < c; ++j) {
      dx[j] = simd::exp(x[j] - m);
      sum += dx[j];
    }
  } else {
    for (std::int64_t j = 0; j < c; ++j) {
      dx[j] = std::exp(x[j] - m);
      sum += dx[j];
    }
  }
  const T f = up / sum;
#pragma omp simd
  for (std::int64_t j = 0; j < c; ++j)
    dx[j] *= f;
  dx[label] -= up;
}

RLX_CPU_MULTIVERSION void xent_grad_row_f32(const float* x, float* dx, std::int64_t c,
                                            std::int64_t label, float up) {
  xent_grad_row<float>(x, dx, c, label, up);
}

template <class T, class L> class XentGradKernel final : public Kernel {
public:
  explicit XentGradKernel(const LowerContext& c)
      : rows_(c.in(0).sizes()[0]), classes_(c.in(0).sizes()[1]),
        x_(reinterpret_cast<const T*>(c.src(0))), labels_(reinterpret_cast<const L*>(c.src(1))),
        up_(reinterpret_cast<const T*>(c.src(2))), dx_(reinterpret_cast<T*>(c.dst())),
        what_(c.what()) {}
  void run(ExecContext& ctx) override {
    for (std::int64_t n = 0; n < rows_; ++n) {
      const auto label = static_cast<std::int64_t>(labels_[n]);
      if (label < 0 || label >= classes_)
        throw Error("rlx-cpu: " + what_ + ": label " + std::to_string(label) + " of row " +
                    std::to_string(n) + " is out of range [0, " + std::to_string(classes_) + ")");
    }
    parallel_for(ctx, rows_, grain_for(classes_ * 8), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t n = b; n < e; ++n) {
        const auto label = static_cast<std::int64_t>(labels_[n]);
        if constexpr (std::is_same_v<T, float>)
          xent_grad_row_f32(x_ + n * classes_, dx_ + n * classes_, classes_, label, up_[n]);
        else
          xent_grad_row<T>(x_ + n * classes_, dx_ + n * classes_, classes_, label, up_[n]);
      }
    });
  }

private:
  std::int64_t rows_, classes_;
  const T* x_;
  const L* labels_;
  const T* up_;
  T* dx_;
  std::string what_;
};

bool accepts_f32_f64(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 || n.out().dtype == ir::DType::f64;
}

std::unique_ptr<Kernel> make_xent_grad(const LowerContext& c) {
  auto with = [&]<class T>() -> std::unique_ptr<Kernel> {
    return visit_dtype(c.in(1).dtype, [&]<class L>() -> std::unique_ptr<Kernel> {
      if constexpr (std::is_integral_v<L> && !std::is_same_v<L, bool>)
        return std::make_unique<XentGradKernel<T, L>>(c);
      else
        throw Error("rlx-cpu: " + c.what() + ": needs integer labels");
    });
  };
  if (c.out().dtype == ir::DType::f32)
    return with.template operator()<float>();
  return with.template operator()<double>();
}

constexpr KernelImpl kXentGrad[] = {{"tbb", accepts_f32_f64, nullptr, make_xent_grad}};

} // namespace

std::span<const KernelImpl> softmax_cross_entropy_grad_impls() {
  return kXentGrad;
}

} // namespace rlx::cpu
