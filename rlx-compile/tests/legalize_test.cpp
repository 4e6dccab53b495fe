// legalize_test.cpp: legalisation against claim sets. Every decomposition (and every alternative
// form) is checked numerically against the reference interpreter in f32 and f64; chains of
// decompositions, the dispatch report, and the unsupported-op error are tested too.
#include "rlx/compile/legalize.hpp"
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/compile_testing.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

namespace rlx::compile {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::claim_all_but;
using testing::count_ops;
using testing::expect_error;

double tolerance(DType t) {
  return t == DType::f64 ? 1e-12 : 2e-6;
}

/// Legalises \p g against \p claims, expects it legal and equivalent to the original.
DispatchReport legalize_and_check(const Graph& g, const ir::ClaimSet& claims, double tol) {
  Graph out = g;
  DispatchReport rep = legalize(out, claims, "test-subset");
  ir::verify(out);
  for (NodeId id : out.ids())
    EXPECT_TRUE(ir::is_leaf(out.node(id).op) || claims.supports(out, id))
        << ir::describe(out, id) << " left unsupported:\n"
        << ir::print(out);
  EXPECT_EQ(rep.total().unsupported, 0);
  testing::expect_equivalent(g, out, tol);
  return rep;
}

Graph unary_graph(OpKind op, DType t) {
  Graph g("unary");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 5}, t));
  b.output(b.unary(op, x));
  return g;
}

Graph binary_graph(OpKind op, DType t) {
  Graph g("binary");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 5}, t));
  NodeId y = b.input("y", Shape::of({5}, t));
  b.output(b.binary(op, x, y));
  b.output(b.binary(op, y, x));
  return g;
}

TEST(Legalize, UnaryDecompositions) {
  for (OpKind op : {OpKind::Neg, OpKind::Abs, OpKind::Relu, OpKind::Reciprocal, OpKind::Rsqrt,
                    OpKind::Sqrt, OpKind::Sigmoid, OpKind::Silu, OpKind::Gelu, OpKind::GeluTanh}) {
    for (DType t : {DType::f32, DType::f64}) {
      SCOPED_TRACE(std::string(ir::op_name(op)) + " " + std::string(ir::dtype_name(t)));
      DispatchReport rep =
          legalize_and_check(unary_graph(op, t), claim_all_but({op}), tolerance(t));
      EXPECT_EQ(rep.by_op[op].rewritten, 1);
      EXPECT_EQ(rep.by_op[op].native, 0);
    }
  }
  for (OpKind op : {OpKind::Neg, OpKind::Abs, OpKind::Relu}) {
    SCOPED_TRACE(std::string(ir::op_name(op)) + " i32");
    legalize_and_check(unary_graph(op, DType::i32), claim_all_but({op}), 0);
  }
}

TEST(Legalize, BinaryDecompositionsWithBroadcasting) {
  for (OpKind op : {OpKind::Sub, OpKind::Div, OpKind::Maximum, OpKind::Minimum}) {
    for (DType t : {DType::f32, DType::f64}) {
      SCOPED_TRACE(std::string(ir::op_name(op)) + " " + std::string(ir::dtype_name(t)));
      legalize_and_check(binary_graph(op, t), claim_all_but({op}), tolerance(t));
    }
  }
  for (OpKind op : {OpKind::Sub, OpKind::Maximum, OpKind::Minimum}) {
    SCOPED_TRACE(std::string(ir::op_name(op)) + " i32");
    legalize_and_check(binary_graph(op, DType::i32), claim_all_but({op}), 0);
  }
}

TEST(Legalize, AlternativeFormsAreChosenByWhatIsClaimed) {
  struct Case {
    OpKind op;
    std::vector<OpKind> also_unclaimed;
    OpKind must_appear;
  };
  const std::vector<Case> cases = {
      {OpKind::Neg, {}, OpKind::Mul},      {OpKind::Neg, {OpKind::Mul}, OpKind::Sub},
      {OpKind::Rsqrt, {}, OpKind::Div},    {OpKind::Rsqrt, {OpKind::Div}, OpKind::Reciprocal},
      {OpKind::Silu, {}, OpKind::Sigmoid}, {OpKind::Silu, {OpKind::Sigmoid}, OpKind::Exp},
  };
  for (const Case& c : cases) {
    for (DType t : {DType::f32, DType::f64}) {
      SCOPED_TRACE(std::string(ir::op_name(c.op)) + " " + std::string(ir::dtype_name(t)));
      ir::ClaimSet claims = claim_all_but({c.op});
      for (OpKind k : c.also_unclaimed)
        claims.unclaim(k);
      Graph g = unary_graph(c.op, t);
      Graph out = g;
      legalize(out, claims, "alt");
      EXPECT_GE(count_ops(out, c.must_appear), 1) << ir::print(out);
      testing::expect_equivalent(g, out, tolerance(t));
    }
  }
}

