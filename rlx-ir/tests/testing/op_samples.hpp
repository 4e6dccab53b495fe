// op_samples.hpp: a small valid sample graph for every op of the table, and random inputs for it.
//
// Shared by the rlx-ir completeness, text, JSON and fuzz tests, the pass tests and the backend
// conformance tests. Link the rlx_ir_testing library and include "testing/op_samples.hpp".
#pragma once

#include "rlx/ir/graph.hpp"
#include "rlx/ir/reference.hpp"

#include <cstdint>
#include <string_view>
#include <vector>

namespace rlx::ir::testing {

/// The size random_inputs() and random_params() give every symbolic dim (batch, seq, ...).
inline constexpr std::int64_t kSymbolSize = 3;

/// The name of the custom op that sample_graph(OpKind::Custom) uses: `y = x * scale`, with the
/// scale read from the node's params text (a decimal number; empty means 1).
inline constexpr std::string_view kSampleCustomOp = "testing.scale";

/// Registers kSampleCustomOp in CustomOpRegistry::global() unless it is already there.
void register_sample_custom_op();

/// A small valid graph that exercises \p op with non-default attributes where the op has any
/// (symbolic dims, negative axes, transposes, GQA, masks, sub-graphs, every dtype for Constant...).
/// Its nodes carry labels and its leaves meaningful names; it verifies, and the reference
/// interpreter evaluates it to finite values on random_inputs() / random_params(). Registers the
/// sample custom op for OpKind::Custom. Throws rlx::Error when \p op has no sample yet: every new
/// row of ops.def needs one here.
Graph sample_graph(OpKind op);

/// Every op kind of the table, in table order (handy for parameterised tests).
std::vector<OpKind> all_ops();

/// The bindings random_inputs() uses: every symbol of \p g bound to kSymbolSize.
Bindings sample_bindings(const Graph& g);

/// A random value for leaf \p leaf (an Input or Param) of \p g, of its type with symbols bound by
/// sample_bindings(). The values suit the leaf's direct users:
/// - floats are uniform in [-1, 1], or in [0.5, 2] when the leaf feeds Log, Sqrt, Rsqrt,
///   Reciprocal, the base of Pow or the divisor of Div;
/// - a DenseSolve matrix gets n + 1 added to its diagonal (well conditioned);
/// - integers are uniform in [-4, 4], [1, 4] for an integer divisor, the full i8 range for
///   Dequantize, and [0, bound) when the leaf indexes (Gather / ScatterAdd indices, the labels of
///   SoftmaxCrossEntropy; bound = the indexed dim);
/// - bools and padding masks are 0 / 1 at random.
/// The same (graph, leaf name, seed) always gives the same tensor.
Tensor random_leaf(const Graph& g, NodeId leaf, std::uint64_t seed);

/// Random values for every Input of \p g, by name (see random_leaf()).
reference::TensorMap random_inputs(const Graph& g, std::uint64_t seed);
/// Random values for every Param of \p g, by name (see random_leaf()).
reference::TensorMap random_params(const Graph& g, std::uint64_t seed);

} // namespace rlx::ir::testing
