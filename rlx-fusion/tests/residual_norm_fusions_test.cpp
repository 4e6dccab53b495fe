// residual_norm_fusions_test.cpp: fuse-residual-layer-norm and fuse-residual-rms-norm. A positive
// test with before / after IR text per pass, the sum's other users (LLaMA's next residual, a graph
// output), one negative test per precondition with the MissReason the report gives (residual
// broadcast, claim missing), numerical equivalence with the reference on random inputs, and the
// unfuse round trip.
#include "fusion_testing.hpp"
#include "rlx/fusion/norm_fusions.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/text.hpp"

#include <gtest/gtest.h>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;

/// BERT post-norm: LayerNorm(x + r) (the sum has no other use).
Graph post_norm(bool beta, Shape r_shape = Shape({2, 3, 8})) {
  Graph g("post_norm");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 3, 8}));
  NodeId r = b.input("r", r_shape);
  NodeId gamma = b.param("gamma", Shape({8}));
  NodeId bt = beta ? b.param("beta", Shape({8})) : NodeId{};
  b.output(b.layer_norm(b.add(x, r), gamma, bt, 1e-3));
  return g;
}

/// LLaMA pre-norm: h = x + r; out = h + ffn(RmsNorm(h)) (here ffn = silu), the sum read twice.
Graph pre_norm(bool sum_is_output = false) {
  Graph g("pre_norm");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, ir::Dim::sym("seq"), 6}));
  NodeId r = b.input("r", Shape({2, ir::Dim::sym("seq"), 6}));
  NodeId h = b.add(x, r);
  NodeId n = b.rms_norm(h, b.param("gamma", Shape({6})), 1e-5);
  b.output(b.add(h, b.silu(n)));
  if (sum_is_output)
    b.output(h);
  return g;
}

/// The values of \p after equal \p before's on random inputs (the reference evaluates a fused op
/// through its decomposition, so they are bit-identical), for a few seeds.
void expect_same(const Graph& before, const Graph& after) {
  for (std::uint64_t seed : {1u, 2u, 3u})
    testing::expect_same_values(before, after, 0, seed);
}

Graph run(const Graph& g, std::string_view pass, FusionReport& rep,
          const ir::ClaimSet* claims = nullptr) {
  return testing::run_pass(g, pass, claims, rep);
}

// ---- fuse-residual-layer-norm -------------------------------------------------------------------

TEST(FuseResidualLayerNorm, BeforeAfterText) {
  const Graph g = ir::parse(R"(graph @post_norm {
  %0 = input[name="x", shape=[batch, 8] f32] : [batch, 8] f32
  %1 = input[name="r", shape=[batch, 8] f32] : [batch, 8] f32
  %2 = param[name="gamma", shape=[8] f32] : [8] f32
  %3 = param[name="beta", shape=[8] f32] : [8] f32
  %4 = add(%1, %0) : [batch, 8] f32
  %5 = layer_norm[eps=0.001](%4, %2, %3) : [batch, 8] f32
  return %5
})");
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-layer-norm", rep);
  EXPECT_EQ(ir::print(out), ir::print(ir::parse(R"(graph @post_norm {
  %0 = input[name="x", shape=[batch, 8] f32] : [batch, 8] f32
  %1 = input[name="r", shape=[batch, 8] f32] : [batch, 8] f32
  %2 = param[name="gamma", shape=[8] f32] : [8] f32
  %3 = param[name="beta", shape=[8] f32] : [8] f32
  %4 = residual_layer_norm[eps=0.001](%1, %0, %2, %3) : ([batch, 8] f32, [batch, 8] f32)
  %5 = get[index=1](%4) : [batch, 8] f32
  return %5
})")));
  EXPECT_EQ(rep.applied["residual_layer_norm"], 1);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
  expect_same(g, out);
}

TEST(FuseResidualLayerNorm, WithAndWithoutBeta) {
  for (bool beta : {true, false}) {
    SCOPED_TRACE(beta ? "beta" : "no beta");
    const Graph g = post_norm(beta);
    FusionReport rep;
    const Graph out = run(g, "fuse-residual-layer-norm", rep);
    EXPECT_EQ(count_ops(out, OpKind::ResidualLayerNorm), 1) << ir::print(out);
    EXPECT_EQ(count_ops(out, OpKind::LayerNorm), 0);
    EXPECT_EQ(count_ops(out, OpKind::Add), 0);
    expect_same(g, out);
  }
}

