// module.cpp: Module (a graph and its compile stage) and the stage / storage names.
#include "rlx/ir/module.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/verify.hpp"

namespace rlx::ir {

std::string_view stage_name(Stage s) {
  switch (s) {
  case Stage::hir:
    return "hir";
  case Stage::mir:
    return "mir";
  case Stage::lir:
    return "lir";
  }
  return "?";
}

std::string_view storage_name(Storage s) {
  switch (s) {
  case Storage::none:
    return "none";
  case Storage::input:
    return "input";
  case Storage::param:
    return "param";
  case Storage::constant:
    return "constant";
  case Storage::output:
    return "output";
  case Storage::temp:
    return "temp";
  case Storage::view:
    return "view";
  case Storage::aliased:
    return "aliased";
  }
  return "?";
}

Module Module::hir(Graph g) {
  verify(g);
  Module m;
  m.stage_ = Stage::hir;
  m.graph_ = std::move(g);
  return m;
}

Module Module::mir(Graph g) {
  verify(g, VerifyOptions{.allow_hir = false});
  Module m;
  m.stage_ = Stage::mir;
  m.graph_ = std::move(g);
  return m;
}

Module Module::lir(Graph g, MemoryPlan plan) {
  verify(g, VerifyOptions{.allow_hir = false});
  if (plan.assignments.size() != g.size())
    throw Error("Module::lir: the memory plan assigns " + std::to_string(plan.assignments.size()) +
                " buffers but graph '" + g.name() + "' has " + std::to_string(g.size()) + " nodes");
  for (NodeId id : plan.schedule)
    if (!id.valid() || id.v >= g.size())
      throw Error("Module::lir: the memory plan's schedule names " + describe(g, id) +
                  ", which is not a node of graph '" + g.name() + "'");
  Module m;
  m.stage_ = Stage::lir;
  m.graph_ = std::move(g);
  m.plan_ = std::make_shared<const MemoryPlan>(std::move(plan));
  return m;
}

const MemoryPlan& Module::plan() const {
  if (!plan_)
    throw Error("Module::plan: graph '" + graph_.name() + "' is at the " +
                std::string(stage_name(stage_)) + " stage; only LIR carries a memory plan");
  return *plan_;
}

Module Module::lower() const {
  if (stage_ != Stage::hir)
    return *this;
  Module m;
  m.stage_ = Stage::mir;
  m.graph_ = lower_hir(graph_); // verified as MIR by lower_hir
  return m;
}

} // namespace rlx::ir
