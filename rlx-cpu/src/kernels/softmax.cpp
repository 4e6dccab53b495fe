// softmax.cpp: Softmax and LogSoftmax (oneDNN primitives for f32, our vectorised rows as the
// second f32 choice, double-precision loops otherwise) and SoftmaxCrossEntropy.
#include "../axis_lanes.hpp"
#include "../compile_clock.hpp"
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../onednn.hpp"
#include "../simd.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>
#include <limits>

namespace rlx::cpu {
namespace {

using Lanes = AxisLanes;
Lanes lanes_of(const NodeView& n) {
  return axis_lanes(n, "softmax");
}
bool is_log(const NodeView& n) {
  return n.node().op == ir::OpKind::LogSoftmax;
}

// ---- oneDNN
// --------------------------------------------------------------------------------------

struct OnednnSoftmax {
  dnnl::memory::desc md;
  dnnl::primitive prim;
  std::int64_t scratch = 0;
};

OnednnSoftmax onednn_softmax(const NodeView& n) {
  PhaseTimer timer(CompilePhase::primitives);
  Lanes l = lanes_of(n);
  OnednnSoftmax s;
  s.md = onednn::plain_md({l.outer, l.axis, l.inner});
  auto attr = onednn::user_scratchpad();
  if (is_log(n)) {
    dnnl::logsoftmax_forward::primitive_desc pd(
        dnnl::logsoftmax_forward::desc(dnnl::prop_kind::forward_inference, s.md, 1), attr,
        onednn::engine());
    s.scratch = onednn::scratchpad_bytes(pd);
    s.prim = dnnl::logsoftmax_forward(pd);
  } else {
    dnnl::softmax_forward::primitive_desc pd(
        dnnl::softmax_forward::desc(dnnl::prop_kind::forward_inference, s.md, 1), attr,
        onednn::engine());
    s.scratch = onednn::scratchpad_bytes(pd);
    s.prim = dnnl::softmax_forward(pd);
  }
  return s;
}

/// Short rows (at most this many elements over the last axis) run on our f32 row kernel: oneDNN's
/// softmax took 0.26 ms for the [64, 10] logits of the MLP training step's loss (loaded 2-core
/// Zen 4), where the row kernel takes microseconds.
constexpr std::int64_t kShortRow = 64;

bool accepts_onednn(const NodeView& n) {
  const Lanes l = lanes_of(n);
  return n.out().dtype == ir::DType::f32 && !(l.inner == 1 && l.axis > 0 && l.axis <= kShortRow);
}
std::int64_t onednn_scratch(const NodeView& n) {
  return onednn_softmax(n).scratch;
}
std::unique_ptr<Kernel> make_onednn(const LowerContext& c) {
  OnednnSoftmax s = onednn_softmax(c);
  onednn::BoundPrimitive p(s.prim);
  p.bind(DNNL_ARG_SRC, s.md, c.src(0));
  p.bind(DNNL_ARG_DST, s.md, c.dst());
  if (s.scratch > 0)
    p.bind(DNNL_ARG_SCRATCHPAD, onednn::plain_md({s.scratch}, onednn::dt::u8),
           c.scratch(s.scratch));
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), c.out().numel());
}

// ---- our f32 rows (softmax over the last axis)
// ------------------------------------------------------

class SoftmaxRowsF32 final : public Kernel {
public:
  explicit SoftmaxRowsF32(const LowerContext& c)
      : l_(lanes_of(c)), log_(is_log(c)), x_(reinterpret_cast<const float*>(c.src(0))),
        y_(reinterpret_cast<float*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    std::int64_t d = l_.axis;
    parallel_for(ctx, l_.outer, grain_for(d * 8), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t r = b; r < e; ++r) {
        const float* x = x_ + r * d;
        float* y = y_ + r * d;
        float m = simd::max(x, d);
        for (std::int64_t i = 0; i < d; ++i)
          y[i] = x[i];
        float sum = simd::exp_shift_sum(y, d, m);
        if (log_) {
          float lse = m + std::log(sum);
          for (std::int64_t i = 0; i < d; ++i)
            y[i] = x[i] - lse;
        } else {
          simd::scale(y, 1.0f / sum, d);
        }
      }
    });
  }

private:
  Lanes l_;
  bool log_;
  const float* x_;
  float* y_;
};

bool accepts_rows_f32(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 && lanes_of(n).inner == 1 && lanes_of(n).axis > 0;
}
std::unique_ptr<Kernel> make_rows_f32(const LowerContext& c) {
  return std::make_unique<SoftmaxRowsF32>(c);
}

// ---- loops
// -----------------------------------------------------------------------------------------

