// hir_test.cpp: HIR block lowering: structure of the emitted MIR, and its numbers (through the
// reference interpreter) against plain loop implementations written here.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/count_ops.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <numbers>
#include <string>
#include <utility>
#include <vector>

using namespace rlx::ir;
using reference::TensorMap;

namespace {

using Vec = std::vector<double>;
using i64 = std::int64_t;

/// Deterministic uniform numbers in [-scale, scale) (splitmix64).
class Rng {
public:
  explicit Rng(std::uint64_t seed) : s_(seed) {}
  double uniform(double scale) {
    std::uint64_t z = (s_ += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    z ^= z >> 31;
    return (static_cast<double>(z >> 11) * 0x1.0p-53 * 2.0 - 1.0) * scale;
  }
  Vec vec(i64 n, double scale) {
    Vec v(static_cast<std::size_t>(n));
    for (auto& x : v)
      x = uniform(scale);
    return v;
  }

private:
  std::uint64_t s_;
};

i64 numel(const std::vector<i64>& sizes) {
  i64 n = 1;
  for (i64 s : sizes)
    n *= s;
  return n;
}

/// A graph's interface values: tensors for evaluate() and the same numbers as plain vectors.
struct Values {
  DType dtype = DType::f64;
  TensorMap inputs, params;
  std::map<std::string, Vec> raw;

