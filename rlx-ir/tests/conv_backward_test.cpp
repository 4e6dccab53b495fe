// conv_backward_test.cpp: conv2d_grad_input, conv2d_grad_weight and pool2d_grad (ops.def's
// "conv / pool backward"): hand-computed values, the adjoint identities against the forward's own
// reference kernels (<conv(x, w), dy> = <x, grad_input(dy, w)> = <w, grad_weight(x, dy)>;
// <avg_pool(x), dy> = <x, pool2d_grad(dy)>) over strides, padding, dilation, groups and depthwise,
// f32 and f64, each decomposition against the reference loops, the max-pool tie / NaN rule, and
// the shape rules' errors.
#include "reference_testing.hpp"

#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

#include <cmath>
#include <limits>
#include <random>

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

Tensor random_tensor(const Sizes& s, DType t, std::uint32_t seed) {
  Tensor x(Shape::of(s, t));
  std::mt19937 rng(seed);
  std::uniform_real_distribution<double> u(-1, 1);
  for (std::int64_t i = 0; i < x.numel(); ++i)
    x.set_f64(i, u(rng));
  return x;
}

double dot(const Tensor& a, const Tensor& b) {
  Vec x = values(a), y = values(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0;
  for (std::size_t i = 0; i < x.size(); ++i)
    s += x[i] * y[i];
  return s;
}

/// The reference value of the graph \p make builds, and the value of the same graph with the
/// op's node replaced by its decomposition.
struct Both {
  Tensor reference, decomposed;
};
Both run_both(const std::vector<Tensor>& args,
              const std::function<NodeId(Builder&, const std::vector<NodeId>&)>& make) {
  Both r;
  r.reference = run(args, make);
  r.decomposed = run(args, [&](Builder& b, const std::vector<NodeId>& in) {
    std::string why;
    const NodeId v = decompose(b, make(b, in), DecomposeOptions{}, why);
    EXPECT_TRUE(v.valid()) << why;
    return v;
  });
  return r;
}

void expect_close(const Tensor& a, const Tensor& b, double tol) {
  Vec x = values(a), y = values(b);
  ASSERT_EQ(x.size(), y.size());
  for (std::size_t i = 0; i < x.size(); ++i)
    ASSERT_NEAR(x[i], y[i], tol * (1 + std::abs(y[i]))) << "element " << i;
}

struct ConvCase {
  const char* name;
  Sizes x, w;
  Conv2dAttrs a;
};

std::vector<ConvCase> conv_cases() {
  auto attrs = [](Sizes s, Sizes p, Sizes d, std::int64_t g) {
    Conv2dAttrs a;
    a.stride = s;
    a.padding = p;
    a.dilation = d;
    a.groups = g;
    return a;
  };
  return {
      {"plain", {2, 3, 6, 5}, {4, 3, 3, 3}, attrs({1, 1}, {0, 0}, {1, 1}, 1)},
      {"stride2_pad1", {2, 3, 7, 6}, {4, 3, 3, 3}, attrs({2, 2}, {1, 1}, {1, 1}, 1)},
      {"stride3_loses_rows", {1, 2, 8, 9}, {3, 2, 2, 3}, attrs({3, 2}, {0, 1}, {1, 1}, 1)},
      {"dilation", {2, 2, 9, 8}, {2, 2, 3, 2}, attrs({1, 2}, {2, 0}, {2, 3}, 1)},
      {"groups", {2, 4, 6, 6}, {6, 2, 3, 3}, attrs({2, 1}, {1, 2}, {1, 1}, 2)},
      {"depthwise", {1, 3, 5, 7}, {3, 1, 3, 3}, attrs({1, 1}, {1, 1}, {1, 2}, 3)},
      {"pointwise", {3, 4, 4, 4}, {5, 4, 1, 1}, attrs({1, 1}, {0, 0}, {1, 1}, 1)},
  };
}

Conv2dGradAttrs grad_attrs(const Conv2dAttrs& a, Sizes size) {
  Conv2dGradAttrs g;
  g.stride = a.stride;
  g.padding = a.padding;
  g.dilation = a.dilation;
  g.groups = a.groups;
  g.size = size;
  return g;
}

} // namespace

