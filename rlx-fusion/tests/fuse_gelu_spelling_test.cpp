// fuse_gelu_spelling_test.cpp: the fuse-gelu-spelling recogniser on the spellings exporters emit
// (every association of the product, operand orders, x / sqrt(2) or x * (1 / sqrt(2)), x^3 as
// pow or products, constants as f32 scalars or one-element tensors), its negative cases, and the
// exporter pipeline: spelled GELU after a Linear becomes one MatMulBiasAct.
#include "fusion_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/text.hpp"

#include <cmath>
#include <functional>
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
using testing::run_pass;

constexpr std::string_view kPass = "fuse-gelu-spelling";

/// A constant \p v: an f32 scalar, or (\p tensor) a one-element [1] tensor.
NodeId k(Builder& b, double v, bool tensor) {
  if (!tensor)
    return b.scalar(v, DType::f32);
  ir::Tensor t(Shape::of({1}, DType::f32));
  t.set_f64(0, v);
  return b.constant(t);
}

using Spelling = std::function<NodeId(Builder&, NodeId x, bool tensor)>;

/// The erf-GELU spellings: 3 associations x 2 forms of the erf argument x 2 operand orders.
std::vector<std::pair<std::string, Spelling>> erf_spellings() {
  std::vector<std::pair<std::string, Spelling>> out;
  for (int assoc = 0; assoc < 3; ++assoc)
    for (bool div : {true, false})
      for (bool swapped : {false, true}) {
        std::string name =
            "assoc" + std::to_string(assoc) + (div ? "_div" : "_mul") + (swapped ? "_swapped" : "");
        out.emplace_back(name, [=](Builder& b, NodeId x, bool t) {
          auto mul = [&](NodeId p, NodeId q) { return swapped ? b.mul(q, p) : b.mul(p, q); };
          NodeId arg = div ? b.div(x, k(b, std::numbers::sqrt2, t))
                           : mul(x, k(b, 1.0 / std::numbers::sqrt2, t));
          NodeId one_plus = swapped ? b.add(b.erf(arg), k(b, 1, t)) : b.add(k(b, 1, t), b.erf(arg));
          NodeId half = k(b, 0.5, t);
          if (assoc == 0)
            return mul(mul(x, half), one_plus);
          if (assoc == 1)
            return mul(x, mul(half, one_plus));
          return mul(mul(x, one_plus), half);
        });
      }
  return out;
}

/// The tanh-GELU spellings: 3 forms of x^3 x 3 associations.
std::vector<std::pair<std::string, Spelling>> tanh_spellings() {
  std::vector<std::pair<std::string, Spelling>> out;
  for (int cube = 0; cube < 3; ++cube)
    for (int assoc = 0; assoc < 3; ++assoc)
      out.emplace_back("cube" + std::to_string(cube) + "_assoc" + std::to_string(assoc),
                       [=](Builder& b, NodeId x, bool t) {
                         NodeId x3 = cube == 0   ? b.pow(x, k(b, 3, t))
                                     : cube == 1 ? b.mul(b.mul(x, x), x)
                                                 : b.mul(x, b.mul(x, x));
                         NodeId poly = b.add(x, b.mul(k(b, 0.044715, t), x3));
                         NodeId th = b.tanh(b.mul(k(b, std::sqrt(2 / std::numbers::pi), t), poly));
                         NodeId one_plus = b.add(th, k(b, 1, t));
                         NodeId half = k(b, 0.5, t);
                         if (assoc == 0)
                           return b.mul(b.mul(half, x), one_plus);
                         if (assoc == 1)
                           return b.mul(x, b.mul(one_plus, half));
                         return b.mul(b.mul(one_plus, x), half);
                       });
  return out;
}

Graph spelled(const Spelling& s, bool tensor, Shape xs = Shape::of({4, 6})) {
  Graph g("spelled_gelu");
  Builder b(g);
  NodeId x = b.input("x", xs);
  b.output(s(b, x, tensor));
  return g;
}

void expect_recognised(const Graph& g, OpKind want) {
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  // Only the input and the op remain.
  EXPECT_EQ(f.size(), 2u) << ir::print(f);
  EXPECT_EQ(count_ops(f, want), 1) << ir::print(f);
  EXPECT_EQ(rep.total_applied(), 1) << rep.str();
  // The spelled chain rounds to f32 after each of its ~8 ops; the op rounds once: within a few
  // f32 ulps of values of order 1 (2^-24 each).
  expect_same_values(g, f, 1e-6);
}

TEST(FuseGeluSpelling, EveryErfSpelling) {
  for (const auto& [name, s] : erf_spellings())
    for (bool tensor : {false, true}) {
      SCOPED_TRACE(name + (tensor ? " tensor constants" : " scalar constants"));
      expect_recognised(spelled(s, tensor), OpKind::Gelu);
    }
}

