// memory_plan_check.cpp: check_memory_plan, an independent validation of a memory plan.
#include "liveness.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <string>

namespace rlx::compile {
namespace {

using ir::NodeId;
using ir::Storage;

/// A materialised byte range and the steps it must stay intact over.
struct Extent {
  std::int64_t begin = 0, end = 0;
  std::int32_t first = 0, last = 0;
  NodeId node;
  bool scratch = false;
};

bool pinned(Storage s) {
  return s == Storage::input || s == Storage::param || s == Storage::constant ||
         s == Storage::output;
}

std::string name_of(const ir::Graph& g, const Extent& e) {
  return (e.scratch ? "scratch of " : "") + ir::describe(g, e.node) + " [" +
         std::to_string(e.begin) + ", " + std::to_string(e.end) + ") live at steps " +
         std::to_string(e.first) + ".." + std::to_string(e.last);
}

[[noreturn]] void fail(const std::string& what) {
  throw Error("memory plan: " + what);
}

Storage leaf_storage(ir::OpKind op) {
  switch (op) {
  case ir::OpKind::Input:
    return Storage::input;
  case ir::OpKind::Param:
    return Storage::param;
  default:
    return Storage::constant;
  }
}

} // namespace

void check_memory_plan(const ir::Graph& g, const ir::MemoryPlan& plan) {
  detail::require_alignment(plan.alignment, "check_memory_plan");
  detail::require_static(g, "check_memory_plan");
  if (plan.assignments.size() != g.size())
    fail("has " + std::to_string(plan.assignments.size()) + " assignments for " +
         std::to_string(g.size()) + " nodes of graph '" + g.name() + "'");
  const detail::Liveness lv = detail::analyze_liveness(g, plan.schedule);
  const std::int64_t align = plan.alignment;
  if (plan.pinned_bytes < 0 || plan.pinned_bytes > plan.arena_size)
    fail("pinned_bytes " + std::to_string(plan.pinned_bytes) + " lies outside the arena of " +
         std::to_string(plan.arena_size) + " bytes");
  if (plan.lower_bound > plan.arena_size)
    fail("lower_bound " + std::to_string(plan.lower_bound) + " exceeds arena_size " +
         std::to_string(plan.arena_size));

  std::vector<Extent> extents;
  auto in_arena = [&](const std::string& who, std::int64_t offset, std::int64_t bytes) {
    if (offset < 0 || bytes < 0 || offset + bytes > plan.arena_size)
      fail(who + " at [" + std::to_string(offset) + ", " + std::to_string(offset + bytes) +
           ") lies outside the arena of " + std::to_string(plan.arena_size) + " bytes");
  };

  for (NodeId id : plan.schedule) {
    const ir::BufferSlot& s = plan.slot(id);
    const ir::Node& n = g.node(id);
    const std::string who = ir::describe(g, id);
    if (ir::is_leaf(n.op) && s.storage != leaf_storage(n.op))
      fail(who + " has storage '" + std::string(ir::storage_name(s.storage)) + "', expected '" +
           std::string(ir::storage_name(leaf_storage(n.op))) + "'");
    if (s.storage == Storage::none) {
      if (lv.needed[id.v])
        fail(who + " is read (or is a graph output) but has no storage");
      continue;
    }
    if (s.storage == Storage::view) {
      if (!lv.view[id.v])
        fail(who + " has view storage but is not a pure view");
      NodeId root = lv.root[id.v];
      if (s.view_of != root)
        fail(who + " aliases " + ir::describe(g, s.view_of) + ", expected its root " +
             ir::describe(g, root));
      const ir::BufferSlot& r = plan.slot(root);
      if (r.storage == Storage::none || r.storage == Storage::view)
        fail(who + " aliases " + ir::describe(g, root) + ", which owns no buffer");
      if (s.bytes != g.shape(id).bytes() || s.offset != r.offset + lv.view_offset[id.v])
        fail(who + " should alias bytes [" + std::to_string(r.offset + lv.view_offset[id.v]) +
             ", +" + std::to_string(g.shape(id).bytes()) + ") of " + ir::describe(g, root) +
             ", got [" + std::to_string(s.offset) + ", +" + std::to_string(s.bytes) + ")");
      if (s.offset < r.offset || s.offset + s.bytes > r.offset + r.bytes)
        fail(who + " at [" + std::to_string(s.offset) + ", " + std::to_string(s.offset + s.bytes) +
             ") is not inside its root " + ir::describe(g, root) + " at [" +
             std::to_string(r.offset) + ", " + std::to_string(r.offset + r.bytes) + ")");
      continue;
    }
    if (s.storage == Storage::aliased) {
      // Written over the Param it updates (Graph::aliases); the Param's extent covers it.
      const NodeId p = s.view_of;
      bool declared = false;
      for (const ir::OutputAlias& a : g.aliases())
        declared = declared || (a.output < g.outputs().size() && g.outputs()[a.output] == id &&
                                p.valid() && g.find_leaf(a.param, true) == p);
      if (!declared)
        fail(who + " has aliased storage but no graph alias makes it update " + ir::describe(g, p));
      if (s.offset != plan.slot(p).offset || s.bytes != plan.slot(p).bytes)
        fail(who + " should lie on the slot of " + ir::describe(g, p) + " it updates");
      continue;
    }
    if (lv.view[id.v] && lv.needed[id.v])
      fail(who + " is a pure view (backends emit no kernel for it) but owns a buffer");
    if (s.bytes != g.shape(id).bytes())
      fail(who + " has a " + std::to_string(s.bytes) + "-byte slot for a " +
           std::to_string(g.shape(id).bytes()) + "-byte value " + g.shape(id).str());
    if (s.offset % align != 0)
      fail(who + " at offset " + std::to_string(s.offset) + " is not aligned to " +
           std::to_string(align));
    in_arena(who, s.offset, s.bytes);
    if (lv.output_root[id.v] && !pinned(s.storage))
      fail(who + " holds a graph output but is a temporary that later buffers may overwrite");
    Extent e{s.offset, s.offset + s.bytes, lv.first[id.v], lv.last[id.v], id, false};
    if (pinned(s.storage)) {
      e.first = 0;
      e.last = lv.steps - 1;
    }
    extents.push_back(e);
  }

  for (const ir::ScratchSlot& sc : plan.scratch) {
    if (!sc.node.valid() || sc.node.v >= g.size())
      fail("a scratch buffer belongs to " + ir::describe(g, sc.node) + ", not a node of the graph");
    const std::string who = "scratch of " + ir::describe(g, sc.node);
    if (plan.slot(sc.node).storage == Storage::none || lv.view[sc.node.v] ||
        ir::is_leaf(g.node(sc.node).op))
      fail(who + ": that node runs no kernel");
    if (sc.offset % align != 0)
      fail(who + " at offset " + std::to_string(sc.offset) + " is not aligned to " +
           std::to_string(align));
    in_arena(who, sc.offset, sc.bytes);
    std::int32_t step = lv.pos[sc.node.v];
    extents.push_back({sc.offset, sc.offset + sc.bytes, step, step, sc.node, true});
  }

  // An in-place update runs after every other read of the Param it overwrites.
  for (NodeId w : plan.schedule) {
    if (plan.slot(w).storage != Storage::aliased)
      continue;
    const NodeId p = plan.slot(w).view_of;
    for (NodeId id : plan.schedule) {
      if (id == w || lv.view[id.v] || !lv.needed[id.v])
        continue;
      for (NodeId in : g.node(id).inputs)
        if (lv.root[in.v] == p && lv.pos[id.v] > lv.pos[w.v])
          fail(ir::describe(g, id) + " reads " + ir::describe(g, p) + " after " +
               ir::describe(g, w) + " updated it in place");
    }
  }

  // Every pair of extents that share a byte must not share a step. Sorted by start offset, only
  // the extents beginning before one's end can overlap it.
  std::sort(extents.begin(), extents.end(),
            [](const Extent& a, const Extent& b) { return a.begin < b.begin; });
  for (std::size_t i = 0; i < extents.size(); ++i) {
    const Extent& a = extents[i];
    for (std::size_t j = i + 1; j < extents.size() && extents[j].begin < a.end; ++j) {
      const Extent& b = extents[j];
      if (b.begin == b.end || a.begin == a.end)
        continue;
      if (a.first <= b.last && b.first <= a.last)
        fail(name_of(g, a) + " and " + name_of(g, b) + " overlap while both are live");
    }
  }
}

} // namespace rlx::compile
