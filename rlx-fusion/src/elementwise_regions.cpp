// elementwise_regions.cpp: MarkElementwiseRegions (group elementwise / broadcast chains into
// ElementwiseRegion nodes) and UnfuseElementwiseRegions (inline them back).
#include "rlx/fusion/elementwise_regions.hpp"

#include "rlx/fusion/io_gate.hpp"
#include "rlx/fusion/report.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/region.hpp"

#include <algorithm>
#include <cstdio>
#include <memory>

namespace rlx::fusion {
namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

constexpr std::string_view kPattern = "elementwise_region";

struct Region {
  std::vector<NodeId> members; ///< in id order
  std::vector<ir::Dim> dims;   ///< the iteration space every member computes
  bool alive = true;
  /// Closed by an in-place update, its one result: no later node joins.
  bool sealed = false;
};

class Grouper {
public:
  Grouper(Graph& g, PassContext& ctx, const FusionLimits& limits)
      : g_(g), ctx_(ctx), limits_(limits), region_of_(g.size(), -1), mark_(g.size(), 0),
        taint_(g.size(), 0), updates_param_(g.size(), 0) {
    for (const ir::OutputAlias& a : g.aliases())
      if (a.output < g.outputs().size()) {
        updates_param_[g.outputs()[a.output].v] = 1;
        const NodeId p = g.find_leaf(a.param, true);
        if (p.valid())
          updated_.push_back({p, g.outputs()[a.output]});
      }
  }

  bool run() {
    for (NodeId id : g_.ids())
      visit(id);
    return rewrite();
  }

private:
  Graph& g_;
  PassContext& ctx_;
  const FusionLimits& limits_;
  std::vector<Region> regions_;
  std::vector<int> region_of_;
  std::vector<char> mark_;           // scratch: members of the set being checked
  std::vector<std::uint32_t> taint_; // scratch: generation stamps of the convexity scan
  std::vector<char> updates_param_;  // outputs that update a Param in place (Graph::aliases)
  std::vector<std::pair<NodeId, NodeId>> updated_; // (Param, the output updating it)
  std::uint32_t generation_ = 0;

  void miss(NodeId id, MissReason r, std::string detail) {
    if (ctx_.report)
      ctx_.report->record_missed(
          {std::string(kPattern), ir::describe(g_, id), r, std::move(detail)});
  }

  /// The first dtype of \p id (result or operand) the backend's region loop does not take.
  std::optional<ir::DType> unclaimed_dtype(NodeId id) const {
    if (ctx_.claims == nullptr)
      return std::nullopt;
    const ir::Node& n = g_.node(id);
    if (!ctx_.claims->claims(OpKind::ElementwiseRegion, n.shape.dtype))
      return n.shape.dtype;
    for (NodeId in : n.inputs)
      if (!ctx_.claims->claims(OpKind::ElementwiseRegion, g_.shape(in).dtype))
        return g_.shape(in).dtype;
    return std::nullopt;
  }

  /// The distinct operand regions of \p id, in operand order.
  std::vector<int> operand_regions(NodeId id) const {
    std::vector<int> rs;
    for (NodeId in : g_.node(id).inputs) {
      int r = region_of_[in.v];
      if (r >= 0 && regions_[static_cast<std::size_t>(r)].alive &&
          !regions_[static_cast<std::size_t>(r)].sealed &&
          std::find(rs.begin(), rs.end(), r) == rs.end())
        rs.push_back(r);
    }
    return rs;
  }

  bool inlinable_constant(NodeId id) const {
    const ir::Node& n = g_.node(id);
    return n.op == OpKind::Constant && !n.shape.is_tuple() && n.shape.is_static() &&
           n.shape.numel() <= limits_.max_inline_constant_elements;
  }

  /// Distinct operands from outside the set \p members (marked in mark_), small constants aside.
  int count_inputs(const std::vector<NodeId>& members) const {
    std::vector<NodeId> seen;
    for (NodeId m : members)
      for (NodeId in : g_.node(m).inputs)
        if (!mark_[in.v] && !inlinable_constant(in) &&
            std::find(seen.begin(), seen.end(), in) == seen.end())
          seen.push_back(in);
    return static_cast<int>(seen.size());
  }

