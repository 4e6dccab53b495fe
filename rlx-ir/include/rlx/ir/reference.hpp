// reference.hpp: the reference interpreter, the semantics oracle of every op.
//
// Slow and simple on purpose: it evaluates one node at a time on host tensors, floats in double
// precision and integers in int64, rounding to the node's dtype after each op. Constant folding,
// every backend and every pass are tested against it.
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/tensor.hpp"

#include <map>
#include <span>
#include <string>
#include <vector>

namespace rlx::ir::reference {

/// Tensors by interface name.
using TensorMap = std::map<std::string, Tensor>;

/// Evaluates every output of \p g. Inputs and params are looked up by name; symbolic dims are bound
/// from the inputs' actual shapes. Throws EvalError on a missing or mistyped input / param, on an
/// input name the graph does not have (extra params are ignored: a weight file may hold more), and
/// on a value an op rejects (the message names the node). The outputs never share a buffer with
/// the inputs, the params or each other.
std::vector<Tensor> evaluate(const Graph& g, const TensorMap& inputs, const TensorMap& params = {});

/// Evaluates one non-leaf node of type \p node.shape on operand values \p args. The result type is
/// re-derived from the operands' types (so a node with symbolic dims evaluates on static operands);
/// throws EvalError when the operands do not fit the op or the node's type. A Constant gives a
/// copy of its value; an Input or Param throws (evaluate() binds them by name).
Tensor evaluate_node(const Node& node, std::span<const Tensor> args);

/// Evaluates one non-leaf node like evaluate_node, giving its parts: a node of tuple type (an op
/// with several results, such as Split) gives one tensor per part, any other node a single
/// tensor. Get is not evaluated here: it selects part `index` of the value its operand gave
/// (evaluate() does so). evaluate_node throws EvalError on a tuple-typed node and on Get.
std::vector<Tensor> evaluate_node_parts(const Node& node, std::span<const Tensor> args);

/// The symbol bindings implied by matching \p g's Input (and Param) types against the given
/// tensors; throws EvalError on a missing tensor, a dtype / rank / size mismatch or a contradictory
/// symbol.
Bindings bind_inputs(const Graph& g, const TensorMap& inputs, const TensorMap& params = {});

} // namespace rlx::ir::reference
