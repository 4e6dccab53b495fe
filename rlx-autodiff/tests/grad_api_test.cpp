// grad_api_test.cpp: the contract of grad_with_loss: output order, forward values reused, missing
// gradients by option, clear errors, fan-out, control flow and CustomFn, Split / Get.
#include "fd.hpp"

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/reference.hpp"
#include "testing/random_tensor.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <random>

namespace {

using namespace rlx;
using autodiff::AutodiffError;
using autodiff::GradOptions;
using autodiff::MissingGradient;
using autodiff::Wrt;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

using ir::testing::uniform_tensor;

std::size_t count(const Graph& g, OpKind k) {
  std::size_t n = 0;
  for (const auto& node : g.nodes())
    n += node.op == k;
  return n;
}

/// loss = sum(tanh(x W) * c) with x an Input, W a Param, c an unused-by-default Param.
Graph tanh_layer(bool use_c) {
  Graph g("tanh_layer");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3, 4}, DType::f64));
  NodeId w = b.param("w", Shape::of({4, 5}, DType::f64));
  NodeId c = b.param("c", Shape::of({5}, DType::f64));
  NodeId y = b.tanh(b.matmul(x, w));
  b.output(b.sum(use_c ? b.mul(y, c) : y, {}));
  return g;
}

TEST(GradWithLoss, LossFirstThenGradientsInWrtOrder) {
  Graph g = tanh_layer(true);
  Graph gg = autodiff::grad_with_loss(g, {Wrt{"c", true}, Wrt{"x", false}, Wrt{"w", true}});
  ASSERT_EQ(gg.outputs().size(), 4u);
  EXPECT_EQ(gg.shape(gg.outputs()[0]), Shape::scalar(DType::f64));
  EXPECT_EQ(gg.shape(gg.outputs()[1]), Shape::of({5}, DType::f64));
  EXPECT_EQ(gg.shape(gg.outputs()[2]), Shape::of({3, 4}, DType::f64));
  EXPECT_EQ(gg.shape(gg.outputs()[3]), Shape::of({4, 5}, DType::f64));
  // The interface is the forward's: same inputs and params.
  EXPECT_EQ(gg.inputs().size(), 1u);
  EXPECT_EQ(gg.params().size(), 2u);
  TensorMap in{{"x", uniform_tensor(Shape::of({3, 4}, DType::f64), 1)}};
  TensorMap pa{{"w", uniform_tensor(Shape::of({4, 5}, DType::f64), 2)},
               {"c", uniform_tensor(Shape::of({5}, DType::f64), 3)}};
  auto want_loss = ir::reference::evaluate(g, in, pa).at(0);
  auto out = ir::reference::evaluate(gg, in, pa);
  EXPECT_TRUE(out[0].identical(want_loss));
  // d loss / d c = column sums of tanh(x W)
  auto y = ir::reference::evaluate(
      [] {
        Graph h;
        Builder b(h);
        b.output(b.sum(b.tanh(b.matmul(b.input("x", Shape::of({3, 4}, DType::f64)),
                                       b.param("w", Shape::of({4, 5}, DType::f64)))),
                       {0}));
        return h;
      }(),
      in, pa);
  EXPECT_LT(ir::max_abs_diff(out[1], y.at(0)), 1e-14);
}

TEST(GradWithLoss, ForwardValuesAreReusedNotRecomputed) {
  // One Tanh (the forward's; its derivative reads y) and one forward MatMul plus the two backward
  // ones: a second forward copy would add a Tanh and a MatMul.
  Graph gg = autodiff::grad_with_loss(tanh_layer(true), {Wrt{"x", false}, Wrt{"w", true}});
  EXPECT_EQ(count(gg, OpKind::Tanh), 1u);
  EXPECT_EQ(count(gg, OpKind::MatMul), 3u);
}

