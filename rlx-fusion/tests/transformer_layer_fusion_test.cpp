// transformer_layer_fusion_test.cpp: fuse-transformer-layer on what the earlier fusion passes leave
// of rlx's own BERT and LLaMA layers (the HIR blocks, lowered and fused as the compile pipeline
// does): before / after IR text, every layer fused (LLaMA's first norm taken from the previous
// layer's residual norm; the last layer ending in the final norm or in a plain Add), a reported
// miss per precondition, the claim gate, the pass list, unfuse, and numerical equivalence with
// the reference interpreter (the fused op's reference is its decomposition: equal exactly).
#include "fusion_testing.hpp"
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/text.hpp"

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::Dim;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;

const ir::ClaimSet& all_claims() {
  static const ir::ClaimSet c = testing::claim_all_but({OpKind::ElementwiseRegion});
  return c;
}

/// \p hir lowered and fused by every pass before fuse-transformer-layer, as the pipeline runs them.
Graph before_layer_fusion(const Graph& hir) {
  PassRegistry reg;
  register_fusion_passes(reg);
  PassManagerOptions pmo;
  pmo.verify = true;
  PassManager pm(pmo);
  FusionOptions opts;
  opts.disabled.insert("fuse-transformer-layer");
  pm.add(reg, fusion_passes_for_supported(all_claims(), opts));
  PassContext ctx;
  ctx.claims = &all_claims();
  Graph g = ir::lower_hir(hir);
  pm.run(g, ctx);
  return g;
}

/// A BERT encoder of \p layers post-norm layers (E 16, 2 heads, FFN 24), padding mask optional.
Graph bert(int layers, bool mask) {
  Graph g("bert");
  Builder b(g);
  const Dim seq = Dim::sym("seq");
  NodeId x = b.input("x", Shape({2, seq, 16}));
  NodeId m = mask ? b.input("mask", Shape({2, seq})) : NodeId{};
  for (int l = 0; l < layers; ++l) {
    auto w = [&](const std::string& n, std::vector<Dim> d) {
      return b.param("l" + std::to_string(l) + "." + n, Shape(std::move(d), ir::DType::f32));
    };
    std::vector<NodeId> in{x,
                           w("wq", {16, 16}),
                           w("bq", {16}),
                           w("wk", {16, 16}),
                           w("bk", {16}),
                           w("wv", {16, 16}),
                           w("bv", {16}),
                           w("wo", {16, 16}),
                           w("bo", {16}),
                           w("g1", {16}),
                           w("b1", {16}),
                           w("wi", {24, 16}),
                           w("bi", {24}),
                           w("wd", {16, 24}),
                           w("bd", {16}),
                           w("g2", {16}),
                           w("b2", {16})};
    if (mask)
      in.push_back(m);
    ir::BertLayerAttrs a;
    a.num_heads = 2;
    a.eps = 1e-5;
    a.padding_mask = mask;
    x = b.bert_layer(in, a);
  }
  b.output(x);
  return g;
}

/// A LLaMA decoder of \p layers pre-norm blocks (E 16, 4 heads, 2 KV heads, FFN 20), with the
/// final RMSNorm when \p final_norm.
Graph llama(int layers, bool final_norm) {
  Graph g("llama");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, Dim::sym("seq"), 16}));
  for (int l = 0; l < layers; ++l) {
    auto w = [&](const std::string& n, std::vector<Dim> d) {
      return b.param("l" + std::to_string(l) + "." + n, Shape(std::move(d), ir::DType::f32));
    };
    ir::LlamaBlockAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.eps = 1e-5;
    x = b.llama_block({x, w("attn_norm", {16}), w("wq", {16, 16}), w("wk", {8, 16}),
                       w("wv", {8, 16}), w("wo", {16, 16}), w("ffn_norm", {16}), w("wg", {20, 16}),
                       w("wu", {20, 16}), w("wd", {16, 20})},
                      a);
  }
  if (final_norm)
    x = b.rms_norm(x, b.param("final_norm", Shape::of({16})), 1e-5);
  b.output(x);
  return g;
}

/// The layer pass on \p before (verified), equal values checked bit for bit.
Graph fuse(const Graph& before, FusionReport& rep, const ir::ClaimSet* claims = &all_claims()) {
  Graph after = testing::run_pass(before, "fuse-transformer-layer", claims, rep);
  testing::expect_same_values(before, after, 0.0);
  return after;
}

