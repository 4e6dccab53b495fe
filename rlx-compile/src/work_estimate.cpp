// work_estimate.cpp: node_work / graph_work, the arithmetic cost model of const-fold's work bound.
#include "work_estimate.hpp"

#include "rlx/ir/fused_layer.hpp"

#include <algorithm>

namespace rlx::compile::detail {

namespace {

/// Units per element read or written by an elementwise / movement / reduction op, against one per
/// multiply-add of the contractions. Measured with bench/fold_cost.cpp (DESIGN.md): the reference
/// interpreter spends about 16 ns of CPU per element touched by an Add (one conversion to double
/// and back per element) but about 0.3 ns per MatMul multiply-add (Eigen). Counting a
/// multiply-add as one unit keeps the plain double loops of Conv2d, Attention and DenseSolve
/// (about 1-2 ns each) conservative too; one unit is then about 4 ns.
constexpr double kUnitsPerElement = 4;

double numel(const ir::Shape& s) {
  if (!s.is_static())
    return kUnboundedWork;
  if (s.is_tuple()) { // a tuple's elements are its parts' (numel() refuses tuples)
    double n = 0;
    for (const ir::Shape& part : s.parts)
      n += numel(part);
    return n;
  }
  return static_cast<double>(s.numel());
}

double dim(const ir::Shape& s, std::size_t i) {
  if (i >= s.rank() || !s[i].is_static())
    return kUnboundedWork;
  return static_cast<double>(s[i].size());
}

} // namespace

double node_work(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  if (ir::is_leaf(n.op))
    return 0;
  const double out = numel(n.shape);
  auto in = [&](std::size_t i) -> const ir::Shape& { return g.shape(n.inputs.at(i)); };
  switch (n.op) {
  case ir::OpKind::MatMul:
  case ir::OpKind::MatMulBiasAct: { // the epilogue is a few units per output, next to K
    const ir::Shape& a = in(0);
    const bool ta = n.op == ir::OpKind::MatMul ? n.attr<ir::MatMulAttrs>().transpose_a
                                               : n.attr<ir::MatMulBiasActAttrs>().transpose_a;
    const std::size_t r = a.rank();
    const double k = r == 1 ? dim(a, 0) : dim(a, ta ? r - 2 : r - 1);
    return out * std::max(k, 1.0);
  }
  case ir::OpKind::SwiGluMatMul: { // two products of [.., K] x [K, N]
    const ir::Shape& x = in(0);
    return 2 * out * std::max(x.rank() >= 1 ? dim(x, x.rank() - 1) : 1.0, 1.0);
  }
  case ir::OpKind::DotGeneral: {
    double k = 1;
    for (std::int64_t d : n.attr<ir::DotGeneralAttrs>().lhs_contracting)
      k *= dim(in(0), static_cast<std::size_t>(d));
    return out * std::max(k, 1.0);
  }
  case ir::OpKind::Conv2d: {
    const ir::Shape& w = in(1); // [O, C / groups, KH, KW]
    const double per_output = numel(w) / std::max(dim(w, 0), 1.0);
    return out * std::max(per_output, 1.0);
  }
  case ir::OpKind::Attention: {
    const auto& a = n.attr<ir::AttentionAttrs>();
    const double sk = dim(in(1), a.layout == ir::AttnLayout::bshd ? 1 : 2);
    return (numel(in(0)) + out) * std::max(sk, 1.0);
  }
  case ir::OpKind::FusedAttentionBlock: { // the two projections and the attention between them
    const auto& a = n.attr<ir::FusedAttentionBlockAttrs>();
    const ir::Shape& x = in(0);
    const double nt = dim(in(1), a.qkv_transpose_b ? 0 : 1);
    const double hd = nt / static_cast<double>(a.num_heads + 2 * a.num_kv_heads) *
                      static_cast<double>(a.num_heads);
    const double rows = dim(x, 0) * dim(x, 1);
    return rows * (dim(x, 2) * nt + 2 * hd * dim(x, 1)) + out * hd;
  }
  case ir::OpKind::FusedTransformerLayer: { // the attention block's products and the FFN's
    const auto& a = n.attr<ir::FusedTransformerLayerAttrs>();
    const ir::LayerSlots s = ir::layer_slots(a);
    const ir::Shape& x = in(0);
    const double nt = dim(in(s.w_qkv), a.block.qkv_transpose_b ? 0 : 1);
    const double hd = nt / static_cast<double>(a.block.num_heads + 2 * a.block.num_kv_heads) *
                      static_cast<double>(a.block.num_heads);
    const double rows = dim(x, 0) * dim(x, 1), e = dim(x, 2);
    const double f = dim(in(s.w_down), a.down_transpose_b ? 1 : 0);
    const double up = a.kind == ir::LayerKind::llama_pre_norm ? 2 : 1;
    return rows * (e * nt + 2 * hd * dim(x, 1) + hd * e + (up + 1) * e * f);
  }
  case ir::OpKind::DenseSolve: {
    const ir::Shape& a = in(0);
    const double nn = a.rank() >= 1 ? dim(a, a.rank() - 1) : 1;
    return (numel(a) + numel(in(1))) * std::max(nn, 1.0);
  }
  case ir::OpKind::If: {
    const auto& a = n.attr<ir::IfAttrs>();
    return std::max(graph_work(*a.then_branch), graph_work(*a.else_branch)) + out;
  }
  case ir::OpKind::While: {
    const auto& a = n.attr<ir::WhileAttrs>();
    if (a.max_iterations <= 0)
      return out;
    const double per_iteration = graph_work(*a.cond) + graph_work(*a.body) + 1;
    return static_cast<double>(a.max_iterations) * per_iteration + out;
  }
  case ir::OpKind::CustomFn:
    return graph_work(*n.attr<ir::CustomFnAttrs>().body) + out;
  case ir::OpKind::ElementwiseRegion:
    return graph_work(*n.attr<ir::RegionAttrs>().body) + out;
  default: {
    double w = out;
    for (ir::NodeId i : n.inputs)
      w += numel(g.shape(i));
    return kUnitsPerElement * w;
  }
  }
}

bool counts_multiply_adds(ir::OpKind k) {
  using K = ir::OpKind;
  switch (k) { // the cases of node_work that return multiply-adds
  case K::MatMul:
  case K::MatMulBiasAct:
  case K::SwiGluMatMul:
  case K::DotGeneral:
  case K::Conv2d:
  case K::Attention:
  case K::FusedAttentionBlock:
  case K::FusedTransformerLayer:
  case K::DenseSolve:
    return true;
  default:
    return false;
  }
}

double graph_work(const ir::Graph& g) {
  double w = 0;
  for (ir::NodeId id : g.ids())
    w += node_work(g, id);
  return w;
}

} // namespace rlx::compile::detail
