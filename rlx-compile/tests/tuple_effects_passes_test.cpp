// tuple_effects_passes_test.cpp: the passes on graphs with tuple-typed nodes (Split / Get), and
// how CSE, constant folding, DCE, the memory planner and legalisation treat nodes with effects.
#include "rlx/compile/legalize.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/compile/passes.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/compile_testing.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;
using testing::expect_rewrite;

std::string graph(const std::string& body) {
  return "graph @g {\n" + body + "}";
}

/// Registers "testing.effect_scale" once: y = x * 2 with declared effects.
void register_effect_op() {
  auto& reg = ir::CustomOpRegistry::global();
  if (reg.find("testing.effect_scale"))
    return;
  ir::CustomOpDef def;
  def.name = "testing.effect_scale";
  def.min_arity = 1;
  def.max_arity = 1;
  def.infer = [](std::span<const Shape> in, const ir::CustomAttrs&) { return in[0]; };
  def.reference = [](std::span<const ir::Tensor> in, const ir::CustomAttrs&, const Shape& out) {
    ir::Tensor t(out);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, 2 * in[0].get_f64(i));
    return t;
  };
  def.has_effects = true;
  reg.add(std::move(def));
}

const std::string kX = "  %0 = input[name=\"x\", shape=[2, 6] f32] : [2, 6] f32\n";
const std::string kTuple = "([2, 2] f32, [2, 4] f32)";

// ---- tuples through the passes ---------------------------------------------------------------

TEST(TuplePasses, CseMergesEqualSplitsAndTheirGets) {
  expect_rewrite(graph(kX + "  %1 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
                       "  %2 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
                       "  %3 = get(%1) : [2, 2] f32\n"
                       "  %4 = get(%2) : [2, 2] f32\n"
                       "  %5 = get[index=1](%2) : [2, 4] f32\n"
                       "  %6 = add(%3, %4) : [2, 2] f32\n"
                       "  return %6, %5\n"),
                 "cse",
                 graph(kX + "  %1 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
                       "  %2 = get(%1) : [2, 2] f32\n"
                       "  %3 = get[index=1](%1) : [2, 4] f32\n"
                       "  %4 = add(%2, %2) : [2, 2] f32\n"
                       "  return %4, %3\n"));
}

TEST(TuplePasses, DceDropsUnreadGetsAndTuples) {
  expect_rewrite(graph(kX + "  %1 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
                       "  %2 = get[index=1](%1) : [2, 4] f32\n"
                       "  %3 = split[axis=1, sizes=[2, 4]](%0) : " +
                       kTuple + "\n" +
                       "  %4 = get(%1) : [2, 2] f32\n"
                       "  %5 = neg(%4) : [2, 2] f32\n"
                       "  return %5\n"),
                 "dce",
                 graph(kX + "  %1 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
                       "  %2 = get(%1) : [2, 2] f32\n"
                       "  %3 = neg(%2) : [2, 2] f32\n"
                       "  return %3\n"));
}

TEST(TuplePasses, ConstFoldFoldsEachGetOfAConstantSplit) {
  expect_rewrite(graph("  %0 = constant[value=[4] f32 {1, 2, 3, 4}] : [4] f32\n"
                       "  %1 = split[sizes=[1, 3]](%0) : ([1] f32, [3] f32)\n"
                       "  %2 = get[index=1](%1) : [3] f32\n"
                       "  %3 = get(%1) : [1] f32\n"
                       "  return %2, %3\n"),
                 "const-fold",
                 graph("  %0 = constant[value=[3] f32 {2, 3, 4}] : [3] f32\n"
                       "  %1 = constant[value=[1] f32 {1}] : [1] f32\n"
                       "  return %0, %1\n"));
}

TEST(TuplePasses, SimplifyAndTheFullPipelineKeepTuplesCorrect) {
  const std::string before =
      graph(kX + "  %1 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
            "  %2 = constant[value=[] f32 {1}] : [] f32\n"
            "  %3 = get(%1) : [2, 2] f32\n"
            "  %4 = mul(%3, %2) : [2, 2] f32\n"
            "  %5 = get[index=1](%1) : [2, 4] f32\n"
            "  %6 = neg(%5) : [2, 4] f32\n"
            "  %7 = neg(%6) : [2, 4] f32\n"
            "  %8 = split[axis=1, sizes=[2, 4]](%0) : " +
            kTuple + "\n" +
            "  %9 = get[index=1](%8) : [2, 4] f32\n"
            "  %10 = add(%7, %9) : [2, 4] f32\n"
            "  return %4, %10\n");
  ir::Graph g = ir::parse(before);
  ir::Graph original = g;
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold,simplify,cse,dce,legalize-broadcast", ctx);
  ir::verify(g);
  EXPECT_EQ(count_ops(g, OpKind::Split), 1);
  testing::expect_equivalent(original, g, 0);

  testing::TestBackend backend;
  CompileResult r = CompilePipeline(backend).run(original);
  ir::verify(r.lir.graph());
  check_memory_plan(r.lir.graph(), r.lir.plan());
  testing::expect_equivalent(original, r.lir.graph(), 0);
}

