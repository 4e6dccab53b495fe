// transformer_layer_test.cpp: FusedTransformerLayer through the CPU compile pipeline. rlx's BERT
// layers (biases, betas, GELU, padding mask, batch 2) and LLaMA blocks (GQA, RoPE, causal, the
// final norm) compile, with fusion on, into one fused_transformer_layer record per layer that
// matches the reference interpreter and the compile without the pass, under each GEMM provider
// and on one and on two threads; its scratch is reused run after run.
#include "fused_run_testing.hpp"
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>

namespace {

using namespace rlx;
using ir::Builder;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

using cpu::testing::random_tensor;

/// Outputs and kernel listing of one compile + two runs of \p g.
struct LayerRun {
  std::vector<Tensor> out;
  std::string listing;
  int kernels = 0;
  fusion::FusionReport fusion;
};
LayerRun run(const Graph& g, const cpu::CpuBackend& backend, bool layer_pass,
             const ir::reference::TensorMap& values) {
  compile::CompileOptions o;
  if (layer_pass) // opt-in (rlx-fusion DESIGN)
    o.fusion.enabled.insert("fuse-transformer-layer");
  compile::CompileResult c = compile::CompilePipeline(backend, o).run(g);
  auto exe = backend.compile(c.lir);
  for (NodeId id : g.inputs())
    exe->set_input(g.node(id).attr<ir::LeafAttrs>().name,
                   values.at(g.node(id).attr<ir::LeafAttrs>().name));
  for (NodeId id : g.params())
    exe->set_param(g.node(id).attr<ir::LeafAttrs>().name,
                   values.at(g.node(id).attr<ir::LeafAttrs>().name));
  LayerRun r;
  exe->execute();
  std::vector<Tensor> first;
  for (std::size_t i = 0; i < g.outputs().size(); ++i)
    first.push_back(exe->output(i));
  exe->execute();
  for (std::size_t i = 0; i < g.outputs().size(); ++i) {
    r.out.push_back(exe->output(i));
    EXPECT_EQ(ir::max_abs_diff(first[i], r.out[i]), 0.0) << "the second run differs";
  }
  r.listing = cpu::kernel_listing(*exe);
  for (char ch : r.listing)
    r.kernels += ch == '\n';
  r.fusion = c.fusion;
  return r;
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (std::size_t p = s.find(what); p != std::string::npos; p = s.find(what, p + 1))
    ++n;
  return n;
}

/// Compiles \p g with and without fuse-transformer-layer under each GEMM provider and thread
/// count; both match the reference within \p tol, and the fused one runs \p layers layer records
/// and fewer records in all.
void check(const Graph& g, int layers, double tol) {
  const auto values = cpu::testing::block_leaf_values(g, 21);
  const auto& [in, params, all] = values;
  const auto want = ir::reference::evaluate(g, in, params);
  for (auto provider : {cpu::GemmProvider::onednn, cpu::GemmProvider::openblas,
                        cpu::GemmProvider::packed, cpu::GemmProvider::automatic})
    for (int threads : {1, 2}) {
      SCOPED_TRACE("provider " + std::to_string(static_cast<int>(provider)) + " threads " +
                   std::to_string(threads));
      const cpu::CpuBackend backend(cpu::CpuOptions{provider, threads, false, 0});
      const LayerRun fused = run(g, backend, true, all);
      const LayerRun plain = run(g, backend, false, all);
      ASSERT_EQ(fused.out.size(), want.size());
      for (std::size_t i = 0; i < want.size(); ++i) {
        EXPECT_LE(ir::max_abs_diff(fused.out[i], want[i]), tol) << fused.listing;
        EXPECT_LE(ir::max_abs_diff(fused.out[i], plain.out[i]), tol);
      }
      EXPECT_EQ(count(fused.listing, "fused_transformer_layer"), layers) << fused.listing;
      EXPECT_EQ(count(plain.listing, "fused_transformer_layer"), 0) << plain.listing;
      EXPECT_LT(fused.kernels, plain.kernels) << fused.listing << "\n" << plain.listing;
    }
}

/// Sizes of a test model.
struct Dims {
  std::int64_t e = 32, heads = 4, kv_heads = 2, ffn = 64;
};

Graph bert(int layers, std::int64_t batch, std::int64_t seq, Dims d = {}) {
  Graph g("bert");
  Builder b(g);
  NodeId x = b.input("x", Shape({batch, seq, d.e}));
  NodeId mask = b.input("mask", Shape({batch, seq}));
  for (int l = 0; l < layers; ++l) {
    auto w = [&](const std::string& n, std::vector<Dim> dims) {
      return b.param("l" + std::to_string(l) + n, Shape(std::move(dims), DType::f32));
    };
    ir::BertLayerAttrs a;
    a.num_heads = d.heads;
    a.padding_mask = true;
    const Dim e(d.e), f(d.ffn);
    x = b.bert_layer({x, w("wq", {e, e}), w("bq", {e}), w("wk", {e, e}), w("bk", {e}),
                      w("wv", {e, e}), w("bv", {e}), w("wo", {e, e}), w("bo", {e}), w("ln1_g", {e}),
                      w("ln1_b", {e}), w("w1", {f, e}), w("b1", {f}), w("w2", {e, f}), w("b2", {e}),
                      w("ln2_g", {e}), w("ln2_b", {e}), mask},
                     a);
  }
  b.output(x);
  return g;
}

Graph llama(int layers, std::int64_t batch, std::int64_t seq, Dims d = {}) {
  Graph g("llama");
  Builder b(g);
  NodeId x = b.input("x", Shape({batch, seq, d.e}));
  const std::int64_t hd = d.e / d.heads;
  for (int l = 0; l < layers; ++l) {
    auto w = [&](const std::string& n, std::vector<Dim> dims) {
      return b.param("l" + std::to_string(l) + n, Shape(std::move(dims), DType::f32));
    };
    ir::LlamaBlockAttrs a;
    a.num_heads = d.heads;
    a.num_kv_heads = d.kv_heads;
    a.rope_theta = 1000.0;
    const Dim e(d.e), kv(d.kv_heads * hd), f(d.ffn);
    x = b.llama_block({x, w("attn_norm_g", {e}), w("wq", {e, e}), w("wk", {kv, e}),
                       w("wv", {kv, e}), w("wo", {e, e}), w("ffn_norm_g", {e}), w("w_gate", {f, e}),
                       w("w_up", {f, e}), w("w_down", {e, f})},
                      a);
  }
  b.output(b.rms_norm(x, b.param("final_g", Shape({d.e}, DType::f32))));
  return g;
}

TEST(CpuTransformerLayer, BertLayersWithPaddingMaskBatchTwo) {
  check(bert(2, 2, 17), 2, 5e-5);
}

TEST(CpuTransformerLayer, LlamaLayersWithGqaRopeAndFinalNorm) {
  check(llama(3, 2, 13, Dims{32, 4, 2, 48}), 3, 5e-5);
}

TEST(CpuTransformerLayer, ListingNamesEveryStage) {
  const Graph g = llama(1, 1, 8);
  const auto values = cpu::testing::block_leaf_values(g, 21);
  const auto& [in, params, all] = values;
  const LayerRun r = run(g, cpu::CpuBackend(), true, all);
  for (const char* stage :
       {"rms_norm", "fused_attention_block", "residual_rms_norm", "swiglu_matmul", "matmul", "add"})
    EXPECT_NE(r.listing.find(stage), std::string::npos) << stage << "\n" << r.listing;
  EXPECT_EQ(r.fusion.applied.at("transformer_layer_llama"), 1) << r.fusion.str();
}

TEST(CpuTransformerLayer, F64IsNotClaimedAndRunsUnfused) {
  Graph g("f64");
  Builder b(g);
  NodeId x = b.input("x", Shape({1, 5, 16}, DType::f64));
  auto w = [&](const char* n, std::vector<Dim> d) { return b.param(n, Shape(d, DType::f64)); };
  ir::LlamaBlockAttrs a;
  a.num_heads = 2;
  a.num_kv_heads = 2;
  b.output(b.llama_block({x, w("attn_norm_g", {16}), w("wq", {16, 16}), w("wk", {16, 16}),
                          w("wv", {16, 16}), w("wo", {16, 16}), w("ffn_norm_g", {16}),
                          w("w_gate", {24, 16}), w("w_up", {24, 16}), w("w_down", {16, 24})},
                         a));
  const auto values = cpu::testing::block_leaf_values(g, 21);
  const auto& [in, params, all] = values;
  const auto want = ir::reference::evaluate(g, in, params);
  const LayerRun r = run(g, cpu::CpuBackend(), true, all);
  EXPECT_EQ(count(r.listing, "fused_transformer_layer"), 0) << r.listing;
  EXPECT_LE(ir::max_abs_diff(r.out[0], want[0]), 1e-12);
}

/// Not a test: times the anchor models with and without the layer (run with
/// --gtest_also_run_disabled_tests --gtest_filter='*Timing*'). Both executables run in alternating
/// order each round; the medians of the per-run times are printed. Threads: RLX_LAYER_THREADS (1).
TEST(CpuTransformerLayer, DISABLED_Timing) {
  const char* env = std::getenv("RLX_LAYER_THREADS");
  const int threads = env ? std::atoi(env) : 1;
  const int rounds = 15, per_round = 3;
  struct Model {
    const char* name;
    Graph g;
  };
  const Dims mini{256, 4, 4, 1024}, ll{512, 8, 8, 1376};
  for (const Model& m :
       {Model{"warm-up", bert(1, 1, 16)}, Model{"bert_mini b1", bert(4, 1, 128, mini)},
        Model{"bert_mini b8", bert(4, 8, 128, mini)}, Model{"llama b1", llama(4, 1, 128, ll)}}) {
    const auto values = cpu::testing::block_leaf_values(m.g, 21);
    const auto& [in, params, all] = values;
    const cpu::CpuBackend backend(cpu::CpuOptions{cpu::GemmProvider::onednn, threads, true, 0});
    std::unique_ptr<compile::Executable> exe[2];
    for (int with = 0; with < 2; ++with) {
      compile::CompileOptions o;
      // RLX_LAYER_AA=1: both without the layer (an A/A check of the harness).
      if (with && std::getenv("RLX_LAYER_AA") == nullptr)
        o.fusion.enabled.insert("fuse-transformer-layer");
      exe[with] = backend.compile(compile::CompilePipeline(backend, o).run(m.g).lir);
      for (NodeId id : m.g.inputs())
        exe[with]->set_input(m.g.node(id).attr<ir::LeafAttrs>().name,
                             all.at(m.g.node(id).attr<ir::LeafAttrs>().name));
      for (NodeId id : m.g.params())
        exe[with]->set_param(m.g.node(id).attr<ir::LeafAttrs>().name,
                             all.at(m.g.node(id).attr<ir::LeafAttrs>().name));
      for (int i = 0; i < 3; ++i)
        exe[with]->execute();
    }
    std::vector<double> ms[2];
    for (int r = 0; r < rounds; ++r)
      for (int k = 0; k < 2; ++k) {
        const int with = (r + k) % 2;
        for (int i = 0; i < per_round; ++i) {
          const auto t0 = std::chrono::steady_clock::now();
          exe[with]->execute();
          ms[with].push_back(
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                  .count());
        }
      }
    for (auto& v : ms)
      std::sort(v.begin(), v.end());
    const double off = ms[0][ms[0].size() / 2], on = ms[1][ms[1].size() / 2];
    if (std::string(m.name) == "warm-up")
      continue; // the first executable a process builds ran slower than an identical second
    std::printf("%-14s threads %d: without the layer %.2f ms (min %.2f), with %.2f ms (min %.2f): "
                "%.3f\n",
                m.name, threads, off, ms[0].front(), on, ms[1].front(), on / off);
    EXPECT_LE(ir::max_abs_diff(exe[0]->output(0), exe[1]->output(0)), 1e-3);
  }
}

} // namespace
