// transforms.hpp: higher-order gradients, params promoted to inputs, and the module forms of the
// autodiff transforms.
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/autodiff/jvp.hpp"
#include "rlx/autodiff/vmap.hpp"
#include "rlx/ir/module.hpp"

#include <string>
#include <vector>

namespace rlx::autodiff {

/// The derivatives of order 1..\p n of a scalar function: \p g's output \p opts.loss_output (one
/// float element) with respect to the one-element float leaf \p wrt, by repeated reverse mode
/// (each order differentiates the previous order's derivative output). Each order's graph is
/// simplified (constant folding of the seeds, CSE, DCE) before the next, so the graph grows with
/// the derivative's own size, not exponentially with the order.
/// \returns a verified MIR graph with \p g's inputs and params and the outputs
/// `[f, f', f'', ..., f^(n)]` (each of the loss's type). Throws AutodiffError when \p n < 1, the
/// loss or \p wrt has more than one element, or a derivative cannot be formed (as grad_with_loss).
ir::Graph nth_order_grad(const ir::Graph& g, const Wrt& wrt, int n, const GradOptions& opts = {});

/// \returns \p g with the Params named in \p names turned into Inputs of the same name and type
/// (same topology; the other Params stay). Used to batch weights with vmap (per-example or
/// per-model weights) and by callers that feed weights as inputs. Throws AutodiffError naming an
/// unknown Param or a name an Input already has.
ir::Graph promote_params_to_inputs(const ir::Graph& g, const std::vector<std::string>& names);

/// Module forms: a HIR or MIR module in, a MIR module out (HIR blocks are lowered first, as
/// prepare_graph_for_ad does). An LIR module (planned memory, scheduled) is an AutodiffError:
/// transform the MIR it was compiled from instead.
ir::Module prepare_module_for_ad(const ir::Module& m);
ir::Module grad_with_loss(const ir::Module& m, const std::vector<Wrt>& wrt,
                          const GradOptions& opts = {});
ir::Module jvp(const ir::Module& m, const std::vector<Wrt>& wrt);
ir::Module hvp(const ir::Module& m, const std::vector<Wrt>& wrt, const GradOptions& opts = {});
ir::Module vmap(const ir::Module& m, const std::vector<BatchedInput>& batched,
                const VmapOptions& opts = {});
ir::Module nth_order_grad(const ir::Module& m, const Wrt& wrt, int n, const GradOptions& opts = {});
/// Promotes Params to Inputs in a HIR or MIR module; the stage is kept.
ir::Module promote_params_to_inputs(const ir::Module& m, const std::vector<std::string>& names);

} // namespace rlx::autodiff