TEST(TuplePasses, LegalizeReportsAnUnclaimedTupleOpClearly) {
  ir::Graph g = ir::parse(graph(kX + "  %1 = split[axis=1, sizes=[2, 4]](%0) : " + kTuple + "\n" +
                                "  %2 = get(%1) : [2, 2] f32\n  return %2\n"));
  testing::TestBackend backend("no-split", testing::claim_all_but({OpKind::Split}));
  try {
    CompilePipeline(backend).run(g);
    FAIL() << "an unclaimed split compiled";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("split"), std::string::npos) << e.what();
  }
}

TEST(TuplePasses, EverySampleWithTuplesSurvivesThePipeline) {
  for (OpKind op : {OpKind::Split, OpKind::Get}) {
    ir::Graph g = ir::testing::sample_graph(op);
    testing::TestBackend backend;
    CompileOptions opts;
    opts.bindings = ir::testing::sample_bindings(g);
    CompileResult r = CompilePipeline(backend, opts).run(g);
    check_memory_plan(r.lir.graph(), r.lir.plan());
    testing::expect_equivalent(g.bind(opts.bindings), r.lir.graph(), 0);
  }
}

// ---- nodes with effects ----------------------------------------------------------------------

TEST(EffectPasses, CseMergesPureCustomOpsButNotEffects) {
  ir::testing::register_sample_custom_op();
  register_effect_op();
  ir::Graph g("g");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.output(b.custom(std::string(ir::testing::kSampleCustomOp), {x}, "2"));
  b.output(b.custom(std::string(ir::testing::kSampleCustomOp), {x}, "2"));
  b.output(b.custom("testing.effect_scale", {x}));
  b.output(b.custom("testing.effect_scale", {x}));
  fusion::PassContext ctx;
  run_pipeline(g, "cse", ctx);
  int pure = 0, effects = 0;
  for (const ir::Node& n : g.nodes())
    if (n.op == OpKind::Custom)
      ++(n.attr<ir::CustomAttrs>().name == "testing.effect_scale" ? effects : pure);
  EXPECT_EQ(pure, 1);
  EXPECT_EQ(effects, 2);
}

TEST(EffectPasses, ConstFoldFoldsPureCustomOpsButNotEffects) {
  ir::testing::register_sample_custom_op();
  register_effect_op();
  ir::Graph g("g");
  ir::Builder b(g);
  ir::Tensor v(Shape::of({3}));
  v.set_f64(1, 1.5);
  NodeId c = b.constant(v);
  b.output(b.custom(std::string(ir::testing::kSampleCustomOp), {c}, "2"));
  b.output(b.custom("testing.effect_scale", {c}));
  ir::Graph original = g;
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold", ctx);
  ASSERT_EQ(count_ops(g, OpKind::Custom), 1);
  EXPECT_EQ(g.node(g.outputs()[0]).op, OpKind::Constant);
  EXPECT_EQ(g.node(g.outputs()[0]).attr<ir::ConstantAttrs>().value.get_f64(1), 3.0);
  EXPECT_EQ(g.node(g.outputs()[1]).op, OpKind::Custom);
  testing::expect_equivalent(original, g, 0);
}

TEST(EffectPasses, DceKeepsEffectsWithoutUsersAndThePlannerRunsThem) {
  register_effect_op();
  ir::Graph g("g");
  ir::Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.custom("testing.effect_scale", {b.exp(x)}); // nobody reads it
  b.neg(x);                                     // pure and unread
  b.output(b.sin(x));
  fusion::PassContext ctx;
  run_pipeline(g, "dce", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Custom), 1);
  EXPECT_EQ(count_ops(g, OpKind::Exp), 1);
  EXPECT_EQ(count_ops(g, OpKind::Neg), 0);
  ir::MemoryPlan p = plan_memory(g);
  for (NodeId id : g.ids()) {
    if (g.node(id).op == OpKind::Custom || g.node(id).op == OpKind::Exp) {
      EXPECT_EQ(p.slot(id).storage, ir::Storage::temp) << ir::describe(g, id);
    }
  }
  check_memory_plan(g, p);
}

} // namespace
} // namespace rlx::compile
