// optimizer_test.cpp: the training step graph (build_training_graph) run by the reference
// interpreter in f64 over several steps, against hand-written double-precision optimizers (torch's
// definitions of SGD with momentum / Nesterov / weight decay, AdamW, clip_grad_norm_), plus the
// hyper-parameter checks and the learning-rate schedules.
#include "rlx/compile/training.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <random>

namespace rlx::compile {
namespace {

using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;
using Vec = std::vector<double>;

/// loss = sum(a * xa) + sum(b * xb) + 0.5 (sum(a^2) + sum(b^2)), so d loss / d a = xa + a.
Graph quadratic_model() {
  Graph g("quad");
  Builder b(g);
  const auto f = ir::DType::f64;
  NodeId xa = b.input("xa", Shape({3}, f));
  NodeId xb = b.input("xb", Shape({2, 2}, f));
  NodeId a = b.param("a", Shape({3}, f));
  NodeId w = b.param("b", Shape({2, 2}, f));
  NodeId lin = b.add(b.sum(b.mul(a, xa), {0}), b.sum(b.mul(w, xb), {0, 1}));
  NodeId sq = b.add(b.sum(b.mul(a, a), {0}), b.sum(b.mul(w, w), {0, 1}));
  g.set_outputs({b.add(lin, b.mul(b.scalar(0.5, f), sq))});
  return g;
}

Tensor tensor(const Shape& s, const Vec& v) {
  Tensor t(s);
  for (std::size_t i = 0; i < v.size(); ++i)
    t.set_f64(static_cast<std::int64_t>(i), v[i]);
  return t;
}

Vec values(const Tensor& t) {
  Vec v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = t.get_f64(static_cast<std::int64_t>(i));
  return v;
}

/// The hand-written optimizer over the params' concatenated elements (torch semantics).
struct Reference {
  OptimizerSpec spec;
  Vec p, buf, m, v;
  std::int64_t t = 0;

