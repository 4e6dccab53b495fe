// cost_model_test.cpp: kernel_work and predict_seconds on compiled graphs: which nodes count as
// kernels, their flops and bytes, the roofline sum, and the errors of bad knobs.
#include "rlx/compile/cost_model.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using ir::DType;
using ir::Shape;
using testing::TestBackend;

/// y = reshape(a @ b + c) for a [M, K], b [K, N], c [M, N]: three scheduled nodes, two kernels.
ir::Module matmul_add_reshape(std::int64_t m, std::int64_t k, std::int64_t n) {
  ir::Graph g("mm");
  ir::Builder b(g);
  const auto a = b.input("a", Shape::of({m, k}));
  const auto w = b.input("b", Shape::of({k, n}));
  const auto c = b.input("c", Shape::of({m, n}));
  b.output(b.reshape(b.add(b.matmul(a, w), c), {m * n}));
  TestBackend backend;
  CompileOptions o;
  o.fuse = false;
  return CompilePipeline(backend, o).run(g).lir;
}

TEST(CostModel, KernelWorkCountsContractionsTwiceAndSkipsViews) {
  const ir::Module lir = matmul_add_reshape(4, 8, 16);
  const auto work = kernel_work(lir);
  ASSERT_EQ(work.size(), 2u); // matmul, add; the reshape output is a view of the add
  EXPECT_EQ(lir.graph().node(work[0].node).op, ir::OpKind::MatMul);
  EXPECT_DOUBLE_EQ(work[0].flops, 2.0 * 4 * 8 * 16);
  EXPECT_DOUBLE_EQ(work[0].bytes, 4.0 * (4 * 8 + 8 * 16 + 4 * 16));
  EXPECT_EQ(lir.graph().node(work[1].node).op, ir::OpKind::Add);
  EXPECT_DOUBLE_EQ(work[1].flops, 4.0 * 16);
  EXPECT_DOUBLE_EQ(work[1].bytes, 4.0 * 3 * 4 * 16);
}

TEST(CostModel, AFusedMatMulCountsItsMultiplyAdds) {
  // relu(a @ b + bias) fuses into one MatMulBiasAct: still 2 M N K flops, not one per output.
  ir::Graph g("mm_bias_relu");
  ir::Builder b(g);
  const auto a = b.input("a", Shape::of({4, 8}));
  const auto w = b.param("w", Shape::of({8, 16}));
  const auto bias = b.param("bias", Shape::of({16}));
  b.output(b.relu(b.add(b.matmul(a, w), bias)));
  TestBackend backend;
  const ir::Module lir = CompilePipeline(backend).run(g).lir;
  const auto work = kernel_work(lir);
  ASSERT_EQ(work.size(), 1u) << ir::print(lir.graph());
  EXPECT_EQ(lir.graph().node(work[0].node).op, ir::OpKind::MatMulBiasAct);
  EXPECT_DOUBLE_EQ(work[0].flops, 2.0 * 4 * 8 * 16);
}

TEST(CostModel, PredictionIsTheRooflineSumPlusLaunches) {
  const ir::Module lir = matmul_add_reshape(4, 8, 16);
  DeviceCost c;
  c.flops_per_s = 1e3;
  c.bytes_per_s = 1e3;
  c.launch_s = 0.5;
  // matmul: max(1024 flops, 896 bytes) / 1e3; add: max(64, 768) / 1e3; two launches.
  EXPECT_NEAR(predict_seconds(lir, c), 1.024 + 0.768 + 1.0, 1e-12);
  // With a faster memory system the add becomes bound by its 64 flops.
  c.bytes_per_s = 1e6;
  EXPECT_NEAR(predict_seconds(lir, c), 1.024 + 0.064 + 1.0, 1e-12);
}

TEST(CostModel, BadKnobsAreAnError) {
  const ir::Module lir = matmul_add_reshape(2, 2, 2);
  DeviceCost c;
  EXPECT_THROW((void)predict_seconds(lir, c), Error);
  c.flops_per_s = 1e9;
  c.bytes_per_s = std::numeric_limits<double>::infinity();
  EXPECT_THROW((void)predict_seconds(lir, c), Error);
  c.bytes_per_s = 1e9;
  c.launch_s = -1;
  EXPECT_THROW((void)predict_seconds(lir, c), Error);
}

TEST(CostModel, StrNamesTheUnits) {
  DeviceCost c{412e9, 9.1e9, 3.2e-6};
  EXPECT_EQ(c.str(), "412.0 GFLOP/s, 9.1 GB/s, 3.2 us per kernel");
}

} // namespace
} // namespace rlx::compile
