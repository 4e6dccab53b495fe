// trainer_test.cpp: Session::compile_training on rlx-cpu: the step updates the weights in place
// (the region's addresses never move, an inference executable sharing the region sees every
// update), matches the reference interpreter run of the same step graph, and save / load resumes
// bit-identically.
#include "rlx/compile/training.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/models.hpp"
#include "rlx/runtime/session.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <random>

namespace rlx::runtime {
namespace {

using ir::Tensor;

ir::Graph mlp() {
  MlpConfig c;
  c.dims = {6, 16, 4};
  return build_mlp(c);
}

TensorMap random_params(const ir::Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 0.4f);
  TensorMap out;
  for (ir::NodeId p : g.params()) {
    Tensor t(g.shape(p));
    for (float& v : t.data<float>())
      v = n(rng);
    out[g.node(p).attr<ir::LeafAttrs>().name] = t;
  }
  return out;
}

std::map<std::string, Tensor> batch(unsigned seed, std::int64_t rows = 8) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> n(0.f, 1.f);
  Tensor x(ir::Shape({rows, 6}));
  for (float& v : x.data<float>())
    v = n(rng);
  Tensor labels(ir::Shape({rows}, ir::DType::i64));
  for (std::int64_t i = 0; i < rows; ++i)
    labels.data<std::int64_t>()[static_cast<std::size_t>(i)] = (i * 7 + seed) % 4;
  return {{"x", x}, {"labels", labels}};
}

TrainerOptions options(compile::OptimizerSpec opt, double lr) {
  TrainerOptions o;
  o.training.optimizer = opt;
  o.schedule.base_lr = lr;
  return o;
}

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.shape() == b.shape() && std::memcmp(a.raw(), b.raw(), a.nbytes()) == 0;
}

TEST(Trainer, UpdatesWeightsInPlaceAndInferenceSeesThem) {
  Session s;
  const ir::Graph model = mlp();
  Trainer t = s.compile_training(compile::with_loss(model, compile::Loss::softmax_cross_entropy),
                                 options({compile::AdamW{}, 0}, 0.01));
  t.set_params(random_params(model, 1));
  auto w = t.weights();
  const ir::Shape wt = w->shape("fc1.weight");
  std::byte* before = w->storage("fc1.weight", wt);
  std::byte* state_before = w->storage("optim.fc1.weight.exp_avg", wt);

  CompileOptions shared;
  shared.weights = w;
  Executable infer = s.compile(model, shared);
  const auto b0 = batch(3);
  Tensor y0 = infer.run({{"x", b0.at("x")}}).at("y");
  const TensorMap p0 = t.params();

  double loss = 0;
  for (int i = 0; i < 5; ++i)
    loss = t.step(batch(10 + static_cast<unsigned>(i)));
  EXPECT_TRUE(std::isfinite(loss));
  EXPECT_EQ(t.steps(), 5);
  // The weights never moved: same address, one backend executable, updated values.
  EXPECT_EQ(w->storage("fc1.weight", wt), before);
  EXPECT_EQ(w->storage("optim.fc1.weight.exp_avg", wt), state_before);
  EXPECT_EQ(t.step_executable().contexts(), 1u);
  EXPECT_FALSE(same_bits(t.params().at("fc1.weight"), p0.at("fc1.weight")));

  // The inference executable reads the same region: it sees the new weights.
  Tensor y1 = infer.run({{"x", b0.at("x")}}).at("y");
  EXPECT_FALSE(same_bits(y0, y1));
  std::vector<Tensor> want = ir::reference::evaluate(model, {{"x", b0.at("x")}}, t.params());
  for (std::int64_t i = 0; i < y1.numel(); ++i)
    EXPECT_NEAR(y1.get_f64(i), want[0].get_f64(i), 1e-5);
}

