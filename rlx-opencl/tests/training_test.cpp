// training_test.cpp: training graphs on OpenCL: the digits-sized MLP's training step (forward,
// backward, AdamW / SGD updating parameters and optimizer state in place through
// Graph::aliases) run by rlx-runtime's Trainer on the OpenCL device, against the same steps on
// the CPU backend: the losses agree step by step, and so do the trained parameters.
//
// Tolerance: both backends compute in f32 with different summation orders (GEMM, reductions);
// over a few AdamW steps on a 64-32-10 MLP the differences stay ~1e-6 relative, so 1e-4 leaves
// headroom without hiding a wrong gradient (a wrong update moves the loss by > 1e-2).
#include "rlx/compile/training.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/init.hpp"
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/session.hpp"
#include "rlx/runtime/training_heads.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <set>

namespace rlx::runtime {
namespace {

using ir::Tensor;

ir::Graph digits_mlp() {
  MlpConfig c;
  c.dims = {64, 32, 10}; // the 8 x 8 digits: 64 pixels, 10 classes
  return build_mlp(c);
}

TensorMap random_params(const ir::Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 0.2f);
  TensorMap out;
  for (ir::NodeId p : g.params()) {
    Tensor t(g.shape(p));
    for (float& v : t.data<float>())
      v = n(rng);
    out[g.node(p).attr<ir::LeafAttrs>().name] = t;
  }
  return out;
}

std::map<std::string, Tensor> batch(unsigned seed, std::int64_t rows = 16) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> u(0.f, 16.f);
  Tensor x(ir::Shape({rows, 64}));
  for (float& v : x.data<float>())
    v = u(rng) / 16.f;
  Tensor labels(ir::Shape({rows}, ir::DType::i64));
  for (std::int64_t i = 0; i < rows; ++i)
    labels.data<std::int64_t>()[static_cast<std::size_t>(i)] = (i * 7 + seed) % 10;
  return {{"x", x}, {"labels", labels}};
}

/// The losses of \p steps steps on \p device, and the trained parameters.
std::pair<std::vector<double>, TensorMap> train(Device device, compile::OptimizerSpec opt,
                                                int steps) {
  Session s(device);
  const ir::Graph model = digits_mlp();
  TrainerOptions o;
  o.training.optimizer = opt;
  o.schedule.base_lr = 0.02;
  Trainer t =
      s.compile_training(compile::with_loss(model, compile::Loss::softmax_cross_entropy), o);
  t.set_params(random_params(model, 3));
  std::vector<double> losses;
  const auto b = batch(10); // one batch: the loss must fall step by step
  for (int i = 0; i < steps; ++i)
    losses.push_back(t.step(b));
  return {losses, t.params()};
}

void expect_same_training(compile::OptimizerSpec opt) {
  const auto [cpu_losses, cpu_params] = train(Device::cpu(), opt, 5);
  const auto [cl_losses, cl_params] = train(Device::opencl(), opt, 5);
  ASSERT_EQ(cpu_losses.size(), cl_losses.size());
  for (std::size_t i = 0; i < cpu_losses.size(); ++i) {
    std::cout << "step " << i + 1 << ": cpu " << cpu_losses[i] << ", opencl " << cl_losses[i]
              << "\n";
    EXPECT_NEAR(cl_losses[i], cpu_losses[i], 1e-4 * std::abs(cpu_losses[i])) << "step " << i + 1;
  }
  EXPECT_LT(cl_losses.back(), cl_losses.front()); // it learns
  for (const auto& [name, t] : cpu_params)
    EXPECT_LT(ir::max_abs_diff(cl_params.at(name), t), 1e-4) << name;
}

TEST(Training, DigitsMlpAdamWMatchesTheCpuStepByStep) {
  expect_same_training({compile::AdamW{}, 0});
}

TEST(Training, DigitsMlpSgdMomentumMatchesTheCpuStepByStep) {
  expect_same_training({compile::Sgd{0.9, false, 0.0}, 0});
}

// ---- a BERT masked LM: the fused residual norms, LayerNormGrad and SoftmaxGrad on the device

/// A tiny BERT-mini-shaped masked LM (2 layers, hidden 32, 2 heads) over a 40-token vocabulary,
/// batch 2, seq 8, with the weighted token loss rlx train uses.
ir::Graph tiny_bert_mlm() {
  BertConfig c;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 2;
  c.ffn = 64;
  c.embeddings = true;
  c.vocab = 40;
  c.max_positions = 16;
  c.batch = ir::Dim(2);
  c.seq = ir::Dim(8);
  return with_token_loss(add_mlm_head(build_bert(c), c.eps), true);
}

