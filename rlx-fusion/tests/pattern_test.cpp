// pattern_test.cpp: the pattern-rewrite helper on test-only toy patterns: structure, commutative
// operand orders with backtracking, captures, constraints and their MissReasons, the claim gate,
// the driver's fixed point, and numerical equivalence of every rewrite.
#include "rlx/fusion/pattern.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/count_ops.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// Evaluates \p before and \p after on the same random inputs and expects equal outputs.
void expect_same_values(const Graph& before, const Graph& after, double tol = 0) {
  const auto in = ir::testing::random_inputs(before, 7);
  const auto params = ir::testing::random_params(before, 7);
  auto a = ir::reference::evaluate(before, in, params);
  auto b = ir::reference::evaluate(after, in, params);
  ASSERT_EQ(a.size(), b.size());
  for (std::size_t i = 0; i < a.size(); ++i) {
    ASSERT_EQ(a[i].shape(), b[i].shape());
    EXPECT_LE(ir::max_abs_diff(a[i], b[i]), tol) << "output " << i;
  }
}

using ir::testing::count_ops;

// mul(x, 1) → x, when the product has x's type (a broadcasting 1 would change the shape).
Pattern mul_one() {
  Pattern p;
  p.name = "mul_one";
  p.root = Pat::op(OpKind::Mul, {Pat::any().bind("x"), Pat::splat(1.0)});
  p.check = [](const Graph& g, const Match& m) -> std::optional<Miss> {
    if (g.shape(m["x"]) == g.shape(m.root))
      return std::nullopt;
    return Miss{MissReason::shape_mismatch, "x * 1 broadcasts x from " + g.shape(m["x"]).str() +
                                                " to " + g.shape(m.root).str()};
  };
  p.rewrite = [](Builder&, const Match& m) { return m["x"]; };
  return p;
}

// add(x, x) → mul(x, 2): exercises Pat::same and the claim gate on the emitted Mul.
Pattern add_self() {
  Pattern p;
  p.name = "add_self";
  p.root = Pat::op(OpKind::Add, {Pat::any().bind("x"), Pat::same("x")});
  p.emits = {OpKind::Mul};
  p.rewrite = [](Builder& b, const Match& m) {
    return b.mul(m["x"], b.scalar(2.0, b.shape(m["x"]).dtype));
  };
  return p;
}

// add(a, mul(b, c)) → sub(a, mul(neg(b), c)) on floats, when the product has no other use: an
// exact identity whose structure exercises the single-consumer and dtype constraints.
Pattern add_of_product() {
  Pattern p;
  p.name = "add_of_product";
  p.root = Pat::op(
      OpKind::Add,
      {Pat::any().bind("a"),
       Pat::op(OpKind::Mul, {Pat::any().bind("b"), Pat::any().bind("c")}).bind("prod").one_use()});
  p.root.float_dtype();
  p.emits = {OpKind::Sub, OpKind::Neg};
  p.rewrite = [](Builder& b, const Match& m) {
    return b.sub(m["a"], b.mul(b.neg(m["b"]), m["c"]));
  };
  return p;
}

// transpose(transpose(x, [1, 0]), [1, 0]) → x: exercises attribute constraints.
Pattern transpose_pair() {
  auto is_swap = [](const ir::TransposeAttrs& a) {
    return a.perm == std::vector<std::int64_t>{1, 0};
  };
  Pattern p;
  p.name = "transpose_pair";
  p.root = Pat::op(OpKind::Transpose,
                   {Pat::op(OpKind::Transpose, {Pat::any().bind("x")})
                        .attr<ir::TransposeAttrs>(is_swap, "inner perm is not [1, 0]")});
  p.root.attr<ir::TransposeAttrs>(is_swap, "outer perm is not [1, 0]");
  p.rewrite = [](Builder&, const Match& m) { return m["x"]; };
  return p;
}

TEST(Pattern, MulByOneInEitherOperandOrder) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}));
  NodeId one = b.constant(ir::Tensor::from<float>({3}, {1, 1, 1}));
  NodeId y = b.mul(x, one);
  NodeId z = b.mul(one, b.relu(y)); // commuted
  b.output(z);
  Graph before = g;
  FusionReport report;
  std::vector<Pattern> ps{mul_one()};
  EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 2);
  ir::verify(g);
  EXPECT_EQ(count_ops(g, OpKind::Mul), 0);
  EXPECT_EQ(report.applied.at("mul_one"), 2);
  EXPECT_TRUE(report.missed.empty());
  EXPECT_EQ(ir::print(g), "graph @g {\n"
                          "  %0 = input[name=\"x\", shape=[2, 3] f32] : [2, 3] f32\n"
                          "  %1 = relu(%0) : [2, 3] f32\n"
                          "  return %1\n"
                          "}\n");
  expect_same_values(before, g);
}

