// attention_block_fusion_test.cpp: fuse-attention-block. A positive test per model form (BERT:
// biases, no RoPE, padding mask; LLaMA: RoPE, GQA, causal, no biases), before / after IR text, one
// negative test per precondition with the MissReason the report gives, the claim gate, unfuse, and
// numerical equivalence with the reference interpreter on random inputs (the fused op's reference
// is its decomposition, so the values are equal exactly).
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/count_ops.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

using ir::testing::count_ops;

/// What the test graph varies.
struct Form {
  std::int64_t h = 4, kvh = 4, d = 8, e = 32;
  bool qkv_bias = true, out_bias = true, rope = false;
  ir::MaskKind mask = ir::MaskKind::none;
  DType dtype = DType::f32;
  // Broken preconditions.
  bool q_get_reused = false;    ///< q's Get has a second user (an output)
  bool attn_is_output = false;  ///< the attention is also a graph output
  bool rope_q_only = false;     ///< RoPE of q but not of k
  bool swapped_parts = false;   ///< q reads part 1, k part 0
  bool proj_activation = false; ///< the packed projection has a GELU epilogue
  bool extra_head_use = false;  ///< v's head Reshape feeds another op too
};

/// The attention sub-layer as the earlier passes leave it: the packed projection (MatMulBiasAct
/// with a bias, MatMul without), Split, Get + head Reshape per part, optional Rope, a bshd
/// Attention, the merging Reshape and the output projection.
Graph block_graph(const Form& f) {
  Graph g("attn");
  Builder b(g);
  const Dim seq = Dim::sym("seq");
  const std::int64_t nt = (f.h + 2 * f.kvh) * f.d, hd = f.h * f.d;
  const NodeId x = b.input("x", Shape({2, seq, f.e}, f.dtype));
  const NodeId w = b.param("w_qkv", Shape({nt, f.e}, f.dtype));
  const NodeId wo = b.param("w_o", Shape({f.e, hd}, f.dtype));
  NodeId p;
  if (f.qkv_bias || f.proj_activation) {
    std::vector<NodeId> in{x, w};
    if (f.qkv_bias)
      in.push_back(b.param("b_qkv", Shape({nt}, f.dtype)));
    p = b.op(OpKind::MatMulBiasAct, in,
             ir::MatMulBiasActAttrs{
                 false, true, f.proj_activation ? ir::Activation::gelu : ir::Activation::none},
             "qkv");
  } else {
    p = b.matmul(x, w, false, true);
  }
  const NodeId sp = b.split(p, 2, {f.h * f.d, f.kvh * f.d, f.kvh * f.d});
  auto heads = [&](std::int64_t part, std::int64_t h) {
    const NodeId get = b.get(sp, part);
    if (part == 0 && f.q_get_reused)
      b.output(get);
    return b.reshape(get, {Dim(2), seq, Dim(h), Dim(f.d)});
  };
  NodeId q = heads(f.swapped_parts ? 1 : 0, f.h), k = heads(f.swapped_parts ? 0 : 1, f.kvh);
  const NodeId v = heads(2, f.kvh);
  if (f.extra_head_use)
    b.output(b.neg(v));
  if (f.rope || f.rope_q_only) {
    ir::RopeAttrs r;
    r.theta = 500.0;
    q = b.op(OpKind::Rope, {q}, r, "q_rope");
    if (!f.rope_q_only)
      k = b.op(OpKind::Rope, {k}, r, "k_rope");
  }
  ir::AttentionAttrs at;
  at.num_heads = f.h;
  at.num_kv_heads = f.kvh;
  at.mask = f.mask;
  at.window = f.mask == ir::MaskKind::sliding_window ? 3 : 0;
  std::vector<NodeId> ain{q, k, v};
  if (f.mask == ir::MaskKind::padding)
    ain.push_back(b.input("mask", Shape({2, seq}, DType::f32)));
  if (f.mask == ir::MaskKind::bias)
    ain.push_back(b.input("bias", Shape({2, f.h, seq, seq}, f.dtype)));
  const NodeId a = b.op(OpKind::Attention, ain, at, "attention");
  if (f.attn_is_output)
    b.output(a);
  const NodeId m = b.reshape(a, {Dim(2), seq, Dim(hd)});
  NodeId out;
  if (f.out_bias)
    out = b.op(OpKind::MatMulBiasAct, {m, wo, b.param("b_o", Shape({f.e}, f.dtype))},
               ir::MatMulBiasActAttrs{false, true, ir::Activation::none}, "o_proj");
  else
    out = b.matmul(m, wo, false, true);
  b.output(out);
  return g;
}