TEST(FuseTransformerLayer, BertLayersBeforeAfterText) {
  const Graph before = before_layer_fusion(bert(2, true));
  EXPECT_EQ(count_ops(before, OpKind::FusedAttentionBlock), 2);
  EXPECT_EQ(count_ops(before, OpKind::ResidualLayerNorm), 4);
  FusionReport rep;
  const Graph after = fuse(before, rep);
  EXPECT_EQ(count_ops(after, OpKind::FusedTransformerLayer), 2);
  for (OpKind k : {OpKind::FusedAttentionBlock, OpKind::ResidualLayerNorm, OpKind::MatMulBiasAct})
    EXPECT_EQ(count_ops(after, k), 0) << ir::op_name(k);
  EXPECT_EQ(rep.applied["transformer_layer_bert"], 2) << rep.str();
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
  const std::string text = ir::print(after);
  EXPECT_NE(text.find("fused_transformer_layer[num_heads=2, num_kv_heads=2, mask=padding, "
                      "qkv_bias=true, out_bias=true, eps=1e-05, norm_beta=true, act=gelu, "
                      "up_bias=true, down_bias=true]"),
            std::string::npos)
      << ir::print(before) << "\n---- after ----\n"
      << text;
}

TEST(FuseTransformerLayer, LlamaLayersChainThroughTheResidualNorms) {
  for (bool final_norm : {true, false}) {
    SCOPED_TRACE(final_norm ? "final norm" : "no final norm");
    const Graph before = before_layer_fusion(llama(3, final_norm));
    // fuse-residual-rms-norm joined each residual Add with the next norm.
    EXPECT_EQ(count_ops(before, OpKind::ResidualRmsNorm), final_norm ? 6 : 5);
    FusionReport rep;
    const Graph after = fuse(before, rep);
    EXPECT_EQ(count_ops(after, OpKind::FusedTransformerLayer), 3);
    EXPECT_EQ(rep.applied["transformer_layer_llama"], 3) << rep.str();
    EXPECT_TRUE(rep.missed.empty()) << rep.str();
    for (OpKind k : {OpKind::FusedAttentionBlock, OpKind::ResidualRmsNorm, OpKind::SwiGluMatMul,
                     OpKind::Add, OpKind::MatMul})
      EXPECT_EQ(count_ops(after, k), 0) << ir::op_name(k) << "\n" << ir::print(after);
    // What is left outside the layers: the final norm only.
    EXPECT_EQ(count_ops(after, OpKind::RmsNorm), final_norm ? 1 : 0) << ir::print(after);
    EXPECT_NE(ir::print(after).find("fused_transformer_layer[kind=llama_pre_norm, num_heads=4, "
                                    "num_kv_heads=2, mask=causal, rope=true"),
              std::string::npos)
        << ir::print(after);
  }
}

/// The first node of op \p k in \p g.
NodeId first(const Graph& g, OpKind k) {
  for (NodeId id : g.ids())
    if (g.node(id).op == k)
      return id;
  return {};
}

TEST(FuseTransformerLayer, EachPreconditionIsAReportedMiss) {
  struct Case {
    const char* what;
    bool llama;
    OpKind inner;   ///< the first node of this op gets another use
    bool as_output; ///< the extra use is a graph output (else a Neg output)
    MissReason reason;
  };
  for (const Case& c : {Case{"bert ffn up is an output", false, OpKind::MatMulBiasAct, true,
                             MissReason::is_graph_output},
                        Case{"bert block read twice", false, OpKind::FusedAttentionBlock, false,
                             MissReason::multiple_consumers},
                        Case{"bert norm value read by a third op", false, OpKind::Get, false,
                             MissReason::multiple_consumers},
                        Case{"llama swiglu is an output", true, OpKind::SwiGluMatMul, true,
                             MissReason::is_graph_output},
                        Case{"llama first norm read twice", true, OpKind::RmsNorm, false,
                             MissReason::multiple_consumers}}) {
    SCOPED_TRACE(c.what);
    Graph g = before_layer_fusion(c.llama ? llama(1, false) : bert(1, false));
    NodeId inner = first(g, c.inner);
    if (c.inner == OpKind::Get) { // the attention norm's value (get 1 of the first residual norm)
      inner = {};
      for (NodeId id : g.ids())
        if (!inner.valid() && g.node(id).op == OpKind::Get &&
            g.node(g.node(id).inputs[0]).op == OpKind::ResidualLayerNorm &&
            g.node(id).attr<ir::GetAttrs>().index == 1)
          inner = id;
    }
    ASSERT_TRUE(inner.valid());
    Builder b(g);
    b.output(c.as_output ? inner : b.neg(inner));
    FusionReport rep;
    const Graph after = fuse(g, rep);
    EXPECT_EQ(count_ops(after, OpKind::FusedTransformerLayer), 0);
    ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
    EXPECT_EQ(rep.missed[0].reason, c.reason) << rep.str();
    EXPECT_EQ(rep.missed[0].pattern,
              c.llama ? "transformer_layer_llama" : "transformer_layer_bert");
  }
}

