// control.cpp: reference kernels of the leaves, control flow (If, While), extension ops (Custom,
// CustomFn) and HIR blocks (evaluated through their MIR decomposition).
#include "kernels.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/hir.hpp"

namespace rlx::ir::reference::kernels {
namespace {

/// Evaluates HIR block \p node by decomposing it into MIR primitives in a temporary graph whose
/// Inputs have the operands' types, then evaluating that graph.
Tensor evaluate_hir(const Node& node, const Shape& out, Args in) {
  Graph g(std::string(op_name(node.op)) + "_decomposition");
  Builder b(g);
  std::vector<NodeId> args;
  for (std::size_t i = 0; i < in.size(); ++i)
    args.push_back(b.input("arg" + std::to_string(i), in[i].shape()));
  Node bound = node; // the decomposition sees the static type
  bound.shape = out;
  b.output(decompose_hir(b, bound, args));
  return evaluate_positional(g, in).at(0);
}

} // namespace

RLX_REFERENCE_KERNEL(Input) {
  fail("input '" + node.attr<LeafAttrs>().name +
       "' has no operands to evaluate; evaluate() binds it by name");
}

RLX_REFERENCE_KERNEL(Param) {
  fail("param '" + node.attr<LeafAttrs>().name +
       "' has no operands to evaluate; evaluate() binds it by name");
}

RLX_REFERENCE_KERNEL(Constant) {
  return node.attr<ConstantAttrs>().value.clone();
}

RLX_REFERENCE_KERNEL(If) {
  // Only the chosen branch runs, on the captures.
  const auto& a = node.attr<IfAttrs>();
  bool pred = in[0].get_i64(0) != 0;
  return evaluate_positional(pred ? *a.then_branch : *a.else_branch, in.subspan(1)).at(0);
}

RLX_REFERENCE_KERNEL(While) {
  // cond is tested before every body run; the body runs at most max_iterations times (then the
  // loop stops even if cond still holds).
  const auto& a = node.attr<WhileAttrs>();
  std::vector<Tensor> carries(in.begin(), in.end());
  for (std::int64_t it = 0; it < a.max_iterations; ++it) {
    Tensor c = evaluate_positional(*a.cond, carries).at(0);
    if (c.get_i64(0) == 0)
      break;
    carries = evaluate_positional(*a.body, carries);
  }
  return carries[static_cast<std::size_t>(a.output_index)].clone();
}

RLX_REFERENCE_KERNEL(Custom) {
  const auto& a = node.attr<CustomAttrs>();
  const CustomOpDef* def = CustomOpRegistry::global().find(a.name);
  if (def == nullptr)
    fail("custom op '" + a.name + "' is not registered");
  Tensor r = def->reference(in, a, out);
  if (r.empty() || !(r.shape() == out))
    fail("custom op '" + a.name + "': its reference kernel returned " +
         (r.empty() ? std::string("no value") : r.shape().str()) + " for a node of type " +
         out.str());
  return r;
}

RLX_REFERENCE_KERNEL(CustomFn) {
  return evaluate_positional(*node.attr<CustomFnAttrs>().body, in).at(0);
}

RLX_REFERENCE_KERNEL(ElementwiseRegion) {
  // A region with several results is tuple-typed and evaluated by tuple_kernel (tuple.cpp).
  return evaluate_positional(*node.attr<RegionAttrs>().body, in).at(0);
}

RLX_REFERENCE_KERNEL(Linear) {
  return evaluate_hir(node, out, in);
}
RLX_REFERENCE_KERNEL(AttentionBlock) {
  return evaluate_hir(node, out, in);
}
RLX_REFERENCE_KERNEL(SwiGluFfn) {
  return evaluate_hir(node, out, in);
}
RLX_REFERENCE_KERNEL(BertLayer) {
  return evaluate_hir(node, out, in);
}
RLX_REFERENCE_KERNEL(LlamaBlock) {
  return evaluate_hir(node, out, in);
}

} // namespace rlx::ir::reference::kernels