/// Applies the patterns to a copy of \p g (verified after); the reference values must be equal.
Graph fuse(const Graph& g, FusionReport* report = nullptr, const ir::ClaimSet* claims = nullptr) {
  Graph out = g;
  ApplyOptions o;
  o.report = report;
  o.claims = claims;
  apply_patterns(out, attention_block_patterns(), o);
  ir::verify(out);
  for (std::uint64_t seed : {1u, 2u}) {
    const auto in = ir::testing::random_inputs(g, seed);
    const auto params = ir::testing::random_params(g, seed);
    const auto a = ir::reference::evaluate(g, in, params);
    const auto b = ir::reference::evaluate(out, in, params);
    EXPECT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i)
      EXPECT_EQ(ir::max_abs_diff(a[i], b[i]), 0.0) << "output " << i;
  }
  return out;
}

MissedFusion only_miss(const FusionReport& r) {
  EXPECT_EQ(r.missed.size(), 1u) << r.str();
  return r.missed.empty() ? MissedFusion{} : r.missed.front();
}

TEST(FuseAttentionBlock, BertFormBeforeAfterText) {
  Form f;
  f.h = f.kvh = 2;
  f.d = 4;
  f.e = 8;
  f.mask = ir::MaskKind::padding;
  FusionReport rep;
  const Graph out = fuse(block_graph(f), &rep);
  EXPECT_EQ(ir::print(out), ir::print(ir::parse(R"(graph @attn {
  %0 = input[name="x", shape=[2, seq, 8] f32] : [2, seq, 8] f32
  %1 = param[name="w_qkv", shape=[24, 8] f32] : [24, 8] f32
  %2 = param[name="w_o", shape=[8, 8] f32] : [8, 8] f32
  %3 = param[name="b_qkv", shape=[24] f32] : [24] f32
  %4 = input[name="mask", shape=[2, seq] f32] : [2, seq] f32
  %5 = param[name="b_o", shape=[8] f32] : [8] f32
  %6 = fused_attention_block[num_heads=2, num_kv_heads=2, mask=padding, qkv_bias=true, out_bias=true](%0, %1, %2, %3, %5, %4) : [2, seq, 8] f32  # o_proj
  return %6
})")));
  EXPECT_EQ(rep.applied["attention_block"], 1) << rep.str();
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
}

TEST(FuseAttentionBlock, LlamaFormWithRopeAndGqa) {
  Form f;
  f.h = 4;
  f.kvh = 2;
  f.qkv_bias = f.out_bias = false;
  f.rope = true;
  f.mask = ir::MaskKind::causal;
  FusionReport rep;
  const Graph out = fuse(block_graph(f), &rep);
  ASSERT_EQ(count_ops(out, OpKind::FusedAttentionBlock), 1) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
  EXPECT_EQ(count_ops(out, OpKind::Rope), 0);
  EXPECT_EQ(count_ops(out, OpKind::Split), 0);
  EXPECT_EQ(rep.applied["attention_block_matmul"], 1) << rep.str();
  for (const auto& n : out.nodes())
    if (n.op == OpKind::FusedAttentionBlock) {
      const auto& a = n.attr<ir::FusedAttentionBlockAttrs>();
      EXPECT_TRUE(a.rope);
      EXPECT_EQ(a.rope_theta, 500.0);
      EXPECT_EQ(a.num_kv_heads, 2);
      EXPECT_EQ(a.mask, ir::MaskKind::causal);
      EXPECT_EQ(n.inputs.size(), 3u);
    }
}

TEST(FuseAttentionBlock, EveryMaskKindAndBiasCombination) {
  for (ir::MaskKind mask : {ir::MaskKind::none, ir::MaskKind::causal, ir::MaskKind::sliding_window,
                            ir::MaskKind::padding, ir::MaskKind::bias})
    for (int biases = 0; biases < 4; ++biases) {
      Form f;
      f.h = 4;
      f.kvh = 1;
      f.mask = mask;
      f.qkv_bias = biases & 1;
      f.out_bias = biases & 2;
      f.rope = biases == 3;
      FusionReport rep;
      const Graph out = fuse(block_graph(f), &rep);
      EXPECT_EQ(count_ops(out, OpKind::FusedAttentionBlock), 1) << ir::print(out);
      EXPECT_TRUE(rep.missed.empty()) << rep.str();
    }
}

struct NegativeCase {
  const char* name;
  void (*set)(Form&);
  MissReason reason;
};

TEST(FuseAttentionBlock, EachPreconditionIsAReportedMiss) {
  const NegativeCase cases[] = {
      {"q's Get is an output", [](Form& f) { f.q_get_reused = true; }, MissReason::is_graph_output},
      {"attention is an output", [](Form& f) { f.attn_is_output = true; },
       MissReason::is_graph_output},
      {"v's heads have another user", [](Form& f) { f.extra_head_use = true; },
       MissReason::multiple_consumers},
      {"RoPE of q only", [](Form& f) { f.rope_q_only = true; }, MissReason::attribute_mismatch},
      {"parts out of order", [](Form& f) { f.swapped_parts = true; }, MissReason::operand_mismatch},
      {"activation on the projection", [](Form& f) { f.proj_activation = true; },
       MissReason::attribute_mismatch},
  };
  for (const NegativeCase& c : cases) {
    Form f;
    c.set(f);
    FusionReport rep;
    const Graph out = fuse(block_graph(f), &rep);
    EXPECT_EQ(count_ops(out, OpKind::FusedAttentionBlock), 0) << c.name;
    EXPECT_EQ(only_miss(rep).reason, c.reason) << c.name << ": " << rep.str();
  }
}

TEST(FuseAttentionBlock, UnclaimedDtypeIsANotClaimedMiss) {
  ir::ClaimSet claims;
  ir::for_each_op([&](OpKind k) { claims.claim(k); });
  claims.unclaim(OpKind::FusedAttentionBlock);
  claims.claim(OpKind::FusedAttentionBlock, {DType::f32});
  Form f;
  f.dtype = DType::f64;
  FusionReport rep;
  const Graph out = fuse(block_graph(f), &rep, &claims);
  EXPECT_EQ(count_ops(out, OpKind::FusedAttentionBlock), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::not_claimed) << rep.str();
}

TEST(FuseAttentionBlock, PassIsListedOnlyWhenClaimed) {
  ir::ClaimSet all;
  ir::for_each_op([&](OpKind k) { all.claim(k); });
  ir::ClaimSet without = all;
  without.unclaim(OpKind::FusedAttentionBlock);
  auto has = [](const std::vector<std::string>& v) {
    return std::find(v.begin(), v.end(), "fuse-attention-block") != v.end();
  };
  EXPECT_TRUE(has(fusion_passes_for_supported(all, {})));
  EXPECT_FALSE(has(fusion_passes_for_supported(without, {})));
}

TEST(FuseAttentionBlock, DecompositionGivesTheChainBack) {
  Form f;
  f.h = 4;
  f.kvh = 2;
  f.rope = true;
  f.mask = ir::MaskKind::bias;
  const Graph g = block_graph(f);
  Graph out = fuse(g);
  ASSERT_EQ(count_ops(out, OpKind::FusedAttentionBlock), 1);
  PassRegistry reg;
  register_fusion_passes(reg);
  PassManager pm;
  pm.add(reg, "unfuse");
  PassContext ctx;
  pm.run(out, ctx);
  EXPECT_EQ(count_ops(out, OpKind::FusedAttentionBlock), 0);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 1);
  EXPECT_EQ(count_ops(out, OpKind::Rope), 2);
  for (std::uint64_t seed : {3u, 4u}) {
    const auto in = ir::testing::random_inputs(g, seed);
    const auto params = ir::testing::random_params(g, seed);
    EXPECT_EQ(ir::max_abs_diff(ir::reference::evaluate(g, in, params)[0],
                               ir::reference::evaluate(out, in, params)[0]),
              0.0);
  }
}

TEST(FuseAttentionBlock, ShapeRuleRejectsBadOperands) {
  Graph g("bad");
  Builder b(g);
  const NodeId x = b.input("x", Shape({2, 5, 8}, DType::f32));
  ir::FusedAttentionBlockAttrs a;
  a.num_heads = 2;
  a.num_kv_heads = 2;
  // 20 rows are not (2 + 2·2) heads of one head_dim.
  EXPECT_THROW(
      b.op(OpKind::FusedAttentionBlock,
           {x, b.param("w", Shape({20, 8}, DType::f32)), b.param("wo", Shape({8, 8}, DType::f32))},
           a),
      ir::ShapeError);
  // A padding mask kind without its mask operand.
  a.mask = ir::MaskKind::padding;
  EXPECT_THROW(b.op(OpKind::FusedAttentionBlock,
                    {x, b.param("w2", Shape({24, 8}, DType::f32)),
                     b.param("wo2", Shape({8, 8}, DType::f32))},
                    a),
               ir::ShapeError);
}

} // namespace
} // namespace rlx::fusion
