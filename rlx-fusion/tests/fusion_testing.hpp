// fusion_testing.hpp: helpers of the fusion pass tests: run one registered pass with a claim set
// and a report, count ops, compare values against the reference interpreter, expect a miss.
#pragma once

#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/fusion/report.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/count_ops.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>

namespace rlx::fusion::testing {

/// \p g after the registered pass \p pass (claims: \p claims, null = everything claimed); what it
/// fused and missed goes to \p report. The result is verified.
inline ir::Graph run_pass(const ir::Graph& g, std::string_view pass, const ir::ClaimSet* claims,
                          FusionReport& report) {
  PassRegistry reg;
  register_fusion_passes(reg);
  PassContext ctx;
  ctx.claims = claims;
  ctx.report = &report;
  ir::Graph out = g;
  reg.create(pass)->run(out, ctx);
  ir::verify(out);
  return out;
}

using ir::testing::count_ops;

/// Evaluates \p before and \p after on the same random inputs (seed \p seed) and expects every
/// output element within \p tol · max(1, |reference|) (0 = bit-identical).
inline void expect_same_values(const ir::Graph& before, const ir::Graph& after, double tol,
                               std::uint64_t seed = 11) {
  const auto in = ir::testing::random_inputs(before, seed);
  const auto params = ir::testing::random_params(before, seed);
  const auto a = ir::reference::evaluate(before, in, params);
  const auto b = ir::reference::evaluate(after, in, params);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t o = 0; o < a.size(); ++o) {
    ASSERT_EQ(a[o].shape(), b[o].shape()) << "output " << o;
    for (std::int64_t i = 0; i < a[o].numel(); ++i) {
      const double w = a[o].get_f64(i), v = b[o].get_f64(i);
      EXPECT_LE(std::abs(v - w), tol * std::max(1.0, std::abs(w)))
          << "output " << o << " element " << i << ": " << v << " vs " << w;
    }
  }
}

/// Expects the registered pass \p pass (claims: \p claims, null = everything claimed) to leave
/// \p g unchanged and report its first miss as \p pattern for \p reason.
inline void expect_miss(const ir::Graph& g, std::string_view pass, std::string_view pattern,
                        MissReason reason, const ir::ClaimSet* claims = nullptr) {
  FusionReport rep;
  const ir::Graph f = run_pass(g, pass, claims, rep);
  EXPECT_EQ(f, g) << ir::print(f);
  ASSERT_FALSE(rep.missed.empty());
  EXPECT_EQ(rep.missed[0].pattern, pattern);
  EXPECT_EQ(rep.missed[0].reason, reason) << rep.str();
}

/// A claim set with every op kind claimed for every dtype except \p drop.
inline ir::ClaimSet claim_all_but(std::initializer_list<ir::OpKind> drop) {
  ir::ClaimSet c;
  for (ir::OpKind k : ir::testing::all_ops())
    if (std::find(drop.begin(), drop.end(), k) == drop.end())
      c.claim(k);
  return c;
}

} // namespace rlx::fusion::testing
