// fuse_matmul_bias_act.cpp: the fuse-matmul-bias-act pass. MatMul (+ bias) (+ activation) becomes
// one MatMulBiasAct, which a backend runs as a GEMM with an epilogue (oneDNN post-ops on the CPU),
// so the product is written once instead of three times.
//
// Patterns, applied to a fixed point (so bias and activation fuse in either order of discovery):
//   matmul_bias      add(matmul(a, b), bias)              -> matmul_bias_act(a, b, bias)
//   matmul_act       act(matmul(a, b))                    -> matmul_bias_act(a, b) act
//   matmul_bias_act  act(matmul_bias_act(a, b[, bias]))   -> the same with act (its act is none)
// with act one of relu, gelu, gelu_tanh, silu, sigmoid, tanh, and any transpose flags and batch
// dims of the MatMul. Structure: the add's other operand is bias-like (every dim but the last is 1;
// a residual add is not this pattern). Preconditions, each a MissReason when it fails: the inner
// node has one use and is no graph output (multiple_consumers / is_graph_output); the bias is [N]
// for the product's N, of its dtype, and does not broadcast the product (shape_mismatch); the
// backend claims MatMulBiasAct for the dtype (not_claimed). A bias [1, .., 1, N] is reshaped to
// [N].
#include "fusion_pass_list.hpp"
#include "pattern_pass.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

constexpr OpKind kActivations[] = {OpKind::Relu, OpKind::Gelu,    OpKind::GeluTanh,
                                   OpKind::Silu, OpKind::Sigmoid, OpKind::Tanh};

/// Every dim but the last is 1 (a vector broadcast along the rows).
bool bias_like(const Graph& g, NodeId id) {
  const ir::Shape& s = g.shape(id);
  if (s.is_tuple() || s.rank() == 0)
    return false;
  for (std::size_t i = 0; i + 1 < s.rank(); ++i)
    if (!(s[i].is_static() && s[i].size() == 1))
      return false;
  return true;
}

std::optional<Miss> check_bias(const Graph& g, const Match& m) {
  const ir::Shape& p = g.shape(m["mm"]);
  const ir::Shape& b = g.shape(m["bias"]);
  if (b.dtype != p.dtype)
    return Miss{MissReason::dtype_mismatch,
                "bias " + b.str() + " and product " + p.str() + " differ in dtype"};
  if (b.dims.back() != p.dims.back() || b.rank() > p.rank())
    return Miss{MissReason::shape_mismatch,
                "bias " + b.str() + " is not a row vector of the product " + p.str()};
  return std::nullopt;
}

ir::MatMulBiasActAttrs attrs_of(const Graph& g, NodeId mm) {
  const ir::Node& n = g.node(mm);
  if (n.op == OpKind::MatMul) {
    const auto& a = n.attr<ir::MatMulAttrs>();
    return {a.transpose_a, a.transpose_b, ir::Activation::none};
  }
  return n.attr<ir::MatMulBiasActAttrs>();
}

Pattern matmul_bias() {
  Pattern p;
  p.name = "matmul_bias";
  p.root = Pat::op(OpKind::Add, {Pat::op(OpKind::MatMul).bind("mm").one_use(),
                                 Pat::any().bind("bias").structurally(bias_like)});
  p.check = check_bias;
  p.emits = {OpKind::MatMulBiasAct};
  p.rewrite = [](ir::Builder& b, const Match& m) {
    const ir::Node mm = b.graph().node(m["mm"]);
    NodeId bias = m["bias"];
    if (b.shape(bias).rank() != 1)
      bias = b.reshape(bias, {b.shape(bias).dims.back()});
    return b.op(OpKind::MatMulBiasAct, {mm.inputs[0], mm.inputs[1], bias},
                attrs_of(b.graph(), m["mm"]), b.graph().node(m.root).name);
  };
  return p;
}

/// act(inner) where inner is a MatMul, or a MatMulBiasAct without activation.
Pattern with_activation(OpKind act, OpKind inner) {
  Pattern p;
  p.name = inner == OpKind::MatMul ? "matmul_act" : "matmul_bias_act";
  Pat in = Pat::op(inner).bind("mm").one_use();
  if (inner == OpKind::MatMulBiasAct)
    in.structurally([](const Graph& g, NodeId id) {
      return g.node(id).attr<ir::MatMulBiasActAttrs>().act == ir::Activation::none;
    });
  in.float_dtype();
  p.root = Pat::op(act, {std::move(in)});
  p.emits = {OpKind::MatMulBiasAct};
  p.rewrite = [act](ir::Builder& b, const Match& m) {
    const ir::Node mm = b.graph().node(m["mm"]);
    ir::MatMulBiasActAttrs a = attrs_of(b.graph(), m["mm"]);
    a.act = *activation_of(act);
    return b.op(OpKind::MatMulBiasAct, mm.inputs, a, b.graph().node(m.root).name);
  };
  return p;
}

} // namespace

std::optional<ir::Activation> activation_of(OpKind k) {
  switch (k) {
  case OpKind::Relu:
    return ir::Activation::relu;
  case OpKind::Gelu:
    return ir::Activation::gelu;
  case OpKind::GeluTanh:
    return ir::Activation::gelu_tanh;
  case OpKind::Silu:
    return ir::Activation::silu;
  case OpKind::Sigmoid:
    return ir::Activation::sigmoid;
  case OpKind::Tanh:
    return ir::Activation::tanh;
  default:
    return std::nullopt;
  }
}

std::unique_ptr<Pass> make_fuse_matmul_bias_act() {
  std::vector<Pattern> ps{matmul_bias()};
  for (OpKind act : kActivations) {
    ps.push_back(with_activation(act, OpKind::MatMul));
    ps.push_back(with_activation(act, OpKind::MatMulBiasAct));
  }
  return std::make_unique<PatternPass>("fuse-matmul-bias-act", std::move(ps));
}

} // namespace rlx::fusion