  Tensor tensor(const std::vector<i64>& sizes, const Vec& v) const {
    Tensor t = Tensor::from<double>(sizes, v);
    return dtype == DType::f64 ? t : t.cast(dtype);
  }
  /// Adds a random tensor; \returns its numbers (rounded to the dtype, as the graph sees them).
  const Vec& add(bool param, const std::string& name, const std::vector<i64>& sizes, Rng& rng,
                 double scale = 0.5) {
    Tensor t = tensor(sizes, rng.vec(numel(sizes), scale));
    Vec v(static_cast<std::size_t>(t.numel()));
    for (i64 i = 0; i < t.numel(); ++i)
      v[static_cast<std::size_t>(i)] = t.get_f64(i);
    (param ? params : inputs)[name] = t;
    return raw[name] = v;
  }
};

void expect_near(const Tensor& got, const std::vector<i64>& sizes, const Vec& want, double tol) {
  ASSERT_EQ(got.shape().sizes(), sizes);
  ASSERT_EQ(static_cast<std::size_t>(got.numel()), want.size());
  double worst = 0;
  for (std::size_t i = 0; i < want.size(); ++i)
    worst = std::max(worst, std::abs(got.get_f64(static_cast<i64>(i)) - want[i]));
  EXPECT_LE(worst, tol) << "max abs error against the loop implementation";
}

// ---- plain loop implementations (row-major, double)
// ----------------------------------------------

/// act(x Wᵀ + b) on rows: x [n, in], w [out, in], b [out] or empty.
Vec ref_linear(const Vec& x, const Vec& w, const Vec& b, i64 n, i64 in, i64 out,
               double (*act)(double) = nullptr) {
  Vec y(static_cast<std::size_t>(n * out));
  for (i64 r = 0; r < n; ++r)
    for (i64 o = 0; o < out; ++o) {
      double s = b.empty() ? 0.0 : b[static_cast<std::size_t>(o)];
      for (i64 k = 0; k < in; ++k)
        s += x[static_cast<std::size_t>(r * in + k)] * w[static_cast<std::size_t>(o * in + k)];
      y[static_cast<std::size_t>(r * out + o)] = act ? act(s) : s;
    }
  return y;
}

double relu(double v) {
  return v > 0 ? v : 0;
}
double gelu(double v) {
  return 0.5 * v * (1 + std::erf(v / std::sqrt(2.0)));
}
double gelu_tanh(double v) {
  return 0.5 * v * (1 + std::tanh(std::sqrt(2.0 / std::numbers::pi) * (v + 0.044715 * v * v * v)));
}
double sigmoid(double v) {
  return 1 / (1 + std::exp(-v));
}
double silu(double v) {
  return v * sigmoid(v);
}
double tanh_(double v) {
  return std::tanh(v);
}

Vec add(const Vec& a, const Vec& b) {
  Vec r(a.size());
  for (std::size_t i = 0; i < a.size(); ++i)
    r[i] = a[i] + b[i];
  return r;
}

/// LayerNorm over rows of e: biased variance.
Vec ref_layer_norm(const Vec& x, const Vec& g, const Vec& b, i64 e, double eps) {
  Vec y(x.size());
  for (std::size_t r = 0; r < x.size() / static_cast<std::size_t>(e); ++r) {
    const double* row = &x[r * static_cast<std::size_t>(e)];
    double mean = 0, var = 0;
    for (i64 i = 0; i < e; ++i)
      mean += row[i];
    mean /= static_cast<double>(e);
    for (i64 i = 0; i < e; ++i)
      var += (row[i] - mean) * (row[i] - mean);
    var /= static_cast<double>(e);
    for (i64 i = 0; i < e; ++i) {
      auto k = static_cast<std::size_t>(i);
      y[r * static_cast<std::size_t>(e) + k] = (row[i] - mean) / std::sqrt(var + eps) * g[k] + b[k];
    }
  }
  return y;
}

Vec ref_rms_norm(const Vec& x, const Vec& g, i64 e, double eps) {
  Vec y(x.size());
  for (std::size_t r = 0; r < x.size() / static_cast<std::size_t>(e); ++r) {
    const double* row = &x[r * static_cast<std::size_t>(e)];
    double ms = 0;
    for (i64 i = 0; i < e; ++i)
      ms += row[i] * row[i];
    ms /= static_cast<double>(e);
    for (i64 i = 0; i < e; ++i)
      y[r * static_cast<std::size_t>(e) + static_cast<std::size_t>(i)] =
          row[i] / std::sqrt(ms + eps) * g[static_cast<std::size_t>(i)];
  }
  return y;
}

/// HF rotate_half RoPE on x [B, S, H, D] in place: pairs (i, i + D/2), position s.
void ref_rope(Vec& x, i64 B, i64 S, i64 H, i64 D, double theta) {
  const i64 half = D / 2;
  for (i64 b = 0; b < B; ++b)
    for (i64 s = 0; s < S; ++s)
      for (i64 h = 0; h < H; ++h) {
        double* v = &x[static_cast<std::size_t>(((b * S + s) * H + h) * D)];
        for (i64 i = 0; i < half; ++i) {
          double inv = std::pow(theta, -2.0 * static_cast<double>(i) / static_cast<double>(D));
          double c = std::cos(static_cast<double>(s) * inv),
                 sn = std::sin(static_cast<double>(s) * inv);
          double a0 = v[i], a1 = v[i + half];
          v[i] = a0 * c - a1 * sn;
          v[i + half] = a1 * c + a0 * sn;
        }
      }
}

/// Masking of ref_attention.
struct RefMask {
  MaskKind kind = MaskKind::none;
  i64 window = 0;
  Vec keep; ///< padding: [B, S], nonzero = keep
  Vec bias; ///< bias: [B, H, S, S]
};

/// Scaled dot-product attention: q [B, S, H, D], k/v [B, S, KVH, D]; query head h reads KV head
/// h / (H / KVH); scale 1/sqrt(D); fully masked rows give 0. \returns [B, S, H, D].
Vec ref_attention(const Vec& q, const Vec& k, const Vec& v, i64 B, i64 S, i64 H, i64 KVH, i64 D,
                  const RefMask& m) {
  Vec out(static_cast<std::size_t>(B * S * H * D), 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(D));
  auto at = [](const Vec& t, i64 b, i64 s, i64 h, i64 nh, i64 S_, i64 D_) {
    return &t[static_cast<std::size_t>(((b * S_ + s) * nh + h) * D_)];
  };
  for (i64 b = 0; b < B; ++b)
    for (i64 h = 0; h < H; ++h) {
      const i64 kvh = h / (H / KVH);
      for (i64 i = 0; i < S; ++i) {
        Vec score(static_cast<std::size_t>(S), -std::numeric_limits<double>::infinity());
        double mx = -std::numeric_limits<double>::infinity();
        for (i64 j = 0; j < S; ++j) {
          bool keep = true;
          if (m.kind == MaskKind::causal)
            keep = j <= i;
          if (m.kind == MaskKind::sliding_window)
            keep = j <= i && j > i - m.window;
          if (m.kind == MaskKind::padding)
            keep = m.keep[static_cast<std::size_t>(b * S + j)] != 0;
          if (!keep)
            continue;
          const double* qi = at(q, b, i, h, H, S, D);
          const double* kj = at(k, b, j, kvh, KVH, S, D);
          double s = 0;
          for (i64 d = 0; d < D; ++d)
            s += qi[d] * kj[d];
          s *= scale;
          if (m.kind == MaskKind::bias)
            s += m.bias[static_cast<std::size_t>(((b * H + h) * S + i) * S + j)];
          score[static_cast<std::size_t>(j)] = s;
          mx = std::max(mx, s);
        }
        if (mx == -std::numeric_limits<double>::infinity())
          continue;
        double sum = 0;
        for (auto& s : score)
          sum += (s = std::exp(s - mx));
        double* o = &out[static_cast<std::size_t>(((b * S + i) * H + h) * D)];
        for (i64 j = 0; j < S; ++j) {
          const double* vj = at(v, b, j, kvh, KVH, S, D);
          for (i64 d = 0; d < D; ++d)
            o[d] += score[static_cast<std::size_t>(j)] / sum * vj[d];
        }
      }
    }
  return out;
}

/// Attention-block weights as plain vectors (biases empty when absent).
struct RefAttnWeights {
  Vec wq, wk, wv, wo, bq, bk, bv, bo;
};

/// The whole attention block on x [B, S, E]: projections, optional RoPE, attention, output
/// projection.
Vec ref_attention_block(const Vec& x, const RefAttnWeights& w, i64 B, i64 S, i64 E, i64 H, i64 KVH,
                        i64 D, const RefMask& m, bool rope, double theta) {
  const i64 n = B * S;
  Vec q = ref_linear(x, w.wq, w.bq, n, E, H * D);
  Vec k = ref_linear(x, w.wk, w.bk, n, E, KVH * D);
  Vec v = ref_linear(x, w.wv, w.bv, n, E, KVH * D);
  if (rope) {
    ref_rope(q, B, S, H, D, theta);
    ref_rope(k, B, S, KVH, D, theta);
  }
  Vec ctx = ref_attention(q, k, v, B, S, H, KVH, D, m);
  return ref_linear(ctx, w.wo, w.bo, n, H * D, E);
}

Vec ref_swiglu(const Vec& x, const Vec& wg, const Vec& wu, const Vec& wd, i64 n, i64 E, i64 F) {
  Vec g = ref_linear(x, wg, {}, n, E, F, silu);
  Vec u = ref_linear(x, wu, {}, n, E, F);
  for (std::size_t i = 0; i < g.size(); ++i)
    g[i] *= u[i];
  return ref_linear(g, wd, {}, n, F, E);
}

/// Evaluates \p g and its lowering on \p v; both must agree exactly (the lowering of a lowered
/// graph is itself), and the MIR is verified and free of HIR ops. \returns the MIR's outputs.
std::vector<Tensor> lower_and_eval(const Graph& g, const Values& v) {
  Graph mir = lower_hir(g);
  EXPECT_FALSE(has_hir_ops(mir));
  EXPECT_NO_THROW(verify(mir, VerifyOptions{.allow_hir = false}));
  return reference::evaluate(mir, v.inputs, v.params);
}

std::vector<OpKind> ops_of(const Graph& g) {
  std::vector<OpKind> ops;
  for (const auto& n : g.nodes())
    ops.push_back(n.op);
  return ops;
}

using rlx::ir::testing::count_ops;

} // namespace

// ---- Linear
// ---------------------------------------------------------------------------------------

TEST(HirLinear, EmitsMatMulTransposedThenBiasThenActivation) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim::sym("seq"), Dim(4)}, DType::f32));
  NodeId w = b.param("w", Shape::of({3, 4}));
  NodeId bias = b.param("b", Shape::of({3}));
  NodeId y = b.linear(x, w, bias, Activation::gelu);
  g.set_outputs({y});
  Graph mir = lower_hir(g);
  EXPECT_EQ(ops_of(mir), (std::vector<OpKind>{OpKind::Input, OpKind::Param, OpKind::Param,
                                              OpKind::MatMul, OpKind::Add, OpKind::Gelu}));
  const Node& mm = mir.node(NodeId(3));
  EXPECT_FALSE(mm.attr<MatMulAttrs>().transpose_a);
  EXPECT_TRUE(mm.attr<MatMulAttrs>().transpose_b);
  EXPECT_EQ(mm.inputs, (std::vector<NodeId>{NodeId(0), NodeId(1)}));
  EXPECT_EQ(mir.node(NodeId(4)).inputs, (std::vector<NodeId>{NodeId(3), NodeId(2)}));
  EXPECT_EQ(mir.node(NodeId(3)).name, "linear%3.proj");
  EXPECT_EQ(mir.node(NodeId(4)).name, "linear%3.proj.bias");
  EXPECT_EQ(mir.node(NodeId(5)).name, "linear%3.act");
  ASSERT_EQ(mir.outputs().size(), 1u);
  EXPECT_EQ(mir.outputs()[0], NodeId(5));
  EXPECT_EQ(mir.shape(NodeId(5)), g.shape(y)); // symbolic dims survive lowering
}

