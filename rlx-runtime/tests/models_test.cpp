// models_test.cpp: the model builders: parameter names and shapes, config errors, and numerics
// against straightforward loop implementations of what the peer anchor models compute
// (../shared/anchors/make_models.py), evaluated by the reference interpreter.
#include "rlx/runtime/init.hpp"
#include "rlx/runtime/models.hpp"

#include "rlx/ir/hir.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/verify.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace rlx::runtime {
namespace {

using ir::Tensor;

/// A row-major matrix of doubles (rows x cols).
struct Mat {
  std::int64_t rows = 0, cols = 0;
  std::vector<double> v;
  Mat(std::int64_t r, std::int64_t c) : rows(r), cols(c), v(static_cast<std::size_t>(r * c)) {}
  double& at(std::int64_t r, std::int64_t c) { return v[static_cast<std::size_t>(r * cols + c)]; }
  double at(std::int64_t r, std::int64_t c) const {
    return v[static_cast<std::size_t>(r * cols + c)];
  }
};

Mat to_mat(const Tensor& t, std::int64_t rows) {
  Mat m(rows, t.numel() / rows);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    m.v[static_cast<std::size_t>(i)] = t.get_f64(i);
  return m;
}

/// x Wᵀ + b with W [out, in] (nn.Linear).
Mat linear(const Mat& x, const Tensor& w, const Tensor* b = nullptr) {
  Mat W = to_mat(w, w.shape()[0].size());
  Mat y(x.rows, W.rows);
  for (std::int64_t r = 0; r < x.rows; ++r)
    for (std::int64_t o = 0; o < W.rows; ++o) {
      double s = b ? b->get_f64(o) : 0.0;
      for (std::int64_t i = 0; i < x.cols; ++i)
        s += x.at(r, i) * W.at(o, i);
      y.at(r, o) = s;
    }
  return y;
}

Mat layer_norm(const Mat& x, const Tensor& g, const Tensor& b, double eps) {
  Mat y = x;
  for (std::int64_t r = 0; r < x.rows; ++r) {
    double mean = 0, var = 0;
    for (std::int64_t c = 0; c < x.cols; ++c)
      mean += x.at(r, c) / static_cast<double>(x.cols);
    for (std::int64_t c = 0; c < x.cols; ++c)
      var += (x.at(r, c) - mean) * (x.at(r, c) - mean) / static_cast<double>(x.cols);
    for (std::int64_t c = 0; c < x.cols; ++c)
      y.at(r, c) = (x.at(r, c) - mean) / std::sqrt(var + eps) * g.get_f64(c) + b.get_f64(c);
  }
  return y;
}

Mat rms_norm(const Mat& x, const Tensor& g, double eps) {
  Mat y = x;
  for (std::int64_t r = 0; r < x.rows; ++r) {
    double ms = 0;
    for (std::int64_t c = 0; c < x.cols; ++c)
      ms += x.at(r, c) * x.at(r, c) / static_cast<double>(x.cols);
    for (std::int64_t c = 0; c < x.cols; ++c)
      y.at(r, c) = x.at(r, c) / std::sqrt(ms + eps) * g.get_f64(c);
  }
  return y;
}

Mat add(Mat a, const Mat& b) {
  for (std::size_t i = 0; i < a.v.size(); ++i)
    a.v[i] += b.v[i];
  return a;
}

/// Multi-head attention over rows laid out [batch * seq, heads * d] (the [B, S, H, D] layout);
/// key head h / (heads / kv_heads) serves query head h; mask[b][k] == 0 hides key k.
Mat attention(const Mat& q, const Mat& k, const Mat& v, std::int64_t batch, std::int64_t seq,
              std::int64_t heads, std::int64_t kv_heads, bool causal,
              const std::vector<std::int64_t>* mask = nullptr) {
  const std::int64_t d = q.cols / heads;
  Mat out(q.rows, q.cols);
  for (std::int64_t b = 0; b < batch; ++b)
    for (std::int64_t h = 0; h < heads; ++h) {
      const std::int64_t kh = h / (heads / kv_heads);
      for (std::int64_t i = 0; i < seq; ++i) {
        std::vector<double> s(static_cast<std::size_t>(seq), -INFINITY);
        double mx = -INFINITY;
        for (std::int64_t j = 0; j < seq; ++j) {
          if ((causal && j > i) || (mask && (*mask)[static_cast<std::size_t>(b * seq + j)] == 0))
            continue;
          double dot = 0;
          for (std::int64_t c = 0; c < d; ++c)
            dot += q.at(b * seq + i, h * d + c) * k.at(b * seq + j, kh * d + c);
          s[static_cast<std::size_t>(j)] = dot / std::sqrt(static_cast<double>(d));
          mx = std::max(mx, s[static_cast<std::size_t>(j)]);
        }
        double z = 0;
        for (auto& e : s)
          z += (e = std::isinf(e) ? 0.0 : std::exp(e - mx));
        for (std::int64_t c = 0; c < d; ++c) {
          double acc = 0;
          for (std::int64_t j = 0; j < seq; ++j)
            acc += s[static_cast<std::size_t>(j)] / z * v.at(b * seq + j, kh * d + c);
          out.at(b * seq + i, h * d + c) = acc;
        }
      }
    }
  return out;
}

/// HF rotate-half RoPE on rows [batch * seq, heads * d], positions 0..seq-1.
Mat rope(Mat x, std::int64_t seq, std::int64_t heads, double theta) {
  const std::int64_t d = x.cols / heads, half = d / 2;
  for (std::int64_t r = 0; r < x.rows; ++r) {
    const auto pos = static_cast<double>(r % seq);
    for (std::int64_t h = 0; h < heads; ++h)
      for (std::int64_t i = 0; i < half; ++i) {
        double ang = pos / std::pow(theta, 2.0 * static_cast<double>(i) / static_cast<double>(d));
        double a = x.at(r, h * d + i), b = x.at(r, h * d + i + half);
        x.at(r, h * d + i) = a * std::cos(ang) - b * std::sin(ang);
        x.at(r, h * d + i + half) = b * std::cos(ang) + a * std::sin(ang);
      }
  }
  return x;
}

double max_err(const Tensor& got, const Mat& want) {
  double e = 0;
  for (std::int64_t i = 0; i < got.numel(); ++i)
    e = std::max(e, std::abs(got.get_f64(i) - want.v[static_cast<std::size_t>(i)]));
  return e;
}

std::vector<std::string> param_names(const ir::Graph& g) {
  std::vector<std::string> out;
  for (auto id : g.params())
    out.push_back(g.node(id).attr<ir::LeafAttrs>().name);
  return out;
}

const ir::Shape& param_shape(const ir::Graph& g, const std::string& name) {
  return g.shape(g.find_leaf(name, /*param=*/true));
}

/// The BERT most tests use: 2 layers, hidden 8, 2 heads, FFN 12.
BertConfig small_bert() {
  BertConfig c;
  c.layers = 2;
  c.hidden = 8;
  c.heads = 2;
  c.ffn = 12;
  return c;
}

/// The LLaMA most tests use: 2 layers, hidden 16, 4 heads over 2 KV heads (GQA), FFN 24.
LlamaConfig small_llama() {
  LlamaConfig c;
  c.layers = 2;
  c.hidden = 16;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 24;
  return c;
}

TEST(Models, BertParameterNamesFollowHuggingFace) {
  BertConfig c = small_bert();
  ir::Graph g = build_bert(c);
  auto names = param_names(g);
  EXPECT_EQ(names.size(), 2u * 16);
  EXPECT_EQ(names[0], "encoder.layer.0.attention.self.query.weight");
  EXPECT_EQ(param_shape(g, "encoder.layer.1.intermediate.dense.weight"), ir::Shape::of({12, 8}));
  EXPECT_EQ(param_shape(g, "encoder.layer.1.output.dense.weight"), ir::Shape::of({8, 12}));
  EXPECT_EQ(param_shape(g, "encoder.layer.0.attention.output.LayerNorm.bias"), ir::Shape::of({8}));
  EXPECT_TRUE(g.find_leaf("x").valid());
  ASSERT_EQ(g.outputs().size(), 1u);
  EXPECT_EQ(g.node(g.outputs()[0]).name, "y");
  EXPECT_EQ(g.symbols(), (std::vector<std::string>{"batch", "seq"}));
  ir::verify(g);
  ir::verify(ir::lower_hir(g), {.allow_hir = false});

  c.embeddings = true;
  c.padding_mask = true;
  c.prefix = "bert.";
  c.vocab = 50;
  ir::Graph e = build_bert(c);
  EXPECT_EQ(param_shape(e, "bert.embeddings.word_embeddings.weight"), ir::Shape::of({50, 8}));
  EXPECT_EQ(param_shape(e, "bert.embeddings.position_embeddings.weight"), ir::Shape::of({512, 8}));
  EXPECT_TRUE(e.find_leaf("bert.embeddings.LayerNorm.weight", true).valid());
  for (const char* in : {"input_ids", "token_type_ids", "position_ids", "attention_mask"})
    EXPECT_TRUE(e.find_leaf(in).valid()) << in;
  ir::verify(ir::lower_hir(e), {.allow_hir = false});
}

TEST(Models, LlamaParameterNamesFollowHuggingFace) {
  LlamaConfig c = small_llama();
  ir::Graph g = build_llama(c);
  EXPECT_EQ(param_names(g).size(), 2u * 9 + 1);
  EXPECT_EQ(param_shape(g, "layers.0.self_attn.q_proj.weight"), ir::Shape::of({16, 16}));
  EXPECT_EQ(param_shape(g, "layers.0.self_attn.k_proj.weight"), ir::Shape::of({8, 16}));
  EXPECT_EQ(param_shape(g, "layers.1.mlp.down_proj.weight"), ir::Shape::of({16, 24}));
  EXPECT_EQ(param_shape(g, "norm.weight"), ir::Shape::of({16}));
  EXPECT_EQ(g.node(g.outputs()[0]).name, "y");
  ir::verify(ir::lower_hir(g), {.allow_hir = false});

  c.embeddings = c.lm_head = true;
  c.prefix = "model.";
  c.vocab = 40;
  ir::Graph e = build_llama(c);
  EXPECT_EQ(param_shape(e, "model.embed_tokens.weight"), ir::Shape::of({40, 16}));
  EXPECT_EQ(param_shape(e, "lm_head.weight"), ir::Shape::of({40, 16}));
  EXPECT_TRUE(e.find_leaf("model.layers.1.input_layernorm.weight", true).valid());
  EXPECT_EQ(e.shape(e.outputs()[0]).dims.back(), ir::Dim(40));
  ir::verify(ir::lower_hir(e), {.allow_hir = false});
}

TEST(Models, MlpMatchesTheAnchorNames) {
  ir::Graph g = build_mlp({});
  EXPECT_EQ(param_names(g), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight",
                                                      "fc2.bias", "fc3.weight", "fc3.bias"}));
  EXPECT_EQ(param_shape(g, "fc1.weight"), ir::Shape::of({512, 784}));
  EXPECT_EQ(param_shape(g, "fc3.bias"), ir::Shape::of({10}));
  ir::verify(ir::lower_hir(g), {.allow_hir = false});
}