TEST(GradWithLoss, NormsAndSoftmaxEmitTheirBackwardOps) {
  // One backward op per norm / softmax (rlx-ir's "backward ops"), gradients read through gets,
  // and none of the primitive chain they replace (no Rsqrt: the forward holds none either).
  Graph g("norms");
  Builder b(g);
  const Shape s = Shape::of({2, 3, 8}, DType::f64);
  const Shape v = Shape::of({8}, DType::f64);
  NodeId x = b.param("x", s);
  NodeId y = b.layer_norm(x, b.param("g1", v), b.param("b1", v));
  y = b.rms_norm(y, b.param("g2", v));
  y = b.softmax(b.log_softmax(y, 1), -1);
  b.output(b.sum(b.mul(y, b.input("w", s)), {}));
  Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
  EXPECT_EQ(count(gg, OpKind::LayerNormGrad), 1u);
  EXPECT_EQ(count(gg, OpKind::RmsNormGrad), 1u);
  EXPECT_EQ(count(gg, OpKind::SoftmaxGrad), 1u);
  EXPECT_EQ(count(gg, OpKind::LogSoftmaxGrad), 1u);
  EXPECT_EQ(count(gg, OpKind::Rsqrt), 0u);
  EXPECT_EQ(count(gg, OpKind::Get), 5u); // dx, dgamma, dbeta; dx, dgamma
  // The gradients are the finite differences' (the op's decompositions through the reference).
  TensorMap in{{"w", uniform_tensor(s, 3)}}, pa{{"x", uniform_tensor(s, 4)},
                                                {"g1", uniform_tensor(v, 5)},
                                                {"b1", uniform_tensor(v, 6)},
                                                {"g2", uniform_tensor(v, 7)}};
  const autodiff::testing::WeightedLoss l = autodiff::testing::weighted_sum_loss(g, 11);
  const auto r = autodiff::testing::check_gradients(l, in, pa, autodiff::float_params(g));
  EXPECT_LE(r.max_err, 1e-6) << r.worst;
  EXPECT_GT(r.checked, 0);
}

TEST(GradWithLoss, ConvAndPoolEmitTheirBackwardOps) {
  // conv / pool backward: conv2d (stride 2, padding, groups, bias) -> relu -> max pool (padded,
  // overlapping) -> conv2d (dilation) -> avg pool: conv2d_grad_weight for both weights,
  // conv2d_grad_input for the second conv only (the image x is not differentiated), one
  // pool2d_grad per pool, no im2col Gather / ScatterAdd left. Then the gradients against finite
  // differences.
  Graph g("cnn");
  Builder b(g);
  const DType t = DType::f64;
  ir::Conv2dAttrs c1;
  c1.stride = {2, 2};
  c1.padding = {1, 1};
  c1.groups = 2;
  NodeId x = b.input("x", Shape::of({2, 4, 9, 9}, t));
  NodeId h = b.relu(
      b.conv2d(x, b.param("w1", Shape::of({6, 2, 3, 3}, t)), b.param("b1", Shape::of({6}, t)), c1));
  ir::Pool2dAttrs p1;
  p1.kernel = {3, 3};
  p1.stride = {1, 1};
  p1.padding = {1, 1};
  h = b.pool2d(h, p1);
  ir::Conv2dAttrs c2;
  c2.dilation = {2, 1};
  h = b.conv2d(h, b.param("w2", Shape::of({3, 6, 2, 2}, t)), {}, c2);
  ir::Pool2dAttrs p2;
  p2.kind = ir::PoolKind::avg;
  p2.kernel = {2, 2};
  p2.stride = {1, 2};
  b.output(b.sum(b.pool2d(h, p2), {}));
  Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
  EXPECT_EQ(count(gg, OpKind::Conv2dGradWeight), 2u);
  EXPECT_EQ(count(gg, OpKind::Conv2dGradInput), 1u);
  EXPECT_EQ(count(gg, OpKind::Pool2dGrad), 2u);
  EXPECT_EQ(count(gg, OpKind::Gather), 0u);
  EXPECT_EQ(count(gg, OpKind::ScatterAdd), 0u);
  TensorMap in{{"x", uniform_tensor(Shape::of({2, 4, 9, 9}, t), 4)}},
      pa{{"w1", uniform_tensor(Shape::of({6, 2, 3, 3}, t), 5)},
         {"b1", uniform_tensor(Shape::of({6}, t), 6)},
         {"w2", uniform_tensor(Shape::of({3, 6, 2, 2}, t), 7)}};
  const autodiff::testing::WeightedLoss l = autodiff::testing::weighted_sum_loss(g, 12);
  const auto res = autodiff::testing::check_gradients(l, in, pa, autodiff::float_params(g));
  EXPECT_LE(res.max_err, 1e-6) << res.worst;
  EXPECT_GT(res.checked, 0);
}