TEST(HirLinear, EveryActivationMatchesLoops) {
  struct Case {
    Activation act;
    double (*fn)(double);
  };
  const Case cases[] = {{Activation::none, nullptr}, {Activation::relu, relu},
                        {Activation::gelu, gelu},    {Activation::gelu_tanh, gelu_tanh},
                        {Activation::silu, silu},    {Activation::sigmoid, sigmoid},
                        {Activation::tanh, tanh_}};
  for (const auto& c : cases) {
    for (bool with_bias : {true, false}) {
      SCOPED_TRACE(std::string(enum_names(c.act)[static_cast<std::size_t>(c.act)]) +
                   (with_bias ? " with bias" : " without bias"));
      Rng rng(7);
      Values v;
      const Vec& xv = v.add(false, "x", {2, 3, 5}, rng, 2.0);
      const Vec& wv = v.add(true, "w", {4, 5}, rng);
      Vec bv = with_bias ? v.add(true, "b", {4}, rng) : Vec{};
      Graph g;
      Builder b(g);
      NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim(3), Dim(5)}, DType::f64));
      NodeId w = b.param("w", Shape::of({4, 5}, DType::f64));
      NodeId bias = with_bias ? b.param("b", Shape::of({4}, DType::f64)) : NodeId{};
      b.output(b.linear(x, w, bias, c.act));
      auto out = lower_and_eval(g, v);
      expect_near(out.at(0), {2, 3, 4}, ref_linear(xv, wv, bv, 6, 5, 4, c.fn), 1e-12);
    }
  }
}

TEST(HirLinear, VectorInputIsLiftedToAMatrix) {
  Rng rng(3);
  Values v;
  const Vec& xv = v.add(false, "x", {5}, rng);
  const Vec& wv = v.add(true, "w", {2, 5}, rng);
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({5}, DType::f64));
  NodeId w = b.param("w", Shape::of({2, 5}, DType::f64));
  b.output(b.linear(x, w, {}, Activation::relu));
  auto out = lower_and_eval(g, v);
  expect_near(out.at(0), {2}, ref_linear(xv, wv, {}, 1, 5, 2, relu), 1e-12);
}

TEST(HirLinear, Float32MatchesLoops) {
  Rng rng(11);
  Values v;
  v.dtype = DType::f32;
  const Vec& xv = v.add(false, "x", {3, 8}, rng);
  const Vec& wv = v.add(true, "w", {6, 8}, rng);
  const Vec& bv = v.add(true, "b", {6}, rng);
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3, 8}));
  b.output(
      b.linear(x, b.param("w", Shape::of({6, 8})), b.param("b", Shape::of({6})), Activation::silu));
  auto out = lower_and_eval(g, v);
  EXPECT_EQ(out.at(0).dtype(), DType::f32);
  expect_near(out.at(0), {3, 6}, ref_linear(xv, wv, bv, 3, 8, 6, silu), 1e-6);
}

