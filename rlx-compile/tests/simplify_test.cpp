// simplify_test.cpp: the simplify pass, one before/after IR test per rule (with numerical
// equivalence on random inputs), and the cases each rule must leave alone.
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using testing::expect_rewrite;

constexpr const char* kX = "  %0 = input[name=\"x\", shape=[2, 3] f32] : [2, 3] f32\n";

std::string graph(const std::string& body) {
  return "graph @g {\n" + body + "}";
}

TEST(Simplify, MulByOneEitherSide) {
  expect_rewrite(graph(std::string(kX) + "  %1 = constant[value=[] f32 {1}] : [] f32\n"
                                         "  %2 = mul(%0, %1) : [2, 3] f32\n"
                                         "  %3 = mul(%1, %2) : [2, 3] f32\n"
                                         "  return %3\n"),
                 "simplify", graph(std::string(kX) + "  return %0\n"));
}

TEST(Simplify, AddZeroSubZeroDivOnePowOne) {
  expect_rewrite(graph(std::string(kX) + "  %1 = constant[value=[3] f32 {0, 0, 0}] : [3] f32\n"
                                         "  %2 = constant[value=[] f32 {1}] : [] f32\n"
                                         "  %3 = add(%1, %0) : [2, 3] f32\n"
                                         "  %4 = sub(%3, %1) : [2, 3] f32\n"
                                         "  %5 = div(%4, %2) : [2, 3] f32\n"
                                         "  %6 = pow(%5, %2) : [2, 3] f32\n"
                                         "  %7 = relu(%6) : [2, 3] f32\n"
                                         "  return %7\n"),
                 "simplify",
                 graph(std::string(kX) + "  %1 = relu(%0) : [2, 3] f32\n  return %1\n"));
}

TEST(Simplify, IdentityOperandsThatBroadcastStay) {
  // x [3] * ones [2, 3] has type [2, 3]: replacing it by x would change the type.
  const std::string g = graph("  %0 = input[name=\"x\", shape=[3] f32] : [3] f32\n"
                              "  %1 = constant[value=[2, 3] f32 {1, 1, 1, 1, 1, 1}] : [2, 3] f32\n"
                              "  %2 = mul(%0, %1) : [2, 3] f32\n"
                              "  return %2\n");
  expect_rewrite(g, "simplify", g);
}

TEST(Simplify, NonIdentityConstantsAndReversedOperandsStay) {
  // 1 - x, 1 / x and x * 2 are not identities.
  const std::string g = graph(std::string(kX) + "  %1 = constant[value=[] f32 {1}] : [] f32\n"
                                                "  %2 = sub(%1, %0) : [2, 3] f32\n"
                                                "  %3 = div(%1, %2) : [2, 3] f32\n"
                                                "  %4 = constant[value=[] f32 {2}] : [] f32\n"
                                                "  %5 = mul(%3, %4) : [2, 3] f32\n"
                                                "  return %5\n");
  expect_rewrite(g, "simplify", g);
}

TEST(Simplify, DoubleNegationAndIdempotentOps) {
  expect_rewrite(graph(std::string(kX) + "  %1 = neg(%0) : [2, 3] f32\n"
                                         "  %2 = neg(%1) : [2, 3] f32\n"
                                         "  %3 = abs(%2) : [2, 3] f32\n"
                                         "  %4 = abs(%3) : [2, 3] f32\n"
                                         "  %5 = relu(%4) : [2, 3] f32\n"
                                         "  %6 = relu(%5) : [2, 3] f32\n"
                                         "  return %6\n"),
                 "simplify",
                 graph(std::string(kX) + "  %1 = abs(%0) : [2, 3] f32\n"
                                         "  %2 = relu(%1) : [2, 3] f32\n"
                                         "  return %2\n"));
}

TEST(Simplify, WhereWithEqualBranches) {
  expect_rewrite(
      graph(std::string(kX) + "  %1 = input[name=\"c\", shape=[2, 3] bool] : [2, 3] bool\n"
                              "  %2 = where(%1, %0, %0) : [2, 3] f32\n"
                              "  return %2\n"),
      "simplify",
      graph(std::string(kX) + "  %1 = input[name=\"c\", shape=[2, 3] bool] : [2, 3] bool\n"
                              "  return %0\n"));
}

