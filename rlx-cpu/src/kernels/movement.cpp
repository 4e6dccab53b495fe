// movement.cpp: data movement: Reshape (as a copy when not aliased), Transpose, Narrow, Concat,
// Expand (bytewise, exact for every dtype), Gather and ScatterAdd.
#include "../broadcast.hpp"
#include "../dtypes.hpp"
#include "../lower.hpp"
#include "block_copy.hpp"
#include "rlx/ir/error.hpp"

#include <cstring>

namespace rlx::cpu {
namespace {

std::int64_t product(const std::vector<std::int64_t>& s, std::size_t b, std::size_t e) {
  std::int64_t p = 1;
  for (std::size_t i = b; i < e; ++i)
    p *= s[i];
  return p;
}

// ---- reshape (a pure view; a copy only when its buffer is not aliased) ------------------------

std::unique_ptr<Kernel> make_reshape_copy(const LowerContext& c) {
  std::int64_t bytes = c.out().bytes();
  return std::make_unique<BlockCopy>(c.src(0), bytes, c.dst(), bytes, 1, bytes);
}

constexpr KernelImpl kViewCopy[] = {{"copy", accept_all, nullptr, make_reshape_copy}};

// ---- transpose ---------------------------------------------------------------------------------

/// A permutation copy with collapsed dims: out is walked row-major; src_strides (in elements)
/// say where each out dim steps in the source.
template <std::size_t Bytes> class TransposeKernel final : public Kernel {
public:
  TransposeKernel(const std::byte* src, std::byte* dst, std::vector<std::int64_t> dims,
                  std::vector<std::int64_t> src_strides)
      : src_(src), dst_(dst), dims_(std::move(dims)), strides_(std::move(src_strides)) {}
  void run(ExecContext& ctx) override {
    std::int64_t inner = dims_.back(), is = strides_.back();
    std::int64_t rows = 1;
    for (std::size_t d = 0; d + 1 < dims_.size(); ++d)
      rows *= dims_[d];
    parallel_for(ctx, rows, grain_for(inner * static_cast<std::int64_t>(Bytes), kCopyGrainBytes),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t r = b; r < e; ++r) {
                     std::int64_t off = 0, rem = r;
                     for (std::size_t d = dims_.size() - 1; d-- > 0;) {
                       off += (rem % dims_[d]) * strides_[d];
                       rem /= dims_[d];
                     }
                     std::byte* y = dst_ + r * inner * static_cast<std::int64_t>(Bytes);
                     const std::byte* x = src_ + off * static_cast<std::int64_t>(Bytes);
                     if (is == 1) {
                       std::memcpy(y, x, static_cast<std::size_t>(inner) * Bytes);
                     } else {
                       for (std::int64_t i = 0; i < inner; ++i)
                         std::memcpy(y + i * static_cast<std::int64_t>(Bytes),
                                     x + i * is * static_cast<std::int64_t>(Bytes), Bytes);
                     }
                   }
                 });
  }

private:
  const std::byte* src_;
  std::byte* dst_;
  std::vector<std::int64_t> dims_, strides_;
};

/// Out dims of a transpose and their source strides, with size-1 dims dropped and dims merged
/// where the source walks them contiguously.
void collapse_permutation(const std::vector<std::int64_t>& in_sizes,
                          const std::vector<std::int64_t>& perm, std::vector<std::int64_t>& dims,
                          std::vector<std::int64_t>& strides) {
  std::vector<std::int64_t> in_strides(in_sizes.size(), 1);
  for (std::size_t i = in_sizes.size(); i-- > 1;)
    in_strides[i - 1] = in_strides[i] * in_sizes[i];
  for (std::int64_t p : perm) {
    auto pi = static_cast<std::size_t>(p);
    if (in_sizes[pi] == 1)
      continue;
    if (!dims.empty() && strides.back() == in_strides[pi] * in_sizes[pi]) {
      dims.back() *= in_sizes[pi];
      strides.back() = in_strides[pi];
    } else {
      dims.push_back(in_sizes[pi]);
      strides.push_back(in_strides[pi]);
    }
  }
  if (dims.empty()) {
    dims.push_back(1);
    strides.push_back(1);
  }
}

