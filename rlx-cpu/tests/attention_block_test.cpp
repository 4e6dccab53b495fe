// attention_block_test.cpp: FusedAttentionBlock through the CPU compile pipeline. rlx's own HIR
// blocks (the attention block with every mask kind, RoPE, GQA and biases; a BERT layer; a LLaMA
// block) and an attention sub-layer spelled as an ONNX export spells it each compile, with fusion
// on, into one fused_attention_block kernel that matches the reference interpreter and the
// unfused compile, under each GEMM provider.
#include "fused_run_testing.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using namespace rlx;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

using cpu::testing::CpuRun;
using cpu::testing::random_tensor;
using cpu::testing::run;

cpu::testing::LeafValues values_of(const Graph& g) {
  return cpu::testing::block_leaf_values(g, 11);
}

/// Runs \p g fused and unfused under each GEMM provider and against the reference; \returns the
/// fused run of the last provider.
CpuRun check(const Graph& g, double tol) {
  std::initializer_list<cpu::CpuOptions> providers = {
      cpu::CpuOptions{cpu::GemmProvider::onednn, 0, false, 0},
      cpu::CpuOptions{cpu::GemmProvider::automatic, 0, false, 0},
      cpu::CpuOptions{cpu::GemmProvider::openblas, 0, false, 0},
      cpu::CpuOptions{cpu::GemmProvider::packed, 0, false, 0}};
  return cpu::testing::check_fused(g, tol, values_of(g), providers);
}

int fused_blocks(const CpuRun& r) {
  int n = 0;
  for (std::size_t p = r.listing.find("fused_attention_block"); p != std::string::npos;
       p = r.listing.find("fused_attention_block", p + 1))
    ++n;
  return n;
}

/// rlx's HIR attention block: x [2, S, 32], 4 query heads of 8, \p kvh kv heads.
Graph hir_block(ir::MaskKind mask, std::int64_t kvh, bool bias, bool rope, DType t = DType::f32,
                std::int64_t s = 9) {
  Graph g("attn");
  Builder b(g);
  const std::int64_t e = 32, h = 4, d = 8;
  NodeId x = b.input("x", Shape({2, s, e}, t));
  auto w = [&](const char* n, std::vector<std::int64_t> dims) {
    std::vector<ir::Dim> ds(dims.begin(), dims.end());
    return b.param(n, Shape(ds, t));
  };
  std::vector<NodeId> in{x, w("wq", {h * d, e}), w("wk", {kvh * d, e}), w("wv", {kvh * d, e}),
                         w("wo", {e, h * d})};
  if (bias)
    for (const auto& [n, r] : std::initializer_list<std::pair<const char*, std::int64_t>>{
             {"bq", h * d}, {"bk", kvh * d}, {"bv", kvh * d}, {"bo", e}})
      in.push_back(w(n, {r}));
  if (mask == ir::MaskKind::padding)
    in.push_back(b.input("mask", Shape({2, s}, t)));
  if (mask == ir::MaskKind::bias)
    in.push_back(b.input("bias", Shape({2, h, s, s}, t)));
  ir::AttentionBlockAttrs a;
  a.num_heads = h;
  a.num_kv_heads = kvh;
  a.mask = mask;
  a.window = mask == ir::MaskKind::sliding_window ? 3 : 0;
  a.bias = bias;
  a.rope = rope;
  a.rope_theta = 1000.0;
  b.output(b.attention_block(in, a));
  return g;
}

TEST(CpuAttentionBlock, EveryMaskKindWithGqaRopeAndBiases) {
  for (ir::MaskKind mask : {ir::MaskKind::none, ir::MaskKind::causal, ir::MaskKind::sliding_window,
                            ir::MaskKind::padding, ir::MaskKind::bias})
    for (std::int64_t kvh : {4, 2, 1})
      for (int variant = 0; variant < 2; ++variant) {
        SCOPED_TRACE(std::string(ir::enum_names(mask)[static_cast<std::size_t>(mask)]) + " kvh " +
                     std::to_string(kvh) + " variant " + std::to_string(variant));
        CpuRun r = check(hir_block(mask, kvh, variant == 0, variant == 1), 2e-5);
        EXPECT_EQ(fused_blocks(r), 1) << r.listing;
        EXPECT_EQ(r.listing.find("split"), std::string::npos) << r.listing;
        EXPECT_EQ(r.listing.find("rope"), std::string::npos) << r.listing;
      }
}

TEST(CpuAttentionBlock, LongSequenceSeveralQueryBlocksAndKeyTiles) {
  CpuRun r = check(hir_block(ir::MaskKind::causal, 2, true, true, DType::f32, 100), 5e-5);
  EXPECT_EQ(fused_blocks(r), 1) << r.listing;
}

