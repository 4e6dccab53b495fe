// io_gate.cpp: GraphIoProfile, FusionBenefit and IoFusionGate (after the seed's fusion_benefit.rs,
// with a per-element compute term so that an epilogue slower than its one-op kernel can say no).
#include "rlx/fusion/io_gate.hpp"

#include "rlx/ir/attrs.hpp"
#include "rlx/ir/op.hpp"

#include <algorithm>
#include <cstdio>
#include <functional>
#include <map>
#include <set>

namespace rlx::fusion {

namespace {

double elements(const ir::Shape& s, std::int64_t symbolic_dim) {
  if (s.is_tuple()) {
    double n = 0;
    for (const ir::Shape& p : s.parts)
      n += elements(p, symbolic_dim);
    return n;
  }
  double n = 1;
  for (const ir::Dim& d : s.dims)
    n *= static_cast<double>(d.is_symbolic() ? symbolic_dim : d.size());
  return n;
}

double bytes_of(const ir::Shape& s, std::int64_t symbolic_dim) {
  if (s.is_tuple()) {
    double n = 0;
    for (const ir::Shape& p : s.parts)
      n += bytes_of(p, symbolic_dim);
    return n;
  }
  return elements(s, symbolic_dim) * static_cast<double>(ir::dtype_size(s.dtype));
}

/// Nodes that run no kernel: leaves, constants, views (aliased by a planner) and tuple parts.
bool runs_no_kernel(ir::OpKind op) {
  return ir::is_leaf(op) || op == ir::OpKind::Constant || ir::has_flag(op, ir::kView);
}

} // namespace

FusionBenefit fusion_benefit(const GraphIoProfile& before, const GraphIoProfile& after) {
  FusionBenefit b;
  b.launches_saved = before.kernel_launches - after.kernel_launches;
  b.sync_points_saved = before.sync_points - after.sync_points;
  b.host_readback_bytes_saved = before.host_output_bytes - after.host_output_bytes;
  b.device_traffic_bytes_saved = before.device_traffic_bytes - after.device_traffic_bytes;
  b.compute_ns_saved = before.compute_ns - after.compute_ns;
  return b;
}

double IoFusionGate::score_ns(const FusionBenefit& b) const {
  double s =
      static_cast<double>(b.launches_saved) * dispatch_ns +
      static_cast<double>(b.sync_points_saved) * roundtrip_ns +
      static_cast<double>(b.device_traffic_bytes_saved) / std::max(memory_bytes_per_ns, 1e-9) +
      b.compute_ns_saved;
  if (host_readback_bytes_per_ns > 0) // 0: unified memory, readback is free
    s += static_cast<double>(b.host_readback_bytes_saved) / host_readback_bytes_per_ns;
  if (b.sync_points_saved < 0)
    s -= static_cast<double>(-b.sync_points_saved) * host_thunk_penalty_ns;
  return s;
}

bool IoFusionGate::should_fuse(const GraphIoProfile& before, const GraphIoProfile& after) const {
  return score_ns(fusion_benefit(before, after)) >= min_gain_ns;
}

std::string IoFusionGate::fingerprint() const {
  std::string text;
  char buf[64];
  for (double v : {dispatch_ns, roundtrip_ns, memory_bytes_per_ns, host_readback_bytes_per_ns,
                   host_thunk_penalty_ns, min_gain_ns, static_cast<double>(symbolic_dim)}) {
    std::snprintf(buf, sizeof buf, "%.17g;", v);
    text += buf;
  }
  for (const auto& [k, v] : ns_per_element) {
    std::snprintf(buf, sizeof buf, "=%.17g;", v);
    text += k + buf;
  }
  std::uint64_t h = 1469598103934665603ull; // FNV-1a
  for (unsigned char c : text)
    h = (h ^ c) * 1099511628211ull;
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string cost_key(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  std::string key(ir::op_name(n.op));
  if (n.op == ir::OpKind::MatMulBiasAct)
    key += "." +
           std::string(ir::enum_names(
               ir::Activation{})[static_cast<std::size_t>(n.attr<ir::MatMulBiasActAttrs>().act)]);
  return key;
}

GraphIoProfile profile_graph_io(const ir::Graph& g, std::span<const ir::NodeId> nodes,
                                const IoFusionGate& gate) {
  GraphIoProfile p;
  for (ir::NodeId id : nodes) {
    const ir::Node& n = g.node(id);
    if (runs_no_kernel(n.op))
      continue;
    ++p.kernel_launches;
    double bytes = bytes_of(n.shape, gate.symbolic_dim);
    for (ir::NodeId in : n.inputs)
      bytes += bytes_of(g.shape(in), gate.symbolic_dim);
    p.device_traffic_bytes += static_cast<std::int64_t>(bytes);
    if (n.op == ir::OpKind::Custom)
      ++p.sync_points;
    if (g.is_output(id))
      p.host_output_bytes += static_cast<std::int64_t>(bytes_of(n.shape, gate.symbolic_dim));
    if (!gate.ns_per_element.empty())
      if (auto it = gate.ns_per_element.find(cost_key(g, id)); it != gate.ns_per_element.end())
        p.compute_ns += it->second * elements(n.shape, gate.symbolic_dim);
  }
  return p;
}

GraphIoProfile profile_graph_io(const ir::Graph& g, const IoFusionGate& gate) {
  std::vector<ir::NodeId> all;
  for (std::uint32_t i = 0; i < g.size(); ++i)
    all.emplace_back(i);
  return profile_graph_io(g, all, gate);
}

std::string region_cost_key(ir::OpKind op) {
  return "elementwise_region." + std::string(ir::op_name(op));
}

GraphIoProfile profile_region_io(const ir::Graph& g, std::span<const ir::NodeId> members,
                                 const IoFusionGate& gate) {
  std::set<std::uint32_t> in_set;
  for (ir::NodeId m : members)
    in_set.insert(m.v);
  GraphIoProfile p;
  p.kernel_launches = 1;
  std::set<std::uint32_t> operands;
  double bytes = 0;
  const auto generic = gate.ns_per_element.find("elementwise_region");
  for (ir::NodeId m : members) {
    const ir::Node& n = g.node(m);
    for (ir::NodeId in : n.inputs)
      if (!in_set.count(in.v) && operands.insert(in.v).second)
        bytes += bytes_of(g.shape(in), gate.symbolic_dim);
    bool result = g.is_output(m);
    for (ir::NodeId u : g.users(m))
      result = result || !in_set.count(u.v);
    if (result) {
      bytes += bytes_of(n.shape, gate.symbolic_dim);
      if (g.is_output(m))
        p.host_output_bytes += static_cast<std::int64_t>(bytes_of(n.shape, gate.symbolic_dim));
    }
    auto it = gate.ns_per_element.find(region_cost_key(n.op));
    if (it == gate.ns_per_element.end())
      it = generic;
    if (it != gate.ns_per_element.end())
      p.compute_ns += it->second * elements(n.shape, gate.symbolic_dim);
  }
  p.device_traffic_bytes = static_cast<std::int64_t>(bytes);
  return p;
}

std::vector<ir::NodeId> dying_with(const ir::Graph& g, ir::NodeId root) {
  std::vector<ir::NodeId> dead;
  std::map<std::uint32_t, int> uses_from_dead; // operand → uses by dying nodes
  std::set<std::uint32_t, std::greater<>> todo{root.v};
  while (!todo.empty()) {
    const std::uint32_t v = *todo.begin();
    todo.erase(todo.begin());
    const ir::NodeId id(v);
    dead.push_back(id);
    for (ir::NodeId in : g.node(id).inputs) {
      const ir::Node& o = g.node(in);
      if (ir::is_leaf(o.op) || o.op == ir::OpKind::Constant || g.is_output(in))
        continue;
      if (++uses_from_dead[in.v] == g.use_count(in))
        todo.insert(in.v); // ids only go down along operands, so it is still ahead
    }
  }
  return dead;
}

} // namespace rlx::fusion
