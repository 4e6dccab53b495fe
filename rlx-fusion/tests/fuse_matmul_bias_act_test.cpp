// fuse_matmul_bias_act_test.cpp: the fuse-matmul-bias-act pass. Positive cases for every
// activation, transposes, batch dims, bias shapes and fusion order; one negative case per
// precondition with its MissReason; the IR text before and after; and the values of every fused
// graph against the reference interpreter (identical: MatMulBiasAct's reference semantics are its
// decomposition, which is the chain it replaced).
#include "fusion_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/text.hpp"

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;
using testing::expect_same_values;
using testing::run_pass;

constexpr std::string_view kPass = "fuse-matmul-bias-act";

struct Linear {
  Shape x, w;
  bool ta = false, tb = true;
};

/// act(x · w (+ bias)) as separate MatMul, Add and activation nodes.
Graph linear_graph(const Linear& l, std::optional<Shape> bias, std::optional<OpKind> act) {
  Graph g("linear");
  Builder b(g);
  NodeId x = b.input("x", l.x);
  NodeId w = b.param("w", l.w);
  NodeId y = b.matmul(x, w, l.ta, l.tb);
  if (bias)
    y = b.add(b.param("bias", *bias), y); // bias first: the pattern is commutative
  if (act)
    y = b.unary(*act, y);
  b.output(y);
  return g;
}

const ir::MatMulBiasActAttrs& fused_attrs(const Graph& g) {
  for (NodeId id : g.ids())
    if (g.node(id).op == OpKind::MatMulBiasAct)
      return g.node(id).attr<ir::MatMulBiasActAttrs>();
  throw Error("no matmul_bias_act in the graph");
}

TEST(FuseMatMulBiasAct, EveryActivationWithBias) {
  const std::pair<OpKind, ir::Activation> acts[] = {
      {OpKind::Relu, ir::Activation::relu},          {OpKind::Gelu, ir::Activation::gelu},
      {OpKind::GeluTanh, ir::Activation::gelu_tanh}, {OpKind::Silu, ir::Activation::silu},
      {OpKind::Sigmoid, ir::Activation::sigmoid},    {OpKind::Tanh, ir::Activation::tanh}};
  for (const auto& [op, act] : acts) {
    SCOPED_TRACE(std::string(ir::op_name(op)));
    const Graph g = linear_graph({Shape::of({2, 3, 4}), Shape::of({5, 4})}, Shape::of({5}), op);
    FusionReport rep;
    const Graph f = run_pass(g, kPass, nullptr, rep);
    EXPECT_EQ(count_ops(f, OpKind::MatMulBiasAct), 1) << ir::print(f);
    EXPECT_EQ(count_ops(f, OpKind::MatMul) + count_ops(f, OpKind::Add) + count_ops(f, op), 0);
    EXPECT_EQ(fused_attrs(f).act, act);
    EXPECT_TRUE(fused_attrs(f).transpose_b);
    EXPECT_EQ(rep.total_applied(), 2); // the bias, then the activation
    EXPECT_TRUE(rep.missed.empty()) << rep.str();
    expect_same_values(g, f, 0);
  }
}

TEST(FuseMatMulBiasAct, TextBeforeAndAfter) {
  const Graph g =
      linear_graph({Shape::of({3, 4}), Shape::of({5, 4})}, Shape::of({5}), OpKind::Gelu);
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  const std::string before = ir::print(g), after = ir::print(f);
  EXPECT_NE(before.find("= matmul[transpose_b=true]("), std::string::npos) << before;
  EXPECT_NE(before.find("= add("), std::string::npos) << before;
  EXPECT_NE(before.find("= gelu("), std::string::npos) << before;
  EXPECT_EQ(after.find("= matmul["), std::string::npos) << after;
  EXPECT_EQ(after.find("= add("), std::string::npos) << after;
  EXPECT_EQ(after.find("= gelu("), std::string::npos) << after;
  EXPECT_NE(after.find("= matmul_bias_act[transpose_b=true, act=gelu](%0, %1, %2)"),
            std::string::npos)
      << after;
  // The fused text parses back to the same graph.
  EXPECT_EQ(ir::parse(after), f);
  EXPECT_EQ(rep.applied.at("matmul_bias"), 1);
  EXPECT_EQ(rep.applied.at("matmul_bias_act"), 1);
}

