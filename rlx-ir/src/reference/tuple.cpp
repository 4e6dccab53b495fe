// tuple.cpp: reference semantics of the ops with several results (tuple-typed nodes): Split and
// TopK (values, indices) and an ElementwiseRegion with several outputs. Get
// is no kernel: the interpreter hands out the part its operand's value holds.
#include "kernels.hpp"

#include <algorithm>
#include <cmath>
#include <type_traits>

namespace rlx::ir::reference {

namespace {

/// Split: part p takes rows [start_p, start_p + sizes[p]) of the axis, in order.
std::vector<Tensor> split_parts(const Node& node, const Shape& out, Args in) {
  const auto& a = node.attr<SplitAttrs>();
  Sizes sizes = in[0].shape().sizes();
  std::size_t ax = axis_of(a.axis, sizes.size(), "split");
  std::int64_t outer = product(sizes, 0, ax), len = sizes[ax];
  std::int64_t inner = product(sizes, ax + 1, sizes.size());
  std::vector<Tensor> parts;
  std::int64_t start = 0;
  for (std::size_t p = 0; p < a.sizes.size(); ++p) {
    std::vector<std::int64_t> offsets;
    offsets.reserve(static_cast<std::size_t>(outer * a.sizes[p] * inner));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < a.sizes[p]; ++j)
        for (std::int64_t i = 0; i < inner; ++i)
          offsets.push_back((o * len + start + j) * inner + i);
    parts.push_back(gather_elements(out.parts[p], in[0], offsets));
    start += a.sizes[p];
  }
  return parts;
}

/// TopK: for each line along the axis, the indices in the order a stable sort puts them (largest:
/// descending, smallest: ascending; NaN above every number; ties keep the lower index first),
/// the first k of them, and the values they hold.
std::vector<Tensor> topk_parts(const Node& node, const Shape& out, Args in) {
  const auto& a = node.attr<TopKAttrs>();
  Sizes sizes = in[0].shape().sizes();
  std::size_t ax = axis_of(a.axis, sizes.size(), "topk");
  std::int64_t outer = product(sizes, 0, ax), len = sizes[ax];
  std::int64_t inner = product(sizes, ax + 1, sizes.size());
  return with_compute_type(in[0].dtype(), [&]<class T>(T) {
    auto v = load<T>(in[0]);
    // "a before b" in the output order: NaN is greater than every number.
    auto before = [&](T x, T y) {
      if constexpr (std::is_floating_point_v<T>) {
        if (std::isnan(x) || std::isnan(y))
          return a.largest ? (std::isnan(x) && !std::isnan(y)) : (!std::isnan(x) && std::isnan(y));
      }
      return a.largest ? x > y : x < y;
    };
    std::vector<T> values;
    std::vector<std::int64_t> indices;
    values.reserve(static_cast<std::size_t>(outer * a.k * inner));
    indices.reserve(values.capacity());
    std::vector<std::int64_t> order(static_cast<std::size_t>(len));
    std::vector<std::int64_t> picked(static_cast<std::size_t>(outer * a.k * inner));
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t i = 0; i < inner; ++i) {
        auto at = [&](std::int64_t j) {
          return v[static_cast<std::size_t>((o * len + j) * inner + i)];
        };
        for (std::int64_t j = 0; j < len; ++j)
          order[static_cast<std::size_t>(j)] = j;
        std::stable_sort(order.begin(), order.end(),
                         [&](std::int64_t p, std::int64_t q) { return before(at(p), at(q)); });
        for (std::int64_t j = 0; j < a.k; ++j)
          picked[static_cast<std::size_t>((o * a.k + j) * inner + i)] =
              order[static_cast<std::size_t>(j)];
      }
    for (std::int64_t o = 0; o < outer; ++o)
      for (std::int64_t j = 0; j < a.k; ++j)
        for (std::int64_t i = 0; i < inner; ++i) {
          std::int64_t src = picked[static_cast<std::size_t>((o * a.k + j) * inner + i)];
          values.push_back(v[static_cast<std::size_t>((o * len + src) * inner + i)]);
          indices.push_back(src);
        }
    std::vector<Tensor> parts;
    parts.push_back(store<T>(out.parts[0], values));
    parts.push_back(store_i64(out.parts[1], indices));
    return parts;
  });
}

} // namespace

std::vector<Tensor> tuple_kernel(const Node& node, const Shape& out, Args in) {
  switch (node.op) {
  case OpKind::Split:
    return split_parts(node, out, in);
  case OpKind::TopK:
    return topk_parts(node, out, in);
  case OpKind::ElementwiseRegion: // several results: body output i is part i
    return evaluate_positional(*node.attr<RegionAttrs>().body, in);
  case OpKind::ResidualLayerNorm: // fused and backward ops: their decompositions, one value per
                                  // part
  case OpKind::ResidualRmsNorm:
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
  case OpKind::AttentionGrad:
    return evaluate_by_decomposition(node, out, in);
  default:
    fail(std::string(op_name(node.op)) + ": the op has no tuple result");
  }
}

} // namespace rlx::ir::reference

namespace rlx::ir::reference::kernels {

// The generated single-result entry points of the tuple ops. evaluate_node refuses tuple-typed
// nodes and Get before it dispatches, so these only name the right door.
RLX_REFERENCE_KERNEL(Split) {
  fail("split: its result is a tuple; evaluate it with evaluate_node_parts");
}

RLX_REFERENCE_KERNEL(TopK) {
  fail("topk: its result is a tuple; evaluate it with evaluate_node_parts");
}

RLX_REFERENCE_KERNEL(Get) {
  fail("get: it reads a part of a tuple value; evaluate() selects it");
}

} // namespace rlx::ir::reference::kernels
