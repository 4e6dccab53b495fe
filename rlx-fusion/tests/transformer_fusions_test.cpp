// transformer_fusions_test.cpp: fuse-swiglu, fuse-swiglu-matmul and fuse-attention. Per pass: a
// positive test with before / after IR text, one negative test per precondition (with the
// MissReason the report gives), and numerical equivalence with the reference interpreter on random
// inputs.
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/count_ops.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

using ir::testing::count_ops;

/// Runs \p patterns on a copy of \p g (verified after), expects the reference values of the
/// result to match \p g's within \p tol (relative to 1 + max |value|), and \returns the result.
Graph fuse(const Graph& g, const std::vector<Pattern>& patterns, FusionReport* report = nullptr,
           const ir::ClaimSet* claims = nullptr, double tol = 1e-5) {
  Graph out = g;
  ApplyOptions o;
  o.report = report;
  o.claims = claims;
  apply_patterns(out, patterns, o);
  ir::verify(out);
  for (std::uint64_t seed : {1u, 2u}) {
    const auto in = ir::testing::random_inputs(g, seed);
    const auto params = ir::testing::random_params(g, seed);
    auto a = ir::reference::evaluate(g, in, params);
    auto b = ir::reference::evaluate(out, in, params);
    EXPECT_EQ(a.size(), b.size());
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) {
      EXPECT_EQ(a[i].shape(), b[i].shape());
      double scale = 0;
      for (std::int64_t j = 0; j < a[i].numel(); ++j)
        scale = std::max(scale, std::abs(a[i].get_f64(j)));
      EXPECT_LE(ir::max_abs_diff(a[i], b[i]), tol * (1 + scale)) << "output " << i;
    }
  }
  return out;
}

/// The single miss of \p r (fails when there is not exactly one).
MissedFusion only_miss(const FusionReport& r) {
  EXPECT_EQ(r.missed.size(), 1u) << r.str();
  return r.missed.empty() ? MissedFusion{} : r.missed.front();
}

// ---- fuse-swiglu --------------------------------------------------------------------------------

TEST(FuseSwiGlu, BeforeAfterText) {
  const Graph g = ir::parse(R"(graph @ffn {
  %0 = input[name="gate", shape=[batch, 8] f32] : [batch, 8] f32
  %1 = input[name="up", shape=[batch, 8] f32] : [batch, 8] f32
  %2 = silu(%0) : [batch, 8] f32
  %3 = mul(%1, %2) : [batch, 8] f32
  return %3
})");
  FusionReport rep;
  const Graph out = fuse(g, swiglu_patterns(), &rep);
  EXPECT_EQ(ir::print(out), ir::print(ir::parse(R"(graph @ffn {
  %0 = input[name="gate", shape=[batch, 8] f32] : [batch, 8] f32
  %1 = input[name="up", shape=[batch, 8] f32] : [batch, 8] f32
  %2 = swiglu(%0, %1) : [batch, 8] f32
  return %2
})")));
  EXPECT_EQ(rep.applied["swiglu"], 1);
  EXPECT_TRUE(rep.missed.empty());
}

Graph swiglu_graph(bool sigmoid_spelling, bool up_first, Shape up_shape = Shape({4, 8}),
                   DType t = DType::f32) {
  Graph g("swiglu");
  Builder b(g);
  NodeId gate = b.input("gate", Shape({4, 8}, t));
  NodeId up = b.input("up", up_shape.with_dtype(t));
  NodeId act = sigmoid_spelling ? b.mul(b.sigmoid(gate), gate) : b.silu(gate);
  b.output(up_first ? b.mul(up, act) : b.mul(act, up));
  return g;
}