TEST(FuseTransformerLayer, ALlamaLayerAfterAMissStartsFromTheResidualNorm) {
  // Layer 0 cannot fuse (its SwiGLU product is also an output); layer 1's first norm is then
  // layer 0's residual norm: the layer takes its Add apart and computes the norm itself.
  Graph g = before_layer_fusion(llama(2, true));
  Builder b(g);
  b.output(first(g, OpKind::SwiGluMatMul));
  FusionReport rep;
  const Graph after = fuse(g, rep);
  EXPECT_EQ(count_ops(after, OpKind::FusedTransformerLayer), 1);
  EXPECT_EQ(rep.applied["transformer_layer_llama"], 1);
  EXPECT_EQ(rep.missed.size(), 1u) << rep.str();
}

TEST(FuseTransformerLayer, UnclaimedIsANotClaimedMiss) {
  const Graph before = before_layer_fusion(bert(1, false));
  ir::ClaimSet f64_only = testing::claim_all_but({OpKind::FusedTransformerLayer});
  f64_only.claim(OpKind::FusedTransformerLayer, {ir::DType::f64});
  FusionReport rep;
  const Graph after = fuse(before, rep, &f64_only);
  EXPECT_EQ(count_ops(after, OpKind::FusedTransformerLayer), 0);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::not_claimed);
}

TEST(FuseTransformerLayer, PassIsListedOnlyWhenClaimed) {
  const auto has = [](const std::vector<std::string>& v) {
    return std::find(v.begin(), v.end(), "fuse-transformer-layer") != v.end();
  };
  FusionOptions on;
  on.enabled.insert("fuse-transformer-layer");
  EXPECT_TRUE(has(fusion_passes_for_supported(all_claims(), on)));
  EXPECT_FALSE(has(
      fusion_passes_for_supported(testing::claim_all_but({OpKind::FusedTransformerLayer}), on)));
  // Opt-in: off unless enabled, and --no-fuse-pass still wins.
  EXPECT_FALSE(has(fusion_passes_for_supported(all_claims(), {})));
  on.disabled.insert("fuse-transformer-layer");
  EXPECT_FALSE(has(fusion_passes_for_supported(all_claims(), on)));
  FusionOptions bad;
  bad.enabled.insert("fuse-everything");
  EXPECT_THROW(check_fusion_options(bad), Error);
  // It runs after the passes whose ops it matches.
  std::vector<std::string> names;
  for (const FusionPassInfo& p : fusion_pass_table())
    names.emplace_back(p.name);
  const auto at = [&](std::string_view n) { return std::find(names.begin(), names.end(), n); };
  for (const char* earlier :
       {"fuse-attention-block", "fuse-residual-layer-norm", "fuse-residual-rms-norm",
        "fuse-matmul-bias-act", "fuse-swiglu-matmul"})
    EXPECT_LT(at(earlier), at("fuse-transformer-layer")) << earlier;
}

TEST(FuseTransformerLayer, UnfuseGivesTheChainBack) {
  for (bool is_llama : {false, true}) {
    const Graph before = before_layer_fusion(is_llama ? llama(2, true) : bert(2, true));
    FusionReport rep;
    const Graph fused = fuse(before, rep);
    FusionReport none;
    const Graph unfused = testing::run_pass(fused, "unfuse", nullptr, none);
    EXPECT_EQ(count_ops(unfused, OpKind::FusedTransformerLayer), 0);
    EXPECT_EQ(count_ops(unfused, OpKind::FusedAttentionBlock), 0); // unfuse goes to primitives
    testing::expect_same_values(before, unfused, 0.0);
  }
}

} // namespace
} // namespace rlx::fusion