  /// Whether no path leaves the marked set \p members and re-enters it. Paths only go up in id,
  /// so it scans the window between the set's first and last member once.
  bool convex(const std::vector<NodeId>& members) {
    auto [lo, hi] = std::minmax_element(members.begin(), members.end());
    ++generation_;
    for (std::uint32_t i = lo->v; i <= hi->v; ++i) {
      const ir::Node& n = g_.node(NodeId(i));
      if (mark_[i]) {
        for (NodeId in : n.inputs)
          if (!mark_[in.v] && taint_[in.v] == generation_)
            return false;
        continue;
      }
      for (NodeId in : n.inputs)
        if (in.v >= lo->v && (mark_[in.v] || taint_[in.v] == generation_)) {
          taint_[i] = generation_;
          break;
        }
    }
    return true;
  }

  /// Checks the limits and convexity of \p members; \returns the miss reason, or nullopt when the
  /// set may be one region.
  std::optional<std::pair<MissReason, std::string>> check(const std::vector<NodeId>& members) {
    for (NodeId m : members)
      mark_[m.v] = 1;
    std::optional<std::pair<MissReason, std::string>> bad;
    const int inputs = count_inputs(members);
    if (static_cast<int>(members.size()) > limits_.max_region_ops)
      bad = {{MissReason::limit_exceeded,
              "the region would hold " + std::to_string(members.size()) +
                  " ops; max_region_ops is " + std::to_string(limits_.max_region_ops)}};
    else if (inputs > limits_.max_region_inputs)
      bad = {{MissReason::limit_exceeded, "the region would read " + std::to_string(inputs) +
                                              " operands; max_region_inputs is " +
                                              std::to_string(limits_.max_region_inputs)}};
    else if (!convex(members))
      bad = {{MissReason::would_create_cycle,
              "a path leaves the region and re-enters it through another op"}};
    for (NodeId m : members)
      mark_[m.v] = 0;
    return bad;
  }

  /// Whether every member of region \p r is read only inside it or by \p id (and is no graph
  /// output), so \p id would be its only result, and r reads no Param that another output
  /// updates in place (the planner runs every update after all plain reads of the Params
  /// updated: an update region reading another's Param could not be ordered, as in SGD weight
  /// decay, where p is read by the momentum buffer's update).
  bool closed_under(int r, NodeId id) const {
    for (NodeId m : regions_[static_cast<std::size_t>(r)].members) {
      if (g_.is_output(m))
        return false;
      for (NodeId u : g_.users(m))
        if (u != id && region_of_[u.v] != r)
          return false;
      for (NodeId in : g_.node(m).inputs)
        for (const auto& [param, writer] : updated_)
          if (in == param && writer != id)
            return false;
    }
    return true;
  }

  /// Joins in-place update \p id to the regions \p near of which it would be the only result
  /// (b1 m + (1 - b1) g: both products' regions), merged into one; seals it. \returns whether
  /// it joined.
  bool join_as_update(NodeId id, const std::vector<int>& near) {
    const ir::Shape& s = g_.shape(id);
    int joined = -1;
    for (int r : near) {
      Region& reg = regions_[static_cast<std::size_t>(r)];
      if (reg.dims != s.dims || !closed_under(r, id))
        continue;
      std::vector<NodeId> set = reg.members;
      if (joined >= 0) {
        const auto& into = regions_[static_cast<std::size_t>(joined)].members;
        set.insert(set.end(), into.begin(), into.end());
      } else {
        set.push_back(id);
      }
      if (check(set))
        continue;
      std::sort(set.begin(), set.end());
      if (joined < 0) {
        joined = r;
      } else {
        reg.alive = false;
        for (NodeId m : reg.members)
          region_of_[m.v] = joined;
      }
      region_of_[id.v] = joined;
      regions_[static_cast<std::size_t>(joined)].members = std::move(set);
    }
    if (joined < 0)
      return false;
    regions_[static_cast<std::size_t>(joined)].sealed = true;
    return true;
  }