TEST(Simplify, TransposeChainsCompose) {
  const char* x3 = "  %0 = input[name=\"x\", shape=[2, 3, 4] f32] : [2, 3, 4] f32\n";
  // [1, 2, 0] then [2, 0, 1] is the identity.
  expect_rewrite(graph(std::string(x3) + "  %1 = transpose[perm=[1, 2, 0]](%0) : [3, 4, 2] f32\n"
                                         "  %2 = transpose[perm=[2, 0, 1]](%1) : [2, 3, 4] f32\n"
                                         "  return %2\n"),
                 "simplify", graph(std::string(x3) + "  return %0\n"));
  // [1, 0, 2] then [0, 2, 1] composes to one transpose: out dim i = x dim p[q[i]] = [1, 2, 0].
  expect_rewrite(graph(std::string(x3) + "  %1 = transpose[perm=[1, 0, 2]](%0) : [3, 2, 4] f32\n"
                                         "  %2 = transpose[perm=[0, 2, 1]](%1) : [3, 4, 2] f32\n"
                                         "  return %2\n"),
                 "simplify",
                 graph(std::string(x3) + "  %1 = transpose[perm=[1, 2, 0]](%0) : [3, 4, 2] f32\n"
                                         "  return %1\n"));
  // The identity permutation alone.
  expect_rewrite(graph(std::string(x3) + "  %1 = transpose[perm=[0, 1, 2]](%0) : [2, 3, 4] f32\n"
                                         "  %2 = exp(%1) : [2, 3, 4] f32\n"
                                         "  return %2\n"),
                 "simplify",
                 graph(std::string(x3) + "  %1 = exp(%0) : [2, 3, 4] f32\n  return %1\n"));
}

TEST(Simplify, ReshapeChainsAndNoOpReshapes) {
  expect_rewrite(graph(std::string(kX) + "  %1 = reshape[shape=[6]](%0) : [6] f32\n"
                                         "  %2 = reshape[shape=[3, 2]](%1) : [3, 2] f32\n"
                                         "  %3 = reshape[shape=[3, 2]](%2) : [3, 2] f32\n"
                                         "  return %3\n"),
                 "simplify",
                 graph(std::string(kX) + "  %1 = reshape[shape=[3, 2]](%0) : [3, 2] f32\n"
                                         "  return %1\n"));
  // Back to the original shape: nothing left.
  expect_rewrite(graph(std::string(kX) + "  %1 = reshape[shape=[6]](%0) : [6] f32\n"
                                         "  %2 = reshape[shape=[2, 3]](%1) : [2, 3] f32\n"
                                         "  return %2\n"),
                 "simplify", graph(std::string(kX) + "  return %0\n"));
}

TEST(Simplify, SymbolicReshapeChains) {
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[b, s, 8] f32] : [b, s, 8] f32\n"
                       "  %1 = reshape[shape=[b, s, 2, 4]](%0) : [b, s, 2, 4] f32\n"
                       "  %2 = reshape[shape=[b, s, 4, 2]](%1) : [b, s, 4, 2] f32\n"
                       "  return %2\n"),
                 "simplify",
                 graph("  %0 = input[name=\"x\", shape=[b, s, 8] f32] : [b, s, 8] f32\n"
                       "  %1 = reshape[shape=[b, s, 4, 2]](%0) : [b, s, 4, 2] f32\n"
                       "  return %1\n"));
}

TEST(Simplify, NoOpExpandNarrowConcat) {
  expect_rewrite(
      graph(std::string(kX) + "  %1 = expand[shape=[2, 3]](%0) : [2, 3] f32\n"
                              "  %2 = narrow[axis=1, start=0, length=3](%1) : [2, 3] f32\n"
                              "  %3 = concat[axis=0](%2) : [2, 3] f32\n"
                              "  %4 = narrow[axis=1, start=1, length=2](%3) : [2, 2] f32\n"
                              "  return %4\n"),
      "simplify",
      graph(std::string(kX) + "  %1 = narrow[axis=1, start=1, length=2](%0) : [2, 2] f32\n"
                              "  return %1\n"));
}

