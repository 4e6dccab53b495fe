// elementwise.cpp: unary math, the broadcasting binary ops, Compare, Where and Cast.
//
// f32 runs on oneDNN eltwise primitives where oneDNN has the function, otherwise on vectorised
// TBB-parallel loops; every other dtype runs simple loops in its compute type (dtypes.hpp).
#include "../binary_math.hpp"
#include "../broadcast.hpp"
#include "../compile_clock.hpp"
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "../onednn.hpp"
#include "../simd.hpp"
#include "../unary_math.hpp"
#include "rlx/ir/error.hpp"

#include <array>
#include <cmath>
#include <cstring>
#include <numbers>
#include <optional>

namespace rlx::cpu {
namespace {

using ir::OpKind;

constexpr std::int64_t kElementGrain = kTaskWork; // elements per task of a parallel loop

// ---- unary -------------------------------------------------------------------------------------

bool accepts_unary_onednn(const NodeView& n) {
  return n.out().dtype == ir::DType::f32 && onednn::eltwise_alg(n.node().op).has_value();
}

std::unique_ptr<Kernel> make_unary_onednn(const LowerContext& c) {
  onednn::EltwiseAlg e = *onednn::eltwise_alg(c.node().op);
  auto md = onednn::plain_md({c.out().numel()});
  dnnl::eltwise_forward prim;
  {
    PhaseTimer timer(CompilePhase::primitives);
    dnnl::eltwise_forward::primitive_desc pd(
        dnnl::eltwise_forward::desc(dnnl::prop_kind::forward_inference, e.alg, md, e.alpha, e.beta),
        onednn::engine());
    prim = dnnl::eltwise_forward(pd);
  }
  onednn::BoundPrimitive p{std::move(prim)};
  p.bind(DNNL_ARG_SRC, md, c.src(0));
  p.bind(DNNL_ARG_DST, md, c.dst());
  return std::make_unique<onednn::PrimitiveKernel>(std::move(p), c.out().numel());
}

/// f32 unary op as a vectorised TBB-parallel loop.
class UnaryF32 final : public Kernel {
public:
  UnaryF32(OpKind op, const float* x, float* y, std::int64_t n) : op_(op), x_(x), y_(y), n_(n) {}
  void run(ExecContext& ctx) override {
    with_unary<float>(op_, [&](auto f) {
      parallel_for(ctx, n_, kElementGrain, [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t i = b; i < e; ++i)
          y_[i] = f(x_[i]);
      });
    });
  }

private:
  OpKind op_;
  const float* x_;
  float* y_;
  std::int64_t n_;
};

std::unique_ptr<Kernel> make_unary_f32(const LowerContext& c) {
  return std::make_unique<UnaryF32>(c.node().op, reinterpret_cast<const float*>(c.src(0)),
                                    reinterpret_cast<float*>(c.dst()), c.out().numel());
}

/// Any dtype: a plain loop in the compute type.
template <class T> class UnaryLoop final : public Kernel {
public:
  UnaryLoop(OpKind op, const T* x, T* y, std::int64_t n) : op_(op), x_(x), y_(y), n_(n) {}
  void run(ExecContext&) override {
    with_unary<compute_t<T>>(op_, [&](auto f) {
      for (std::int64_t i = 0; i < n_; ++i)
        y_[i] = from_compute<T>(f(to_compute<T>(x_[i])));
    });
  }

private:
  OpKind op_;
  const T* x_;
  T* y_;
  std::int64_t n_;
};

std::unique_ptr<Kernel> make_unary_loop(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool>)
      throw Error("rlx-cpu: " + c.what() + ": unary math on bool");
    else
      return std::make_unique<UnaryLoop<T>>(c.node().op, reinterpret_cast<const T*>(c.src(0)),
                                            reinterpret_cast<T*>(c.dst()), c.out().numel());
  });
}

constexpr KernelImpl kUnary[] = {
    {"onednn", accepts_unary_onednn, nullptr, make_unary_onednn},
    {"tbb", accept_f32, nullptr, make_unary_f32},
    {"loop", accept_all, nullptr, make_unary_loop},
};

// ---- binary ------------------------------------------------------------------------------------

/// The broadcast plan of an elementwise node over all its operands.
BroadcastPlan plan_of(const NodeView& n) {
  std::vector<std::vector<std::int64_t>> ins;
  for (std::size_t i = 0; i < n.arity(); ++i)
    ins.push_back(n.in(i).sizes());
  return plan_broadcast(n.out().sizes(), ins);
}

