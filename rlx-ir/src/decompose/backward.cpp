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

// ---- backward ops 2 ----

// attention_grad(q, k, v, out, dout [, mask]) in [B, H, S, D] form, the forward's probabilities p
// recomputed (attention_probs): dp = dout v^T, ds = p (dp - rowsum(dout out)) (0 where p is 0:
// masked keys, rows with no kept key), times 1 - tanh^2 under a softcap, times scale; dq = ds k,
// dk = ds^T q, dv = p^T dout, the last two summed over the query heads of each KV group.
std::vector<NodeId> attention_grad_by_matmul(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  const auto& a = n.attr<AttentionAttrs>();
  const NodeId mask = n.inputs.size() > 5 ? n.inputs[5] : NodeId{};
  const AttentionProbs r = attention_probs(b, a, n.inputs[0], n.inputs[1], n.inputs[2], mask, why);
  if (!r.p.valid())
    return {};
  const bool bshd = a.layout == AttnLayout::bshd;
  auto bhsd = [&](NodeId x) { return bshd ? b.transpose(x, {0, 2, 1, 3}) : x; };
  const NodeId o = bhsd(n.inputs[3]), dout = bhsd(n.inputs[4]);
  const DType t = b.shape(o).dtype;
  const NodeId dp = b.matmul(dout, r.v, false, true);
  const NodeId rows = b.sum(b.mul(dout, o), {-1}, true);
  NodeId ds = b.mul(r.p, b.sub(dp, rows));
  if (r.tanh.valid())
    ds = b.mul(ds, b.sub(b.scalar(1, t), b.mul(r.tanh, r.tanh)));
  ds = b.mul(ds, b.scalar(r.scale, t));
  const NodeId dq = b.matmul(ds, r.k);
  NodeId dk = b.matmul(ds, r.q, true, false), dv = b.matmul(r.p, dout, true, false);
  if (r.group > 1) { // [B, H, Sk, D] -> [B, KVH, group, Sk, D] summed over the group
    auto fold = [&](NodeId x) {
      const Shape s = b.shape(x);
      NodeId f = b.reshape(x, {s[0], Dim(a.num_kv_heads), Dim(r.group), s[2], s[3]});
      return b.sum(f, {2}, false);
    };
    dk = fold(dk);
    dv = fold(dv);
  }
  return {bhsd(dq), bhsd(dk), bhsd(dv)};
}

// softmax_cross_entropy_grad(logits, labels, dloss) = dloss_n (softmax(logits_n) -
// onehot(label_n)). The labels are validated by a Gather of a [C] zero table of the logits' dtype
// (an out-of-range label is the Gather's error, as in the forward) whose zeros are added to the
// result, so no integer arithmetic is needed (a backend may claim no integer Add).
NodeId softmax_cross_entropy_grad_by_softmax(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  const NodeId x = n.inputs[0], labels = n.inputs[1], dloss = n.inputs[2];
  const Shape xs = b.shape(x), ls = b.shape(labels);
  if (!xs[1].is_static()) {
    why = "the class count is symbolic (the one-hot table is a constant)";
    return {};
  }
  const std::int64_t classes = xs[1].size();
  Tensor iota(Shape::of({1, classes}, ls.dtype));
  for (std::int64_t c = 0; c < classes; ++c)
    iota.set_f64(c, static_cast<double>(c));
  const NodeId zeros = b.gather(b.constant(Tensor(Shape::of({classes}, xs.dtype))), labels, 0);
  const NodeId onehot =
      b.cast(b.compare(CmpOp::eq, b.reshape(labels, {ls[0], Dim(1)}), b.constant(iota)), xs.dtype);
  return b.add(b.mul(b.reshape(dloss, {xs[0], Dim(1)}), b.sub(b.softmax(x, -1), onehot)),
               b.reshape(zeros, {xs[0], Dim(1)}));
}

} // namespace

void add_backward_decompositions(DecompositionTable& t) {
  t.set(OpKind::LayerNormGrad, {{"layer_norm_grad_by_reduce", nullptr, layer_norm_grad_by_reduce}});
  t.set(OpKind::RmsNormGrad, {{"rms_norm_grad_by_reduce", nullptr, rms_norm_grad_by_reduce}});
  t.set(OpKind::SoftmaxGrad, {{"softmax_grad_by_reduce", softmax_grad_by_reduce}});
  t.set(OpKind::LogSoftmaxGrad, {{"log_softmax_grad_by_reduce", log_softmax_grad_by_reduce}});
  // backward ops 2
  t.set(OpKind::AttentionGrad, {{"attention_grad_by_matmul", nullptr, attention_grad_by_matmul}});
  t.set(OpKind::SoftmaxCrossEntropyGrad,
        {{"softmax_cross_entropy_grad_by_softmax", softmax_cross_entropy_grad_by_softmax}});
}

} // namespace rlx::ir::decompose_detail
