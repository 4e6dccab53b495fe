// cse_dce_test.cpp: the cse and dce passes: before/after IR and numerical equivalence.
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using testing::expect_rewrite;

std::string graph(const std::string& body) {
  return "graph @g {\n" + body + "}";
}

TEST(Cse, MergesDuplicateSubtreesInOneWalk) {
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[4] f32] : [4] f32\n"
                       "  %1 = exp(%0) : [4] f32\n"
                       "  %2 = exp(%0) : [4] f32\n"
                       "  %3 = neg(%1) : [4] f32\n"
                       "  %4 = neg(%2) : [4] f32\n"
                       "  %5 = add(%3, %4) : [4] f32\n"
                       "  return %5\n"),
                 "cse",
                 graph("  %0 = input[name=\"x\", shape=[4] f32] : [4] f32\n"
                       "  %1 = exp(%0) : [4] f32\n"
                       "  %2 = neg(%1) : [4] f32\n"
                       "  %3 = add(%2, %2) : [4] f32\n"
                       "  return %3\n"));
}

TEST(Cse, CommutativeOperandsMeetButOrderedOnesDoNot) {
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[4] f32] : [4] f32\n"
                       "  %1 = input[name=\"y\", shape=[4] f32] : [4] f32\n"
                       "  %2 = mul(%0, %1) : [4] f32\n"
                       "  %3 = mul(%1, %0) : [4] f32\n"
                       "  %4 = sub(%0, %1) : [4] f32\n"
                       "  %5 = sub(%1, %0) : [4] f32\n"
                       "  return %2, %3, %4, %5\n"),
                 "cse",
                 graph("  %0 = input[name=\"x\", shape=[4] f32] : [4] f32\n"
                       "  %1 = input[name=\"y\", shape=[4] f32] : [4] f32\n"
                       "  %2 = mul(%0, %1) : [4] f32\n"
                       "  %3 = sub(%0, %1) : [4] f32\n"
                       "  %4 = sub(%1, %0) : [4] f32\n"
                       "  return %2, %2, %3, %4\n"));
}

TEST(Cse, EqualConstantsMergeDifferentOnesDoNot) {
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                       "  %1 = constant[value=[2] f32 {1, 2}] : [2] f32  # a\n"
                       "  %2 = constant[value=[2] f32 {1, 2}] : [2] f32  # b\n"
                       "  %3 = constant[value=[2] f32 {1, 3}] : [2] f32\n"
                       "  %4 = constant[value=[2] f64 {1, 2}] : [2] f64\n"
                       "  %5 = add(%0, %1) : [2] f32\n"
                       "  %6 = add(%5, %2) : [2] f32\n"
                       "  %7 = add(%6, %3) : [2] f32\n"
                       "  %8 = cast[to=f64](%7) : [2] f64\n"
                       "  %9 = add(%8, %4) : [2] f64\n"
                       "  return %9\n"),
                 "cse",
                 graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                       "  %1 = constant[value=[2] f32 {1, 2}] : [2] f32  # a\n"
                       "  %2 = constant[value=[2] f32 {1, 3}] : [2] f32\n"
                       "  %3 = constant[value=[2] f64 {1, 2}] : [2] f64\n"
                       "  %4 = add(%0, %1) : [2] f32\n"
                       "  %5 = add(%4, %1) : [2] f32\n"
                       "  %6 = add(%5, %2) : [2] f32\n"
                       "  %7 = cast[to=f64](%6) : [2] f64\n"
                       "  %8 = add(%7, %3) : [2] f64\n"
                       "  return %8\n"));
}

TEST(Cse, LeavesAreNeverMerged) {
  // Two inputs and two params of one type are different values.
  const std::string g = graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                              "  %1 = input[name=\"y\", shape=[2] f32] : [2] f32\n"
                              "  %2 = param[name=\"x\", shape=[2] f32] : [2] f32\n"
                              "  %3 = param[name=\"w\", shape=[2] f32] : [2] f32\n"
                              "  %4 = exp(%0) : [2] f32\n"
                              "  %5 = exp(%1) : [2] f32\n"
                              "  %6 = exp(%2) : [2] f32\n"
                              "  %7 = exp(%3) : [2] f32\n"
                              "  return %4, %5, %6, %7\n");
  expect_rewrite(g, "cse", g);
}

