// models_test.cpp: whole-model gradients against finite differences in f64 on a sampled subset of
// every parameter: an MLP with an MSE loss, a one-layer BERT-mini (embedding, LayerNorm, the HIR
// BertLayer with a padding mask, classifier, cross-entropy) and a LLaMA block with GQA (HIR
// LlamaBlock: RMSNorm, RoPE, causal attention, SwiGLU; then RMSNorm, LM head, cross-entropy);
// and their Hessian-vector products (hvp, forward over reverse) against differences of the
// gradient.
#include "fd.hpp"
#include "model_testing.hpp"

#include "rlx/ir/builder.hpp"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace rlx;
using autodiff::testing::WeightedLoss;
using ir::Builder;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

constexpr DType f64 = DType::f64;

/// Random values for every leaf: floats uniform in [-s, s] (s = 1/sqrt(fan-in) for matrices, 1
/// otherwise; norm gains around 1), integers in [0, bound) per leaf name.
struct Values {
  TensorMap inputs, params;
};

Tensor uniform(const Shape& s, std::mt19937_64& rng, double lo, double hi) {
  std::uniform_real_distribution<double> u(lo, hi);
  Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, u(rng));
  return t;
}

Values values_for(const Graph& g, std::int64_t int_bound, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  Values v;
  for (NodeId id : g.ids()) {
    const auto& n = g.node(id);
    if (n.op != ir::OpKind::Input && n.op != ir::OpKind::Param)
      continue;
    const auto& leaf = n.attr<ir::LeafAttrs>();
    Tensor t;
    if (!ir::is_float(n.shape.dtype)) {
      t = Tensor(n.shape);
      std::uniform_int_distribution<std::int64_t> u(0, int_bound - 1);
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_i64(i, u(rng));
    } else if (leaf.name.find("mask") != std::string::npos) {
      t = Tensor(n.shape);
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_f64(i, (i % 5) == 4 ? 0.0 : 1.0); // every fifth key padded
    } else if (n.shape.rank() == 2) {
      double s = 1.0 / std::sqrt(static_cast<double>(n.shape[1].size()));
      t = uniform(n.shape, rng, -s, s);
    } else if (leaf.name.find("_g") != std::string::npos ||
               leaf.name.find("norm") != std::string::npos) {
      t = uniform(n.shape, rng, 0.5, 1.5);
    } else {
      t = uniform(n.shape, rng, -1, 1);
    }
    (n.op == ir::OpKind::Param ? v.params : v.inputs)[leaf.name] = t;
  }
  return v;
}

/// The hvp check of a graph whose one output is the scalar loss: H v against central differences
/// of the gradient along v (every parameter).
void expect_model_hvp(const Graph& g, std::int64_t int_bound) {
  Values v = values_for(g, int_bound, 43);
  auto r = autodiff::testing::check_hvp(g, v.inputs, v.params, autodiff::float_params(g));
  EXPECT_LE(r.max_err, 1e-6) << g.name() << ": " << r.worst;
  EXPECT_GT(r.checked, 0);
  EXPECT_LE(r.kinks, 1 + r.checked / 1000);
}

/// The FD check of a graph whose one output is already the scalar loss.
void expect_model_gradients(const Graph& g, std::int64_t int_bound, std::int64_t per_param) {
  WeightedLoss l;
  l.forward = g;
  l.loss = g;
  l.weights = {Tensor::scalar<double>(1.0)};
  auto wrt = autodiff::float_params(g);
  ASSERT_FALSE(wrt.empty());
  Values v = values_for(g, int_bound, 42);
  auto r = autodiff::testing::check_gradients(l, v.inputs, v.params, wrt, per_param);
  EXPECT_LE(r.max_err, 1e-6) << g.name() << ": " << r.worst;
  EXPECT_GE(r.checked, static_cast<std::int64_t>(wrt.size()));
  EXPECT_LE(r.kinks, 1);
}

/// mean(cross_entropy(x [B, S, H] W_outᵀ, labels)).
/// The f64 cross-entropy head (model_testing.hpp).
NodeId xent_head(Builder& b, NodeId x, std::int64_t tokens, std::int64_t hidden,
                 std::int64_t classes) {
  return autodiff::testing::xent_head(b, x, tokens, hidden, classes, f64);
}

TEST(ModelGradients, Mlp) {
  Graph g("mlp");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({6, 8}, f64));
  NodeId t = b.input("target", Shape::of({6, 3}, f64));
  NodeId h = b.linear(x, b.param("w1", Shape::of({16, 8}, f64)),
                      b.param("b1", Shape::of({16}, f64)), ir::Activation::gelu);
  h = b.linear(h, b.param("w2", Shape::of({16, 16}, f64)), b.param("b2", Shape::of({16}, f64)),
               ir::Activation::tanh);
  NodeId y =
      b.linear(h, b.param("w3", Shape::of({3, 16}, f64)), b.param("b3", Shape::of({3}, f64)));
  NodeId d = b.sub(y, t);
  b.output(b.mean(b.mul(d, d), {}));
  expect_model_gradients(g, 1, 12);
  expect_model_hvp(g, 1);
}

TEST(ModelGradients, BertMiniOneLayer) {
  const std::int64_t B = 2, S = 5, H = 16, heads = 4, F = 32, vocab = 11, classes = 3;
  Graph g("bert_mini");
  Builder b(g);
  NodeId ids = b.input("ids", Shape::of({B, S}, DType::i64));
  NodeId mask = b.input("mask", Shape::of({B, S}, f64));
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    return b.param(n, Shape::of(s, f64));
  };
  NodeId x = b.gather(p("emb", {vocab, H}), ids, 0);
  x = b.add(x, p("pos", {S, H}));
  x = b.layer_norm(x, p("emb_ln_g", {H}), p("emb_ln_b", {H}), 1e-12);
  ir::BertLayerAttrs a;
  a.num_heads = heads;
  a.padding_mask = true;
  x = b.bert_layer({x, p("wq", {H, H}), p("bq", {H}), p("wk", {H, H}), p("bk", {H}),
                    p("wv", {H, H}), p("bv", {H}), p("wo", {H, H}), p("bo", {H}), p("ln1_g", {H}),
                    p("ln1_b", {H}), p("w1", {F, H}), p("b1", {F}), p("w2", {H, F}), p("b2", {H}),
                    p("ln2_g", {H}), p("ln2_b", {H}), mask},
                   a);
  b.output(xent_head(b, x, B * S, H, classes));
  expect_model_gradients(g, classes, 6);
  expect_model_hvp(g, classes);
}

TEST(ModelGradients, LlamaBlockGqa) {
  const std::int64_t B = 2, S = 6, H = 16, heads = 4, kv_heads = 2, F = 24, vocab = 13;
  Graph g("llama_gqa");
  Builder b(g);
  NodeId ids = b.input("ids", Shape::of({B, S}, DType::i64));
  auto p = [&](const std::string& n, std::vector<std::int64_t> s) {
    return b.param(n, Shape::of(s, f64));
  };
  NodeId x = b.gather(p("emb", {vocab, H}), ids, 0);
  x = autodiff::testing::gqa_llama_block(b, x, {H, heads, kv_heads, F}, p);
  x = b.rms_norm(x, p("final_norm", {H}), 1e-6);
  b.output(xent_head(b, x, B * S, H, vocab));
  expect_model_gradients(g, vocab, 6);
  expect_model_hvp(g, vocab);
}

} // namespace
