// fd_ops_test.cpp: the gradient of every differentiable op, for every case of the conformance
// table (attention masks / GQA / softcap / layouts, RoPE styles and offsets, conv strides and
// groups, pool kinds, reductions, movement ops, HIR blocks...), against central finite differences
// in f64 evaluated by the reference interpreter.
//
// Tolerance: |ad - fd| <= 1e-6 max(1, |fd|). With step h = 1e-5 in f64, the central difference's
// truncation error is h^2 |f'''| / 6 (below 1e-8 for these inputs) and its rounding error about
// u |loss| / h ~ 1e-11 |loss|; an O(1) error of a rule (a wrong sign, a missing term, a lost
// broadcast) exceeds the bound by orders of magnitude.
#include "fd_cases.hpp"

#include "rlx/ir/op.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace rlx;
namespace conf = rlx::conformance;
using autodiff::testing::differentiable_case_names;
using autodiff::testing::f64_values;
using autodiff::testing::find_case;
using autodiff::testing::straight_through;

/// The f64 weighted loss of case \p c and its differentiable leaves (none when the case has only
/// integer operands or outputs).
std::pair<autodiff::testing::WeightedLoss, std::vector<autodiff::Wrt>>
case_loss(const conf::OpCase& c) {
  conf::register_conformance_custom_ops();
  auto l = autodiff::testing::weighted_sum_loss(autodiff::testing::to_f64(conf::build_graph(c)), 7);
  if (l.empty())
    return {autodiff::testing::WeightedLoss(), std::vector<autodiff::Wrt>()};
  auto wrt = autodiff::testing::differentiable_leaves(l.loss);
  return {std::move(l), std::move(wrt)};
}

class OpGradient : public ::testing::TestWithParam<std::string> {};

TEST_P(OpGradient, MatchesFiniteDifferences) {
  const conf::OpCase& c = find_case(GetParam());
  auto [loss, wrt] = case_loss(c);
  ASSERT_FALSE(wrt.empty());
  const conf::CaseValues v = f64_values(c);
  auto r = autodiff::testing::check_gradients(loss, v.inputs, v.params, wrt, 12, 1e-5);
  EXPECT_LE(r.max_err, 1e-6) << c.name << ": " << r.worst;
  EXPECT_GT(r.checked, 0);
  EXPECT_LE(r.kinks, 1) << c.name << ": finite differences straddle a kink too often";
}

INSTANTIATE_TEST_SUITE_P(Conformance, OpGradient, ::testing::ValuesIn(differentiable_case_names()),
                         [](const ::testing::TestParamInfo<std::string>& p) { return p.param; });

TEST(OpGradient, StraightThroughPassesTheCotangent) {
  // FakeQuantize: d loss / d x is the upstream gradient itself (the weights of the loss).
  for (const auto& c : conf::op_cases()) {
    if (!straight_through(c.op))
      continue;
    auto [loss, wrt] = case_loss(c);
    ASSERT_EQ(wrt.size(), 1u) << c.name;
    const conf::CaseValues v = f64_values(c);
    auto got =
        ir::reference::evaluate(autodiff::grad_with_loss(loss.loss, wrt), v.inputs, v.params);
    EXPECT_TRUE(got.at(1).identical(loss.weights.at(0))) << c.name;
  }
}

TEST(OpGradient, EveryDifferentiableOpIsChecked) {
  // Every kDifferentiable op (HIR blocks included: they are lowered, then differentiated) has at
  // least one conformance case with something to differentiate.
  std::set<ir::OpKind> covered;
  for (const auto& c : conf::op_cases()) {
    if (!ir::is_differentiable(c.op) || ir::is_leaf(c.op) || covered.count(c.op))
      continue;
    if (!case_loss(c).second.empty())
      covered.insert(c.op);
  }
  ir::for_each_op([&](ir::OpKind k) {
    if (ir::is_differentiable(k) && !ir::is_leaf(k)) {
      EXPECT_TRUE(covered.count(k)) << "no finite-difference case for " << ir::op_name(k);
    }
  });
}

} // namespace
