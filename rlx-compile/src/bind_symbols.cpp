// bind_symbols.cpp: the bind-symbols pass. Every symbolic dim is replaced by its size from the
// context's bindings (CompileOptions::bindings) and every shape re-derived (Graph::bind). A symbol
// left unbound is an error naming it: the memory planner needs static sizes. Bindings of symbols
// the graph does not use are ignored (a runtime may bind batch for every graph it compiles).
#include "rlx/compile/passes.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::compile {

bool BindSymbolsPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  std::vector<std::string> used = g.symbols();
  if (used.empty())
    return false;
  const ir::Bindings none;
  const ir::Bindings& b = ctx.bindings ? *ctx.bindings : none;
  std::string unbound;
  for (const auto& s : used) {
    auto it = b.find(s);
    if (it == b.end())
      unbound += (unbound.empty() ? "'" : ", '") + s + "'";
    else if (it->second < 0)
      throw Error("bind-symbols: symbol '" + s + "' is bound to a negative size " +
                  std::to_string(it->second));
  }
  if (!unbound.empty())
    throw Error("bind-symbols: graph '" + g.name() + "' has unbound symbols " + unbound +
                "; give their sizes in CompileOptions::bindings");
  g = g.bind(b);
  return true;
}

} // namespace rlx::compile