TEST(FuseSwiGlu, EverySpellingAndOperandOrder) {
  for (bool sig : {false, true})
    for (bool up_first : {false, true})
      for (DType t : {DType::f32, DType::f64}) {
        SCOPED_TRACE(std::to_string(sig) + std::to_string(up_first));
        FusionReport rep;
        const Graph out = fuse(swiglu_graph(sig, up_first, Shape({4, 8}), t), swiglu_patterns(),
                               &rep, nullptr, t == DType::f32 ? 1e-6 : 1e-14);
        EXPECT_EQ(count_ops(out, OpKind::SwiGlu), 1) << ir::print(out);
        EXPECT_EQ(count_ops(out, OpKind::Mul), 0);
        EXPECT_EQ(count_ops(out, OpKind::Silu) + count_ops(out, OpKind::Sigmoid), 0);
        EXPECT_EQ(rep.total_applied(), 1);
      }
}

TEST(FuseSwiGlu, BroadcastUpIsAShapeMiss) {
  FusionReport rep;
  const Graph out = fuse(swiglu_graph(false, false, Shape({1, 8})), swiglu_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::SwiGlu), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::shape_mismatch);
}

TEST(FuseSwiGlu, SiluWithAnotherUseIsAMiss) {
  Graph g("swiglu");
  Builder b(g);
  NodeId gate = b.input("gate", Shape({4, 8}));
  NodeId up = b.input("up", Shape({4, 8}));
  NodeId s = b.silu(gate);
  b.output(b.mul(s, up));
  b.output(b.add(s, up));
  FusionReport rep;
  const Graph out = fuse(g, swiglu_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::SwiGlu), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::multiple_consumers);

  Graph h("swiglu");
  Builder c(h);
  gate = c.input("gate", Shape({4, 8}));
  up = c.input("up", Shape({4, 8}));
  s = c.silu(gate);
  c.output(c.mul(s, up));
  c.output(s);
  FusionReport rep2;
  fuse(h, swiglu_patterns(), &rep2);
  EXPECT_EQ(only_miss(rep2).reason, MissReason::is_graph_output);
}

TEST(FuseSwiGlu, UnclaimedDtypeIsANotClaimedMiss) {
  ir::ClaimSet claims;
  ir::for_each_op([&](OpKind k) { claims.claim(k); });
  claims.unclaim(OpKind::SwiGlu);
  claims.claim(OpKind::SwiGlu, {DType::f32});
  FusionReport rep;
  const Graph out =
      fuse(swiglu_graph(false, false, Shape({4, 8}), DType::f64), swiglu_patterns(), &rep, &claims);
  EXPECT_EQ(count_ops(out, OpKind::SwiGlu), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::not_claimed);
  FusionReport rep32;
  fuse(swiglu_graph(false, false), swiglu_patterns(), &rep32, &claims);
  EXPECT_EQ(rep32.total_applied(), 1);
}

TEST(FuseSwiGlu, OtherProductsAreNotRecognised) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape({4, 8}));
  NodeId y = b.input("y", Shape({4, 8}));
  b.output(b.mul(b.sigmoid(x), y));           // sigmoid(x) * y: not silu
  b.output(b.mul(b.mul(x, b.sigmoid(y)), y)); // x * sigmoid(y) * y: sigmoid of another value
  FusionReport rep;
  const Graph out = fuse(g, swiglu_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::SwiGlu), 0);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
}

// ---- fuse-swiglu-matmul -------------------------------------------------------------------------

enum class Spelling { silu, sigmoid, swiglu };

Graph ffn_graph(Spelling sp, bool transpose_b = true, Shape wu = Shape({24, 16})) {
  Graph g("ffn");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, ir::Dim::sym("seq"), 16}));
  NodeId wg = b.param("w_gate", transpose_b ? Shape({24, 16}) : Shape({16, 24}));
  NodeId wup = b.param("w_up", transpose_b ? wu : Shape({16, 24}));
  NodeId gate = b.matmul(x, wg, false, transpose_b);
  NodeId up = b.matmul(x, wup, false, transpose_b);
  NodeId h = sp == Spelling::silu      ? b.mul(b.silu(gate), up)
             : sp == Spelling::sigmoid ? b.mul(up, b.mul(gate, b.sigmoid(gate)))
                                       : b.op(OpKind::SwiGlu, {gate, up});
  b.output(h);
  return g;
}

