// cost_model.cpp: kernel_work and predict_seconds, the roofline model `--device auto` compares
// devices with.
#include "rlx/compile/cost_model.hpp"

#include "work_estimate.hpp"

#include "rlx/ir/error.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace rlx::compile {

namespace {

double bytes_of(const ir::Shape& s, const ir::Graph& g, ir::NodeId id) {
  if (!s.is_static())
    throw Error("cost model: node " + std::to_string(id.v) + " (" +
                std::string(ir::op_name(g.node(id).op)) + ") has symbolic type " + s.str() +
                "; bind every symbol before predicting");
  if (s.is_tuple()) {
    double b = 0;
    for (const ir::Shape& part : s.parts)
      b += bytes_of(part, g, id);
    return b;
  }
  return static_cast<double>(s.bytes());
}

double elements_of(const ir::Shape& s) {
  if (s.is_tuple()) {
    double n = 0;
    for (const ir::Shape& part : s.parts)
      n += elements_of(part);
    return n;
  }
  return static_cast<double>(s.numel());
}

/// Ops whose node_work is the work of their sub-graphs (If, While, CustomFn), in the reference
/// interpreter's units; read as flops.
bool has_subgraphs(ir::OpKind k) {
  return ir::has_flag(k, ir::kSubgraphs);
}

} // namespace

std::string DeviceCost::str() const {
  char buf[128];
  std::snprintf(buf, sizeof buf, "%.1f GFLOP/s, %.1f GB/s, %.1f us per kernel", flops_per_s * 1e-9,
                bytes_per_s * 1e-9, launch_s * 1e6);
  return buf;
}

std::vector<KernelWork> kernel_work(const ir::Module& lir) {
  const ir::Graph& g = lir.graph();
  const ir::MemoryPlan& plan = lir.plan();
  std::vector<KernelWork> out;
  for (ir::NodeId id : plan.schedule) {
    const ir::Node& n = g.node(id);
    const ir::Storage st = plan.slot(id).storage;
    if (ir::is_leaf(n.op) || st == ir::Storage::view || st == ir::Storage::none)
      continue;
    KernelWork k{id};
    k.bytes = bytes_of(n.shape, g, id);
    for (ir::NodeId in : n.inputs)
      k.bytes += bytes_of(g.shape(in), g, in);
    if (detail::counts_multiply_adds(n.op))
      k.flops = 2 * detail::node_work(g, id);
    else if (has_subgraphs(n.op))
      k.flops = detail::node_work(g, id);
    else
      k.flops = elements_of(n.shape);
    out.push_back(k);
  }
  return out;
}

double predict_seconds(const ir::Module& lir, const DeviceCost& cost) {
  if (!(cost.flops_per_s > 0) || !(cost.bytes_per_s > 0) || !(cost.launch_s >= 0) ||
      !std::isfinite(cost.flops_per_s) || !std::isfinite(cost.bytes_per_s) ||
      !std::isfinite(cost.launch_s))
    throw Error("cost model: device knobs must be positive and finite, got " + cost.str());
  double s = 0;
  for (const KernelWork& k : kernel_work(lir))
    s += std::max(k.flops / cost.flops_per_s, k.bytes / cost.bytes_per_s) + cost.launch_s;
  return s;
}

} // namespace rlx::compile