TEST(Legalize, SoftmaxFamilyAndNorms) {
  for (DType t : {DType::f32, DType::f64}) {
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    for (std::int64_t axis : {0, 1, -1}) {
      Graph g("softmax");
      Builder b(g);
      NodeId x = b.input("x", Shape::of({3, 4, 5}, t));
      b.output(b.softmax(x, axis));
      b.output(b.log_softmax(x, axis));
      DispatchReport rep =
          legalize_and_check(g, claim_all_but({OpKind::Softmax, OpKind::LogSoftmax}), tolerance(t));
      EXPECT_EQ(rep.by_op[OpKind::Softmax].rewritten, 1);
      EXPECT_EQ(rep.by_op[OpKind::LogSoftmax].rewritten, 1);
    }
    Graph g("norms");
    Builder b(g);
    NodeId x = b.input("x", Shape::of({3, 8}, t));
    NodeId gamma = b.param("gamma", Shape::of({8}, t));
    NodeId beta = b.param("beta", Shape::of({8}, t));
    b.output(b.layer_norm(x, gamma, beta, 1e-5));
    b.output(b.layer_norm(x, gamma, NodeId{}, 1e-3));
    b.output(b.rms_norm(x, gamma, 1e-6));
    DispatchReport rep =
        legalize_and_check(g, claim_all_but({OpKind::LayerNorm, OpKind::RmsNorm}), tolerance(t));
    EXPECT_EQ(rep.by_op[OpKind::LayerNorm].rewritten, 2);
    EXPECT_EQ(rep.by_op[OpKind::RmsNorm].rewritten, 1);
  }
}

TEST(Legalize, SoftmaxCrossEntropy) {
  for (DType t : {DType::f32, DType::f64}) {
    for (DType lt : {DType::i32, DType::i64}) {
      Graph g("sce");
      Builder b(g);
      NodeId logits = b.input("logits", Shape({ir::Dim::sym("n"), 6}, t));
      NodeId labels = b.input("labels", Shape({ir::Dim::sym("n")}, lt));
      b.output(b.softmax_cross_entropy(logits, labels));
      legalize_and_check(g, claim_all_but({OpKind::SoftmaxCrossEntropy}), tolerance(t));
    }
  }
}

TEST(Legalize, ExpandInEveryKindOfDtype) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::boolean}) {
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    Graph g("expand");
    Builder b(g);
    NodeId x = b.input("x", Shape::of({3, 1}, t));
    b.output(b.expand(x, {2, 3, 4}));
    legalize_and_check(g, claim_all_but({OpKind::Expand}), 0);
  }
}

TEST(Legalize, QuantizationForms) {
  for (bool per_channel : {false, true}) {
    SCOPED_TRACE(per_channel ? "per-channel" : "per-tensor");
    ir::QuantAttrs q;
    if (per_channel) {
      q.axis = 1;
      q.scales = {0.02, 0.05, 0.1};
      q.zero_points = {0, 3, -2};
    } else {
      q.scales = {0.03};
      q.zero_points = {1};
    }
    Graph g("quant");
    Builder b(g);
    NodeId x = b.input("x", Shape::of({2, 3, 4}));
    NodeId qi = b.input("q", Shape::of({2, 3, 4}, DType::i8));
    b.output(b.fake_quantize(x, q));
    b.output(b.dequantize(qi, q));
    // Exact through the f64 form.
    legalize_and_check(g, claim_all_but({OpKind::FakeQuantize, OpKind::Dequantize}), 0);
    // With f64 arithmetic unclaimed the f32 form is taken: the scale rounds to f32 first.
    ir::ClaimSet f32_only = claim_all_but(
        {OpKind::FakeQuantize, OpKind::Dequantize, OpKind::Sub, OpKind::Mul, OpKind::Cast});
    f32_only.claim(OpKind::Sub, {DType::f32});
    f32_only.claim(OpKind::Mul, {DType::f32});
    f32_only.claim(OpKind::Cast, {DType::f32, DType::i8});
    // Two f32 roundings (the scale, then the product): within 2 ulps of the reference.
    legalize_and_check(g, f32_only, 3e-7);
  }
}

