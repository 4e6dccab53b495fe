// vmap.hpp: vectorisation of a graph over a batch axis (vmap) and its batching rule table.
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"

#include <optional>
#include <string>
#include <vector>

namespace rlx::autodiff {

/// One Input of the graph that vmap batches, and where its batch axis lies in the values the caller
/// feeds (negative counts from the end of the batched rank).
struct BatchedInput {
  std::string name;
  std::int64_t axis = 0;
};

/// What a batching rule sees. Inside the batched graph every batched value carries the batch dim at
/// axis 0 (the canonical position); an unbatched value is the unbatched graph's value, unchanged.
struct VmapContext {
  ir::Builder& b;
  ir::Node node;              ///< the original node (copy; its shape is the per-example type)
  std::vector<ir::NodeId> in; ///< the operands in the batched graph
  std::vector<bool> batched;  ///< batched[i]: operand i carries the batch dim at axis 0
  ir::Dim size;               ///< the batch size
  std::string where;          ///< the node, described for messages ("gather %7")

  /// Operand \p i with the batch dim: itself when batched, else broadcast to [B, ...] (an Expand:
  /// only rules whose op cannot broadcast an operand call it).
  ir::NodeId lifted(std::size_t i);
  /// Batched operand \p i reshaped to per-example rank \p rank by inserting 1s after the batch dim
  /// ([B, s...] -> [B, 1, .., 1, s...], a view), so NumPy broadcasting aligns the batch dims;
  /// unbatched operands are returned unchanged (they broadcast against [B, ...] as they are).
  ir::NodeId aligned(std::size_t i, std::size_t rank);
  /// The per-example rank of operand \p i.
  std::size_t rank(std::size_t i) const;
  /// Throws AutodiffError "vmap: <where>: <why>".
  [[noreturn]] void fail(const std::string& why) const;
};

/// A batching rule: \returns the node's batched value (batch dim at axis 0; for a tuple-typed node,
/// every part has it). Called only when at least one operand is batched.
using BatchFn = ir::NodeId (*)(VmapContext&);

/// One row of the batching table. Exactly one of the three ways holds for every non-leaf op of
/// ops.def (the completeness test checks it).
struct BatchRule {
  BatchFn fn = nullptr; ///< a closed-form rule
  /// The op is batched through its decomposition into other ops (HIR blocks, fused ops,
  /// ElementwiseRegion), which vmap applies before the walk to the nodes that see a batched value.
  bool via_decomposition = false;
  /// Per-node: a rule with \p fn may still need the decomposition for some operand combinations
  /// (Conv2d with a batched weight, If with a batched predicate, While whose condition reads a
  /// batched carry); bit i of \p batched is operand i.
  bool (*decompose_when)(const ir::Node& node, std::uint32_t batched) = nullptr;
  /// Why the op cannot be batched (Custom: its kernel sees one example); vmap over it is an
  /// AutodiffError naming the node and this reason. Null for batchable ops.
  const char* unbatchable = nullptr;
};

/// The batching rule of \p op, or nullptr for leaves (the walk handles them).
const BatchRule* batch_rule(ir::OpKind op);

/// The symbol of the batch dim when VmapOptions::size is not given.
inline constexpr const char* kVmapBatchSymbol = "vmap_batch";

/// Options of vmap.
struct VmapOptions {
  /// The batch size: static when given, else the symbol kVmapBatchSymbol (bound by the values fed).
  /// Rules that fold the batch into another dim (Attention, Rope, Conv2d, Pool2d,
  /// SoftmaxCrossEntropy, Gather / ScatterAdd with batched indices and data) need it static.
  std::optional<std::int64_t> size;
  /// Where the batch dim goes in every output (negative counts from the end of the output's
  /// batched rank). An output that does not depend on a batched input is broadcast along it.
  std::int64_t out_axis = 0;
};

/// Vectorises \p g over a batch: each Input named in \p batched takes an extra dim at its axis,
/// the same size for all of them, and the result computes \p g on every slice along it (JAX's
/// vmap). Params, Constants and the other Inputs are shared by all slices (unbatched values are
/// never copied per slice unless an op cannot broadcast them: Concat, DenseSolve, ScatterAdd,
/// Attention's and Conv2d's folded batch). To batch a weight, make it an Input first
/// (promote_params_to_inputs).
///
/// Control flow: an If with an unbatched predicate becomes an If of the vmapped branches; one with
/// a batched predicate is lowered to a select of both branches (an AutodiffError when a branch can
/// fail or has effects); a While whose condition reads only unbatched carries stays a While over
/// the vmapped body, one whose condition reads a batched carry is unrolled with per-slice guards
/// (rlx-ir's lower_while; an AutodiffError when its body can fail).
/// \returns a verified MIR graph with the same interface names. Throws AutodiffError naming the
/// Input or the node (an unknown name, a Param, batch sizes that differ, an unbatchable op).
ir::Graph vmap(const ir::Graph& g, const std::vector<BatchedInput>& batched,
               const VmapOptions& opts = {});

} // namespace rlx::autodiff
