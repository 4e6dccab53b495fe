// reference_nn_test.cpp: the reference interpreter's reductions, softmax, ArgMax, LayerNorm,
// RmsNorm, SoftmaxCrossEntropy, Conv2d and Pool2d against hand-computed values.
#include "reference_testing.hpp"

#include <cmath>
#include <limits>

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const Tensor kMat = f64({2, 3}, {1, 2, 3, 4, 5, 6});

Tensor reduce(ReduceOp op, const Tensor& x, std::vector<std::int64_t> axes, bool keep = false) {
  return run({x}, [&](Builder& b, const auto& a) { return b.reduce(op, a[0], axes, keep); });
}

} // namespace

TEST(ReferenceReduce, EveryOpOverAxes) {
  expect_eq(reduce(ReduceOp::sum, kMat, {1}), {2}, {6, 15});
  expect_eq(reduce(ReduceOp::sum, kMat, {0}, true), {1, 3}, {5, 7, 9});
  expect_eq(reduce(ReduceOp::sum, kMat, {}), {}, {21});
  expect_eq(reduce(ReduceOp::mean, kMat, {-1}), {2}, {2, 5});
  expect_eq(reduce(ReduceOp::max, kMat, {0}), {3}, {4, 5, 6});
  expect_eq(reduce(ReduceOp::min, kMat, {1}, true), {2, 1}, {1, 4});
  expect_eq(reduce(ReduceOp::prod, kMat, {}), {}, {720});
}

TEST(ReferenceReduce, NonAdjacentAxes) {
  // x[i][j][k] = 4i + 2j + k; sum over i and k leaves j: j=0: 0+1+4+5 = 10, j=1: 2+3+6+7 = 18.
  Tensor x = f32({2, 2, 2}, {0, 1, 2, 3, 4, 5, 6, 7});
  expect_eq(reduce(ReduceOp::sum, x, {0, 2}), {2}, {10, 18});
  expect_eq(reduce(ReduceOp::sum, x, {2, 0}, true), {1, 2, 1}, {10, 18});
}

TEST(ReferenceReduce, IntegersAndNan) {
  expect_eq(reduce(ReduceOp::sum, i64({2, 2}, {1, 2, 3, 4}), {0}), {2}, {4, 6});
  expect_eq(reduce(ReduceOp::max, i64({3}, {-5, 7, 2}), {0}), {}, {7});
  expect_eq(reduce(ReduceOp::prod, i32({3}, {-2, 3, 4}), {}), {}, {-24});
  // max / min propagate NaN.
  expect_eq(reduce(ReduceOp::max, f64({3}, {1, kNaN, 3}), {}), {}, {kNaN});
  expect_eq(reduce(ReduceOp::min, f64({3}, {kNaN, 1, 3}), {}), {}, {kNaN});
}

TEST(ReferenceSoftmax, AlongEitherAxis) {
  // softmax([0, ln 3]) = [1/4, 3/4]; softmax([1, 1]) = [1/2, 1/2].
  Tensor x = f64({2, 2}, {0, std::log(3.0), 1, 1});
  expect_near(run({x}, [](Builder& b, const auto& a) { return b.softmax(a[0], -1); }), {2, 2},
              {0.25, 0.75, 0.5, 0.5}, 1e-15);
  // Along axis 0: columns [0, 1] and [ln 3, 1].
  double e = std::exp(1.0), t = 3.0;
  expect_near(run({x}, [](Builder& b, const auto& a) { return b.softmax(a[0], 0); }), {2, 2},
              {1 / (1 + e), t / (t + e), e / (1 + e), e / (t + e)}, 1e-15);
  expect_near(run({x}, [](Builder& b, const auto& a) { return b.log_softmax(a[0], -1); }), {2, 2},
              {std::log(0.25), std::log(0.75), std::log(0.5), std::log(0.5)}, 1e-15);
}

