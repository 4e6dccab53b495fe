// liveness.cpp: buffer roots, needed values and live ranges over a schedule.
#include "liveness.hpp"

#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/effects.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <string>

namespace rlx::compile::detail {

void require_static(const ir::Graph& g, const char* who) {
  std::vector<std::string> syms = g.symbols();
  if (syms.empty())
    return;
  std::string list;
  for (const auto& s : syms)
    list += (list.empty() ? "" : ", ") + s;
  throw Error(std::string(who) + ": graph '" + g.name() + "' has unbound symbolic dims (" + list +
              "); bind them with Graph::bind before planning memory");
}

void require_alignment(std::int64_t alignment, const char* who) {
  if (alignment <= 0 || (alignment & (alignment - 1)) != 0)
    throw Error(std::string(who) + ": alignment must be a positive power of two, got " +
                std::to_string(alignment));
}

Liveness analyze_liveness(const ir::Graph& g, std::span<const ir::NodeId> schedule) {
  const std::size_t n = g.size();
  if (schedule.size() != n)
    throw Error("memory plan: the schedule has " + std::to_string(schedule.size()) +
                " entries but graph '" + g.name() + "' has " + std::to_string(n) + " nodes");
  Liveness lv;
  lv.steps = static_cast<std::int32_t>(n);
  lv.pos.assign(n, -1);
  for (std::size_t s = 0; s < n; ++s) {
    ir::NodeId id = schedule[s];
    if (!id.valid() || id.v >= n)
      throw Error("memory plan: schedule entry " + std::to_string(s) + " names node " +
                  ir::describe(g, id) + ", which is not in graph '" + g.name() + "'");
    if (lv.pos[id.v] >= 0)
      throw Error("memory plan: the schedule runs " + ir::describe(g, id) + " twice");
    lv.pos[id.v] = static_cast<std::int32_t>(s);
  }
  for (ir::NodeId id : schedule) {
    for (ir::NodeId in : g.node(id).inputs) {
      if (!in.valid() || in.v >= n)
        throw Error("memory plan: " + ir::describe(g, id) + " reads " + ir::describe(g, in) +
                    ", which is not in graph '" + g.name() + "' (dangling edge)");
      if (lv.pos[in.v] >= lv.pos[id.v])
        throw Error("memory plan: " + ir::describe(g, id) + " reads " + ir::describe(g, in) +
                    ", which the schedule runs later (a cycle or an unordered edge)");
    }
  }

  // Roots and view offsets, in schedule order so an operand's root is known first.
  lv.root.resize(n);
  lv.view_offset.assign(n, 0);
  lv.view.assign(n, false);
  for (ir::NodeId id : schedule) {
    lv.root[id.v] = id;
    if (is_pure_view(g, id)) {
      ir::NodeId src = g.node(id).inputs.front();
      lv.view[id.v] = true;
      lv.root[id.v] = lv.root[src.v];
      lv.view_offset[id.v] = lv.view_offset[src.v] + view_byte_offset(g, id);
    }
  }

  // Needed values: walk the schedule backwards from the outputs.
  lv.needed.assign(n, false);
  for (ir::NodeId o : g.outputs())
    lv.needed[o.v] = true;
  for (ir::NodeId id : schedule)
    if (ir::has_effects(g, id))
      lv.needed[id.v] = true; // its kernel must run even when nothing reads its value
  for (std::size_t s = n; s-- > 0;) {
    ir::NodeId id = schedule[s];
    if (lv.needed[id.v])
      for (ir::NodeId in : g.node(id).inputs)
        lv.needed[in.v] = true;
  }

  // Live ranges of roots: reads by needed nodes (through any view chain) extend the root.
  lv.first.assign(n, 0);
  lv.last.assign(n, 0);
  for (std::size_t i = 0; i < n; ++i)
    lv.first[i] = lv.last[i] = lv.pos[i];
  for (ir::NodeId id : schedule) {
    if (!lv.needed[id.v] || lv.view[id.v])
      continue; // dead nodes and views run no kernel, so they read nothing
    for (ir::NodeId in : g.node(id).inputs) {
      std::int32_t& last = lv.last[lv.root[in.v].v];
      last = std::max(last, lv.pos[id.v]);
    }
  }
  lv.output_root.assign(n, false);
  for (ir::NodeId o : g.outputs()) {
    ir::NodeId r = lv.root[o.v];
    lv.output_root[r.v] = true;
    lv.last[r.v] = lv.steps - 1;
  }
  return lv;
}

} // namespace rlx::compile::detail
