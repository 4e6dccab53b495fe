// lowering_test.cpp: lower-control-flow (If -> Where, bounded While unrolling) and
// lower-dot-general (DotGeneral -> Transpose / Reshape / MatMul): before/after IR and numerical
// equivalence with the reference interpreter, including every iteration count of a While.
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using testing::count_ops;
using testing::expect_error;

Graph unary_branch(const char* name, OpKind op) {
  Graph g(name);
  Builder b(g);
  NodeId a = b.input("a", Shape::of({3}));
  NodeId c = b.input("c", Shape::of({3}));
  b.output(b.add(b.unary(op, a), c));
  return g;
}

TEST(LowerControlFlow, IfBecomesWhereOverBothBranches) {
  Graph g("g");
  Builder b(g);
  NodeId p = b.input("p", Shape::scalar(DType::boolean));
  NodeId x = b.input("x", Shape::of({3}));
  NodeId y = b.input("y", Shape::of({3}));
  b.output(b.if_(p, {x, y}, unary_branch("then", OpKind::Exp), unary_branch("else", OpKind::Neg)));
  Graph before = g;
  fusion::PassContext ctx;
  run_pipeline(g, "lower-control-flow", ctx);
  EXPECT_EQ(ir::print(g), ir::print(ir::parse(R"(graph @g {
  %0 = input[name="p", shape=[] bool] : [] bool
  %1 = input[name="x", shape=[3] f32] : [3] f32
  %2 = input[name="y", shape=[3] f32] : [3] f32
  %3 = exp(%1) : [3] f32
  %4 = add(%3, %2) : [3] f32
  %5 = neg(%1) : [3] f32
  %6 = add(%5, %2) : [3] f32
  %7 = where(%0, %4, %6) : [3] f32
  return %7
})")));
  for (bool pred : {true, false}) {
    ir::reference::TensorMap in;
    ir::Tensor pt(Shape::scalar(DType::boolean));
    pt.set_f64(0, pred);
    in["p"] = pt;
    in["x"] = ir::Tensor::from<float>({3}, {0.5f, -1.f, 2.f});
    in["y"] = ir::Tensor::from<float>({3}, {1.f, 2.f, 3.f});
    EXPECT_TRUE(
        ir::reference::evaluate(before, in)[0].identical(ir::reference::evaluate(g, in)[0]));
  }
}

/// while (i < n) { i = i + 1; acc = acc * 2 + i }, at most \p max iterations; returns carry
/// \p out_index of (i, acc, n).
Graph counting_loop(std::int64_t max, std::int64_t out_index) {
  Graph cond("cond");
  {
    Builder b(cond);
    NodeId i = b.input("i", Shape::scalar(DType::i32));
    b.input("acc", Shape::of({2}));
    NodeId n = b.input("n", Shape::scalar(DType::i32));
    b.output(b.compare(ir::CmpOp::lt, i, n));
  }
  Graph body("body");
  {
    Builder b(body);
    NodeId i = b.input("i", Shape::scalar(DType::i32));
    NodeId acc = b.input("acc", Shape::of({2}));
    NodeId n = b.input("n", Shape::scalar(DType::i32));
    NodeId i1 = b.add(i, b.scalar(1, DType::i32));
    b.output(i1);
    b.output(b.add(b.mul(acc, b.scalar(2)), b.cast(i1, DType::f32)));
    b.output(n);
  }
  Graph g("loop");
  Builder b(g);
  NodeId i0 = b.input("i0", Shape::scalar(DType::i32));
  NodeId acc0 = b.input("acc0", Shape::of({2}));
  NodeId n = b.input("n", Shape::scalar(DType::i32));
  b.output(b.while_({i0, acc0, n}, cond, body, max, out_index));
  return g;
}

TEST(LowerControlFlow, WhileUnrollMatchesTheReferenceForEveryTripCount) {
  for (std::int64_t max : {1, 2, 4}) {
    for (std::int64_t out_index : {0, 1}) {
      Graph g = counting_loop(max, out_index);
      Graph before = g;
      fusion::PassContext ctx;
      run_pipeline(g, "lower-control-flow,dce", ctx);
      EXPECT_EQ(count_ops(g, OpKind::While), 0);
      // trip counts below, at and above the bound, and a loop that never starts
      for (int n : {-1, 0, 1, 2, 3, 4, 7}) {
        SCOPED_TRACE("max " + std::to_string(max) + " out " + std::to_string(out_index) + " n " +
                     std::to_string(n));
        ir::reference::TensorMap in;
        in["i0"] = ir::Tensor::scalar<std::int32_t>(0);
        in["acc0"] = ir::Tensor::from<float>({2}, {1.f, -0.5f});
        in["n"] = ir::Tensor::scalar<std::int32_t>(n);
        ir::Tensor want = ir::reference::evaluate(before, in)[0];
        ir::Tensor got = ir::reference::evaluate(g, in)[0];
        EXPECT_TRUE(want.identical(got)) << want.str() << " vs " << got.str();
      }
    }
  }
}

TEST(LowerControlFlow, WhileUnrollShape) {
  // Two iterations: cond, body, guard, cond, body, guard (the last cond is not needed).
  Graph g = counting_loop(2, 1);
  fusion::PassContext ctx;
  run_pipeline(g, "lower-control-flow,dce", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Compare), 2);
  EXPECT_EQ(count_ops(g, OpKind::Mul), 2);
  // carries: i and acc guarded per iteration (n is loop-invariant but guarded too)
  EXPECT_GE(count_ops(g, OpKind::Where), 5);
}

