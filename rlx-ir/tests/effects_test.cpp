// effects_test.cpp: has_effects (ops.def's kMayHaveEffects plus the CustomOpDef's declaration)
// and Graph::compact keeping nodes with effects.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/effects.hpp"
#include "rlx/ir/error.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::ir {
namespace {

/// Registers "testing.effect" (identity with declared effects) once.
void register_effect_op() {
  auto& reg = CustomOpRegistry::global();
  if (reg.find("testing.effect"))
    return;
  CustomOpDef def;
  def.name = "testing.effect";
  def.min_arity = 1;
  def.max_arity = 1;
  def.infer = [](std::span<const Shape> in, const CustomAttrs&) { return in[0]; };
  def.reference = [](std::span<const Tensor> in, const CustomAttrs&, const Shape&) {
    return in[0].clone();
  };
  def.has_effects = true;
  reg.add(std::move(def));
}

TEST(Effects, TheTableFlagsOnlyCustom) {
  for (OpKind op : testing::all_ops())
    EXPECT_EQ(has_flag(op, kMayHaveEffects), op == OpKind::Custom) << op_name(op);
}

TEST(Effects, CustomOpsDeclareThem) {
  testing::register_sample_custom_op();
  register_effect_op();
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  NodeId pure = b.custom(std::string(testing::kSampleCustomOp), {x}, "2");
  NodeId effect = b.custom("testing.effect", {x});
  EXPECT_FALSE(has_effects(g, pure));
  EXPECT_TRUE(has_effects(g, effect));
  EXPECT_FALSE(has_effects(g, x));
  // A custom op nobody registered may do anything.
  Node unknown{OpKind::Custom, {x}, CustomAttrs{"testing.not_registered", ""}, Shape::of({3}), {}};
  EXPECT_TRUE(has_effects(unknown));
}

TEST(Effects, SubGraphsCarryThem) {
  register_effect_op();
  Graph body("body");
  {
    Builder c(body);
    NodeId a = c.input("a", Shape::of({3}));
    c.output(c.custom("testing.effect", {a}));
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
  register_effect_op();
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.custom(std::string(testing::kSampleCustomOp), {x}, "2"); // pure, unused: removed
  NodeId e = b.custom("testing.effect", {b.exp(x)});         // effects, unused: kept with exp
  b.output(b.neg(x));
  auto remap = g.compact();
  ASSERT_TRUE(remap[e.v].valid());
  EXPECT_EQ(g.size(), 4u); // x, exp, effect, neg
  EXPECT_EQ(g.node(remap[e.v]).attr<CustomAttrs>().name, "testing.effect");
}

} // namespace
} // namespace rlx::ir