TEST(Models, InvalidConfigsNameTheField) {
  auto message = [](auto&& fn) {
    try {
      fn();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  BertConfig b;
  b.heads = 3;
  EXPECT_NE(message([&] { build_bert(b); }).find("multiple of heads"), std::string::npos);
  b = {};
  b.layers = 0;
  EXPECT_NE(message([&] { build_bert(b); }).find("layers must be in [1, "), std::string::npos);
  LlamaConfig l;
  l.kv_heads = 3;
  EXPECT_NE(message([&] { build_llama(l); }).find("multiple of kv_heads"), std::string::npos);
  l = {};
  l.hidden = 24; // head_dim 3
  EXPECT_NE(message([&] { build_llama(l); }).find("must be even"), std::string::npos);
  MlpConfig m;
  m.dims = {4};
  EXPECT_NE(message([&] { build_mlp(m); }).find("at least"), std::string::npos);
}

TEST(Models, InitScalesFollowUse) {
  BertConfig c;
  c.layers = 1;
  c.hidden = 16;
  c.heads = 2;
  c.ffn = 64;
  ir::Graph g = build_bert(c);
  TensorMap p = init_params(g, 7);
  ASSERT_EQ(p.size(), param_names(g).size());
  auto range = [](const Tensor& t) {
    double lo = 1e9, hi = -1e9;
    for (std::int64_t i = 0; i < t.numel(); ++i) {
      lo = std::min(lo, t.get_f64(i));
      hi = std::max(hi, t.get_f64(i));
    }
    return std::pair{lo, hi};
  };
  auto [wlo, whi] = range(p.at("encoder.layer.0.output.dense.weight")); // fan_in 64
  EXPECT_GE(wlo, -0.125);
  EXPECT_LE(whi, 0.125);
  EXPECT_GT(whi - wlo, 0.2); // uses most of the range
  auto [glo, ghi] = range(p.at("encoder.layer.0.output.LayerNorm.weight"));
  EXPECT_GE(glo, 0.9);
  EXPECT_LE(ghi, 1.1);
  // Same seed, same values; another seed, other values.
  EXPECT_TRUE(init_params(g, 7)
                  .at("encoder.layer.0.attention.self.key.bias")
                  .identical(p.at("encoder.layer.0.attention.self.key.bias")));
  EXPECT_FALSE(init_params(g, 8)
                   .at("encoder.layer.0.attention.self.key.bias")
                   .identical(p.at("encoder.layer.0.attention.self.key.bias")));
}

TEST(Models, RandomInputsRespectGatherRanges) {
  BertConfig c;
  c.layers = 1;
  c.hidden = 8;
  c.heads = 2;
  c.ffn = 8;
  c.embeddings = c.padding_mask = true;
  c.vocab = 5;
  c.type_vocab = 2;
  ir::Graph g = build_bert(c);
  TensorMap in = random_inputs(g, {{"batch", 2}, {"seq", 6}}, 1);
  EXPECT_EQ(in.at("input_ids").shape(), ir::Shape::of({2, 6}, ir::DType::i64));
  for (std::int64_t i = 0; i < 12; ++i) {
    EXPECT_LT(in.at("input_ids").get_i64(i), 5);
    EXPECT_LT(in.at("token_type_ids").get_i64(i), 2);
    EXPECT_GE(in.at("token_type_ids").get_i64(i), 0);
    EXPECT_EQ(in.at("attention_mask").get_i64(i), 1);
  }
  EXPECT_THROW(random_inputs(g, {{"batch", 2}}, 1), Error);
}

// The BERT encoder computes make_models.py's BertEncoder (post-LN, erf GELU, scale 1/sqrt(d)),
// here with a padding mask that hides the last key of the second sequence.
TEST(Models, BertMatchesTheAnchorDefinition) {
  BertConfig c = small_bert();
  c.padding_mask = true;
  const std::int64_t B = 2, S = 3, H = 8;
  ir::Graph g = build_bert(c);
  TensorMap p = init_params(g, 11);
  TensorMap in = random_inputs(g, {{"batch", B}, {"seq", S}}, 12);
  std::vector<std::int64_t> mask{1, 1, 1, 1, 1, 0};
  in["attention_mask"] = Tensor::from<std::int64_t>({B, S}, mask);
  Tensor got = ir::reference::evaluate(g, in, p).at(0);

  Mat x = to_mat(in.at("x"), B * S);
  for (int i = 0; i < c.layers; ++i) {
    auto w = [&](const std::string& n) -> const Tensor& {
      return p.at("encoder.layer." + std::to_string(i) + "." + n);
    };
    auto lin = [&](const Mat& v, const std::string& n) {
      return linear(v, w(n + ".weight"), &w(n + ".bias"));
    };
    Mat ctx = attention(lin(x, "attention.self.query"), lin(x, "attention.self.key"),
                        lin(x, "attention.self.value"), B, S, c.heads, c.heads, false, &mask);
    x = layer_norm(add(x, lin(ctx, "attention.output.dense")),
                   w("attention.output.LayerNorm.weight"), w("attention.output.LayerNorm.bias"),
                   c.eps);
    Mat f = lin(x, "intermediate.dense");
    for (auto& v : f.v)
      v = 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
    x = layer_norm(add(x, lin(f, "output.dense")), w("output.LayerNorm.weight"),
                   w("output.LayerNorm.bias"), c.eps);
  }
  ASSERT_EQ(got.shape(), ir::Shape::of({B, S, H}));
  // f32 rounding after every op of a 2-layer block: errors of a few ulps of O(1) values.
  EXPECT_LT(max_err(got, x), 2e-5);
}

// The LLaMA decoder computes make_models.py's LlamaStack (RMSNorm, rotate-half RoPE, causal
// attention, SwiGLU, final norm), here with grouped-query attention (4 heads, 2 KV heads).
TEST(Models, LlamaMatchesTheAnchorDefinition) {
  LlamaConfig c = small_llama();
  const std::int64_t B = 2, S = 5;
  ir::Graph g = build_llama(c);
  TensorMap p = init_params(g, 21);
  TensorMap in = random_inputs(g, {{"batch", B}, {"seq", S}}, 22);
  Tensor got = ir::reference::evaluate(g, in, p).at(0);

  Mat x = to_mat(in.at("x"), B * S);
  for (int i = 0; i < c.layers; ++i) {
    auto w = [&](const std::string& n) -> const Tensor& {
      return p.at("layers." + std::to_string(i) + "." + n);
    };
    Mat h = rms_norm(x, w("input_layernorm.weight"), c.eps);
    Mat q = rope(linear(h, w("self_attn.q_proj.weight")), S, c.heads, c.rope_theta);
    Mat k = rope(linear(h, w("self_attn.k_proj.weight")), S, c.kv_heads, c.rope_theta);
    Mat v = linear(h, w("self_attn.v_proj.weight"));
    x = add(x, linear(attention(q, k, v, B, S, c.heads, c.kv_heads, true),
                      w("self_attn.o_proj.weight")));
    h = rms_norm(x, w("post_attention_layernorm.weight"), c.eps);
    Mat gate = linear(h, w("mlp.gate_proj.weight"));
    Mat up = linear(h, w("mlp.up_proj.weight"));
    for (std::size_t j = 0; j < gate.v.size(); ++j)
      gate.v[j] = gate.v[j] / (1 + std::exp(-gate.v[j])) * up.v[j];
    x = add(x, linear(gate, w("mlp.down_proj.weight")));
  }
  x = rms_norm(x, p.at("norm.weight"), c.eps);
  EXPECT_LT(max_err(got, x), 2e-5);
}

TEST(Models, MlpMatchesTheAnchorDefinition) {
  MlpConfig c;
  c.dims = {6, 5, 4, 3};
  ir::Graph g = build_mlp(c);
  TensorMap p = init_params(g, 31);
  TensorMap in = random_inputs(g, {{"batch", 4}}, 32);
  Tensor got = ir::reference::evaluate(g, in, p).at(0);
  Mat x = to_mat(in.at("x"), 4);
  for (int i = 1; i <= 3; ++i) {
    const std::string fc = "fc" + std::to_string(i);
    x = linear(x, p.at(fc + ".weight"), &p.at(fc + ".bias"));
    if (i < 3)
      for (auto& v : x.v)
        v = std::max(v, 0.0);
  }
  EXPECT_LT(max_err(got, x), 1e-5);
}

TEST(Models, EmbeddingsSumWordPositionAndTokenType) {
  BertConfig c;
  c.layers = 1;
  c.hidden = 4;
  c.heads = 1;
  c.ffn = 4;
  c.embeddings = true;
  c.vocab = 7;
  c.max_positions = 5;
  ir::Graph g = build_bert(c);
  // Evaluate only the embedding LayerNorm: cut the graph there by making it the output.
  ir::NodeId ln;
  for (auto id : g.ids())
    if (g.node(id).op == ir::OpKind::LayerNorm)
      ln = id;
  ASSERT_TRUE(ln.valid());
  g.set_outputs({ln});
  TensorMap p = init_params(g, 3);
  TensorMap in;
  in["input_ids"] = Tensor::from<std::int64_t>({1, 2}, {6, 2});
  in["token_type_ids"] = Tensor::from<std::int64_t>({1, 2}, {0, 1});
  in["position_ids"] = Tensor::from<std::int64_t>({1, 2}, {0, 1});
  Tensor got = ir::reference::evaluate(g, in, p).at(0);
  Mat x(2, 4);
  const std::int64_t ids[] = {6, 2}, types[] = {0, 1};
  for (std::int64_t s = 0; s < 2; ++s)
    for (std::int64_t d = 0; d < 4; ++d)
      x.at(s, d) = p.at("embeddings.word_embeddings.weight").get_f64(ids[s] * 4 + d) +
                   p.at("embeddings.position_embeddings.weight").get_f64(s * 4 + d) +
                   p.at("embeddings.token_type_embeddings.weight").get_f64(types[s] * 4 + d);
  x = layer_norm(x, p.at("embeddings.LayerNorm.weight"), p.at("embeddings.LayerNorm.bias"), c.eps);
  EXPECT_LT(max_err(got, x), 1e-5);
}

} // namespace
} // namespace rlx::runtime