TEST(FuseSwiGluMatMul, BeforeAfterText) {
  const Graph g = ir::parse(R"(graph @ffn {
  %0 = input[name="x", shape=[2, seq, 16] f32] : [2, seq, 16] f32
  %1 = param[name="w_gate", shape=[24, 16] f32] : [24, 16] f32
  %2 = param[name="w_up", shape=[24, 16] f32] : [24, 16] f32
  %3 = matmul[transpose_b=true](%0, %1) : [2, seq, 24] f32
  %4 = matmul[transpose_b=true](%0, %2) : [2, seq, 24] f32
  %5 = silu(%3) : [2, seq, 24] f32
  %6 = mul(%5, %4) : [2, seq, 24] f32
  return %6
})");
  FusionReport rep;
  const Graph out = fuse(g, swiglu_matmul_patterns(), &rep);
  EXPECT_EQ(ir::print(out), ir::print(ir::parse(R"(graph @ffn {
  %0 = input[name="x", shape=[2, seq, 16] f32] : [2, seq, 16] f32
  %1 = param[name="w_gate", shape=[24, 16] f32] : [24, 16] f32
  %2 = param[name="w_up", shape=[24, 16] f32] : [24, 16] f32
  %3 = swiglu_matmul(%0, %1, %2) : [2, seq, 24] f32
  return %3
})")));
  EXPECT_EQ(rep.applied["swiglu_matmul"], 1);
}

TEST(FuseSwiGluMatMul, EverySpelling) {
  for (Spelling sp : {Spelling::silu, Spelling::sigmoid, Spelling::swiglu}) {
    SCOPED_TRACE(static_cast<int>(sp));
    FusionReport rep;
    const Graph out = fuse(ffn_graph(sp), swiglu_matmul_patterns(), &rep);
    EXPECT_EQ(count_ops(out, OpKind::SwiGluMatMul), 1) << ir::print(out);
    EXPECT_EQ(count_ops(out, OpKind::MatMul), 0);
    EXPECT_EQ(out.size(), 4u) << ir::print(out); // x, two weights, the fused op
  }
}

TEST(FuseSwiGluMatMul, KnWeightsOfOnnxExportsFuseWithWeightsKn) {
  // x W with [K, N] weights (as ONNX exports store them): every spelling becomes one
  // SwiGluMatMul{weights_kn}, numerically equal to the products (fuse() checks the values).
  for (Spelling sp : {Spelling::silu, Spelling::sigmoid, Spelling::swiglu}) {
    SCOPED_TRACE(static_cast<int>(sp));
    FusionReport rep;
    const Graph out = fuse(ffn_graph(sp, false), swiglu_matmul_patterns(), &rep);
    ASSERT_EQ(count_ops(out, OpKind::SwiGluMatMul), 1) << ir::print(out);
    EXPECT_EQ(count_ops(out, OpKind::MatMul), 0);
    for (const auto& n : out.nodes()) {
      if (n.op == OpKind::SwiGluMatMul) {
        EXPECT_TRUE(n.attr<ir::SwiGluMatMulAttrs>().weights_kn);
      }
    }
  }
  // The [N, K] spelling keeps weights_kn false.
  const Graph nk = fuse(ffn_graph(Spelling::silu), swiglu_matmul_patterns());
  for (const auto& n : nk.nodes()) {
    if (n.op == OpKind::SwiGluMatMul) {
      EXPECT_FALSE(n.attr<ir::SwiGluMatMulAttrs>().weights_kn);
    }
  }
}

TEST(FuseSwiGluMatMul, MixedWeightLayoutsAreAnAttributeMiss) {
  // Gate x Wg^T ([N, K]) against up x Wu ([K, N]): one op cannot express both.
  Graph g("ffn");
  Builder b(g);
  NodeId x = b.input("x", Shape({3, 16}));
  NodeId wg = b.param("w_gate", Shape({24, 16}));
  NodeId wu = b.param("w_up", Shape({16, 24}));
  b.output(b.mul(b.silu(b.matmul(x, wg, false, true)), b.matmul(x, wu)));
  FusionReport rep;
  const Graph out = fuse(g, swiglu_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::SwiGluMatMul), 0);
  ASSERT_FALSE(rep.missed.empty());
  EXPECT_EQ(rep.missed.front().reason, MissReason::attribute_mismatch) << rep.str();
}

