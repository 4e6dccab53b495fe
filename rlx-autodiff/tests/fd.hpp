// fd.hpp: finite-difference checking of grad_with_loss in f64 with the reference interpreter.
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/reference.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rlx::autodiff::testing {

using ir::reference::TensorMap;

/// \p g with every float type switched to f64 (leaves, constants, Cast targets, sub-graphs); a
/// node whose op fixes a narrower float result (Dequantize) is followed by a Cast to f64.
ir::Graph to_f64(const ir::Graph& g);
/// Float tensors of \p m cast to f64 (others unchanged).
TensorMap to_f64(const TensorMap& m);

/// A scalar loss over a forward graph: loss = sum over the forward's float outputs k of
/// sum(output_k * weights[k]), each weight a fixed random tensor (every output element gets its
/// own cotangent).
struct WeightedLoss {
  ir::Graph forward;
  ir::Graph loss;                  ///< forward plus the weighted sum; its one output is the loss
  std::vector<ir::Tensor> weights; ///< per forward output; empty for a non-float output
  bool empty() const { return loss.size() == 0; }
};
/// Builds the WeightedLoss of \p g (empty when \p g has no float output).
WeightedLoss weighted_sum_loss(const ir::Graph& g, std::uint64_t seed);

/// Every float Input / Param of \p g that feeds an operand slot declared differentiable (masks,
/// indices and labels are left out, through the rule table's declarations).
std::vector<Wrt> differentiable_leaves(const ir::Graph& g);

/// Result of one finite-difference check.
struct FdResult {
  double max_err = 0; ///< max over checked elements of |ad - fd| / max(1, |fd|)
  std::string worst;  ///< where max_err was reached
  std::int64_t checked = 0;
  std::int64_t kinks = 0; ///< elements skipped: a non-differentiable point lies within the step
};

/// Compares grad_with_loss(\p l.loss, \p wrt) with central differences of step \p h on at most
/// \p per_leaf elements of every wrt leaf (spread evenly; all of them when the leaf is smaller).
/// The difference is taken on the forward's outputs and contracted with the weights afterwards,
/// so elements the perturbation does not change contribute exactly 0 (no rounding noise from
/// summing a large loss). The graphs must be f64.
FdResult check_gradients(const WeightedLoss& l, const TensorMap& inputs, const TensorMap& params,
                         const std::vector<Wrt>& wrt, std::int64_t per_leaf = 16, double h = 1e-5);

/// Central-difference step for a dtype: about cbrt(u) of its unit roundoff u, which balances the
/// O(h^2) truncation error against the O(u / h) rounding error of the loss.
double fd_step(ir::DType t);

} // namespace rlx::autodiff::testing

namespace rlx::autodiff::testing {

/// Compares jvp(\p g, \p wrt) along random tangents with central differences of \p g's outputs
/// along the same direction (all wrt leaves moved together by h times their tangent). Elements
/// whose one-sided differences disagree (a kink within h) are skipped and counted.
FdResult check_jvp(const ir::Graph& g, const TensorMap& inputs, const TensorMap& params,
                   const std::vector<Wrt>& wrt, double h = 1e-5);

/// Compares hvp(\p loss_graph, \p wrt) along random vectors with central differences of the
/// gradient (grad_with_loss evaluated at x + h v and x - h v).
FdResult check_hvp(const ir::Graph& loss_graph, const TensorMap& inputs, const TensorMap& params,
                   const std::vector<Wrt>& wrt, double h = 1e-5);

} // namespace rlx::autodiff::testing
