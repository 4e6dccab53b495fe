// attention_block_claims_test.cpp: one model, two claim sets. The CPU backend claims
// FusedAttentionBlock, so fuse-attention-block runs for it and its graph holds one block per
// layer; OpenCL does not claim it, so the pass is not even listed and its graph keeps the packed
// projection, Split, Attention and output projection. Both graphs match the reference.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/opencl/backend.hpp"
#include "rlx/runtime/runtime.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>

namespace rlx::opencl {
namespace {

TEST(Claims, AttentionBlockFusesForCpuOnly) {
  runtime::LlamaConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.kv_heads = 2;
  c.ffn = 96;
  const ir::Graph g = runtime::build_llama(c);
  const ir::Bindings sizes{{"batch", 1}, {"seq", 12}};
  const runtime::TensorMap params = runtime::init_params(g, 31);
  const runtime::TensorMap in = runtime::random_inputs(g, sizes, 32);
  const ir::Tensor ref = ir::reference::evaluate(g, in, params)[0];
  auto compile_run = [&](const compile::Backend& be, std::map<ir::OpKind, int>& ops) {
    compile::CompileOptions opts;
    opts.bindings = sizes;
    compile::CompileResult r = compile::CompilePipeline(be, opts).run(g);
    for (ir::NodeId id : r.lir.graph().ids())
      ++ops[r.lir.graph().node(id).op];
    auto exe = be.compile(r.lir);
    for (const auto& [name, t] : params)
      exe->set_param(name, t);
    for (const auto& [name, t] : in)
      exe->set_input(name, t);
    exe->execute();
    return exe->output(0);
  };
  std::map<ir::OpKind, int> on_cpu, on_cl;
  const cpu::CpuBackend cpu_be;
  static const OpenClBackend cl_be;
  const ir::Tensor cpu_out = compile_run(cpu_be, on_cpu);
  const ir::Tensor cl_out = compile_run(cl_be, on_cl);
  EXPECT_EQ(on_cpu[ir::OpKind::FusedAttentionBlock], 2);
  EXPECT_EQ(on_cpu[ir::OpKind::Attention], 0);
  EXPECT_EQ(on_cl[ir::OpKind::FusedAttentionBlock], 0);
  EXPECT_EQ(on_cl[ir::OpKind::Attention], 2);
  EXPECT_LT(ir::max_abs_diff(cpu_out, ref), 2e-5);
  EXPECT_LT(ir::max_abs_diff(cl_out, ref), 2e-5);
}

TEST(Claims, TransformerLayerFusesForCpuOnly) {
  // BERT-mini-like widths, batch 2 with a padding mask: the CPU claims the layer, so its graph is
  // one fused_transformer_layer per layer; OpenCL claims neither the layer nor the block, so
  // fuse-transformer-layer is not listed and its graph keeps the chain. Both equal the reference.
  runtime::BertConfig c;
  c.layers = 2;
  c.hidden = 64;
  c.heads = 4;
  c.ffn = 128;
  c.padding_mask = true;
  const ir::Graph g = runtime::build_bert(c);
  const ir::Bindings sizes{{"batch", 2}, {"seq", 9}};
  const runtime::TensorMap params = runtime::init_params(g, 41);
  const runtime::TensorMap in = runtime::random_inputs(g, sizes, 42);
  const ir::Tensor ref = ir::reference::evaluate(g, in, params)[0];
  auto compile_run = [&](const compile::Backend& be, std::map<ir::OpKind, int>& ops,
                         std::vector<std::string>& passes) {
    compile::CompileOptions opts;
    opts.bindings = sizes;
    opts.fusion.enabled.insert("fuse-transformer-layer"); // opt-in; OpenCL's claims still say no
    compile::CompileResult r = compile::CompilePipeline(be, opts).run(g);
    for (ir::NodeId id : r.lir.graph().ids())
      ++ops[r.lir.graph().node(id).op];
    for (const auto& p : r.passes)
      passes.push_back(p.name);
    auto exe = be.compile(r.lir);
    for (const auto& [name, t] : params)
      exe->set_param(name, t);
    for (const auto& [name, t] : in)
      exe->set_input(name, t);
    exe->execute();
    return exe->output(0);
  };
  std::map<ir::OpKind, int> on_cpu, on_cl;
  std::vector<std::string> cpu_passes, cl_passes;
  const cpu::CpuBackend cpu_be;
  static const OpenClBackend cl_be;
  const ir::Tensor cpu_out = compile_run(cpu_be, on_cpu, cpu_passes);
  const ir::Tensor cl_out = compile_run(cl_be, on_cl, cl_passes);
  const auto ran = [](const std::vector<std::string>& v) {
    return std::find(v.begin(), v.end(), "fuse-transformer-layer") != v.end();
  };
  EXPECT_TRUE(ran(cpu_passes));
  EXPECT_FALSE(ran(cl_passes));
  EXPECT_EQ(on_cpu[ir::OpKind::FusedTransformerLayer], 2);
  EXPECT_EQ(on_cpu[ir::OpKind::LayerNorm] + on_cpu[ir::OpKind::ResidualLayerNorm], 0);
  EXPECT_EQ(on_cl[ir::OpKind::FusedTransformerLayer], 0);
  EXPECT_EQ(on_cl[ir::OpKind::Attention], 2);
  EXPECT_LT(ir::max_abs_diff(cpu_out, ref), 2e-5);
  EXPECT_LT(ir::max_abs_diff(cl_out, ref), 2e-5);
}

} // namespace
} // namespace rlx::opencl
