// jvp_rules.cpp: the JVP rule table, grouped by op family.
//
// - Ops with a symmetric Jacobian (elementwise unary ops, Softmax) reuse their VJP rule: J t = Jᵀ
// t.
// - Linear ops apply themselves to the tangents (movement, Reduce sum / mean, Rope, Cast, Split /
//   Get, Gather / ScatterAdd in their float operands); bilinear ones take the product rule
//   (MatMul, DotGeneral, Mul).
// - Other reductions: each output depends on its own row, so J t = sum over the row of
//   t * (the VJP of a cotangent of ones).
// - Composites (norms, LogSoftmax, cross-entropy, attention, conv, pool, CustomFn) push the
//   tangents through their primitive form.
#include "decompose_ad.hpp"
#include "helpers.hpp"
#include "jvp_table.hpp"
#include "rlx/autodiff/vjp_rules.hpp"

#include <array>

namespace rlx::autodiff::detail {
namespace {

using ir::CmpOp;
using ir::OpKind;

/// Tangent of operand \p i, zeros when it has none.
NodeId t_or_zero(JvpContext& c, std::size_t i) {
  return c.tin[i].valid() ? c.tin[i] : zeros(c.b, c.b.shape(c.in[i]));
}
/// \p x expanded to the node's dims when a broadcast made them differ.
NodeId to_out(JvpContext& c, NodeId x) {
  const Shape& s = c.node.shape;
  return c.b.shape(x).dims == s.dims ? x : c.b.expand(x, s.dims);
}
/// a + b where either may be invalid (zero).
NodeId plus(Builder& b, NodeId a, NodeId x) {
  return !a.valid() ? x : !x.valid() ? a : b.add(a, x);
}
/// The node's own op applied to \p ins (same attributes).
NodeId same_op(JvpContext& c, std::vector<NodeId> ins) {
  return c.b.op(c.node.op, std::move(ins), c.node.attrs);
}

/// The VJP rule of the node with cotangent \p up, for operand 0.
NodeId vjp_of(JvpContext& c, NodeId up) {
  VjpContext v{c.b, c.node, c.self, c.in, up, {}, std::vector<bool>(c.in.size(), false), {}};
  v.needs[0] = true;
  return vjp_rule(c.node.op)->fn(v).at(0);
}

// ---- elementwise
NodeId symmetric(JvpContext& c) {
  return vjp_of(c, c.tin[0]);
}
NodeId linear_unary(JvpContext& c) {
  return same_op(c, {c.tin[0]});
}
NodeId fake_quantize(JvpContext& c) {
  return c.tin[0]; // straight-through, as the VJP
}
NodeId add(JvpContext& c) {
  NodeId r = plus(c.b, c.tin[0], c.tin[1]);
  return to_out(c, r);
}
NodeId sub(JvpContext& c) {
  NodeId tb = c.tin[1].valid() ? c.b.neg(c.tin[1]) : NodeId{};
  return to_out(c, plus(c.b, c.tin[0], tb));
}
NodeId mul(JvpContext& c) {
  auto& b = c.b;
  NodeId l = c.tin[0].valid() ? b.mul(c.tin[0], c.in[1]) : NodeId{};
  NodeId r = c.tin[1].valid() ? b.mul(c.in[0], c.tin[1]) : NodeId{};
  return to_out(c, plus(b, l, r));
}
NodeId div(JvpContext& c) {
  // (ta - y tb) / b
  auto& b = c.b;
  NodeId tb = c.tin[1].valid() ? b.neg(b.mul(c.self, c.tin[1])) : NodeId{};
  return to_out(c, b.div(plus(b, c.tin[0], tb), c.in[1]));
}
NodeId pow(JvpContext& c) {
  auto& b = c.b;
  DType t = c.node.shape.dtype;
  NodeId a = c.in[0], e = c.in[1];
  NodeId l, r;
  if (c.tin[0].valid())
    l = b.mul(c.tin[0], b.mul(e, b.pow(a, b.sub(e, scalar(b, 1, t)))));
  if (c.tin[1].valid()) {
    NodeId raw = b.mul(c.tin[1], b.mul(c.self, b.log(a)));
    r = b.where(b.compare(CmpOp::eq, a, scalar(b, 0, t)), scalar(b, 0, t), raw);
  }
  return to_out(c, plus(b, l, r));
}
NodeId extremum(JvpContext& c, CmpOp wins) {
  auto& b = c.b;
  DType t = c.node.shape.dtype;
  NodeId a = c.in[0], e = c.in[1];
  NodeId w = b.where(b.compare(wins, a, e), scalar(b, 1, t),
                     b.where(b.compare(CmpOp::eq, a, e), scalar(b, 0.5, t), scalar(b, 0, t)));
  NodeId l = c.tin[0].valid() ? b.mul(c.tin[0], w) : NodeId{};
  NodeId r = c.tin[1].valid() ? b.mul(c.tin[1], b.sub(scalar(b, 1, t), w)) : NodeId{};
  return to_out(c, plus(b, l, r));
}
NodeId maximum(JvpContext& c) {
  return extremum(c, CmpOp::gt);
}
NodeId minimum(JvpContext& c) {
  return extremum(c, CmpOp::lt);
}
NodeId where(JvpContext& c) {
  if (!c.tin[1].valid() && !c.tin[2].valid())
    return {};
  return to_out(c, c.b.where(c.in[0], t_or_zero(c, 1), t_or_zero(c, 2)));
}
NodeId cast(JvpContext& c) {
  return c.b.cast(c.tin[0], c.node.shape.dtype);
}

// ---- linear algebra
NodeId matmul(JvpContext& c) {
  auto& b = c.b;
  NodeId l = c.tin[0].valid() ? same_op(c, {c.tin[0], c.in[1]}) : NodeId{};
  NodeId r = c.tin[1].valid() ? same_op(c, {c.in[0], c.tin[1]}) : NodeId{};
  return plus(b, l, r);
}
NodeId dense_solve(JvpContext& c) {
  // x = A⁻¹ b:  tx = A⁻¹ (tb - tA x)
  auto& b = c.b;
  NodeId rhs = c.tin[1];
  if (c.tin[0].valid()) {
    Shape xs = b.shape(c.self);
    NodeId tax;
    if (xs.rank() == b.shape(c.in[0]).rank()) {
      tax = b.matmul(c.tin[0], c.self);
    } else {
      std::vector<ir::Dim> col = xs.dims;
      col.push_back(ir::Dim(1));
      tax = b.reshape(b.matmul(c.tin[0], b.reshape(c.self, col)), xs.dims);
    }
    rhs = rhs.valid() ? b.sub(rhs, tax) : b.neg(tax);
  }
  return b.dense_solve(c.in[0], rhs);
}

// ---- movement
NodeId concat(JvpContext& c) {
  std::vector<NodeId> ts;
  for (std::size_t i = 0; i < c.in.size(); ++i)
    ts.push_back(t_or_zero(c, i));
  return same_op(c, ts);
}
NodeId gather(JvpContext& c) {
  return c.tin[0].valid() ? same_op(c, {c.tin[0], c.in[1]}) : NodeId{};
}
NodeId scatter_add(JvpContext& c) {
  if (!c.tin[0].valid() && !c.tin[2].valid())
    return {};
  return same_op(c, {t_or_zero(c, 0), c.in[1], t_or_zero(c, 2)});
}

// ---- reductions
NodeId reduce(JvpContext& c) {
  const auto& a = c.node.attr<ir::ReduceAttrs>();
  if (a.op == ir::ReduceOp::sum || a.op == ir::ReduceOp::mean)
    return same_op(c, {c.tin[0]});
  // each output reads its own row: J t = sum_row(t * VJP(ones))
  NodeId d = vjp_of(c, full(c.b, c.node.shape, 1.0));
  return c.b.sum(c.b.mul(c.tin[0], d), a.axes, a.keep_dims);
}

// ---- composites through their primitive form
NodeId layer_norm(JvpContext& c) {
  double eps = c.node.attr<ir::NormAttrs>().eps;
  return c.decompose(
      [eps](Builder& b, std::span<const NodeId> in) { return layer_norm_primitives(b, eps, in); });
}
NodeId rms_norm(JvpContext& c) {
  double eps = c.node.attr<ir::NormAttrs>().eps;
  return c.decompose(
      [eps](Builder& b, std::span<const NodeId> in) { return rms_norm_primitives(b, eps, in); });
}
NodeId log_softmax(JvpContext& c) {
  std::int64_t ax = c.node.attr<ir::AxisAttrs>().axis;
  return c.decompose(
      [ax](Builder& b, std::span<const NodeId> in) { return log_softmax_primitives(b, ax, in); });
}
NodeId softmax_cross_entropy(JvpContext& c) {
  return c.decompose([](Builder& b, std::span<const NodeId> in) {
    return softmax_cross_entropy_primitives(b, in);
  });
}
NodeId attention(JvpContext& c) {
  ir::AttentionAttrs a = c.node.attr<ir::AttentionAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return attention_primitives(b, a, in); });
}
NodeId conv2d(JvpContext& c) {
  ir::Conv2dAttrs a = c.node.attr<ir::Conv2dAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return conv_primitives(b, a, in); });
}
NodeId pool2d(JvpContext& c) {
  ir::Pool2dAttrs a = c.node.attr<ir::Pool2dAttrs>();
  if (a.kind == ir::PoolKind::max)
    return max_pool_tangent(c.b, a, c.in[0], c.self, t_or_zero(c, 0));
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return pool_primitives(b, a, in); });
}
NodeId custom_fn(JvpContext& c) {
  ir::SubGraph body = c.node.attr<ir::CustomFnAttrs>().body;
  return c.decompose(
      [body](Builder& b, std::span<const NodeId> in) { return inline_graph(b, *body, in).at(0); });
}

