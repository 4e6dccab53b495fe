// reference_elementwise_test.cpp: the reference interpreter's elementwise ops (unary math, Cast,
// broadcasting binaries, Compare, Where) and int8 quantization, against hand-computed values.
#include "reference_testing.hpp"

#include <cmath>
#include <limits>
#include <numbers>

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

const double kNaN = std::numeric_limits<double>::quiet_NaN();
const double kInf = std::numeric_limits<double>::infinity();

Tensor unary(OpKind k, const Tensor& x) {
  return run({x}, [k](Builder& b, const auto& a) { return b.unary(k, a[0]); });
}
Tensor binary(OpKind k, const Tensor& x, const Tensor& y) {
  return run({x, y}, [k](Builder& b, const auto& a) { return b.binary(k, a[0], a[1]); });
}
Tensor cast(const Tensor& x, DType to) {
  return run({x}, [to](Builder& b, const auto& a) { return b.cast(a[0], to); });
}

} // namespace

// ---- unary
// ---------------------------------------------------------------------------------------

TEST(ReferenceUnary, MathOnF64) {
  const double e = std::numbers::e;
  expect_near(unary(OpKind::Exp, f64({2}, {0, 1})), {2}, {1, e}, 1e-15);
  expect_near(unary(OpKind::Log, f64({2}, {1, e})), {2}, {0, 1}, 1e-15);
  expect_near(unary(OpKind::Sqrt, f64({2}, {4, 2})), {2}, {2, std::numbers::sqrt2}, 1e-15);
  expect_near(unary(OpKind::Rsqrt, f64({2}, {4, 0.25})), {2}, {0.5, 2}, 1e-15);
  expect_near(unary(OpKind::Reciprocal, f64({2}, {4, -0.5})), {2}, {0.25, -2}, 0);
  expect_near(unary(OpKind::Tanh, f64({2}, {0, 0.5})), {2}, {0, 0.46211715726000974}, 1e-15);
  expect_near(unary(OpKind::Sigmoid, f64({2}, {0, 2})), {2}, {0.5, 0.8807970779778823}, 1e-15);
  expect_near(unary(OpKind::Silu, f64({2}, {1, -2})), {2},
              {0.7310585786300049, -0.2384058440442351}, 1e-15);
  expect_near(unary(OpKind::Sin, f64({2}, {std::numbers::pi / 6, 0})), {2}, {0.5, 0}, 1e-15);
  expect_near(unary(OpKind::Cos, f64({2}, {std::numbers::pi / 3, 0})), {2}, {0.5, 1}, 1e-15);
  expect_near(unary(OpKind::Erf, f64({2}, {0.5, 0})), {2}, {0.5204998778130465, 0}, 1e-15);
  const double pi = std::numbers::pi;
  expect_near(unary(OpKind::Sinh, f64({2}, {1, 0})), {2}, {1.1752011936438014, 0}, 1e-15);
  expect_near(unary(OpKind::Cosh, f64({2}, {1, 0})), {2}, {1.5430806348152437, 1}, 1e-15);
  expect_near(unary(OpKind::Asin, f64({2}, {0.5, 1})), {2}, {pi / 6, pi / 2}, 1e-15);
  expect_near(unary(OpKind::Acos, f64({2}, {0.5, -1})), {2}, {pi / 3, pi}, 1e-15);
  expect_near(unary(OpKind::Atan, f64({2}, {1, -1})), {2}, {pi / 4, -pi / 4}, 1e-15);
  expect_near(unary(OpKind::Asinh, f64({2}, {1, 0})), {2}, {0.881373587019543, 0}, 1e-15);
  expect_near(unary(OpKind::Acosh, f64({2}, {2, 1})), {2}, {1.3169578969248166, 0}, 1e-15);
  expect_near(unary(OpKind::Atanh, f64({2}, {0.5, 0})), {2}, {0.5493061443340549, 0}, 1e-15);
  // Outside their domains the inverse functions give NaN.
  expect_eq(unary(OpKind::Asin, f64({1}, {2})), {1}, {kNaN});
  expect_eq(unary(OpKind::Acosh, f64({1}, {0.5})), {1}, {kNaN});
  expect_eq(unary(OpKind::Atanh, f64({1}, {-2})), {1}, {kNaN});
  expect_eq(unary(OpKind::Neg, f64({3}, {1, -2.5, 0})), {3}, {-1, 2.5, 0});
  expect_eq(unary(OpKind::Abs, f64({3}, {1, -2.5, 0})), {3}, {1, 2.5, 0});
  expect_eq(unary(OpKind::Relu, f64({4}, {-1, 0, 2, kNaN})), {4}, {0, 0, 2, kNaN});
}