TEST(FuseSwiGluMatMul, BroadcastUpWeightIsAShapeMiss) {
  FusionReport rep;
  const Graph out =
      fuse(ffn_graph(Spelling::silu, true, Shape({1, 16})), swiglu_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::SwiGluMatMul), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::shape_mismatch);
}

TEST(FuseSwiGluMatMul, GateWithAnotherUseIsAMiss) {
  for (Spelling sp : {Spelling::silu, Spelling::sigmoid}) {
    Graph g = ffn_graph(sp);
    // Also return the gate product.
    NodeId gate;
    for (NodeId id : g.ids())
      if (g.node(id).op == OpKind::MatMul) {
        gate = id;
        break;
      }
    std::vector<NodeId> outs(g.outputs().begin(), g.outputs().end());
    outs.push_back(gate);
    g.set_outputs(outs);
    FusionReport rep;
    const Graph out = fuse(g, swiglu_matmul_patterns(), &rep);
    EXPECT_EQ(count_ops(out, OpKind::SwiGluMatMul), 0);
    ASSERT_FALSE(rep.missed.empty());
    const MissReason r = rep.missed.front().reason;
    EXPECT_TRUE(r == MissReason::multiple_consumers || r == MissReason::is_graph_output)
        << rep.str();
  }
}

TEST(FuseSwiGluMatMul, DifferentInputsAreNotRecognised) {
  Graph g("ffn");
  Builder b(g);
  NodeId x = b.input("x", Shape({3, 16}));
  NodeId y = b.input("y", Shape({3, 16}));
  NodeId wg = b.param("w_gate", Shape({24, 16}));
  NodeId wu = b.param("w_up", Shape({24, 16}));
  b.output(b.mul(b.silu(b.matmul(x, wg, false, true)), b.matmul(y, wu, false, true)));
  FusionReport rep;
  const Graph out = fuse(g, swiglu_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::SwiGluMatMul), 0);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
  // fuse-swiglu still takes the product.
  EXPECT_EQ(count_ops(fuse(out, swiglu_patterns()), OpKind::SwiGlu), 1);
}

// ---- fuse-shared-input-matmul -------------------------------------------------------------------

/// x [2, seq, 16] projected by Q / K / V weights of 16, 8, 8 rows (GQA widths), with biases when
/// \p bias; the products are graph outputs through a Relu each (so nothing else fuses).
Graph qkv_graph(bool bias, bool one_unbiased = false, bool transpose_b = true) {
  Graph g("qkv");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, ir::Dim::sym("seq"), 16}));
  const char* names[] = {"q", "k", "v"};
  const std::int64_t rows[] = {16, 8, 8};
  for (int i = 0; i < 3; ++i) {
    NodeId w = b.param(std::string(names[i]) + ".weight",
                       transpose_b ? Shape({rows[i], 16}) : Shape({16, rows[i]}));
    NodeId y = b.matmul(x, w, false, transpose_b);
    if (bias && !(one_unbiased && i == 2))
      y = b.add(y, b.param(std::string(names[i]) + ".bias", Shape({rows[i]})));
    b.output(b.relu(y));
  }
  return g;
}

