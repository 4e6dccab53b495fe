// reduce.cpp: Reduce (sum / mean / max / min / prod over any axes) and ArgMax.
//
// Floats accumulate in double and integers in wrapping int64, so a sum is rounded once, as the
// reference does. Reductions over a contiguous suffix of axes run rows in parallel; a float sum
// over a leading run of axes (bias gradients: [R, K] -> [K]) runs column blocks in parallel; any
// other axis set walks the input once and accumulates into a planned scratch buffer.
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace rlx::cpu {
namespace {

/// NaN-aware "v replaces the running best" (NaN wins, the first NaN stays), as the reference.
template <class A> bool beats_max(A v, A best) {
  if constexpr (std::is_floating_point_v<A>) {
    if (best != best)
      return false;
    if (v != v)
      return true;
  }
  return v > best;
}
template <class A> bool beats_min(A v, A best) {
  if constexpr (std::is_floating_point_v<A>) {
    if (best != best)
      return false;
    if (v != v)
      return true;
  }
  return v < best;
}

/// The accumulation of one reduction in accumulator type \p A (double or int64).
template <class A> struct Accumulate {
  ir::ReduceOp op;
  A init() const {
    switch (op) {
    case ir::ReduceOp::prod:
      return A{1};
    case ir::ReduceOp::max:
      return std::is_floating_point_v<A> ? -std::numeric_limits<A>::infinity()
                                         : std::numeric_limits<A>::lowest();
    case ir::ReduceOp::min:
      return std::is_floating_point_v<A> ? std::numeric_limits<A>::infinity()
                                         : std::numeric_limits<A>::max();
    default:
      return A{0};
    }
  }
  A step(A acc, A v) const {
    switch (op) {
    case ir::ReduceOp::sum:
    case ir::ReduceOp::mean:
      if constexpr (std::is_floating_point_v<A>)
        return acc + v;
      else
        return wrap_add(acc, v);
    case ir::ReduceOp::prod:
      if constexpr (std::is_floating_point_v<A>)
        return acc * v;
      else
        return wrap_mul(acc, v);
    case ir::ReduceOp::max:
      return beats_max(v, acc) ? v : acc;
    case ir::ReduceOp::min:
      return beats_min(v, acc) ? v : acc;
    }
    return acc;
  }
};

/// The reduction of a node, with dims collapsed into runs of kept and reduced axes.
struct ReducePlan {
  std::vector<std::int64_t> dims; ///< collapsed input dims
  std::vector<char> reduced;      ///< per collapsed dim
  std::int64_t count = 1;         ///< elements reduced into each output
  bool suffix = false;            ///< reduced dims are exactly a trailing run
};

ReducePlan plan_reduce(const NodeView& n) {
  const auto& a = n.node().attr<ir::ReduceAttrs>();
  auto sizes = n.in(0).sizes();
  std::vector<char> red(sizes.size(), a.axes.empty() ? 1 : 0);
  for (auto ax : a.axes)
    red[static_cast<std::size_t>(ir::normalize_axis(ax, sizes.size(), "reduce"))] = 1;
  ReducePlan p;
  for (std::size_t d = 0; d < sizes.size(); ++d) {
    if (red[d])
      p.count *= sizes[d];
    if (sizes[d] == 1)
      continue;
    if (!p.dims.empty() && p.reduced.back() == red[d]) {
      p.dims.back() *= sizes[d];
    } else {
      p.dims.push_back(sizes[d]);
      p.reduced.push_back(red[d]);
    }
  }
  // Runs alternate kept / reduced: the reduction is a suffix when the only reduced run is last.
  p.suffix = p.reduced.empty() ||
             (p.reduced.back() && std::count(p.reduced.begin(), p.reduced.end(), 1) == 1);
  return p;
}

template <class T> class ReduceKernel final : public Kernel {
public:
  using A = std::conditional_t<is_float_storage_v<T>, double, std::int64_t>;

  ReduceKernel(const LowerContext& c, std::byte* scratch)
      : p_(plan_reduce(c)), acc_{c.node().attr<ir::ReduceAttrs>().op},
        x_(reinterpret_cast<const T*>(c.src(0))), y_(reinterpret_cast<T*>(c.dst())),
        out_n_(c.out().numel()), scratch_(reinterpret_cast<A*>(scratch)) {
    if ((acc_.op == ir::ReduceOp::max || acc_.op == ir::ReduceOp::min) && p_.count == 0 &&
        out_n_ > 0)
      throw Error("rlx-cpu: " + c.what() + ": max / min over an empty axis");
    ostride_.assign(p_.dims.size(), 0);
    istride_.assign(p_.dims.size(), 1);
    std::int64_t s = 1;
    for (std::size_t d = p_.dims.size(); d-- > 0;) {
      if (d + 1 < p_.dims.size())
        istride_[d] = istride_[d + 1] * p_.dims[d + 1];
      if (!p_.reduced[d]) {
        ostride_[d] = s;
        s *= p_.dims[d];
      }
    }
  }

  void run(ExecContext& ctx) override {
    if (p_.suffix) {
      std::int64_t len = p_.count;
      parallel_for(ctx, out_n_, grain_for(len), [&](std::int64_t b, std::int64_t e) {
        for (std::int64_t r = b; r < e; ++r) {
          const T* x = x_ + r * len;
          A a = acc_.init();
          for (std::int64_t i = 0; i < len; ++i)
            a = acc_.step(a, static_cast<A>(to_compute<T>(x[i])));
          y_[r] = finish(a);
        }
      });
      return;
    }
    if (prefix_sum()) { // [R, K] summed over R (bias gradients): column blocks in parallel
      const std::int64_t rows = p_.dims[0], cols = p_.dims[1];
      parallel_for(ctx, cols, std::max<std::int64_t>(kColumnBlock, grain_for(rows)),
                   [&](std::int64_t b, std::int64_t e) { sum_columns(rows, cols, b, e); });
      return;
    }
    // General axis sets: one pass over the input in order, accumulating per output element.
    for (std::int64_t i = 0; i < out_n_; ++i)
      scratch_[i] = acc_.init();
    walk(0, 0, 0);
    for (std::int64_t i = 0; i < out_n_; ++i)
      y_[i] = finish(scratch_[i]);
  }

private:
  /// Columns summed per block of a prefix sum: the block's accumulators stay in L1.
  static constexpr std::int64_t kColumnBlock = 256;

  /// A float sum / mean over a leading run of axes with a kept trailing run ([R, K] -> [K]).
  bool prefix_sum() const {
    return std::is_floating_point_v<A> && p_.dims.size() == 2 && p_.reduced[0] && !p_.reduced[1] &&
           (acc_.op == ir::ReduceOp::sum || acc_.op == ir::ReduceOp::mean);
  }

  /// Columns [b, e) of a prefix sum, block by block, each column accumulated in row order (the
  /// order of the general walk, so the result is the same to the bit) into the scratch slots.
  void sum_columns(std::int64_t rows, std::int64_t cols, std::int64_t b, std::int64_t e) {
    for (std::int64_t c0 = b; c0 < e; c0 += kColumnBlock) {
      const std::int64_t c1 = std::min(e, c0 + kColumnBlock);
      A* acc = scratch_ + c0;
      for (std::int64_t c = c0; c < c1; ++c)
        acc[c - c0] = A{0};
      for (std::int64_t r = 0; r < rows; ++r) {
        const T* x = x_ + r * cols;
#pragma omp simd
        for (std::int64_t c = c0; c < c1; ++c)
          acc[c - c0] += static_cast<A>(to_compute<T>(x[c]));
      }
      for (std::int64_t c = c0; c < c1; ++c)
        y_[c] = finish(acc[c - c0]);
    }
  }

  /// Recursive row-major walk over the collapsed dims (depth ≤ rank, no allocation).
  void walk(std::size_t d, std::int64_t in_off, std::int64_t out_off) {
    if (d + 1 == p_.dims.size()) {
      for (std::int64_t i = 0; i < p_.dims[d]; ++i) {
        A& a = scratch_[out_off + i * ostride_[d]];
        a = acc_.step(a, static_cast<A>(to_compute<T>(x_[in_off + i])));
      }
      return;
    }
    for (std::int64_t i = 0; i < p_.dims[d]; ++i)
      walk(d + 1, in_off + i * istride_[d], out_off + i * ostride_[d]);
  }

  T finish(A a) const {
    if constexpr (std::is_floating_point_v<A>)
      if (acc_.op == ir::ReduceOp::mean)
        a /= static_cast<double>(p_.count);
    return from_compute<T>(static_cast<compute_t<T>>(a));
  }

  ReducePlan p_;
  Accumulate<A> acc_;
  const T* x_;
  T* y_;
  std::int64_t out_n_;
  A* scratch_;
  std::vector<std::int64_t> ostride_, istride_; ///< per collapsed dim: output / input strides
};

std::int64_t reduce_scratch(const NodeView& n) {
  return plan_reduce(n).suffix ? 0 : n.out().numel() * 8;
}

std::unique_ptr<Kernel> make_reduce(const LowerContext& c) {
  std::byte* scratch = c.scratch(reduce_scratch(c));
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, ir::f16_t> ||
                  std::is_same_v<T, ir::bf16_t>)
      throw Error("rlx-cpu: " + c.what() + ": reduce on " +
                  std::string(ir::dtype_name(c.out().dtype)) + " is not claimed");
    else
      return std::make_unique<ReduceKernel<T>>(c, scratch);
  });
}

