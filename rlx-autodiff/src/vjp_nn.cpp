// vjp_nn.cpp: VJP rules of Attention, Rope, SoftmaxCrossEntropy, Conv2d and Pool2d.
//
// Each emits rlx-ir's backward ops (closed forms with CPU kernels and decompositions):
// attention_grad, rope_grad, softmax_cross_entropy_grad, conv2d_grad_input / conv2d_grad_weight
// (the bias's gradient is a plain Reduce sum of up) and pool2d_grad. Attention with a bias mask
// that wants a gradient is differentiated through its decomposition into primitives instead.
#include "decompose_ad.hpp"
#include "helpers.hpp"
#include "table.hpp"

#include <cmath>

namespace rlx::autodiff::detail {
namespace {

using ir::MaskKind;
using ir::OpKind;
using Grads = std::vector<NodeId>;

// ---- attention ---------------------------------------------------------------------------------

Grads attention(VjpContext& c) {
  // One attention_grad node (q, k, v, out, up [, mask]) -> (dq, dk, dv), rlx-ir's backward op:
  // the probabilities are recomputed from q and k (as in flash attention's backward) and
  // rowsum(up out) stands for rowsum(P dP). A bias mask that wants a gradient needs dS in full
  // ([B, H, Sq, Sk]), which attention_grad never forms: that case is differentiated through the
  // primitive form instead.
  ir::AttentionAttrs a = c.node.attr<ir::AttentionAttrs>();
  if (a.mask == MaskKind::bias && c.needs.size() > 3 && c.needs[3])
    return c.decompose(
        [a](Builder& b, std::span<const NodeId> in) { return attention_primitives(b, a, in); });
  auto& b = c.b;
  std::vector<NodeId> ins{c.in[0], c.in[1], c.in[2], c.self, c.up};
  if (c.in.size() > 3)
    ins.push_back(c.in[3]);
  const NodeId t = b.op(OpKind::AttentionGrad, ins, a);
  Grads gr(c.in.size());
  for (std::size_t i = 0; i < 3; ++i)
    if (c.needs[i])
      gr[i] = b.op(OpKind::Get, {t}, ir::GetAttrs{static_cast<std::int64_t>(i)});
  return gr;
}

// ---- rope --------------------------------------------------------------------------------------

Grads rope(VjpContext& c) {
  // y = R x with R a rotation per (position, pair): dx = R^T up = R^-1 up, one rope_grad node (the
  // same rotation with the angle negated; rlx-ir's backward op, the CPU's Rope kernel).
  return {c.b.op(OpKind::RopeGrad, {c.up}, c.node.attr<ir::RopeAttrs>())};
}

// ---- softmax cross-entropy ---------------------------------------------------------------------

Grads softmax_cross_entropy(VjpContext& c) {
  // loss_n = logsumexp(x_n) - x_n[label_n]:  dx = up_n (softmax(x_n) - onehot(label_n)), one
  // softmax_cross_entropy_grad node (rlx-ir's backward op, one pass per row on the CPU).
  return {c.b.op(OpKind::SoftmaxCrossEntropyGrad, {c.in[0], c.in[1], c.up}), {}};
}

// ---- conv2d and pool2d --------------------------------------------------------------------------

Grads conv2d(VjpContext& c) {
  // dx = conv2d_grad_input(up, w), dw = conv2d_grad_weight(x, up) (each carries the size stride
  // > 1 loses), db = sum of up over N, OH, OW.
  const auto& a = c.node.attr<ir::Conv2dAttrs>();
  ir::Conv2dGradAttrs g;
  g.stride = a.stride;
  g.padding = a.padding;
  g.dilation = a.dilation;
  g.groups = a.groups;
  Grads gr(c.in.size());
  if (c.needs[0]) {
    const Shape xs = c.b.shape(c.in[0]);
    g.size = {xs[2].size(), xs[3].size()};
    gr[0] = c.b.op(OpKind::Conv2dGradInput, {c.up, c.in[1]}, g);
  }
  if (c.needs[1]) {
    const Shape ws = c.b.shape(c.in[1]);
    g.size = {ws[2].size(), ws[3].size()};
    gr[1] = c.b.op(OpKind::Conv2dGradWeight, {c.in[0], c.up}, g);
  }
  if (c.in.size() > 2 && c.needs[2])
    gr[2] = c.b.sum(c.up, {0, 2, 3});
  return gr;
}

Grads pool2d(VjpContext& c) {
  // max: pool2d_grad(x, y, up) (the first cell equal to y takes the window's gradient, torch's
  // max_pool2d); avg: pool2d_grad(up) (up / in-bounds count to every in-bounds cell).
  const auto& a = c.node.attr<ir::Pool2dAttrs>();
  ir::Pool2dGradAttrs g;
  g.kind = a.kind;
  g.kernel = a.kernel;
  g.stride = a.stride;
  g.padding = a.padding;
  const Shape xs = c.b.shape(c.in[0]);
  g.input_size = {xs[2].size(), xs[3].size()};
  if (a.kind == ir::PoolKind::max)
    return {c.b.op(OpKind::Pool2dGrad, {c.in[0], c.self, c.up}, g)};
  return {c.b.op(OpKind::Pool2dGrad, {c.up}, g)};
}

std::uint32_t attention_masks(const ir::Node& n) {
  return n.attr<ir::AttentionAttrs>().mask == MaskKind::padding ? 1u << 3 : 0u;
}

} // namespace

void add_nn_rules(VjpTable& t) {
  // Attention: a padding mask (operand 3 of MaskKind::padding) never receives a gradient; an
  // additive bias mask does.
  set_rule(t, OpKind::Attention, attention, 0, false, attention_masks);
  set_rule(t, OpKind::Rope, rope);
  set_rule(t, OpKind::SoftmaxCrossEntropy, softmax_cross_entropy, 1u << 1);
  set_rule(t, OpKind::Conv2d, conv2d);
  set_rule(t, OpKind::Pool2d, pool2d);
}

} // namespace rlx::autodiff::detail