TEST(GradWithLoss, AttentionRopeAndCrossEntropyEmitTheirBackwardOps) {
  // backward ops 2: rope -> rope_grad, attention (causal, GQA, softcap) -> one attention_grad
  // (dq, dk, dv through gets; no Softmax recomputed in primitives), softmax_cross_entropy ->
  // softmax_cross_entropy_grad. Then the gradients against finite differences.
  Graph g("attn_xent");
  Builder b(g);
  const DType t = DType::f64;
  ir::RopeAttrs r;
  r.style = ir::RopeStyle::interleaved;
  r.position_offset = 2;
  NodeId q = b.rope(b.param("q", Shape::of({1, 5, 4, 4}, t)), r);
  NodeId k = b.rope(b.param("k", Shape::of({1, 5, 2, 4}, t)), r);
  NodeId v = b.param("v", Shape::of({1, 5, 2, 4}, t));
  ir::AttentionAttrs a;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.mask = ir::MaskKind::causal;
  a.softcap = 1.5;
  NodeId o = b.reshape(b.attention(q, k, v, a), {ir::Dim(20), ir::Dim(4)});
  b.output(b.sum(b.softmax_cross_entropy(o, b.input("labels", Shape::of({20}, DType::i64))), {}));
  Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
  EXPECT_EQ(count(gg, OpKind::RopeGrad), 2u);
  EXPECT_EQ(count(gg, OpKind::AttentionGrad), 1u);
  EXPECT_EQ(count(gg, OpKind::SoftmaxCrossEntropyGrad), 1u);
  EXPECT_EQ(count(gg, OpKind::Softmax), 0u);
  EXPECT_EQ(count(gg, OpKind::Gather), 0u);
  Tensor labels(Shape::of({20}, DType::i64));
  for (std::int64_t i = 0; i < 20; ++i)
    labels.set_f64(i, static_cast<double>((i * 7) % 4));
  TensorMap in{{"labels", labels}}, pa{{"q", uniform_tensor(Shape::of({1, 5, 4, 4}, t), 1)},
                                       {"k", uniform_tensor(Shape::of({1, 5, 2, 4}, t), 2)},
                                       {"v", uniform_tensor(Shape::of({1, 5, 2, 4}, t), 3)}};
  const autodiff::testing::WeightedLoss l = autodiff::testing::weighted_sum_loss(g, 11);
  const auto res = autodiff::testing::check_gradients(l, in, pa, autodiff::float_params(g));
  EXPECT_LE(res.max_err, 1e-6) << res.worst;
  EXPECT_GT(res.checked, 0);
}