TEST(Legalize, FakeQuantizeOfOtherFloatTypesHasNoExactForm) {
  Graph g("fq64");
  Builder b(g);
  ir::QuantAttrs q;
  q.scales = {0.1};
  q.zero_points = {0};
  b.output(b.fake_quantize(b.input("x", Shape::of({4}, DType::f64)), q));
  expect_error("f64 fake_quantize decomposed",
               [&] { legalize(g, claim_all_but({OpKind::FakeQuantize}), "no-fq"); },
               {"fake_quantize %1", "only f32"});
}

TEST(Legalize, EverySampleOfADecomposableOpLegalises) {
  // The rlx-ir sample graph of every op with a decomposition (HIR blocks, control flow, CustomFn,
  // DotGeneral ... included) becomes legal for a backend claiming everything else, and computes
  // the same values. Symbols are bound first (the pipeline legalises symbolic graphs too, but
  // rope's tables and causal masks need static sequence lengths).
  for (OpKind op : ir::testing::all_ops()) {
    if (!ir::has_decomposition(op))
      continue;
    SCOPED_TRACE(std::string(ir::op_name(op)));
    Graph g = ir::testing::sample_graph(op);
    Graph out = g.bind(ir::testing::sample_bindings(g));
    ir::ClaimSet claims = claim_all_but({op});
    DispatchReport rep = legalize_partial(out, claims, "all-but");
    if (rep.total().unsupported > 0) {
      // Only a sample whose dtype or sizes the decomposition cannot express may stay.
      ADD_FAILURE() << rep.str();
      continue;
    }
    EXPECT_EQ(count_ops(out, op), 0) << ir::print(out);
    EXPECT_GE(rep.by_op[op].rewritten, 1);
    testing::expect_equivalent(g, out, 1e-5);
  }
}

TEST(Legalize, AttentionInEveryConfiguration) {
  // Both layouts, GQA, every mask kind, explicit scale and softcap; f64 to compare tightly. The
  // random 0/1 padding mask leaves some rows fully masked (value 0 in the reference).
  const std::int64_t B = 2, S = 5, T = 6, H = 4, D = 3;
  for (auto layout : {ir::AttnLayout::bshd, ir::AttnLayout::bhsd})
    for (std::int64_t kvh : {4, 2, 1})
      for (auto mask : {ir::MaskKind::none, ir::MaskKind::causal, ir::MaskKind::sliding_window,
                        ir::MaskKind::padding, ir::MaskKind::bias})
        for (bool extras : {false, true}) {
          SCOPED_TRACE(std::to_string(static_cast<int>(layout)) + " kv " + std::to_string(kvh) +
                       " mask " + std::to_string(static_cast<int>(mask)) +
                       (extras ? " scale+softcap" : ""));
          auto shape = [&](std::int64_t s, std::int64_t h) {
            return layout == ir::AttnLayout::bshd ? Shape::of({B, s, h, D}, DType::f64)
                                                  : Shape::of({B, h, s, D}, DType::f64);
          };
          Graph g("attn");
          Builder b(g);
          NodeId q = b.input("q", shape(S, H));
          NodeId k = b.input("k", shape(T, kvh));
          NodeId v = b.input("v", shape(T, kvh));
          ir::AttentionAttrs a;
          a.layout = layout;
          a.num_heads = H;
          a.num_kv_heads = kvh;
          a.mask = mask;
          a.window = 2;
          if (extras) {
            a.scale = 0.7;
            a.softcap = 1.5;
          }
          NodeId m;
          if (mask == ir::MaskKind::padding)
            m = b.input("pad", Shape::of({B, T}, DType::f64));
          else if (mask == ir::MaskKind::bias)
            m = b.input("bias", Shape::of({1, H, 1, T}, DType::f64));
          b.output(b.attention(q, k, v, a, m));
          legalize_and_check(g, claim_all_but({OpKind::Attention}), 1e-12);
        }
}