  void visit(NodeId id) {
    const ir::Node& n = g_.node(id);
    if (ir::is_leaf(n.op))
      return;
    std::vector<int> near = operand_regions(id);
    std::string why;
    if (!ir::is_region_body_op(g_, id, &why)) {
      if (!near.empty() && ir::is_elementwise(n.op))
        miss(id, MissReason::attribute_mismatch, "not a region op: " + why);
      return;
    }
    if (ctx_.claims && !ctx_.claims->supports(g_, id)) {
      // Legalisation (after fusion) decomposes an op the backend does not run itself; the region
      // loop is not asked to run it either.
      if (!near.empty())
        miss(id, MissReason::not_claimed,
             "the backend does not claim " + std::string(ir::op_name(n.op)) + " itself");
      return;
    }
    if (auto dt = unclaimed_dtype(id)) {
      miss(id, MissReason::dtype_mismatch,
           "the backend's region loop does not take " + std::string(ir::dtype_name(*dt)));
      return;
    }
    if (updates_param_[id.v]) {
      // The memory planner needs an in-place update to be written by a kernel, never a view: as
      // one part of a region's tuple it would be a Get. So an update joins only a region whose
      // every member is read by nothing but the region and the update, making the update the
      // region's one result (a single-output region node writes the Param in place); the region
      // is sealed after it.
      if (!join_as_update(id, near) && !near.empty())
        miss(id, MissReason::is_graph_output,
             "updates a param in place (Graph::aliases) and an operand region has other "
             "results: it stays a kernel of its own");
      return;
    }
    int joined = -1;
    std::optional<std::pair<MissReason, std::string>> first_miss;
    for (int r : near) {
      Region& reg = regions_[static_cast<std::size_t>(r)];
      if (reg.dims != n.shape.dims) {
        if (!first_miss)
          first_miss = {{MissReason::shape_mismatch, "dims " + n.shape.str() +
                                                         " differ from the region's " +
                                                         ir::Shape(reg.dims, n.shape.dtype).str()}};
        continue;
      }
      std::vector<NodeId> set = reg.members;
      set.push_back(id);
      if (auto bad = check(set)) {
        if (!first_miss)
          first_miss = bad;
        continue;
      }
      reg.members = std::move(set);
      region_of_[id.v] = r;
      joined = r;
      break;
    }
    if (joined < 0) {
      if (first_miss)
        miss(id, first_miss->first, first_miss->second);
      region_of_[id.v] = static_cast<int>(regions_.size());
      regions_.push_back(Region{{id}, n.shape.dims, true});
      return;
    }
    // The node may also join other operand regions into its own (a + b over two chains).
    Region& into = regions_[static_cast<std::size_t>(joined)];
    for (int r : near) {
      Region& other = regions_[static_cast<std::size_t>(r)];
      if (r == joined || other.dims != into.dims)
        continue;
      std::vector<NodeId> set = into.members;
      set.insert(set.end(), other.members.begin(), other.members.end());
      if (check(set))
        continue;
      std::sort(set.begin(), set.end());
      for (NodeId m : other.members)
        region_of_[m.v] = joined;
      into.members = std::move(set);
      other.alive = false;
    }
  }

  /// Replaces every region of two or more ops by an ElementwiseRegion node.
  bool rewrite() {
    bool changed = false;
    std::vector<NodeId> outputs(g_.outputs().begin(), g_.outputs().end());
    int count = 0;
    for (std::size_t r = 0; r < regions_.size(); ++r) {
      Region& reg = regions_[r];
      if (!reg.alive || reg.members.size() < 2 || !profitable(reg))
        continue;
      if (build(static_cast<int>(r), reg, outputs, count))
        changed = true;
    }
    if (!changed)
      return false;
    g_.set_outputs(std::move(outputs));
    g_.compact();
    if (ctx_.report)
      ctx_.report->record_applied(kPattern, count);
    return true;
  }

  /// Whether the backend's IO gate (PassContext::io_gate; none: yes) judges \p reg one region
  /// kernel cheaper than its members as kernels of their own; a refusal is a not_profitable miss
  /// at the region's last member.
  bool profitable(const Region& reg) {
    if (!ctx_.io_gate)
      return true;
    const IoFusionGate& gate = *ctx_.io_gate;
    const GraphIoProfile before = profile_graph_io(g_, reg.members, gate);
    const GraphIoProfile after = profile_region_io(g_, reg.members, gate);
    const double score = gate.score_ns(fusion_benefit(before, after));
    if (score >= gate.min_gain_ns)
      return true;
    char detail[200];
    std::snprintf(detail, sizeof detail,
                  "the IO gate models %.0f ns saved by a region of %zu ops, under %.0f "
                  "(compute %.0f -> %.0f ns, bytes %lld -> %lld)",
                  score, reg.members.size(), gate.min_gain_ns, before.compute_ns, after.compute_ns,
                  static_cast<long long>(before.device_traffic_bytes),
                  static_cast<long long>(after.device_traffic_bytes));
    miss(reg.members.back(), MissReason::not_profitable, detail);
    return false;
  }

