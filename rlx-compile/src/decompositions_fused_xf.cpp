// decompositions_fused_xf.cpp: the decompositions of the transformer fused ops (SwiGlu,
// SwiGluMatMul) into primitives, used by legalisation for a backend that does not claim them and
// by unfuse. Tested against the reference interpreter (rlx-compile/tests/decompositions_test.cpp
// covers every table entry on the op samples).
#include "decompose.hpp"

namespace rlx::compile::detail {

// swiglu(gate, up) = silu(gate) * up (silu rounds once more than the fused op: within an ulp).
ir::NodeId swiglu_by_silu(ir::Builder& b, ir::NodeId id, const fusion::PassOptions&, std::string&) {
  const ir::Node n = b.graph().node(id);
  return b.mul(b.silu(n.inputs[0]), n.inputs[1]);
}

// swiglu_matmul(x, wg, wu) = swiglu(x wg^T, x wu^T) with both products as MatMul(transpose_b).
ir::NodeId swiglu_matmul_by_matmul(ir::Builder& b, ir::NodeId id, const fusion::PassOptions&,
                                   std::string&) {
  const ir::Node n = b.graph().node(id);
  const ir::MatMulAttrs t{.transpose_a = false, .transpose_b = true};
  ir::NodeId gate = b.op(ir::OpKind::MatMul, {n.inputs[0], n.inputs[1]}, t);
  ir::NodeId up = b.op(ir::OpKind::MatMul, {n.inputs[0], n.inputs[2]}, t);
  return b.op(ir::OpKind::SwiGlu, {gate, up});
}

// swiglu_matmul without SwiGlu: silu(x wg^T) * (x wu^T).
ir::NodeId swiglu_matmul_by_primitives(ir::Builder& b, ir::NodeId id, const fusion::PassOptions&,
                                       std::string&) {
  const ir::Node n = b.graph().node(id);
  const ir::MatMulAttrs t{.transpose_a = false, .transpose_b = true};
  ir::NodeId gate = b.op(ir::OpKind::MatMul, {n.inputs[0], n.inputs[1]}, t);
  ir::NodeId up = b.op(ir::OpKind::MatMul, {n.inputs[0], n.inputs[2]}, t);
  return b.mul(b.silu(gate), up);
}

} // namespace rlx::compile::detail
