// dce.cpp: the dce pass. Graph::compact() removes every node no graph output depends on, except
// Inputs and Params: they are the graph's interface and stay even when unused, so DCE never
// changes what a caller must bind. Graph outputs are never removed (use counts include them).
#include "rlx/compile/passes.hpp"

#include "graph_util.hpp"

namespace rlx::compile {

bool DcePass::run(ir::Graph& g, fusion::PassContext&) {
  return detail::compact_changed(g);
}

} // namespace rlx::compile