TEST(FuseSharedInputMatMul, BeforeAfterText) {
  const Graph g = ir::parse(R"(graph @qk {
  %0 = input[name="x", shape=[3, 4] f32] : [3, 4] f32
  %1 = param[name="wq", shape=[2, 4] f32] : [2, 4] f32
  %2 = param[name="wk", shape=[5, 4] f32] : [5, 4] f32
  %3 = matmul[transpose_b=true](%0, %1) : [3, 2] f32
  %4 = matmul[transpose_b=true](%0, %2) : [3, 5] f32
  return %3, %4
})");
  FusionReport rep;
  const Graph out = fuse(g, shared_input_matmul_patterns(), &rep);
  EXPECT_EQ(ir::print(out), ir::print(ir::parse(R"(graph @qk {
  %0 = input[name="x", shape=[3, 4] f32] : [3, 4] f32
  %1 = param[name="wq", shape=[2, 4] f32] : [2, 4] f32
  %2 = param[name="wk", shape=[5, 4] f32] : [5, 4] f32
  %3 = concat[axis=0](%1, %2) : [7, 4] f32
  %4 = matmul[transpose_b=true](%0, %3) : [3, 7] f32
  %5 = split[axis=1, sizes=[2, 5]](%4) : ([3, 2] f32, [3, 5] f32)
  %6 = get(%5) : [3, 2] f32
  %7 = get[index=1](%5) : [3, 5] f32
  return %6, %7
})")));
  EXPECT_EQ(rep.applied["shared_input_matmul"], 2);
}

TEST(FuseSharedInputMatMul, QkvWithAndWithoutBiases) {
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias);
    FusionReport rep;
    const Graph out = fuse(qkv_graph(bias), shared_input_matmul_patterns(), &rep);
    EXPECT_EQ(count_ops(out, OpKind::MatMul), 1) << ir::print(out);
    EXPECT_EQ(count_ops(out, OpKind::Split), 1);
    EXPECT_EQ(count_ops(out, OpKind::Get), 3);
    EXPECT_EQ(count_ops(out, OpKind::Concat), bias ? 2 : 1);
    EXPECT_EQ(count_ops(out, OpKind::Add), bias ? 1 : 0);
    EXPECT_EQ(rep.total_applied(), 3) << rep.str();
  }
}

TEST(FuseSharedInputMatMul, AGroupWithAnUnbiasedMemberPacksOnlyTheProducts) {
  FusionReport rep;
  const Graph out = fuse(qkv_graph(true, true), shared_input_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::MatMul), 1) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::Concat), 1);
  EXPECT_EQ(count_ops(out, OpKind::Add), 2); // the two biases stay on their parts
}

TEST(FuseSharedInputMatMul, UntransposedWeightsPackAlongTheirColumns) {
  // The [K, N] weights of an ONNX export (MatMul(x, W), no flag) concatenate along axis 1.
  for (bool bias : {false, true}) {
    SCOPED_TRACE(bias);
    FusionReport rep;
    const Graph out = fuse(qkv_graph(bias, false, false), shared_input_matmul_patterns(), &rep);
    EXPECT_EQ(count_ops(out, OpKind::MatMul), 1) << ir::print(out);
    EXPECT_EQ(count_ops(out, OpKind::Split), 1);
    EXPECT_EQ(rep.total_applied(), 3) << rep.str();
    for (const auto& n : out.nodes())
      if (n.op == OpKind::Concat && n.shape.rank() == 2) {
        EXPECT_EQ(n.attr<ir::AxisAttrs>().axis, 1) << ir::print(out);
      }
  }
}

TEST(FuseSharedInputMatMul, LayoutsDoNotMixAndSingleProjectionsAreNotRecognised) {
  Graph mixed("mixed");
  {
    Builder b(mixed);
    NodeId x = b.input("x", Shape({3, 4}));
    b.output(b.matmul(x, b.param("w_nk", Shape({2, 4})), false, true));
    b.output(b.matmul(x, b.param("w_kn", Shape({4, 5})), false, false));
  }
  FusionReport rep;
  Graph out = fuse(mixed, shared_input_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::MatMul), 2) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::Split), 0);
  Graph g("one");
  Builder b(g);
  NodeId x = b.input("x", Shape({3, 4}));
  b.output(b.matmul(x, b.param("w", Shape({2, 4})), false, true));
  b.output(b.matmul(x, b.input("not_a_weight", Shape({2, 4})), false, true));
  out = fuse(g, shared_input_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::Split), 0);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
}

