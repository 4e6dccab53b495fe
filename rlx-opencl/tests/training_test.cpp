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
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/session.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

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