TEST(ReferenceUnary, GeluIsExactErfAndGeluTanhIsTheApproximation) {
  // gelu(x) = x/2 (1 + erf(x / sqrt 2)); gelu_tanh(x) = x/2 (1 + tanh(sqrt(2/pi)(x + 0.044715
  // x^3))).
  Tensor x = f64({4}, {1, -1, 2, 0.5});
  expect_near(unary(OpKind::Gelu, x), {4},
              {0.8413447460685429, -0.15865525393145707, 1.9544997361036416, 0.34573123063700656},
              1e-15);
  expect_near(unary(OpKind::GeluTanh, x), {4},
              {0.8411919906082768, -0.15880800939172324, 1.954597694087775, 0.34571400982514394},
              1e-15);
}

TEST(ReferenceUnary, F32RoundsOnceFromDouble) {
  // exp(1) computed in double and rounded once to f32.
  Tensor r = unary(OpKind::Exp, f32({1}, {1}));
  EXPECT_EQ(r.dtype(), DType::f32);
  EXPECT_EQ(r.data<float>()[0], static_cast<float>(std::numbers::e));
}

TEST(ReferenceUnary, IntegerNegAbsReluComputeInInt64AndWrap) {
  expect_eq(unary(OpKind::Neg, i64({3}, {3, -4, 0})), {3}, {-3, 4, 0});
  expect_eq(unary(OpKind::Abs, i32({3}, {-3, 4, 0})), {3}, {3, 4, 0});
  expect_eq(unary(OpKind::Relu, i64({3}, {-3, 4, 0})), {3}, {0, 4, 0});
  // -(-128) does not fit i8 and wraps to -128; |INT64_MIN| wraps to itself.
  Tensor i8 = Tensor::from<std::int8_t>({2}, {-128, 127});
  Tensor n = unary(OpKind::Neg, i8);
  EXPECT_EQ(n.data<std::int8_t>()[0], -128);
  EXPECT_EQ(n.data<std::int8_t>()[1], -127);
  const auto min64 = std::numeric_limits<std::int64_t>::min();
  EXPECT_EQ(unary(OpKind::Abs, i64({1}, {min64})).data<std::int64_t>()[0], min64);
}

// ---- Cast
// ----------------------------------------------------------------------------------------

TEST(ReferenceCast, FloatToIntTruncatesTowardZero) {
  expect_eq(cast(f32({4}, {2.7, -2.7, 0.5, -0.5}), DType::i32), {4}, {2, -2, 0, 0});
}

TEST(ReferenceCast, FloatToIntSaturatesAndNanIsZero) {
  expect_eq(cast(f64({5}, {300, -300, 127.9, kNaN, -128.9}), DType::i8), {5},
            {127, -128, 127, 0, -128});
  expect_eq(cast(f64({3}, {-1.5, 255.9, 256}), DType::u8), {3}, {0, 255, 255});
  Tensor big = cast(f64({3}, {1e19, -1e19, kInf}), DType::i64);
  EXPECT_EQ(big.data<std::int64_t>()[0], std::numeric_limits<std::int64_t>::max());
  EXPECT_EQ(big.data<std::int64_t>()[1], std::numeric_limits<std::int64_t>::min());
  EXPECT_EQ(big.data<std::int64_t>()[2], std::numeric_limits<std::int64_t>::max());
}

