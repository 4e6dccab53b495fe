// fusion_passes_test.cpp: the claim-gated pass list (two claim sets give different pass lists and
// different, equally correct graphs), FusionOptions, registration, and unfuse round trips.
#include "fusion_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/text.hpp"

#include <numbers>

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

/// Two exported FFN layers: x · W1 + b1, spelled erf-GELU, · W2 + b2, relu.
Graph exported_ffn() {
  Graph g("ffn");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3, 8}));
  NodeId h = b.add(b.matmul(x, b.param("w1", Shape::of({16, 8})), false, true),
                   b.param("b1", Shape::of({16})));
  NodeId e = b.erf(b.mul(h, b.scalar(1 / std::numbers::sqrt2, DType::f32)));
  h = b.mul(b.mul(h, b.scalar(0.5, DType::f32)), b.add(e, b.scalar(1, DType::f32)));
  NodeId y = b.add(b.matmul(h, b.param("w2", Shape::of({16, 8}))), b.param("b2", Shape::of({8})));
  b.output(b.relu(y));
  return g;
}

/// \p g after the fusion passes \p claims allows, run as the compile pipeline runs them.
Graph fuse_for(const Graph& g, const ir::ClaimSet& claims, FusionReport& rep,
               const FusionOptions& opts = {}) {
  PassRegistry reg;
  register_fusion_passes(reg);
  PassManagerOptions pmo;
  pmo.verify = true;
  PassManager pm(pmo);
  pm.add(reg, fusion_passes_for_supported(claims, opts));
  PassContext ctx;
  ctx.claims = &claims;
  ctx.report = &rep;
  Graph out = g;
  pm.run(out, ctx);
  return out;
}

TEST(FusionPasses, TheTableIsOrderedAndRegistered) {
  PassRegistry reg;
  register_fusion_passes(reg);
  std::vector<std::string> names;
  for (const FusionPassInfo& p : fusion_pass_table()) {
    EXPECT_TRUE(reg.contains(p.name)) << p.name;
    EXPECT_FALSE(p.emits.empty()) << p.name;
    EXPECT_EQ(reg.create(p.name)->name(), p.name);
    names.emplace_back(p.name);
  }
  EXPECT_TRUE(reg.contains("unfuse"));
  // The GELU recogniser runs before the MatMul epilogue fusion that consumes its op.
  const auto at = [&](std::string_view n) { return std::find(names.begin(), names.end(), n); };
  EXPECT_LT(at("fuse-gelu-spelling"), at("fuse-matmul-bias-act"));
}

TEST(FusionPasses, TwoClaimSetsGiveDifferentPassListsAndEquallyCorrectGraphs) {
  // Regions would group the elementwise rest; these tests follow the pattern fusions alone.
  const ir::ClaimSet all = testing::claim_all_but({OpKind::ElementwiseRegion});
  const ir::ClaimSet no_fused =
      testing::claim_all_but({OpKind::MatMulBiasAct, OpKind::ElementwiseRegion});
  const auto with = fusion_passes_for_supported(all);
  const auto without = fusion_passes_for_supported(no_fused);
  EXPECT_NE(std::find(with.begin(), with.end(), "fuse-matmul-bias-act"), with.end());
  EXPECT_EQ(std::find(without.begin(), without.end(), "fuse-matmul-bias-act"), without.end());
  EXPECT_NE(std::find(without.begin(), without.end(), "fuse-gelu-spelling"), without.end());

  const Graph g = exported_ffn();
  FusionReport rep_all, rep_none;
  const Graph a = fuse_for(g, all, rep_all);
  const Graph b = fuse_for(g, no_fused, rep_none);
  EXPECT_EQ(count_ops(a, OpKind::MatMulBiasAct), 2) << ir::print(a);
  EXPECT_EQ(count_ops(a, OpKind::MatMul), 0);
  EXPECT_EQ(count_ops(b, OpKind::MatMulBiasAct), 0) << ir::print(b);
  EXPECT_EQ(count_ops(b, OpKind::MatMul), 2);
  EXPECT_EQ(count_ops(b, OpKind::Gelu), 1); // the recogniser still ran
  EXPECT_NE(a, b);
  expect_same_values(g, a, 1e-6);
  expect_same_values(g, b, 1e-6);
  EXPECT_EQ(rep_all.total_applied(), 5) << rep_all.str(); // gelu, 2 biases, 2 activations
  EXPECT_EQ(rep_none.total_applied(), 1) << rep_none.str();
  // Without the fused op's pass, nothing is reported as missed for it either: it never ran.
  EXPECT_TRUE(rep_none.missed.empty()) << rep_none.str();
}

