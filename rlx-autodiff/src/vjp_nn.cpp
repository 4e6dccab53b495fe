// vjp_nn.cpp: VJP rules of Attention, Rope, SoftmaxCrossEntropy, Conv2d and Pool2d.
//
// Rope and SoftmaxCrossEntropy have closed forms. Attention, Conv2d and Pool2d are differentiated
// through their decomposition into primitives (emitted here, in the gradient graph, reading the
// forward operands): attention recomputes its probabilities in the backward like flash
// attention's backward; conv and pool become an im2col Gather (whose transpose is ScatterAdd) and
// a MatMul / Reduce. Dedicated backward ops with CPU kernels are the planned replacement.
#include "decompose_ad.hpp"
#include "helpers.hpp"
#include "table.hpp"

#include <cmath>

namespace rlx::autodiff::detail {
namespace {

using ir::AttnLayout;
using ir::CmpOp;
using ir::Dim;
using ir::MaskKind;
using ir::OpKind;
using ir::Tensor;
using Grads = std::vector<NodeId>;
using Sizes = std::vector<std::int64_t>;

// ---- attention ---------------------------------------------------------------------------------

Grads attention(VjpContext& c) {
  ir::AttentionAttrs a = c.node.attr<ir::AttentionAttrs>();
  return c.decompose(
      [a](Builder& b, std::span<const NodeId> in) { return attention_primitives(b, a, in); });
}

// ---- rope --------------------------------------------------------------------------------------

Grads rope(VjpContext& c) {
  // y = x C + P(x) S, with P a pairing permutation (an involution) along the features, C the
  // cosines (1 past n_rot) and S the signed sines (0 past n_rot); so dx = up C + P(up S).
  auto& b = c.b;
  const auto& a = c.node.attr<ir::RopeAttrs>();
  Shape xs = b.shape(c.in[0]);
  DType t = xs.dtype;
  bool bshd = a.layout == AttnLayout::bshd;
  std::int64_t seq = static_dim(xs, bshd ? 1 : 2, "rope's backward");
  std::int64_t d = xs[3].size();
  std::int64_t n = a.n_rot == 0 ? d : a.n_rot, half = n / 2;
  std::vector<double> cs(static_cast<std::size_t>(seq * d), 1.0), sn(cs.size(), 0.0);
  std::vector<std::int64_t> idx(static_cast<std::size_t>(d));
  for (std::int64_t f = 0; f < d; ++f)
    idx[static_cast<std::size_t>(f)] = f;
  for (std::int64_t kk = 0; kk < half; ++kk) {
    std::int64_t ia = a.style == ir::RopeStyle::half ? kk : 2 * kk;
    std::int64_t ib = a.style == ir::RopeStyle::half ? kk + half : 2 * kk + 1;
    idx[static_cast<std::size_t>(ia)] = ib;
    idx[static_cast<std::size_t>(ib)] = ia;
    for (std::int64_t s = 0; s < seq; ++s) {
      double ang = static_cast<double>(s + a.position_offset) *
                   std::pow(a.theta, -2.0 * static_cast<double>(kk) / static_cast<double>(n));
      auto row = static_cast<std::size_t>(s * d);
      cs[row + static_cast<std::size_t>(ia)] = std::cos(ang);
      cs[row + static_cast<std::size_t>(ib)] = std::cos(ang);
      sn[row + static_cast<std::size_t>(ia)] = -std::sin(ang);
      sn[row + static_cast<std::size_t>(ib)] = std::sin(ang);
    }
  }
  Sizes tab = bshd ? Sizes{seq, 1, d} : Sizes{seq, d};
  NodeId C = const_tensor(b, tab, t, cs), S = const_tensor(b, tab, t, sn);
  NodeId perm = index_tensor(b, {d}, idx);
  return {b.add(b.mul(c.up, C), b.gather(b.mul(c.up, S), perm, 3))};
}

// ---- softmax cross-entropy ---------------------------------------------------------------------

Grads softmax_cross_entropy(VjpContext& c) {
  // loss_n = logsumexp(x_n) - x_n[label_n]:  dx = up_n (softmax(x_n) - onehot(label_n))
  auto& b = c.b;
  NodeId x = c.in[0], labels = c.in[1];
  Shape xs = b.shape(x), ls = b.shape(labels);
  std::int64_t classes = static_dim(xs, 1, "softmax_cross_entropy's backward");
  std::vector<double> iota(static_cast<std::size_t>(classes));
  for (std::int64_t i = 0; i < classes; ++i)
    iota[static_cast<std::size_t>(i)] = static_cast<double>(i);
  NodeId cls = const_tensor(b, {1, classes}, ls.dtype, iota);
  NodeId onehot = b.cast(b.compare(CmpOp::eq, b.reshape(labels, {ls[0], Dim(1)}), cls), xs.dtype);
  NodeId up = b.reshape(c.up, {xs[0], Dim(1)});
  return {b.mul(up, b.sub(b.softmax(x, -1), onehot)), {}};
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
  set_rule(t, OpKind::Attention, attention, 0, true, attention_masks);
  set_rule(t, OpKind::Rope, rope);
  set_rule(t, OpKind::SoftmaxCrossEntropy, softmax_cross_entropy, 1u << 1);
  set_rule(t, OpKind::Conv2d, conv2d, 0, true);
  set_rule(t, OpKind::Pool2d, pool2d, 0, true);
}

} // namespace rlx::autodiff::detail