constexpr KernelImpl kReduce[] = {{"tbb", accept_all, reduce_scratch, make_reduce}};

// ---- ArgMax
// --------------------------------------------------------------------------------------

template <class T> class ArgMaxKernel final : public Kernel {
public:
  explicit ArgMaxKernel(const LowerContext& c)
      : x_(reinterpret_cast<const T*>(c.src(0))), y_(reinterpret_cast<std::int64_t*>(c.dst())) {
    auto s = c.in(0).sizes();
    auto ax = static_cast<std::size_t>(
        ir::normalize_axis(c.node().attr<ir::ArgMaxAttrs>().axis, s.size(), "argmax"));
    for (std::size_t i = 0; i < s.size(); ++i) {
      if (i < ax)
        outer_ *= s[i];
      else if (i == ax)
        axis_ = s[i];
      else
        inner_ *= s[i];
    }
    if (axis_ == 0 && outer_ * inner_ > 0)
      throw Error("rlx-cpu: " + c.what() + ": argmax over an empty axis");
  }
  void run(ExecContext& ctx) override {
    parallel_for(ctx, outer_ * inner_, grain_for(axis_), [&](std::int64_t b, std::int64_t e) {
      for (std::int64_t lane = b; lane < e; ++lane) {
        std::int64_t o = lane / inner_, i = lane % inner_;
        const T* x = x_ + o * axis_ * inner_ + i;
        std::int64_t best = 0;
        auto bv = to_compute<T>(x[0]);
        for (std::int64_t j = 1; j < axis_; ++j) {
          auto v = to_compute<T>(x[j * inner_]);
          if (beats_max(v, bv)) {
            best = j;
            bv = v;
          }
        }
        y_[lane] = best;
      }
    });
  }

private:
  const T* x_;
  std::int64_t* y_;
  std::int64_t outer_ = 1, axis_ = 1, inner_ = 1;
};

std::unique_ptr<Kernel> make_argmax(const LowerContext& c) {
  return visit_dtype(c.in(0).dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool>)
      throw Error("rlx-cpu: " + c.what() + ": argmax on bool");
    else
      return std::make_unique<ArgMaxKernel<T>>(c);
  });
}

constexpr KernelImpl kArgMax[] = {{"tbb", accept_all, nullptr, make_argmax}};

} // namespace

std::span<const KernelImpl> reduce_impls() {
  return kReduce;
}
std::span<const KernelImpl> argmax_impls() {
  return kArgMax;
}

} // namespace rlx::cpu
