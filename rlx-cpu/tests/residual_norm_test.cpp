// residual_norm_test.cpp: the fused residual + norm ops through the CPU compile pipeline: a BERT
// post-norm step (LayerNorm of a residual sum) and LLaMA pre-norm steps (RmsNorm of a sum that is
// also the next residual) compile with fusion on into fewer kernels, run the fused row kernel
// (kernels/residual_norm.cpp) and match the reference interpreter, fused and unfused, with both
// GEMM providers. Odd widths exercise the vector tails.
#include "fused_run_testing.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using namespace rlx;
using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

using cpu::testing::CpuRun;

/// Runs \p g fused and unfused under both library GEMM providers and against the reference;
/// \returns the fused run of the last.
CpuRun check(const Graph& g, double tol) {
  return cpu::testing::check_fused(g, tol, cpu::testing::random_leaf_values(g),
                                   {cpu::CpuOptions{cpu::GemmProvider::onednn, 0},
                                    cpu::CpuOptions{cpu::GemmProvider::openblas, 0}});
}

TEST(CpuResidualNorm, BertPostNormRunsAsOneResidualLayerNorm) {
  for (std::int64_t e : {32, 37}) {
    SCOPED_TRACE(e);
    Graph g("post_norm");
    Builder b(g);
    NodeId x = b.input("x", Shape({2, 5, e}));
    NodeId w = b.param("w", Shape({e, e}));
    NodeId h = b.matmul(x, w, false, true);
    NodeId y =
        b.layer_norm(b.add(h, x), b.param("gamma", Shape({e})), b.param("beta", Shape({e})), 1e-5);
    b.output(b.tanh(y));
    CpuRun r = check(g, 2e-5);
    // f32: our own row kernel on the TBB pool (no oneDNN primitive waking its OpenMP pool).
    EXPECT_NE(r.listing.find("residual_layer_norm [tbb]"), std::string::npos) << r.listing;
    EXPECT_EQ(r.fusion.applied["residual_layer_norm"], 1) << r.fusion.str();
  }
}

TEST(CpuResidualNorm, LlamaPreNormSumFeedsTheNextResidual) {
  for (std::int64_t e : {16, 23}) {
    SCOPED_TRACE(e);
    Graph g("pre_norm");
    Builder b(g);
    NodeId h = b.input("x", Shape({3, 4, e}));
    NodeId gamma = b.param("gamma", Shape({e}));
    NodeId w = b.param("w", Shape({e, e}));
    NodeId delta = b.matmul(b.rms_norm(h, gamma, 1e-6), w, false, true);
    for (int i = 0; i < 2; ++i) {
      h = b.add(h, delta);
      delta = b.matmul(b.rms_norm(h, gamma, 1e-6), w, false, true);
    }
    b.output(b.add(h, delta));
    b.output(h);
    CpuRun r = check(g, 2e-5);
    EXPECT_NE(r.listing.find("residual_rms_norm"), std::string::npos) << r.listing;
    EXPECT_EQ(r.fusion.applied["residual_rms_norm"], 2) << r.fusion.str();
    EXPECT_EQ(r.fusion.applied["residual_rms_norm_sum"], 2) << r.fusion.str();
  }
}

TEST(CpuResidualNorm, F64RunsTheDoubleLoop) {
  Graph g("f64");
  Builder b(g);
  NodeId x = b.input("x", Shape({3, 9}, ir::DType::f64));
  NodeId r = b.input("r", Shape({3, 9}, ir::DType::f64));
  NodeId s = b.add(x, r);
  b.output(b.layer_norm(s, b.param("gamma", Shape({9}, ir::DType::f64)), NodeId{}, 1e-5));
  b.output(b.mul(s, s));
  CpuRun out = check(g, 1e-12);
  EXPECT_NE(out.listing.find("residual_layer_norm"), std::string::npos) << out.listing;
}

} // namespace