// ---- SwiGLU FFN
// -----------------------------------------------------------------------------------

TEST(HirSwiGlu, MatchesLoops) {
  const i64 B = 2, S = 3, E = 8, F = 12;
  Rng rng(5);
  Values v;
  const Vec& xv = v.add(false, "x", {B, S, E}, rng, 1.0);
  const Vec& wg = v.add(true, "w_gate", {F, E}, rng);
  const Vec& wu = v.add(true, "w_up", {F, E}, rng);
  const Vec& wd = v.add(true, "w_down", {E, F}, rng);
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim::sym("seq"), Dim(E)}, DType::f64));
  NodeId y = b.swiglu_ffn(x, b.param("w_gate", Shape::of({F, E}, DType::f64)),
                          b.param("w_up", Shape::of({F, E}, DType::f64)),
                          b.param("w_down", Shape::of({E, F}, DType::f64)));
  g.set_outputs({y});
  Graph mir = lower_hir(g);
  EXPECT_EQ(count_ops(mir, OpKind::MatMul), 3);
  EXPECT_EQ(count_ops(mir, OpKind::Silu), 1);
  EXPECT_EQ(count_ops(mir, OpKind::Mul), 1);
  for (const auto& n : mir.nodes())
    if (n.op == OpKind::MatMul) {
      EXPECT_TRUE(n.attr<MatMulAttrs>().transpose_b);
    }
  auto out = lower_and_eval(g, v);
  expect_near(out.at(0), {B, S, E}, ref_swiglu(xv, wg, wu, wd, B * S, E, F), 1e-12);
}

// ---- attention block
// ------------------------------------------------------------------------------

namespace {

struct AttnCase {
  i64 B = 2, S = 4, E = 8, H = 2, KVH = 2;
  bool bias = false, rope = false;
  double theta = 10000.0;
  MaskKind mask = MaskKind::none;
  i64 window = 0;
};

void check_attention_block(const AttnCase& c) {
  const i64 D = c.E / c.H;
  Rng rng(99);
  Values v;
  const Vec& xv = v.add(false, "x", {c.B, c.S, c.E}, rng, 1.0);
  RefAttnWeights w;
  w.wq = v.add(true, "wq", {c.H * D, c.E}, rng);
  w.wk = v.add(true, "wk", {c.KVH * D, c.E}, rng);
  w.wv = v.add(true, "wv", {c.KVH * D, c.E}, rng);
  w.wo = v.add(true, "wo", {c.E, c.H * D}, rng);
  if (c.bias) {
    w.bq = v.add(true, "bq", {c.H * D}, rng);
    w.bk = v.add(true, "bk", {c.KVH * D}, rng);
    w.bv = v.add(true, "bv", {c.KVH * D}, rng);
    w.bo = v.add(true, "bo", {c.E}, rng);
  }
  RefMask m{c.mask, c.window, {}, {}};

  Graph g;
  Builder b(g);
  const Dim batch = Dim::sym("batch"), seq = Dim::sym("seq");
  auto p = [&](const std::string& name, std::vector<i64> sizes) {
    return b.param(name, Shape::of(sizes, DType::f64));
  };
  std::vector<NodeId> in{b.input("x", Shape({batch, seq, Dim(c.E)}, DType::f64)),
                         p("wq", {c.H * D, c.E}), p("wk", {c.KVH * D, c.E}),
                         p("wv", {c.KVH * D, c.E}), p("wo", {c.E, c.H * D})};
  if (c.bias)
    for (const auto& [name, n] : std::vector<std::pair<std::string, i64>>{
             {"bq", c.H * D}, {"bk", c.KVH * D}, {"bv", c.KVH * D}, {"bo", c.E}})
      in.push_back(p(name, {n}));
  if (c.mask == MaskKind::padding) {
    // Batch 0 keeps every key; batch 1 drops the last one.
    for (i64 bi = 0; bi < c.B; ++bi)
      for (i64 j = 0; j < c.S; ++j)
        m.keep.push_back(bi == 1 && j == c.S - 1 ? 0.0 : 1.0);
    v.inputs["mask"] = v.tensor({c.B, c.S}, m.keep);
    in.push_back(b.input("mask", Shape({batch, seq}, DType::f64)));
  } else if (c.mask == MaskKind::bias) {
    m.bias = v.add(false, "bias", {c.B, c.H, c.S, c.S}, rng, 2.0);
    in.push_back(b.input("bias", Shape({batch, Dim(c.H), seq, seq}, DType::f64)));
  }
  AttentionBlockAttrs a;
  a.num_heads = c.H;
  a.num_kv_heads = c.KVH;
  a.mask = c.mask;
  a.window = c.window;
  a.bias = c.bias;
  a.rope = c.rope;
  a.rope_theta = c.theta;
  NodeId y = b.attention_block(in, a);
  g.set_outputs({y});

  Graph mir = lower_hir(g);
  EXPECT_EQ(count_ops(mir, OpKind::Attention), 1);
  EXPECT_EQ(count_ops(mir, OpKind::MatMul), 4);
  EXPECT_EQ(count_ops(mir, OpKind::Rope), c.rope ? 2 : 0);
  EXPECT_EQ(count_ops(mir, OpKind::Add), c.bias ? 4 : 0);
  for (const auto& n : mir.nodes())
    if (n.op == OpKind::Attention) {
      const auto& at = n.attr<AttentionAttrs>();
      EXPECT_EQ(at.layout, AttnLayout::bshd);
      EXPECT_EQ(at.num_heads, c.H);
      EXPECT_EQ(at.num_kv_heads, c.KVH);
      EXPECT_EQ(at.mask, c.mask);
      EXPECT_EQ(n.shape, Shape({batch, seq, Dim(c.H), Dim(D)}, DType::f64));
    }
  auto out = lower_and_eval(g, v);
  expect_near(out.at(0), {c.B, c.S, c.E},
              ref_attention_block(xv, w, c.B, c.S, c.E, c.H, c.KVH, D, m, c.rope, c.theta), 1e-12);
}

} // namespace

