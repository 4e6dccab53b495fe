// simplify_test.cpp: the simplify pass, one before/after IR test per rule (with numerical
// equivalence on random inputs), and the cases each rule must leave alone.
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"

#include <gtest/gtest.h>

#include <cstring>
#include <limits>

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

TEST(Simplify, IntThroughFloatToNarrowIntStays) {
  // Float -> int saturates while int -> int wraps: i32 300 -> f64 -> i8 is 127, not 44.
  const std::string g = graph("  %0 = input[name=\"x\", shape=[4] i32] : [4] i32\n"
                              "  %1 = cast[to=f64](%0) : [4] f64\n"
                              "  %2 = cast[to=i8](%1) : [4] i8\n"
                              "  return %2\n");
  expect_rewrite(g, "simplify", g);
}

/// Every dtype, for the table-driven cast-chain test.
std::vector<ir::DType> all_dtypes() {
  std::vector<ir::DType> out;
  for (int i = 0; i < ir::kNumDTypes; ++i)
    out.push_back(static_cast<ir::DType>(i));
  return out;
}

/// Boundary values of \p t: the interesting doubles converted to \p t by the reference's own Cast
/// (so out-of-range values become t's min / max), which covers min, max, 0, +-1, 127, 128, 255,
/// 256, 300, -129, 65504, 2^31, fractions, NaN, +-inf and -0.0 wherever t holds them.
ir::Tensor boundary_values(ir::DType t) {
  const double inf = std::numeric_limits<double>::infinity();
  const std::vector<double> v = {
      0.0,          -0.0,          1.0,
      -1.0,         0.5,           -0.5,
      2.5,          -1.5,          127.0,
      128.0,        -128.0,        -129.0,
      255.0,        256.0,         300.0,
      -300.0,       65504.0,       65520.0,
      70000.0,      16777217.0,    2147483647.0,
      2147483648.0, -2147483649.0, 9007199254740993.0,
      1e20,         -1e20,         1e-40,
      inf,          -inf,          std::numeric_limits<double>::quiet_NaN()};
  ir::Graph g("values");
  ir::Builder b(g);
  b.output(b.cast(
      b.input("v", ir::Shape::of({static_cast<std::int64_t>(v.size())}, ir::DType::f64)), t));
  std::vector<ir::Tensor> out = ir::reference::evaluate(
      g, {{"v", ir::Tensor::from<double>({static_cast<std::int64_t>(v.size())}, v)}});
  ir::Tensor r = out.at(0);
  if (t == ir::DType::i64 || t == ir::DType::i32) { // the exact extremes, which f64 cannot hold
    r.set_i64(0, t == ir::DType::i64 ? std::numeric_limits<std::int64_t>::min()
                                     : std::numeric_limits<std::int32_t>::min());
    r.set_i64(1, t == ir::DType::i64 ? std::numeric_limits<std::int64_t>::max()
                                     : std::numeric_limits<std::int32_t>::max());
  }
  return r;
}

bool same_bits(const ir::Tensor& a, const ir::Tensor& b) {
  return a.shape() == b.shape() && a.nbytes() == b.nbytes() &&
         std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(Simplify, CastChainsMatchTheReferenceForEveryDTypeTriple) {
  // For every (src, mid, dst), simplify's cast(cast(x, mid), dst) must give the reference's values
  // bit for bit on src's boundary values, whether or not the rule fires.
  int fired = 0;
  for (ir::DType src : all_dtypes())
    for (ir::DType mid : all_dtypes())
      for (ir::DType dst : all_dtypes()) {
        const ir::Tensor x = boundary_values(src);
        ir::Graph g("chain");
        ir::Builder b(g);
        b.output(b.cast(b.cast(b.input("x", x.shape()), mid), dst));
        ir::Graph s = g;
        fusion::PassContext ctx;
        run_pipeline(s, "simplify", ctx);
        fired += testing::count_ops(s, ir::OpKind::Cast) < 2 ? 1 : 0;
        const ir::Tensor want = ir::reference::evaluate(g, {{"x", x}}).at(0);
        const ir::Tensor got = ir::reference::evaluate(s, {{"x", x}}).at(0);
        EXPECT_TRUE(same_bits(want, got)) << ir::dtype_name(src) << " -> " << ir::dtype_name(mid)
                                          << " -> " << ir::dtype_name(dst) << ": simplified to\n"
                                          << ir::print(s);
      }
  EXPECT_GT(fired, 100); // the rule still fires where it is exact (int widening, f16 -> f32 ...)
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
