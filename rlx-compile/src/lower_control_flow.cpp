// lower_control_flow.cpp: the lower-control-flow pass, If and While to straight-line code, for
// backends that claim neither (rlx-cpu runs them for real; legalisation uses these forms only for
// a backend that does not claim If / While).
//
// The lowerings are rlx-ir's decompositions ir::lower_if / ir::lower_while (rlx/ir/decompose.hpp,
// documented in rlx-ir/src/decompose/control_flow.cpp): If becomes a Where over both inlined
// branches, While max_iterations guarded copies of cond and body. Neither applies when a
// sub-graph can fail at run time (ops.def's kMayFail / kMayFailInt) or has effects
// (ir::has_effects), since the lowered form runs code the program did not take; nor when an
// unrolled While would exceed PassOptions::decompose.unroll_max_nodes. This pass turns such a
// refusal into an error naming the node and the reason.
//
// Nested control flow is lowered by repeating until none is left.
#include "rlx/compile/passes.hpp"

#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::compile {

bool LowerControlFlowPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  bool changed = false;
  for (int round = 0;; ++round) {
    bool any = false;
    const std::size_t n = g.size();
    for (std::uint32_t i = 0; i < n; ++i) {
      const ir::NodeId id(i);
      const ir::OpKind op = g.node(id).op;
      if ((op != ir::OpKind::If && op != ir::OpKind::While) || g.use_count(id) == 0)
        continue;
      ir::Builder b(g);
      std::string why;
      ir::NodeId r = op == ir::OpKind::If ? ir::lower_if(b, id, ctx.options.decompose, why)
                                          : ir::lower_while(b, id, ctx.options.decompose, why);
      if (!r.valid())
        throw Error("lower-control-flow: cannot lower " + ir::describe(g, id) + ": " + why);
      g.replace_all_uses(id, r);
      any = true;
    }
    if (!any)
      break;
    g.compact();
    changed = true;
    if (round > 64)
      throw Error("lower-control-flow: control flow nested deeper than 64 levels");
  }
  return changed;
}

} // namespace rlx::compile