TEST(Pattern, StructuralMismatchIsNotAMiss) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.output(b.mul(x, b.scalar(2.0)));
  FusionReport report;
  std::vector<Pattern> ps{mul_one()};
  EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 0);
  EXPECT_TRUE(report.missed.empty());
}

TEST(Pattern, BroadcastingOneIsAShapeMismatchMiss) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.output(b.mul(b.constant(ir::Tensor::from<float>({2, 1}, {1, 1})), x));
  FusionReport report;
  std::vector<Pattern> ps{mul_one()};
  EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 0);
  ASSERT_EQ(report.missed.size(), 1u);
  EXPECT_EQ(report.missed[0].pattern, "mul_one");
  EXPECT_EQ(report.missed[0].reason, MissReason::shape_mismatch);
  EXPECT_EQ(report.missed[0].node, "mul %2");
  EXPECT_NE(report.missed[0].detail.find("[2, 3] f32"), std::string::npos);
  EXPECT_NE(report.str().find("missed  mul_one at mul %2: shape_mismatch"), std::string::npos)
      << report.str();
}

TEST(Pattern, SameCaptureAndClaimGate) {
  auto build = [] {
    Graph g("g");
    Builder b(g);
    NodeId x = b.input("x", Shape::of({4}));
    NodeId y = b.input("y", Shape::of({4}));
    b.output(b.add(x, x));
    b.output(b.add(x, y)); // not add_self: different operands
    return g;
  };
  std::vector<Pattern> ps{add_self()};

  Graph g = build();
  Graph before = g;
  FusionReport report;
  EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 1);
  EXPECT_EQ(count_ops(g, OpKind::Mul), 1);
  EXPECT_EQ(count_ops(g, OpKind::Add), 1);
  expect_same_values(before, g);

  ir::ClaimSet no_mul;
  no_mul.claim(OpKind::Add);
  Graph h = build();
  FusionReport r2;
  EXPECT_EQ(apply_patterns(h, ps, {16, &no_mul, &r2}), 0);
  ASSERT_EQ(r2.missed.size(), 1u);
  EXPECT_EQ(r2.missed[0].reason, MissReason::not_claimed);
  EXPECT_NE(r2.missed[0].detail.find("mul"), std::string::npos);

  ir::ClaimSet mul_f64_only;
  mul_f64_only.claim(OpKind::Mul, {DType::f64});
  Graph k = build();
  FusionReport r3;
  EXPECT_EQ(apply_patterns(k, ps, {16, &mul_f64_only, &r3}), 0);
  ASSERT_EQ(r3.missed.size(), 1u);
  EXPECT_EQ(r3.missed[0].reason, MissReason::not_claimed);
}

TEST(Pattern, SingleConsumerConstraint) {
  std::vector<Pattern> ps{add_of_product()};
  {
    Graph g("ok");
    Builder b(g);
    NodeId a = b.input("a", Shape::of({2, 2}));
    NodeId x = b.input("x", Shape::of({2, 2}));
    NodeId y = b.input("y", Shape::of({2}));
    b.output(b.add(b.mul(x, y), a)); // product first: commuted operands
    Graph before = g;
    FusionReport report;
    EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 1);
    EXPECT_EQ(count_ops(g, OpKind::Sub), 1);
    EXPECT_EQ(count_ops(g, OpKind::Add), 0);
    ir::verify(g);
    expect_same_values(before, g);
  }
  {
    Graph g("shared");
    Builder b(g);
    NodeId a = b.input("a", Shape::of({2}));
    NodeId p = b.mul(a, a);
    b.output(b.add(a, p));
    b.output(b.exp(p)); // a second consumer of the product
    FusionReport report;
    EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 0);
    ASSERT_EQ(report.missed.size(), 1u);
    EXPECT_EQ(report.missed[0].reason, MissReason::multiple_consumers);
    EXPECT_NE(report.missed[0].detail.find("mul %1 has 2 uses"), std::string::npos)
        << report.missed[0].detail;
  }
  {
    Graph g("output");
    Builder b(g);
    NodeId a = b.input("a", Shape::of({2}));
    NodeId p = b.mul(a, a);
    b.output(b.add(a, p));
    b.output(p); // the product is itself a graph output
    FusionReport report;
    EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 0);
    ASSERT_EQ(report.missed.size(), 1u);
    EXPECT_EQ(report.missed[0].reason, MissReason::is_graph_output);
  }
}

TEST(Pattern, DtypeConstraint) {
  Graph g("ints");
  Builder b(g);
  NodeId a = b.input("a", Shape::of({2}, DType::i32));
  b.output(b.add(a, b.mul(a, a)));
  FusionReport report;
  std::vector<Pattern> ps{add_of_product()};
  EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 0);
  ASSERT_EQ(report.missed.size(), 1u);
  EXPECT_EQ(report.missed[0].reason, MissReason::dtype_mismatch);
}