TEST(HirAttentionBlock, PlainMultiHead) {
  check_attention_block({});
}

TEST(HirAttentionBlock, WithBiases) {
  AttnCase c;
  c.bias = true;
  check_attention_block(c);
}

TEST(HirAttentionBlock, RopeCausalGroupedQuery) {
  AttnCase c;
  c.H = 4;
  c.KVH = 2;
  c.E = 16;
  c.rope = true;
  c.theta = 500.0; // a small theta makes every frequency rotate visibly over 4 positions
  c.mask = MaskKind::causal;
  check_attention_block(c);
}

TEST(HirAttentionBlock, SlidingWindow) {
  AttnCase c;
  c.S = 5;
  c.mask = MaskKind::sliding_window;
  c.window = 2;
  check_attention_block(c);
}

TEST(HirAttentionBlock, PaddingMask) {
  AttnCase c;
  c.bias = true;
  c.mask = MaskKind::padding;
  check_attention_block(c);
}

TEST(HirAttentionBlock, AdditiveBias) {
  AttnCase c;
  c.mask = MaskKind::bias;
  check_attention_block(c);
}

// ---- BERT layer
// -----------------------------------------------------------------------------------

namespace {

/// A BERT layer with every weight random, in HIR, plus its loop evaluation.
struct BertCase {
  static constexpr i64 B = 2, S = 3, E = 8, H = 2, F = 16;
  static constexpr double eps = 1e-12;
  Values v;
  Graph g{"bert"};
  Vec want;

  explicit BertCase(bool padding, DType t = DType::f64) {
    v.dtype = t;
    Rng rng(2024);
    const Vec& xv = v.add(false, "x", {B, S, E}, rng, 1.0);
    Builder b(g);
    const Dim batch = Dim::sym("batch"), seq = Dim::sym("seq");
    std::vector<NodeId> in{b.input("x", Shape({batch, seq, Dim(E)}, t))};
    auto p = [&](const std::string& name, std::vector<i64> sizes, double scale = 0.5) {
      in.push_back(b.param(name, Shape::of(sizes, t)));
      return v.add(true, name, sizes, rng, scale);
    };
    RefAttnWeights w;
    w.wq = p("wq", {E, E});
    w.bq = p("bq", {E});
    w.wk = p("wk", {E, E});
    w.bk = p("bk", {E});
    w.wv = p("wv", {E, E});
    w.bv = p("bv", {E});
    w.wo = p("wo", {E, E});
    w.bo = p("bo", {E});
    Vec ln1g = p("ln1_g", {E}), ln1b = p("ln1_b", {E});
    Vec w1 = p("w1", {F, E}), b1 = p("b1", {F}), w2 = p("w2", {E, F}), b2 = p("b2", {E});
    Vec ln2g = p("ln2_g", {E}), ln2b = p("ln2_b", {E});
    RefMask m;
    if (padding) {
      m.kind = MaskKind::padding;
      m.keep = {1, 1, 1, 1, 1, 0}; // second sequence is padded at its last position
      v.inputs["mask"] = v.tensor({B, S}, m.keep);
      in.push_back(b.input("mask", Shape({batch, seq}, t)));
    }
    BertLayerAttrs a;
    a.num_heads = H;
    a.eps = eps;
    a.act = Activation::gelu;
    a.padding_mask = padding;
    NodeId y = b.bert_layer(in, a);
    g.set_outputs({y});

    const i64 n = B * S;
    Vec attn = ref_attention_block(xv, w, B, S, E, H, H, E / H, m, false, 0);
    Vec h1 = ref_layer_norm(add(attn, xv), ln1g, ln1b, E, eps);
    Vec f = ref_linear(ref_linear(h1, w1, b1, n, E, F, gelu), w2, b2, n, F, E);
    want = ref_layer_norm(add(f, h1), ln2g, ln2b, E, eps);
  }
};

} // namespace

TEST(HirBertLayer, MatchesHandRolledLayer) {
  BertCase c(false);
  auto out = lower_and_eval(c.g, c.v);
  expect_near(out.at(0), {BertCase::B, BertCase::S, BertCase::E}, c.want, 1e-10);
}

TEST(HirBertLayer, PaddingMaskMatchesHandRolledLayer) {
  BertCase c(true);
  auto out = lower_and_eval(c.g, c.v);
  expect_near(out.at(0), {BertCase::B, BertCase::S, BertCase::E}, c.want, 1e-10);
  // The mask matters: without it the padded sequence's outputs differ.
  BertCase unmasked(false);
  auto plain = lower_and_eval(unmasked.g, unmasked.v);
  EXPECT_GT(max_abs_diff(out.at(0), plain.at(0)), 1e-3);
}

