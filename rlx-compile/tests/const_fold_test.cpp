// const_fold_test.cpp: the const-fold pass: before/after IR, every dtype, the size rule, what is
// deliberately not folded, and numerical equivalence.
#include "rlx/compile/passes.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"
#include "testing/op_samples.hpp"

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
using testing::expect_rewrite;

TEST(ConstFold, FoldsAConstantSubtreeIntoOneConstant) {
  expect_rewrite(R"(graph @g {
  %0 = input[name="x", shape=[2] f32] : [2] f32
  %1 = constant[value=[2] f32 {1, 4}] : [2] f32
  %2 = sqrt(%1) : [2] f32
  %3 = constant[value=[] f32 {3}] : [] f32
  %4 = mul(%2, %3) : [2] f32
  %5 = add(%0, %4) : [2] f32
  return %5
})",
                 "const-fold", R"(graph @g {
  %0 = input[name="x", shape=[2] f32] : [2] f32
  %1 = constant[value=[2] f32 {3, 6}] : [2] f32
  %2 = add(%0, %1) : [2] f32
  return %2
})");
}

TEST(ConstFold, LeavesNodesWithANonConstantOperandAlone) {
  expect_rewrite(R"(graph @g {
  %0 = input[name="x", shape=[2] f32] : [2] f32
  %1 = param[name="w", shape=[2] f32] : [2] f32
  %2 = mul(%0, %1) : [2] f32
  return %2
})",
                 "const-fold", R"(graph @g {
  %0 = input[name="x", shape=[2] f32] : [2] f32
  %1 = param[name="w", shape=[2] f32] : [2] f32
  %2 = mul(%0, %1) : [2] f32
  return %2
})");
}

// Folding agrees with the reference interpreter in every dtype: a small expression of constants
// of dtype t is folded to one Constant whose value equals the reference's evaluation.
TEST(ConstFold, EveryDtype) {
  for (DType t : {DType::f32, DType::f64, DType::f16, DType::bf16, DType::i8, DType::i32,
                  DType::i64, DType::u8, DType::boolean}) {
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    Graph g("g");
    Builder b(g);
    ir::Tensor a(Shape::of({3}, t)), c(Shape::of({3}, t));
    for (int i = 0; i < 3; ++i) {
      a.set_f64(i, t == DType::boolean ? i % 2 : i + 1);
      c.set_f64(i, t == DType::boolean ? 1 : 2 * i + 3);
    }
    NodeId x = b.constant(a), y = b.constant(c);
    NodeId r = t == DType::boolean ? b.where(b.compare(ir::CmpOp::ne, x, y), x, y)
                                   : b.sub(b.mul(x, y), b.maximum(x, y));
    NodeId cmp = b.compare(ir::CmpOp::lt, r, y);
    b.output(r);
    b.output(b.cast(cmp, DType::i32));
    b.output(b.cast(r, DType::f64));
    Graph folded = g;
    fusion::PassContext ctx;
    run_pipeline(folded, "const-fold", ctx);
    for (NodeId id : folded.ids())
      EXPECT_EQ(folded.node(id).op, OpKind::Constant) << ir::print(folded);
    auto want = ir::reference::evaluate(g, {});
    auto got = ir::reference::evaluate(folded, {});
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(want[i].identical(got[i]))
          << i << ": " << want[i].str() << " vs " << got[i].str();
  }
}

TEST(ConstFold, FoldsEveryFoldableSampleOpExactly) {
  // Each op's sample graph with its random leaves turned into constants folds completely and to
  // the reference's values (Dequantize is never folded: see NeverFoldsDequantizeOfAConstant).
  for (OpKind op : ir::testing::all_ops()) {
    if (ir::is_leaf(op) || op == OpKind::Custom || op == OpKind::Dequantize)
      continue;
    SCOPED_TRACE(std::string(ir::op_name(op)));
    Graph sample = ir::testing::sample_graph(op);
    ir::Bindings bind = ir::testing::sample_bindings(sample);
    auto in = ir::testing::random_inputs(sample, 3);
    auto params = ir::testing::random_params(sample, 3);
    Graph bound = sample.bind(bind);
    fusion::PassContext ctx;
    ctx.specialize_params = &params;
    // Inputs become constants by hand (specialize-params handles params).
    Builder b(bound);
    for (NodeId id : bound.inputs()) {
      const auto& name = bound.node(id).attr<ir::LeafAttrs>().name;
      bound.replace_all_uses(id, b.constant(in.at(name)));
    }
    bound.compact();
    ctx.options.fold_max_elements = 1 << 20;
    run_pipeline(bound, "specialize-params,const-fold", ctx);
    for (NodeId o : bound.outputs())
      EXPECT_EQ(bound.node(o).op, OpKind::Constant) << ir::print(bound);
    auto want = ir::reference::evaluate(sample, in, params);
    auto got = ir::reference::evaluate(bound, in, {});
    ASSERT_EQ(want.size(), got.size());
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_TRUE(want[i].identical(got[i])) << i;
  }
}

TEST(ConstFold, DoesNotInflateConstantData) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({128, 768}));
  NodeId big = b.expand(b.scalar(2.0), {128, 768}); // would be 98304 elements from 1
  NodeId w = b.constant(ir::Tensor(Shape::of({64, 96})));
  NodeId wt = b.transpose(w, {1, 0}); // same size as its operand: folded
  b.output(b.mul(x, big));
  b.output(wt);
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Expand), 1);
  EXPECT_EQ(count_ops(g, OpKind::Transpose), 0);
  ctx.options.fold_max_elements = 1 << 20;
  run_pipeline(g, "const-fold", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Expand), 0);
}