TEST(ReferenceArgMax, FirstMaximumWins) {
  Tensor x = f32({2, 4}, {1, 3, 3, 2, 5, 1, 5, 0});
  Tensor r = run({x}, [](Builder& b, const auto& a) { return b.argmax(a[0], 1); });
  EXPECT_EQ(r.dtype(), DType::i64);
  expect_eq(r, {2}, {1, 0});
  expect_eq(run({x}, [](Builder& b, const auto& a) { return b.argmax(a[0], 0, true); }), {1, 4},
            {1, 0, 1, 0});
  expect_eq(run({i64({3}, {-1, 4, 4})}, [](Builder& b, const auto& a) { return b.argmax(a[0]); }),
            {}, {1});
  // NaN counts as the maximum; the first NaN wins.
  expect_eq(
      run({f64({4}, {1, kNaN, 9, kNaN})}, [](Builder& b, const auto& a) { return b.argmax(a[0]); }),
      {}, {1});
}

TEST(ReferenceLayerNorm, UsesTheBiasedVariance) {
  // Row [1, 2, 3, 4]: mean 2.5, biased variance 1.25; with eps 0.75 the divisor is sqrt(2).
  // Row [2, 2, 2, 2]: every deviation is 0, so the output is beta.
  Tensor x = f64({2, 4}, {1, 2, 3, 4, 2, 2, 2, 2});
  Tensor g = f64({4}, {1, 2, 1, 1});
  Tensor beta = f64({4}, {0, 0, 1, 0});
  const double s = std::sqrt(2.0);
  expect_near(run({x, g, beta},
                  [](Builder& b, const auto& a) { return b.layer_norm(a[0], a[1], a[2], 0.75); }),
              {2, 4}, {-1.5 / s, -1.0 / s, 0.5 / s + 1, 1.5 / s, 0, 0, 1, 0}, 1e-15);
  expect_near(
      run({x, g}, [](Builder& b, const auto& a) { return b.layer_norm(a[0], a[1], {}, 0.75); }),
      {2, 4}, {-1.5 / s, -1.0 / s, 0.5 / s, 1.5 / s, 0, 0, 0, 0}, 1e-15);
}

TEST(ReferenceRmsNorm, DividesByTheRootMeanSquare) {
  // [2, -2]: mean square 4, + eps 5 = 9 -> divide by 3. [1, 1]: 1 + 5 = 6.
  Tensor x = f32({2, 2}, {2, -2, 1, 1});
  Tensor g = f32({2}, {1, 3});
  const double r6 = std::sqrt(6.0);
  expect_near(run({x, g}, [](Builder& b, const auto& a) { return b.rms_norm(a[0], a[1], 5.0); }),
              {2, 2}, {2.0 / 3, -2.0, 1 / r6, 3 / r6}, 1e-6);
}

TEST(ReferenceSoftmaxCrossEntropy, LogSumExpMinusTheLabelLogit) {
  // Row [0, ln 3] label 1: -ln(3/4); row [1, 1] label 0: ln 2.
  Tensor logits = f64({2, 2}, {0, std::log(3.0), 1, 1});
  Tensor labels = i64({2}, {1, 0});
  expect_near(run({logits, labels},
                  [](Builder& b, const auto& a) { return b.softmax_cross_entropy(a[0], a[1]); }),
              {2}, {-std::log(0.75), std::log(2.0)}, 1e-15);
}

TEST(ReferenceSoftmaxCrossEntropy, LabelOutOfRangeIsAnError) {
  for (std::int32_t bad : {2, -1, -100})
    EXPECT_THROW(run({f32({1, 2}, {0, 0}), i32({1}, {bad})},
                     [](Builder& b, const auto& a) { return b.softmax_cross_entropy(a[0], a[1]); }),
                 EvalError)
        << "label " << bad;
}

// ---- convolution and pooling -----------------------------------------------------------------

