// fused.cpp: reference kernels of the fused ops (ops.def's "fused ops" section): each evaluates
// the op's first applicable decomposition (rlx/ir/decompose.hpp), which is its definition.
#include "kernels.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"

namespace rlx::ir::reference {

namespace {

/// Evaluates \p node by emitting its decomposition over Inputs of the operands' types into a
/// temporary graph and evaluating that graph.
Tensor evaluate_by_decomposition(const Node& node, const Shape& out, Args in) {
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
  const NodeId r = decompose(b, self, DecomposeOptions{}, why);
  if (!r.valid())
    fail(std::string(op_name(node.op)) + " has no decomposition that applies: " + why);
  b.output(r);
  g.compact();
  return evaluate_positional(g, in).at(0);
}

} // namespace

std::vector<Tensor> fused_tuple_parts(const Node& node, const Shape& out, Args in) {
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
  const std::vector<NodeId> parts = decompose_parts(b, self, DecomposeOptions{}, why);
  if (parts.empty())
    fail(std::string(op_name(node.op)) + " has no decomposition that applies: " + why);
  for (NodeId p : parts)
    b.output(p);
  g.compact();
  return evaluate_positional(g, in);
}

namespace kernels {

RLX_REFERENCE_KERNEL(MatMulBiasAct) {
  return evaluate_by_decomposition(node, out, in);
}

RLX_REFERENCE_KERNEL(SwiGlu) {
  return evaluate_by_decomposition(node, out, in);
}

RLX_REFERENCE_KERNEL(SwiGluMatMul) {
  return evaluate_by_decomposition(node, out, in);
}

// The generated single-result entry points of the tuple-typed fused ops: evaluate_node refuses
// tuple-typed nodes, so these are never reached (tuple_kernel evaluates them).
RLX_REFERENCE_KERNEL(ResidualLayerNorm) {
  fail("residual_layer_norm: its result is a tuple; evaluate it with evaluate_node_parts");
}

RLX_REFERENCE_KERNEL(ResidualRmsNorm) {
  fail("residual_rms_norm: its result is a tuple; evaluate it with evaluate_node_parts");
}

} // namespace kernels

} // namespace rlx::ir::reference