  void step(Vec g, double lr) {
    ++t;
    if (spec.clip_grad_norm > 0) {
      double sq = 0;
      for (double x : g)
        sq += x * x;
      double coef = std::min(1.0, spec.clip_grad_norm / (std::sqrt(sq) + 1e-6));
      for (double& x : g)
        x *= coef;
    }
    if (const auto* s = std::get_if<Sgd>(&spec.rule)) {
      for (std::size_t i = 0; i < p.size(); ++i) {
        double gi = g[i] + s->weight_decay * p[i];
        if (s->momentum != 0) {
          buf[i] = t == 1 ? gi : s->momentum * buf[i] + gi; // torch's first step copies g
          gi = s->nesterov ? gi + s->momentum * buf[i] : buf[i];
        }
        p[i] -= lr * gi;
      }
      return;
    }
    const auto& a = std::get<AdamW>(spec.rule);
    const double bc1 = 1 - std::pow(a.beta1, static_cast<double>(t));
    const double bc2 = 1 - std::pow(a.beta2, static_cast<double>(t));
    for (std::size_t i = 0; i < p.size(); ++i) {
      p[i] *= 1 - lr * a.weight_decay;
      m[i] = a.beta1 * m[i] + (1 - a.beta1) * g[i];
      v[i] = a.beta2 * v[i] + (1 - a.beta2) * g[i] * g[i];
      p[i] -= lr / bc1 * m[i] / (std::sqrt(v[i]) / std::sqrt(bc2) + a.eps);
    }
  }
};

void run_steps(const OptimizerSpec& spec, int steps = 6) {
  TrainingOptions o;
  o.optimizer = spec;
  TrainingGraph tg = build_training_graph(quadratic_model(), o);
  const Shape sa({3}, ir::DType::f64), sb({2, 2}, ir::DType::f64);

  std::mt19937 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  auto random = [&](std::size_t n) {
    Vec r(n);
    for (double& x : r)
      x = u(rng);
    return r;
  };
  Reference ref{spec, random(7), Vec(7, 0), Vec(7, 0), Vec(7, 0)};
  ir::reference::TensorMap weights;
  weights["a"] = tensor(sa, Vec(ref.p.begin(), ref.p.begin() + 3));
  weights["b"] = tensor(sb, Vec(ref.p.begin() + 3, ref.p.end()));
  for (const WeightSlot& w : tg.weights)
    if (w.state)
      weights[w.name] = Tensor(w.shape);

  for (int s = 1; s <= steps; ++s) {
    const double lr = s <= 3 ? 0.1 * s : 0.05; // a changing rate: no recompile, just an input
    Vec xa = random(3), xb = random(4);
    ir::reference::TensorMap in{{"xa", tensor(sa, xa)},
                                {"xb", tensor(sb, xb)},
                                {kLearningRate, Tensor::scalar(static_cast<float>(lr))},
                                {kStepCount, Tensor::scalar(static_cast<float>(s))}};
    std::vector<Tensor> out = ir::reference::evaluate(tg.step, in, weights);
    // The loss of the parameters before the update.
    Vec x = xa;
    x.insert(x.end(), xb.begin(), xb.end());
    double loss = 0;
    Vec g(7);
    for (std::size_t i = 0; i < 7; ++i) {
      loss += ref.p[i] * x[i] + 0.5 * ref.p[i] * ref.p[i];
      g[i] = x[i] + ref.p[i];
    }
    EXPECT_NEAR(out[0].get_f64(0), loss, 1e-12 * (1 + std::abs(loss))) << "step " << s;
    ref.step(g, static_cast<float>(lr)); // the graph reads the rate as f32
    for (const WeightSlot& w : tg.weights)
      weights[w.name] = out[w.output];
    Vec got = values(weights["a"]);
    Vec gb = values(weights["b"]);
    got.insert(got.end(), gb.begin(), gb.end());
    for (std::size_t i = 0; i < 7; ++i)
      EXPECT_NEAR(got[i], ref.p[i], 1e-12 * (1 + std::abs(ref.p[i])))
          << "step " << s << " element " << i;
  }
}

TEST(Optimizer, PlainSgd) {
  run_steps({Sgd{}, 0});
}
TEST(Optimizer, SgdMomentumWeightDecay) {
  run_steps({Sgd{0.9, false, 0.01}, 0});
}
TEST(Optimizer, SgdNesterov) {
  run_steps({Sgd{0.8, true, 0.05}, 0});
}
TEST(Optimizer, AdamW) {
  run_steps({AdamW{0.9, 0.999, 1e-8, 0.01}, 0});
}
TEST(Optimizer, AdamWNoDecayOtherBetas) {
  run_steps({AdamW{0.5, 0.9, 1e-3, 0}, 0});
}
TEST(Optimizer, ClippingByGlobalNorm) {
  // The gradients' norm is about 2-3, so 0.5 clips every step.
  run_steps({Sgd{0.9, false, 0}, 0.5});
  run_steps({AdamW{}, 0.5});
}

TEST(Optimizer, StepGraphShape) {
  TrainingOptions o;
  o.optimizer.rule = AdamW{};
  TrainingGraph tg = build_training_graph(quadratic_model(), o);
  // 2 params + 2 x 2 state tensors, each aliased to its output.
  ASSERT_EQ(tg.weights.size(), 6u);
  ASSERT_EQ(tg.step.aliases().size(), 6u);
  EXPECT_EQ(tg.step.outputs().size(), 7u);
  for (const WeightSlot& w : tg.weights) {
    EXPECT_TRUE(tg.step.find_leaf(w.name, true).valid()) << w.name;
    EXPECT_EQ(tg.step.shape(tg.step.outputs()[w.output]), w.shape);
  }
  EXPECT_EQ(tg.weights[2].name, "optim.a.exp_avg");
  EXPECT_EQ(tg.weights[2].param, "a");
  EXPECT_TRUE(tg.step.find_leaf(kLearningRate).valid());
  EXPECT_TRUE(tg.step.find_leaf(kStepCount).valid());
}

void expect_training_error(const OptimizerSpec& spec, const std::string& fragment) {
  TrainingOptions o;
  o.optimizer = spec;
  try {
    build_training_graph(quadratic_model(), o);
    FAIL() << "accepted (" << fragment << ")";
  } catch (const TrainingCompileError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Optimizer, BadHyperParametersAreErrors) {
  expect_training_error({Sgd{-0.1, false, 0}, 0}, "momentum");
  expect_training_error({Sgd{0, true, 0}, 0}, "Nesterov");
  expect_training_error({Sgd{0, false, -1}, 0}, "weight_decay");
  expect_training_error({AdamW{1.0, 0.999, 1e-8, 0}, 0}, "beta1");
  expect_training_error({AdamW{0.9, 0.999, 0, 0}, 0}, "eps");
  expect_training_error({Sgd{}, -1}, "clip_grad_norm");
  expect_training_error({Sgd{}, std::nan("")}, "clip_grad_norm");
}

TEST(Optimizer, BadModelsAreErrors) {
  TrainingOptions o;
  o.loss_output = 3;
  EXPECT_THROW(build_training_graph(quadratic_model(), o), TrainingCompileError);
  o = {};
  o.train = {"nope"};
  EXPECT_THROW(build_training_graph(quadratic_model(), o), TrainingCompileError);
  Graph g("reserved");
  Builder b(g);
  NodeId x = b.input(kLearningRate, Shape({2}));
  NodeId w = b.param("w", Shape({2}));
  g.set_outputs({b.sum(b.mul(x, w), {0})});
  EXPECT_THROW(build_training_graph(g, {}), TrainingCompileError);
}

TEST(LrSchedule, ConstantAndWarmupCosine) {
  LrSchedule c;
  c.base_lr = 0.3;
  EXPECT_DOUBLE_EQ(c.at(1), 0.3);
  EXPECT_DOUBLE_EQ(c.at(1000), 0.3);
  LrSchedule s{LrSchedule::Kind::warmup_cosine, 1.0, 10, 110, 0.1};
  EXPECT_DOUBLE_EQ(s.at(1), 0.1);
  EXPECT_DOUBLE_EQ(s.at(5), 0.5);
  EXPECT_DOUBLE_EQ(s.at(10), 1.0);
  EXPECT_NEAR(s.at(60), 0.1 + 0.9 * 0.5, 1e-12); // half way through the decay
  EXPECT_NEAR(s.at(110), 0.1, 1e-12);
  EXPECT_NEAR(s.at(500), 0.1, 1e-12); // clamped after the end
  for (std::int64_t t = 11; t < 110; ++t)
    EXPECT_LE(s.at(t + 1), s.at(t));
}

} // namespace
} // namespace rlx::compile
