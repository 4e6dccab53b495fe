// exported_fusion_test.cpp: PyTorch-exported models (tests/exported/, made by make_exported.py)
// reach the fused kernels the builder-made graphs reach: the fusion matchers recognise the
// exporter's spellings ([K, N] MatMul weights, erf GELU, LayerNorm and RMSNorm in primitives,
// attention with Transposes). Each model's fused run matches the reference interpreter on the
// imported (unfused) graph and PyTorch's own output.
#include "rlx/ir/reference.hpp"
#include "rlx/onnx/import.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/session.hpp"

#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace rlx::onnx {
namespace {

const std::filesystem::path kDir = RLX_ONNX_EXPORTED_DIR;

struct Fused {
  std::map<std::string, int> applied; ///< the fusion report's applied patterns
  std::map<ir::OpKind, int> kernels;  ///< op kinds of the compiled graph
  std::vector<ir::MaskKind> masks;    ///< the mask kind of each Attention / attention block
  std::vector<bool> weights_kn;       ///< the weight layout of each SwiGluMatMul
  std::size_t missed = 0;
  std::string report;
};

/// Imports \p name (biases of more than 16 elements become Params, as in full-size models),
/// compiles it for the CPU, and checks its output against the reference and PyTorch.
Fused compile_and_check(const std::string& name) {
  ImportOptions o;
  o.max_constant_elements = 16;
  o.bindings = {{"batch", 2}, {"seq", 8}};
  ImportedModel im = import_file(kDir / (name + ".onnx"), o);
  runtime::Session session;
  runtime::Executable exe = session.compile(im.graph);
  exe.set_params(im.params);
  const auto& r = exe.prepare().compiled->result;
  Fused f;
  f.applied = r.fusion.applied;
  f.missed = r.fusion.missed.size();
  f.report = r.fusion.str();
  for (ir::NodeId id : r.lir.graph().ids()) {
    const ir::Node& n = r.lir.graph().node(id);
    ++f.kernels[n.op];
    if (n.op == ir::OpKind::Attention)
      f.masks.push_back(n.attr<ir::AttentionAttrs>().mask);
    if (n.op == ir::OpKind::FusedAttentionBlock)
      f.masks.push_back(n.attr<ir::FusedAttentionBlockAttrs>().mask);
    if (n.op == ir::OpKind::SwiGluMatMul)
      f.weights_kn.push_back(n.attr<ir::SwiGluMatMulAttrs>().weights_kn);
  }

  const ir::Tensor x = runtime::read_npy((kDir / (name + ".x.npy")).string());
  const ir::Tensor torch_y = runtime::read_npy((kDir / (name + ".y.npy")).string());
  const ir::Tensor y = exe.run({{"x", x}}).at("y");
  const ir::Tensor want = ir::reference::evaluate(im.graph, {{"x", x}}, im.params)[0];
  EXPECT_LT(ir::max_abs_diff(y, want), 2e-5) << name << ": fused CPU run vs reference";
  EXPECT_LT(ir::max_abs_diff(y, torch_y), 2e-5) << name << ": fused CPU run vs PyTorch";
  return f;
}

TEST(ExportedFusion, BertLayerReachesTheBuilderKernels) {
  Fused f = compile_and_check("bert_layer");
  EXPECT_EQ(f.missed, 0u) << f.report;
  // Q / K / V with their [K, N] weights and biases share one packed product.
  EXPECT_EQ(
      f.applied.count("shared_input_matmul_bias") ? f.applied.at("shared_input_matmul_bias") : 0, 3)
      << f.report;
  // The packed projection, the attention and the output projection: one attention block.
  EXPECT_EQ(f.kernels[ir::OpKind::FusedAttentionBlock], 1) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::Attention], 0) << f.report;
  // Opset 14: LayerNorm spelled in primitives; both follow a residual Add (post-norm), so each
  // becomes one residual + norm kernel.
  EXPECT_EQ(f.kernels[ir::OpKind::ResidualLayerNorm], 2) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::LayerNorm], 0) << f.report;
  // fc1 + GELU, fc2: every product outside the block with its bias.
  EXPECT_EQ(f.kernels[ir::OpKind::MatMulBiasAct], 2) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::MatMul], 0) << f.report;
  for (ir::OpKind k : {ir::OpKind::Softmax, ir::OpKind::Erf, ir::OpKind::Reduce, ir::OpKind::Sqrt,
                       ir::OpKind::Transpose, ir::OpKind::Div})
    EXPECT_EQ(f.kernels[k], 0) << ir::op_name(k) << " left unfused\n" << f.report;
}

TEST(ExportedFusion, LlamaBlockReachesTheBuilderKernels) {
  Fused f = compile_and_check("llama_block");
  // Pre-norm: the first RMSNorm reads the block input, the second the attention residual (one
  // residual + norm kernel whose sum is also the next residual).
  EXPECT_EQ(f.kernels[ir::OpKind::RmsNorm], 1) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::ResidualRmsNorm], 1) << f.report;
  // RoPE of Q and K from the constant cos / sin tables, moved behind the head Transposes, which
  // the bshd attention then drops; the packed projection, both RoPEs, the attention and the
  // output projection then become one attention block.
  EXPECT_EQ(f.kernels[ir::OpKind::FusedAttentionBlock], 1) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::Attention], 0) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::Rope], 0) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::Transpose], 0) << f.report;
  // The exported causal buffer `causal[:S, :S]` is the causal mask kind: no mask operand.
  EXPECT_EQ(f.masks, std::vector<ir::MaskKind>{ir::MaskKind::causal}) << f.report;
  // Q / K / V in one product; gate / up as one SwiGluMatMul reading the [K, N] weights as stored.
  EXPECT_EQ(f.applied.count("shared_input_matmul") ? f.applied.at("shared_input_matmul") : 0, 3)
      << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::SwiGluMatMul], 1) << f.report;
  EXPECT_EQ(f.weights_kn, std::vector<bool>{true}) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::SwiGlu], 0) << f.report;
  EXPECT_EQ(f.kernels[ir::OpKind::Split], 0) << f.report; // Q / K / V read in the block
  for (ir::OpKind k : {ir::OpKind::Softmax, ir::OpKind::Reduce, ir::OpKind::Sqrt, ir::OpKind::Pow,
                       ir::OpKind::Sigmoid, ir::OpKind::Neg, ir::OpKind::Narrow})
    EXPECT_EQ(f.kernels[k], 0) << ir::op_name(k) << " left unfused\n" << f.report;
}

} // namespace
} // namespace rlx::onnx