TEST(ReferenceCast, ToBoolTestsNonZero) {
  expect_eq(cast(f32({4}, {0, -0.0, 0.1, kNaN}), DType::boolean), {4}, {0, 0, 1, 1});
  expect_eq(cast(i64({3}, {0, -5, 256}), DType::boolean), {3}, {0, 1, 1});
}

TEST(ReferenceCast, IntToNarrowerIntWraps) {
  Tensor r = cast(i64({3}, {300, -129, 5}), DType::i8);
  EXPECT_EQ(r.data<std::int8_t>()[0], 44); // 300 - 256
  EXPECT_EQ(r.data<std::int8_t>()[1], 127);
  EXPECT_EQ(r.data<std::int8_t>()[2], 5);
}

TEST(ReferenceCast, IntToFloatAndBoolToFloat) {
  // 2^24 + 1 is not an f32: round to nearest even gives 2^24.
  EXPECT_EQ(cast(i32({1}, {16777217}), DType::f32).data<float>()[0], 16777216.0f);
  Tensor b = Tensor::from<bool>({2}, {true, false});
  expect_eq(cast(b, DType::f64), {2}, {1, 0});
}

TEST(ReferenceCast, HalfTypesRoundCorrectlyFromDouble) {
  // 1 + 2^-11 is the tie between the f16 neighbours 1 and 1 + 2^-10; a value just above it must
  // round up. Rounding through f32 first would make it an exact tie and round down to 1.
  double above_tie = 1.0 + std::ldexp(1.0, -11) + std::ldexp(1.0, -40);
  expect_eq(cast(f64({1}, {above_tie}), DType::f16), {1}, {1.0 + std::ldexp(1.0, -10)});
  double bf_above_tie = 1.0 + std::ldexp(1.0, -8) + std::ldexp(1.0, -40);
  expect_eq(cast(f64({1}, {bf_above_tie}), DType::bf16), {1}, {1.0 + std::ldexp(1.0, -7)});
  // Exact ties still go to even.
  expect_eq(cast(f64({1}, {1.0 + std::ldexp(1.0, -11)}), DType::f16), {1}, {1.0});
  expect_eq(cast(f64({1}, {1.0 / 3.0}), DType::f16), {1}, {0.333251953125});
}

// ---- binary
// --------------------------------------------------------------------------------------

TEST(ReferenceBinary, BroadcastsLikeNumPy) {
  // [2, 1] op [3]: out[i][j] = a[i] op b[j].
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({3}, {10, 20, 30});
  expect_eq(binary(OpKind::Add, a, b), {2, 3}, {11, 21, 31, 12, 22, 32});
  expect_eq(binary(OpKind::Sub, a, b), {2, 3}, {-9, -19, -29, -8, -18, -28});
  expect_eq(binary(OpKind::Mul, a, b), {2, 3}, {10, 20, 30, 20, 40, 60});
  expect_eq(binary(OpKind::Div, b, a), {2, 3}, {10, 20, 30, 5, 10, 15});
  expect_eq(binary(OpKind::Add, f64({2, 2}, {1, 2, 3, 4}), f64({}, {0.5})), {2, 2},
            {1.5, 2.5, 3.5, 4.5});
}

TEST(ReferenceBinary, FloatDivisionFollowsIeee) {
  expect_eq(binary(OpKind::Div, f32({3}, {1, -1, 0}), f32({3}, {0, 0, 0})), {3},
            {kInf, -kInf, kNaN});
}

TEST(ReferenceBinary, IntegerDivisionTruncatesTowardZero) {
  expect_eq(binary(OpKind::Div, i64({4}, {7, -7, 7, -7}), i64({4}, {2, 2, -2, -2})), {4},
            {3, -3, -3, 3});
  expect_eq(binary(OpKind::Div, i32({2}, {1, -1}), i32({2}, {3, 3})), {2}, {0, 0});
  Tensor q = binary(OpKind::Div, Tensor::from<std::int8_t>({1}, {-128}),
                    Tensor::from<std::int8_t>({1}, {-1}));
  EXPECT_EQ(q.data<std::int8_t>()[0], -128); // 128 wraps in i8
}