/// Expects \p got to hold \p want's values within \p tol (NaN only where \p want has NaN).
void expect_same_values(const ir::Tensor& want, const ir::Tensor& got, double tol) {
  ASSERT_EQ(want.shape(), got.shape());
  for (std::int64_t i = 0; i < want.numel(); ++i) {
    const double w = want.get_f64(i), o = got.get_f64(i);
    if (std::isnan(w)) {
      EXPECT_TRUE(std::isnan(o)) << "element " << i;
      continue;
    }
    EXPECT_LE(std::fabs(w - o), tol * (1 + std::fabs(w)))
        << "element " << i << ": " << o << " where the reference gives " << w;
  }
}

TEST(Legalize, AttentionRowsWithNoKeptKeyGiveZero) {
  // Rows with no kept key, or whose kept scores are all -inf, are 0 in the reference, for every
  // mask kind: a bias row of -inf (a fully padded sequence), causal / sliding-window with
  // Sq > Sk, a fully padded batch entry, and a query of +inf against negative keys (scores -inf
  // whatever the mask).
  const std::int64_t B = 2, S = 6, T = 4, H = 2, D = 3;
  for (auto mask : {ir::MaskKind::none, ir::MaskKind::causal, ir::MaskKind::sliding_window,
                    ir::MaskKind::padding, ir::MaskKind::bias}) {
    SCOPED_TRACE("mask " + std::to_string(static_cast<int>(mask)));
    Graph g("attn");
    Builder b(g);
    NodeId q = b.input("q", Shape::of({B, H, S, D}, DType::f64));
    NodeId k = b.input("k", Shape::of({B, H, T, D}, DType::f64));
    NodeId v = b.input("v", Shape::of({B, H, T, D}, DType::f64));
    ir::AttentionAttrs a;
    a.layout = ir::AttnLayout::bhsd;
    a.num_heads = H;
    a.num_kv_heads = H;
    a.mask = mask;
    a.window = 2;
    NodeId m;
    if (mask == ir::MaskKind::padding)
      m = b.input("mask", Shape::of({B, T}, DType::f64));
    else if (mask == ir::MaskKind::bias)
      m = b.input("mask", Shape::of({B, H, S, T}, DType::f64));
    b.output(b.attention(q, k, v, a, m));

    auto fill = [](const Shape& s, double v0) {
      ir::Tensor t(s);
      for (std::int64_t i = 0; i < t.numel(); ++i)
        t.set_f64(i, v0 + 0.37 * static_cast<double>((i * 7) % 11) - 1.5);
      return t;
    };
    const double inf = std::numeric_limits<double>::infinity();
    ir::reference::TensorMap in;
    in["q"] = fill(g.shape(q), 0.1);
    ir::Tensor kt = fill(g.shape(k), 0.2);
    for (std::int64_t i = 0; i < kt.numel(); ++i) // keys negative, so a +inf query scores -inf
      kt.set_f64(i, -0.25 - std::fabs(kt.get_f64(i)));
    in["k"] = kt;
    in["v"] = fill(g.shape(v), 0.3);
    for (std::int64_t d = 0; d < D; ++d) // batch 1, head 1, last query: +inf
      in["q"].set_f64(((1 * H + 1) * S + (S - 1)) * D + d, inf);
    if (mask == ir::MaskKind::padding) {
      ir::Tensor pad(g.shape(m));
      for (std::int64_t j = 0; j < T; ++j) {
        pad.set_f64(j, 0);                      // batch 0 fully padded
        pad.set_f64(T + j, j % 2 == 0 ? 1 : 0); // batch 1 partly
      }
      in["mask"] = pad;
    } else if (mask == ir::MaskKind::bias) {
      ir::Tensor bias = fill(g.shape(m), 0.0);
      for (std::int64_t j = 0; j < T; ++j) {
        bias.set_f64(0 * T + j, -inf);                // batch 0, head 0, query 0: every key -inf
        bias.set_f64(1 * T + j, j == 2 ? 0.5 : -inf); // query 1: one key left
      }
      in["mask"] = bias;
    }
    const ir::Tensor want = ir::reference::evaluate(g, in).at(0);
    Graph out = g;
    legalize(out, claim_all_but({OpKind::Attention}), "test-subset");
    EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
    const ir::Tensor got = ir::reference::evaluate(out, in).at(0);
    expect_same_values(want, got, 1e-12);
  }
}

