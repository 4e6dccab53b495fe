// graph_picture.cpp: labels, colours and edges of a graph drawing, shared by DOT and SVG.
#include "graph_picture.hpp"

#include "liveness.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/op.hpp"

#include <algorithm>
#include <array>
#include <map>

namespace rlx::compile::detail {
namespace {

using ir::NodeId;
using ir::Storage;

/// Pastel fills for temporaries, chosen by the rank of their arena offset.
constexpr std::array<const char*, 12> kTempPalette = {"#8dd3c7", "#ffffb3", "#bebada", "#fb8072",
                                                      "#80b1d3", "#fdb462", "#b3de69", "#fccde5",
                                                      "#bc80bd", "#ccebc5", "#ffed6f", "#e5c494"};

const char* pinned_fill(Storage s) {
  switch (s) {
  case Storage::input:
    return "#d9f0d3";
  case Storage::param:
    return "#e0e0e0";
  case Storage::constant:
    return "#fff2cc";
  case Storage::output:
    return "#cfe2f3";
  default:
    return "#ffffff";
  }
}

std::string bytes_str(std::int64_t b) {
  return std::to_string(b) + " B";
}

void check_plan_fits(const ir::Graph& g, const ir::MemoryPlan& plan) {
  if (plan.assignments.size() != g.size())
    throw Error("to_dot: the memory plan has " + std::to_string(plan.assignments.size()) +
                " assignments but graph '" + g.name() + "' has " + std::to_string(g.size()) +
                " nodes");
}

} // namespace

Picture build_picture(const ir::Graph& g, const ir::MemoryPlan* plan) {
  Picture pic;
  pic.title = "graph '" + g.name() + "': " + std::to_string(g.size()) + " nodes";
  if (plan) {
    check_plan_fits(g, *plan);
    pic.title += ", arena " + bytes_str(plan->arena_size) + " (lower bound " +
                 bytes_str(plan->lower_bound) + ", pinned " + bytes_str(plan->pinned_bytes) + ")";
  }

  // Temporaries sharing an offset share a colour.
  std::map<std::int64_t, std::size_t> temp_colour;
  if (plan)
    for (const ir::BufferSlot& s : plan->assignments)
      if (s.storage == Storage::temp)
        temp_colour.emplace(s.offset, 0);
  std::size_t rank = 0;
  for (auto& [offset, colour] : temp_colour)
    colour = rank++ % kTempPalette.size();
  std::map<std::uint32_t, std::int64_t> scratch_of;
  if (plan)
    for (const ir::ScratchSlot& sc : plan->scratch)
      scratch_of[sc.node.v] += sc.bytes;

  for (NodeId id : g.ids()) {
    const ir::Node& n = g.node(id);
    PictureNode pn;
    pn.id = id.v;
    std::string head = "%" + std::to_string(id.v) + " " + std::string(ir::op_name(n.op));
    if (const auto* leaf = std::get_if<ir::LeafAttrs>(&n.attrs))
      head += " '" + leaf->name + "'";
    else if (!n.name.empty())
      head += " '" + n.name + "'";
    pn.lines = {head, n.shape.str()};
    if (ir::is_leaf(n.op))
      pn.shape = PictureNode::Shape::ellipse;
    else if (ir::is_hir(n.op))
      pn.shape = PictureNode::Shape::box3d;
    pn.compound = !ir::is_leaf(n.op) && ir::fusion_kind(n.op) == ir::FusionKind::opaque;
    pn.view = !plan && is_pure_view(g, id);
    if (plan) {
      const ir::BufferSlot& s = plan->slot(id);
      std::string where = std::string(ir::storage_name(s.storage));
      if (s.storage != Storage::none)
        where += " @" + std::to_string(s.offset) + " +" + bytes_str(s.bytes);
      pn.lines.push_back(where);
      if (auto it = scratch_of.find(id.v); it != scratch_of.end())
        pn.lines.push_back("scratch " + bytes_str(it->second));
      if (s.storage == Storage::temp)
        pn.fill = kTempPalette[temp_colour.at(s.offset)];
      else if (s.storage == Storage::view && s.view_of.valid() && s.view_of.v < g.size()) {
        pn.view = true;
        const ir::BufferSlot& r = plan->slot(s.view_of);
        pn.fill = r.storage == Storage::temp ? kTempPalette[temp_colour.at(r.offset)]
                                             : pinned_fill(r.storage);
      } else
        pn.fill = pinned_fill(s.storage);
    }
    pic.nodes.push_back(std::move(pn));
  }

  // Data edges; edges into a view are drawn as aliases.
  for (NodeId id : g.ids()) {
    const ir::Node& n = g.node(id);
    // Without a plan the view predicate decides; with one, the plan's storage does.
    bool view = plan ? plan->slot(id).storage == Storage::view : is_pure_view(g, id);
    for (NodeId in : n.inputs) {
      PictureEdge e{in.v, id.v, view ? PictureEdge::Style::view : PictureEdge::Style::data, ""};
      if (view)
        e.label = plan ? "view +" + std::to_string(plan->slot(id).offset - plan->slot(in).offset)
                       : "view";
      pic.edges.push_back(std::move(e));
    }
    if (view && plan) {
      NodeId root = plan->slot(id).view_of;
      if (root.valid() && root.v < g.size() && (n.inputs.empty() || root != n.inputs.front()))
        pic.edges.push_back(
            {root.v, id.v, PictureEdge::Style::view,
             "root +" + std::to_string(plan->slot(id).offset - plan->slot(root).offset)});
    }
  }

  // Buffer reuse: each temporary links to the temporary that last held any of its bytes.
  if (plan) {
    const Liveness lv = analyze_liveness(g, plan->schedule);
    std::vector<NodeId> temps;
    for (NodeId id : g.ids())
      if (plan->slot(id).storage == Storage::temp && plan->slot(id).bytes > 0)
        temps.push_back(id);
    for (NodeId b : temps) {
      const ir::BufferSlot& sb = plan->slot(b);
      NodeId prev;
      for (NodeId a : temps) {
        const ir::BufferSlot& sa = plan->slot(a);
        bool bytes_meet = sa.offset < sb.offset + sb.bytes && sb.offset < sa.offset + sa.bytes;
        if (a == b || !bytes_meet || lv.last[a.v] >= lv.first[b.v])
          continue;
        if (!prev.valid() || lv.last[a.v] > lv.last[prev.v])
          prev = a;
      }
      if (prev.valid())
        pic.edges.push_back({prev.v, b.v, PictureEdge::Style::reuse, "reuses"});
    }
  }
  return pic;
}

} // namespace rlx::compile::detail