TEST(FuseSharedInputMatMul, SymbolicContractionIsAShapeMiss) {
  Graph g("sym");
  Builder b(g);
  NodeId x = b.input("x", Shape({3, ir::Dim::sym("k")}));
  b.output(b.matmul(x, b.param("w1", Shape({2, ir::Dim::sym("k")})), false, true));
  b.output(b.matmul(x, b.param("w2", Shape({2, ir::Dim::sym("k")})), false, true));
  FusionReport rep;
  const Graph out = fuse(g, shared_input_matmul_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::Split), 0);
  ASSERT_FALSE(rep.missed.empty());
  EXPECT_EQ(rep.missed.front().reason, MissReason::shape_mismatch);
}

TEST(FuseSharedInputMatMul, UnclaimedSplitIsANotClaimedMiss) {
  ir::ClaimSet claims;
  ir::for_each_op([&](OpKind k) { claims.claim(k); });
  claims.unclaim(OpKind::Split);
  FusionReport rep;
  const Graph out = fuse(qkv_graph(false), shared_input_matmul_patterns(), &rep, &claims);
  EXPECT_EQ(count_ops(out, OpKind::Split), 0);
  ASSERT_FALSE(rep.missed.empty());
  EXPECT_EQ(rep.missed.front().reason, MissReason::not_claimed);
}

// ---- fuse-attention -----------------------------------------------------------------------------

struct AttnSpec {
  int kform = 0;       ///< 0: transpose_b flag, 1: Transpose {0,1,3,2}, 2: HF bshd export
  int scale = 1;       ///< 0: none, 1: Mul by 0.125 (constant first), 2: Div by sqrt(D)
  bool mask = true;    ///< additive [B, 1, 1, Sk] mask
  std::int64_t kv = 4; ///< K / V heads (4 or 1)
  std::int64_t axis = -1;
  bool scores_output = false;
  std::int64_t rank = 4;
};

/// Attention spelled in primitives; Q / K / V are inputs ([B, H, S, D], or [B, S, H, D] for the
/// HF export spelling, where the result is transposed back and reshaped to [B, S, H * D]).
Graph attention_graph(const AttnSpec& s) {
  const std::int64_t B = 2, H = 4, S = 5, T = 6, D = 8;
  Graph g("attn");
  Builder b(g);
  const bool hf = s.kform == 2;
  auto shape = [&](std::int64_t seq, std::int64_t h) {
    if (s.rank == 3)
      return Shape({B * h, seq, D});
    return hf ? Shape({B, seq, h, D}) : Shape({B, h, seq, D});
  };
  NodeId q = b.input("q", shape(S, H));
  NodeId k = b.input("k", shape(T, s.kv));
  NodeId v = b.input("v", shape(T, s.kv));
  NodeId sc;
  if (hf) {
    q = b.transpose(q, {0, 2, 1, 3});
    v = b.transpose(v, {0, 2, 1, 3});
    sc = b.matmul(q, b.transpose(k, {0, 2, 3, 1}));
  } else if (s.kform == 1) {
    sc = b.matmul(q, s.rank == 3 ? b.transpose(k, {0, 2, 1}) : b.transpose(k, {0, 1, 3, 2}));
  } else {
    sc = b.matmul(q, k, false, true);
  }
  NodeId x = sc;
  if (s.scale == 1)
    x = b.mul(b.scalar(0.125), x);
  else if (s.scale == 2)
    x = b.div(x, b.scalar(std::sqrt(static_cast<double>(D))));
  if (s.mask)
    x = b.add(x, b.input("mask", s.rank == 3 ? Shape({1, 1, T}) : Shape({B, 1, 1, T})));
  NodeId p = b.softmax(x, s.axis);
  NodeId o = b.matmul(p, v);
  if (hf)
    o = b.reshape(b.transpose(o, {0, 2, 1, 3}), {B, S, H * D});
  b.output(o);
  if (s.scores_output)
    b.output(sc);
  return g;
}

