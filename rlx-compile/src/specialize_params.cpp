// specialize_params.cpp: the specialize-params pass. Each param named in the context's
// specialize_params map becomes a Constant holding the given tensor, and the param leaves the
// graph's interface (so the compiled graph no longer asks for it). Constant folding then
// propagates the values. A name that is not a param of the graph, or a tensor whose type differs
// from the param's declared type, is an error: silently ignoring a misspelled name would compile
// a graph that still expects the weight at run time.
#include "rlx/compile/passes.hpp"

#include "graph_util.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::compile {

bool SpecializeParamsPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  if (!ctx.specialize_params || ctx.specialize_params->empty())
    return false;
  std::vector<ir::NodeId> params;
  for (const auto& [name, value] : *ctx.specialize_params) {
    ir::NodeId p = g.find_leaf(name, /*param=*/true);
    if (!p.valid()) {
      std::string known;
      for (ir::NodeId q : g.params())
        known += (known.empty() ? "'" : ", '") + g.node(q).attr<ir::LeafAttrs>().name + "'";
      throw Error("specialize-params: graph '" + g.name() + "' has no param '" + name +
                  "' (params: " + (known.empty() ? std::string("none") : known) + ")");
    }
    const ir::Shape& want = g.shape(p);
    if (!(value.shape() == want))
      throw Error("specialize-params: param '" + name + "' has type " + want.str() +
                  " but the given tensor is " +
                  (value.empty() ? std::string("empty") : value.shape().str()));
    params.push_back(p);
  }
  ir::Builder b(g);
  for (ir::NodeId p : params) {
    const std::string name = g.node(p).attr<ir::LeafAttrs>().name;
    ir::NodeId c = b.constant(ctx.specialize_params->at(name), name);
    g.replace_all_uses(p, c);
  }
  // The params are dead now; compact() keeps leaves, so drop them explicitly.
  g.compact();
  std::vector<char> drop(g.size(), 0);
  for (ir::NodeId id : g.params())
    if (ctx.specialize_params->contains(g.node(id).attr<ir::LeafAttrs>().name))
      drop[id.v] = 1;
  detail::erase_unused(g, drop);
  return true;
}

} // namespace rlx::compile