TEST(LowerControlFlow, NestedControlFlowIsLoweredCompletely) {
  Graph inner_then("it");
  {
    Builder b(inner_then);
    NodeId a = b.input("a", Shape::of({3}));
    b.output(b.exp(a));
  }
  Graph inner_else("ie");
  {
    Builder b(inner_else);
    NodeId a = b.input("a", Shape::of({3}));
    b.output(b.neg(a));
  }
  Graph outer_then("ot");
  {
    Builder b(outer_then);
    NodeId q = b.input("q", Shape::scalar(DType::boolean));
    NodeId a = b.input("a", Shape::of({3}));
    b.output(b.if_(q, {a}, inner_then, inner_else));
  }
  Graph outer_else("oe");
  {
    Builder b(outer_else);
    b.input("q", Shape::scalar(DType::boolean));
    NodeId a = b.input("a", Shape::of({3}));
    b.output(b.abs(a));
  }
  Graph g("g");
  Builder b(g);
  NodeId p = b.input("p", Shape::scalar(DType::boolean));
  NodeId q = b.input("q", Shape::scalar(DType::boolean));
  NodeId x = b.input("x", Shape::of({3}));
  b.output(b.if_(p, {q, x}, outer_then, outer_else));
  Graph before = g;
  fusion::PassContext ctx;
  run_pipeline(g, "lower-control-flow", ctx);
  EXPECT_EQ(count_ops(g, OpKind::If), 0);
  EXPECT_EQ(count_ops(g, OpKind::Where), 2);
  for (int bits = 0; bits < 4; ++bits) {
    ir::reference::TensorMap in;
    ir::Tensor pt(Shape::scalar(DType::boolean)), qt(Shape::scalar(DType::boolean));
    pt.set_f64(0, bits & 1);
    qt.set_f64(0, (bits >> 1) & 1);
    in["p"] = pt;
    in["q"] = qt;
    in["x"] = ir::Tensor::from<float>({3}, {0.5f, -1.f, 2.f});
    EXPECT_TRUE(
        ir::reference::evaluate(before, in)[0].identical(ir::reference::evaluate(g, in)[0]));
  }
}

TEST(LowerControlFlow, UnrollLimitIsAClearError) {
  Graph g = counting_loop(1000, 0);
  fusion::PassContext ctx;
  ctx.options.decompose.unroll_max_nodes = 500;
  expect_error("unbounded unroll accepted", [&] { run_pipeline(g, "lower-control-flow", ctx); },
               {"while %3", "unroll_max_nodes"});
}

/// `p ? x / d : x` over \p t, where the division is integer (can fail) or float (cannot).
Graph guarded_division(DType t) {
  const Shape tx = Shape::of({3}, t), td = Shape::scalar(t);
  Graph then_b("then");
  {
    Builder b(then_b);
    NodeId x = b.input("x", tx);
    b.output(b.div(x, b.input("d", td)));
  }
  Graph else_b("else");
  {
    Builder b(else_b);
    NodeId x = b.input("x", tx);
    b.input("d", td);
    b.output(x);
  }
  Graph g("g");
  Builder b(g);
  NodeId p = b.input("p", Shape::scalar(DType::boolean));
  NodeId x = b.input("x", tx);
  NodeId d = b.input("d", td);
  b.output(b.if_(p, {x, d}, then_b, else_b));
  return g;
}

TEST(LowerControlFlow, AnIfWhoseBranchCanFailIsNotLowered) {
  // Evaluating both branches would divide by zero where the program guards against it: a clear
  // error naming the op, not a Where that throws (or computes garbage) at run time.
  Graph g = guarded_division(DType::i32);
  fusion::PassContext ctx;
  expect_error("an if with a fallible branch was lowered",
               [&] { run_pipeline(g, "lower-control-flow", ctx); }, {"div %", "claim If"});
  // Float division never fails (x / 0 is inf): lowered.
  Graph f = guarded_division(DType::f32);
  run_pipeline(f, "lower-control-flow", ctx);
  EXPECT_EQ(count_ops(f, OpKind::If), 0);
  EXPECT_EQ(count_ops(f, OpKind::Where), 1);
}

