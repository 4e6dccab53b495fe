// legalize.hpp: legalisation against a backend's claim set, and the dispatch report.
//
// legalize() rewrites every node the claim set does not support into claimed primitives, using a
// table of decompositions per op kind, until the graph is legal (a decomposition may itself emit
// unclaimed ops that are decomposed in turn). An op that stays unsupported is a compile error.
#pragma once

#include "rlx/fusion/pass.hpp"
#include "rlx/ir/claims.hpp"
#include "rlx/ir/graph.hpp"

#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::compile {

/// How the nodes of one op kind were dispatched.
struct DispatchCounts {
  int native = 0;      ///< nodes the backend runs as they are
  int rewritten = 0;   ///< nodes of this kind replaced by a decomposition into claimed ops
  int unsupported = 0; ///< nodes neither claimed nor decomposable (a compile error)
};

/// The kernel dispatch report of one compile: native / rewritten / unsupported per op kind.
struct DispatchReport {
  std::string backend;                        ///< the backend's name
  std::map<ir::OpKind, DispatchCounts> by_op; ///< per op kind, in table order
  std::vector<std::string> unsupported_nodes; ///< describe() of every unsupported node

  /// Totals over every op kind.
  DispatchCounts total() const;
  /// A human-readable table: one line per op kind with its three counts, then the totals.
  std::string str() const;
};

/// Rewrites the nodes of \p g that \p claims does not support into claimed primitives (iterating
/// until legal), compacts \p g and returns the dispatch report (rewritten counts describe the
/// nodes replaced, native counts the nodes of the legal result). Leaves (Input, Param, Constant)
/// are always native. Throws Error naming the op, the node and \p backend when a node stays
/// unsupported.
DispatchReport legalize(ir::Graph& g, const ir::ClaimSet& claims, std::string_view backend,
                        const fusion::PassOptions& opts = {});

/// Same as legalize() without the error: \p g is rewritten as far as possible and the report lists
/// what stayed unsupported (for inspection).
DispatchReport legalize_partial(ir::Graph& g, const ir::ClaimSet& claims, std::string_view backend,
                                const fusion::PassOptions& opts = {});

/// The "legalize" pass: legalize() against the context's claim set and backend name (a context
/// without claims means every op is supported). The dispatch report goes to \p out when given.
class LegalizePass final : public fusion::Pass {
public:
  static constexpr std::string_view kName = "legalize";
  explicit LegalizePass(DispatchReport* out = nullptr) : out_(out) {}
  std::string_view name() const override { return kName; }
  bool run(ir::Graph& g, fusion::PassContext& ctx) override;

private:
  DispatchReport* out_;
};

} // namespace rlx::compile