const ir::AttentionAttrs& only_attention(const Graph& g) {
  for (const auto& n : g.nodes())
    if (n.op == OpKind::Attention)
      return n.attr<ir::AttentionAttrs>();
  throw Error("no attention in\n" + ir::print(g));
}

TEST(FuseAttention, EverySpellingBecomesOneAttention) {
  for (int kform : {0, 1, 2})
    for (int scale : {0, 1, 2})
      for (bool mask : {false, true}) {
        AttnSpec s;
        s.kform = kform;
        s.scale = scale;
        s.mask = mask;
        SCOPED_TRACE("kform " + std::to_string(kform) + " scale " + std::to_string(scale) +
                     " mask " + std::to_string(mask));
        FusionReport rep;
        const Graph out = fuse(attention_graph(s), attention_patterns(), &rep);
        ASSERT_EQ(count_ops(out, OpKind::Attention), 1) << ir::print(out) << rep.str();
        EXPECT_EQ(count_ops(out, OpKind::Softmax), 0);
        EXPECT_EQ(count_ops(out, OpKind::MatMul), 0);
        const auto& a = only_attention(out);
        EXPECT_EQ(a.num_heads, 4);
        EXPECT_EQ(a.num_kv_heads, 4);
        EXPECT_EQ(a.mask, mask ? ir::MaskKind::bias : ir::MaskKind::none);
        ASSERT_TRUE(a.scale.has_value());
        // The divisor is the graph's f32 constant sqrt(8), so the scale is 1 / f32(sqrt(8)).
        const double sqrt8 = static_cast<float>(std::sqrt(8.0));
        EXPECT_DOUBLE_EQ(*a.scale, scale == 0 ? 1.0 : scale == 1 ? 0.125 : 1 / sqrt8);
        // The HF spelling ends in the bshd layout with no Transpose left: the kernel reads the
        // [B, S, H, D] projections directly.
        EXPECT_EQ(a.layout, kform == 2 ? ir::AttnLayout::bshd : ir::AttnLayout::bhsd);
        if (kform == 2) {
          EXPECT_EQ(count_ops(out, OpKind::Transpose), 0) << ir::print(out);
          EXPECT_EQ(rep.applied["attention_bshd"], 1);
        }
      }
}

TEST(FuseAttention, BeforeAfterTextOfTheHfSpelling) {
  AttnSpec s;
  s.kform = 2;
  s.scale = 2;
  const Graph out = fuse(attention_graph(s), attention_patterns());
  const std::string text = ir::print(out);
  EXPECT_NE(text.find("attention[num_heads=4, num_kv_heads=4, mask=bias, scale=0.35355339"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("](%0, %1, %2, %"), std::string::npos) << text;
  EXPECT_NE(text.find(") : [2, 5, 4, 8] f32"), std::string::npos) << text;
}

TEST(FuseAttention, MultiQueryKeys) {
  AttnSpec s;
  s.kv = 1;
  const Graph out = fuse(attention_graph(s), attention_patterns());
  EXPECT_EQ(only_attention(out).num_kv_heads, 1);
}

TEST(FuseAttention, SoftmaxOverAnotherAxisIsAnAttributeMiss) {
  AttnSpec s;
  s.axis = 2;
  FusionReport rep;
  const Graph out = fuse(attention_graph(s), attention_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::attribute_mismatch);
}

TEST(FuseAttention, ScoresWithAnotherUseIsAMiss) {
  AttnSpec s;
  s.scores_output = true;
  FusionReport rep;
  const Graph out = fuse(attention_graph(s), attention_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::is_graph_output);
}

TEST(FuseAttention, ThreeDimensionalHeadsAreAShapeMiss) {
  AttnSpec s;
  s.rank = 3;
  s.kform = 0;
  FusionReport rep;
  const Graph out = fuse(attention_graph(s), attention_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::shape_mismatch);
}

TEST(FuseAttention, UnclaimedAttentionIsANotClaimedMiss) {
  ir::ClaimSet claims;
  ir::for_each_op([&](OpKind k) { claims.claim(k); });
  claims.unclaim(OpKind::Attention);
  FusionReport rep;
  const Graph out = fuse(attention_graph(AttnSpec{}), attention_patterns(), &rep, &claims);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
  EXPECT_EQ(only_miss(rep).reason, MissReason::not_claimed);
}

TEST(FuseAttention, SoftmaxOfOtherValuesIsNotRecognised) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 4, 5, 6}));
  NodeId v = b.input("v", Shape({2, 4, 6, 8}));
  b.output(b.matmul(b.softmax(b.exp(x)), v));
  FusionReport rep;
  const Graph out = fuse(g, attention_patterns(), &rep);
  EXPECT_EQ(count_ops(out, OpKind::Attention), 0);
  EXPECT_TRUE(rep.missed.empty()) << rep.str();
}

