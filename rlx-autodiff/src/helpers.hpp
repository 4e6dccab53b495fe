// helpers.hpp: small graph-building helpers shared by the VJP rules (private to rlx-autodiff).
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"

#include <span>
#include <vector>

namespace rlx::autodiff::detail {

using ir::Builder;
using ir::DType;
using ir::NodeId;
using ir::Shape;

using ir::is_float;
/// A rank-0 constant \p v of \p t.
NodeId scalar(Builder& b, double v, DType t);
/// \p v broadcast to \p type (an Expand of a scalar; symbolic dims allowed).
NodeId full(Builder& b, Shape type, double v);
/// Zeros of \p type.
inline NodeId zeros(Builder& b, Shape type) {
  return full(b, type, 0.0);
}
/// Sums gradient \p g (whose dims are a NumPy broadcast of \p target's) back to \p target's dims.
NodeId unbroadcast(Builder& b, NodeId g, Shape target);
/// The inverse of a reduction: \p up (the reduced value) reshaped to keep the reduced axes as 1
/// (unless \p keep_dims) and expanded to \p x. \p axes are normalised; empty means all.
NodeId expand_reduced(Builder& b, NodeId up, Shape x, const std::vector<std::int64_t>& axes,
                      bool keep_dims);
/// \p axes normalised against \p rank (empty = every axis), ascending.
std::vector<std::int64_t> reduced_axes(const std::vector<std::int64_t>& axes, std::size_t rank);
/// The most negative finite value of float type \p t (a "masked" score that keeps softmax finite).
double lowest(DType t);
/// Copies the nodes of sub-graph \p sub into \p b, its Inputs (in list order) bound to \p args.
/// \returns the ids of its outputs.
std::vector<NodeId> inline_graph(Builder& b, const ir::Graph& sub, std::span<const NodeId> args);
/// The VJP of sub-graph \p body (one output, Inputs only) with respect to its Input number
/// \p wrt_input: a graph with \p body's Inputs plus a last Input "d_output" of the output's type,
/// whose one output is the gradient (zeros when none reaches that Input). Used by If's rule.
ir::Graph vjp_body(const ir::Graph& body, std::size_t wrt_input);
/// Appends to \p g the reverse-mode gradient of the one-element float value \p loss with respect
/// to leaf \p leaf (in place, no compaction: every existing id stays valid). \returns the
/// gradient's id, or an invalid id when no gradient reaches \p leaf. Used by nth_order_grad.
NodeId append_gradient(ir::Graph& g, NodeId loss, NodeId leaf);
/// Exact local simplification of an AD graph: common subexpressions merged (rlx-fusion's node
/// key), x * 1, x + 0, x - 0, -(-x), an Expand / Reshape to the operand's own type removed; then
/// compact(). Keeps the interface and the outputs' values bit for bit.
void simplify_ad(ir::Graph& g);
/// Throws AutodiffError "<what>: <node description>: <why>".
[[noreturn]] void fail(const std::string& why);

} // namespace rlx::autodiff::detail