/// Batch \p step of the masked LM: random ids, every third position masked (weight 1).
std::map<std::string, Tensor> mlm_batch(unsigned step) {
  std::mt19937 rng(100 + step);
  std::uniform_int_distribution<std::int64_t> tok(0, 38);
  std::map<std::string, Tensor> b;
  Tensor ids(ir::Shape({2, 8}, ir::DType::i64)), types(ir::Shape({2, 8}, ir::DType::i64));
  Tensor pos(ir::Shape({2, 8}, ir::DType::i64)), labels(ir::Shape({2, 8}, ir::DType::i64));
  Tensor w(ir::Shape({2, 8}));
  for (std::int64_t i = 0; i < 16; ++i) {
    const auto k = static_cast<std::size_t>(i);
    const std::int64_t t = tok(rng);
    const bool masked = (i + step) % 3 == 0;
    ids.data<std::int64_t>()[k] = masked ? 39 : t; // 39: the [MASK] id
    labels.data<std::int64_t>()[k] = t;
    w.data<float>()[k] = masked ? 1.f : 0.f;
    pos.data<std::int64_t>()[k] = i % 8;
    types.data<std::int64_t>()[k] = 0;
  }
  return {{"input_ids", ids},
          {"token_type_ids", types},
          {"position_ids", pos},
          {kTokenLabels, labels},
          {kTokenLabelWeights, w}};
}

/// The per-step losses of 10 AdamW steps of the tiny BERT masked LM on \p device, and the op
/// kinds of the compiled training step.
std::pair<std::vector<double>, std::set<ir::OpKind>> train_bert(Device device) {
  Session s(device);
  const ir::Graph lossy = tiny_bert_mlm();
  TrainerOptions o;
  o.training.optimizer = {compile::AdamW{}, 0};
  o.schedule.base_lr = 3e-3;
  Trainer t = s.compile_training(lossy, o);
  t.set_params(init_params(lossy, 7));
  std::vector<double> losses;
  const auto b = mlm_batch(0); // one batch: the loss must fall step by step
  for (int i = 0; i < 10; ++i)
    losses.push_back(t.step(b));
  std::set<ir::OpKind> ops;
  for (const VariantInfo* v : t.step_executable().variants())
    for (ir::NodeId id : v->compiled->result.lir.graph().ids())
      ops.insert(v->compiled->result.lir.graph().node(id).op);
  return {losses, ops};
}

TEST(Training, BertMiniMaskedLmMatchesTheCpuForTenSteps) {
  // Tolerance: f32 on both, with different summation orders (GEMM, norms, softmax, the column
  // sums of dgamma / dbeta in double here, in per-thread f32 slices on the CPU). AdamW divides
  // each gradient by its running RMS, so an update is ~lr per weight whatever the gradient's
  // size and rounding differences in the gradients move the weights by far less than lr; over 10
  // steps the losses stay within ~1e-6 relative (measured: at most 1.3e-6 on pocl), so 1e-4
  // relative leaves headroom while a wrong gradient (one kernel's part off by 0.1%) or a missed
  // in-place update (the loss stops moving) fails it.
  const auto [cpu_losses, cpu_ops] = train_bert(Device::cpu());
  const auto [cl_losses, cl_ops] = train_bert(Device::opencl());
  // The OpenCL step runs the fused residual norms and the norm backward kernel, not
  // decompositions. (Attention's VJP emits attention_grad, which OpenCL does not claim: its
  // decomposition recomputes the probabilities and uses rowsum(dout * out), no softmax_grad.)
  for (ir::OpKind k :
       {ir::OpKind::ResidualLayerNorm, ir::OpKind::LayerNormGrad, ir::OpKind::ScatterAdd})
    EXPECT_TRUE(cl_ops.count(k)) << ir::op_name(k) << " is not in the OpenCL training step";
  ASSERT_EQ(cpu_losses.size(), cl_losses.size());
  for (std::size_t i = 0; i < cpu_losses.size(); ++i) {
    std::cout << "step " << i + 1 << ": cpu " << cpu_losses[i] << ", opencl " << cl_losses[i]
              << " (rel " << std::abs(cl_losses[i] - cpu_losses[i]) / std::abs(cpu_losses[i])
              << ")\n";
    EXPECT_NEAR(cl_losses[i], cpu_losses[i], 1e-4 * std::abs(cpu_losses[i])) << "step " << i + 1;
  }
  EXPECT_LT(cl_losses.back(), cl_losses.front()); // it learns
}

TEST(Training, ACpuExecutableSharingTheRegionSeesTheDeviceUpdates) {
  // The step updates the weights on the device; a CPU inference executable compiled against the
  // same region reads their plain bytes, which each step therefore refreshes from the device.
  Session cl(Device::opencl()), cpu(Device::cpu());
  const ir::Graph model = digits_mlp();
  TrainerOptions o;
  o.training.optimizer = {compile::AdamW{}, 0};
  o.schedule.base_lr = 0.02;
  Trainer t =
      cl.compile_training(compile::with_loss(model, compile::Loss::softmax_cross_entropy), o);
  t.set_params(random_params(model, 5));
  CompileOptions shared;
  shared.weights = t.weights();
  Executable infer = cpu.compile(model, shared);
  const auto b = batch(4);
  const Tensor before = infer.run({{"x", b.at("x")}}).at("y");
  t.step(b);
  t.step(b);
  const Tensor after = infer.run({{"x", b.at("x")}}).at("y");
  const Tensor ref = ir::reference::evaluate(model, {{"x", b.at("x")}}, t.params())[0];
  EXPECT_LT(ir::max_abs_diff(after, ref), 1e-5);
  EXPECT_GT(ir::max_abs_diff(after, before), 1e-3); // the update reached the CPU
}

} // namespace
} // namespace rlx::runtime