namespace {

const Tensor kImage = f32({1, 1, 3, 3}, {1, 2, 3, 4, 5, 6, 7, 8, 9});

Tensor conv(const std::vector<Tensor>& args, Conv2dAttrs attrs) {
  return run(args, [&](Builder& b, const auto& a) {
    return b.conv2d(a[0], a[1], a.size() == 3 ? a[2] : NodeId{}, attrs);
  });
}
Tensor pool(const Tensor& x, Pool2dAttrs attrs) {
  return run({x}, [&](Builder& b, const auto& a) { return b.pool2d(a[0], attrs); });
}

} // namespace

TEST(ReferenceConv2d, CrossCorrelationWithBias) {
  // w = [[1, 0], [0, 1]]: out[y][x] = in[y][x] + in[y+1][x+1], plus bias 10.
  Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  expect_eq(conv({kImage, w}, {}), {1, 1, 2, 2}, {6, 8, 12, 14});
  expect_eq(conv({kImage, w, f32({1}, {10})}, {}), {1, 1, 2, 2}, {16, 18, 22, 24});
}

TEST(ReferenceConv2d, StridePaddingDilation) {
  Tensor w = f32({1, 1, 2, 2}, {1, 0, 0, 1});
  // Stride 2, zero padding 1: windows start at (-1,-1), (-1,1), (1,-1), (1,1); only the
  // bottom-right tap can land inside for the first three.
  expect_eq(conv({kImage, w}, {{2, 2}, {1, 1}, {1, 1}, 1}), {1, 1, 2, 2}, {1, 3, 7, 14});
  // Dilation 2: the 2x2 kernel covers the corners of the 3x3 image: 1 + 3 + 7 + 9.
  Tensor ones = f32({1, 1, 2, 2}, {1, 1, 1, 1});
  expect_eq(conv({kImage, ones}, {{1, 1}, {0, 0}, {2, 2}, 1}), {1, 1, 1, 1}, {20});
}

TEST(ReferenceConv2d, GroupsKeepChannelsApart) {
  Tensor x = f64({1, 2, 2, 2}, {1, 2, 3, 4, 10, 20, 30, 40});
  // groups 2: each output channel sees its own input channel.
  expect_eq(conv({x, f64({2, 1, 1, 1}, {2, 3})}, {{1, 1}, {0, 0}, {1, 1}, 2}), {1, 2, 2, 2},
            {2, 4, 6, 8, 30, 60, 90, 120});
  // groups 1: channels mix: out0 = c0 + c1, out1 = c0 - c1.
  expect_eq(conv({x, f64({2, 2, 1, 1}, {1, 1, 1, -1})}, {}), {1, 2, 2, 2},
            {11, 22, 33, 44, -9, -18, -27, -36});
}

TEST(ReferencePool2d, MaxAndAverage) {
  Vec v(16);
  for (std::size_t i = 0; i < 16; ++i)
    v[i] = static_cast<double>(i + 1);
  Tensor x = f32({1, 1, 4, 4}, v);
  expect_eq(pool(x, {PoolKind::max, {2, 2}, {2, 2}, {0, 0}}), {1, 1, 2, 2}, {6, 8, 14, 16});
  expect_eq(pool(x, {PoolKind::avg, {2, 2}, {2, 2}, {0, 0}}), {1, 1, 2, 2}, {3.5, 5.5, 11.5, 13.5});
}

TEST(ReferencePool2d, AverageExcludesPadding) {
  // 3x3 image, kernel 2, stride 2, padding 1: windows hold {1}, {2, 3}, {4, 7}, {5, 6, 8, 9}.
  expect_eq(pool(kImage, {PoolKind::avg, {2, 2}, {2, 2}, {1, 1}}), {1, 1, 2, 2}, {1, 2.5, 5.5, 7});
  expect_eq(pool(kImage, {PoolKind::max, {2, 2}, {2, 2}, {1, 1}}), {1, 1, 2, 2}, {1, 3, 7, 9});
  // Negative inputs: padding must not act as a 0 in max.
  Tensor neg = f32({1, 1, 1, 1}, {-5});
  expect_eq(pool(neg, {PoolKind::max, {2, 2}, {1, 1}, {1, 1}}), {1, 1, 2, 2}, {-5, -5, -5, -5});
}
