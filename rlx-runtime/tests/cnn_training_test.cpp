// cnn_training_test.cpp: a small CNN (conv-relu-maxpool-conv-relu-avgpool-dense on the 8x8 digits
// as 1x8x8 images) end to end on rlx-cpu: its gradient graph holds the conv / pool backward ops
// (conv2d_grad_input, conv2d_grad_weight, pool2d_grad), the CPU's gradient equals central finite
// differences of the reference interpreter's loss in f64 (the loop kernels) and the reference's
// gradient in f32 (the oneDNN kernels), and Trainer learns the digits with it.
#include "rlx/compile/training.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/runtime/loss.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/session.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

namespace rlx::runtime {
namespace {

using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

const std::string kData = RLX_DIGITS_DIR;

/// x [B, 64] -> [B, 1, 8, 8] -> conv 3x3 (8, pad 1) + relu -> max pool 2x2 -> conv 3x3 (16, pad
/// 1, stride 1) + relu -> avg pool 2x2 -> [B, 64] -> dense 10: output "y".
ir::Graph cnn(DType t, std::int64_t batch) {
  ir::Graph g("cnn");
  ir::Builder b(g);
  NodeId x =
      b.reshape(b.input("x", Shape::of({batch, 64}, t)), {Dim(batch), Dim(1), Dim(8), Dim(8)});
  ir::Conv2dAttrs c;
  c.padding = {1, 1};
  x = b.relu(b.conv2d(x, b.param("conv1.weight", Shape::of({8, 1, 3, 3}, t)),
                      b.param("conv1.bias", Shape::of({8}, t)), c));
  ir::Pool2dAttrs p;
  x = b.pool2d(x, p); // max 2x2 stride 2: [B, 8, 4, 4]
  x = b.relu(b.conv2d(x, b.param("conv2.weight", Shape::of({16, 8, 3, 3}, t)),
                      b.param("conv2.bias", Shape::of({16}, t)), c));
  p.kind = ir::PoolKind::avg;
  x = b.pool2d(x, p); // [B, 16, 2, 2]
  x = b.reshape(x, {Dim(batch), Dim(64)});
  NodeId y = g.add(ir::OpKind::Add,
                   {b.matmul(x, b.param("fc.weight", Shape::of({64, 10}, t))),
                    b.param("fc.bias", Shape::of({10}, t))},
                   ir::NoAttrs{}, "y");
  b.output(y);
  return g;
}

TensorMap init_params(const ir::Graph& g, unsigned seed) {
  std::mt19937 rng(seed);
  TensorMap out;
  for (NodeId id : g.params()) {
    const Shape s = g.shape(id);
    const std::int64_t fan_in = s.rank() == 1 ? 1 : s.numel() / s[0].size();
    std::normal_distribution<double> n(0.0, s.rank() == 1 ? 0.1 : 1.0 / std::sqrt(fan_in));
    Tensor t(s);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, n(rng));
    out[g.node(id).attr<ir::LeafAttrs>().name] = t;
  }
  return out;
}

/// Rows [start, start + n) of \p t ([N, ...]), converted to \p dtype.
Tensor rows(const Tensor& t, std::int64_t start, std::int64_t n, DType dtype) {
  std::vector<std::int64_t> s = t.shape().sizes();
  const std::int64_t row = t.numel() / s[0];
  s[0] = n;
  Tensor r(Shape::of(s, dtype));
  for (std::int64_t i = 0; i < n * row; ++i)
    r.set_f64(i, t.get_f64(start * row + i));
  return r;
}

std::size_t count(const ir::Graph& g, ir::OpKind k) {
  std::size_t n = 0;
  for (NodeId id : g.ids())
    n += g.node(id).op == k;
  return n;
}

TEST(CnnTraining, CpuGradientEqualsFiniteDifferencesAndTheReference) {
  const Tensor xs = read_npy(kData + "/train_x.npy"), ys = read_npy(kData + "/train_y.npy");
  for (DType t : {DType::f64, DType::f32}) {
    SCOPED_TRACE(std::string(ir::dtype_name(t)));
    const std::int64_t batch = 4;
    const ir::Graph model = cnn(t, batch);
    const Tensor labels = rows(ys, 0, batch, DType::i64), x = rows(xs, 0, batch, t);
    const ir::Graph gg = gradient_graph(model, LossKind::xent, labels);
    EXPECT_EQ(count(gg, ir::OpKind::Conv2dGradWeight), 2u);
    EXPECT_EQ(count(gg, ir::OpKind::Conv2dGradInput), 1u); // the image gets no gradient
    EXPECT_EQ(count(gg, ir::OpKind::Pool2dGrad), 2u);
    EXPECT_EQ(count(gg, ir::OpKind::ScatterAdd), 0u);
    TensorMap params = init_params(model, 7);
    Session s;
    Executable e = s.compile(gg);
    e.set_params(params);
    const auto out = e.run({{"x", x}});
    const auto& names = e.output_names();
    const std::vector<Tensor> want = ir::reference::evaluate(gg, {{"x", x}}, params);
    ASSERT_EQ(names.size(), want.size());
    const double tol = t == DType::f64 ? 1e-10 : 2e-4;
    for (std::size_t i = 0; i < names.size(); ++i) {
      const Tensor& got = out.at(names[i]);
      for (std::int64_t k = 0; k < got.numel(); ++k)
        ASSERT_NEAR(got.get_f64(k), want[i].get_f64(k), tol * (1 + std::abs(want[i].get_f64(k))))
            << names[i] << "[" << k << "]";
    }
    if (t != DType::f64)
      continue;
    // Central differences of the loss (reference interpreter, f64) on sampled elements.
    const ir::Graph lg = with_loss(model, LossKind::xent, labels);
    auto loss = [&](const TensorMap& p) {
      return ir::reference::evaluate(lg, {{"x", x}}, p).at(0).get_f64(0);
    };
    std::size_t gi = 1, checked = 0;
    for (NodeId id : model.params()) {
      const std::string name = model.node(id).attr<ir::LeafAttrs>().name;
      const Tensor& grad = out.at(names[gi++]);
      for (std::int64_t k = 0; k < grad.numel(); k += std::max<std::int64_t>(1, grad.numel() / 5)) {
        TensorMap p = params;
        const double h = 1e-5, v = params.at(name).get_f64(k);
        p.at(name).set_f64(k, v + h);
        const double up = loss(p);
        p.at(name).set_f64(k, v - h);
        const double down = loss(p);
        p.at(name).set_f64(k, v); // a Tensor copy may share its bytes with params'
        const double fd = (up - down) / (2 * h);
        EXPECT_NEAR(grad.get_f64(k), fd, 1e-6 * (1 + std::abs(fd))) << name << "[" << k << "]";
        ++checked;
      }
    }
    EXPECT_GE(checked, 30u);
  }
}

TEST(CnnTraining, TrainerLearnsTheDigits) {
  const Tensor xs = read_npy(kData + "/train_x.npy"), ys = read_npy(kData + "/train_y.npy");
  const Tensor tx = read_npy(kData + "/test_x.npy"), ty = read_npy(kData + "/test_y.npy");
  const std::int64_t batch = 32, steps = 120;
  const ir::Graph model = cnn(DType::f32, batch);
  Session s;
  TrainerOptions o;
  o.training.optimizer = {compile::AdamW{}, 0};
  o.schedule.base_lr = 0.01;
  Trainer tr =
      s.compile_training(compile::with_loss(model, compile::Loss::softmax_cross_entropy), o);
  tr.set_params(init_params(model, 3));
  const std::int64_t n = xs.shape()[0].size();
  std::vector<double> losses;
  for (std::int64_t i = 0; i < steps; ++i) {
    const std::int64_t start = (i * batch) % (n - batch);
    losses.push_back(tr.step({{"x", rows(xs, start, batch, DType::f32)},
                              {"labels", rows(ys, start, batch, DType::i64)}}));
    ASSERT_TRUE(std::isfinite(losses.back())) << "step " << i;
  }
  auto mean = [&](std::size_t from, std::size_t to) {
    double m = 0;
    for (std::size_t i = from; i < to; ++i)
      m += losses[i];
    return m / static_cast<double>(to - from);
  };
  EXPECT_LT(mean(losses.size() - 10, losses.size()), 0.3 * mean(0, 10));
  // Test accuracy with an inference executable reading the trained weights.
  CompileOptions shared;
  shared.weights = tr.weights();
  Executable infer = s.compile(model, shared);
  std::int64_t right = 0, seen = 0;
  for (std::int64_t start = 0; start + batch <= tx.shape()[0].size(); start += batch) {
    const Tensor y = infer.run({{"x", rows(tx, start, batch, DType::f32)}}).at("y");
    for (std::int64_t r = 0; r < batch; ++r) {
      std::int64_t best = 0;
      for (std::int64_t c = 1; c < 10; ++c)
        if (y.get_f64(r * 10 + c) > y.get_f64(r * 10 + best))
          best = c;
      right += best == ty.get_i64(start + r);
      ++seen;
    }
  }
  EXPECT_GE(static_cast<double>(right) / static_cast<double>(seen), 0.85) << right << "/" << seen;
}

} // namespace
} // namespace rlx::runtime