TEST(GradWithLoss, AttentionBiasThatWantsAGradientTakesThePrimitiveForm) {
  // dbias is dS in full, which attention_grad never forms: the rule differentiates attention's
  // primitive form then; a bias that wants no gradient still gets attention_grad.
  for (bool bias_grad : {true, false}) {
    Graph g("attn_bias");
    Builder b(g);
    const Shape s = Shape::of({1, 3, 2, 4}, DType::f64);
    NodeId bias = bias_grad ? b.param("bias", Shape::of({3, 3}, DType::f64))
                            : b.input("bias", Shape::of({3, 3}, DType::f64));
    ir::AttentionAttrs a;
    a.num_heads = 2;
    a.num_kv_heads = 2;
    a.mask = ir::MaskKind::bias;
    b.output(b.sum(b.attention(b.param("q", s), b.param("k", s), b.param("v", s), a, bias), {}));
    Graph gg = autodiff::grad_with_loss(g, autodiff::float_params(g));
    EXPECT_EQ(count(gg, OpKind::AttentionGrad), bias_grad ? 0u : 1u);
  }
}

TEST(GradWithLoss, WeightGradientOfABatchedMatMulIsOneGemmOverTheRows) {
  // x [2, 3, 4] against a shared weight: dW contracts the batch with the rows (one MatMul of
  // the flattened rows), not a batched product summed over the batch afterwards.
  for (bool tb : {false, true}) {
    Graph g("shared_weight");
    Builder b(g);
    NodeId x = b.input("x", Shape::of({2, 3, 4}, DType::f64));
    NodeId w = b.param("w", tb ? Shape::of({5, 4}, DType::f64) : Shape::of({4, 5}, DType::f64));
    b.output(b.sum(b.tanh(b.matmul(x, w, false, tb)), {}));
    Graph gg = autodiff::grad_with_loss(g, {Wrt{"w", true}});
    EXPECT_EQ(count(gg, OpKind::MatMul), 2u) << tb;
    EXPECT_EQ(count(gg, OpKind::Reduce), 1u) << tb; // the loss's sum only
    TensorMap in{{"x", uniform_tensor(g.shape(x), 8)}}, pa{{"w", uniform_tensor(g.shape(w), 9)}};
    const autodiff::testing::WeightedLoss l = autodiff::testing::weighted_sum_loss(g, 11);
    const auto r = autodiff::testing::check_gradients(l, in, pa, {Wrt{"w", true}});
    EXPECT_LE(r.max_err, 1e-6) << tb << ": " << r.worst;
  }
}

TEST(GradWithLoss, FanOutAccumulates) {
  // loss = sum(x * x + sin(x)) -> 2x + cos(x)
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({6}, DType::f64));
  b.output(b.sum(b.add(b.mul(x, x), b.sin(x)), {}));
  Graph gg = autodiff::grad_with_loss(g, std::vector<NodeId>{x});
  Tensor xv = uniform_tensor(Shape::of({6}, DType::f64), 4);
  auto out = ir::reference::evaluate(gg, {{"x", xv}});
  for (std::int64_t i = 0; i < 6; ++i)
    EXPECT_NEAR(out[1].get_f64(i), 2 * xv.get_f64(i) + std::cos(xv.get_f64(i)), 1e-14);
}

TEST(GradWithLoss, MissingGradientIsAnErrorOrZerosByOption) {
  Graph g = tanh_layer(false);
  try {
    autodiff::grad_with_loss(g, {Wrt{"w", true}, Wrt{"c", true}});
    FAIL() << "expected AutodiffError";
  } catch (const AutodiffError& e) {
    EXPECT_NE(std::string(e.what()).find("'c'"), std::string::npos) << e.what();
  }
  GradOptions opts;
  opts.on_missing = MissingGradient::zeros;
  Graph gg = autodiff::grad_with_loss(g, {Wrt{"w", true}, Wrt{"c", true}}, opts);
  auto out = ir::reference::evaluate(gg, {{"x", uniform_tensor(Shape::of({3, 4}, DType::f64), 1)}},
                                     {{"w", uniform_tensor(Shape::of({4, 5}, DType::f64), 2)},
                                      {"c", uniform_tensor(Shape::of({5}, DType::f64), 3)}});
  EXPECT_TRUE(out[2].identical(Tensor(Shape::of({5}, DType::f64))));
}

