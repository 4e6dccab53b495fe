// interface_passes_test.cpp: the passes that change a graph's interface or types:
// specialize-params, bind-symbols, lower-hir and legalize-broadcast (before/after IR, numerical
// equivalence and their errors).
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;
using testing::expect_error;
using testing::expect_rewrite;

std::string graph(const std::string& body) {
  return "graph @g {\n" + body + "}";
}

TEST(SpecializeParams, ParamsBecomeConstantsAndLeaveTheInterface) {
  ir::reference::TensorMap values{{"w", ir::Tensor::from<float>({2}, {2, 3})}};
  fusion::PassContext ctx;
  ctx.specialize_params = &values;
  Graph g = ir::parse(graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                            "  %1 = param[name=\"w\", shape=[2] f32] : [2] f32\n"
                            "  %2 = param[name=\"b\", shape=[2] f32] : [2] f32\n"
                            "  %3 = mul(%0, %1) : [2] f32\n"
                            "  %4 = add(%3, %2) : [2] f32\n"
                            "  return %4\n"));
  Graph before = g;
  run_pipeline(g, "specialize-params", ctx);
  EXPECT_EQ(ir::print(g),
            ir::print(ir::parse(graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                                      "  %1 = param[name=\"b\", shape=[2] f32] : [2] f32\n"
                                      "  %2 = constant[value=[2] f32 {2, 3}] : [2] f32  # w\n"
                                      "  %3 = mul(%0, %2) : [2] f32\n"
                                      "  %4 = add(%3, %1) : [2] f32\n"
                                      "  return %4\n"))));
  EXPECT_FALSE(g.find_leaf("w", /*param=*/true).valid());
  ir::reference::TensorMap in{{"x", ir::Tensor::from<float>({2}, {1, -1})}};
  ir::reference::TensorMap params{{"w", values["w"]}, {"b", ir::Tensor::from<float>({2}, {5, 7})}};
  auto want = ir::reference::evaluate(before, in, params);
  auto got = ir::reference::evaluate(g, in, {{"b", params["b"]}});
  EXPECT_TRUE(want[0].identical(got[0]));
}

TEST(SpecializeParams, ThenConstFoldPropagatesTheValues) {
  ir::reference::TensorMap values{{"scale", ir::Tensor::scalar<float>(4.0f)}};
  fusion::PassContext ctx;
  ctx.specialize_params = &values;
  Graph g = ir::parse(graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                            "  %1 = param[name=\"scale\", shape=[] f32] : [] f32\n"
                            "  %2 = sqrt(%1) : [] f32\n"
                            "  %3 = mul(%0, %2) : [2] f32\n"
                            "  return %3\n"));
  Graph before = g;
  run_pipeline(g, "specialize-params,const-fold", ctx);
  EXPECT_EQ(ir::print(g),
            ir::print(ir::parse(graph("  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n"
                                      "  %1 = constant[value=[] f32 {2}] : [] f32\n"
                                      "  %2 = mul(%0, %1) : [2] f32\n"
                                      "  return %2\n"))));
  ir::reference::TensorMap in{{"x", ir::Tensor::from<float>({2}, {1.5f, -3})}};
  EXPECT_TRUE(
      ir::reference::evaluate(before, in, values)[0].identical(ir::reference::evaluate(g, in)[0]));
}

TEST(SpecializeParams, UnknownNamesAndWrongTypesAreErrors) {
  Graph g = ir::parse(graph("  %0 = param[name=\"w\", shape=[2] f32] : [2] f32\n"
                            "  %1 = exp(%0) : [2] f32\n"
                            "  return %1\n"));
  fusion::PassContext ctx;
  ir::reference::TensorMap misspelled{{"W", ir::Tensor::from<float>({2}, {1, 2})}};
  ctx.specialize_params = &misspelled;
  expect_error("unknown param accepted",
               [&] {
                 Graph h = g;
                 run_pipeline(h, "specialize-params", ctx);
               },
               {"no param 'W' (params: 'w')"});
  ir::reference::TensorMap wrong{{"w", ir::Tensor::from<double>({2}, {1, 2})}};
  ctx.specialize_params = &wrong;
  expect_error("mistyped param accepted",
               [&] {
                 Graph h = g;
                 run_pipeline(h, "specialize-params", ctx);
               },
               {"has type [2] f32 but the given tensor is [2] f64"});
}

