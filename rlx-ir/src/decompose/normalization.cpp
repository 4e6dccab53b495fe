// normalization.cpp: decompositions of softmax, the norms and softmax cross-entropy.
//
// Exact in IEEE arithmetic unless noted; the notes say where a form rounds differently (never more
// than a few ulps) or differs on special values. Tested in rlx-ir/tests/decompositions_test.cpp.
#include "families.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir::decompose_detail {

namespace {

// softmax(x) = e / sum(e), e = exp(x - max(x)) along the axis.
NodeId softmax_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t ax = normalize_axis(n.attr<AxisAttrs>().axis, b.shape(x).rank(), "softmax");
  NodeId e = b.exp(b.sub(x, b.reduce(ReduceOp::max, x, {ax}, true)));
  return b.div(e, b.sum(e, {ax}, true));
}

// log_softmax(x) = s - log(sum(exp(s))), s = x - max(x) along the axis.
NodeId log_softmax_by_exp(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t ax =
      normalize_axis(n.attr<AxisAttrs>().axis, b.shape(x).rank(), "log_softmax");
  NodeId s = b.sub(x, b.reduce(ReduceOp::max, x, {ax}, true));
  return b.sub(s, b.log(b.sum(b.exp(s), {ax}, true)));
}

// layer_norm(x) = (x - mean) / sqrt(var + eps) * gamma (+ beta) over the last axis, biased var.
NodeId layer_norm_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t last = static_cast<std::int64_t>(b.shape(x).rank()) - 1;
  NodeId d = b.sub(x, b.mean(x, {last}, true));
  NodeId var = b.mean(b.mul(d, d), {last}, true);
  NodeId den = b.sqrt(b.add(var, scalar_like(b, x, n.attr<NormAttrs>().eps)));
  NodeId y = b.mul(b.div(d, den), n.inputs[1]);
  return n.inputs.size() == 3 ? b.add(y, n.inputs[2]) : y;
}

// rms_norm(x) = x / sqrt(mean(x^2) + eps) * gamma over the last axis.
NodeId rms_norm_by_reduce(Builder& b, NodeId id, const Opts&, std::string&) {
  const Node n = node_copy(b, id);
  NodeId x = n.inputs[0];
  const std::int64_t last = static_cast<std::int64_t>(b.shape(x).rank()) - 1;
  NodeId ms = b.mean(b.mul(x, x), {last}, true);
  NodeId den = b.sqrt(b.add(ms, scalar_like(b, x, n.attr<NormAttrs>().eps)));
  return b.mul(b.div(x, den), n.inputs[1]);
}

// softmax_cross_entropy(logits, labels) = logsumexp(logits) - logits[label], per row; the
// picked logit is sum(where(iota == label, logits, 0)). An out-of-range label (an error in the
// reference) picks nothing here.
NodeId softmax_cross_entropy_by_reduce(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  NodeId logits = n.inputs[0], labels = n.inputs[1];
  const Shape ls = b.shape(logits);
  if (!ls[1].is_static()) {
    why = "the class count is symbolic; bind it first";
    return {};
  }
  const std::int64_t classes = ls[1].size();
  NodeId m = b.reduce(ReduceOp::max, logits, {1}, true);
  NodeId lse = b.add(b.log(b.sum(b.exp(b.sub(logits, m)), {1}, true)), m);
  Tensor iota(Shape::of({classes}, b.shape(labels).dtype));
  for (std::int64_t i = 0; i < classes; ++i)
    iota.set_i64(i, i);
  NodeId hit = b.compare(CmpOp::eq, b.reshape(labels, {ls[0], Dim(1)}), b.constant(iota));
  NodeId picked = b.sum(b.where(hit, logits, scalar_like(b, logits, 0)), {1}, true);
  return b.reshape(b.sub(lse, picked), {ls[0]});
}

} // namespace

void add_normalization_decompositions(DecompositionTable& t) {
  t.set(OpKind::Softmax, {{"softmax_by_exp", softmax_by_exp}});
  t.set(OpKind::LogSoftmax, {{"log_softmax_by_exp", log_softmax_by_exp}});
  t.set(OpKind::LayerNorm, {{"layer_norm_by_reduce", layer_norm_by_reduce}});
  t.set(OpKind::RmsNorm, {{"rms_norm_by_reduce", rms_norm_by_reduce}});
  t.set(OpKind::SoftmaxCrossEntropy,
        {{"softmax_cross_entropy_by_reduce", softmax_cross_entropy_by_reduce}});
}

} // namespace rlx::ir::decompose_detail
