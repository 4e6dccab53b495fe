// fused_norm_test.cpp: the residual + norm fused ops (ResidualLayerNorm, ResidualRmsNorm) in
// rlx-ir: the reference values against hand-written loops (independent of the decomposition that
// defines them), the shape rule's errors, text and JSON round trips, and the tuple rules (only get
// reads the result).
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/random_tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace rlx::ir {
namespace {

using testing::uniform_tensor;

/// (x + r, norm(x + r)) row by row in double: LayerNorm with the biased variance, or RMSNorm.
std::pair<std::vector<double>, std::vector<double>>
loops(const Tensor& x, const Tensor& r, const Tensor& g, const Tensor* beta, bool rms, double eps) {
  const std::int64_t d = g.numel(), rows = x.numel() / d;
  std::vector<double> s(static_cast<std::size_t>(x.numel())), y(s.size());
  for (std::int64_t row = 0; row < rows; ++row) {
    double mean = 0, var = 0;
    for (std::int64_t i = 0; i < d; ++i) {
      const auto k = static_cast<std::size_t>(row * d + i);
      s[k] = x.get_f64(row * d + i) + r.get_f64(row * d + i);
      mean += s[k];
    }
    mean = rms ? 0 : mean / static_cast<double>(d);
    for (std::int64_t i = 0; i < d; ++i) {
      const double c = s[static_cast<std::size_t>(row * d + i)] - mean;
      var += c * c;
    }
    const double inv = 1 / std::sqrt(var / static_cast<double>(d) + eps);
    for (std::int64_t i = 0; i < d; ++i) {
      const auto k = static_cast<std::size_t>(row * d + i);
      y[k] = (s[k] - mean) * inv * g.get_f64(i) + (beta ? beta->get_f64(i) : 0.0);
    }
  }
  return {s, y};
}

struct Case {
  OpKind op;
  bool beta;
};

TEST(FusedNorm, ReferenceMatchesHandWrittenLoops) {
  for (Case c : {Case{OpKind::ResidualLayerNorm, true}, Case{OpKind::ResidualLayerNorm, false},
                 Case{OpKind::ResidualRmsNorm, false}}) {
    SCOPED_TRACE(std::string(op_name(c.op)) + (c.beta ? " beta" : ""));
    const Shape t = Shape::of({2, 3, 7}, DType::f64), v = Shape::of({7}, DType::f64);
    Graph g("g");
    Builder b(g);
    std::vector<NodeId> in{b.input("x", t), b.input("r", t), b.param("gamma", v)};
    if (c.beta)
      in.push_back(b.param("beta", v));
    NodeId f = g.add(c.op, in, NormAttrs{1e-3});
    b.output(b.get(f, 1));
    b.output(b.get(f, 0));
    verify(g);
    const Tensor x = uniform_tensor(t, 1, -2, 2), r = uniform_tensor(t, 2, -2, 2),
                 gamma = uniform_tensor(v, 3, -2, 2), beta = uniform_tensor(v, 4, -2, 2);
    reference::TensorMap params{{"gamma", gamma}};
    if (c.beta)
      params["beta"] = beta;
    const auto out = reference::evaluate(g, {{"x", x}, {"r", r}}, params);
    const auto [s, y] =
        loops(x, r, gamma, c.beta ? &beta : nullptr, c.op == OpKind::ResidualRmsNorm, 1e-3);
    ASSERT_EQ(out.size(), 2u);
    for (std::int64_t i = 0; i < x.numel(); ++i) {
      EXPECT_NEAR(out[0].get_f64(i), y[static_cast<std::size_t>(i)], 1e-12) << i;
      EXPECT_NEAR(out[1].get_f64(i), s[static_cast<std::size_t>(i)], 1e-12) << i;
    }
  }
}

TEST(FusedNorm, ShapeRuleErrors) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 8}));
  NodeId bcast = b.input("b", Shape::of({1, 8}));
  NodeId gamma = b.param("gamma", Shape::of({8}));
  NodeId wrong = b.param("wrong", Shape::of({5}));
  NodeId ints = b.input("i", Shape::of({4, 8}, DType::i32));
  auto msg = [&](OpKind op, std::vector<NodeId> in) -> std::string {
    try {
      g.add(op, std::move(in), NormAttrs{1e-5});
    } catch (const ShapeError& e) {
      return e.what();
    }
    return "";
  };
  EXPECT_NE(msg(OpKind::ResidualLayerNorm, {x, bcast, gamma}).find("no broadcasting"),
            std::string::npos);
  EXPECT_NE(msg(OpKind::ResidualRmsNorm, {x, x, wrong}).find("gamma"), std::string::npos);
  EXPECT_NE(msg(OpKind::ResidualRmsNorm, {ints, ints, gamma}).find("float"), std::string::npos);
  EXPECT_NE(msg(OpKind::ResidualLayerNorm, {x, x, gamma, wrong}).find("beta"), std::string::npos);
  // The tuple is read only through get.
  NodeId f = g.add(OpKind::ResidualRmsNorm, {x, x, gamma}, NormAttrs{1e-5});
  EXPECT_TRUE(g.shape(f).is_tuple());
  EXPECT_THROW(b.exp(f), ShapeError);
  EXPECT_THROW(b.get(f, 2), ShapeError);
}

TEST(FusedNorm, TextAndJsonRoundTrip) {
  Graph g("rt");
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), 8}));
  NodeId r = b.input("r", Shape({Dim::sym("batch"), 8}));
  NodeId gamma = b.param("gamma", Shape::of({8}));
  NodeId beta = b.param("beta", Shape::of({8}));
  NodeId ln = g.add(OpKind::ResidualLayerNorm, {x, r, gamma, beta}, NormAttrs{1e-3}, "ln");
  NodeId rms =
      g.add(OpKind::ResidualRmsNorm, {b.get(ln, 0), b.get(ln, 1), gamma}, NormAttrs{1e-6}, "rms");
  b.output(b.get(rms, 1));
  b.output(b.get(rms, 0));
  verify(g);
  const std::string text = print(g);
  EXPECT_NE(text.find("residual_layer_norm[eps=0.001]"), std::string::npos) << text;
  EXPECT_NE(text.find("([batch, 8] f32, [batch, 8] f32)"), std::string::npos) << text;
  EXPECT_EQ(parse(text), g);
  EXPECT_EQ(load_json(save_json(g)), g);
}

} // namespace
} // namespace rlx::ir