TEST(BindSymbols, BindsEveryShapeAndTarget) {
  // batch = seq = 3, the size the random inputs of the symbolic graph get.
  ir::Bindings b{{"batch", 3}, {"seq", 3}, {"unused", 9}};
  fusion::PassContext ctx;
  ctx.bindings = &b;
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[batch, seq, 4] f32] : [batch, seq, 4] f32\n"
                       "  %1 = reshape[shape=[batch, seq, 2, 2]](%0) : [batch, seq, 2, 2] f32\n"
                       "  return %1\n"),
                 "bind-symbols",
                 graph("  %0 = input[name=\"x\", shape=[3, 3, 4] f32] : [3, 3, 4] f32\n"
                       "  %1 = reshape[shape=[3, 3, 2, 2]](%0) : [3, 3, 2, 2] f32\n"
                       "  return %1\n"),
                 0, ctx);
}

TEST(BindSymbols, UnboundSymbolsAreNamed) {
  ir::Bindings b{{"batch", 2}};
  fusion::PassContext ctx;
  ctx.bindings = &b;
  Graph g = ir::parse(
      graph("  %0 = input[name=\"x\", shape=[batch, seq, heads] f32] : [batch, seq, heads] f32\n"
            "  return %0\n"));
  expect_error("unbound symbols accepted", [&] { run_pipeline(g, "bind-symbols", ctx); },
               {"unbound symbols 'seq', 'heads'"});
  ir::Bindings negative{{"batch", 2}, {"seq", -1}, {"heads", 1}};
  ctx.bindings = &negative;
  EXPECT_THROW(run_pipeline(g, "bind-symbols", ctx), Error);
}

TEST(BindSymbols, StaticGraphsAreUnchanged) {
  Graph g = testing::mlp_hir().bind({{"batch", 2}});
  fusion::PassContext ctx;
  EXPECT_FALSE(run_pipeline(g, "bind-symbols", ctx).at(0).changed);
}

TEST(LowerHir, TextOfALinearBlock) {
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[b, 4] f32] : [b, 4] f32\n"
                       "  %1 = param[name=\"w\", shape=[3, 4] f32] : [3, 4] f32\n"
                       "  %2 = param[name=\"bias\", shape=[3] f32] : [3] f32\n"
                       "  %3 = linear[act=relu](%0, %1, %2) : [b, 3] f32  # fc\n"
                       "  return %3\n"),
                 "lower-hir",
                 graph("  %0 = input[name=\"x\", shape=[b, 4] f32] : [b, 4] f32\n"
                       "  %1 = param[name=\"w\", shape=[3, 4] f32] : [3, 4] f32\n"
                       "  %2 = param[name=\"bias\", shape=[3] f32] : [3] f32\n"
                       "  %3 = matmul[transpose_b=true](%0, %1) : [b, 3] f32  # fc.proj\n"
                       "  %4 = add(%3, %2) : [b, 3] f32  # fc.proj.bias\n"
                       "  %5 = relu(%4) : [b, 3] f32  # fc.act\n"
                       "  return %5\n"),
                 1e-6);
}

TEST(LowerHir, LowersEveryHirBlockAndKeepsValues) {
  for (Graph g : {testing::bert_hir(1, 16, 2, 32, /*padding_mask=*/true), testing::llama_hir(),
                  testing::mlp_hir()}) {
    SCOPED_TRACE(g.name());
    Graph before = g;
    fusion::PassContext ctx;
    auto stats = run_pipeline(g, "lower-hir", ctx);
    EXPECT_TRUE(stats.at(0).changed);
    EXPECT_FALSE(ir::has_hir_ops(g));
    testing::expect_equivalent(before, g, 1e-6);
    EXPECT_FALSE(run_pipeline(g, "lower-hir", ctx).at(0).changed);
  }
}

Graph broadcasting_graph() {
  return ir::parse(graph("  %0 = input[name=\"x\", shape=[2, 3, 4] f32] : [2, 3, 4] f32\n"
                         "  %1 = input[name=\"row\", shape=[4] f32] : [4] f32\n"
                         "  %2 = input[name=\"col\", shape=[3, 1] f32] : [3, 1] f32\n"
                         "  %3 = input[name=\"s\", shape=[] f32] : [] f32\n"
                         "  %4 = add(%0, %1) : [2, 3, 4] f32\n"
                         "  %5 = mul(%4, %2) : [2, 3, 4] f32\n"
                         "  %6 = sub(%5, %3) : [2, 3, 4] f32\n"
                         "  return %6\n"));
}

