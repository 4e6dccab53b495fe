// kernels.hpp (private): one reference kernel per row of ops.def.
//
// The dispatch switch in interpreter.cpp is generated from ops.def and calls `kernels::<Name>` for
// every op, and the declarations below are generated from the same table, so an op added to the
// table without a kernel definition does not link. Every kernel receives the node (for its
// attributes), the node's static output type \p out (already re-derived from the operand types) and
// the operand values, and returns a fresh tensor of type \p out. Kernels throw EvalError (through
// fail()) on values the op rejects.
#pragma once

#include "common.hpp"

namespace rlx::ir::reference::kernels {

#define RLX_REFERENCE_KERNEL(Name)                                                                 \
  Tensor Name([[maybe_unused]] const Node& node, [[maybe_unused]] const Shape& out,                \
              [[maybe_unused]] Args in)

// One declaration per row of ops.def. Definitions, by family: leaves, control flow, extension and
// HIR blocks (control.cpp); elementwise (elementwise.cpp); quantization (quantize.cpp); linear
// algebra (linalg.cpp); movement (movement.cpp); reductions, normalisation and losses (reduce.cpp,
// norm.cpp); attention and positions (attention.cpp); convolution (conv.cpp).
#define RLX_OP(Name, ...) RLX_REFERENCE_KERNEL(Name);
#include "rlx/ir/ops.def"

} // namespace rlx::ir::reference::kernels

namespace rlx::ir::reference {

/// The parts of a tuple-typed node (an op with several results) of static tuple type \p out, one
/// fresh tensor per part (tuple.cpp). Throws EvalError for an op that has no tuple result.
std::vector<Tensor> tuple_kernel(const Node& node, const Shape& out, Args in);

/// Evaluates \p node (of type \p out) through its first applicable decomposition, emitted over
/// Inputs of the operands' types into a temporary graph: one tensor for a single-result op, one
/// per part for a tuple-typed op (fused.cpp). The reference of the fused and backward ops.
std::vector<Tensor> evaluate_by_decomposition(const Node& node, const Shape& out, Args in);

} // namespace rlx::ir::reference
