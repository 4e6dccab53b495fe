// decompose_ad.hpp: primitive forms of composite ops, emitted by the "via decomposition" VJP and
// JVP rules (private to rlx-autodiff; they move to rlx-ir's decomposition table when it has them).
#pragma once

#include "helpers.hpp"

#include <span>

namespace rlx::autodiff::detail {

/// Attention (ops.def semantics) in primitives: [B, H, S, D] operands, GQA by repeating kv heads,
/// scale, softcap, bias, then masking; masked scores become the dtype's lowest finite value and
/// the probabilities are multiplied by the kept-key predicate, so a row with no kept key gives 0
/// and stays finite in the backward.
NodeId attention_primitives(Builder& b, const ir::AttentionAttrs& a, std::span<const NodeId> in);
/// Conv2d as an im2col Gather with constant indices and a grouped MatMul (+ bias).
NodeId conv_primitives(Builder& b, const ir::Conv2dAttrs& a, std::span<const NodeId> in);
/// Pool2d as a Gather of the windows and a Reduce (max) or a sum over in-bounds counts (avg).
NodeId pool_primitives(Builder& b, const ir::Pool2dAttrs& a, std::span<const NodeId> in);
/// The tangent of y = max-Pool2d(x) along \p tx: per window, tx at the first in-bounds cell equal
/// to y (or NaN where y is NaN), the cell pool2d_grad routes the cotangent to, so the JVP and the
/// VJP are transposes of each other at ties too (the Reduce-max form would share a tie's tangent).
NodeId max_pool_tangent(Builder& b, const ir::Pool2dAttrs& a, NodeId x, NodeId y, NodeId tx);
/// LayerNorm (x, gamma [, beta]) in primitives.
NodeId layer_norm_primitives(Builder& b, double eps, std::span<const NodeId> in);
/// RmsNorm (x, gamma) in primitives.
NodeId rms_norm_primitives(Builder& b, double eps, std::span<const NodeId> in);
/// LogSoftmax along \p axis in primitives (x - max - log(sum(exp(x - max)))).
NodeId log_softmax_primitives(Builder& b, std::int64_t axis, std::span<const NodeId> in);
/// SoftmaxCrossEntropy (logits [N, C], labels [N]) in primitives.
NodeId softmax_cross_entropy_primitives(Builder& b, std::span<const NodeId> in);

/// \p s's dim \p i, which must be static (a clear error names \p what otherwise).
std::int64_t static_dim(const Shape& s, std::size_t i, const char* what);
/// A constant of \p sizes and dtype \p t holding \p v.
NodeId const_tensor(Builder& b, const std::vector<std::int64_t>& sizes, DType t,
                    const std::vector<double>& v);
/// An i64 constant of \p sizes holding \p v.
NodeId index_tensor(Builder& b, const std::vector<std::int64_t>& sizes,
                    const std::vector<std::int64_t>& v);
/// The one-hot [N, C] (float type \p t) of integer \p labels [N] over \p classes classes.
NodeId one_hot(Builder& b, NodeId labels, std::int64_t classes, DType t);

} // namespace rlx::autodiff::detail
