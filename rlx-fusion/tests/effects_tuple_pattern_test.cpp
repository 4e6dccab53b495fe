// effects_tuple_pattern_test.cpp: the pattern rewriter never rewrites a node with effects away
// (ir::has_effects) and stays correct on graphs with tuple-typed nodes (Split / Get).
#include "rlx/fusion/pattern.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/effect_op.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// custom(x) -> x for every custom op taking one operand (a toy "the op is an identity" rewrite).
Pattern drop_custom() {
  Pattern p;
  p.name = "drop_custom";
  p.root = Pat::op(OpKind::Custom, {Pat::any().bind("x")});
  p.rewrite = [](Builder&, const Match& m) { return m["x"]; };
  return p;
}

/// neg(neg(x)) -> x.
Pattern double_neg() {
  Pattern p;
  p.name = "double_neg";
  p.root = Pat::op(OpKind::Neg, {Pat::op(OpKind::Neg, {Pat::any().bind("x")})});
  p.rewrite = [](Builder&, const Match& m) { return m["x"]; };
  return p;
}

TEST(PatternEffects, NodesWithEffectsAreNeverMatched) {
  ir::testing::register_sample_custom_op();
  ir::testing::register_effect_op();
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  NodeId pure = b.custom(std::string(ir::testing::kSampleCustomOp), {x}, "1");
  NodeId effect = b.custom(ir::testing::kEffectOp, {x});
  b.output(pure);
  b.output(effect);
  std::vector<Pattern> ps{drop_custom()};
  EXPECT_TRUE(match_pattern(ps[0], g, pure).applies);
  EXPECT_FALSE(match_pattern(ps[0], g, effect).applies);
  EXPECT_EQ(apply_patterns(g, ps), 1);
  ir::verify(g);
  int customs = 0;
  for (const auto& n : g.nodes())
    if (n.op == OpKind::Custom) {
      ++customs;
      EXPECT_EQ(n.attr<ir::CustomAttrs>().name, ir::testing::kEffectOp);
    }
  EXPECT_EQ(customs, 1);
}

TEST(PatternTuples, RewritesAroundTupleNodesStayCorrect) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 6}));
  auto parts = b.parts(b.split(b.neg(b.neg(x)), 1, {2, 4}));
  b.output(b.neg(b.neg(parts[1])));
  b.output(parts[0]);
  Graph before = g;
  std::vector<Pattern> ps{double_neg()};
  EXPECT_EQ(apply_patterns(g, ps), 2);
  ir::verify(g);
  int negs = 0;
  for (const auto& n : g.nodes())
    negs += n.op == OpKind::Neg;
  EXPECT_EQ(negs, 0);
  auto in = ir::testing::random_inputs(before, 3);
  auto want = ir::reference::evaluate(before, in);
  auto got = ir::reference::evaluate(g, in);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(want[i].identical(got[i])) << i;
}

} // namespace
} // namespace rlx::fusion