TEST(ConvBackward, AdjointOfTheForwardAndTheDecompositions) {
  for (DType t : {DType::f64, DType::f32}) {
    const double tol = t == DType::f64 ? 1e-12 : 2e-5;
    for (const ConvCase& c : conv_cases()) {
      SCOPED_TRACE(std::string(c.name) + " " + std::string(dtype_name(t)));
      const Tensor x = random_tensor(c.x, t, 1), w = random_tensor(c.w, t, 2);
      const Tensor y =
          run({x, w}, [&](Builder& b, const auto& in) { return b.conv2d(in[0], in[1], {}, c.a); });
      const Tensor dy = random_tensor(y.shape().sizes(), t, 3);
      const Both dx = run_both({dy, w}, [&](Builder& b, const auto& in) {
        return b.op(OpKind::Conv2dGradInput, {in[0], in[1]}, grad_attrs(c.a, {c.x[2], c.x[3]}));
      });
      const Both dw = run_both({x, dy}, [&](Builder& b, const auto& in) {
        return b.op(OpKind::Conv2dGradWeight, {in[0], in[1]}, grad_attrs(c.a, {c.w[2], c.w[3]}));
      });
      EXPECT_EQ(dx.reference.shape(), x.shape());
      EXPECT_EQ(dw.reference.shape(), w.shape());
      const double ydy = dot(y, dy);
      EXPECT_NEAR(dot(x, dx.reference), ydy, tol * (1 + std::abs(ydy)));
      EXPECT_NEAR(dot(w, dw.reference), ydy, tol * (1 + std::abs(ydy)));
      expect_close(dx.decomposed, dx.reference, tol);
      expect_close(dw.decomposed, dw.reference, tol);
    }
  }
}

TEST(ConvBackward, HandComputedGradInput) {
  // A 2x2 kernel of ones over a 3x3 input, dy all ones: each input cell gets the number of
  // windows covering it.
  const Tensor dy = f64({1, 1, 2, 2}, {1, 1, 1, 1}), w = f64({1, 1, 2, 2}, {1, 1, 1, 1});
  Conv2dGradAttrs a;
  a.size = {3, 3};
  expect_eq(run({dy, w},
                [&](Builder& b, const auto& in) {
                  return b.op(OpKind::Conv2dGradInput, {in[0], in[1]}, a);
                }),
            {1, 1, 3, 3}, {1, 2, 1, 2, 4, 2, 1, 2, 1});
  // Stride 2 over a 4x4 input with a 2x2 kernel: size (4, 4) and (5, 5) give the same dy shape;
  // the fifth row and column get nothing.
  a.stride = {2, 2};
  a.size = {5, 5};
  const Tensor dx = run({dy, w}, [&](Builder& b, const auto& in) {
    return b.op(OpKind::Conv2dGradInput, {in[0], in[1]}, a);
  });
  Vec want(25, 1.0);
  for (int i = 0; i < 5; ++i)
    want[static_cast<std::size_t>(4 * 5 + i)] = want[static_cast<std::size_t>(i * 5 + 4)] = 0;
  expect_eq(dx, {1, 1, 5, 5}, want);
}

TEST(PoolBackward, AvgAdjointAndMaxTiesAndDecompositions) {
  struct PoolCase {
    Sizes x, kernel, stride, padding;
  };
  for (DType t : {DType::f64, DType::f32})
    for (const PoolCase& c : std::vector<PoolCase>{{{2, 3, 6, 6}, {2, 2}, {2, 2}, {0, 0}},
                                                   {{1, 2, 7, 5}, {3, 3}, {2, 1}, {1, 1}},
                                                   {{2, 1, 5, 8}, {3, 2}, {1, 3}, {1, 0}}}) {
      const double tol = t == DType::f64 ? 1e-12 : 2e-5;
      Pool2dAttrs f;
      f.kernel = c.kernel;
      f.stride = c.stride;
      f.padding = c.padding;
      Pool2dGradAttrs g;
      g.kernel = c.kernel;
      g.stride = c.stride;
      g.padding = c.padding;
      g.input_size = {c.x[2], c.x[3]};
      const Tensor x = random_tensor(c.x, t, 4);
      for (PoolKind kind : {PoolKind::avg, PoolKind::max}) {
        f.kind = g.kind = kind;
        const Tensor y = run({x}, [&](Builder& b, const auto& in) { return b.pool2d(in[0], f); });
        const Tensor dy = random_tensor(y.shape().sizes(), t, 5);
        const Both dx = run_both({x, y, dy}, [&](Builder& b, const auto& in) {
          if (kind == PoolKind::avg)
            return b.op(OpKind::Pool2dGrad, {in[2]}, g);
          return b.op(OpKind::Pool2dGrad, {in[0], in[1], in[2]}, g);
        });
        expect_close(dx.decomposed, dx.reference, tol);
        if (kind == PoolKind::avg) {
          const double ydy = dot(y, dy);
          EXPECT_NEAR(dot(x, dx.reference), ydy, tol * (1 + std::abs(ydy)));
        } else { // each window's dy lands on one cell holding its max: sum dx = sum dy
          double sdx = 0, sdy = 0;
          for (double v : values(dx.reference))
            sdx += v;
          for (double v : values(dy))
            sdy += v;
          EXPECT_NEAR(sdx, sdy, tol * (1 + std::abs(sdy)));
        }
      }
    }
}

