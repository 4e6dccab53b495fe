// jvp.hpp: forward-mode differentiation (jvp), its rule table, and hvp (forward over reverse).
#pragma once

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"

#include <functional>
#include <span>
#include <string>
#include <vector>

namespace rlx::autodiff {

/// What a JVP rule sees: the node (a copy), its value and operands, and the operands' tangents.
struct JvpContext {
  ir::Builder& b;
  ir::Node node;               ///< the forward node (copy)
  ir::NodeId self;             ///< its value
  std::vector<ir::NodeId> in;  ///< its operands
  std::vector<ir::NodeId> tin; ///< their tangents; invalid = zero
  /// Emits the op's decomposition into primitives (through \p emit, reading the operands) and
  /// pushes the tangents through it with the table's rules; \returns the output's tangent.
  std::function<ir::NodeId(
      const std::function<ir::NodeId(ir::Builder&, std::span<const ir::NodeId>)>& emit)>
      decompose;
};

/// A JVP rule: \returns the tangent of the node's value (of its type), or an invalid id for zero.
using JvpFn = ir::NodeId (*)(JvpContext&);

/// One row of the JVP table.
struct JvpRule {
  JvpFn fn = nullptr;
  bool via_decomposition = false; ///< pushes tangents through the op's primitive form
};

/// The JVP rule of \p op, or nullptr.
const JvpRule* jvp_rule(ir::OpKind op);

/// The name of the tangent Input that jvp() adds for leaf \p name: "tangent_<name>".
std::string tangent_name(const std::string& name);

/// Forward-mode derivative of \p forward along tangents of the leaves \p wrt (float Params or
/// Inputs). \returns a verified MIR graph with the forward's inputs and params plus one Input
/// `tangent_<name>` of the leaf's type per wrt (in wrt order), and the outputs
/// `[forward outputs..., their tangents...]` (a tangent of zeros where an output does not depend
/// on any wrt; integer outputs get zeros). Throws AutodiffError like grad_with_loss.
ir::Graph jvp(const ir::Graph& forward, const std::vector<Wrt>& wrt);

/// Hessian-vector product by forward over reverse: the JVP of grad_with_loss(\p forward, \p wrt).
/// \returns a graph with the forward's inputs and params plus the Inputs `tangent_<name>` (the
/// vector v, one part per wrt leaf) and the outputs `[loss, grad_0..grad_{n-1}, (H v)_0..(H
/// v)_{n-1}]`.
ir::Graph hvp(const ir::Graph& forward, const std::vector<Wrt>& wrt, const GradOptions& opts = {});

} // namespace rlx::autodiff