TEST(LegalizeBroadcast, ImplicitPolicyChangesNothing) {
  Graph g = broadcasting_graph();
  fusion::PassContext ctx;
  EXPECT_FALSE(run_pipeline(g, "legalize-broadcast", ctx).at(0).changed);
}

TEST(LegalizeBroadcast, SimplePolicyKeepsScalarsAndTrailingSuffixes) {
  fusion::PassContext ctx;
  ctx.options.broadcast = fusion::BroadcastPolicy::simple;
  expect_rewrite(ir::print(broadcasting_graph()), "legalize-broadcast",
                 graph("  %0 = input[name=\"x\", shape=[2, 3, 4] f32] : [2, 3, 4] f32\n"
                       "  %1 = input[name=\"row\", shape=[4] f32] : [4] f32\n"
                       "  %2 = input[name=\"col\", shape=[3, 1] f32] : [3, 1] f32\n"
                       "  %3 = input[name=\"s\", shape=[] f32] : [] f32\n"
                       "  %4 = add(%0, %1) : [2, 3, 4] f32\n"
                       "  %5 = expand[shape=[2, 3, 4]](%2) : [2, 3, 4] f32\n"
                       "  %6 = mul(%4, %5) : [2, 3, 4] f32\n"
                       "  %7 = sub(%6, %3) : [2, 3, 4] f32\n"
                       "  return %7\n"),
                 0, ctx);
}

TEST(LegalizeBroadcast, NonePolicyExpandsEveryMismatch) {
  fusion::PassContext ctx;
  ctx.options.broadcast = fusion::BroadcastPolicy::none;
  Graph g = expect_rewrite(ir::print(broadcasting_graph()), "legalize-broadcast",
                           graph("  %0 = input[name=\"x\", shape=[2, 3, 4] f32] : [2, 3, 4] f32\n"
                                 "  %1 = input[name=\"row\", shape=[4] f32] : [4] f32\n"
                                 "  %2 = input[name=\"col\", shape=[3, 1] f32] : [3, 1] f32\n"
                                 "  %3 = input[name=\"s\", shape=[] f32] : [] f32\n"
                                 "  %4 = expand[shape=[2, 3, 4]](%1) : [2, 3, 4] f32\n"
                                 "  %5 = add(%0, %4) : [2, 3, 4] f32\n"
                                 "  %6 = expand[shape=[2, 3, 4]](%2) : [2, 3, 4] f32\n"
                                 "  %7 = mul(%5, %6) : [2, 3, 4] f32\n"
                                 "  %8 = expand[shape=[2, 3, 4]](%3) : [2, 3, 4] f32\n"
                                 "  %9 = sub(%7, %8) : [2, 3, 4] f32\n"
                                 "  return %9\n"),
                           0, ctx);
  EXPECT_EQ(count_ops(g, OpKind::Expand), 3);
}

TEST(LegalizeBroadcast, WhereAndCompareToo) {
  fusion::PassContext ctx;
  ctx.options.broadcast = fusion::BroadcastPolicy::none;
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}));
  NodeId y = b.input("y", Shape::of({3}));
  NodeId c = b.compare(ir::CmpOp::lt, x, y);
  b.output(b.where(c, y, b.scalar(0)));
  Graph before = g;
  run_pipeline(g, "legalize-broadcast", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Expand), 3);
  testing::expect_equivalent(before, g, 0);
}

TEST(LegalizeBroadcast, NeedsExpandToBeClaimed) {
  ir::ClaimSet claims = testing::claim_all_but({OpKind::Expand});
  fusion::PassContext ctx;
  ctx.claims = &claims;
  ctx.backend = "no-expand";
  ctx.options.broadcast = fusion::BroadcastPolicy::none;
  Graph g = broadcasting_graph();
  expect_error("expand emitted for a backend without it",
               [&] { run_pipeline(g, "legalize-broadcast", ctx); },
               {"backend 'no-expand'", "add %4"});
}

} // namespace
} // namespace rlx::compile