TEST(HirBertLayer, Float32MatchesHandRolledLayer) {
  BertCase c(true, DType::f32);
  auto out = lower_and_eval(c.g, c.v);
  EXPECT_EQ(out.at(0).dtype(), DType::f32);
  // Each op rounds to f32; LayerNorm output is O(1), so a few ulps of accumulated error.
  expect_near(out.at(0), {BertCase::B, BertCase::S, BertCase::E}, c.want, 2e-5);
}

TEST(HirBertLayer, EmitsTheCanonicalChains) {
  BertCase c(true);
  Graph& hir = c.g;
  // Name the block: every emitted node is labelled "<block>.<part>".
  Graph named("bert");
  {
    Builder b(named);
    std::vector<NodeId> remap;
    for (const auto& n : hir.nodes()) {
      std::vector<NodeId> in;
      for (NodeId i : n.inputs)
        in.push_back(remap[i.v]);
      remap.push_back(b.op(n.op, in, n.attrs, is_hir(n.op) ? "layer0" : n.name));
    }
    named.set_outputs({remap[hir.outputs()[0].v]});
  }
  Graph mir = lower_hir(named);
  EXPECT_EQ(count_ops(mir, OpKind::LayerNorm), 2);
  EXPECT_EQ(count_ops(mir, OpKind::MatMul), 6);
  EXPECT_EQ(count_ops(mir, OpKind::Gelu), 1);
  EXPECT_EQ(count_ops(mir, OpKind::Attention), 1);
  EXPECT_EQ(mir.inputs().size(), hir.inputs().size());
  EXPECT_EQ(mir.params().size(), hir.params().size());
  for (NodeId id : mir.ids()) {
    const Node& n = mir.node(id);
    if (is_leaf(n.op))
      continue;
    EXPECT_EQ(n.name.rfind("layer0.", 0), 0u) << describe(mir, id);
    // Every LayerNorm reads a residual Add; every Gelu reads a bias Add that reads a MatMul.
    if (n.op == OpKind::LayerNorm) {
      EXPECT_EQ(mir.node(n.inputs[0]).op, OpKind::Add);
    }
    if (n.op == OpKind::Gelu) {
      const Node& bias = mir.node(n.inputs[0]);
      ASSERT_EQ(bias.op, OpKind::Add);
      EXPECT_EQ(mir.node(bias.inputs[0]).op, OpKind::MatMul);
      EXPECT_EQ(mir.node(bias.inputs[0]).name, "layer0.ffn_in");
    }
  }
}

// ---- LLaMA block
// ----------------------------------------------------------------------------------

namespace {

struct LlamaCase {
  static constexpr i64 B = 1, S = 3, E = 8, H = 2, KVH = 1, F = 12;
  static constexpr double eps = 1e-6, theta = 100.0;
  Values v;
  Graph g{"llama"};
  Vec want;

  LlamaCase() {
    const i64 D = E / H;
    Rng rng(77);
    const Vec& xv = v.add(false, "x", {B, S, E}, rng, 1.0);
    Builder b(g);
    std::vector<NodeId> in{
        b.input("x", Shape({Dim::sym("batch"), Dim::sym("seq"), Dim(E)}, DType::f64))};
    auto p = [&](const std::string& name, std::vector<i64> sizes) {
      in.push_back(b.param(name, Shape::of(sizes, DType::f64)));
      return v.add(true, name, sizes, rng);
    };
    Vec attn_norm = p("attn_norm", {E});
    RefAttnWeights w;
    w.wq = p("wq", {H * D, E});
    w.wk = p("wk", {KVH * D, E});
    w.wv = p("wv", {KVH * D, E});
    w.wo = p("wo", {E, H * D});
    Vec ffn_norm = p("ffn_norm", {E});
    Vec wg = p("w_gate", {F, E}), wu = p("w_up", {F, E}), wd = p("w_down", {E, F});
    LlamaBlockAttrs a;
    a.num_heads = H;
    a.num_kv_heads = KVH;
    a.eps = eps;
    a.rope_theta = theta;
    g.set_outputs({b.llama_block(in, a)});

    RefMask causal;
    causal.kind = MaskKind::causal;
    Vec h = add(xv, ref_attention_block(ref_rms_norm(xv, attn_norm, E, eps), w, B, S, E, H, KVH, D,
                                        causal, true, theta));
    want = add(h, ref_swiglu(ref_rms_norm(h, ffn_norm, E, eps), wg, wu, wd, B * S, E, F));
  }
};

} // namespace

TEST(HirLlamaBlock, MatchesHandRolledBlock) {
  LlamaCase c;
  auto out = lower_and_eval(c.g, c.v);
  expect_near(out.at(0), {LlamaCase::B, LlamaCase::S, LlamaCase::E}, c.want, 1e-10);
}

