// kernel_work.cpp: flops and bytes of a node, for the kernel profile's GFLOP/s and GB/s.
#include "kernel_work.hpp"

#include "rlx/ir/attrs.hpp"

namespace rlx::cpu {

namespace {

double numel(const ir::Shape& s) {
  double n = 1;
  for (const ir::Dim& d : s.dims)
    n *= static_cast<double>(d.size());
  return n;
}

/// The contracted size K of a product with lhs \p a (transposed when \p ta).
double contracted(const ir::Shape& a, bool ta) {
  return static_cast<double>(a[a.rank() - (ta ? 2 : 1)].size());
}

} // namespace

KernelWork kernel_work(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  KernelWork w;
  w.bytes = static_cast<double>(n.shape.bytes());
  for (ir::NodeId in : n.inputs)
    w.bytes += static_cast<double>(g.shape(in).bytes());
  switch (n.op) {
  case ir::OpKind::MatMul:
    w.flops = 2 * numel(n.shape) *
              contracted(g.shape(n.inputs[0]), n.attr<ir::MatMulAttrs>().transpose_a);
    break;
  case ir::OpKind::MatMulBiasAct:
    w.flops = 2 * numel(n.shape) *
              contracted(g.shape(n.inputs[0]), n.attr<ir::MatMulBiasActAttrs>().transpose_a);
    break;
  case ir::OpKind::SwiGluMatMul: // two products of x [.., K] with [N, K] weights
    w.flops = 4 * numel(n.shape) * contracted(g.shape(n.inputs[0]), false);
    break;
  case ir::OpKind::Attention: { // Q K^T and P V: 2 * 2 * B * H * Sq * Sk * D
    const auto& at = n.attr<ir::AttentionAttrs>();
    const ir::Shape& q = g.shape(n.inputs[0]);
    const ir::Shape& k = g.shape(n.inputs[1]);
    const double sk = static_cast<double>(k[at.layout == ir::AttnLayout::bshd ? 1 : 2].size());
    w.flops = 4 * numel(q) * sk;
    break;
  }
  case ir::OpKind::Conv2d: { // per output element: Cin / groups * kh * kw multiply-adds
    const ir::Shape& wt = g.shape(n.inputs[1]); // [O, Cin / groups, kh, kw]
    w.flops = 2 * numel(n.shape) * static_cast<double>(wt[1].size() * wt[2].size() * wt[3].size());
    break;
  }
  case ir::OpKind::Conv2dGradInput:    // as the forward: per dy element, Cin / groups * kh * kw
  case ir::OpKind::Conv2dGradWeight: { // multiply-adds
    const bool data = n.op == ir::OpKind::Conv2dGradInput;
    const ir::Shape& dy = g.shape(n.inputs[data ? 0 : 1]);
    const ir::Shape& wt = data ? g.shape(n.inputs[1]) : n.shape;
    w.flops = 2 * numel(dy) * static_cast<double>(wt[1].size() * wt[2].size() * wt[3].size());
    break;
  }
  default:
    break;
  }
  return w;
}

} // namespace rlx::cpu