// ---- control flow
NodeId if_op(JvpContext& c) {
  // If(pred, captures..., their tangents...) over the JVPs of both branches
  const auto& a = c.node.attr<ir::IfAttrs>();
  std::vector<NodeId> args(c.in.begin() + 1, c.in.end());
  for (std::size_t i = 1; i < c.in.size(); ++i)
    args.push_back(t_or_zero(c, i));
  return c.b.if_(c.in[0], args, jvp_body(*a.then_branch), jvp_body(*a.else_branch));
}

using Table = std::array<JvpRule, ir::kNumOps>;

Table build() {
  Table t{};
  auto set = [&](OpKind k, JvpFn fn, bool via = false) {
    t[static_cast<std::size_t>(k)] = JvpRule{fn, via};
  };
  for (OpKind k :
       {OpKind::Abs, OpKind::Exp, OpKind::Log, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Reciprocal,
        OpKind::Tanh, OpKind::Sigmoid, OpKind::Relu, OpKind::Gelu, OpKind::GeluTanh, OpKind::Silu,
        OpKind::Sin, OpKind::Cos, OpKind::Erf, OpKind::Softmax})
    set(k, symmetric);
  // ---- onnx3: trig ----
  for (OpKind k : {OpKind::Sinh, OpKind::Cosh, OpKind::Asin, OpKind::Acos, OpKind::Atan,
                   OpKind::Asinh, OpKind::Acosh, OpKind::Atanh})
    set(k, symmetric);
  for (OpKind k : {OpKind::Neg, OpKind::Reshape, OpKind::Transpose, OpKind::Narrow, OpKind::Expand,
                   OpKind::Rope, OpKind::Split, OpKind::Get})
    set(k, linear_unary);
  set(OpKind::Cast, cast);
  set(OpKind::FakeQuantize, fake_quantize);
  set(OpKind::Add, add);
  set(OpKind::Sub, sub);
  set(OpKind::Mul, mul);
  set(OpKind::Div, div);
  set(OpKind::Pow, pow);
  set(OpKind::Maximum, maximum);
  set(OpKind::Minimum, minimum);
  set(OpKind::Where, where);
  set(OpKind::MatMul, matmul);
  set(OpKind::DotGeneral, matmul); // bilinear: the same product rule
  set(OpKind::DenseSolve, dense_solve);
  set(OpKind::Concat, concat);
  set(OpKind::Gather, gather);
  set(OpKind::ScatterAdd, scatter_add);
  set(OpKind::Reduce, reduce);
  set(OpKind::LayerNorm, layer_norm, true);
  set(OpKind::RmsNorm, rms_norm, true);
  set(OpKind::LogSoftmax, log_softmax, true);
  set(OpKind::SoftmaxCrossEntropy, softmax_cross_entropy, true);
  set(OpKind::Attention, attention, true);
  set(OpKind::Conv2d, conv2d, true);
  set(OpKind::Pool2d, pool2d, true);
  set(OpKind::CustomFn, custom_fn, true);
  set(OpKind::If, if_op);
  return t;
}

} // namespace
} // namespace rlx::autodiff::detail

namespace rlx::autodiff {

const JvpRule* jvp_rule(ir::OpKind op) {
  static const detail::Table table = detail::build();
  const JvpRule& r = table[static_cast<std::size_t>(op)];
  return r.fn ? &r : nullptr;
}

} // namespace rlx::autodiff