TEST(ConstFold, BoundsTheWorkOfOneFold) {
  // A MatMul of two constant [256, 256] weights is 16.8M multiply-adds in the double-precision
  // reference interpreter: over the work bound, so it stays; a [16, 16] one folds.
  auto graph = [](std::int64_t n) {
    Graph g("g");
    Builder b(g);
    ir::Tensor a(Shape::of({n, n})), c(Shape::of({n, n}));
    for (std::int64_t i = 0; i < a.numel(); ++i) {
      a.set_f64(i, static_cast<double>(i % 7) - 3);
      c.set_f64(i, static_cast<double>(i % 5) - 2);
    }
    b.output(b.matmul(b.constant(a), b.constant(c)));
    return g;
  };
  fusion::PassContext ctx;
  Graph big = graph(256);
  run_pipeline(big, "const-fold", ctx);
  EXPECT_EQ(count_ops(big, OpKind::MatMul), 1);
  Graph small = graph(16);
  const std::vector<ir::Tensor> want = ir::reference::evaluate(small, {});
  run_pipeline(small, "const-fold", ctx);
  EXPECT_EQ(count_ops(small, OpKind::MatMul), 0);
  EXPECT_TRUE(want[0].identical(ir::reference::evaluate(small, {})[0]));
  // The bound is an option: raised, the large product folds too.
  ctx.options.fold_max_work = std::int64_t{1} << 26;
  run_pipeline(big, "const-fold", ctx);
  EXPECT_EQ(count_ops(big, OpKind::MatMul), 0);
}

/// A While over one i64 counter: while i < stop: i += 1, at most \p max_iterations runs.
Graph counting_while(std::int64_t stop, std::int64_t max_iterations) {
  const Shape ti = Shape::scalar(DType::i64);
  Graph cond("cond");
  {
    Builder b(cond);
    NodeId i = b.input("i", ti);
    b.output(b.compare(ir::CmpOp::lt, i, b.constant(ir::Tensor::scalar<std::int64_t>(stop))));
  }
  Graph body("body");
  {
    Builder b(body);
    NodeId i = b.input("i", ti);
    b.output(b.add(i, b.constant(ir::Tensor::scalar<std::int64_t>(1))));
  }
  Graph g("g");
  Builder b(g);
  b.output(b.while_({b.constant(ir::Tensor::scalar<std::int64_t>(0))}, cond, body, max_iterations));
  return g;
}

TEST(ConstFold, AWhileCostsMaxIterationsTimesItsBody) {
  // The bound cannot know when cond stops, so a constant While is charged max_iterations runs of
  // cond and body: 10^12 is never folded (even though this one stops after 3), 3 is.
  Graph huge = counting_while(3, 1'000'000'000'000);
  fusion::PassContext ctx;
  run_pipeline(huge, "const-fold", ctx);
  EXPECT_EQ(count_ops(huge, OpKind::While), 1);
  Graph small = counting_while(3, 10);
  run_pipeline(small, "const-fold", ctx);
  EXPECT_EQ(count_ops(small, OpKind::While), 0);
  EXPECT_EQ(ir::reference::evaluate(small, {}).at(0).get_i64(0), 3);
}

TEST(ConstFold, NeverFoldsDequantizeOfAConstant) {
  // The i8 constant is the quantised weight; folding would silently restore the f32 weight.
  Graph g("g");
  Builder b(g);
  ir::Tensor q(Shape::of({4}, DType::i8));
  for (int i = 0; i < 4; ++i)
    q.set_i64(i, i - 2);
  ir::QuantAttrs qa;
  qa.scales = {0.5};
  qa.zero_points = {0};
  NodeId x = b.input("x", Shape::of({4}));
  b.output(b.mul(x, b.dequantize(b.constant(q), qa)));
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Dequantize), 1);
}

TEST(ConstFold, DoesNotGrowConstantBytes) {
  // cast(i8 [64, 96] -> f32) would hold 4x the bytes of its operand: left to run time. A narrowing
  // cast of the same tensor folds.
  Graph g("g");
  Builder b(g);
  NodeId w = b.constant(ir::Tensor(Shape::of({64, 96}, DType::i8)));
  b.output(b.cast(w, DType::f32));
  b.output(b.cast(b.constant(ir::Tensor(Shape::of({64, 96}, DType::f32))), DType::f16));
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Cast), 1);
  EXPECT_EQ(g.shape(g.outputs()[0]).dtype, DType::f32);
  EXPECT_EQ(g.node(g.outputs()[0]).op, OpKind::Cast);
}

TEST(ConstFold, LeavesEvaluationErrorsForRunTime) {
  // An integer division by zero is an error of the graph's run, not of its compile.
  const char* text = R"(graph @g {
  %0 = constant[value=[2] i32 {1, 2}] : [2] i32
  %1 = constant[value=[2] i32 {0, 1}] : [2] i32
  %2 = div(%0, %1) : [2] i32
  return %2
})";
  Graph g = ir::parse(text);
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Div), 1);
  EXPECT_THROW(ir::reference::evaluate(g, {}), ir::EvalError);
}

TEST(ConstFold, LeavesSymbolicResultsAlone) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape({ir::Dim::sym("n")}));
  NodeId c = b.expand(b.scalar(1.0), {ir::Dim::sym("n")});
  b.output(b.add(x, c));
  fusion::PassContext ctx;
  run_pipeline(g, "const-fold", ctx);
  EXPECT_EQ(count_ops(g, OpKind::Expand), 1);
}

} // namespace
} // namespace rlx::compile