TEST(HirLlamaBlock, EmitsNormRopeCausalGqaAndSwiGlu) {
  LlamaCase c;
  Graph mir = lower_hir(c.g);
  EXPECT_EQ(count_ops(mir, OpKind::RmsNorm), 2);
  EXPECT_EQ(count_ops(mir, OpKind::Rope), 2);
  EXPECT_EQ(count_ops(mir, OpKind::MatMul), 7);
  EXPECT_EQ(count_ops(mir, OpKind::Silu), 1);
  EXPECT_EQ(count_ops(mir, OpKind::Add), 2); // the two residuals; LLaMA has no biases
  for (const auto& n : mir.nodes()) {
    if (n.op == OpKind::Attention) {
      EXPECT_EQ(n.attr<AttentionAttrs>().mask, MaskKind::causal);
      EXPECT_EQ(n.attr<AttentionAttrs>().num_kv_heads, LlamaCase::KVH);
    }
    if (n.op == OpKind::Rope) {
      EXPECT_EQ(n.attr<RopeAttrs>().style, RopeStyle::half);
      EXPECT_EQ(n.attr<RopeAttrs>().theta, LlamaCase::theta);
    }
    if (!is_leaf(n.op)) {
      EXPECT_EQ(n.name.rfind("llama_block%", 0), 0u) << n.name;
    }
  }
}

TEST(HirLlamaBlock, RunsAtAnotherSequenceLength) {
  // The same symbolic graph, evaluated at seq 5 (bound from the input) against seq 5 loops.
  LlamaCase c;
  Rng rng(1);
  const i64 S = 5, E = LlamaCase::E, F = LlamaCase::F, D = E / LlamaCase::H;
  Values v = c.v;
  const Vec& xv = v.add(false, "x", {1, S, E}, rng, 1.0);
  RefAttnWeights w{c.v.raw["wq"], c.v.raw["wk"], c.v.raw["wv"], c.v.raw["wo"], {}, {}, {}, {}};
  RefMask causal;
  causal.kind = MaskKind::causal;
  Vec h = add(xv, ref_attention_block(ref_rms_norm(xv, c.v.raw["attn_norm"], E, LlamaCase::eps), w,
                                      1, S, E, LlamaCase::H, LlamaCase::KVH, D, causal, true,
                                      LlamaCase::theta));
  Vec want = add(h, ref_swiglu(ref_rms_norm(h, c.v.raw["ffn_norm"], E, LlamaCase::eps),
                               c.v.raw["w_gate"], c.v.raw["w_up"], c.v.raw["w_down"], S, E, F));
  auto out = lower_and_eval(c.g, v);
  expect_near(out.at(0), {1, S, E}, want, 1e-10);
}

// ---- the lowering as a graph transformation
// -------------------------------------------------------

TEST(HirLowering, KeepsInterfaceAndPrimitiveNodes) {
  Graph g("mixed");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 4}, DType::f64));
  NodeId w2 = b.param("w2", Shape::of({4, 4}, DType::f64));
  NodeId y = b.input("y", Shape::of({2, 4}, DType::f64));
  NodeId w1 = b.param("w1", Shape::of({4, 4}, DType::f64));
  NodeId s = b.add(x, y);
  NodeId l1 = b.linear(s, w1, {}, Activation::tanh);
  NodeId l2 = b.linear(b.neg(l1), w2);
  g.set_outputs({l2, s, l1, x});
  Graph mir = lower_hir(g);

  ASSERT_EQ(mir.inputs().size(), 2u);
  ASSERT_EQ(mir.params().size(), 2u);
  auto leaf_name = [&](NodeId id) { return mir.node(id).attr<LeafAttrs>().name; };
  EXPECT_EQ(leaf_name(mir.inputs()[0]), "x");
  EXPECT_EQ(leaf_name(mir.inputs()[1]), "y");
  EXPECT_EQ(leaf_name(mir.params()[0]), "w2");
  EXPECT_EQ(leaf_name(mir.params()[1]), "w1");
  ASSERT_EQ(mir.outputs().size(), 4u);
  EXPECT_EQ(mir.node(mir.outputs()[1]).op, OpKind::Add);
  EXPECT_EQ(mir.node(mir.outputs()[2]).op, OpKind::Tanh);
  EXPECT_EQ(mir.node(mir.outputs()[3]).op, OpKind::Input);
  EXPECT_EQ(count_ops(mir, OpKind::Neg), 1);

  Rng rng(4);
  Values v;
  const Vec& xv = v.add(false, "x", {2, 4}, rng);
  const Vec& yv = v.add(false, "y", {2, 4}, rng);
  const Vec& w1v = v.add(true, "w1", {4, 4}, rng);
  const Vec& w2v = v.add(true, "w2", {4, 4}, rng);
  auto out = reference::evaluate(mir, v.inputs, v.params);
  Vec sv = add(xv, yv);
  Vec l1v = ref_linear(sv, w1v, {}, 2, 4, 4, tanh_);
  Vec neg = l1v;
  for (auto& e : neg)
    e = -e;
  expect_near(out.at(0), {2, 4}, ref_linear(neg, w2v, {}, 2, 4, 4), 1e-12);
  expect_near(out.at(1), {2, 4}, sv, 0);
  expect_near(out.at(2), {2, 4}, l1v, 1e-12);
  expect_near(out.at(3), {2, 4}, xv, 0);
}