/// f32 binary op: vectorised inner loops specialised on the operands' inner strides.
class BinaryF32 final : public Kernel {
public:
  BinaryF32(OpKind op, BroadcastPlan plan, const float* a, const float* b, float* y)
      : op_(op), plan_(std::move(plan)), a_(a), b_(b), y_(y) {}
  void run(ExecContext& ctx) override {
    std::int64_t inner = plan_.inner(), sa = plan_.inner_stride(0), sb = plan_.inner_stride(1);
    with_binary<float>(op_, [&](auto f) {
      auto row = [&](float* y, const float* a, const float* b, std::int64_t n) {
        if (sa == 1 && sb == 1) {
          for (std::int64_t i = 0; i < n; ++i)
            y[i] = f(a[i], b[i]);
        } else if (sa == 1 && sb == 0) {
          float bv = *b;
          for (std::int64_t i = 0; i < n; ++i)
            y[i] = f(a[i], bv);
        } else if (sa == 0 && sb == 1) {
          float av = *a;
          for (std::int64_t i = 0; i < n; ++i)
            y[i] = f(av, b[i]);
        } else {
          for (std::int64_t i = 0; i < n; ++i)
            y[i] = f(a[i * sa], b[i * sb]);
        }
      };
      std::int64_t rows = plan_.rows();
      if (rows == 1) { // one long row: split it
        parallel_for(ctx, inner, kElementGrain, [&](std::int64_t b0, std::int64_t e) {
          row(y_ + b0, a_ + b0 * sa, b_ + b0 * sb, e - b0);
        });
        return;
      }
      parallel_for(ctx, rows, grain_for(inner), [&](std::int64_t r0, std::int64_t r1) {
        std::int64_t off[2];
        for (std::int64_t r = r0; r < r1; ++r) {
          plan_.row_offsets(r, off);
          row(y_ + r * inner, a_ + off[0], b_ + off[1], inner);
        }
      });
    });
  }

private:
  OpKind op_;
  BroadcastPlan plan_;
  const float* a_;
  const float* b_;
  float* y_;
};

std::unique_ptr<Kernel> make_binary_f32(const LowerContext& c) {
  return std::make_unique<BinaryF32>(
      c.node().op, plan_of(c), reinterpret_cast<const float*>(c.src(0)),
      reinterpret_cast<const float*>(c.src(1)), reinterpret_cast<float*>(c.dst()));
}

/// Walks a broadcast plan serially: \p fn(out_index, operand offsets...).
template <std::size_t N, class Fn> void walk(const BroadcastPlan& p, Fn&& fn) {
  std::int64_t rows = p.rows(), inner = p.inner();
  std::array<std::int64_t, N> off{}, st{};
  for (std::size_t k = 0; k < N; ++k)
    st[k] = p.inner_stride(k);
  for (std::int64_t r = 0; r < rows; ++r) {
    p.row_offsets(r, off.data());
    for (std::int64_t i = 0; i < inner; ++i) {
      std::array<std::int64_t, N> at;
      for (std::size_t k = 0; k < N; ++k)
        at[k] = off[k] + i * st[k];
      fn(r * inner + i, at);
    }
  }
}

/// Any dtype: serial loop in the compute type.
template <class T> class BinaryLoop final : public Kernel {
public:
  BinaryLoop(const LowerContext& c)
      : op_(c.node().op), plan_(plan_of(c)), a_(reinterpret_cast<const T*>(c.src(0))),
        b_(reinterpret_cast<const T*>(c.src(1))), y_(reinterpret_cast<T*>(c.dst())),
        what_(c.what()) {}
  void run(ExecContext&) override {
    try {
      with_binary<compute_t<T>>(op_, [&](auto f) {
        walk<2>(plan_, [&](std::int64_t i, const std::array<std::int64_t, 2>& at) {
          y_[i] = from_compute<T>(f(to_compute<T>(a_[at[0]]), to_compute<T>(b_[at[1]])));
        });
      });
    } catch (const Error& e) {
      throw Error(std::string(e.what()) + " in " + what_);
    }
  }

private:
  OpKind op_;
  BroadcastPlan plan_;
  const T* a_;
  const T* b_;
  T* y_;
  std::string what_;
};

std::unique_ptr<Kernel> make_binary_loop(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool>)
      throw Error("rlx-cpu: " + c.what() + ": arithmetic on bool");
    else
      return std::make_unique<BinaryLoop<T>>(c);
  });
}

constexpr KernelImpl kBinary[] = {
    {"tbb", accept_f32, nullptr, make_binary_f32},
    {"loop", accept_all, nullptr, make_binary_loop},
};

// ---- compare -----------------------------------------------------------------------------------

template <class C> bool compare(ir::CmpOp op, C a, C b) {
  switch (op) {
  case ir::CmpOp::eq:
    return a == b;
  case ir::CmpOp::ne:
    return a != b;
  case ir::CmpOp::lt:
    return a < b;
  case ir::CmpOp::le:
    return a <= b;
  case ir::CmpOp::gt:
    return a > b;
  case ir::CmpOp::ge:
    return a >= b;
  }
  return false;
}