TEST(GradWithLoss, ReachedOnlyThroughNonDifferentiableOps) {
  // w reaches the loss only through ArgMax and Compare: no gradient, never a crash.
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4}));
  NodeId w = b.param("w", Shape::of({4}));
  NodeId idx = b.argmax(b.mul(x, w), 0);
  NodeId pos = b.cast(b.compare(ir::CmpOp::gt, w, b.scalar(0)), DType::f32);
  b.output(b.add(b.sum(b.mul(x, pos), {}), b.cast(idx, DType::f32)));
  EXPECT_THROW(autodiff::grad_with_loss(g, {Wrt{"w", true}}), AutodiffError);
  GradOptions opts;
  opts.on_missing = MissingGradient::zeros;
  Graph gg = autodiff::grad_with_loss(g, {Wrt{"w", true}, Wrt{"x", false}}, opts);
  auto out = ir::reference::evaluate(gg, {{"x", Tensor::from<float>({4}, {1, 2, 3, 4})}},
                                     {{"w", Tensor::from<float>({4}, {1, -1, 1, -1})}});
  EXPECT_TRUE(out[1].identical(Tensor(Shape::of({4}))));
  EXPECT_TRUE(out[2].identical(Tensor::from<float>({4}, {1, 0, 1, 0})));
}

TEST(GradWithLoss, ClearErrors) {
  Graph g = tanh_layer(true);
  EXPECT_THROW(autodiff::grad_with_loss(g, {Wrt{"nope", true}}), AutodiffError);
  EXPECT_THROW(autodiff::grad_with_loss(g, {Wrt{"x", true}}), AutodiffError); // x is an input
  GradOptions opts;
  opts.loss_output = 3;
  EXPECT_THROW(autodiff::grad_with_loss(g, {Wrt{"w", true}}, opts), AutodiffError);
  // a non-scalar loss
  Graph v;
  Builder b(v);
  b.output(b.tanh(b.param("p", Shape::of({3}))));
  EXPECT_THROW(autodiff::grad_with_loss(v, {Wrt{"p", true}}), AutodiffError);
  // an integer wrt
  Graph i;
  Builder bi(i);
  NodeId n = bi.input("n", Shape::of({3}, DType::i32));
  bi.output(bi.sum(bi.cast(n, DType::f32), {}));
  EXPECT_THROW(autodiff::grad_with_loss(i, {Wrt{"n", false}}), AutodiffError);
  // a custom op (not differentiable) between the wrt and the loss
  ir::CustomOpDef def;
  def.name = "autodiff_test.identity";
  def.infer = [](std::span<const Shape> in, const ir::CustomAttrs&) { return in[0]; };
  def.reference = [](std::span<const Tensor> in, const ir::CustomAttrs&, const Shape&) {
    return in[0].clone();
  };
  if (!ir::CustomOpRegistry::global().find(def.name))
    ir::CustomOpRegistry::global().add(def);
  Graph c;
  Builder bc(c);
  NodeId p = bc.param("p", Shape::of({3}));
  bc.output(bc.sum(bc.custom("autodiff_test.identity", {p}), {}));
  try {
    autodiff::grad_with_loss(c, {Wrt{"p", true}});
    FAIL() << "expected AutodiffError";
  } catch (const AutodiffError& e) {
    EXPECT_NE(std::string(e.what()).find("no VJP rule"), std::string::npos) << e.what();
  }
  // a wrt id that is not a leaf
  EXPECT_THROW(autodiff::grad_with_loss(g, std::vector<NodeId>{g.outputs()[0]}), AutodiffError);
}

TEST(GradWithLoss, LossOutputOption) {
  Graph g;
  Builder b(g);
  NodeId p = b.param("p", Shape::of({3}, DType::f64));
  b.output(b.exp(p));
  b.output(b.sum(b.mul(p, p), {}));
  GradOptions opts;
  opts.loss_output = 1;
  Graph gg = autodiff::grad_with_loss(g, {Wrt{"p", true}}, opts);
  ASSERT_EQ(gg.outputs().size(), 2u);
  Tensor pv = Tensor::from<double>({3}, {1, -2, 3});
  auto out = ir::reference::evaluate(gg, {}, {{"p", pv}});
  EXPECT_TRUE(out[1].identical(Tensor::from<double>({3}, {2, -4, 6})));
}

