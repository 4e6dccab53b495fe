// lir_check.cpp: the checks every backend's compile makes of the LIR module it is given.
#include "rlx/compile/lir_check.hpp"

#include "rlx/ir/error.hpp"

#include <string>

namespace rlx::compile {

void check_compilable(const ir::Module& lir, std::string_view backend, std::int64_t alignment) {
  const std::string who(backend);
  if (lir.stage() != ir::Stage::lir)
    throw Error(who + ": compile needs an LIR module (MIR + memory plan), got " +
                std::string(ir::stage_name(lir.stage())));
  const ir::Graph& g = lir.graph();
  const ir::MemoryPlan& plan = lir.plan();
  if (plan.assignments.size() != g.size())
    throw Error(who + ": the memory plan has " + std::to_string(plan.assignments.size()) +
                " slots for " + std::to_string(g.size()) + " nodes");
  if (alignment <= 0 || plan.alignment % alignment != 0)
    throw Error(who + ": the memory plan's alignment " + std::to_string(plan.alignment) +
                " is not a multiple of the backend's " + std::to_string(alignment) +
                " (plan with the backend's alignment())");
  for (ir::NodeId id : g.ids())
    if (!g.shape(id).is_static())
      throw Error(who + ": " + ir::describe(g, id) + " has symbolic type " + g.shape(id).str() +
                  "; bind the symbols before compiling");
}

} // namespace rlx::compile
