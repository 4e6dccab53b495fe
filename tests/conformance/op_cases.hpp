// op_cases.hpp: the cross-backend conformance table (one case per op and interesting attribute
// combination: shapes, dtypes, attributes, tolerance) and the runner that compiles a case for a
// backend and compares it with the reference interpreter.
//
// A case is skipped only when the backend's claim set, after legalisation, still leaves a node
// unsupported: there are no per-backend skip lists.
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/reference.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rlx::conformance {

/// How the values of one input are drawn (deterministically, from the case's seed).
enum class Fill : std::uint8_t {
  uniform,       ///< uniform in [lo, hi), rounded to the input's dtype
  integers,      ///< integers uniform in [lo, hi] (any dtype; bool takes 0 / 1)
  nonzero,       ///< integers uniform in [lo, hi] without 0 (integer divisors)
  keep_mask,     ///< a [B, S] padding mask: 1 with probability 3/4; the last batch row all 0
  diag_dominant, ///< square matrices in the last two dims: uniform in [lo, hi) plus n on the
                 ///< diagonal
};

/// One input of a case: an Input (or a Param) node of \p type named \p name.
struct InputSpec {
  std::string name;
  ir::Shape type;
  Fill fill = Fill::uniform;
  double lo = -1.0;
  double hi = 1.0;
  bool param = false;
};

/// Elementwise acceptance |got - want| <= atol + rtol * |want| (NaNs must match NaNs), and the
/// reason those bounds hold for a correct kernel. atol = rtol = 0 demands identical values.
struct Tolerance {
  double atol = 0.0;
  double rtol = 0.0;
  std::string why;
};

/// One conformance case: a graph of the case's inputs feeding one node of \p op.
struct OpCase {
  std::string name; ///< unique, usable as a gtest parameter name
  ir::OpKind op;
  std::vector<InputSpec> inputs;
  ir::Attrs attrs;
  Tolerance tol;
  /// Builds the node from the input nodes (default: Builder::op(op, inputs, attrs)); for ops
  /// whose attributes hold sub-graphs or need a registered custom op.
  std::function<ir::NodeId(ir::Graph&, const std::vector<ir::NodeId>&)> build;
};

/// The table: every op of ops.def has at least one case.
const std::vector<OpCase>& op_cases();

/// Registers the custom ops the table's Custom cases use (idempotent; explicit, no static
/// initialisers).
void register_conformance_custom_ops();

/// The graph of case \p c: its inputs, the node under test, and that node as the only output.
ir::Graph build_graph(const OpCase& c);

/// The input and param values of case \p c (deterministic per case).
struct CaseValues {
  ir::reference::TensorMap inputs;
  ir::reference::TensorMap params;
};
CaseValues make_values(const OpCase& c);

/// What running one case on a backend gave.
struct CaseResult {
  enum class Status : std::uint8_t { passed, failed, skipped };
  Status status = Status::failed;
  std::string message;      ///< why it failed or was skipped; the error summary when it passed
  double max_abs_error = 0; ///< largest |got - want| over the output
};

/// Compiles case \p c for \p backend (CompilePipeline, constant folding and fusion off, so the op
/// itself runs), executes it and compares with rlx::ir::reference::evaluate. Never throws: errors
/// become a failed result with the message.
CaseResult run_case(const OpCase& c, const compile::Backend& backend);

/// Runs every case of the table on \p backend, in table order.
std::vector<CaseResult> run_conformance(const compile::Backend& backend);

} // namespace rlx::conformance
