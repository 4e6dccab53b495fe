// fd_ops_test.cpp: the gradient of every differentiable op, for every case of the conformance
// table (attention masks / GQA / softcap / layouts, RoPE styles and offsets, conv strides and
// groups, pool kinds, reductions, movement ops, HIR blocks...), against central finite differences
// in f64 evaluated by the reference interpreter.
//
// Tolerance: |ad - fd| <= 1e-6 max(1, |fd|). With step h = 1e-5 in f64, the central difference's
// truncation error is h^2 |f'''| / 6 (below 1e-8 for these inputs) and its rounding error about
// u |loss| / h ~ 1e-11 |loss|; an O(1) error of a rule (a wrong sign, a missing term, a lost
// broadcast) exceeds the bound by orders of magnitude.
#include "fd.hpp"
#include "op_cases.hpp"

#include "rlx/ir/op.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using namespace rlx;
namespace conf = rlx::conformance;

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

/// Ops whose gradient is straight-through by definition (ops.def), not the derivative: finite
/// differences of a step function are 0. StraightThrough below checks them.
bool straight_through(ir::OpKind k) {
  return k == ir::OpKind::FakeQuantize;
}

/// The cases of differentiable ops with a float operand and a float result (cheap: no graph is
/// built, so every test process of the ctest run starts fast); MatchesFiniteDifferences asserts
/// that each of them has a differentiable leaf.
std::vector<std::string> differentiable_case_names() {
  std::vector<std::string> r;
  for (const auto& c : conf::op_cases()) {
    if (!ir::is_differentiable(c.op) || ir::is_leaf(c.op) || straight_through(c.op))
      continue;
    bool float_in = false;
    for (const auto& s : c.inputs)
      float_in = float_in || (ir::is_float(s.type.dtype) && s.name != "mask");
    const auto* cast = std::get_if<ir::CastAttrs>(&c.attrs);
    if (float_in && !(cast && !ir::is_float(cast->to)))
      r.push_back(c.name);
  }
  return r;
}

const conf::OpCase& find_case(const std::string& name) {
  for (const auto& c : conf::op_cases())
    if (c.name == name)
      return c;
  throw std::runtime_error("no case " + name);
}

class OpGradient : public ::testing::TestWithParam<std::string> {};

TEST_P(OpGradient, MatchesFiniteDifferences) {
  const conf::OpCase& c = find_case(GetParam());
  auto [loss, wrt] = case_loss(c);
  ASSERT_FALSE(wrt.empty());
  conf::CaseValues v = conf::make_values(c);
  auto in = autodiff::testing::to_f64(v.inputs), pa = autodiff::testing::to_f64(v.params);
  auto r = autodiff::testing::check_gradients(loss, in, pa, wrt, 12, 1e-5);
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
    conf::CaseValues v = conf::make_values(c);
    auto in = autodiff::testing::to_f64(v.inputs), pa = autodiff::testing::to_f64(v.params);
    auto got = ir::reference::evaluate(autodiff::grad_with_loss(loss.loss, wrt), in, pa);
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
