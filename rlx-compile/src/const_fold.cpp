// const_fold.cpp: the const-fold pass, constant folding through the reference interpreter.
//
// One walk in topological order: a non-leaf node whose operands are all Constants is evaluated
// with rlx::ir::reference::evaluate_node (the semantics oracle, so folding is exact for every
// dtype and every op the interpreter knows) and replaced by a Constant holding the result. Folded
// nodes feed later nodes in the same walk, so whole constant subtrees fold at once.
//
// Decisions:
//  - Work: a node whose estimated work (work_estimate.hpp: M*N*K for a MatMul, max_iterations
//    times cond + body for a While, ...) exceeds PassOptions::fold_max_work is not folded, so
//    compile time stays bounded (the reference interpreter computes in double, one element at a
//    time; the bound and its measurement are in DESIGN.md).
//  - Size: a result is folded only when it has at most PassOptions::fold_max_elements elements
//    (4096 by default) or no more bytes than its constant operands together. Folding a transpose
//    of a constant weight is free, but folding expand(scalar) into a [128, 768] tensor would trade
//    one cheap kernel for 384 KiB of constant data in every executable, and cast(i8 -> f32) of a
//    weight would hold it at 4x its bytes.
//  - Never folded: Dequantize. Its constant i8 operand is a quantised weight that a backend's
//    int8 path reads; folding would silently turn it back into the f32 weight.
//  - Tuple-typed nodes (several results) fold part by part: each Get of a part small enough by the
//    rule above becomes a Constant; the tuple node goes when no Get reads it any more.
//  - Not folded: nodes with effects (ir::has_effects; a pure Custom op folds through its
//    registered reference kernel), nodes whose type is symbolic (the
//    value's size is unknown until binding), and nodes the interpreter refuses (an integer
//    division by zero, an out-of-range gather): they stay in the graph so the error surfaces
//    where the graph runs, not as a compile failure of a branch that may never execute.
#include "const_fold_tuple.hpp"
#include "rlx/compile/passes.hpp"
#include "rlx/ir/effects.hpp"

#include "work_estimate.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

namespace rlx::compile {

bool ConstFoldPass::run(ir::Graph& g, fusion::PassContext& ctx) {
  bool changed = false;
  const std::size_t n = g.size();
  std::vector<ir::Tensor> args;
  for (std::uint32_t i = 0; i < n; ++i) {
    const ir::NodeId id(i);
    const ir::Node& node = g.node(id);
    if (ir::is_leaf(node.op) || ir::has_effects(node) || node.op == ir::OpKind::Dequantize ||
        !node.shape.is_static() || g.use_count(id) == 0)
      continue;
    args.clear();
    std::int64_t operand_bytes = 0;
    std::int64_t operand_elements = 0;
    bool all_constant = true;
    for (ir::NodeId in : node.inputs) {
      const ir::Node& src = g.node(in);
      if (src.op != ir::OpKind::Constant) {
        all_constant = false;
        break;
      }
      args.push_back(src.attr<ir::ConstantAttrs>().value);
      operand_bytes += static_cast<std::int64_t>(args.back().nbytes());
      operand_elements += args.back().numel();
    }
    if (!all_constant)
      continue;
    if (detail::node_work(g, id) > static_cast<double>(ctx.options.fold_max_work))
      continue;
    if (node.shape.is_tuple()) {
      changed |= detail::fold_tuple(g, id, args, operand_elements, ctx.options.fold_max_elements);
      continue;
    }
    if (node.shape.numel() > ctx.options.fold_max_elements && node.shape.bytes() > operand_bytes)
      continue;
    ir::Tensor value;
    try {
      value = ir::reference::evaluate_node(node, args);
    } catch (const ir::EvalError&) {
      continue; // left for the backend to report when the graph runs
    }
    if (!(value.shape() == node.shape))
      throw Error("const-fold: the reference interpreter gave " + value.shape().str() + " for " +
                  ir::describe(g, id) + " of type " + node.shape.str());
    std::string label = node.name;
    ir::NodeId c = ir::Builder(g).constant(std::move(value), std::move(label));
    g.replace_all_uses(id, c);
    changed = true;
  }
  if (changed)
    g.compact();
  return changed;
}

} // namespace rlx::compile