template <class T> class SoftmaxLoop final : public Kernel {
public:
  explicit SoftmaxLoop(const LowerContext& c)
      : l_(lanes_of(c)), log_(is_log(c)), x_(reinterpret_cast<const T*>(c.src(0))),
        y_(reinterpret_cast<T*>(c.dst())) {}
  void run(ExecContext& ctx) override {
    Lanes l = l_;
    parallel_for(ctx, l.outer * l.inner, grain_for(l.axis * 8),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t lane = b; lane < e; ++lane) {
                     std::int64_t o = lane / l.inner, i = lane % l.inner;
                     auto at = [&](std::int64_t j) { return (o * l.axis + j) * l.inner + i; };
                     auto get = [&](std::int64_t j) {
                       return static_cast<double>(to_compute<T>(x_[at(j)]));
                     };
                     double m = -std::numeric_limits<double>::infinity();
                     for (std::int64_t j = 0; j < l.axis; ++j)
                       m = std::max(m, get(j));
                     double sum = 0;
                     for (std::int64_t j = 0; j < l.axis; ++j)
                       sum += std::exp(get(j) - m);
                     double lse = std::log(sum);
                     for (std::int64_t j = 0; j < l.axis; ++j) {
                       double v = log_ ? get(j) - m - lse : std::exp(get(j) - m) / sum;
                       y_[at(j)] = from_compute<T>(static_cast<compute_t<T>>(v));
                     }
                   }
                 });
  }

private:
  Lanes l_;
  bool log_;
  const T* x_;
  T* y_;
};

std::unique_ptr<Kernel> make_loop(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (is_float_storage_v<T>)
      return std::make_unique<SoftmaxLoop<T>>(c);
    else
      throw Error("rlx-cpu: " + c.what() + ": softmax of a non-float type");
  });
}

constexpr KernelImpl kSoftmax[] = {
    {"onednn", accepts_onednn, onednn_scratch, make_onednn},
    {"tbb", accepts_rows_f32, nullptr, make_rows_f32},
    {"loop", accept_all, nullptr, make_loop},
};

// ---- SoftmaxCrossEntropy -----------------------------------------------------------------------

/// loss[n] = logsumexp(logits[n, :]) - logits[n, label[n]], per row in double.
template <class T, class L> class CrossEntropy final : public Kernel {
public:
  explicit CrossEntropy(const LowerContext& c)
      : rows_(c.in(0).sizes()[0]), classes_(c.in(0).sizes()[1]),
        x_(reinterpret_cast<const T*>(c.src(0))), labels_(reinterpret_cast<const L*>(c.src(1))),
        y_(reinterpret_cast<T*>(c.dst())), what_(c.what()) {}
  void run(ExecContext& ctx) override {
    for (std::int64_t n = 0; n < rows_; ++n) {
      auto label = static_cast<std::int64_t>(labels_[n]);
      if (label < 0 || label >= classes_)
        throw Error("rlx-cpu: " + what_ + ": label " + std::to_string(label) + " of row " +
                    std::to_string(n) + " is out of range [0, " + std::to_string(classes_) + ")");
    }
    parallel_for(ctx, rows_, grain_for(classes_ * 8), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t n = b; n < e; ++n) {
        const T* row = x_ + n * classes_;
        double m = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j < classes_; ++j)
          m = std::max(m, static_cast<double>(to_compute<T>(row[j])));
        double sum = 0;
        for (std::int64_t j = 0; j < classes_; ++j)
          sum += std::exp(static_cast<double>(to_compute<T>(row[j])) - m);
        double loss =
            m + std::log(sum) -
            static_cast<double>(to_compute<T>(row[static_cast<std::int64_t>(labels_[n])]));
        y_[n] = from_compute<T>(static_cast<compute_t<T>>(loss));
      }
    });
  }

private:
  std::int64_t rows_, classes_;
  const T* x_;
  const L* labels_;
  T* y_;
  std::string what_;
};

std::unique_ptr<Kernel> make_cross_entropy(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    return visit_dtype(c.in(1).dtype, [&]<class L>() -> std::unique_ptr<Kernel> {
      if constexpr (is_float_storage_v<T> && std::is_integral_v<L> && !std::is_same_v<L, bool>)
        return std::make_unique<CrossEntropy<T, L>>(c);
      else
        throw Error("rlx-cpu: " + c.what() + ": needs float logits and integer labels");
    });
  });
}

constexpr KernelImpl kCrossEntropy[] = {{"tbb", accept_all, nullptr, make_cross_entropy}};

} // namespace

std::span<const KernelImpl> softmax_impls() {
  return kSoftmax;
}
std::span<const KernelImpl> softmax_cross_entropy_impls() {
  return kCrossEntropy;
}

} // namespace rlx::cpu