TEST(Trainer, MatchesTheReferenceInterpreter) {
  for (compile::OptimizerSpec opt : {compile::OptimizerSpec{compile::Sgd{0.9, true, 1e-3}, 1.0},
                                     compile::OptimizerSpec{compile::AdamW{}, 0}}) {
    Session s;
    const ir::Graph model = mlp();
    Trainer t = s.compile_training(compile::with_loss(model, compile::Loss::softmax_cross_entropy),
                                   options(opt, 0.05));
    TensorMap weights = random_params(model, 2);
    t.set_params(weights);
    for (const auto& slot : t.graph().weights)
      if (slot.state)
        weights[slot.name] = Tensor(slot.shape);
    for (int i = 1; i <= 4; ++i) {
      auto in = batch(20 + static_cast<unsigned>(i));
      const double got = t.step(in);
      in[compile::kLearningRate] = Tensor::scalar(0.05f);
      in[compile::kStepCount] = Tensor::scalar(static_cast<float>(i));
      std::vector<Tensor> out = ir::reference::evaluate(t.graph().step, in, weights);
      EXPECT_NEAR(got, out[0].get_f64(0), 1e-5 * (1 + std::abs(got))) << "step " << i;
      for (const auto& slot : t.graph().weights)
        weights[slot.name] = out[slot.output];
    }
    const TensorMap p = t.params();
    for (const auto& [name, value] : p)
      for (std::int64_t k = 0; k < value.numel(); ++k)
        ASSERT_NEAR(value.get_f64(k), weights.at(name).get_f64(k), 1e-4) << name << "[" << k << "]";
  }
}

TEST(Trainer, SaveAndLoadResumeBitIdentically) {
  const auto dir = std::filesystem::temp_directory_path() / "rlx_trainer_test";
  std::filesystem::create_directories(dir);
  const auto ckpt = dir / "ckpt.safetensors";
  const ir::Graph model = compile::with_loss(mlp(), compile::Loss::softmax_cross_entropy);
  compile::LrSchedule sched{compile::LrSchedule::Kind::warmup_cosine, 0.02, 2, 8, 0.001};
  TrainerOptions o = options({compile::AdamW{}, 1.0}, 0);
  o.schedule = sched;

  Session s;
  Trainer a = s.compile_training(model, o);
  a.set_params(random_params(mlp(), 5));
  for (int i = 0; i < 3; ++i)
    a.step(batch(30 + static_cast<unsigned>(i)));
  a.save(ckpt);
  std::vector<double> losses_a;
  for (int i = 3; i < 6; ++i)
    losses_a.push_back(a.step(batch(30 + static_cast<unsigned>(i))));

  Session s2;
  Trainer b = s2.compile_training(model, o);
  b.load(ckpt);
  EXPECT_EQ(b.steps(), 3);
  for (int i = 3; i < 6; ++i)
    EXPECT_EQ(b.step(batch(30 + static_cast<unsigned>(i))),
              losses_a[static_cast<std::size_t>(i - 3)]);
  const TensorMap pa = a.params(), pb = b.params();
  for (const auto& [name, value] : pa)
    EXPECT_TRUE(same_bits(value, pb.at(name))) << name;
  const TensorMap sa = a.optimizer_state(), sb = b.optimizer_state();
  ASSERT_EQ(sa.size(), 8u); // 4 params x (exp_avg, exp_avg_sq)
  for (const auto& [name, value] : sa)
    EXPECT_TRUE(same_bits(value, sb.at(name))) << name;

  // A checkpoint that does not match is one clear error.
  TensorMap partial = pa;
  partial["stray"] = Tensor(ir::Shape({1}));
  write_safetensors(dir / "bad.safetensors", partial);
  try {
    b.load(dir / "bad.safetensors");
    FAIL() << "loaded a mismatched checkpoint";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("missing"), std::string::npos) << m;
    EXPECT_NE(m.find("optim.step"), std::string::npos) << m;
    EXPECT_NE(m.find("unexpected stray"), std::string::npos) << m;
  }
  std::filesystem::remove_all(dir);
}

TEST(Trainer, ReservedBatchNamesAreErrors) {
  Session s;
  Trainer t = s.compile_training(compile::with_loss(mlp(), compile::Loss::softmax_cross_entropy));
  t.set_params(random_params(mlp(), 1));
  auto in = batch(1);
  in[compile::kLearningRate] = Tensor::scalar(1.0f);
  EXPECT_THROW(t.step(in), Error);
}

} // namespace
} // namespace rlx::runtime
