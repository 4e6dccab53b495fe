// effects_test.cpp: has_effects (ops.def's kMayHaveEffects plus the CustomOpDef's declaration)
// and Graph::compact keeping nodes with effects.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/effects.hpp"
#include "rlx/ir/error.hpp"
#include "testing/effect_op.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::ir {
namespace {

TEST(Effects, TheTableFlagsOnlyCustom) {
  for (OpKind op : testing::all_ops())
    EXPECT_EQ(has_flag(op, kMayHaveEffects), op == OpKind::Custom) << op_name(op);
}

TEST(Effects, CustomOpsDeclareThem) {
  testing::register_sample_custom_op();
  testing::register_effect_op();
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  NodeId pure = b.custom(std::string(testing::kSampleCustomOp), {x}, "2");
  NodeId effect = b.custom(testing::kEffectOp, {x});
  EXPECT_FALSE(has_effects(g, pure));
  EXPECT_TRUE(has_effects(g, effect));
  EXPECT_FALSE(has_effects(g, x));
  // A custom op nobody registered may do anything.
  Node unknown{OpKind::Custom, {x}, CustomAttrs{"testing.not_registered", ""}, Shape::of({3}), {}};
  EXPECT_TRUE(has_effects(unknown));
}

TEST(Effects, SubGraphsCarryThem) {
  testing::register_effect_op();
  Graph body("body");
  {
    Builder c(body);
    NodeId a = c.input("a", Shape::of({3}));
    c.output(c.custom(testing::kEffectOp, {a}));
  }
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  NodeId fn = b.custom_fn({x}, body);
  b.output(fn);
  EXPECT_TRUE(has_effects(g, fn));
  Graph pure_body("body");
  {
    Builder c(pure_body);
    c.output(c.neg(c.input("a", Shape::of({3}))));
  }
  EXPECT_FALSE(has_effects(g, b.custom_fn({x}, pure_body)));
}

TEST(Effects, CompactKeepsThemWithoutUsers) {
  testing::register_sample_custom_op();
  testing::register_effect_op();
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.custom(std::string(testing::kSampleCustomOp), {x}, "2"); // pure, unused: removed
  NodeId e = b.custom(testing::kEffectOp, {b.exp(x)});       // effects, unused: kept with exp
  b.output(b.neg(x));
  auto remap = g.compact();
  ASSERT_TRUE(remap[e.v].valid());
  EXPECT_EQ(g.size(), 4u); // x, exp, effect, neg
  EXPECT_EQ(g.node(remap[e.v]).attr<CustomAttrs>().name, testing::kEffectOp);
}

} // namespace
} // namespace rlx::ir