TEST(ReferenceBinary, IntegerDivisionByZeroIsAnError) {
  EXPECT_THROW(binary(OpKind::Div, i64({2}, {1, 2}), i64({2}, {1, 0})), EvalError);
  try {
    binary(OpKind::Div, i32({1}, {1}), i32({1}, {0}));
    FAIL() << "no error";
  } catch (const EvalError& e) {
    EXPECT_NE(std::string(e.what()).find("division by zero"), std::string::npos) << e.what();
  }
}

TEST(ReferenceBinary, IntegerArithmeticWraps) {
  Tensor s = binary(OpKind::Add, Tensor::from<std::int8_t>({1}, {100}),
                    Tensor::from<std::int8_t>({1}, {100}));
  EXPECT_EQ(s.data<std::int8_t>()[0], -56);
  expect_eq(binary(OpKind::Add, i32({1}, {2147483647}), i32({1}, {1})), {1}, {-2147483648.0});
  expect_eq(binary(OpKind::Mul, i32({2}, {3, -4}), i32({1}, {5})), {2}, {15, -20});
  expect_eq(binary(OpKind::Sub, Tensor::from<std::uint8_t>({1}, {1}),
                   Tensor::from<std::uint8_t>({1}, {2})),
            {1}, {255});
}

TEST(ReferenceBinary, Pow) {
  expect_eq(binary(OpKind::Pow, f64({3}, {2, 4, -8}), f64({3}, {3, 0.5, 2})), {3}, {8, 2, 64});
  expect_eq(binary(OpKind::Pow, i64({4}, {2, 3, -2, 0}), i64({4}, {10, 0, 3, 0})), {4},
            {1024, 1, -8, 1});
  EXPECT_THROW(binary(OpKind::Pow, i64({1}, {2}), i64({1}, {-1})), EvalError);
}

TEST(ReferenceBinary, MaximumAndMinimumPropagateNan) {
  Tensor a = f32({3}, {1, kNaN, -3});
  Tensor b = f32({3}, {2, 0, kNaN});
  expect_eq(binary(OpKind::Maximum, a, b), {3}, {2, kNaN, kNaN});
  expect_eq(binary(OpKind::Minimum, a, b), {3}, {1, kNaN, kNaN});
  expect_eq(binary(OpKind::Maximum, i64({2}, {-1, 5}), i64({2}, {3, 2})), {2}, {3, 5});
  expect_eq(binary(OpKind::Minimum, i64({2}, {-1, 5}), i64({2}, {3, 2})), {2}, {-1, 2});
}

// ---- Compare and Where -------------------------------------------------------------------------

TEST(ReferenceCompare, EveryPredicateWithBroadcast) {
  Tensor a = f32({3}, {1, 2, 3});
  Tensor b = f32({}, {2});
  auto cmp = [&](CmpOp op, const Tensor& x, const Tensor& y) {
    Tensor r = run({x, y}, [op](Builder& bl, const auto& s) { return bl.compare(op, s[0], s[1]); });
    EXPECT_EQ(r.dtype(), DType::boolean);
    return r;
  };
  expect_eq(cmp(CmpOp::eq, a, b), {3}, {0, 1, 0});
  expect_eq(cmp(CmpOp::ne, a, b), {3}, {1, 0, 1});
  expect_eq(cmp(CmpOp::lt, a, b), {3}, {1, 0, 0});
  expect_eq(cmp(CmpOp::le, a, b), {3}, {1, 1, 0});
  expect_eq(cmp(CmpOp::gt, a, b), {3}, {0, 0, 1});
  expect_eq(cmp(CmpOp::ge, a, b), {3}, {0, 1, 1});
  // NaN compares unequal to everything, itself included.
  Tensor n = f64({1}, {kNaN});
  expect_eq(cmp(CmpOp::eq, n, n), {1}, {0});
  expect_eq(cmp(CmpOp::ne, n, n), {1}, {1});
  // Integers compare exactly in int64: 2^53 + 1 > 2^53 although both round to 2^53 as doubles.
  const std::int64_t p53 = std::int64_t{1} << 53;
  expect_eq(cmp(CmpOp::gt, i64({1}, {p53 + 1}), i64({1}, {p53})), {1}, {1});
}