template <class T> class CompareLoop final : public Kernel {
public:
  CompareLoop(const LowerContext& c)
      : op_(c.node().attr<ir::CompareAttrs>().op), plan_(plan_of(c)),
        a_(reinterpret_cast<const T*>(c.src(0))), b_(reinterpret_cast<const T*>(c.src(1))),
        y_(reinterpret_cast<bool*>(c.dst())) {}
  void run(ExecContext&) override {
    walk<2>(plan_, [&](std::int64_t i, const std::array<std::int64_t, 2>& at) {
      y_[i] = compare(op_, to_compute<T>(a_[at[0]]), to_compute<T>(b_[at[1]]));
    });
  }

private:
  ir::CmpOp op_;
  BroadcastPlan plan_;
  const T* a_;
  const T* b_;
  bool* y_;
};

std::unique_ptr<Kernel> make_compare(const LowerContext& c) {
  return visit_dtype(c.in(0).dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    return std::make_unique<CompareLoop<T>>(c);
  });
}

constexpr KernelImpl kCompare[] = {{"loop", accept_all, nullptr, make_compare}};

// ---- where -------------------------------------------------------------------------------------

/// Bytewise select over a broadcast plan, for elements of \p Bytes bytes.
template <std::size_t Bytes> class WhereKernel final : public Kernel {
public:
  WhereKernel(const LowerContext& c)
      : plan_(plan_of(c)), cond_(reinterpret_cast<const std::uint8_t*>(c.src(0))), a_(c.src(1)),
        b_(c.src(2)), y_(c.dst()) {}
  void run(ExecContext& ctx) override {
    std::int64_t inner = plan_.inner();
    parallel_for(ctx, plan_.rows(), grain_for(inner), [&](std::int64_t r0, std::int64_t r1) {
      std::int64_t off[3];
      std::int64_t sc = plan_.inner_stride(0), sa = plan_.inner_stride(1),
                   sb = plan_.inner_stride(2);
      for (std::int64_t r = r0; r < r1; ++r) {
        plan_.row_offsets(r, off);
        for (std::int64_t i = 0; i < inner; ++i) {
          const std::byte* src = cond_[off[0] + i * sc] ? a_ + (off[1] + i * sa) * Bytes
                                                        : b_ + (off[2] + i * sb) * Bytes;
          std::memcpy(y_ + (r * inner + i) * Bytes, src, Bytes);
        }
      }
    });
  }

private:
  BroadcastPlan plan_;
  const std::uint8_t* cond_;
  const std::byte* a_;
  const std::byte* b_;
  std::byte* y_;
};

std::unique_ptr<Kernel> make_where(const LowerContext& c) {
  switch (ir::dtype_size(c.out().dtype)) {
  case 1:
    return std::make_unique<WhereKernel<1>>(c);
  case 2:
    return std::make_unique<WhereKernel<2>>(c);
  case 4:
    return std::make_unique<WhereKernel<4>>(c);
  default:
    return std::make_unique<WhereKernel<8>>(c);
  }
}

constexpr KernelImpl kWhere[] = {{"tbb", accept_all, nullptr, make_where}};

// ---- cast --------------------------------------------------------------------------------------

template <class S, class D> class CastLoop final : public Kernel {
public:
  CastLoop(const S* x, D* y, std::int64_t n) : x_(x), y_(y), n_(n) {}
  void run(ExecContext& ctx) override {
    parallel_for(ctx, n_, kElementGrain, [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t i = b; i < e; ++i)
        y_[i] = convert<S, D>(x_[i]);
    });
  }

private:
  const S* x_;
  D* y_;
  std::int64_t n_;
};

/// A same-dtype Cast that was not aliased (a graph output): a copy.
class CopyBytes final : public Kernel {
public:
  CopyBytes(const std::byte* src, std::byte* dst, std::int64_t n) : src_(src), dst_(dst), n_(n) {}
  void run(ExecContext&) override { std::memcpy(dst_, src_, static_cast<std::size_t>(n_)); }

private:
  const std::byte* src_;
  std::byte* dst_;
  std::int64_t n_;
};

std::unique_ptr<Kernel> make_cast(const LowerContext& c) {
  if (c.in(0).dtype == c.out().dtype)
    return std::make_unique<CopyBytes>(c.src(0), c.dst(), c.out().bytes());
  return visit_dtype(c.in(0).dtype, [&]<class S>() -> std::unique_ptr<Kernel> {
    return visit_dtype(c.out().dtype, [&]<class D>() -> std::unique_ptr<Kernel> {
      return std::make_unique<CastLoop<S, D>>(reinterpret_cast<const S*>(c.src(0)),
                                              reinterpret_cast<D*>(c.dst()), c.out().numel());
    });
  });
}

constexpr KernelImpl kCast[] = {{"tbb", accept_all, nullptr, make_cast}};

} // namespace

std::span<const KernelImpl> unary_impls() {
  return kUnary;
}
std::span<const KernelImpl> binary_impls() {
  return kBinary;
}
std::span<const KernelImpl> compare_impls() {
  return kCompare;
}
std::span<const KernelImpl> where_impls() {
  return kWhere;
}
std::span<const KernelImpl> cast_impls() {
  return kCast;
}

} // namespace rlx::cpu
