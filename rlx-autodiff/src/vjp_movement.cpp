// vjp_movement.cpp: VJP rules of the movement ops (Reshape, Transpose, Narrow, Concat, Expand,
// Gather, ScatterAdd, Split).
#include "helpers.hpp"
#include "table.hpp"

namespace rlx::autodiff::detail {
namespace {

using ir::OpKind;
using Grads = std::vector<NodeId>;

Grads reshape(VjpContext& c) {
  return {c.b.reshape(c.up, c.b.shape(c.in[0]).dims)};
}
Grads transpose(VjpContext& c) {
  const auto& perm = c.node.attr<ir::TransposeAttrs>().perm;
  std::vector<std::int64_t> inv(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    inv[static_cast<std::size_t>(perm[i])] = static_cast<std::int64_t>(i);
  return {c.b.transpose(c.up, inv)};
}
Grads narrow(VjpContext& c) {
  // zeros before, the gradient, zeros after
  auto& b = c.b;
  const auto& a = c.node.attr<ir::NarrowAttrs>();
  Shape x = b.shape(c.in[0]);
  auto ax = static_cast<std::size_t>(ir::normalize_axis(a.axis, x.rank(), "narrow"));
  std::int64_t total = x[ax].size();
  std::vector<NodeId> pieces;
  if (a.start > 0) {
    Shape z = x;
    z.dims[ax] = ir::Dim(a.start);
    pieces.push_back(zeros(b, z));
  }
  pieces.push_back(c.up);
  if (std::int64_t rest = total - a.start - a.length; rest > 0) {
    Shape z = x;
    z.dims[ax] = ir::Dim(rest);
    pieces.push_back(zeros(b, z));
  }
  return {pieces.size() == 1 ? c.up : b.concat(pieces, static_cast<std::int64_t>(ax))};
}
Grads concat(VjpContext& c) {
  auto& b = c.b;
  Shape y = c.node.shape;
  auto ax = ir::normalize_axis(c.node.attr<ir::AxisAttrs>().axis, y.rank(), "concat");
  Grads g(c.in.size());
  std::int64_t at = 0;
  for (std::size_t i = 0; i < c.in.size(); ++i) {
    std::int64_t len = b.shape(c.in[i])[static_cast<std::size_t>(ax)].size();
    if (c.needs[i])
      g[i] = b.narrow(c.up, ax, at, len);
    at += len;
  }
  return g;
}
Grads expand(VjpContext& c) {
  return {unbroadcast(c.b, c.up, c.b.shape(c.in[0]))};
}
Grads gather(VjpContext& c) {
  // the transpose of Gather is ScatterAdd into zeros of the table's type (repeated indices add)
  auto& b = c.b;
  std::int64_t ax = c.node.attr<ir::AxisAttrs>().axis;
  return {b.scatter_add(zeros(b, b.shape(c.in[0])), c.in[1], c.up, ax), {}};
}
Grads scatter_add(VjpContext& c) {
  auto& b = c.b;
  std::int64_t ax = c.node.attr<ir::AxisAttrs>().axis;
  Grads g(3);
  if (c.needs[0])
    g[0] = c.up;
  if (c.needs[2])
    g[2] = b.gather(c.up, c.in[1], ax);
  return g;
}
Grads split(VjpContext& c) {
  // the parts' gradients joined back (zeros for a part that got none)
  auto& b = c.b;
  const auto& a = c.node.attr<ir::SplitAttrs>();
  std::vector<NodeId> pieces;
  for (std::size_t i = 0; i < c.node.shape.parts.size(); ++i) {
    NodeId u = i < c.part_ups.size() ? c.part_ups[i] : NodeId{};
    pieces.push_back(u.valid() ? u : zeros(b, c.node.shape.parts[i]));
  }
  return {b.concat(pieces, a.axis)};
}

} // namespace

void add_movement_rules(VjpTable& t) {
  set_rule(t, OpKind::Reshape, reshape);
  set_rule(t, OpKind::Transpose, transpose);
  set_rule(t, OpKind::Narrow, narrow);
  set_rule(t, OpKind::Concat, concat);
  set_rule(t, OpKind::Expand, expand);
  set_rule(t, OpKind::Gather, gather, 1u << 1);
  set_rule(t, OpKind::ScatterAdd, scatter_add, 1u << 1);
  set_rule(t, OpKind::Split, split);
}

} // namespace rlx::autodiff::detail
