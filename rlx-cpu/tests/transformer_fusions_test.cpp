// transformer_fusions_test.cpp: the transformer fusions through the CPU compile pipeline: a LLaMA
// FFN (SwiGluMatMul), a SwiGLU of two inputs, and attention spelled as an ONNX export spells it
// each compile with fusion on into fewer kernels and match the reference interpreter.
#include "fused_run_testing.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace {

using namespace rlx;
using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

using cpu::testing::CpuRun;
using cpu::testing::random_tensor;
using cpu::testing::run;

/// Runs \p g fused and unfused under oneDNN, auto, OpenBLAS and the packed GEMM and against the
/// reference; \returns the fused run of the last. Auto measures every product here (no work
/// threshold), so its choices are exercised too.
CpuRun check(const Graph& g, double tol) {
  return cpu::testing::check_fused(g, tol, cpu::testing::random_leaf_values(g),
                                   {cpu::CpuOptions{cpu::GemmProvider::onednn, 0, false, 0},
                                    cpu::CpuOptions{cpu::GemmProvider::automatic, 0, false, 0},
                                    cpu::CpuOptions{cpu::GemmProvider::openblas, 0, false, 0},
                                    cpu::CpuOptions{cpu::GemmProvider::packed, 0, false, 0}});
}

TEST(CpuTransformerFusions, LlamaFfnRunsAsOneSwiGluMatMul) {
  Graph g("ffn");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 7, 32}));
  NodeId wg = b.param("w_gate", Shape({40, 32}));
  NodeId wu = b.param("w_up", Shape({40, 32}));
  NodeId wd = b.param("w_down", Shape({32, 40}));
  NodeId h = b.mul(b.silu(b.matmul(x, wg, false, true)), b.matmul(x, wu, false, true));
  b.output(b.matmul(h, wd, false, true));
  CpuRun r = check(g, 2e-5);
  EXPECT_NE(r.listing.find("swiglu_matmul"), std::string::npos) << r.listing;
  EXPECT_EQ(r.fusion.applied["swiglu_matmul"], 1) << r.fusion.str();
}

TEST(CpuTransformerFusions, SwiGluOfTwoInputs) {
  Graph g("swiglu");
  Builder b(g);
  NodeId gate = b.input("gate", Shape({3, 1000}));
  NodeId up = b.input("up", Shape({3, 1000}));
  b.output(b.mul(up, b.mul(gate, b.sigmoid(gate))));
  // Without the IO gate: the calibrated CPU gate prices the SwiGlu kernel (a vectorised silu
  // loop, 1.2-2.6 ns per element) above oneDNN's logistic and two muls (about 0.5 plus the
  // bytes) and keeps the three kernels; this test is about the fused kernel.
  std::vector<cpu::CpuOptions> opts(3);
  opts[0].gemm = cpu::GemmProvider::onednn;
  opts[1].gemm = cpu::GemmProvider::automatic;
  opts[2].gemm = cpu::GemmProvider::openblas;
  for (cpu::CpuOptions& o : opts) {
    o.elementwise_regions = false;
    o.gemm_measure_min_work = 0;
    o.use_io_gate = false;
  }
  CpuRun r = cpu::testing::check_fused(g, 1e-6, cpu::testing::random_leaf_values(g),
                                       {opts[0], opts[1], opts[2]});
  EXPECT_NE(r.listing.find("swiglu"), std::string::npos) << r.listing;
}

TEST(CpuTransformerFusions, OnnxSpelledAttentionRunsAsOneAttention) {
  const std::int64_t B = 2, S = 9, H = 4, D = 16;
  Graph g("attn");
  Builder b(g);
  NodeId q = b.input("q", Shape({B, S, H, D}));
  NodeId k = b.input("k", Shape({B, S, H, D}));
  NodeId v = b.input("v", Shape({B, S, H, D}));
  NodeId mask = b.input("mask", Shape({B, 1, 1, S}));
  NodeId sc = b.matmul(b.transpose(q, {0, 2, 1, 3}), b.transpose(k, {0, 2, 3, 1}));
  sc = b.add(b.div(sc, b.scalar(std::sqrt(static_cast<double>(D)))), mask);
  NodeId o = b.matmul(b.softmax(sc, -1), b.transpose(v, {0, 2, 1, 3}));
  b.output(b.reshape(b.transpose(o, {0, 2, 1, 3}), {B, S, H * D}));
  CpuRun r = check(g, 2e-6);
  EXPECT_EQ(r.fusion.applied["attention"], 1) << r.fusion.str();
  EXPECT_EQ(r.fusion.applied["attention_bshd"], 1) << r.fusion.str();
  EXPECT_EQ(r.listing.find("transpose"), std::string::npos) << r.listing;
}