TEST(Cse, AttributesSeparateNodes) {
  const std::string g = graph("  %0 = input[name=\"x\", shape=[2, 3] f32] : [2, 3] f32\n"
                              "  %1 = reduce[op=sum, axes=[1]](%0) : [2] f32\n"
                              "  %2 = reduce[op=max, axes=[1]](%0) : [2] f32\n"
                              "  %3 = reduce[op=sum, axes=[0]](%0) : [3] f32\n"
                              "  return %1, %2, %3\n");
  expect_rewrite(g, "cse", g);
}

TEST(Cse, PureCustomOpsAreMerged) {
  // The sample custom op declares no effects, so two equal calls are one value (ops with effects:
  // tuple_effects_passes_test.cpp).
  ir::testing::register_sample_custom_op();
  ir::Graph g("g");
  ir::Builder b(g);
  ir::NodeId x = b.input("x", ir::Shape::of({3}));
  b.output(b.custom(std::string(ir::testing::kSampleCustomOp), {x}, "2"));
  b.output(b.custom(std::string(ir::testing::kSampleCustomOp), {x}, "2"));
  fusion::PassContext ctx;
  run_pipeline(g, "cse", ctx);
  EXPECT_EQ(testing::count_ops(g, ir::OpKind::Custom), 1);
}

TEST(Cse, SampleGraphsOfEveryOpStayEquivalent) {
  // Every op's sample, doubled (two copies fed by the same leaves): CSE removes the copy.
  for (ir::OpKind op : ir::testing::all_ops()) {
    if (op == ir::OpKind::Custom || ir::is_leaf(op))
      continue;
    SCOPED_TRACE(std::string(ir::op_name(op)));
    ir::Graph g = ir::testing::sample_graph(op);
    const std::size_t n = g.size();
    std::vector<ir::NodeId> map(n);
    for (ir::NodeId id : g.ids()) {
      const ir::Node& nd = g.node(id);
      if (ir::is_leaf(nd.op)) {
        map[id.v] = id;
        continue;
      }
      ir::Node copy = nd;
      for (auto& in : copy.inputs)
        in = map[in.v];
      map[id.v] = g.add_unchecked(copy);
    }
    std::vector<ir::NodeId> outs(g.outputs().begin(), g.outputs().end());
    for (std::size_t i = 0, k = outs.size(); i < k; ++i)
      g.add_output(map[outs[i].v]);
    ir::Graph before = g;
    fusion::PassContext ctx;
    run_pipeline(g, "cse", ctx);
    EXPECT_LE(g.size(), n);
    testing::expect_equivalent(before, g, 0);
  }
}

TEST(Dce, RemovesDeadNodesButKeepsTheInterface) {
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                       "  %1 = input[name=\"unused\", shape=[2] f32] : [2] f32\n"
                       "  %2 = param[name=\"w\", shape=[2] f32] : [2] f32\n"
                       "  %3 = exp(%0) : [2] f32\n"
                       "  %4 = neg(%2) : [2] f32\n"
                       "  %5 = constant[value=[2] f32 {1, 2}] : [2] f32\n"
                       "  %6 = add(%3, %5) : [2] f32\n"
                       "  return %3\n"),
                 "dce",
                 graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                       "  %1 = input[name=\"unused\", shape=[2] f32] : [2] f32\n"
                       "  %2 = param[name=\"w\", shape=[2] f32] : [2] f32\n"
                       "  %3 = exp(%0) : [2] f32\n"
                       "  return %3\n"));
}

TEST(Dce, OutputsAreNeverRemovedEvenWhenRepeatedOrConstant) {
  const std::string g = graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                              "  %1 = constant[value=[2] f32 {1, 2}] : [2] f32\n"
                              "  %2 = exp(%0) : [2] f32\n"
                              "  return %1, %2, %2, %0\n");
  expect_rewrite(g, "dce", g);
  ir::Graph parsed = ir::parse(g);
  fusion::PassContext ctx;
  auto stats = run_pipeline(parsed, "dce", ctx);
  EXPECT_FALSE(stats.at(0).changed);
}

} // namespace
} // namespace rlx::compile