TEST(LowerControlFlow, AWhileWhoseBodyCanFailIsNotLowered) {
  // while i < 4: acc += table[i]; i += 1: unrolled, iterations past the end would gather row 4.
  const Shape ti = Shape::scalar(DType::i64), tt = Shape::of({4});
  Graph cond("cond");
  {
    Builder b(cond);
    NodeId i = b.input("i", ti);
    b.input("acc", Shape::scalar(DType::f32));
    b.input("table", tt);
    b.output(b.compare(ir::CmpOp::lt, i, b.scalar(4, DType::i64)));
  }
  Graph body("body");
  {
    Builder b(body);
    NodeId i = b.input("i", ti);
    NodeId acc = b.input("acc", Shape::scalar(DType::f32));
    NodeId table = b.input("table", tt);
    b.output(b.add(i, b.scalar(1, DType::i64)));
    b.output(b.add(acc, b.gather(table, i, 0)));
    b.output(table);
  }
  Graph g("g");
  Builder b(g);
  NodeId table = b.input("table", tt);
  b.output(b.while_({b.scalar(0, DType::i64), b.scalar(0, DType::f32), table}, cond, body, 10, 1));
  fusion::PassContext ctx;
  expect_error("a while with a fallible body was unrolled",
               [&] { run_pipeline(g, "lower-control-flow", ctx); }, {"gather %", "claim While"});
}

struct DotCase {
  std::vector<std::int64_t> lhs, rhs;
  ir::DotGeneralAttrs dims;
  int transposes; ///< Transpose nodes the lowering should need
};

TEST(LowerDotGeneral, MatchesTheReferenceOnManyDimensionNumbers) {
  const std::vector<DotCase> cases = {
      // plain matrix product [M, K] . [K, N]
      {{3, 4}, {4, 5}, {{}, {}, {1}, {0}}, 0},
      // x . W^T with W [N, K]: transpose_b, no Transpose node
      {{3, 4}, {5, 4}, {{}, {}, {1}, {1}}, 0},
      // lhs contracted on its first dim: transpose_a
      {{4, 3}, {4, 5}, {{}, {}, {0}, {0}}, 0},
      // batched, batch dims leading
      {{2, 3, 4}, {2, 4, 5}, {{0}, {0}, {2}, {1}}, 0},
      // batch dim in the middle of both operands
      {{3, 2, 4}, {4, 2, 5}, {{1}, {1}, {2}, {0}}, 2},
      // two contracting dims and two free dims per side
      {{2, 3, 4, 5}, {4, 6, 3, 7}, {{}, {}, {1, 2}, {2, 0}}, 2},
      // outer product (no contracting dims)
      {{3}, {4}, {{}, {}, {}, {}}, 0},
      // vector . vector
      {{4}, {4}, {{}, {}, {0}, {0}}, 0},
      // attention-like scores: [B, H, S, D] . [B, H, T, D] -> [B, H, S, T]
      {{2, 3, 4, 5}, {2, 3, 6, 5}, {{0, 1}, {0, 1}, {3}, {3}}, 0},
  };
  for (std::size_t i = 0; i < cases.size(); ++i) {
    SCOPED_TRACE("case " + std::to_string(i));
    const DotCase& c = cases[i];
    for (DType t : {DType::f64, DType::i32}) {
      Graph g("dot");
      Builder b(g);
      NodeId x = b.input("x", Shape::of(c.lhs, t));
      NodeId y = b.input("y", Shape::of(c.rhs, t));
      b.output(b.dot_general(x, y, c.dims));
      Graph before = g;
      fusion::PassContext ctx;
      run_pipeline(g, "lower-dot-general", ctx);
      EXPECT_EQ(count_ops(g, OpKind::DotGeneral), 0);
      EXPECT_EQ(count_ops(g, OpKind::MatMul), 1);
      EXPECT_EQ(count_ops(g, OpKind::Transpose), c.transposes) << ir::print(g);
      testing::expect_equivalent(before, g, 1e-12);
    }
  }
}

TEST(LowerDotGeneral, TextOfTheCommonProjection) {
  testing::expect_rewrite(R"(graph @g {
  %0 = input[name="x", shape=[b, s, 8] f32] : [b, s, 8] f32
  %1 = param[name="w", shape=[4, 8] f32] : [4, 8] f32
  %2 = dot_general[lhs_contracting=[2], rhs_contracting=[1]](%0, %1) : [b, s, 4] f32
  return %2
})",
                          "lower-dot-general", R"(graph @g {
  %0 = input[name="x", shape=[b, s, 8] f32] : [b, s, 8] f32
  %1 = param[name="w", shape=[4, 8] f32] : [4, 8] f32
  %2 = matmul[transpose_b=true](%0, %1) : [b, s, 4] f32
  return %2
})",
                          1e-6);
}

TEST(LowerDotGeneral, SymbolicDimsThatMustMergeAreAClearError) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape({ir::Dim::sym("b"), ir::Dim::sym("s"), 8}));
  NodeId y = b.input("y", Shape({8, ir::Dim::sym("b"), ir::Dim::sym("s")}));
  b.output(b.dot_general(x, y, {{}, {}, {2}, {0}}));
  fusion::PassContext ctx;
  expect_error("lowered a product of symbolic dims",
               [&] { run_pipeline(g, "lower-dot-general", ctx); }, {"dot_general %2", "symbolic"});
}

} // namespace
} // namespace rlx::compile
