// tuple.cpp: reference semantics of the ops with several results (tuple-typed nodes): Split and
// an ElementwiseRegion with several outputs. Get
// is no kernel: the interpreter hands out the part its operand's value holds.
#include "kernels.hpp"

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

} // namespace

std::vector<Tensor> tuple_kernel(const Node& node, const Shape& out, Args in) {
  switch (node.op) {
  case OpKind::Split:
    return split_parts(node, out, in);
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

RLX_REFERENCE_KERNEL(Get) {
  fail("get: it reads a part of a tuple value; evaluate() selects it");
}

} // namespace rlx::ir::reference::kernels