template <template <std::size_t> class K, class... Args>
std::unique_ptr<Kernel> by_element_size(std::size_t bytes, Args&&... args) {
  switch (bytes) {
  case 1:
    return std::make_unique<K<1>>(std::forward<Args>(args)...);
  case 2:
    return std::make_unique<K<2>>(std::forward<Args>(args)...);
  case 4:
    return std::make_unique<K<4>>(std::forward<Args>(args)...);
  default:
    return std::make_unique<K<8>>(std::forward<Args>(args)...);
  }
}

std::unique_ptr<Kernel> make_transpose(const LowerContext& c) {
  std::vector<std::int64_t> dims, strides;
  collapse_permutation(c.in(0).sizes(), c.node().attr<ir::TransposeAttrs>().perm, dims, strides);
  return by_element_size<TransposeKernel>(ir::dtype_size(c.out().dtype), c.src(0), c.dst(),
                                          std::move(dims), std::move(strides));
}

constexpr KernelImpl kTranspose[] = {{"tbb", accept_all, nullptr, make_transpose}};

// ---- narrow / concat ---------------------------------------------------------------------------

std::unique_ptr<Kernel> make_narrow(const LowerContext& c) {
  const auto& a = c.node().attr<ir::NarrowAttrs>();
  auto sizes = c.in(0).sizes();
  auto ax = static_cast<std::size_t>(ir::normalize_axis(a.axis, sizes.size(), "narrow"));
  auto es = static_cast<std::int64_t>(ir::dtype_size(c.out().dtype));
  std::int64_t outer = product(sizes, 0, ax), inner = product(sizes, ax + 1, sizes.size()) * es;
  return std::make_unique<BlockCopy>(c.src(0) + a.start * inner, sizes[ax] * inner, c.dst(),
                                     a.length * inner, outer, a.length * inner);
}

constexpr KernelImpl kNarrow[] = {{"tbb", accept_all, nullptr, make_narrow}};

/// One BlockCopy per operand, into its column range of the output.
class ConcatKernel final : public Kernel {
public:
  void run(ExecContext& ctx) override {
    for (auto& p : parts)
      p.run(ctx);
  }
  std::vector<BlockCopy> parts;
};

std::unique_ptr<Kernel> make_concat(const LowerContext& c) {
  auto out = c.out().sizes();
  auto ax = static_cast<std::size_t>(
      ir::normalize_axis(c.node().attr<ir::AxisAttrs>().axis, out.size(), "concat"));
  auto es = static_cast<std::int64_t>(ir::dtype_size(c.out().dtype));
  std::int64_t outer = product(out, 0, ax), inner = product(out, ax + 1, out.size()) * es;
  auto k = std::make_unique<ConcatKernel>();
  std::int64_t at = 0;
  for (std::size_t i = 0; i < c.arity(); ++i) {
    std::int64_t len = c.in(i).sizes()[ax];
    if (len > 0)
      k->parts.emplace_back(c.src(i), len * inner, c.dst() + at * inner, out[ax] * inner, outer,
                            len * inner);
    at += len;
  }
  return k;
}

constexpr KernelImpl kConcat[] = {{"tbb", accept_all, nullptr, make_concat}};

// ---- expand ------------------------------------------------------------------------------------

