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
  // the reference's values.
  for (OpKind op : ir::testing::all_ops()) {
    if (ir::is_leaf(op) || op == OpKind::Custom)
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