TEST(ReferenceWhere, SelectsWithBroadcast) {
  Tensor cond = Tensor::from<bool>({2, 1}, {true, false});
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({}, {-1});
  Tensor r =
      run({cond, a, b}, [](Builder& bl, const auto& s) { return bl.where(s[0], s[1], s[2]); });
  expect_eq(r, {2, 3}, {1, 2, 3, -1, -1, -1});
  Tensor ri = run({Tensor::from<bool>({2}, {false, true}), i64({2}, {1, 2}), i64({2}, {3, 4})},
                  [](Builder& bl, const auto& s) { return bl.where(s[0], s[1], s[2]); });
  expect_eq(ri, {2}, {3, 2});
}

// ---- quantization
// --------------------------------------------------------------------------------

namespace {
QuantAttrs per_tensor(double scale, std::int64_t zp) {
  return QuantAttrs{std::nullopt, {scale}, {zp}};
}
} // namespace

TEST(ReferenceQuantize, PerTensorRoundsHalfToEvenAndClamps) {
  // x / 0.5 = 0.5, 1.5, -0.5, 2.5, 200, -200, 0.6, -2.5 -> 0, 2, 0, 2, 127, -128, 1, -2.
  Tensor x = f32({8}, {0.25, 0.75, -0.25, 1.25, 100, -100, 0.3, -1.25});
  Tensor q =
      run({x}, [](Builder& b, const auto& a) { return b.quantize(a[0], per_tensor(0.5, 0)); });
  EXPECT_EQ(q.dtype(), DType::i8);
  expect_eq(q, {8}, {0, 2, 0, 2, 127, -128, 1, -2});
  // The zero point is added after rounding, before clamping.
  Tensor z = run({f32({3}, {0.25, 0.75, 100})},
                 [](Builder& b, const auto& a) { return b.quantize(a[0], per_tensor(0.5, 3)); });
  expect_eq(z, {3}, {3, 5, 127});
}

TEST(ReferenceQuantize, PerChannelUsesTheCoordinateOnTheAxis) {
  // Column 0: scale 1, zp 0; column 1: scale 0.25, zp -1.
  QuantAttrs qa{1, {1.0, 0.25}, {0, -1}};
  Tensor x = f32({2, 2}, {1.5, 0.625, -2.5, 0.125});
  Tensor q = run({x}, [&](Builder& b, const auto& a) { return b.quantize(a[0], qa); });
  // 1.5 -> 2; 0.625 / 0.25 = 2.5 -> 2, -1 -> 1; -2.5 -> -2; 0.125 / 0.25 = 0.5 -> 0, -1 -> -1.
  expect_eq(q, {2, 2}, {2, 1, -2, -1});
  Tensor d = run({q}, [&](Builder& b, const auto& a) { return b.dequantize(a[0], qa); });
  expect_eq(d, {2, 2}, {2, 0.5, -2, 0});
}

TEST(ReferenceQuantize, DequantizeAndFakeQuantize) {
  Tensor q = Tensor::from<std::int8_t>({3}, {-128, 0, 5});
  Tensor d =
      run({q}, [](Builder& b, const auto& a) { return b.dequantize(a[0], per_tensor(0.5, 1)); });
  EXPECT_EQ(d.dtype(), DType::f32);
  expect_eq(d, {3}, {-64.5, -0.5, 2});
  Tensor fq = run({f64({3}, {0.3, 0.8, 100})}, [](Builder& b, const auto& a) {
    return b.fake_quantize(a[0], per_tensor(0.5, 0));
  });
  EXPECT_EQ(fq.dtype(), DType::f64);
  expect_eq(fq, {3}, {0.5, 1.0, 63.5});
}

TEST(ReferenceQuantize, NanInputIsAnError) {
  EXPECT_THROW(run({f32({2}, {1, kNaN})},
                   [](Builder& b, const auto& a) { return b.quantize(a[0], per_tensor(1, 0)); }),
               EvalError);
}
