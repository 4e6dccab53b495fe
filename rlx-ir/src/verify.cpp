// verify.cpp: the IR verifier: structure, attributes, leaf names, re-derived types, sub-graphs.
#include "rlx/ir/verify.hpp"

#include "attr_visit.hpp"
#include "rlx/ir/error.hpp"

#include <set>

namespace rlx::ir {

namespace {

class Verifier {
public:
  Verifier(const Graph& g, const VerifyOptions& opts) : g_(g), opts_(opts) {}

  void run() {
    std::set<std::string> input_names, param_names;
    for (NodeId id : g_.ids())
      node(id, input_names, param_names);
    if (g_.outputs().empty())
      throw VerifyError(where() + "has no outputs");
    for (std::size_t i = 0; i < g_.outputs().size(); ++i) {
      NodeId o = g_.outputs()[i];
      if (!o.valid() || o.v >= g_.size())
        throw VerifyError(where() + "output " + std::to_string(i) + " is %" + std::to_string(o.v) +
                          ", which does not exist (graph has " + std::to_string(g_.size()) +
                          " nodes)");
      if (g_.shape(o).is_tuple())
        throw VerifyError(where() + "output " + std::to_string(i) + " is " + describe(g_, o) +
                          " of the tuple type " + g_.shape(o).str() +
                          "; a graph output must be a tensor (return its parts through get)");
    }
    aliases();
  }

private:
  /// Each in-place update names an existing output and an existing Param of the output's type,
  /// and no output or Param is updated twice.
  void aliases() const {
    std::set<std::uint32_t> outs;
    std::set<std::string> params;
    for (const OutputAlias& a : g_.aliases()) {
      const std::string what =
          "alias of output " + std::to_string(a.output) + " to param '" + a.param + "': ";
      if (a.output >= g_.outputs().size())
        throw VerifyError(where() + what + "the graph has " + std::to_string(g_.outputs().size()) +
                          " outputs");
      NodeId p = g_.find_leaf(a.param, true);
      if (!p.valid())
        throw VerifyError(where() + what + "the graph has no param of that name");
      NodeId o = g_.outputs()[a.output];
      if (!(g_.shape(o) == g_.shape(p)))
        throw VerifyError(where() + what + "the output " + describe(g_, o) + " has type " +
                          g_.shape(o).str() + ", the param " + g_.shape(p).str());
      if (!outs.insert(a.output).second)
        throw VerifyError(where() + what + "the output already updates another param");
      if (!params.insert(a.param).second)
        throw VerifyError(where() + what + "the param is already updated by another output");
    }
  }

  const Graph& g_;
  const VerifyOptions& opts_;

  std::string where() const { return "graph @" + g_.name() + ": "; }

  [[noreturn]] void fail(NodeId id, const std::string& rule) const {
    throw VerifyError(where() + describe(g_, id) + ": " + rule);
  }

  void node(NodeId id, std::set<std::string>& input_names, std::set<std::string>& param_names) {
    const Node& n = g_.node(id);
    if (static_cast<int>(n.op) >= kNumOps)
      throw VerifyError(where() + "%" + std::to_string(id.v) + ": op kind " +
                        std::to_string(static_cast<int>(n.op)) + " is not in the op table");
    const OpInfo& info = op_info(n.op);
    if (is_hir(n.op) && !opts_.allow_hir)
      fail(id, "HIR block op at a stage that allows only MIR ops (lower it with lower_hir)");

    auto arity = static_cast<int>(n.inputs.size());
    if (arity < info.min_arity || (info.max_arity >= 0 && arity > info.max_arity))
      fail(id, "has " + std::to_string(arity) + " operands; the op takes " +
                   (info.max_arity == info.min_arity ? std::to_string(info.min_arity)
                    : info.max_arity < 0             ? "at least " + std::to_string(info.min_arity)
                                                     : std::to_string(info.min_arity) + " to " +
                                               std::to_string(info.max_arity)));

    if (n.attrs.index() != info.attrs_index)
      fail(id, "carries the wrong attribute struct for this op (alternative " +
                   std::to_string(n.attrs.index()) + ", ops.def says " +
                   std::to_string(info.attrs_index) + ")");

    for (std::size_t i = 0; i < n.inputs.size(); ++i) {
      NodeId in = n.inputs[i];
      if (!in.valid() || in.v >= g_.size())
        fail(id, "operand " + std::to_string(i) + " is %" +
                     (in.valid() ? std::to_string(in.v) : std::string("<invalid>")) +
                     ", which does not exist (graph has " + std::to_string(g_.size()) + " nodes)");
      if (in.v >= id.v)
        fail(id, "operand " + std::to_string(i) + " is %" + std::to_string(in.v) +
                     ", which is not defined before the node (the node list must be in "
                     "topological order)");
    }

    if (n.op == OpKind::Input || n.op == OpKind::Param) {
      const auto& leaf = n.attr<LeafAttrs>();
      if (leaf.name.empty())
        fail(id, "leaf has an empty interface name");
      auto& names = n.op == OpKind::Input ? input_names : param_names;
      if (!names.insert(leaf.name).second)
        fail(id, "a second " + std::string(info.name) + " named '" + leaf.name +
                     "' (interface names must be unique per kind)");
    }
    if (n.op == OpKind::Constant && n.attr<ConstantAttrs>().value.empty())
      fail(id, "constant holds no tensor");

    detail::visit_attr_fields(n.attrs, [&](std::string_view field, const auto& f) {
      if constexpr (std::is_same_v<std::decay_t<decltype(f)>, SubGraph>) {
        if (!f)
          return;
        try {
          Verifier(*f, opts_).run();
        } catch (const VerifyError& e) {
          fail(id, "in sub-graph '" + std::string(field) + "': " + e.what());
        }
      }
    });

    std::vector<Shape> in_shapes;
    in_shapes.reserve(n.inputs.size());
    for (NodeId in : n.inputs)
      in_shapes.push_back(g_.shape(in));
    for (std::size_t i = 0; i < in_shapes.size(); ++i)
      if (in_shapes[i].is_tuple() && n.op != OpKind::Get)
        fail(id, "operand " + std::to_string(i) + " is " + describe(g_, n.inputs[i]) +
                     " of the tuple type " + in_shapes[i].str() + "; only get may read a tuple");
    for (const Shape& p : n.shape.parts)
      if (p.is_tuple())
        fail(id, "declared type " + n.shape.str() + " nests a tuple in a tuple");
    Shape derived;
    try {
      derived = infer_shape(n.op, in_shapes, n.attrs);
    } catch (const ShapeError& e) {
      fail(id, std::string("attributes or operand types are invalid: ") + e.what());
    }
    if (!(derived == n.shape))
      fail(id, "declared type " + n.shape.str() + " but the shape rule derives " + derived.str());
  }
};

} // namespace

void verify(const Graph& g, const VerifyOptions& opts) {
  Verifier(g, opts).run();
}

} // namespace rlx::ir