TEST(Legalize, RopeInEveryConfiguration) {
  for (auto layout : {ir::AttnLayout::bshd, ir::AttnLayout::bhsd})
    for (auto style : {ir::RopeStyle::half, ir::RopeStyle::interleaved})
      for (std::int64_t n_rot : {0, 4})
        for (DType t : {DType::f32, DType::f64}) {
          SCOPED_TRACE(std::to_string(static_cast<int>(layout)) + " style " +
                       std::to_string(static_cast<int>(style)) + " n_rot " + std::to_string(n_rot));
          Graph g("rope");
          Builder b(g);
          Shape s = layout == ir::AttnLayout::bshd ? Shape::of({2, 5, 3, 8}, t)
                                                   : Shape::of({2, 3, 5, 8}, t);
          ir::RopeAttrs a;
          a.layout = layout;
          a.style = style;
          a.n_rot = n_rot;
          a.position_offset = 3;
          a.theta = 500;
          b.output(b.rope(b.input("x", s), a));
          legalize_and_check(g, claim_all_but({OpKind::Rope}), tolerance(t));
        }
  // A symbolic sequence length has no constant tables: a clear error.
  Graph g("rope_sym");
  Builder b(g);
  b.output(b.rope(b.input("x", Shape({1, ir::Dim::sym("seq"), 2, 4})), ir::RopeAttrs{}));
  expect_error("symbolic rope decomposed",
               [&] { legalize(g, claim_all_but({OpKind::Rope}), "no-rope"); }, {"bind it first"});
}

TEST(Legalize, ChainsDecompositionsDownToASmallPrimitiveSet) {
  // A backend with a minimal set: silu -> sigmoid -> div/exp/neg -> mul; gelu -> erf; layer_norm
  // and softmax -> reductions.
  ir::ClaimSet small;
  for (OpKind k : {OpKind::Add, OpKind::Mul, OpKind::Div, OpKind::Exp, OpKind::Erf, OpKind::Sqrt,
                   OpKind::Reduce, OpKind::MatMul, OpKind::Sub, OpKind::Log})
    small.claim(k, {DType::f32});
  Graph g("chain");
  Builder b(g);
  NodeId x = b.input("x", Shape({ir::Dim::sym("batch"), 8}));
  NodeId w = b.param("w", Shape::of({8, 8}));
  NodeId gamma = b.param("gamma", Shape::of({8}));
  NodeId h = b.silu(b.matmul(x, w));
  h = b.layer_norm(b.gelu(h), gamma, NodeId{}, 1e-5);
  b.output(b.softmax(h, -1));
  DispatchReport rep = legalize_and_check(g, small, 2e-6);
  EXPECT_EQ(rep.backend, "test-subset");
  EXPECT_EQ(rep.by_op[OpKind::Silu].rewritten, 1);
  EXPECT_EQ(rep.by_op[OpKind::Sigmoid].rewritten, 1); // emitted by silu's decomposition
  EXPECT_GE(rep.by_op[OpKind::Neg].rewritten, 1);     // emitted by sigmoid's
  EXPECT_EQ(rep.by_op[OpKind::Gelu].rewritten, 1);
  EXPECT_EQ(rep.by_op[OpKind::LayerNorm].rewritten, 1);
  EXPECT_EQ(rep.by_op[OpKind::Softmax].rewritten, 1);
  EXPECT_EQ(rep.by_op[OpKind::MatMul].native, 1);
  EXPECT_EQ(rep.by_op[OpKind::Input].native, 1);
  EXPECT_EQ(rep.total().unsupported, 0);
  const std::string text = rep.str();
  EXPECT_NE(text.find("dispatch on test-subset"), std::string::npos) << text;
  EXPECT_NE(text.find("silu"), std::string::npos) << text;
}

TEST(Legalize, ClaimedGraphsAreLeftAloneAndCountedNative) {
  Graph g = testing::mlp_hir();
  Graph out = g;
  DispatchReport rep = legalize(out, testing::claim_everything(), "all");
  EXPECT_TRUE(out == g);
  EXPECT_EQ(rep.total().rewritten, 0);
  EXPECT_EQ(rep.total().native, static_cast<int>(g.size()));
  EXPECT_EQ(rep.by_op[OpKind::Linear].native, 3);
}