TEST(FuseMatMulBiasAct, TransposesBatchDimsAndBiasShapes) {
  struct Case {
    const char* name;
    Linear l;
    std::optional<Shape> bias;
    std::optional<OpKind> act;
  };
  const Case cases[] = {
      {"plain", {Shape::of({6, 4}), Shape::of({4, 5}), false, false}, Shape::of({5}), OpKind::Relu},
      {"ta", {Shape::of({4, 6}), Shape::of({4, 5}), true, false}, Shape::of({5}), OpKind::Silu},
      {"batched",
       {Shape::of({2, 3, 4}), Shape::of({2, 4, 5}), false, false},
       Shape::of({5}),
       OpKind::Tanh},
      {"broadcast_batch",
       {Shape::of({2, 1, 3, 4}), Shape::of({3, 5, 4}), false, true},
       Shape::of({1, 1, 5}),
       OpKind::Gelu},
      {"bias_only", {Shape::of({3, 4}), Shape::of({5, 4})}, Shape::of({5}), std::nullopt},
      {"act_only", {Shape::of({3, 4}), Shape::of({5, 4})}, std::nullopt, OpKind::Sigmoid},
      {"f64",
       {Shape::of({3, 4}, DType::f64), Shape::of({5, 4}, DType::f64)},
       Shape::of({5}, DType::f64),
       OpKind::GeluTanh},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    const Graph g = linear_graph(c.l, c.bias, c.act);
    FusionReport rep;
    const Graph f = run_pass(g, kPass, nullptr, rep);
    EXPECT_EQ(count_ops(f, OpKind::MatMulBiasAct), 1) << ir::print(f);
    EXPECT_EQ(count_ops(f, OpKind::MatMul), 0) << ir::print(f);
    EXPECT_EQ(fused_attrs(f).transpose_a, c.l.ta);
    EXPECT_EQ(fused_attrs(f).transpose_b, c.l.tb);
    EXPECT_TRUE(rep.missed.empty()) << rep.str();
    expect_same_values(g, f, 0);
  }
}

/// Expects \p g unchanged by the pass, with exactly one miss of \p reason for \p pattern.
void expect_miss(const Graph& g, const ir::ClaimSet* claims, std::string_view pattern,
                 MissReason reason) {
  FusionReport rep;
  const Graph f = run_pass(g, kPass, claims, rep);
  EXPECT_EQ(count_ops(f, OpKind::MatMulBiasAct), 0) << ir::print(f);
  EXPECT_EQ(f, g);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].pattern, pattern);
  EXPECT_EQ(rep.missed[0].reason, reason) << rep.str();
  EXPECT_FALSE(rep.missed[0].detail.empty());
}

TEST(FuseMatMulBiasAct, AProductWithAnotherUserIsNotFused) {
  Graph g("two_users");
  Builder b(g);
  NodeId p = b.matmul(b.input("x", Shape::of({3, 4})), b.param("w", Shape::of({4, 5})));
  b.output(b.add(p, b.param("bias", Shape::of({5}))));
  b.output(b.exp(p));
  expect_miss(g, nullptr, "matmul_bias", MissReason::multiple_consumers);
}

TEST(FuseMatMulBiasAct, AProductThatIsAGraphOutputIsNotFused) {
  Graph g("output");
  Builder b(g);
  NodeId p = b.matmul(b.input("x", Shape::of({3, 4})), b.param("w", Shape::of({4, 5})));
  b.output(b.relu(p));
  b.output(p);
  expect_miss(g, nullptr, "matmul_act", MissReason::is_graph_output);
}

TEST(FuseMatMulBiasAct, ABiasThatBroadcastsTheProductIsNotFused) {
  // [3, 5] + [1, 1, 5] is [1, 3, 5]: not the product's type.
  const Graph g =
      linear_graph({Shape::of({3, 4}), Shape::of({5, 4})}, Shape::of({1, 1, 5}), std::nullopt);
  expect_miss(g, nullptr, "matmul_bias", MissReason::shape_mismatch);
}

TEST(FuseMatMulBiasAct, AnIntegerProductKeepsItsActivation) {
  const Graph g = linear_graph({Shape::of({3, 4}, DType::i32), Shape::of({5, 4}, DType::i32)},
                               std::nullopt, OpKind::Relu);
  expect_miss(g, nullptr, "matmul_act", MissReason::dtype_mismatch);
}

TEST(FuseMatMulBiasAct, AnUnclaimedFusedOpIsAMiss) {
  const ir::ClaimSet claims = testing::claim_all_but({OpKind::MatMulBiasAct});
  const Graph g =
      linear_graph({Shape::of({3, 4}), Shape::of({5, 4})}, Shape::of({5}), std::nullopt);
  expect_miss(g, &claims, "matmul_bias", MissReason::not_claimed);
  // Claimed for f64 only: an f32 product is a miss too.
  ir::ClaimSet f64_only = testing::claim_all_but({OpKind::MatMulBiasAct});
  f64_only.claim(OpKind::MatMulBiasAct, {DType::f64});
  expect_miss(g, &f64_only, "matmul_bias", MissReason::not_claimed);
}

TEST(FuseMatMulBiasAct, AResidualAddIsNotThisPattern) {
  // x · w + r with r [3, 5] (a residual, not a bias): not recognised, so not reported either.
  Graph g("residual");
  Builder b(g);
  NodeId p = b.matmul(b.input("x", Shape::of({3, 4})), b.param("w", Shape::of({4, 5})));
  b.output(b.add(p, b.input("r", Shape::of({3, 5}))));
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  EXPECT_EQ(f, g);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
}

TEST(FuseMatMulBiasAct, TheFusedOpDecomposesBackToItsChain) {
  // A backend that claims MatMulBiasAct is never asked to decompose it; unfuse is, and gives the
  // original values bit for bit.
  const Graph g =
      linear_graph({Shape::of({2, 3, 4}), Shape::of({5, 4})}, Shape::of({5}), OpKind::Gelu);
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  const Graph u = run_pass(f, "unfuse", nullptr, rep);
  EXPECT_EQ(count_ops(u, OpKind::MatMulBiasAct), 0);
  EXPECT_EQ(count_ops(u, OpKind::MatMul), 1);
  expect_same_values(g, u, 0);
}

} // namespace
} // namespace rlx::fusion
