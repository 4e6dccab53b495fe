// elementwise.cpp: decompositions of elementwise ops (negation, activations, arithmetic).
//
// Exact in IEEE arithmetic unless noted; the notes say where a form rounds differently (never more
// than a few ulps) or differs on special values. Tested in rlx-ir/tests/decompositions_test.cpp.
#include "families.hpp"

#include "rlx/ir/error.hpp"

#include <cmath>
#include <numbers>

namespace rlx::ir::decompose_detail {

namespace {

// -x = x * -1 (exact, keeps the sign of zero).
NodeId neg_by_mul(Builder& b, NodeId id, const Opts&, std::string& why) {
  NodeId x = node_copy(b, id).inputs[0];
  if (b.shape(x).dtype == DType::u8 || b.shape(x).dtype == DType::boolean) {
    why = "-1 is not a value of " + std::string(dtype_name(b.shape(x).dtype));
    return {};
  }
  return b.mul(x, scalar_like(b, x, -1));
}

// -x = 0 - x (maps -0.0 to +0.0; values compare equal).
NodeId neg_by_sub(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.sub(scalar_like(b, x, 0), x);
}

// |x| = max(x, -x) (signed and float types).
NodeId abs_by_max(Builder& b, NodeId id, const Opts&, std::string& why) {
  NodeId x = node_copy(b, id).inputs[0];
  if (b.shape(x).dtype == DType::u8 || b.shape(x).dtype == DType::boolean) {
    why = "negation wraps for unsigned values";
    return {};
  }
  return b.maximum(x, b.neg(x));
}

// relu(x) = max(x, 0).
NodeId relu_by_max(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.maximum(x, scalar_like(b, x, 0));
}

// 1/x = 1 / x.
NodeId reciprocal_by_div(Builder& b, NodeId id, const Opts&, std::string& why) {
  if (!float_node(b, id, why))
    return {};
  NodeId x = node_copy(b, id).inputs[0];
  return b.div(scalar_like(b, x, 1), x);
}

// rsqrt(x) = 1 / sqrt(x).
NodeId rsqrt_by_div(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.div(scalar_like(b, x, 1), b.sqrt(x));
}

// rsqrt(x) = reciprocal(sqrt(x)).
NodeId rsqrt_by_reciprocal(Builder& b, NodeId id, const Opts&, std::string&) {
  return b.reciprocal(b.sqrt(node_copy(b, id).inputs[0]));
}

// sqrt(x) = x ^ 0.5 (differs only at -0.0 (+0.0 instead of -0.0) and -inf (+inf, not NaN)).
NodeId sqrt_by_pow(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.pow(x, scalar_like(b, x, 0.5));
}

// sigmoid(x) = 1 / (1 + exp(-x)).
NodeId sigmoid_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.div(scalar_like(b, x, 1), b.add(scalar_like(b, x, 1), b.exp(b.neg(x))));
}

// silu(x) = x * sigmoid(x).
NodeId silu_by_sigmoid(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.mul(x, b.sigmoid(x));
}

// silu(x) = x / (1 + exp(-x)).
NodeId silu_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  return b.div(x, b.add(scalar_like(b, x, 1), b.exp(b.neg(x))));
}

// gelu(x) = x * 0.5 * (1 + erf(x * (1 / sqrt 2))).
NodeId gelu_by_erf(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  NodeId e = b.erf(b.mul(x, scalar_like(b, x, 1.0 / std::numbers::sqrt2)));
  return b.mul(b.mul(x, scalar_like(b, x, 0.5)), b.add(scalar_like(b, x, 1), e));
}

// gelu_tanh(x) = 0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3))).
NodeId gelu_tanh_by_tanh(Builder& b, NodeId id, const Opts&, std::string&) {
  NodeId x = node_copy(b, id).inputs[0];
  const double k = std::sqrt(2.0 / std::numbers::pi);
  NodeId x3 = b.mul(b.mul(x, x), x);
  NodeId inner = b.mul(scalar_like(b, x, k), b.add(x, b.mul(scalar_like(b, x, 0.044715), x3)));
  return b.mul(b.mul(scalar_like(b, x, 0.5), x), b.add(scalar_like(b, x, 1), b.tanh(inner)));
}

// a - b = a + (-b).
NodeId sub_by_add(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  return b.add(n.inputs[0], b.neg(n.inputs[1]));
}

// a / b = a * (1 / b) for floats (rounds twice: within one ulp of a / b).
NodeId div_by_reciprocal(Builder& b, NodeId id, const Opts&, std::string& why) {
  if (!float_node(b, id, why))
    return {};
  const Node n = node_copy(b, id);
  return b.mul(n.inputs[0], b.reciprocal(n.inputs[1]));
}

// max(a, b) = a >= b ? a : b (NaN operands: selects b where the reference may not).
NodeId maximum_by_where(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  return b.where(b.compare(CmpOp::ge, n.inputs[0], n.inputs[1]), n.inputs[0], n.inputs[1]);
}

// min(a, b) = a <= b ? a : b.
NodeId minimum_by_where(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  return b.where(b.compare(CmpOp::le, n.inputs[0], n.inputs[1]), n.inputs[0], n.inputs[1]);
}

} // namespace

void add_elementwise_decompositions(DecompositionTable& t) {
  t.set(OpKind::Neg, {{"neg_by_mul", neg_by_mul}, {"neg_by_sub", neg_by_sub}});
  t.set(OpKind::Abs, {{"abs_by_max", abs_by_max}});
  t.set(OpKind::Relu, {{"relu_by_max", relu_by_max}});
  t.set(OpKind::Reciprocal, {{"reciprocal_by_div", reciprocal_by_div}});
  t.set(OpKind::Rsqrt,
        {{"rsqrt_by_div", rsqrt_by_div}, {"rsqrt_by_reciprocal", rsqrt_by_reciprocal}});
  t.set(OpKind::Sqrt, {{"sqrt_by_pow", sqrt_by_pow}});
  t.set(OpKind::Sigmoid, {{"sigmoid_by_exp", sigmoid_by_exp}});
  t.set(OpKind::Silu, {{"silu_by_sigmoid", silu_by_sigmoid}, {"silu_by_exp", silu_by_exp}});
  t.set(OpKind::Gelu, {{"gelu_by_erf", gelu_by_erf}});
  t.set(OpKind::GeluTanh, {{"gelu_tanh_by_tanh", gelu_tanh_by_tanh}});
  t.set(OpKind::Sub, {{"sub_by_add", sub_by_add}});
  t.set(OpKind::Div, {{"div_by_reciprocal", div_by_reciprocal}});
  t.set(OpKind::Maximum, {{"maximum_by_where", maximum_by_where}});
  t.set(OpKind::Minimum, {{"minimum_by_where", minimum_by_where}});
}

} // namespace rlx::ir::decompose_detail
