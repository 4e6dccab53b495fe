// trainer_packed_gemm_test.cpp: a training step on rlx's own packed GEMM (`--gemm packed`): its
// weights are read through packed panel copies in the weight region, which must follow every
// in-place optimizer update, so each step's loss and the final weights match the reference
// interpreter running the same step graph; the backward products (Xᵀ·dY with a transposed
// activation, dY·Wᵀ) run on it too.
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

TEST(TrainerPackedGemm, StepsMatchTheReferenceAsWeightsChangeInPlace) {
  MlpConfig c;
  c.dims = {13, 65, 7};
  const ir::Graph model = build_mlp(c);
  SessionOptions so;
  so.cpu.gemm = cpu::GemmProvider::packed;
  so.cpu.num_threads = 2;
  Session s(Device::cpu(), so);
  TrainerOptions o;
  o.training.optimizer = {compile::Sgd{0.9, true, 1e-3}, 1.0};
  o.schedule.base_lr = 0.05;
  Trainer t =
      s.compile_training(compile::with_loss(model, compile::Loss::softmax_cross_entropy), o);
  std::mt19937 rng(4);
  std::normal_distribution<float> normal(0.f, 0.4f);
  TensorMap weights;
  for (ir::NodeId p : model.params()) {
    Tensor v(model.shape(p));
    for (float& x : v.data<float>())
      x = normal(rng);
    weights[model.node(p).attr<ir::LeafAttrs>().name] = v;
  }
  t.set_params(weights);
  for (const auto& slot : t.graph().weights)
    if (slot.state)
      weights[slot.name] = Tensor(slot.shape);
  for (int i = 1; i <= 4; ++i) {
    Tensor x(ir::Shape({33, 13}));
    for (float& v : x.data<float>())
      v = normal(rng) * 2.5f;
    Tensor labels(ir::Shape({33}, ir::DType::i64));
    for (std::int64_t r = 0; r < 33; ++r)
      labels.data<std::int64_t>()[static_cast<std::size_t>(r)] = (r * 5 + i) % 7;
    std::map<std::string, Tensor> in{{"x", x}, {"labels", labels}};
    const double got = t.step(in);
    in[compile::kLearningRate] = Tensor::scalar(0.05f);
    in[compile::kStepCount] = Tensor::scalar(static_cast<float>(i));
    std::vector<Tensor> out = ir::reference::evaluate(t.graph().step, in, weights);
    EXPECT_NEAR(got, out[0].get_f64(0), 1e-5 * (1 + std::abs(got))) << "step " << i;
    for (const auto& slot : t.graph().weights)
      weights[slot.name] = out[slot.output];
  }
  for (const auto& [name, value] : t.params())
    for (std::int64_t k = 0; k < value.numel(); ++k)
      ASSERT_NEAR(value.get_f64(k), weights.at(name).get_f64(k), 1e-4) << name << "[" << k << "]";
}

} // namespace
} // namespace rlx::runtime