TEST(Simplify, CastChains) {
  // Same-dtype casts vanish; a widening middle step is dropped; a round trip through a wider type
  // is the identity.
  expect_rewrite(graph("  %0 = input[name=\"x\", shape=[4] f16] : [4] f16\n"
                       "  %1 = cast[to=f16](%0) : [4] f16\n"
                       "  %2 = cast[to=f32](%1) : [4] f32\n"
                       "  %3 = cast[to=i32](%2) : [4] i32\n"
                       "  %4 = cast[to=f64](%0) : [4] f64\n"
                       "  %5 = cast[to=f16](%4) : [4] f16\n"
                       "  return %3, %5\n"),
                 "simplify",
                 graph("  %0 = input[name=\"x\", shape=[4] f16] : [4] f16\n"
                       "  %1 = cast[to=i32](%0) : [4] i32\n"
                       "  return %1, %0\n"));
}

TEST(Simplify, LossyCastChainsStay) {
  // f32 -> f16 -> f32 rounds; i32 -> i8 -> i32 wraps: both must stay.
  const std::string g = graph("  %0 = input[name=\"x\", shape=[4] f32] : [4] f32\n"
                              "  %1 = cast[to=f16](%0) : [4] f16\n"
                              "  %2 = cast[to=f32](%1) : [4] f32\n"
                              "  %3 = input[name=\"i\", shape=[4] i32] : [4] i32\n"
                              "  %4 = cast[to=i8](%3) : [4] i8\n"
                              "  %5 = cast[to=i32](%4) : [4] i32\n"
                              "  return %2, %5\n");
  expect_rewrite(g, "simplify", g);
}

TEST(Simplify, IfWithAConstantPredicateInlinesTheTakenBranch) {
  ir::Graph then_b("then");
  {
    ir::Builder b(then_b);
    b.output(b.exp(b.input("a", ir::Shape::of({3}))));
  }
  ir::Graph else_b("else");
  {
    ir::Builder b(else_b);
    b.output(b.neg(b.input("a", ir::Shape::of({3}))));
  }
  for (bool pred : {true, false}) {
    ir::Graph g("g");
    ir::Builder b(g);
    ir::NodeId x = b.input("x", ir::Shape::of({3}));
    ir::Tensor p(ir::Shape::scalar(ir::DType::boolean));
    p.set_f64(0, pred);
    b.output(b.if_(b.constant(p), {x}, then_b, else_b));
    ir::Graph before = g;
    fusion::PassContext ctx;
    run_pipeline(g, "simplify", ctx);
    EXPECT_EQ(ir::print(g),
              ir::print(ir::parse(graph(
                  "  %0 = input[name=\"x\", shape=[3] f32] : [3] f32\n" +
                  std::string(pred ? "  %1 = exp(%0) : [3] f32\n" : "  %1 = neg(%0) : [3] f32\n") +
                  "  return %1\n"))));
    testing::expect_equivalent(before, g, 0);
  }
}

TEST(Simplify, GraphOutputsSurviveEveryRewrite) {
  // %1 is both an output and the operand of an identity: the output must stay valid.
  ir::Graph g =
      expect_rewrite(graph(std::string(kX) + "  %1 = exp(%0) : [2, 3] f32\n"
                                             "  %2 = constant[value=[] f32 {1}] : [] f32\n"
                                             "  %3 = mul(%1, %2) : [2, 3] f32\n"
                                             "  return %1, %3, %3\n"),
                     "simplify",
                     graph(std::string(kX) + "  %1 = exp(%0) : [2, 3] f32\n"
                                             "  return %1, %1, %1\n"));
  EXPECT_EQ(g.outputs().size(), 3u);
}

} // namespace
} // namespace rlx::compile