TEST(FusionPasses, OptionsTurnPassesOff) {
  const ir::ClaimSet all = testing::claim_all_but({OpKind::ElementwiseRegion});
  FusionOptions no_gelu;
  no_gelu.disabled.insert("fuse-gelu-spelling");
  const auto names = fusion_passes_for_supported(all, no_gelu);
  EXPECT_EQ(std::find(names.begin(), names.end(), "fuse-gelu-spelling"), names.end());
  EXPECT_NE(std::find(names.begin(), names.end(), "fuse-matmul-bias-act"), names.end());
  // Without the recogniser the spelled GELU stays, so only the bias of the first layer fuses.
  FusionReport rep;
  const Graph f = fuse_for(exported_ffn(), all, rep, no_gelu);
  EXPECT_EQ(count_ops(f, OpKind::Erf), 1) << ir::print(f);
  EXPECT_EQ(count_ops(f, OpKind::MatMulBiasAct), 2);
  expect_same_values(exported_ffn(), f, 1e-6);
  // A name that is no fusion pass is an error naming the passes.
  FusionOptions typo;
  typo.disabled.insert("fuse-matmul-bias");
  try {
    check_fusion_options(typo);
    FAIL() << "an unknown pass name was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("fuse-matmul-bias-act"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_fusion_options(no_gelu));
}

TEST(FusionPasses, FuseThenUnfuseGivesTheOriginalValues) {
  const ir::ClaimSet all = testing::claim_all_but({});
  const Graph g = exported_ffn();
  FusionReport rep;
  const Graph f = fuse_for(g, all, rep);
  const Graph u = testing::run_pass(f, "unfuse", &all, rep);
  for (NodeId id : u.ids())
    EXPECT_FALSE(ir::has_flag(u.node(id).op, ir::kFused)) << ir::describe(u, id);
  EXPECT_EQ(count_ops(u, OpKind::MatMul), 2);
  // The unfused graph is the primitive chain of the fused one: bit-identical to it, and to the
  // original up to the recognised GELU (one rounding instead of eight).
  expect_same_values(f, u, 0);
  expect_same_values(g, u, 1e-6);
  // Unfusing a graph without fused ops changes nothing.
  FusionReport none;
  EXPECT_EQ(testing::run_pass(g, "unfuse", &all, none), g);
}

TEST(FusionPasses, EveryFusedOpCanBeUnfused) {
  for (OpKind op : ir::testing::all_ops()) {
    if (!ir::has_flag(op, ir::kFused))
      continue;
    SCOPED_TRACE(std::string(ir::op_name(op)));
    const Graph g = ir::testing::sample_graph(op);
    FusionReport rep;
    const Graph u =
        testing::run_pass(g.bind(ir::testing::sample_bindings(g)), "unfuse", nullptr, rep);
    EXPECT_EQ(count_ops(u, op), 0) << ir::print(u);
    // Every fused op's reference is its decomposition (bit-identical), except the conv / pool
    // backward ops, whose reference kernels are direct loops in double (rlx-ir DESIGN): their
    // unfused im2col chain rounds each f32 sum of a few dozen products of values in [-1, 1].
    const bool loop_reference =
        op == OpKind::Conv2dGradInput || op == OpKind::Conv2dGradWeight || op == OpKind::Pool2dGrad;
    expect_same_values(g, u, loop_reference ? 1e-5 : 0);
  }
}

} // namespace
} // namespace rlx::fusion
