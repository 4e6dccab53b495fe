// vjp_nn.cpp: VJP rules of Attention, Rope, SoftmaxCrossEntropy, Conv2d and Pool2d.
//
// Attention, Rope and SoftmaxCrossEntropy emit rlx-ir's backward ops (attention_grad, rope_grad,
// softmax_cross_entropy_grad: closed forms with CPU kernels and decompositions). Conv2d and Pool2d
// (and attention with a bias mask that wants a gradient) are differentiated through their
// decomposition into primitives (emitted here, in the gradient graph, reading the forward
// operands): conv and pool become an im2col Gather (whose transpose is ScatterAdd) and a
// MatMul / Reduce. Dedicated conv / pool backward ops are the planned replacement.
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

// ---- conv2d and pool2d (im2col through Gather) -------------------------------------------------

Grads conv2d(VjpContext& c) {
  ir::Conv2dAttrs a = c.node.attr<ir::Conv2dAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return conv_primitives(b, a, in); });
}

Grads pool2d(VjpContext& c) {
  ir::Pool2dAttrs a = c.node.attr<ir::Pool2dAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return pool_primitives(b, a, in); });
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
  set_rule(t, OpKind::Conv2d, conv2d, 0, true);
  set_rule(t, OpKind::Pool2d, pool2d, 0, true);
}

} // namespace rlx::autodiff::detail
