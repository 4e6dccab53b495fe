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

/// The kinds of the ops that write each aliased output (the in-place updates) of a compiled step.
std::vector<ir::OpKind> update_writers(Executable& e) {
  const auto vs = e.variants();
  const ir::Graph& lir = vs.at(0)->compiled->result.lir.graph();
  std::vector<ir::OpKind> out;
  for (const ir::OutputAlias& a : lir.aliases())
    out.push_back(lir.node(lir.outputs()[a.output]).op);
  return out;
}

TEST(Trainer, OptimizerUpdatesRunAsRegionsAndMatchTheUnfusedStep) {
  // The CPU forms elementwise regions by default; the update of every parameter and optimizer
  // state slot is then one region writing its Param in place. The region loop computes each op
  // in f32 with the one-op kernels' math, so SGD (adds and multiplies only) equals the unfused
  // step bit for bit. AdamW's bias corrections 1 - exp(t log beta) run simd::exp (<= 2 ulp) in
  // the region but oneDNN's eltwise exp unfused, so its step size may differ by a few ulp:
  // |delta| <= 1e-6 (1 + |x|) after 5 steps (each update is lr = 0.05 times an O(1) ratio, a few
  // ulp of it is ~1e-8 a step).
  using compile::AdamW;
  using compile::OptimizerSpec;
  using compile::Sgd;
  const std::vector<OptimizerSpec> opts = {
      OptimizerSpec{Sgd{}, 0}, OptimizerSpec{Sgd{0.9, false, 1e-2}, 0},
      OptimizerSpec{Sgd{0.9, true, 1e-3}, 1.0}, OptimizerSpec{AdamW{}, 0},
      OptimizerSpec{AdamW{0.8, 0.99, 1e-6, 0.1}, 0.5}};
  for (const OptimizerSpec& opt : opts) {
    const bool exact = std::holds_alternative<Sgd>(opt.rule);
    SCOPED_TRACE(exact ? "sgd" : "adamw");
    SessionOptions plain;
    plain.cpu.elementwise_regions = false;
    Session fused_session, plain_session(Device::cpu(), plain);
    const ir::Graph model = mlp();
    const ir::Graph with_loss = compile::with_loss(model, compile::Loss::softmax_cross_entropy);
    Trainer fused = fused_session.compile_training(with_loss, options(opt, 0.05));
    Trainer unfused = plain_session.compile_training(with_loss, options(opt, 0.05));
    fused.set_params(random_params(model, 4));
    unfused.set_params(random_params(model, 4));
    auto same = [&](const Tensor& a, const Tensor& b) {
      if (exact)
        return same_bits(a, b);
      for (std::int64_t i = 0; i < a.numel(); ++i)
        if (std::abs(a.get_f64(i) - b.get_f64(i)) > 1e-6 * (1 + std::abs(b.get_f64(i))))
          return false;
      return a.shape() == b.shape();
    };
    for (int i = 1; i <= 5; ++i) {
      const auto in = batch(40 + static_cast<unsigned>(i));
      const double a = fused.step(in), b = unfused.step(in);
      EXPECT_TRUE(same(Tensor::scalar(a), Tensor::scalar(b)))
          << "step " << i << ": " << a << " vs " << b;
    }
    for (const auto& [name, value] : fused.params())
      EXPECT_TRUE(same(value, unfused.params().at(name))) << name;
    for (const auto& [name, value] : fused.optimizer_state())
      EXPECT_TRUE(same(value, unfused.optimizer_state().at(name))) << name;
    const auto writers = update_writers(fused.step_executable());
    EXPECT_EQ(writers.size(), fused.graph().weights.size());
    for (ir::OpKind k : writers)
      EXPECT_EQ(k, ir::OpKind::ElementwiseRegion) << ir::op_name(k);
    for (ir::OpKind k : update_writers(unfused.step_executable()))
      EXPECT_NE(k, ir::OpKind::ElementwiseRegion);
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