/// Q / K / V projections of one input with biases (GQA widths 32, 16, 16); [N, K] weights read
/// with transpose_b, or the [K, N] weights of an ONNX export (packed along axis 1).
Graph qkv_graph(bool transpose_b = true) {
  Graph g("qkv");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 7, 32}));
  const char* names[] = {"q", "k", "v"};
  const std::int64_t rows[] = {32, 16, 16};
  for (int i = 0; i < 3; ++i) {
    NodeId w = b.param(std::string(names[i]) + ".weight",
                       transpose_b ? Shape({rows[i], 32}) : Shape({32, rows[i]}));
    NodeId bias = b.param(std::string(names[i]) + ".bias", Shape({rows[i]}));
    b.output(b.relu(b.add(b.matmul(x, w, false, transpose_b), bias)));
  }
  return g;
}

TEST(CpuTransformerFusions, QkvRunsAsOnePackedGemmWithTheConcatInTheWeightRegion) {
  for (bool tb : {true, false}) {
    SCOPED_TRACE(tb);
    CpuRun r = check(qkv_graph(tb), 2e-5);
    EXPECT_EQ(r.fusion.applied["shared_input_matmul_bias"], 3) << r.fusion.str();
    // The packed weight and bias are derived copies of the weights: no concat kernel runs.
    EXPECT_EQ(r.listing.find("concat"), std::string::npos) << r.listing;
  }
}

TEST(CpuTransformerFusions, WritingOneWeightRefreshesThePackedCopy) {
  // Every provider reads the concatenation through a copy of its own (oneDNN's packed layout, the
  // packed GEMM's panels, OpenBLAS's [K, N] copy), recomputed when any operand weight is written.
  for (auto provider : {cpu::GemmProvider::onednn, cpu::GemmProvider::openblas,
                        cpu::GemmProvider::packed, cpu::GemmProvider::automatic})
    for (bool tb : {true, false}) {
      SCOPED_TRACE(std::string(tb ? "[N, K]" : "[K, N]") + " weights, provider " +
                   std::string(cpu::gemm_provider_name(provider)));
      const Graph g = qkv_graph(tb);
      const cpu::CpuBackend backend(cpu::CpuOptions{provider, 0});
      const auto values = cpu::testing::random_leaf_values(g, 40);
      const ir::reference::TensorMap& all = values.all;
      ir::reference::TensorMap params = values.params;
      CpuRun first = run(g, backend, true, all);
      EXPECT_EQ(first.fusion.applied["shared_input_matmul_bias"], 3) << first.fusion.str();
      compile::CompileOptions o;
      auto exe = backend.compile(compile::CompilePipeline(backend, o).run(g).lir);
      for (const auto& [name, v] : all) {
        if (name == "x")
          exe->set_input(name, v);
        else
          exe->set_param(name, v);
      }
      exe->execute();
      // A new K weight and V bias after the first run reach the packed copies.
      params["k.weight"] = random_tensor(params["k.weight"].shape(), 99);
      params["v.bias"] = random_tensor(params["v.bias"].shape(), 98);
      exe->set_param("k.weight", params["k.weight"]);
      exe->set_param("v.bias", params["v.bias"]);
      exe->execute();
      const auto want = ir::reference::evaluate(g, values.inputs, params);
      for (std::size_t i = 0; i < want.size(); ++i)
        EXPECT_LE(ir::max_abs_diff(exe->output(i), want[i]), 2e-5) << "output " << i;
    }
}

TEST(CpuTransformerFusions, PackedColumnsGiveTheirWeightsBack) {
  // [K, N] weights packed along axis 1 (each weight a strided chunk of every packed row): an
  // executable that later reads the weights plainly (the unfused graph) gets their bytes back
  // from the packed copy, and both executables match the reference.
  const Graph g = qkv_graph(false);
  // OpenBLAS for the unfused products: cblas_sgemm reads a [K, N] weight where it lies. (oneDNN
  // reads its own packed layout where it prefers one, as on AVX-512, and under auto a choice of
  // the packed GEMM that an earlier test of this process recorded would read rlx's panels.)
  const cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn, 0});
  const cpu::CpuBackend plain_reader(cpu::CpuOptions{cpu::GemmProvider::openblas, 0});
  auto weights = std::make_shared<compile::WeightRegion>();
  ir::reference::TensorMap params;
  std::uint64_t seed = 70;
  for (NodeId id : g.params()) {
    const auto& l = g.node(id).attr<ir::LeafAttrs>();
    params[l.name] = random_tensor(l.shape, seed++);
    weights->write(l.name, params[l.name]);
  }
  const Tensor x = random_tensor(g.shape(g.inputs()[0]), 77);
  const auto want = ir::reference::evaluate(g, {{"x", x}}, params);
  auto fused = backend.compile_with_weights(compile::CompilePipeline(backend).run(g).lir, weights);
  EXPECT_FALSE(weights->plain_held("k.weight")); // the packed copy replaces the plain bytes
  compile::CompileOptions nf;
  nf.fuse = false;
  auto plain = plain_reader.compile_with_weights(
      compile::CompilePipeline(plain_reader, nf).run(g).lir, weights);
  EXPECT_TRUE(weights->plain_held("k.weight"));
  for (auto* e : {fused.get(), plain.get()}) {
    e->set_input("x", x);
    e->execute();
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_LE(ir::max_abs_diff(e->output(i), want[i]), 2e-5) << "output " << i;
  }
}

} // namespace