TEST(FuseGeluSpelling, EveryTanhSpelling) {
  for (const auto& [name, s] : tanh_spellings())
    for (bool tensor : {false, true}) {
      SCOPED_TRACE(name + (tensor ? " tensor constants" : " scalar constants"));
      expect_recognised(spelled(s, tensor), OpKind::GeluTanh);
    }
}

TEST(FuseGeluSpelling, TextBeforeAndAfter) {
  const Graph g = spelled(erf_spellings()[0].second, false);
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  const std::string before = ir::print(g), after = ir::print(f);
  EXPECT_NE(before.find("= erf("), std::string::npos) << before;
  EXPECT_EQ(after.find("= erf("), std::string::npos) << after;
  EXPECT_EQ(after.find("= mul("), std::string::npos) << after;
  EXPECT_NE(after.find("= gelu("), std::string::npos) << after;
  EXPECT_EQ(rep.applied.at("gelu_erf_spelling"), 1);
}

TEST(FuseGeluSpelling, AWrongConstantIsNotGelu) {
  // 0.6 instead of 0.5, and 1.5 instead of sqrt(2): other functions, not recognised, not reported.
  for (double half : {0.5, 0.6})
    for (double root2 : {std::numbers::sqrt2, 1.5}) {
      if (half == 0.5 && root2 == std::numbers::sqrt2)
        continue;
      Graph g("not_gelu");
      Builder b(g);
      NodeId x = b.input("x", Shape::of({4, 6}));
      NodeId e = b.erf(b.div(x, b.scalar(root2, DType::f32)));
      b.output(b.mul(b.mul(x, b.scalar(half, DType::f32)), b.add(b.scalar(1, DType::f32), e)));
      FusionReport rep;
      const Graph f = run_pass(g, kPass, nullptr, rep);
      EXPECT_EQ(f, g);
      EXPECT_TRUE(rep.missed.empty()) << rep.str();
    }
}

TEST(FuseGeluSpelling, AnInnerValueUsedElsewhereIsAMiss) {
  Graph g("shared_erf");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 6}));
  NodeId e = b.erf(b.div(x, b.scalar(std::numbers::sqrt2, DType::f32)));
  b.output(b.mul(b.mul(x, b.scalar(0.5, DType::f32)), b.add(b.scalar(1, DType::f32), e)));
  b.output(e);
  testing::expect_miss(g, kPass, "gelu_erf_spelling", MissReason::is_graph_output);
}

TEST(FuseGeluSpelling, ABroadcastingConstantIsAMiss) {
  // x [6] * 0.5 [4, 6]: the product is [4, 6], gelu(x) would be [6].
  Graph g("broadcast");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({6}));
  ir::Tensor half(Shape::of({4, 6}));
  for (std::int64_t i = 0; i < half.numel(); ++i)
    half.set_f64(i, 0.5);
  NodeId e = b.erf(b.div(x, b.scalar(std::numbers::sqrt2, DType::f32)));
  b.output(b.mul(b.mul(x, b.constant(half)), b.add(b.scalar(1, DType::f32), e)));
  FusionReport rep;
  const Graph f = run_pass(g, kPass, nullptr, rep);
  EXPECT_EQ(f, g);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::shape_mismatch) << rep.str();
}

TEST(FuseGeluSpelling, AnUnclaimedGeluIsAMiss) {
  const ir::ClaimSet claims = testing::claim_all_but({OpKind::Gelu});
  const Graph g = spelled(erf_spellings()[0].second, false);
  FusionReport rep;
  const Graph f = run_pass(g, kPass, &claims, rep);
  EXPECT_EQ(f, g);
  ASSERT_EQ(rep.missed.size(), 1u) << rep.str();
  EXPECT_EQ(rep.missed[0].reason, MissReason::not_claimed);
}

TEST(FuseGeluSpelling, ExportedLinearGeluBecomesOneMatMulBiasAct) {
  // What a PyTorch export of BERT's intermediate layer looks like: MatMul, Add bias, spelled GELU.
  Graph g("exported_ffn");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3, 8}));
  NodeId h = b.add(b.matmul(x, b.param("w", Shape::of({8, 16}))), b.param("b", Shape::of({16})));
  b.output(erf_spellings()[0].second(b, h, true));
  FusionReport rep;
  const Graph r = run_pass(g, kPass, nullptr, rep);
  const Graph f = run_pass(r, "fuse-matmul-bias-act", nullptr, rep);
  EXPECT_EQ(count_ops(f, OpKind::MatMulBiasAct), 1) << ir::print(f);
  EXPECT_EQ(f.size(), 4u) << ir::print(f); // x, w, b, the fused op
  EXPECT_EQ(rep.total_applied(), 3) << rep.str();
  expect_same_values(g, f, 1e-6);
}

} // namespace
} // namespace rlx::fusion
