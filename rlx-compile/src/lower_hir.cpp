// lower_hir.cpp: the lower-hir pass, HIR block ops replaced by their MIR decomposition
// (rlx::ir::lower_hir; the decompositions themselves live in rlx-ir next to the ops).
#include "rlx/compile/passes.hpp"

#include "rlx/ir/hir.hpp"

namespace rlx::compile {

bool LowerHirPass::run(ir::Graph& g, fusion::PassContext&) {
  if (!ir::has_hir_ops(g))
    return false;
  g = ir::lower_hir(g);
  return true;
}

} // namespace rlx::compile
