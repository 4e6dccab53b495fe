// vjp_reduce_norm.cpp: VJP rules of Reduce (closed forms in primitives), Softmax, LogSoftmax,
// LayerNorm and RmsNorm (one backward op each, from ops.def's "backward ops"; the norms recompute
// their row statistics from x).
#include "helpers.hpp"
#include "table.hpp"

namespace rlx::autodiff::detail {
namespace {

using ir::CmpOp;
using ir::OpKind;
using ir::ReduceOp;
using Grads = std::vector<NodeId>;

NodeId k(Builder& b, double v, DType t) {
  return scalar(b, v, t);
}

/// Number of elements each output of a reduction over \p axes of \p x sums (symbolic dims count
/// through a reduction of ones).
NodeId reduced_count(Builder& b, const Shape& x, const std::vector<std::int64_t>& axes) {
  std::int64_t n = 1;
  for (auto a : axes) {
    const ir::Dim& d = x[static_cast<std::size_t>(a)];
    if (d.is_symbolic())
      return b.sum(full(b, x, 1.0), axes, true);
    n *= d.size();
  }
  return k(b, static_cast<double>(n), x.dtype);
}

Grads reduce(VjpContext& c) {
  auto& b = c.b;
  const auto& a = c.node.attr<ir::ReduceAttrs>();
  NodeId x = c.in[0];
  Shape xs = b.shape(x);
  DType t = xs.dtype;
  auto axes = reduced_axes(a.axes, xs.rank());
  auto back = [&](NodeId v) { return expand_reduced(b, v, xs, axes, a.keep_dims); };
  switch (a.op) {
  case ReduceOp::sum:
    return {back(c.up)};
  case ReduceOp::mean:
    return {b.div(back(c.up), reduced_count(b, xs, axes))};
  case ReduceOp::max:
  case ReduceOp::min: {
    // the extremal elements share the gradient evenly (torch.amax / amin)
    NodeId hit = b.cast(b.compare(CmpOp::eq, x, back(c.self)), t);
    NodeId count = b.sum(hit, axes, true);
    NodeId share = b.div(expand_reduced(b, c.up, xs, axes, a.keep_dims), b.expand(count, xs.dims));
    return {b.mul(share, hit)};
  }
  case ReduceOp::prod: {
    // d prod / d x_i = prod_{j != i} x_j, safe at zeros: with z zeros in the row, it is P / x_i
    // when z = 0, the product of the non-zero others at the zero when z = 1, else 0.
    NodeId zero = k(b, 0, t), one = k(b, 1, t);
    NodeId is0 = b.compare(CmpOp::eq, x, zero);
    NodeId nz = b.where(is0, one, x);
    NodeId p_nz = back(b.reduce(ReduceOp::prod, nz, axes, a.keep_dims));
    NodeId zc = back(b.sum(b.cast(is0, t), axes, a.keep_dims));
    NodeId none = b.compare(CmpOp::eq, zc, zero);
    NodeId single = b.compare(CmpOp::eq, zc, one);
    NodeId d = b.where(none, b.div(p_nz, nz), b.where(is0, b.where(single, p_nz, zero), zero));
    return {b.mul(back(c.up), d)};
  }
  }
  return {NodeId{}};
}

Grads softmax(VjpContext& c) {
  // y (up - sum(y up)): one softmax_grad node (rlx-ir's backward op, a CPU kernel)
  auto& b = c.b;
  const ir::AxisAttrs a = c.node.attr<ir::AxisAttrs>();
  return {b.op(OpKind::SoftmaxGrad, {c.self, c.up}, a)};
}

Grads log_softmax(VjpContext& c) {
  // up - exp(y) sum(up): one log_softmax_grad node
  auto& b = c.b;
  const ir::AxisAttrs a = c.node.attr<ir::AxisAttrs>();
  return {b.op(OpKind::LogSoftmaxGrad, {c.self, c.up}, a)};
}

/// Part \p i of the tuple \p t.
NodeId part(Builder& b, NodeId t, std::int64_t i) {
  return b.op(OpKind::Get, {t}, ir::GetAttrs{i});
}

Grads layer_norm(VjpContext& c) {
  // One layer_norm_grad node (x, gamma, up) -> (dx, dgamma, dbeta), rlx-ir's backward op:
  // xh = (x - mean) r, r = 1 / sqrt(var + eps), g = up gamma; dx = r (g - mean(g) - xh mean(g xh)),
  // dgamma = sum(up xh), dbeta = sum(up). The row statistics are recomputed from x.
  auto& b = c.b;
  const ir::NormAttrs a = c.node.attr<ir::NormAttrs>();
  const NodeId t = b.op(OpKind::LayerNormGrad, {c.in[0], c.in[1], c.up}, a);
  Grads gr(c.in.size());
  for (std::size_t i = 0; i < c.in.size(); ++i)
    if (c.needs[i])
      gr[i] = part(b, t, static_cast<std::int64_t>(i));
  return gr;
}

Grads rms_norm(VjpContext& c) {
  // One rms_norm_grad node (x, gamma, up) -> (dx, dgamma): xh = x r, r = 1 / sqrt(mean(x^2) + eps),
  // g = up gamma; dx = r (g - xh mean(g xh)), dgamma = sum(up xh).
  auto& b = c.b;
  const ir::NormAttrs a = c.node.attr<ir::NormAttrs>();
  const NodeId t = b.op(OpKind::RmsNormGrad, {c.in[0], c.in[1], c.up}, a);
  Grads gr(2);
  for (std::size_t i = 0; i < 2; ++i)
    if (c.needs[i])
      gr[i] = part(b, t, static_cast<std::int64_t>(i));
  return gr;
}

} // namespace

void add_reduce_norm_rules(VjpTable& t) {
  set_rule(t, OpKind::Reduce, reduce);
  set_rule(t, OpKind::Softmax, softmax);
  set_rule(t, OpKind::LogSoftmax, log_softmax);
  set_rule(t, OpKind::LayerNorm, layer_norm);
  set_rule(t, OpKind::RmsNorm, rms_norm);
}

} // namespace rlx::autodiff::detail