  bool build(int r, const Region& reg, std::vector<NodeId>& graph_outputs, int& count) {
    auto in_region = [&](NodeId x) { return x.v < region_of_.size() && region_of_[x.v] == r; };
    std::vector<NodeId> outs;
    for (NodeId m : reg.members) {
      bool used_outside = g_.is_output(m);
      for (NodeId u : g_.users(m))
        used_outside = used_outside || !in_region(u);
      if (used_outside)
        outs.push_back(m);
    }
    if (outs.empty())
      return false; // a dead chain: DCE removes it
    auto body = std::make_shared<Graph>("region" + std::to_string(count));
    ir::Builder bb(*body);
    std::vector<NodeId> map(g_.size());
    std::vector<NodeId> operands;
    for (NodeId m : reg.members) {
      const ir::Node n = g_.node(m);
      std::vector<NodeId> ins;
      for (NodeId in : n.inputs) {
        if (!map[in.v].valid()) {
          if (inlinable_constant(in)) {
            map[in.v] = bb.constant(g_.node(in).attr<ir::ConstantAttrs>().value.clone());
          } else {
            map[in.v] = bb.input("in" + std::to_string(operands.size()), g_.shape(in));
            operands.push_back(in);
          }
        }
        ins.push_back(map[in.v]);
      }
      map[m.v] = bb.op(n.op, std::move(ins), n.attrs, n.name);
    }
    for (NodeId o : outs)
      bb.output(map[o.v]);
    std::string label = "region" + std::to_string(count);
    NodeId node = g_.add(OpKind::ElementwiseRegion, operands,
                         ir::RegionAttrs{ir::SubGraph{std::move(body)}}, label);
    std::vector<NodeId> values;
    if (outs.size() == 1) {
      values.push_back(node);
    } else {
      for (std::size_t i = 0; i < outs.size(); ++i)
        values.push_back(g_.add(OpKind::Get, {node}, ir::GetAttrs{static_cast<std::int64_t>(i)},
                                label + "." + std::to_string(i)));
    }
    for (std::size_t i = 0; i < outs.size(); ++i) {
      NodeId m = outs[i];
      std::vector<NodeId> users(g_.users(m).begin(), g_.users(m).end());
      std::sort(users.begin(), users.end());
      users.erase(std::unique(users.begin(), users.end()), users.end());
      for (NodeId u : users) {
        if (in_region(u))
          continue;
        const auto& ins = g_.node(u).inputs;
        for (std::size_t s = 0; s < ins.size(); ++s)
          if (ins[s] == m)
            g_.set_input(u, s, values[i]);
      }
      for (NodeId& o : graph_outputs)
        if (o == m)
          o = values[i];
    }
    ++count;
    return true;
  }
};

} // namespace

bool MarkElementwiseRegionsPass::run(ir::Graph& g, PassContext& ctx) {
  if (ctx.claims && !ctx.claims->claims(OpKind::ElementwiseRegion))
    return false;
  return Grouper(g, ctx, limits_).run();
}

bool UnfuseElementwiseRegionsPass::run(ir::Graph& g, PassContext&) {
  bool changed = false;
  const std::size_t n = g.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    const NodeId id(i);
    if (g.node(id).op != OpKind::ElementwiseRegion)
      continue;
    const ir::Node node = g.node(id);
    ir::Builder b(g);
    std::vector<NodeId> outs = ir::inline_region(b, node, node.inputs);
    if (!node.shape.is_tuple()) {
      g.replace_all_uses(id, outs.at(0));
    } else {
      std::vector<NodeId> users(g.users(id).begin(), g.users(id).end());
      for (NodeId u : users)
        if (g.node(u).op == OpKind::Get)
          g.replace_all_uses(
              u, outs.at(static_cast<std::size_t>(g.node(u).attr<ir::GetAttrs>().index)));
    }
    changed = true;
  }
  if (changed)
    g.compact();
  return changed;
}

} // namespace rlx::fusion