template <std::size_t Bytes> class ExpandKernel final : public Kernel {
public:
  ExpandKernel(const std::byte* src, std::byte* dst, BroadcastPlan plan)
      : src_(src), dst_(dst), plan_(std::move(plan)) {}
  void run(ExecContext& ctx) override {
    std::int64_t inner = plan_.inner(), is = plan_.inner_stride(0);
    auto b = static_cast<std::int64_t>(Bytes);
    parallel_for(ctx, plan_.rows(), grain_for(inner * b, kCopyGrainBytes),
                 [&](std::int64_t r0, std::int64_t r1) {
                   std::int64_t off;
                   for (std::int64_t r = r0; r < r1; ++r) {
                     plan_.row_offsets(r, &off);
                     std::byte* y = dst_ + r * inner * b;
                     const std::byte* x = src_ + off * b;
                     if (is == 1) {
                       std::memcpy(y, x, static_cast<std::size_t>(inner * b));
                     } else {
                       for (std::int64_t i = 0; i < inner; ++i)
                         std::memcpy(y + i * b, x + i * is * b, Bytes);
                     }
                   }
                 });
  }

private:
  const std::byte* src_;
  std::byte* dst_;
  BroadcastPlan plan_;
};

std::unique_ptr<Kernel> make_expand(const LowerContext& c) {
  std::vector<std::vector<std::int64_t>> ins{c.in(0).sizes()};
  return by_element_size<ExpandKernel>(ir::dtype_size(c.out().dtype), c.src(0), c.dst(),
                                       plan_broadcast(c.out().sizes(), ins));
}

constexpr KernelImpl kExpand[] = {{"tbb", accept_all, nullptr, make_expand}};

// ---- gather / scatter-add ----------------------------------------------------------------------

/// Reads every index as int64 and checks it against [0, size); throws Error naming the node.
template <class I>
void load_indices(const I* idx, std::int64_t n, std::int64_t size, std::int64_t* out,
                  const std::string& what) {
  for (std::int64_t j = 0; j < n; ++j) {
    auto v = static_cast<std::int64_t>(idx[j]);
    if (v < 0 || v >= size)
      throw Error("rlx-cpu: " + what + ": index " + std::to_string(v) + " (element " +
                  std::to_string(j) + " of the indices) is out of range [0, " +
                  std::to_string(size) + ")");
    out[j] = v;
  }
}

/// Scratch of Gather / ScatterAdd: the indices, checked and widened to int64.
std::int64_t index_scratch(const NodeView& n) {
  return n.in(1).numel() * 8;
}

/// Gather along an axis: out[o, j, i] = table[o, idx[j], i] (i spans `chunk` bytes).
class GatherKernel final : public Kernel {
public:
  GatherKernel(const LowerContext& c) : what_(c.what()) {
    auto st = c.in(0).sizes();
    auto ax = static_cast<std::size_t>(
        ir::normalize_axis(c.node().attr<ir::AxisAttrs>().axis, st.size(), "gather"));
    outer_ = product(st, 0, ax);
    axis_ = st[ax];
    chunk_ =
        product(st, ax + 1, st.size()) * static_cast<std::int64_t>(ir::dtype_size(c.out().dtype));
    n_ = c.in(1).numel();
    idx_dtype_ = c.in(1).dtype;
    table_ = c.src(0);
    idx_ = c.src(1);
    dst_ = c.dst();
    loaded_ = reinterpret_cast<std::int64_t*>(c.scratch(index_scratch(c)));
  }
  void run(ExecContext& ctx) override {
    visit_dtype(idx_dtype_, [&]<class I>() {
      if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>)
        load_indices(reinterpret_cast<const I*>(idx_), n_, axis_, loaded_, what_);
    });
    parallel_for(ctx, outer_ * n_, grain_for(chunk_, kCopyGrainBytes),
                 [&](std::int64_t b, std::int64_t e) {
                   for (std::int64_t r = b; r < e; ++r) {
                     std::int64_t o = r / n_, j = r % n_;
                     std::memcpy(dst_ + r * chunk_, table_ + (o * axis_ + loaded_[j]) * chunk_,
                                 static_cast<std::size_t>(chunk_));
                   }
                 });
  }

private:
  std::string what_;
  std::int64_t outer_ = 0, axis_ = 0, chunk_ = 0, n_ = 0;
  ir::DType idx_dtype_ = ir::DType::i64;
  const std::byte* table_ = nullptr;
  const std::byte* idx_ = nullptr;
  std::byte* dst_ = nullptr;
  std::int64_t* loaded_ = nullptr; // the checked int64 indices (planned scratch)
};

