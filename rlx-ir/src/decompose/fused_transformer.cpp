// fused_transformer.cpp: decompositions of the transformer fused ops (SwiGlu, SwiGluMatMul) into
// primitives: what a backend that does not claim them runs, and what unfuse emits.
#include "families.hpp"

namespace rlx::ir::decompose_detail {

namespace {

// swiglu(gate, up) = silu(gate) * up (silu rounds once more than the fused op: within an ulp).
NodeId swiglu_by_silu(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  return b.mul(b.silu(n.inputs[0]), n.inputs[1]);
}

/// x w^T for a [N, K] weight w, or x w for a [K, N] one (weights_kn).
NodeId projection(Builder& b, NodeId x, NodeId w, const Node& n) {
  const bool kn = n.attr<SwiGluMatMulAttrs>().weights_kn;
  return b.matmul(x, w, /*transpose_a=*/false, /*transpose_b=*/!kn);
}

// swiglu_matmul(x, wg, wu) = swiglu(x wg^T, x wu^T) (x wg, x wu with weights_kn).
NodeId swiglu_matmul_by_matmul(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  NodeId gate = projection(b, n.inputs[0], n.inputs[1], n);
  NodeId up = projection(b, n.inputs[0], n.inputs[2], n);
  return b.op(OpKind::SwiGlu, {gate, up});
}

// swiglu_matmul(x, wg, wu) = silu(x wg^T) * (x wu^T), primitives only.
NodeId swiglu_matmul_by_primitives(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  NodeId gate = projection(b, n.inputs[0], n.inputs[1], n);
  NodeId up = projection(b, n.inputs[0], n.inputs[2], n);
  return b.mul(b.silu(gate), up);
}

} // namespace

void add_fused_transformer_decompositions(DecompositionTable& t) {
  t.set(OpKind::SwiGlu, {{"swiglu_by_silu", swiglu_by_silu}});
  t.set(OpKind::SwiGluMatMul, {{"swiglu_matmul_by_matmul", swiglu_matmul_by_matmul},
                               {"swiglu_matmul_by_primitives", swiglu_matmul_by_primitives}});
}

} // namespace rlx::ir::decompose_detail