TEST(Legalize, UnsupportedOpIsAnErrorNamingOpNodeAndBackend) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({1, 2, 5, 5}));
  NodeId w = b.param("w", Shape::of({3, 2, 3, 3}));
  b.output(b.relu(b.conv2d(x, w, NodeId{}, ir::Conv2dAttrs{})));
  expect_error("unsupported conv2d accepted",
               [&] { legalize(g, claim_all_but({OpKind::Conv2d}), "tiny-gpu"); },
               {"backend 'tiny-gpu'", "conv2d %2", "no decomposition"});
  // The partial form reports instead of throwing.
  Graph h = g;
  DispatchReport rep = legalize_partial(h, claim_all_but({OpKind::Conv2d}), "tiny-gpu");
  EXPECT_EQ(rep.by_op[OpKind::Conv2d].unsupported, 1);
  ASSERT_EQ(rep.unsupported_nodes.size(), 1u);
  EXPECT_NE(rep.str().find("unsupported: conv2d %2"), std::string::npos) << rep.str();
}

TEST(Legalize, ADecompositionNeedingAnUnclaimedPrimitiveNamesThatPrimitive) {
  Graph g = unary_graph(OpKind::Gelu, DType::f32);
  expect_error("gelu without erf accepted",
               [&] {
                 legalize(g, claim_all_but({OpKind::Gelu, OpKind::Erf}), "no-erf");
               },
               {"erf %", "no-erf"});
}

TEST(Legalize, DtypeClaimsCount) {
  // exp claimed for f64 only: an f32 exp is unsupported (and has no decomposition).
  ir::ClaimSet claims = testing::claim_everything();
  claims.unclaim(OpKind::Exp);
  claims.claim(OpKind::Exp, {DType::f64});
  Graph g = unary_graph(OpKind::Exp, DType::f32);
  EXPECT_THROW(legalize(g, claims, "f64-exp"), Error);
  Graph h = unary_graph(OpKind::Exp, DType::f64);
  EXPECT_NO_THROW(legalize(h, claims, "f64-exp"));
}

TEST(Legalize, DeadUnsupportedNodesDoNotMatter) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({1, 2, 5, 5}));
  NodeId w = b.param("w", Shape::of({3, 2, 3, 3}));
  b.conv2d(x, w, NodeId{}, ir::Conv2dAttrs{}); // dead
  b.output(b.relu(x));
  EXPECT_NO_THROW(legalize(g, claim_all_but({OpKind::Conv2d}), "tiny"));
}

TEST(Legalize, TextOfAChainOfRewrites) {
  // relu -> maximum(x, 0); neg -> mul(x, -1), each into ops the backend claims.
  ir::ClaimSet claims = claim_all_but({OpKind::Relu, OpKind::Neg});
  fusion::PassContext ctx;
  ctx.claims = &claims;
  ctx.backend = "no-relu-neg";
  testing::expect_rewrite(R"(graph @g {
  %0 = input[name="x", shape=[4] f32] : [4] f32
  %1 = relu(%0) : [4] f32
  %2 = neg(%1) : [4] f32
  return %2
})",
                          "legalize", R"(graph @g {
  %0 = input[name="x", shape=[4] f32] : [4] f32
  %1 = constant[value=[] f32 {0}] : [] f32
  %2 = maximum(%0, %1) : [4] f32
  %3 = constant[value=[] f32 {-1}] : [] f32
  %4 = mul(%2, %3) : [4] f32
  return %4
})",
                          0, ctx);
}

TEST(Legalize, AsAPassInAPipeline) {
  Graph g = unary_graph(OpKind::Silu, DType::f32);
  ir::ClaimSet claims = claim_all_but({OpKind::Silu});
  fusion::PassContext ctx;
  ctx.claims = &claims;
  ctx.backend = "ctx-backend";
  auto stats = run_pipeline(g, "legalize,dce", ctx);
  EXPECT_TRUE(stats.at(0).changed);
  EXPECT_EQ(count_ops(g, OpKind::Silu), 0);
  // Without claims, legalize has nothing to check against and changes nothing.
  Graph h = unary_graph(OpKind::Silu, DType::f32);
  fusion::PassContext none;
  EXPECT_FALSE(run_pipeline(h, "legalize", none).at(0).changed);
}

} // namespace
} // namespace rlx::compile