std::unique_ptr<Kernel> make_gather(const LowerContext& c) {
  return std::make_unique<GatherKernel>(c);
}

constexpr KernelImpl kGather[] = {{"tbb", accept_all, index_scratch, make_gather}};

/// out = target; out[o, idx[j], i] += updates[o, j, i], serially (repeated indices accumulate).
template <class T> class ScatterAddKernel final : public Kernel {
public:
  ScatterAddKernel(const LowerContext& c) : what_(c.what()) {
    auto st = c.in(0).sizes();
    auto ax = static_cast<std::size_t>(
        ir::normalize_axis(c.node().attr<ir::AxisAttrs>().axis, st.size(), "scatter_add"));
    outer_ = product(st, 0, ax);
    axis_ = st[ax];
    inner_ = product(st, ax + 1, st.size());
    n_ = c.in(1).numel();
    total_ = c.out().numel();
    idx_dtype_ = c.in(1).dtype;
    target_ = reinterpret_cast<const T*>(c.src(0));
    idx_ = c.src(1);
    upd_ = reinterpret_cast<const T*>(c.src(2));
    dst_ = reinterpret_cast<T*>(c.dst());
    loaded_ = reinterpret_cast<std::int64_t*>(c.scratch(index_scratch(c)));
  }
  void run(ExecContext&) override {
    visit_dtype(idx_dtype_, [&]<class I>() {
      if constexpr (std::is_integral_v<I> && !std::is_same_v<I, bool>)
        load_indices(reinterpret_cast<const I*>(idx_), n_, axis_, loaded_, what_);
    });
    std::memcpy(dst_, target_, static_cast<std::size_t>(total_) * sizeof(T));
    for (std::int64_t o = 0; o < outer_; ++o)
      for (std::int64_t j = 0; j < n_; ++j) {
        T* y = dst_ + (o * axis_ + loaded_[j]) * inner_;
        const T* u = upd_ + (o * n_ + j) * inner_;
        for (std::int64_t i = 0; i < inner_; ++i) {
          if constexpr (std::is_floating_point_v<T>)
            y[i] += u[i];
          else
            y[i] = from_compute<T>(wrap_add(to_compute<T>(y[i]), to_compute<T>(u[i])));
        }
      }
  }

private:
  std::string what_;
  std::int64_t outer_ = 0, axis_ = 0, inner_ = 0, n_ = 0, total_ = 0;
  ir::DType idx_dtype_ = ir::DType::i64;
  const T* target_ = nullptr;
  const std::byte* idx_ = nullptr;
  const T* upd_ = nullptr;
  T* dst_ = nullptr;
  std::int64_t* loaded_ = nullptr; // the checked int64 indices (planned scratch)
};

std::unique_ptr<Kernel> make_scatter_add(const LowerContext& c) {
  return visit_dtype(c.out().dtype, [&]<class T>() -> std::unique_ptr<Kernel> {
    if constexpr (std::is_same_v<T, bool> || std::is_same_v<T, ir::f16_t> ||
                  std::is_same_v<T, ir::bf16_t>)
      throw Error("rlx-cpu: " + c.what() + ": scatter_add on " +
                  std::string(ir::dtype_name(c.out().dtype)) + " is not claimed");
    else
      return std::make_unique<ScatterAddKernel<T>>(c);
  });
}

constexpr KernelImpl kScatterAdd[] = {{"loop", accept_all, index_scratch, make_scatter_add}};

} // namespace

std::span<const KernelImpl> view_copy_impls() {
  return kViewCopy;
}
std::span<const KernelImpl> transpose_impls() {
  return kTranspose;
}
std::span<const KernelImpl> narrow_impls() {
  return kNarrow;
}
std::span<const KernelImpl> concat_impls() {
  return kConcat;
}
std::span<const KernelImpl> expand_impls() {
  return kExpand;
}
std::span<const KernelImpl> gather_impls() {
  return kGather;
}
std::span<const KernelImpl> scatter_add_impls() {
  return kScatterAdd;
}

} // namespace rlx::cpu