/// FD check of a whole small graph in f64.
void expect_fd(const Graph& g, const TensorMap& in, const TensorMap& pa) {
  auto l = autodiff::testing::weighted_sum_loss(g, 11);
  auto wrt = autodiff::testing::differentiable_leaves(l.loss);
  ASSERT_FALSE(wrt.empty());
  auto r = autodiff::testing::check_gradients(l, in, pa, wrt, 32);
  EXPECT_LE(r.max_err, 1e-6) << r.worst;
  EXPECT_GT(r.checked, 0);
  EXPECT_EQ(r.kinks, 0);
}

TEST(GradWithLoss, IfTakesTheBackwardOfTheTakenBranch) {
  for (bool pred : {true, false}) {
    Shape t = Shape::of({4}, DType::f64);
    Graph then_b("then"), else_b("else");
    {
      Builder b(then_b);
      NodeId x = b.input("x", t), y = b.input("y", t);
      b.output(b.mul(b.sin(x), y));
    }
    {
      Builder b(else_b);
      NodeId x = b.input("x", t);
      b.input("y", t);
      b.output(b.exp(x));
    }
    Graph g;
    Builder b(g);
    NodeId p = b.input("p", Shape::scalar(DType::boolean));
    NodeId x = b.input("x", t), y = b.param("y", t);
    b.output(b.if_(p, {x, y}, then_b, else_b));
    TensorMap in{{"p", Tensor::scalar<bool>(pred)}, {"x", uniform_tensor(t, 5)}};
    expect_fd(g, in, {{"y", uniform_tensor(t, 6)}});
  }
}

