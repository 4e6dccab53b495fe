// io_gate.hpp: the IO fusion-benefit gate: whether a rewrite saves more (kernel launches, bytes
// moved, epilogue time) than it costs, under a backend's cost knobs.
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <map>
#include <span>
#include <string>

namespace rlx::fusion {

/// What a set of nodes costs to run as kernels: launches, bytes moved, host syncs and readback,
/// and the modelled compute time of the parts the backend prices per element (epilogues).
struct GraphIoProfile {
  std::int64_t kernel_launches = 0;      ///< nodes that run a kernel (leaves and views do not)
  std::int64_t sync_points = 0;          ///< nodes that force a device → host round trip
  std::int64_t host_output_bytes = 0;    ///< bytes of graph outputs among the nodes
  std::int64_t device_traffic_bytes = 0; ///< operand bytes read plus result bytes written
  double compute_ns = 0;                 ///< IoFusionGate::ns_per_element × result elements
};

/// Predicted savings of \p before → \p after (positive = the fusion saves).
struct FusionBenefit {
  std::int64_t launches_saved = 0;
  std::int64_t sync_points_saved = 0;
  std::int64_t host_readback_bytes_saved = 0;
  std::int64_t device_traffic_bytes_saved = 0;
  double compute_ns_saved = 0;
};

/// The savings from \p before to \p after.
FusionBenefit fusion_benefit(const GraphIoProfile& before, const GraphIoProfile& after);

/// A backend's cost knobs, and the gate they make: a rewrite fuses only when its modelled
/// saving is at least min_gain_ns. Defaults model no backend in particular; a backend returns
/// its own (compile::Backend::io_fusion_gate; the CPU's are calibrated from its kernel profiler).
struct IoFusionGate {
  double dispatch_ns = 2000;             ///< cost of one kernel launch (record dispatch, handoff)
  double roundtrip_ns = 0;               ///< cost of one device → host sync
  double memory_bytes_per_ns = 20;       ///< sustained memory bandwidth (GB/s = bytes/ns)
  double host_readback_bytes_per_ns = 0; ///< device → host bandwidth; 0 = unified memory
  double host_thunk_penalty_ns = 0;      ///< per sync point a fusion adds
  double min_gain_ns = 0;                ///< a fusion must save at least this much
  /// Modelled time per result element of nodes keyed by cost_key() ("gelu",
  /// "matmul_bias_act.gelu"): what an op or a fused epilogue costs beyond its bytes. A fused
  /// epilogue slower than the one-op kernel it replaces shows here.
  std::map<std::string, double> ns_per_element;
  /// Size assumed for a symbolic dim (fusion runs before shapes are bound in some pipelines).
  std::int64_t symbolic_dim = 128;

  /// The modelled saving of \p b in nanoseconds.
  double score_ns(const FusionBenefit& b) const;
  /// Whether the rewrite from \p before to \p after saves at least min_gain_ns.
  bool should_fuse(const GraphIoProfile& before, const GraphIoProfile& after) const;
  /// 16 hex digits that change with any knob (a compile-cache key part: fused graphs differ
  /// when the knobs do).
  std::string fingerprint() const;
};

/// The key under which IoFusionGate::ns_per_element prices node \p id: the op's name, and for
/// MatMulBiasAct the name and its activation ("matmul_bias_act.gelu"; "matmul_bias_act.none").
std::string cost_key(const ir::Graph& g, ir::NodeId id);

/// The profile of running \p nodes of \p g, each as one kernel (Inputs, Params, Constants, pure
/// views and `get` run none), priced with \p gate's per-element knobs.
GraphIoProfile profile_graph_io(const ir::Graph& g, std::span<const ir::NodeId> nodes,
                                const IoFusionGate& gate);
/// The profile of every node of \p g.
GraphIoProfile profile_graph_io(const ir::Graph& g, const IoFusionGate& gate);

/// The key under which IoFusionGate::ns_per_element prices op \p op as one instruction of an
/// elementwise region's loop: "elementwise_region.<op>" ("elementwise_region.sigmoid"); an op
/// without its own key is priced at "elementwise_region" (any cheap op: add, mul, neg, ...).
std::string region_cost_key(ir::OpKind op);

/// The profile of running \p members of \p g (an elementwise region's ops, in id order) as one
/// region kernel: one launch, each operand from outside the set read once, each member used
/// outside the set (or a graph output) written once, and each member's result elements priced at
/// region_cost_key() of its op.
GraphIoProfile profile_region_io(const ir::Graph& g, std::span<const ir::NodeId> members,
                                 const IoFusionGate& gate);

/// The nodes that die when every use of \p root is rewired elsewhere: \p root and, transitively,
/// operands (not leaves) all of whose uses are dying nodes and which are no graph output. In
/// descending id order.
std::vector<ir::NodeId> dying_with(const ir::Graph& g, ir::NodeId root);

} // namespace rlx::fusion
