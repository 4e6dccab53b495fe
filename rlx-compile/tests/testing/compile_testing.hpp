// compile_testing.hpp: helpers of the rlx-compile tests: test backends, claim sets, numerical
// equivalence of two graphs on random inputs, and (from workloads.hpp) the model graphs.
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/ir/claims.hpp"
#include "rlx/ir/graph.hpp"
#include "testing/count_ops.hpp"
#include "testing/workloads.hpp"

#include <cstdint>
#include <functional>
#include <initializer_list>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::compile::testing {

/// Every op of the table, for every dtype.
ir::ClaimSet claim_everything();
/// Every op of the table except \p ops.
ir::ClaimSet claim_all_but(std::initializer_list<ir::OpKind> ops);

/// A backend for tests: a given claim set, and an Executable that runs the LIR graph with the
/// reference interpreter (so a compiled graph can be run end to end through the Backend API).
class TestBackend : public Backend {
public:
  explicit TestBackend(std::string name = "test-all", ir::ClaimSet claims = claim_everything(),
                       fusion::BroadcastPolicy broadcast = fusion::BroadcastPolicy::implicit,
                       std::int64_t scratch_per_matmul = 0);
  std::string name() const override { return name_; }
  const ir::ClaimSet& claims() const override { return claims_; }
  fusion::BroadcastPolicy broadcast_policy() const override { return broadcast_; }
  std::int64_t scratch_bytes(const ir::Graph& g, ir::NodeId id) const override;
  std::unique_ptr<Executable> compile(const ir::Module& lir) const override;

private:
  std::string name_;
  ir::ClaimSet claims_;
  fusion::BroadcastPolicy broadcast_;
  std::int64_t scratch_per_matmul_;
};

/// Evaluates \p before and \p after with the reference interpreter on the same random inputs and
/// params (rlx::ir::testing::random_inputs / random_params of \p before, with \p seed; leaves
/// \p after no longer has are dropped) and expects every output to agree: same type, and
/// max |a - b| <= tol * (1 + max |a|).
void expect_equivalent(const ir::Graph& before, const ir::Graph& after, double tol,
                       std::uint64_t seed = 1);

/// A before/after pass test in text form: parses \p before, runs the comma-separated
/// \p pipeline on it (verifying after every pass) with \p ctx, expects the printed result to
/// equal the printed parse of \p after, and expects the two graphs to compute the same values
/// on random inputs (see expect_equivalent). \returns the rewritten graph.
ir::Graph expect_rewrite(std::string_view before, std::string_view pipeline, std::string_view after,
                         double tol = 0, fusion::PassContext ctx = {});

using ir::testing::count_ops;

/// Expects \p run to throw rlx::Error with a message holding each of \p fragments; a run that
/// throws nothing fails the test with \p accepted (what was wrongly accepted).
void expect_error(std::string_view accepted, const std::function<void()>& run,
                  std::initializer_list<std::string_view> fragments);

} // namespace rlx::compile::testing