TEST(Pattern, AttributeConstraint) {
  std::vector<Pattern> ps{transpose_pair()};
  Graph g("t");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}));
  b.output(b.transpose(b.transpose(x, {1, 0}), {1, 0}));
  Graph before = g;
  EXPECT_EQ(apply_patterns(g, ps), 1);
  EXPECT_EQ(g.outputs()[0], NodeId(0));
  expect_same_values(before, g);

  Graph h("t3");
  Builder c(h);
  NodeId y = c.input("y", Shape::of({2, 3, 4}));
  c.output(c.transpose(c.transpose(y, {0, 2, 1}), {0, 2, 1}));
  FusionReport report;
  EXPECT_EQ(apply_patterns(h, ps, {16, nullptr, &report}), 0);
  ASSERT_EQ(report.missed.size(), 1u);
  EXPECT_EQ(report.missed[0].reason, MissReason::attribute_mismatch);
  EXPECT_NE(report.missed[0].detail.find("perm is not [1, 0]"), std::string::npos);
}

TEST(Pattern, CommutativeMatchingBacktracksIntoInnerOperandOrders) {
  // add(mul(x, y), x) must match add(z, mul(w, z)): the outer add and the inner mul both need
  // their swapped order, and x must be bound to z, not w.
  Pattern p;
  p.name = "probe";
  p.root = Pat::op(OpKind::Add, {Pat::op(OpKind::Mul, {Pat::any().bind("x"), Pat::any().bind("y")}),
                                 Pat::same("x")});
  p.rewrite = [](Builder&, const Match& m) { return m.root; };
  Graph g("g");
  Builder b(g);
  NodeId z = b.input("z", Shape::of({2}));
  NodeId w = b.input("w", Shape::of({2}));
  NodeId root = b.add(z, b.mul(w, z));
  b.output(root);
  MatchResult r = match_pattern(p, g, root);
  ASSERT_TRUE(r.applies);
  EXPECT_EQ(r.match["x"], z);
  EXPECT_EQ(r.match["y"], w);
  EXPECT_EQ(r.match.root, root);
  EXPECT_THROW(r.match["nope"], Error);

  // Not commutative: sub(mul(x, y), x) does not match sub(z, mul(w, z)).
  Pattern q = p;
  q.root = Pat::op(OpKind::Sub, {Pat::op(OpKind::Mul, {Pat::any().bind("x"), Pat::any().bind("y")}),
                                 Pat::same("x")});
  NodeId s = b.sub(z, b.mul(w, z));
  b.output(s);
  EXPECT_FALSE(match_pattern(q, g, s).applies);
  EXPECT_FALSE(match_pattern(q, g, s).miss.has_value());
}

TEST(Pattern, DriverReachesAFixedPointOnChains) {
  // mul(mul(mul(x, 1), 1), 1): every sweep may expose another match; the result is x.
  Graph g("chain");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  NodeId y = x;
  for (int i = 0; i < 3; ++i)
    y = b.mul(y, b.scalar(1.0));
  b.output(y);
  std::vector<Pattern> ps{mul_one()};
  EXPECT_EQ(apply_patterns(g, ps), 3);
  EXPECT_EQ(g.size(), 1u);
  EXPECT_EQ(g.outputs()[0], NodeId(0));
}

TEST(Pattern, BenefitOrdersPatternsOfOneRoot) {
  // Two patterns on Mul: the higher benefit one wins.
  Pattern low = mul_one();
  low.name = "low";
  low.benefit = 1;
  Pattern high = mul_one();
  high.name = "high";
  high.benefit = 5;
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.output(b.mul(x, b.scalar(1.0)));
  FusionReport report;
  std::vector<Pattern> ps{low, high};
  EXPECT_EQ(apply_patterns(g, ps, {16, nullptr, &report}), 1);
  EXPECT_EQ(report.applied.count("high"), 1u);
  EXPECT_EQ(report.applied.count("low"), 0u);
}

TEST(Pattern, BadPatternsAreRejected) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.output(b.neg(x));
  Pattern wrong_type;
  wrong_type.name = "wrong_type";
  wrong_type.root = Pat::op(OpKind::Neg, {Pat::any().bind("x")});
  wrong_type.rewrite = [](Builder& bb, const Match& m) { return bb.cast(m["x"], DType::f64); };
  std::vector<Pattern> ps{wrong_type};
  try {
    apply_patterns(g, ps);
    FAIL() << "type-changing rewrite accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("pattern 'wrong_type'"), std::string::npos);
  }
  Pattern no_root;
  no_root.name = "no_root";
  no_root.root = Pat::any();
  no_root.rewrite = [](Builder&, const Match& m) { return m.root; };
  std::vector<Pattern> ps2{no_root};
  EXPECT_THROW(apply_patterns(g, ps2), Error);
  Pattern no_rewrite;
  no_rewrite.name = "no_rewrite";
  no_rewrite.root = Pat::op(OpKind::Neg);
  std::vector<Pattern> ps3{no_rewrite};
  EXPECT_THROW(apply_patterns(g, ps3), Error);
}

} // namespace
} // namespace rlx::fusion