TEST(HirLowering, LowersBlocksInsideSubGraphs) {
  Graph branch("then");
  {
    Builder b(branch);
    NodeId x = b.input("x", Shape::of({2, 3}, DType::f64));
    NodeId w = b.input("w", Shape::of({3, 3}, DType::f64));
    b.output(b.linear(x, w, {}, Activation::relu));
  }
  Graph other("else");
  {
    Builder b(other);
    NodeId x = b.input("x", Shape::of({2, 3}, DType::f64));
    b.input("w", Shape::of({3, 3}, DType::f64));
    b.output(b.neg(x));
  }
  Graph g;
  Builder b(g);
  NodeId pred = b.input("pred", Shape::scalar(DType::boolean));
  NodeId x = b.input("x", Shape::of({2, 3}, DType::f64));
  NodeId w = b.param("w", Shape::of({3, 3}, DType::f64));
  b.output(b.if_(pred, {x, w}, branch, other));
  EXPECT_TRUE(has_hir_ops(g));
  Graph mir = lower_hir(g);
  EXPECT_FALSE(has_hir_ops(mir));
  const auto& at = mir.node(mir.outputs()[0]).attr<IfAttrs>();
  EXPECT_EQ(count_ops(*at.then_branch, OpKind::MatMul), 1);
  EXPECT_TRUE(*at.else_branch == other); // branches without HIR ops are kept as they are

  Rng rng(8);
  Values v;
  const Vec& xv = v.add(false, "x", {2, 3}, rng);
  const Vec& wv = v.add(true, "w", {3, 3}, rng);
  v.inputs["pred"] = Tensor::scalar<bool>(true);
  auto out = reference::evaluate(mir, v.inputs, v.params);
  expect_near(out.at(0), {2, 3}, ref_linear(xv, wv, {}, 2, 3, 3, relu), 1e-12);
}

TEST(HirLowering, HasHirOps) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}));
  NodeId r = b.relu(x);
  g.set_outputs({r});
  EXPECT_FALSE(has_hir_ops(g));
  b.output(b.linear(r, b.param("w", Shape::of({3, 3}))));
  EXPECT_TRUE(has_hir_ops(g));
  EXPECT_FALSE(has_hir_ops(lower_hir(g)));
  // A graph without HIR ops lowers to an equal graph.
  Graph plain;
  Builder pb(plain);
  pb.output(pb.exp(pb.input("x", Shape::of({2}))));
  EXPECT_TRUE(lower_hir(plain) == plain);
}

// ---- decompose_hir on its own and bad input
// -------------------------------------------------------

TEST(HirDecompose, IntoAnotherGraph) {
  Graph hir;
  Builder hb(hir);
  NodeId x = hb.input("x", Shape::of({2, 4}));
  NodeId w = hb.param("w", Shape::of({3, 4}));
  NodeId l = hb.linear(x, w, {}, Activation::relu);

  Graph target;
  Builder tb(target);
  std::vector<NodeId> args{tb.input("x", Shape::of({2, 4})), tb.param("w", Shape::of({3, 4}))};
  NodeId out = decompose_hir(tb, hir.node(l), args);
  EXPECT_EQ(target.shape(out), hir.shape(l));
  EXPECT_EQ(target.node(out).op, OpKind::Relu);
  EXPECT_EQ(target.node(out).name, "linear.act"); // an unnamed node is labelled by its mnemonic
}

TEST(HirDecompose, RejectsBadInput) {
  Graph hir;
  Builder hb(hir);
  NodeId x = hb.input("x", Shape::of({2, 4}));
  NodeId w = hb.param("w", Shape::of({3, 4}));
  NodeId l = hb.linear(x, w);
  NodeId r = hb.relu(x);

  Graph target;
  Builder tb(target);
  NodeId tx = tb.input("x", Shape::of({2, 4}));
  NodeId tw = tb.param("w", Shape::of({3, 4}));
  NodeId bad_w = tb.param("w_bad", Shape::of({3, 5}));
  std::vector<NodeId> ok{tx, tw};
  // Not a HIR op.
  EXPECT_THROW(decompose_hir(tb, hir.node(r), std::vector<NodeId>{tx}), rlx::Error);
  // Wrong operand count, wrong weight shape, operand not in the target graph.
  EXPECT_THROW(decompose_hir(tb, hir.node(l), std::vector<NodeId>{tx}), ShapeError);
  EXPECT_THROW(decompose_hir(tb, hir.node(l), std::vector<NodeId>{tx, bad_w}), ShapeError);
  EXPECT_THROW(decompose_hir(tb, hir.node(l), std::vector<NodeId>{tx, NodeId(42)}), rlx::Error);
  EXPECT_THROW(decompose_hir(tb, hir.node(l), std::vector<NodeId>{tx, NodeId{}}), rlx::Error);
  // A node whose attributes are not its op's.
  Node wrong = hir.node(l);
  wrong.attrs = NormAttrs{};
  EXPECT_THROW(decompose_hir(tb, wrong, ok), ShapeError);
  try {
    decompose_hir(tb, hir.node(r), std::vector<NodeId>{tx});
    FAIL() << "decompose_hir accepted a relu";
  } catch (const rlx::Error& e) {
    EXPECT_NE(std::string(e.what()).find("relu"), std::string::npos) << e.what();
  }
}

TEST(HirLowering, RejectsAnInvalidGraph) {
  // A node whose recorded type disagrees with its shape rule: lower_hir verifies before lowering.
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 4}));
  NodeId w = b.param("w", Shape::of({3, 4}));
  NodeId bad = g.add_unchecked(Node{OpKind::Linear, {x, w}, LinearAttrs{}, Shape::of({2, 7}), ""});
  g.set_outputs({bad});
  EXPECT_THROW(lower_hir(g), VerifyError);
}