TEST(FuseResidualLayerNorm, SumReadElsewhereComesFromPartZero) {
  // The sum is also a graph output: it is read from the fused node, not recomputed.
  Graph g("post_norm_out");
  Builder b(g);
  NodeId x = b.input("x", Shape({4, 8}));
  NodeId r = b.input("r", Shape({4, 8}));
  NodeId s = b.add(x, r);
  b.output(b.layer_norm(s, b.param("gamma", Shape({8})), NodeId{}, 1e-5));
  b.output(s);
  b.output(b.mul(s, s));
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-layer-norm", rep);
  EXPECT_EQ(count_ops(out, OpKind::Add), 0) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::ResidualLayerNorm), 1);
  EXPECT_EQ(count_ops(out, OpKind::Get), 2); // part 1 and part 0, each read once
  EXPECT_EQ(rep.applied["residual_layer_norm_sum"], 1);
  expect_same(g, out);
}

TEST(FuseResidualLayerNorm, BroadcastResidualIsAShapeMiss) {
  const Graph g = post_norm(true, Shape({1, 3, 8}));
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-layer-norm", rep);
  EXPECT_EQ(count_ops(out, OpKind::ResidualLayerNorm), 0);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::shape_mismatch);
  EXPECT_NE(rep.missed[0].detail.find("broadcasts"), std::string::npos) << rep.str();
}

TEST(FuseResidualLayerNorm, UnclaimedIsANotClaimedMiss) {
  const Graph g = post_norm(true);
  const ir::ClaimSet claims = testing::claim_all_but({OpKind::ResidualLayerNorm});
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-layer-norm", rep, &claims);
  EXPECT_EQ(count_ops(out, OpKind::ResidualLayerNorm), 0);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::not_claimed);
  // The claim-gated list leaves the pass out altogether.
  const auto names = fusion_passes_for_supported(claims, FusionOptions{});
  EXPECT_EQ(std::find(names.begin(), names.end(), "fuse-residual-layer-norm"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "fuse-residual-rms-norm"), names.end());
}

TEST(FuseResidualLayerNorm, PlainLayerNormIsNotRecognised) {
  Graph g("ln");
  Builder b(g);
  NodeId x = b.input("x", Shape({4, 8}));
  b.output(b.layer_norm(b.exp(x), b.param("gamma", Shape({8})), NodeId{}, 1e-5));
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-layer-norm", rep);
  EXPECT_EQ(count_ops(out, OpKind::ResidualLayerNorm), 0);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
}

// ---- fuse-residual-rms-norm ---------------------------------------------------------------------

TEST(FuseResidualRmsNorm, BeforeAfterTextWithTheNextResidual) {
  const Graph g = ir::parse(R"(graph @pre_norm {
  %0 = input[name="x", shape=[4, 6] f32] : [4, 6] f32
  %1 = input[name="r", shape=[4, 6] f32] : [4, 6] f32
  %2 = param[name="gamma", shape=[6] f32] : [6] f32
  %3 = add(%0, %1) : [4, 6] f32
  %4 = rms_norm[eps=1e-05](%3, %2) : [4, 6] f32
  %5 = silu(%4) : [4, 6] f32
  %6 = add(%3, %5) : [4, 6] f32
  return %6
})");
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-rms-norm", rep);
  EXPECT_EQ(ir::print(out), ir::print(ir::parse(R"(graph @pre_norm {
  %0 = input[name="x", shape=[4, 6] f32] : [4, 6] f32
  %1 = input[name="r", shape=[4, 6] f32] : [4, 6] f32
  %2 = param[name="gamma", shape=[6] f32] : [6] f32
  %3 = residual_rms_norm(%0, %1, %2) : ([4, 6] f32, [4, 6] f32)
  %4 = get[index=1](%3) : [4, 6] f32
  %5 = silu(%4) : [4, 6] f32
  %6 = get[index=0](%3) : [4, 6] f32
  %7 = add(%6, %5) : [4, 6] f32
  return %7
})")));
  EXPECT_EQ(rep.applied["residual_rms_norm"], 1);
  EXPECT_EQ(rep.applied["residual_rms_norm_sum"], 1);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
  expect_same(g, out);
}

