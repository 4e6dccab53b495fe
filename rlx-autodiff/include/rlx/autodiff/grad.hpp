// grad.hpp: reverse-mode differentiation of a graph (grad_with_loss) and the AD pre-pass.
#pragma once

#include "rlx/ir/error.hpp"
#include "rlx/ir/graph.hpp"

#include <string>
#include <vector>

namespace rlx::autodiff {

/// A graph could not be differentiated (no rule for an op on the path to a wrt, a loss that is not
/// a float scalar, an unknown wrt name, a wrt that receives no gradient under
/// MissingGradient::error). The message names the node or leaf.
class AutodiffError : public Error {
public:
  using Error::Error;
};

/// What grad_with_loss does for a wrt leaf that no gradient reaches (unused, or reached only
/// through non-differentiable ops such as Compare or ArgMax).
enum class MissingGradient : std::uint8_t {
  error, ///< throw AutodiffError naming the leaf (the default, like torch.autograd.grad)
  zeros, ///< its gradient output is zeros of its type
};

/// Options of grad_with_loss.
struct GradOptions {
  /// Which output of the forward graph is the loss (a float value with one element).
  std::size_t loss_output = 0;
  MissingGradient on_missing = MissingGradient::error;
};

/// One leaf to differentiate with respect to, by interface name (names survive every rewrite of
/// the prepare step; node ids do not).
struct Wrt {
  std::string name;
  bool param = true; ///< a Param (true) or an Input (false)
};

/// \returns every float Param of \p g, in list order (the usual wrt of a training step).
std::vector<Wrt> float_params(const ir::Graph& g);

/// The AD pre-pass: lowers HIR block ops to MIR primitives (lower_hir), then replaces every
/// float-valued op that has no VJP rule but has a decomposition in rlx-ir's table (While as a
/// bounded unroll, fused ops) by that decomposition. Every other op reaches the walk and is
/// differentiated by its rule (If by a VJP If, CustomFn by its VJP body or its inlined body).
/// \returns a verified graph with the same interface (inputs, params, outputs).
ir::Graph prepare_graph_for_ad(const ir::Graph& g);

/// Reverse-mode gradient of the scalar loss \p opts.loss_output of \p forward with respect to each
/// leaf of \p wrt (float Params or Inputs).
///
/// \returns one verified MIR graph with the forward's inputs and params and the outputs
/// `[loss, d loss / d wrt[0], ..., d loss / d wrt[n-1]]` (each gradient of its leaf's type). The
/// forward nodes are computed once and their values read by the backward nodes (no second forward
/// copy); ops whose rule goes through a decomposition recompute that op's internals only (like
/// flash attention's backward). The other outputs of \p forward are dropped. Throws AutodiffError
/// (see its doc) and never crashes on a graph that verifies.
ir::Graph grad_with_loss(const ir::Graph& forward, const std::vector<Wrt>& wrt,
                         const GradOptions& opts = {});

/// The same, with wrt given as Input / Param node ids of \p forward.
ir::Graph grad_with_loss(const ir::Graph& forward, const std::vector<ir::NodeId>& wrt,
                         const GradOptions& opts = {});

} // namespace rlx::autodiff