// ---- attention_causal_bias: an exported causal-mask buffer becomes mask kind causal -----------

/// Attention over [B, H, S, S] scores plus `causal[:S, :S]` of a [12, 12] buffer (torch's
/// triu(-inf, 1)), with \p broken (i, j) entries of the buffer flipped (0 <-> -inf).
Graph causal_buffer_graph(std::vector<std::pair<int, int>> broken = {}) {
  const std::int64_t B = 2, H = 3, S = 7, D = 8, M = 12;
  Graph g("attn");
  Builder b(g);
  NodeId q = b.input("q", Shape({B, H, S, D}));
  NodeId k = b.input("k", Shape({B, H, S, D}));
  NodeId v = b.input("v", Shape({B, H, S, D}));
  const float inf = std::numeric_limits<float>::infinity();
  std::vector<float> buf(static_cast<std::size_t>(M * M));
  for (std::int64_t i = 0; i < M; ++i)
    for (std::int64_t j = 0; j < M; ++j)
      buf[static_cast<std::size_t>(i * M + j)] = j > i ? -inf : 0.0f;
  for (auto [i, j] : broken) {
    float& e = buf[static_cast<std::size_t>(i * M + j)];
    e = e == 0 ? -inf : 0.0f;
  }
  NodeId c = b.constant(ir::Tensor::from<float>({M, M}, buf));
  NodeId mask = b.narrow(b.narrow(c, 0, 0, S), 1, 0, S);
  NodeId sc = b.mul(b.scalar(0.25), b.matmul(q, k, false, true));
  b.output(b.matmul(b.softmax(b.add(sc, mask), -1), v));
  return g;
}

TEST(FuseAttention, CausalBufferBecomesTheCausalMaskKind) {
  FusionReport rep;
  const Graph out = fuse(causal_buffer_graph(), attention_patterns(), &rep);
  ASSERT_EQ(count_ops(out, OpKind::Attention), 1) << ir::print(out);
  EXPECT_EQ(only_attention(out).mask, ir::MaskKind::causal);
  EXPECT_EQ(count_ops(out, OpKind::Narrow), 0) << ir::print(out);
  EXPECT_EQ(count_ops(out, OpKind::Constant), 0) << ir::print(out);
  EXPECT_EQ(rep.applied["attention_causal_bias"], 1) << rep.str();
}

TEST(FuseAttention, ANonCausalBufferStaysABiasMask) {
  // One masked key below the diagonal, or one kept key above it: not the causal pattern.
  for (std::pair<int, int> e : {std::pair{4, 1}, std::pair{2, 6}}) {
    FusionReport rep;
    const Graph out = fuse(causal_buffer_graph({e}), attention_patterns(), &rep);
    ASSERT_EQ(count_ops(out, OpKind::Attention), 1) << ir::print(out);
    EXPECT_EQ(only_attention(out).mask, ir::MaskKind::bias);
    EXPECT_EQ(only_miss(rep).reason, MissReason::attribute_mismatch) << rep.str();
  }
  // An entry outside the [S, S] window does not matter.
  const Graph out = fuse(causal_buffer_graph({{9, 2}}), attention_patterns());
  EXPECT_EQ(only_attention(out).mask, ir::MaskKind::causal);
}

} // namespace
} // namespace rlx::fusion