TEST(FuseResidualRmsNorm, SumAlsoAGraphOutput) {
  const Graph g = pre_norm(/*sum_is_output=*/true);
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-rms-norm", rep);
  EXPECT_EQ(count_ops(out, OpKind::ResidualRmsNorm), 1) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::RmsNorm), 0);
  EXPECT_EQ(count_ops(out, OpKind::Add), 1); // the next residual only
  expect_same(g, out);
}

TEST(FuseResidualRmsNorm, BroadcastResidualIsAShapeMiss) {
  Graph g("bias_then_norm");
  Builder b(g);
  NodeId x = b.input("x", Shape({4, 6}));
  NodeId bias = b.param("bias", Shape({6}));
  b.output(b.rms_norm(b.add(x, bias), b.param("gamma", Shape({6})), 1e-5));
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-rms-norm", rep);
  EXPECT_EQ(count_ops(out, OpKind::ResidualRmsNorm), 0);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::shape_mismatch);
}

TEST(FuseResidualRmsNorm, ClaimedForF32OnlyMissesF64) {
  Graph g("f64");
  Builder b(g);
  NodeId x = b.input("x", Shape({4, 6}, DType::f64));
  NodeId r = b.input("r", Shape({4, 6}, DType::f64));
  b.output(b.rms_norm(b.add(x, r), b.param("gamma", Shape({6}, DType::f64)), 1e-5));
  ir::ClaimSet claims = testing::claim_all_but({OpKind::ResidualRmsNorm});
  claims.claim(OpKind::ResidualRmsNorm, {DType::f32});
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-rms-norm", rep, &claims);
  EXPECT_EQ(count_ops(out, OpKind::ResidualRmsNorm), 0);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::not_claimed);
}

TEST(FuseResidualRmsNorm, ChainOfPreNormBlocks) {
  // Three LLaMA-style residual steps: every norm of a sum fuses, every sum is computed once.
  Graph g("chain");
  Builder b(g);
  NodeId h = b.input("x", Shape({3, 6}));
  NodeId gamma = b.param("gamma", Shape({6}));
  NodeId n0 = b.rms_norm(h, gamma, 1e-5); // the first norm reads the embedding: no residual
  NodeId delta = b.silu(n0);
  for (int i = 0; i < 3; ++i) {
    h = b.add(h, delta);
    delta = b.tanh(b.rms_norm(h, gamma, 1e-5));
  }
  b.output(b.add(h, delta));
  FusionReport rep;
  const Graph out = run(g, "fuse-residual-rms-norm", rep);
  EXPECT_EQ(count_ops(out, OpKind::ResidualRmsNorm), 3) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::RmsNorm), 1);
  EXPECT_EQ(count_ops(out, OpKind::Add), 1); // the last residual, whose sum nothing normalises
  expect_same(g, out);
}

// ---- unfuse round trip --------------------------------------------------------------------------

TEST(ResidualNormUnfuse, RoundTripGivesTheOriginalValues) {
  for (const Graph& g : {post_norm(true), post_norm(false), pre_norm(true)}) {
    SCOPED_TRACE(g.name());
    FusionReport rep;
    Graph fused = run(g, "fuse-residual-layer-norm", rep);
    fused = run(fused, "fuse-residual-rms-norm", rep);
    EXPECT_EQ(
        count_ops(fused, OpKind::ResidualLayerNorm) + count_ops(fused, OpKind::ResidualRmsNorm), 1);
    const Graph back = run(fused, "unfuse", rep);
    EXPECT_EQ(count_ops(back, OpKind::ResidualLayerNorm), 0);
    EXPECT_EQ(count_ops(back, OpKind::ResidualRmsNorm), 0);
    EXPECT_EQ(count_ops(back, OpKind::Get), 0) << ir::print(back);
    EXPECT_EQ(back.size(), g.size()) << ir::print(back);
    expect_same(g, back);
  }
}

} // namespace
} // namespace rlx::fusion
