// fused_layer_test.cpp: the fused transformer layer (FusedTransformerLayer) in rlx-ir: its
// reference values against the HIR BertLayer / LlamaBlock with the same weights (lowered to
// primitives with three separate projections, so independent of the fused ops the layer's
// decomposition uses), the shape rule's errors, and text / JSON round trips.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/fused_layer.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/random_tensor.hpp"

#include <gtest/gtest.h>

namespace rlx::ir {
namespace {

using testing::uniform_tensor;

constexpr DType f64 = DType::f64;

/// Random f64 values for every Param of \p g (norm gains around 1).
reference::TensorMap params_of(const Graph& g) {
  reference::TensorMap p;
  std::uint64_t seed = 10;
  for (NodeId id : g.params()) {
    const std::string& name = g.node(id).attr<LeafAttrs>().name;
    const bool gain = name.rfind("g", 0) == 0 && g.shape(id).rank() == 1;
    p[name] = gain ? uniform_tensor(g.shape(id), seed++, 0.5, 1.5)
                   : uniform_tensor(g.shape(id), seed++, -0.4, 0.4);
  }
  return p;
}

double max_diff(const Tensor& a, const Tensor& b) {
  return max_abs_diff(a, b);
}

TEST(FusedLayer, LlamaLayerEqualsTheHirBlock) {
  // GQA (4 query heads, 2 KV heads, head_dim 4), RoPE, causal mask, batch 2.
  const std::int64_t e = 16, f = 12, s = 5;
  Graph hir("hir"), fused("fused");
  for (Graph* g : {&hir, &fused}) {
    Builder b(*g);
    NodeId x = b.input("x", Shape({2, s, e}, f64));
    auto w = [&](const char* n, std::vector<Dim> d) { return b.param(n, Shape(d, f64)); };
    NodeId g1 = w("g1", {e}), wq = w("wq", {16, e}), wk = w("wk", {8, e}), wv = w("wv", {8, e}),
           wo = w("wo", {e, 16}), g2 = w("g2", {e}), wg = w("wg", {f, e}), wu = w("wu", {f, e}),
           wd = w("wd", {e, f});
    if (g == &hir) {
      LlamaBlockAttrs a;
      a.num_heads = 4;
      a.num_kv_heads = 2;
      a.eps = 1e-5;
      a.rope_theta = 100.0;
      b.output(b.llama_block({x, g1, wq, wk, wv, wo, g2, wg, wu, wd}, a));
    } else {
      FusedTransformerLayerAttrs a;
      a.kind = LayerKind::llama_pre_norm;
      a.block.num_heads = 4;
      a.block.num_kv_heads = 2;
      a.block.mask = MaskKind::causal;
      a.block.rope = true;
      a.block.rope_theta = 100.0;
      a.eps = 1e-5;
      NodeId wqkv = b.concat({wq, wk, wv}, 0);
      b.output(b.op(OpKind::FusedTransformerLayer, {x, wqkv, wo, g1, wg, wu, wd, g2}, a));
    }
    verify(*g);
  }
  const reference::TensorMap p = params_of(hir);
  const Tensor x = uniform_tensor(Shape({2, s, e}, f64), 1);
  const auto want = reference::evaluate(hir, {{"x", x}}, p);
  const auto got = reference::evaluate(fused, {{"x", x}}, p);
  EXPECT_LT(max_diff(want.at(0), got.at(0)), 1e-12);
  EXPECT_GT(max_diff(x, got.at(0)), 1e-3); // the layer changed its input
}

TEST(FusedLayer, BertLayerEqualsTheHirLayer) {
  // Biases, betas, GELU, a padding mask with a masked key in each batch row.
  const std::int64_t e = 8, f = 12, s = 4;
  Graph hir("hir"), fused("fused");
  for (Graph* g : {&hir, &fused}) {
    Builder b(*g);
    NodeId x = b.input("x", Shape({2, s, e}, f64));
    NodeId mask = b.input("mask", Shape({2, s}, f64));
    auto w = [&](const char* n, std::vector<Dim> d) { return b.param(n, Shape(d, f64)); };
    NodeId wq = w("wq", {e, e}), bq = w("bq", {e}), wk = w("wk", {e, e}), bk = w("bk", {e}),
           wv = w("wv", {e, e}), bv = w("bv", {e}), wo = w("wo", {e, e}), bo = w("bo", {e}),
           g1 = w("g1", {e}), b1 = w("beta1", {e}), wi = w("wi", {f, e}), bi = w("bi", {f}),
           wd = w("wd", {e, f}), bd = w("bd", {e}), g2 = w("g2", {e}), b2 = w("beta2", {e});
    if (g == &hir) {
      BertLayerAttrs a;
      a.num_heads = 2;
      a.eps = 1e-5;
      a.padding_mask = true;
      b.output(b.bert_layer(
          {x, wq, bq, wk, bk, wv, bv, wo, bo, g1, b1, wi, bi, wd, bd, g2, b2, mask}, a));
    } else {
      FusedTransformerLayerAttrs a;
      a.block.num_heads = a.block.num_kv_heads = 2;
      a.block.mask = MaskKind::padding;
      a.block.qkv_bias = a.block.out_bias = a.up_bias = a.down_bias = a.norm_beta = true;
      a.act = Activation::gelu;
      a.eps = 1e-5;
      NodeId wqkv = b.concat({wq, wk, wv}, 0), bqkv = b.concat({bq, bk, bv}, 0);
      b.output(b.op(OpKind::FusedTransformerLayer,
                    {x, wqkv, wo, bqkv, bo, g1, b1, wi, bi, wd, bd, g2, b2, mask}, a));
    }
    verify(*g);
  }
  const reference::TensorMap p = params_of(hir);
  const Tensor x = uniform_tensor(Shape({2, s, e}, f64), 2);
  Tensor mask(Shape({2, s}, f64));
  for (std::int64_t i = 0; i < mask.numel(); ++i)
    mask.set_f64(i, i == 2 || i == 7 ? 0.0 : 1.0);
  const auto want = reference::evaluate(hir, {{"x", x}, {"mask", mask}}, p);
  const auto got = reference::evaluate(fused, {{"x", x}, {"mask", mask}}, p);
  EXPECT_LT(max_diff(want.at(0), got.at(0)), 1e-12);
  // The mask matters: keeping every key changes the result.
  for (std::int64_t i = 0; i < mask.numel(); ++i)
    mask.set_f64(i, 1.0);
  const auto unmasked = reference::evaluate(fused, {{"x", x}, {"mask", mask}}, p);
  EXPECT_GT(max_diff(unmasked.at(0), got.at(0)), 1e-6);
}

/// A LLaMA layer's operands: E 8, 2 heads, head_dim 4, FFN 6.
struct LlamaOperands {
  Graph g{"g"};
  Builder b{g};
  NodeId x = b.input("x", Shape::of({1, 3, 8}));
  NodeId wqkv = b.param("wqkv", Shape::of({24, 8}));
  NodeId wo = b.param("wo", Shape::of({8, 8}));
  NodeId gain = b.param("gain", Shape::of({8}));
  NodeId wg = b.param("wg", Shape::of({6, 8}));
  NodeId wd = b.param("wd", Shape::of({8, 6}));
  FusedTransformerLayerAttrs attrs() const {
    FusedTransformerLayerAttrs a;
    a.kind = LayerKind::llama_pre_norm;
    a.block.num_heads = a.block.num_kv_heads = 2;
    a.eps = 1e-6;
    return a;
  }
  std::string error(std::vector<NodeId> in, const FusedTransformerLayerAttrs& a) {
    try {
      g.add(OpKind::FusedTransformerLayer, std::move(in), a);
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "";
  }
};

TEST(FusedLayer, ShapeRuleErrors) {
  LlamaOperands o;
  const std::vector<NodeId> ok{o.x, o.wqkv, o.wo, o.gain, o.wg, o.wg, o.wd, o.gain};
  FusedTransformerLayerAttrs a = o.attrs();
  EXPECT_EQ(o.error(ok, a), "");
  // Arity from the kind and flags.
  EXPECT_NE(o.error({o.x, o.wqkv, o.wo, o.gain, o.wg, o.wg, o.wd}, a).find("expects 8 operands"),
            std::string::npos);
  a.down_bias = true;
  EXPECT_NE(o.error(ok, a).find("expects 9 operands"), std::string::npos);
  // LLaMA's norms take no beta, its gate / up product no bias or act.
  a = o.attrs();
  a.norm_beta = true;
  EXPECT_NE(o.error({o.x, o.wqkv, o.wo, o.gain, o.gain, o.wg, o.wg, o.wd, o.gain, o.gain}, a)
                .find("no beta"),
            std::string::npos);
  a = o.attrs();
  a.act = Activation::gelu;
  EXPECT_NE(o.error(ok, a).find("SwiGLU"), std::string::npos);
  // A stage's own rule names the stage: the down projection's width is not the residual's.
  EXPECT_NE(o.error({o.x, o.wqkv, o.wo, o.gain, o.wg, o.wg, o.wg, o.gain}, o.attrs())
                .find("the FFN down projection"),
            std::string::npos);
  // The block: heads that do not divide the packed width.
  a = o.attrs();
  a.block.num_heads = 3;
  a.block.num_kv_heads = 3;
  EXPECT_NE(o.error(ok, a).find("the attention block"), std::string::npos);
  // x must be [B, S, E] of a float type.
  NodeId flat = o.b.input("flat", Shape::of({3, 8}));
  EXPECT_NE(
      o.error({flat, o.wqkv, o.wo, o.gain, o.wg, o.wg, o.wd, o.gain}, o.attrs()).find("x must"),
      std::string::npos);
  // A wrong gain size is the norm's error.
  NodeId short_gain = o.b.param("short", Shape::of({5}));
  EXPECT_NE(o.error({o.x, o.wqkv, o.wo, short_gain, o.wg, o.wg, o.wd, o.gain}, o.attrs())
                .find("the attention norm"),
            std::string::npos);
}

TEST(FusedLayer, SlotsFollowTheFlags) {
  FusedTransformerLayerAttrs a;
  a.block.qkv_bias = a.norm_beta = a.up_bias = true;
  a.block.mask = MaskKind::bias;
  const LayerSlots s = layer_slots(a);
  EXPECT_EQ(s.b_qkv, 3u);
  EXPECT_EQ(s.b_o, LayerSlots::kAbsent);
  EXPECT_EQ(s.g1, 4u);
  EXPECT_EQ(s.beta1, 5u);
  EXPECT_EQ(s.w_gate, LayerSlots::kAbsent);
  EXPECT_EQ(s.w_up, 6u);
  EXPECT_EQ(s.b_up, 7u);
  EXPECT_EQ(s.w_down, 8u);
  EXPECT_EQ(s.g2, 9u);
  EXPECT_EQ(s.beta2, 10u);
  EXPECT_EQ(s.mask, 11u);
  EXPECT_EQ(s.count, 12u);
}

TEST(FusedLayer, TextAndJsonRoundTrip) {
  LlamaOperands o;
  FusedTransformerLayerAttrs a = o.attrs();
  a.block.mask = MaskKind::causal;
  a.block.rope = true;
  a.block.rope_theta = 500000.0;
  a.up_transpose_b = false;
  NodeId wk = o.b.param("wk_n", Shape::of({8, 6}));
  o.b.output(o.b.op(OpKind::FusedTransformerLayer,
                    {o.x, o.wqkv, o.wo, o.gain, wk, wk, o.wd, o.gain}, a, "layer0"));
  verify(o.g);
  const std::string text = print(o.g);
  EXPECT_NE(text.find("fused_transformer_layer[kind=llama_pre_norm"), std::string::npos) << text;
  EXPECT_NE(text.find("up_transpose_b=false"), std::string::npos) << text;
  EXPECT_EQ(parse(text), o.g);
  EXPECT_EQ(load_json(save_json(o.g)), o.g);
}

} // namespace
} // namespace rlx::ir
