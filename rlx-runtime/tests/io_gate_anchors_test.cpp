// io_gate_anchors_test.cpp: the CPU's calibrated IO fusion-benefit gate on the anchor models'
// builders (BERT-mini, LLaMA, MLP): at the anchor sizes it keeps every fusion the models get
// without it (the fusion report's counts and the kernel count are the same), and the gated
// compiles compute what the reference interpreter computes. The MLP's training step (forward, loss,
// backward, SGD update) keeps its fusions too: ReLU's backward where(x > 0, dy, 0) is one region.
#include "rlx/compile/pipeline.hpp"
#include "rlx/compile/training.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/init.hpp"
#include "rlx/runtime/models.hpp"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace rlx::runtime {
namespace {

struct Anchor {
  std::string name;
  ir::Graph graph;
  ir::Bindings sizes; ///< the anchor row's batch and sequence (scripts/anchors/anchor_config.py)
};

/// bert_mini b1 s128, llama b1 s128 and mlp b64, as scripts/anchors builds them.
std::vector<Anchor> anchors() {
  std::vector<Anchor> a;
  BertConfig bert; // 4 layers, hidden 256, 4 heads, ffn 1024: bert_mini
  a.push_back({"bert_mini", build_bert(bert), {{"batch", 1}, {"seq", 128}}});
  LlamaConfig llama; // 4 layers, hidden 512, 8 heads, ffn 1376
  a.push_back({"llama", build_llama(llama), {{"batch", 1}, {"seq", 128}}});
  MlpConfig mlp; // 784-512-512-10
  a.push_back({"mlp", build_mlp(mlp), {{"batch", 64}}});
  return a;
}

compile::CompileResult compile_for(const ir::Graph& g, const ir::Bindings& sizes, bool gate) {
  cpu::CpuOptions o;
  o.num_threads = 1;
  o.use_io_gate = gate;
  cpu::CpuBackend backend(o);
  EXPECT_EQ(backend.io_fusion_gate() != nullptr, gate);
  compile::CompileOptions co;
  co.bindings = sizes;
  return compile::CompilePipeline(backend, co).run(g);
}

TEST(IoGateAnchors, TheCalibratedGateKeepsEveryFusionTheAnchorsGet) {
  for (const Anchor& a : anchors()) {
    SCOPED_TRACE(a.name);
    const compile::CompileResult on = compile_for(a.graph, a.sizes, true);
    const compile::CompileResult off = compile_for(a.graph, a.sizes, false);
    EXPECT_FALSE(off.fusion.applied.empty()) << off.fusion.str();
    EXPECT_EQ(on.fusion.applied, off.fusion.applied) << "gated:\n"
                                                     << on.fusion.str() << "ungated:\n"
                                                     << off.fusion.str();
    EXPECT_EQ(on.kernels_after_fusion, off.kernels_after_fusion);
    for (const fusion::MissedFusion& m : on.fusion.missed)
      EXPECT_NE(m.reason, fusion::MissReason::not_profitable) << m.pattern << " at " << m.node;
  }
}

/// Compiles a training step with and without the calibrated gate: the same fusions and kernel
/// count, no fusion refused as not profitable. \returns the gated compile.
compile::CompileResult expect_gate_keeps_every_fusion(const ir::Graph& step,
                                                      const ir::Bindings& sizes) {
  compile::CompileResult on = compile_for(step, sizes, true);
  const compile::CompileResult off = compile_for(step, sizes, false);
  EXPECT_EQ(on.fusion.applied, off.fusion.applied) << "gated:\n"
                                                   << on.fusion.str() << "ungated:\n"
                                                   << off.fusion.str();
  EXPECT_EQ(on.kernels_after_fusion, off.kernels_after_fusion);
  for (const fusion::MissedFusion& m : on.fusion.missed)
    EXPECT_NE(m.reason, fusion::MissReason::not_profitable)
        << m.pattern << " at " << m.node << ": " << m.detail;
  return on;
}

TEST(IoGateAnchors, TheCalibratedGateKeepsTheMlpTrainingStepsRegions) {
  // mlp b64 as scripts/anchors/train_bench.py trains it: cross-entropy, plain SGD.
  MlpConfig mlp;
  const compile::TrainingGraph step = compile::build_training_graph(
      compile::with_loss(build_mlp(mlp), compile::Loss::softmax_cross_entropy));
  const ir::Bindings sizes{{"batch", 64}};
  const compile::CompileResult on = expect_gate_keeps_every_fusion(step.step, sizes);
  // No compare or where runs as a kernel of its own: each is in a region.
  const ir::Graph& lir = on.lir.graph();
  for (ir::NodeId id : lir.ids())
    EXPECT_TRUE(lir.node(id).op != ir::OpKind::Compare && lir.node(id).op != ir::OpKind::Where)
        << ir::describe(lir, id);
}

TEST(IoGateAnchors, TheCalibratedGateKeepsTheBertMiniTrainingStepsFusions) {
  // bert_mini b8 s128 as train_bench.py trains it: MSE against a target, plain SGD.
  BertConfig bert;
  const compile::TrainingGraph step =
      compile::build_training_graph(compile::with_loss(build_bert(bert), compile::Loss::mse));
  const ir::Bindings sizes{{"batch", 8}, {"seq", 128}};
  expect_gate_keeps_every_fusion(step.step, sizes);
}

TEST(IoGateAnchors, GatedAnchorsMatchTheReference) {
  for (Anchor& a : anchors()) {
    SCOPED_TRACE(a.name);
    // Short sequences keep the reference interpreter quick; the gate judges these sizes anew.
    if (a.sizes.count("seq"))
      a.sizes["seq"] = 16;
    const compile::CompileResult r = compile_for(a.graph, a.sizes, true);
    cpu::CpuOptions o;
    o.num_threads = 1;
    cpu::CpuBackend backend(o);
    auto exe = backend.compile(r.lir);
    const TensorMap params = init_params(a.graph, 3);
    const TensorMap inputs = random_inputs(a.graph, a.sizes, 4);
    for (const auto& [name, t] : params)
      exe->set_param(name, t);
    for (const auto& [name, t] : inputs)
      exe->set_input(name, t);
    exe->execute();
    const std::vector<ir::Tensor> want = ir::reference::evaluate(a.graph, inputs, params);
    ASSERT_EQ(want.size(), 1u);
    EXPECT_LE(ir::max_abs_diff(exe->output(0), want[0]), 1e-4);
  }
}

} // namespace
} // namespace rlx::runtime