TEST(PoolBackward, MaxGivesATieToTheFirstCellAndFollowsNan) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  Pool2dGradAttrs g; // 2x2, stride 2
  g.input_size = {2, 4};
  // Window 0: all equal (the first cell takes it); window 1: a NaN at its second row.
  const Tensor x = f64({1, 1, 2, 4}, {1, 1, 2, 5, 1, 1, nan, 0});
  const Tensor y = f64({1, 1, 1, 2}, {1, nan}), dy = f64({1, 1, 1, 2}, {3, 7});
  const Both dx = run_both({x, y, dy}, [&](Builder& b, const auto& in) {
    return b.op(OpKind::Pool2dGrad, {in[0], in[1], in[2]}, g);
  });
  expect_eq(dx.reference, {1, 1, 2, 4}, {3, 0, 0, 0, 0, 0, 7, 0});
  expect_eq(dx.decomposed, {1, 1, 2, 4}, {3, 0, 0, 0, 0, 0, 7, 0});
  // Avg with padding divides by the in-bounds count: 3x3 windows, padding 1, stride 2 over 2x2:
  // one window, 4 in-bounds cells.
  Pool2dGradAttrs a;
  a.kind = PoolKind::avg;
  a.kernel = {3, 3};
  a.padding = {1, 1};
  a.input_size = {2, 2};
  expect_eq(run({f64({1, 1, 1, 1}, {8})},
                [&](Builder& b, const auto& in) { return b.op(OpKind::Pool2dGrad, {in[0]}, a); }),
            {1, 1, 2, 2}, {2, 2, 2, 2});
}

TEST(ConvBackward, ShapeRulesRejectWrongOperands) {
  Graph g;
  Builder b(g);
  const NodeId dy = b.input("dy", Shape::of({2, 4, 3, 3}, DType::f32));
  const NodeId w = b.input("w", Shape::of({4, 3, 3, 3}, DType::f32));
  const NodeId x = b.input("x", Shape::of({2, 3, 5, 5}, DType::f32));
  const NodeId v = b.input("v", Shape::of({4, 3}, DType::f32));
  const NodeId wd = b.input("wd", Shape::of({4, 3, 3, 3}, DType::f64));
  Conv2dGradAttrs a;
  a.size = {5, 5};
  EXPECT_NO_THROW(b.op(OpKind::Conv2dGradInput, {dy, w}, a));
  EXPECT_THROW(b.op(OpKind::Conv2dGradInput, {v, w}, a), ShapeError);   // dy rank
  EXPECT_THROW(b.op(OpKind::Conv2dGradInput, {dy, v}, a), ShapeError);  // w rank
  EXPECT_THROW(b.op(OpKind::Conv2dGradInput, {dy, wd}, a), ShapeError); // dtypes differ
  a.size = {6, 6}; // the forward of 6x6 gives 4x4, not dy's 3x3
  EXPECT_THROW(b.op(OpKind::Conv2dGradInput, {dy, w}, a), ShapeError);
  a.size = {0, 5};
  EXPECT_THROW(b.op(OpKind::Conv2dGradInput, {dy, w}, a), ShapeError);
  a.size = {3, 3};
  EXPECT_NO_THROW(b.op(OpKind::Conv2dGradWeight, {x, dy}, a));
  a.size = {2, 2}; // a 2x2 kernel gives 4x4
  EXPECT_THROW(b.op(OpKind::Conv2dGradWeight, {x, dy}, a), ShapeError);
  a.size = {3, 3};
  a.groups = 2; // does not divide C = 3
  EXPECT_THROW(b.op(OpKind::Conv2dGradWeight, {x, dy}, a), ShapeError);
  Pool2dGradAttrs p; // max 2x2 stride 2
  p.input_size = {6, 6};
  const NodeId px = b.input("px", Shape::of({2, 4, 6, 6}, DType::f32));
  EXPECT_NO_THROW(b.op(OpKind::Pool2dGrad, {px, dy, dy}, p));
  EXPECT_THROW(b.op(OpKind::Pool2dGrad, {dy}, p), ShapeError);     // max needs x, y, dy
  EXPECT_THROW(b.op(OpKind::Pool2dGrad, {px, dy}, p), ShapeError); // two operands
  EXPECT_THROW(b.op(OpKind::Pool2dGrad, {px, dy, v}, p), ShapeError);
  p.input_size = {7, 6}; // x is 6x6
  EXPECT_THROW(b.op(OpKind::Pool2dGrad, {px, dy, dy}, p), ShapeError);
  p.kind = PoolKind::avg;
  p.input_size = {6, 6};
  EXPECT_NO_THROW(b.op(OpKind::Pool2dGrad, {dy}, p));
  EXPECT_THROW(b.op(OpKind::Pool2dGrad, {px, dy, dy}, p), ShapeError); // avg takes dy only
  p.input_size = {9, 9};
  EXPECT_THROW(b.op(OpKind::Pool2dGrad, {dy}, p), ShapeError);
}
