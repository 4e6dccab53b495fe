// helpers.cpp: graph-building helpers shared by the VJP rules.
#include "helpers.hpp"

#include <algorithm>
#include <limits>

namespace rlx::autodiff::detail {

NodeId scalar(Builder& b, double v, DType t) {
  return b.scalar(v, t);
}

NodeId full(Builder& b, Shape type, double v) {
  NodeId s = scalar(b, v, type.dtype);
  if (type.rank() == 0)
    return s;
  return b.expand(s, type.dims);
}

NodeId unbroadcast(Builder& b, NodeId g, Shape target) {
  const Shape gs = b.shape(g);
  if (gs.dims == target.dims)
    return g;
  std::size_t lead = gs.rank() - target.rank();
  if (lead > 0) {
    std::vector<std::int64_t> axes;
    for (std::size_t i = 0; i < lead; ++i)
      axes.push_back(static_cast<std::int64_t>(i));
    g = b.sum(g, axes, false);
  }
  std::vector<std::int64_t> ones;
  for (std::size_t i = 0; i < target.rank(); ++i) {
    const ir::Dim& t = target[i];
    if (t.is_static() && t.size() == 1 && !(b.shape(g)[i] == t))
      ones.push_back(static_cast<std::int64_t>(i));
  }
  if (!ones.empty())
    g = b.sum(g, ones, true);
  if (!(b.shape(g).dims == target.dims))
    fail("internal: unbroadcast of " + gs.str() + " to " + target.str() + " failed");
  return g;
}

std::vector<std::int64_t> reduced_axes(const std::vector<std::int64_t>& axes, std::size_t rank) {
  std::vector<std::int64_t> r;
  if (axes.empty()) {
    for (std::size_t i = 0; i < rank; ++i)
      r.push_back(static_cast<std::int64_t>(i));
    return r;
  }
  for (auto a : axes)
    r.push_back(ir::normalize_axis(a, rank, "reduce"));
  std::sort(r.begin(), r.end());
  return r;
}

NodeId expand_reduced(Builder& b, NodeId up, Shape x, const std::vector<std::int64_t>& axes,
                      bool keep_dims) {
  if (!keep_dims) {
    std::vector<ir::Dim> kd = x.dims;
    for (auto a : axes)
      kd[static_cast<std::size_t>(a)] = ir::Dim(1);
    if (!(b.shape(up).dims == kd))
      up = b.reshape(up, kd);
  }
  if (b.shape(up).dims == x.dims)
    return up;
  return b.expand(up, x.dims);
}

double lowest(DType t) {
  switch (t) {
  case DType::f16:
    return -65504.0;
  case DType::bf16:
  case DType::f32:
    return -1e30;
  default:
    return -1e300;
  }
}

std::vector<NodeId> inline_graph(Builder& b, const ir::Graph& sub, std::span<const NodeId> args) {
  std::vector<NodeId> map(sub.size());
  std::size_t next_input = 0;
  for (std::size_t i = 0; i < sub.size(); ++i) {
    const ir::Node& n = sub.node(NodeId(static_cast<std::uint32_t>(i)));
    if (n.op == ir::OpKind::Input) {
      if (next_input >= args.size())
        fail("inline: sub-graph '" + sub.name() + "' has more inputs than operands");
      map[i] = args[next_input++];
      continue;
    }
    if (n.op == ir::OpKind::Param)
      fail("inline: sub-graph '" + sub.name() + "' holds a param");
    std::vector<NodeId> ins;
    for (NodeId x : n.inputs)
      ins.push_back(map[x.v]);
    map[i] = b.op(n.op, std::move(ins), n.attrs, n.name);
  }
  std::vector<NodeId> outs;
  for (NodeId o : sub.outputs())
    outs.push_back(map[o.v]);
  return outs;
}

void fail(const std::string& why) {
  throw AutodiffError(why);
}

} // namespace rlx::autodiff::detail
