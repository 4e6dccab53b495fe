// movement.cpp: reference kernels of the data-movement ops: Reshape, Transpose, Narrow, Concat,
// Expand (bytewise copies, exact for every dtype), Gather and ScatterAdd.
#include "kernels.hpp"

namespace rlx::ir::reference::kernels {
namespace {

/// Sizes of a tensor viewed as [outer, axis, inner] around axis \p ax.
struct AxisSplit {
  std::int64_t outer, axis, inner;
};
AxisSplit split_at(const Sizes& s, std::size_t ax) {
  return {product(s, 0, ax), s[ax], product(s, ax + 1, s.size())};
}

/// Checks element \p i of \p indices against [0, size) (negative indices are out of range).
void checked_index(const std::vector<std::int64_t>& indices, std::int64_t i, std::int64_t size,
                   std::size_t ax, const char* op) {
  std::int64_t v = indices[static_cast<std::size_t>(i)];
  if (v < 0 || v >= size)
    fail(std::string(op) + ": index " + std::to_string(v) + " (element " + std::to_string(i) +
         " of the indices) is out of range [0, " + std::to_string(size) + ") along axis " +
         std::to_string(ax));
}

} // namespace

RLX_REFERENCE_KERNEL(Reshape) {
  return in[0].clone().reshaped(out.sizes());
}

RLX_REFERENCE_KERNEL(Transpose) {
  return permute(in[0], node.attr<TransposeAttrs>().perm);
}

RLX_REFERENCE_KERNEL(Narrow) {
  const auto& a = node.attr<NarrowAttrs>();
  Sizes sizes = in[0].shape().sizes();
  std::size_t ax = axis_of(a.axis, sizes.size(), "narrow");
  if (a.start + a.length > sizes[ax])
    fail("narrow: [" + std::to_string(a.start) + ", " + std::to_string(a.start + a.length) +
         ") exceeds dim " + std::to_string(ax) + " of " + in[0].shape().str());
  AxisSplit s = split_at(sizes, ax);
  std::vector<std::int64_t> offsets;
  offsets.reserve(static_cast<std::size_t>(out.numel()));
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t j = 0; j < a.length; ++j)
      for (std::int64_t i = 0; i < s.inner; ++i)
        offsets.push_back((o * s.axis + a.start + j) * s.inner + i);
  return gather_elements(out, in[0], offsets);
}

RLX_REFERENCE_KERNEL(Concat) {
  Sizes so = out.sizes();
  std::size_t ax = axis_of(node.attr<AxisAttrs>().axis, so.size(), "concat");
  AxisSplit so_split = split_at(so, ax);
  Tensor r(out);
  std::int64_t base = 0; // where the current operand starts along the axis
  for (const Tensor& t : in) {
    AxisSplit s = split_at(t.shape().sizes(), ax);
    for (std::int64_t o = 0; o < s.outer; ++o)
      for (std::int64_t j = 0; j < s.axis; ++j)
        for (std::int64_t i = 0; i < s.inner; ++i)
          copy_element(r, (o * so_split.axis + base + j) * s.inner + i, t,
                       (o * s.axis + j) * s.inner + i);
    base += s.axis;
  }
  return r;
}

RLX_REFERENCE_KERNEL(Expand) {
  return gather_elements(out, in[0], broadcast_offsets(in[0].shape().sizes(), out.sizes()));
}

RLX_REFERENCE_KERNEL(Gather) {
  // out[o, j..., i] = table[o, indices[j...], i] with o over table[:axis], i over table[axis+1:].
  const Tensor& table = in[0];
  Sizes st = table.shape().sizes();
  std::size_t ax = axis_of(node.attr<AxisAttrs>().axis, st.size(), "gather");
  AxisSplit s = split_at(st, ax);
  auto indices = load_i64(in[1]);
  auto n = static_cast<std::int64_t>(indices.size());
  for (std::int64_t j = 0; j < n; ++j) // check every index, even when the table is empty
    checked_index(indices, j, s.axis, ax, "gather");
  Tensor r(out);
  for (std::int64_t o = 0; o < s.outer; ++o)
    for (std::int64_t j = 0; j < n; ++j) {
      std::int64_t v = indices[static_cast<std::size_t>(j)];
      for (std::int64_t i = 0; i < s.inner; ++i)
        copy_element(r, (o * n + j) * s.inner + i, table, (o * s.axis + v) * s.inner + i);
    }
  return r;
}

RLX_REFERENCE_KERNEL(ScatterAdd) {
  // out = target; out[o, indices[j...], i] += updates[o, j..., i] (repeated indices accumulate).
  Sizes st = in[0].shape().sizes();
  std::size_t ax = axis_of(node.attr<AxisAttrs>().axis, st.size(), "scatter_add");
  AxisSplit s = split_at(st, ax);
  auto indices = load_i64(in[1]);
  auto n = static_cast<std::int64_t>(indices.size());
  for (std::int64_t j = 0; j < n; ++j) // check every index, even when there is nothing to add
    checked_index(indices, j, s.axis, ax, "scatter_add");
  return with_compute_type(out.dtype, [&]<class T>(T) {
    auto acc = load<T>(in[0]);
    auto upd = load<T>(in[2]);
    for (std::int64_t o = 0; o < s.outer; ++o)
      for (std::int64_t j = 0; j < n; ++j) {
        std::int64_t v = indices[static_cast<std::size_t>(j)];
        for (std::int64_t i = 0; i < s.inner; ++i) {
          auto& dst = acc[static_cast<std::size_t>((o * s.axis + v) * s.inner + i)];
          dst = add<T>(dst, upd[static_cast<std::size_t>((o * n + j) * s.inner + i)]);
        }
      }
    return store<T>(out, acc);
  });
}

} // namespace rlx::ir::reference::kernels
