// fused.cpp: reference kernels of the fused and backward ops (ops.def's "fused ops" and
// "backward ops" sections): each evaluates
// the op's first applicable decomposition (rlx/ir/decompose.hpp), which is its definition.
#include "kernels.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"

namespace rlx::ir::reference {

std::vector<Tensor> evaluate_by_decomposition(const Node& node, const Shape& out, Args in) {
  Graph g(std::string(op_name(node.op)) + "_decomposition");
  Builder b(g);
  std::vector<NodeId> args;
  for (std::size_t i = 0; i < in.size(); ++i)
    args.push_back(b.input("arg" + std::to_string(i), in[i].shape()));
  Node bound = node;
  bound.inputs = args;
  bound.shape = out;
  const NodeId self = g.add_unchecked(std::move(bound));
  std::string why;
  const std::vector<NodeId> r = decompose_values(b, self, DecomposeOptions{}, why);
  if (r.empty())
    fail(std::string(op_name(node.op)) + " has no decomposition that applies: " + why);
  for (NodeId v : r)
    b.output(v);
  g.compact();
  return evaluate_positional(g, in);
}

namespace kernels {

RLX_REFERENCE_KERNEL(MatMulBiasAct) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(SwiGlu) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(SwiGluMatMul) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(FusedAttentionBlock) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(FusedTransformerLayer) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

} // namespace kernels

} // namespace rlx::ir::reference

namespace rlx::ir::reference::kernels {

// The generated single-result entry points of the tuple-typed fused ops: evaluate_node refuses
// tuple-typed nodes, so these are never reached (tuple_kernel evaluates them).
RLX_REFERENCE_KERNEL(ResidualLayerNorm) {
  fail("residual_layer_norm: its result is a tuple; evaluate it with evaluate_node_parts");
}

RLX_REFERENCE_KERNEL(ResidualRmsNorm) {
  fail("residual_rms_norm: its result is a tuple; evaluate it with evaluate_node_parts");
}

// The backward ops (ops.def's "backward ops"): their decompositions define them. The norms' grads
// are tuple-typed: tuple_kernel evaluates them, these entry points only name the right door.
RLX_REFERENCE_KERNEL(SoftmaxGrad) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(LogSoftmaxGrad) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(LayerNormGrad) {
  fail("layer_norm_grad: its result is a tuple; evaluate it with evaluate_node_parts");
}

RLX_REFERENCE_KERNEL(RmsNormGrad) {
  fail("rms_norm_grad: its result is a tuple; evaluate it with evaluate_node_parts");
}

// backward ops 2: attention_grad is tuple-typed (tuple_kernel), the cross-entropy grad is not.
RLX_REFERENCE_KERNEL(AttentionGrad) {
  fail("attention_grad: its result is a tuple; evaluate it with evaluate_node_parts");
}

RLX_REFERENCE_KERNEL(SoftmaxCrossEntropyGrad) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

RLX_REFERENCE_KERNEL(RopeGrad) {
  return evaluate_by_decomposition(node, out, in).at(0);
}

} // namespace rlx::ir::reference::kernels