TEST(GradWithLoss, CustomFnUsesItsVjpBodyOrItsInlinedBody) {
  Shape t = Shape::of({5}, DType::f64);
  Graph body("body");
  {
    Builder b(body);
    NodeId x = b.input("x", t);
    b.output(b.mul(x, b.sigmoid(x)));
  }
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", t);
  b.output(b.custom_fn({x}, body));
  Tensor xv = uniform_tensor(t, 7);
  expect_fd(g, {{"x", xv}}, {});
  // A custom VJP body (deliberately not the derivative: 3 * d_output) is what the gradient uses.
  Graph vjp("vjp");
  {
    Builder bv(vjp);
    bv.input("x", t);
    NodeId d = bv.input("d_output", t);
    bv.output(bv.mul(d, bv.scalar(3, DType::f64)));
  }
  Graph g2;
  Builder b2(g2);
  NodeId x2 = b2.input("x", t);
  b2.output(b2.sum(b2.custom_fn({x2}, body, vjp), {}));
  auto out = ir::reference::evaluate(autodiff::grad_with_loss(g2, {Wrt{"x", false}}), {{"x", xv}});
  for (std::int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(out[1].get_f64(i), 3.0);
}

TEST(GradWithLoss, SplitAndGet) {
  // one part unused (its gradient is zeros), one used twice
  Shape t = Shape::of({2, 7}, DType::f64);
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", t);
  auto parts = b.parts(b.split(x, 1, {2, 3, 2}));
  NodeId again = b.get(b.graph().node(parts[0]).inputs[0], 2);
  b.output(b.add(b.concat({b.tanh(parts[0]), b.exp(parts[2])}, 1), b.concat({again, again}, 1)));
  expect_fd(g, {{"x", uniform_tensor(t, 8)}}, {});
}

TEST(GradWithLoss, WhileIsUnrolledByThePrepass) {
  // carries (i, x, w): while i < 3: (i + 1, tanh(x * w) + x, w); the loop's value is x
  Shape t = Shape::of({4}, DType::f64), it = Shape::scalar(DType::i64);
  Graph cond("cond"), body("body");
  {
    Builder b(cond);
    NodeId i = b.input("i", it);
    b.input("x", t);
    b.input("w", t);
    b.output(b.compare(ir::CmpOp::lt, i, b.scalar(3, DType::i64)));
  }
  {
    Builder b(body);
    NodeId i = b.input("i", it), x = b.input("x", t), w = b.input("w", t);
    b.output(b.add(i, b.scalar(1, DType::i64)));
    b.output(b.add(b.tanh(b.mul(x, w)), x));
    b.output(w);
  }
  Graph g;
  Builder b(g);
  NodeId i0 = b.input("i0", it);
  NodeId x = b.input("x", t), w = b.param("w", t);
  b.output(b.while_({i0, x, w}, cond, body, 5, 1));
  Graph gg = autodiff::grad_with_loss(autodiff::testing::weighted_sum_loss(g, 1).loss,
                                      autodiff::float_params(g));
  EXPECT_EQ(count(gg, OpKind::While), 0u);
  for (std::int64_t start : {0, 2, 4}) // 3, 1 and 0 iterations
    expect_fd(g, {{"i0", Tensor::scalar<std::int64_t>(start)}, {"x", uniform_tensor(t, 12)}},
              {{"w", uniform_tensor(t, 13)}});
}

TEST(GradWithLoss, FusedResidualNormsAreUnfusedByThePrepass) {
  // The fused residual + norm ops have tuple results: prepare_graph_for_ad expands them part by
  // part (their gets read the Add and the norm), then the gradients match finite differences.
  Shape t = Shape::of({3, 5}, DType::f64), v = Shape::of({5}, DType::f64);
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", t), r = b.input("r", t);
  NodeId gamma = b.param("gamma", v), beta = b.param("beta", v);
  NodeId ln = b.graph().add(OpKind::ResidualLayerNorm, {x, r, gamma, beta}, ir::NormAttrs{1e-3});
  NodeId h = b.add(b.get(ln, 0), b.tanh(b.get(ln, 1))); // the sum is the next residual
  NodeId rms = b.graph().add(OpKind::ResidualRmsNorm, {h, x, gamma}, ir::NormAttrs{1e-3});
  b.output(b.mul(b.get(rms, 1), b.get(rms, 0)));
  const Graph prepared = autodiff::prepare_graph_for_ad(g);
  EXPECT_EQ(count(prepared, OpKind::ResidualLayerNorm), 0u);
  EXPECT_EQ(count(prepared, OpKind::ResidualRmsNorm), 0u);
  EXPECT_EQ(count(prepared, OpKind::Get), 0u);
  expect_fd(g, {{"x", uniform_tensor(t, 21)}, {"r", uniform_tensor(t, 22)}},
            {{"gamma", uniform_tensor(v, 23, 0.5, 1.5)}, {"beta", uniform_tensor(v, 24)}});
}

TEST(GradWithLoss, HirBlocksAreLoweredFirst) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3, 4}, DType::f64));
  NodeId w = b.param("w", Shape::of({5, 4}, DType::f64));
  NodeId bias = b.param("b", Shape::of({5}, DType::f64));
  b.output(b.linear(x, w, bias, ir::Activation::gelu));
  Graph gg = autodiff::grad_with_loss(autodiff::testing::weighted_sum_loss(g, 1).loss,
                                      autodiff::float_params(g));
  EXPECT_EQ(count(gg, OpKind::Linear), 0u);
  expect_fd(g, {{"x", uniform_tensor(Shape::of({3, 4}, DType::f64), 9)}},
            {{"w", uniform_tensor(Shape::of({5, 4}, DType::f64), 10)},
             {"b", uniform_tensor(Shape::of({5}, DType::f64), 11)}});
}

} // namespace
