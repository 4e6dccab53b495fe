// parity_test.cpp: the workloads (BERT-mini, LLaMA with grouped-query attention, MLP) on OpenCL
// against the reference interpreter and the CPU backend, in f32 with seeded weights and inputs;
// and one graph compiled for both backends legalises differently where their claims differ.
//
// Tolerance: as rlx-runtime's parity test (the f32 accumulation error of the kernels, ~2e-6 on
// these transformers, ~2e-7 on the MLP), with the same 10x margin. Sizes are small (seq 32) to
// keep pocl and the reference interpreter fast.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/opencl/backend.hpp"
#include "rlx/runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <set>

namespace rlx::opencl {
namespace {

using runtime::TensorMap;

/// Compiles \p g for \p be with \p sizes bound, runs it on \p in / \p params, returns output 0.
ir::Tensor run_on(const compile::Backend& be, const ir::Graph& g, const ir::Bindings& sizes,
                  const TensorMap& in, const TensorMap& params) {
  compile::CompileOptions opts;
  opts.bindings = sizes;
  compile::CompileResult r = compile::CompilePipeline(be, opts).run(g);
  auto exe = be.compile(r.lir);
  for (const auto& [name, t] : params)
    exe->set_param(name, t);
  for (const auto& [name, t] : in)
    exe->set_input(name, t);
  exe->execute();
  return exe->output(0);
}

const OpenClBackend& opencl() {
  static const OpenClBackend be;
  return be;
}

/// max |opencl - reference| and max |opencl - cpu| of workload \p g.
void check(const ir::Graph& g, const ir::Bindings& sizes, const char* label, double bound,
           const TensorMap* inputs = nullptr) {
  const TensorMap params = runtime::init_params(g, 1234);
  const TensorMap in = inputs ? *inputs : runtime::random_inputs(g, sizes, 1235);
  const ir::Tensor got = run_on(opencl(), g, sizes, in, params);
  const ir::Tensor ref = ir::reference::evaluate(g, in, params)[0];
  const ir::Tensor cpu = run_on(cpu::CpuBackend(), g, sizes, in, params);
  const double err = ir::max_abs_diff(got, ref), err_cpu = ir::max_abs_diff(got, cpu);
  std::cout << label << ": max |opencl - reference| = " << err
            << ", max |opencl - cpu| = " << err_cpu << "\n";
  EXPECT_LT(err, bound) << label;
  EXPECT_LT(err_cpu, 2 * bound) << label;
}

TEST(Parity, BertMini) {
  runtime::BertConfig c; // 4 layers, hidden 256, 4 heads, FFN 1024
  check(runtime::build_bert(c), {{"batch", 2}, {"seq", 32}}, "bert-mini b2 s32", 2e-5);
}

TEST(Parity, BertMiniWithEmbeddingsAndPaddingMask) {
  runtime::BertConfig c;
  c.layers = 2;
  c.embeddings = true;
  c.padding_mask = true;
  c.vocab = 1000;
  ir::Graph g = runtime::build_bert(c);
  const ir::Bindings sizes{{"batch", 2}, {"seq", 16}};
  TensorMap in = runtime::random_inputs(g, sizes, 8);
  for (std::int64_t i = 10; i < 16; ++i) // the second sequence is 10 tokens long
    in["attention_mask"].set_i64(16 + i, 0);
  check(g, sizes, "bert-mini embeddings + padding b2 s16", 2e-5, &in);
}

TEST(Parity, LlamaGroupedQuery) {
  runtime::LlamaConfig c; // 4 blocks, hidden 512, 8 heads
  c.layers = 2;
  c.kv_heads = 2;
  c.ffn = 1376;
  check(runtime::build_llama(c), {{"batch", 1}, {"seq", 32}}, "llama gqa s32", 2e-5);
}

TEST(Parity, Mlp) {
  check(runtime::build_mlp({}), {{"batch", 16}}, "mlp b16", 2e-6);
}

TEST(Claims, OneGraphLegalisesDifferentlyForCpuAndOpenCl) {
  // SoftmaxCrossEntropy has a CPU kernel; OpenCL leaves it to its decomposition (reductions,
  // Compare, Where). Both compile the same graph and agree with the reference.
  ir::Graph g;
  ir::Builder b(g);
  auto logits = b.input("logits", ir::Shape::of({8, 5}));
  auto labels = b.input("labels", ir::Shape::of({8}, ir::DType::i64));
  b.output(b.op(ir::OpKind::SoftmaxCrossEntropy, {logits, labels}));
  auto ops_of = [&](const compile::Backend& be) {
    std::set<ir::OpKind> ops;
    compile::CompileResult r = compile::CompilePipeline(be).run(g);
    for (ir::NodeId id : r.lir.graph().ids())
      ops.insert(r.lir.graph().node(id).op);
    return ops;
  };
  const cpu::CpuBackend cpu_be;
  const auto on_cpu = ops_of(cpu_be), on_cl = ops_of(opencl());
  EXPECT_TRUE(on_cpu.count(ir::OpKind::SoftmaxCrossEntropy));
  EXPECT_FALSE(on_cl.count(ir::OpKind::SoftmaxCrossEntropy));
  EXPECT_TRUE(on_cl.count(ir::OpKind::Reduce));
  TensorMap in = runtime::random_inputs(g, {}, 5);
  for (std::int64_t i = 0; i < 8; ++i)
    in["labels"].set_i64(i, i % 5);
  const ir::Tensor ref = ir::reference::evaluate(g, in, {})[0];
  EXPECT_LT(ir::max_abs_diff(run_on(opencl(), g, {}, in, {}), ref), 1e-5);
  EXPECT_LT(ir::max_abs_diff(run_on(cpu_be, g, {}, in, {}), ref), 1e-5);
}

TEST(Claims, BertMiniFusesDifferentlyForCpuAndOpenCl) {
  // Both backends claim MatMulBiasAct, so both fuse the FFN's GEMM + bias + GELU, and both claim
  // ResidualLayerNorm, so both fuse every residual add with its LayerNorm (the embedding sum's
  // too). Only the CPU claims Split, so only its graph runs fuse-shared-input-matmul (one QKV
  // product over the concatenated weights, then Split / Get); OpenCL keeps three products per
  // layer (its weight Concat would run on every call). No region is left for OpenCL here (the
  // residual fusions took the adds) and the CPU claims none. Both graphs match the reference.
  runtime::BertConfig c;
  c.layers = 2;
  c.embeddings = true;
  c.padding_mask = true;
  c.vocab = 500;
  const ir::Graph g = runtime::build_bert(c);
  const ir::Bindings sizes{{"batch", 2}, {"seq", 16}};
  auto count_of = [&](const compile::Backend& be) {
    std::map<ir::OpKind, int> ops;
    compile::CompileOptions opts;
    opts.bindings = sizes;
    compile::CompileResult r = compile::CompilePipeline(be, opts).run(g);
    for (ir::NodeId id : r.lir.graph().ids())
      ++ops[r.lir.graph().node(id).op];
    return ops;
  };
  const cpu::CpuBackend cpu_be;
  auto on_cpu = count_of(cpu_be), on_cl = count_of(opencl());
  for (const auto* m : {&on_cpu, &on_cl}) {
    std::cout << (m == &on_cpu ? "cpu:" : "opencl:");
    for (const auto& [k, n] : *m)
      std::cout << " " << ir::op_name(k) << "=" << n;
    std::cout << "\n";
  }
  EXPECT_GT(on_cpu[ir::OpKind::MatMulBiasAct], 0);
  EXPECT_GT(on_cl[ir::OpKind::MatMulBiasAct], 0);
  EXPECT_EQ(on_cpu[ir::OpKind::ElementwiseRegion], 0);
  // The residual + LayerNorm fusion follows the claim on both: per layer two, plus the embeddings.
  EXPECT_EQ(on_cpu[ir::OpKind::ResidualLayerNorm], 2 * c.layers + 1);
  EXPECT_EQ(on_cl[ir::OpKind::ResidualLayerNorm], 2 * c.layers + 1);
  EXPECT_EQ(on_cl[ir::OpKind::LayerNorm], 0);
  // The shared-input (QKV) packing and the attention block run on the CPU only: one
  // fused_attention_block per layer (packed QKV GEMM, attention, output GEMM; the weight Concat
  // stays), no Split; OpenCL keeps three Q / K / V products and a plain Attention.
  EXPECT_EQ(on_cpu[ir::OpKind::FusedAttentionBlock], c.layers);
  EXPECT_EQ(on_cl[ir::OpKind::FusedAttentionBlock], 0);
  EXPECT_EQ(on_cpu[ir::OpKind::Split], 0);
  EXPECT_EQ(on_cl[ir::OpKind::Split], 0);
  EXPECT_EQ(on_cl[ir::OpKind::Concat], 0);
  EXPECT_GT(on_cl[ir::OpKind::MatMulBiasAct], on_cpu[ir::OpKind::MatMulBiasAct]);
  // The padding-masked attention fuses on both (OpenCL claims Attention with an i64 mask).
  EXPECT_EQ(on_cpu[ir::OpKind::Attention], 0);
  EXPECT_EQ(on_cl[ir::OpKind::Attention], c.layers);
  EXPECT_NE(on_cpu, on_cl);
  TensorMap in = runtime::random_inputs(g, sizes, 8);
  for (std::int64_t i = 12; i < 16; ++i)
    in["attention_mask"].set_i64(16 + i, 0);
  const TensorMap params = runtime::init_params(g, 99);
  const ir::Tensor ref = ir::reference::evaluate(g, in, params)[0];
  EXPECT_LT(ir::max_abs_diff(run_on(opencl(), g, sizes, in, params), ref), 2e-5);
  EXPECT_LT(ir::max_abs_diff(run_on(cpu_be, g, sizes, in, params), ref), 2e-5);
}

} // namespace
} // namespace rlx::opencl
