// lower_dot_general.cpp: the lower-dot-general pass, DotGeneral to Transpose / Reshape / MatMul
// through rlx-ir's decomposition ir::lower_dot_general (rlx-ir/src/decompose/linalg.cpp says
// how). A DotGeneral it cannot lower (a merged group with a symbolic dim) is an error naming it.
#include "rlx/compile/passes.hpp"

#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::compile {

bool LowerDotGeneralPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  bool changed = false;
  const std::size_t n = g.size();
  for (std::uint32_t i = 0; i < n; ++i) {
    const ir::NodeId id(i);
    if (g.node(id).op != ir::OpKind::DotGeneral || g.use_count(id) == 0)
      continue;
    ir::Builder b(g);
    std::string why;
    ir::NodeId r = ir::lower_dot_general(b, id, ctx.options.decompose, why);
    if (!r.valid())
      throw Error("lower-dot-general: cannot lower " + ir::describe(g, id) + ": " + why);
    g.replace_all_uses(id, r);
    changed = true;
  }
  if (changed)
    g.compact();
  return changed;
}

} // namespace rlx::compile
