// backward.cpp: decompositions of the backward ops (ops.def's "backward ops" section), which are
// also their definitions (the reference interpreter evaluates them): the closed-form VJPs of
// layer_norm, rms_norm, softmax and log_softmax in primitives. The norms' forms have a tuple result
// (Decomposition::parts): one value per gradient.
#include "families.hpp"

#include "rlx/ir/error.hpp"

#include <numeric>

namespace rlx::ir::decompose_detail {

namespace {

/// Sums \p v [.., D] over every axis but the last: a [D] parameter gradient.
NodeId sum_rows(Builder& b, NodeId v) {
  const auto rank = static_cast<std::int64_t>(b.shape(v).rank());
  if (rank == 1)
    return v;
  std::vector<std::int64_t> axes(static_cast<std::size_t>(rank - 1));
  std::iota(axes.begin(), axes.end(), 0);
  return b.sum(v, axes, false);
}

// layer_norm_grad(x, gamma, dy): xh = (x - mean) r, r = 1 / sqrt(var + eps), g = dy gamma;
// dx = r (g - mean(g) - xh mean(g xh)), dgamma = sum_rows(dy xh), dbeta = sum_rows(dy).
std::vector<NodeId> layer_norm_grad_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const NodeId x = n.inputs[0], gamma = n.inputs[1], dy = n.inputs[2];
  const NodeId xc = b.sub(x, b.mean(x, {-1}, true));
  const NodeId var = b.mean(b.mul(xc, xc), {-1}, true);
  const NodeId r = b.rsqrt(b.add(var, scalar_like(b, x, n.attr<NormAttrs>().eps)));
  const NodeId xh = b.mul(xc, r);
  const NodeId g = b.mul(dy, gamma);
  const NodeId inner =
      b.sub(b.sub(g, b.mean(g, {-1}, true)), b.mul(xh, b.mean(b.mul(g, xh), {-1}, true)));
  return {b.mul(r, inner), sum_rows(b, b.mul(dy, xh)), sum_rows(b, dy)};
}

// rms_norm_grad(x, gamma, dy): xh = x r, r = 1 / sqrt(mean(x^2) + eps), g = dy gamma;
// dx = r (g - xh mean(g xh)), dgamma = sum_rows(dy xh).
std::vector<NodeId> rms_norm_grad_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const NodeId x = n.inputs[0], gamma = n.inputs[1], dy = n.inputs[2];
  const NodeId ms = b.mean(b.mul(x, x), {-1}, true);
  const NodeId r = b.rsqrt(b.add(ms, scalar_like(b, x, n.attr<NormAttrs>().eps)));
  const NodeId xh = b.mul(x, r);
  const NodeId g = b.mul(dy, gamma);
  const NodeId dx = b.mul(r, b.sub(g, b.mul(xh, b.mean(b.mul(g, xh), {-1}, true))));
  return {dx, sum_rows(b, b.mul(dy, xh))};
}

// softmax_grad(y, dy) = y (dy - sum(y dy)) along the axis.
NodeId softmax_grad_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const NodeId y = n.inputs[0], dy = n.inputs[1];
  const std::int64_t ax =
      normalize_axis(n.attr<AxisAttrs>().axis, b.shape(y).rank(), "softmax_grad");
  return b.mul(y, b.sub(dy, b.sum(b.mul(y, dy), {ax}, true)));
}

// log_softmax_grad(y, dy) = dy - exp(y) sum(dy) along the axis.
NodeId log_softmax_grad_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  const NodeId y = n.inputs[0], dy = n.inputs[1];
  const std::int64_t ax =
      normalize_axis(n.attr<AxisAttrs>().axis, b.shape(y).rank(), "log_softmax_grad");
  return b.sub(dy, b.mul(b.exp(y), b.sum(dy, {ax}, true)));
}

} // namespace

void add_backward_decompositions(DecompositionTable& t) {
  t.set(OpKind::LayerNormGrad, {{"layer_norm_grad_by_reduce", nullptr, layer_norm_grad_by_reduce}});
  t.set(OpKind::RmsNormGrad, {{"rms_norm_grad_by_reduce", nullptr, rms_norm_grad_by_reduce}});
  t.set(OpKind::SoftmaxGrad, {{"softmax_grad_by_reduce", softmax_grad_by_reduce}});
  t.set(OpKind::LogSoftmaxGrad, {{"log_softmax_grad_by_reduce", log_softmax_grad_by_reduce}});
}

} // namespace rlx::ir::decompose_detail
