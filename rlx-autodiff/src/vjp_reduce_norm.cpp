// vjp_reduce_norm.cpp: VJP rules of Reduce, Softmax, LogSoftmax, LayerNorm and RmsNorm (closed
// forms in primitives; the norms recompute their row statistics from x).
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
  // y (up - sum(y up))
  auto& b = c.b;
  std::int64_t ax = c.node.attr<ir::AxisAttrs>().axis;
  NodeId y = c.self;
  NodeId s = b.sum(b.mul(y, c.up), {ax}, true);
  return {b.mul(y, b.sub(c.up, s))};
}

Grads log_softmax(VjpContext& c) {
  // up - exp(y) sum(up)
  auto& b = c.b;
  std::int64_t ax = c.node.attr<ir::AxisAttrs>().axis;
  NodeId s = b.sum(c.up, {ax}, true);
  return {b.sub(c.up, b.mul(b.exp(c.self), s))};
}

/// Sums \p v over every axis but the last (a [D] gamma / beta gradient). \p target is taken by
/// value: a reference into the graph (b.shape(gamma)) dangles once an argument's evaluation adds
/// nodes (the node list reallocates; argument order is unspecified).
NodeId sum_rows(Builder& b, NodeId v, Shape target) {
  return unbroadcast(b, v, target);
}

Grads layer_norm(VjpContext& c) {
  // xh = (x - mean) r, r = 1 / sqrt(var + eps); g = up gamma:
  // dx = r (g - mean(g) - xh mean(g xh)), dgamma = sum(up xh), dbeta = sum(up)
  auto& b = c.b;
  double eps = c.node.attr<ir::NormAttrs>().eps;
  NodeId x = c.in[0], gamma = c.in[1];
  DType t = b.shape(x).dtype;
  NodeId xc = b.sub(x, b.mean(x, {-1}, true));
  NodeId r = b.rsqrt(b.add(b.mean(b.mul(xc, xc), {-1}, true), k(b, eps, t)));
  NodeId xh = b.mul(xc, r);
  Grads gr(c.in.size());
  if (c.needs[0]) {
    NodeId g = b.mul(c.up, gamma);
    NodeId inner =
        b.sub(b.sub(g, b.mean(g, {-1}, true)), b.mul(xh, b.mean(b.mul(g, xh), {-1}, true)));
    gr[0] = b.mul(r, inner);
  }
  if (c.needs[1])
    gr[1] = sum_rows(b, b.mul(c.up, xh), Shape(b.shape(gamma)));
  if (c.in.size() > 2 && c.needs[2])
    gr[2] = sum_rows(b, c.up, Shape(b.shape(c.in[2])));
  return gr;
}

Grads rms_norm(VjpContext& c) {
  // xh = x r, r = 1 / sqrt(mean(x^2) + eps); g = up gamma:
  // dx = r (g - xh mean(g xh)), dgamma = sum(up xh)
  auto& b = c.b;
  double eps = c.node.attr<ir::NormAttrs>().eps;
  NodeId x = c.in[0], gamma = c.in[1];
  DType t = b.shape(x).dtype;
  NodeId r = b.rsqrt(b.add(b.mean(b.mul(x, x), {-1}, true), k(b, eps, t)));
  NodeId xh = b.mul(x, r);
  Grads gr(2);
  if (c.needs[0]) {
    NodeId g = b.mul(c.up, gamma);
    gr[0] = b.mul(r, b.sub(g, b.mul(xh, b.mean(b.mul(g, xh), {-1}, true))));
  }
  if (c.needs[1]) {
    const Shape gs = b.shape(gamma); // copied before b.mul may reallocate the node list
    gr[1] = sum_rows(b, b.mul(c.up, xh), gs);
  }
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