TEST(CpuAttentionBlock, F64IsNotClaimedAndRunsUnfused) {
  const Graph g = hir_block(ir::MaskKind::causal, 2, true, true, DType::f64);
  const auto v = values_of(g);
  const auto want = ir::reference::evaluate(g, v.inputs, v.params);
  CpuRun r = run(g, cpu::CpuBackend(), true, v.all);
  EXPECT_EQ(fused_blocks(r), 0) << r.listing;
  EXPECT_EQ(r.fusion.missed.empty(), false) << r.fusion.str();
  EXPECT_LE(ir::max_abs_diff(r.out[0], want[0]), 1e-12);
}

TEST(CpuAttentionBlock, BertLayerAndLlamaBlock) {
  {
    Graph g("bert");
    Builder b(g);
    NodeId x = b.input("x", Shape({2, 17, 32}));
    auto w = [&](const char* n, std::vector<ir::Dim> d) {
      return b.param(n, Shape(d, DType::f32));
    };
    NodeId mask = b.input("mask", Shape({2, 17}));
    ir::BertLayerAttrs a;
    a.num_heads = 4;
    a.padding_mask = true;
    b.output(
        b.bert_layer({x, w("wq", {32, 32}), w("bq", {32}), w("wk", {32, 32}), w("bk", {32}),
                      w("wv", {32, 32}), w("bv", {32}), w("wo", {32, 32}), w("bo", {32}),
                      w("ln1_g", {32}), w("ln1_b", {32}), w("w1", {64, 32}), w("b1", {64}),
                      w("w2", {32, 64}), w("b2", {32}), w("ln2_g", {32}), w("ln2_b", {32}), mask},
                     a));
    CpuRun r = check(g, 5e-5);
    EXPECT_EQ(fused_blocks(r), 1) << r.listing;
    EXPECT_EQ(r.fusion.applied["attention_block"], 1) << r.fusion.str();
  }
  {
    Graph g("llama");
    Builder b(g);
    NodeId x = b.input("x", Shape({1, 13, 32}));
    auto w = [&](const char* n, std::vector<ir::Dim> d) {
      return b.param(n, Shape(d, DType::f32));
    };
    ir::LlamaBlockAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    b.output(b.llama_block({x, w("attn_norm", {32}), w("wq", {32, 32}), w("wk", {16, 32}),
                            w("wv", {16, 32}), w("wo", {32, 32}), w("ffn_norm", {32}),
                            w("w_gate", {48, 32}), w("w_up", {48, 32}), w("w_down", {32, 48})},
                           a));
    CpuRun r = check(g, 5e-5);
    EXPECT_EQ(fused_blocks(r), 1) << r.listing;
    EXPECT_EQ(r.fusion.applied["attention_block_matmul"], 1) << r.fusion.str();
  }
}

TEST(CpuAttentionBlock, OnnxSpelledSubLayer) {
  // What an ONNX export of a BERT self-attention looks like: [K, N] weights, bias Adds, head
  // Reshape + Transpose, MatMul / Div / Add(mask) / Softmax / MatMul, Transpose back, Reshape,
  // the output MatMul + Add. The earlier passes pack Q / K / V (along axis 1), take the biases,
  // and turn the spelled attention into a bshd Attention; the block fusion takes the rest.
  const std::int64_t B = 2, S = 9, H = 4, D = 8, E = H * D;
  Graph g("onnx_attn");
  Builder b(g);
  NodeId x = b.input("x", Shape({B, S, E}));
  NodeId mask = b.input("attn_bias", Shape({B, 1, 1, S}));
  auto proj = [&](const std::string& n) {
    NodeId w = b.param(n + ".weight", Shape({E, E}));
    NodeId bias = b.param(n + ".bias", Shape({E}));
    return b.add(b.matmul(x, w), bias);
  };
  auto heads = [&](NodeId p, std::vector<std::int64_t> perm) {
    return b.transpose(b.reshape(p, {B, S, H, D}), perm);
  };
  NodeId q = heads(proj("query"), {0, 2, 1, 3});
  NodeId k = heads(proj("key"), {0, 2, 3, 1});
  NodeId v = heads(proj("value"), {0, 2, 1, 3});
  NodeId sc = b.add(b.div(b.matmul(q, k), b.scalar(std::sqrt(static_cast<double>(D)))), mask);
  NodeId o = b.matmul(b.softmax(sc, -1), v);
  NodeId m = b.reshape(b.transpose(o, {0, 2, 1, 3}), {B, S, E});
  NodeId wo = b.param("out.weight", Shape({E, E}));
  b.output(b.add(b.matmul(m, wo), b.param("out.bias", Shape({E}))));
  CpuRun r = check(g, 2e-5);
  EXPECT_EQ(fused_blocks(r), 1) << r.listing << r.fusion.str();
  EXPECT_EQ(r.listing.find("transpose"), std::string::npos) << r.listing;
}

} // namespace
