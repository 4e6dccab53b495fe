// kernels_test.cpp: kernel building blocks below the public API: the MatMul bias + activation
// epilogue (the hook a fused MatMul+Bias+Act op will lower onto), the vectorised exp, and
// broadcast iteration plans.
#include "broadcast.hpp"
#include "matmul.hpp"
#include "onednn.hpp"
#include "simd.hpp"

#include <gtest/gtest.h>
#include <tbb/task_arena.h>

#include <cmath>
#include <random>

namespace {

using namespace rlx;

/// act(A·Bᵀ + bias) in double, A [M, K], B [N, K].
std::vector<double> expected(const std::vector<float>& a, const std::vector<float>& b,
                             const std::vector<float>& bias, std::int64_t m, std::int64_t n,
                             std::int64_t k, bool gelu) {
  std::vector<double> y(static_cast<std::size_t>(m * n));
  for (std::int64_t i = 0; i < m; ++i)
    for (std::int64_t j = 0; j < n; ++j) {
      double s = bias[static_cast<std::size_t>(j)];
      for (std::int64_t p = 0; p < k; ++p)
        s += static_cast<double>(a[static_cast<std::size_t>(i * k + p)]) *
             b[static_cast<std::size_t>(j * k + p)];
      y[static_cast<std::size_t>(i * n + j)] =
          gelu ? 0.5 * s * (1 + std::erf(s / std::sqrt(2.0))) : s;
    }
  return y;
}

class MatmulEpilogue : public testing::TestWithParam<cpu::GemmImpl> {};

TEST_P(MatmulEpilogue, BiasAndActivationMatchTheDefinition) {
  const std::int64_t batch = 2, m = 5, n = 7, k = 12;
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(static_cast<std::size_t>(batch * m * k)), b(static_cast<std::size_t>(n * k)),
      bias(static_cast<std::size_t>(n)), y(static_cast<std::size_t>(batch * m * n), -99.0f);
  for (auto* v : {&a, &b, &bias})
    for (auto& x : *v)
      x = u(rng);
  for (bool gelu : {false, true}) {
    cpu::MatMulSpec s;
    s.a_sizes = {batch, m, k};
    s.b_sizes = {n, k};
    s.out_sizes = {batch, m, n};
    s.transpose_b = true;
    s.a = reinterpret_cast<const std::byte*>(a.data());
    s.b = reinterpret_cast<const std::byte*>(b.data());
    s.out = reinterpret_cast<std::byte*>(y.data());
    s.bias = reinterpret_cast<const std::byte*>(bias.data());
    s.act = gelu ? ir::Activation::gelu : ir::Activation::none;
    std::vector<std::byte> scratch(
        static_cast<std::size_t>(cpu::matmul_scratch_bytes(s, GetParam())) + 1);
    auto kernel = cpu::make_matmul_kernel(s, GetParam(), scratch.data());
    tbb::task_arena pool(2);
    dnnl::stream stream(cpu::onednn::engine());
    cpu::ExecContext ctx{&pool, &stream, 2};
    kernel->run(ctx);
    auto want = expected(a, b, bias, batch * m, n, k, gelu);
    for (std::size_t i = 0; i < y.size(); ++i)
      EXPECT_NEAR(y[i], want[i], 2e-5) << "element " << i << (gelu ? " (gelu)" : "");
  }
}

TEST_P(MatmulEpilogue, LargeProductsSplitOverThreadsMatchTheDefinition) {
  // Large enough that OpenBLAS splits the columns over tasks (uneven blocks: 200 = 112 + 88) and
  // applies the epilogue per block; and a batched product whose matrices are split over tasks.
  const std::int64_t batch = 2, m = 64, n = 200, k = 160;
  std::mt19937 rng(9);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> a(static_cast<std::size_t>(batch * m * k)),
      b(static_cast<std::size_t>(batch * n * k)), bias(static_cast<std::size_t>(n)),
      y(static_cast<std::size_t>(batch * m * n), -99.0f);
  for (auto* v : {&a, &b, &bias})
    for (auto& x : *v)
      x = u(rng);
  tbb::task_arena pool(2);
  dnnl::stream stream(cpu::onednn::engine());
  cpu::ExecContext ctx{&pool, &stream, 2};
  for (bool batched_b : {false, true}) {
    cpu::MatMulSpec s;
    s.a_sizes = {batch, m, k};
    s.b_sizes =
        batched_b ? std::vector<std::int64_t>{batch, n, k} : std::vector<std::int64_t>{n, k};
    s.out_sizes = {batch, m, n};
    s.transpose_b = true;
    s.a = reinterpret_cast<const std::byte*>(a.data());
    s.b = reinterpret_cast<const std::byte*>(b.data());
    s.out = reinterpret_cast<std::byte*>(y.data());
    s.bias = reinterpret_cast<const std::byte*>(bias.data());
    s.act = ir::Activation::gelu;
    std::vector<std::byte> scratch(
        static_cast<std::size_t>(cpu::matmul_scratch_bytes(s, GetParam())) + 1);
    auto kernel = cpu::make_matmul_kernel(s, GetParam(), scratch.data());
    kernel->run(ctx);
    for (std::int64_t i = 0; i < batch; ++i) {
      std::vector<float> ai(a.begin() + i * m * k, a.begin() + (i + 1) * m * k);
      const std::int64_t bo = batched_b ? i * n * k : 0;
      std::vector<float> bi(b.begin() + bo, b.begin() + bo + n * k);
      auto want = expected(ai, bi, bias, m, n, k, true);
      for (std::size_t e = 0; e < want.size(); ++e)
        ASSERT_NEAR(y[static_cast<std::size_t>(i * m * n) + e], want[e], 5e-5)
            << "matrix " << i << " element " << e << (batched_b ? " (batched b)" : "");
    }
  }
}

INSTANTIATE_TEST_SUITE_P(AllGemms, MatmulEpilogue,
                         testing::Values(cpu::GemmImpl::onednn, cpu::GemmImpl::openblas,
                                         cpu::GemmImpl::loop),
                         [](const testing::TestParamInfo<cpu::GemmImpl>& i) {
                           return std::string(i.param == cpu::GemmImpl::onednn     ? "onednn"
                                              : i.param == cpu::GemmImpl::openblas ? "openblas"
                                                                                   : "loop");
                         });

// A product too large for the machine is refused with AllocationError before oneDNN sees it (on
// AVX-512 oneDNN's primitive creation raised SIGFPE for these sizes; AVX2 only got an error later).
TEST(MatmulLimits, OneDnnIsNotAskedForOperandsLargerThanTheMachine) {
  cpu::MatMulSpec s;
  s.a_sizes = {std::int64_t{1} << 48, 256};
  s.b_sizes = {256, 256};
  s.out_sizes = {std::int64_t{1} << 48, 256};
  EXPECT_THROW(cpu::matmul_scratch_bytes(s, cpu::GemmImpl::onednn), ir::AllocationError);
  // Element counts past int64 are a ShapeError, not a wrapped size.
  s.a_sizes = {std::int64_t{1} << 40, std::int64_t{1} << 40};
  s.b_sizes = {std::int64_t{1} << 40, 2};
  s.out_sizes = {std::int64_t{1} << 40, 2};
  EXPECT_THROW(cpu::matmul_scratch_bytes(s, cpu::GemmImpl::onednn), ir::ShapeError);
  // A product that fits is still asked for.
  s.a_sizes = {64, 32};
  s.b_sizes = {32, 16};
  s.out_sizes = {64, 16};
  EXPECT_GE(cpu::matmul_scratch_bytes(s, cpu::GemmImpl::onednn), 0);
}

TEST(SimdExp, WithinTwoUlpOverTheWholeRange) {
  float worst = 0;
  for (float x = -87.0f; x < 88.5f; x += 0.00731f) {
    double want = std::exp(static_cast<double>(x));
    double got = cpu::simd::exp(x);
    float ulp = std::nextafter(static_cast<float>(want), INFINITY) - static_cast<float>(want);
    worst = std::max(worst, static_cast<float>(std::fabs(got - want) / ulp));
  }
  EXPECT_LE(worst, 2.0f);
  EXPECT_EQ(cpu::simd::exp(-INFINITY), 0.0f);
  EXPECT_EQ(cpu::simd::exp(-200.0f), 0.0f);
  EXPECT_EQ(cpu::simd::exp(100.0f), INFINITY);
  EXPECT_TRUE(std::isnan(cpu::simd::exp(NAN)));
  EXPECT_EQ(cpu::simd::exp(0.0f), 1.0f);
}

/// The largest error of \p f against \p ref over [lo, hi), in ulp of the f32 result, counting
/// at least FLT_MIN-sized ulps (denormal results are not what these functions are for).
template <class F, class R> float worst_ulp(F f, R ref, float lo, float hi, float step) {
  float worst = 0;
  for (float x = lo; x < hi; x += step) {
    double want = ref(static_cast<double>(x));
    auto w = static_cast<float>(want);
    float ulp = std::max(std::nextafter(std::fabs(w), INFINITY) - std::fabs(w), 1e-38f);
    worst = std::max(worst, static_cast<float>(std::fabs(f(x) - want) / ulp));
  }
  return worst;
}

TEST(SimdTanhErf, WithinEightUlpOverTheWholeRange) {
  // Measured worst cases (baseline x86-64, no FMA): tanh 5.2 ulp, erf 6.1 ulp. Steps sample the
  // whole range and, densely, the neighbourhood of 0.
  auto tanh_ref = [](double x) { return std::tanh(x); };
  auto erf_ref = [](double x) { return std::erf(x); };
  auto tanh_f = [](float x) { return cpu::simd::tanh(x); };
  auto erf_f = [](float x) { return cpu::simd::erf(x); };
  EXPECT_LE(worst_ulp(tanh_f, tanh_ref, -12.0f, 12.0f, 0.000731f), 8.0f);
  EXPECT_LE(worst_ulp(tanh_f, tanh_ref, -0.01f, 0.01f, 0.0000173f), 8.0f);
  EXPECT_LE(worst_ulp(erf_f, erf_ref, -6.0f, 6.0f, 0.000731f), 8.0f);
  EXPECT_LE(worst_ulp(erf_f, erf_ref, -0.01f, 0.01f, 0.0000173f), 8.0f);
  for (auto f : {+tanh_f, +erf_f}) {
    EXPECT_TRUE(std::isnan(f(NAN)));
    EXPECT_EQ(f(INFINITY), 1.0f);
    EXPECT_EQ(f(-INFINITY), -1.0f);
    EXPECT_EQ(f(0.0f), 0.0f);
  }
}

TEST(SimdExp, NonPositiveFormIsExpToTheBit) {
  // The softmax's exp (no upper clamp, 2^n in one step) against simd::exp over x <= 0, down past
  // the flush to 0 and through the subnormal results near it.
  int checked = 0;
  for (float x = -90.0f; x <= 0.0f; x += 0.000917f, ++checked)
    ASSERT_EQ(cpu::simd::exp_nonpositive(x), cpu::simd::exp(x)) << "x = " << x;
  for (float x : {0.0f, -0.0f, -87.29f, -87.3f, -87.31f, -INFINITY})
    EXPECT_EQ(cpu::simd::exp_nonpositive(x), cpu::simd::exp(x)) << "x = " << x;
  EXPECT_TRUE(std::isnan(cpu::simd::exp_nonpositive(NAN)));
  EXPECT_GT(checked, 90000);
}

TEST(SimdMath, VectorFormsMatchTheScalarLaneByLane) {
  // The packed GEMM's tile runs these on registers; the one-op kernels on floats: one definition,
  // the same values (this file's compile flags for both; a vector the baseline ISA has).
  using V = float __attribute__((vector_size(16)));
  constexpr int kLanes = 4;
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-9.0f, 9.0f);
  const float special[] = {0.0f, -0.0f, NAN, INFINITY, -INFINITY, 1e-5f, -1e-5f, 88.0f};
  for (int round = 0; round < 2000; ++round) {
    V x;
    for (int l = 0; l < kLanes; ++l)
      x[l] = round < 2 ? special[round * kLanes + l] : u(rng) * (round % 3 == 0 ? 12.0f : 1.0f);
    auto same = [&](const char* name, V got, auto scalar) {
      for (int l = 0; l < kLanes; ++l) {
        const float want = scalar(x[l]);
        if (!(got[l] == want || (std::isnan(got[l]) && std::isnan(want))))
          ADD_FAILURE() << name << "(" << x[l] << ") = " << got[l] << " on a vector, " << want;
      }
    };
    same("exp", cpu::simd::exp(x), [](float v) { return cpu::simd::exp(v); });
    same("tanh", cpu::simd::tanh(x), [](float v) { return cpu::simd::tanh(v); });
    same("erf", cpu::simd::erf(x), [](float v) { return cpu::simd::erf(v); });
    same("sigmoid", cpu::simd::sigmoid(x), [](float v) { return cpu::simd::sigmoid(v); });
    same("relu", cpu::simd::relu(x), [](float v) { return cpu::simd::relu(v); });
    same("gelu", cpu::simd::gelu(x), [](float v) { return cpu::simd::gelu(v); });
    same("gelu_tanh", cpu::simd::gelu_tanh(x), [](float v) { return cpu::simd::gelu_tanh(v); });
    same("silu", cpu::simd::silu(x), [](float v) { return cpu::simd::silu(v); });
  }
}

TEST(SimdRows, ReductionsMatchPlainLoops) {
  std::vector<float> x(1003);
  for (std::size_t i = 0; i < x.size(); ++i)
    x[i] = std::sin(static_cast<float>(i)) * 3;
  double sum = 0, sq = 0;
  float mx = x[0];
  for (float v : x) {
    sum += v;
    sq += static_cast<double>(v) * v;
    mx = std::max(mx, v);
  }
  auto n = static_cast<std::int64_t>(x.size());
  EXPECT_NEAR(cpu::simd::sum(x.data(), n), sum, 1e-3);
  EXPECT_NEAR(cpu::simd::sum_squares(x.data(), n), sq, 1e-2);
  EXPECT_EQ(cpu::simd::max(x.data(), n), mx);
  x[500] = NAN;
  EXPECT_TRUE(std::isnan(cpu::simd::max(x.data(), n)));
}

TEST(BroadcastPlan, CollapsesContiguousDimsAndZeroesBroadcastStrides) {
  std::vector<std::vector<std::int64_t>> ins{{2, 3, 4}, {4}};
  auto p = cpu::plan_broadcast({2, 3, 4}, ins);
  ASSERT_EQ(p.dims, (std::vector<std::int64_t>{6, 4}));
  EXPECT_EQ(p.strides[0], (std::vector<std::int64_t>{4, 1}));
  EXPECT_EQ(p.strides[1], (std::vector<std::int64_t>{0, 1}));
  std::vector<std::vector<std::int64_t>> outer{{4, 1}, {1, 5}};
  auto q = cpu::plan_broadcast({4, 5}, outer);
  ASSERT_EQ(q.dims, (std::vector<std::int64_t>{4, 5}));
  EXPECT_EQ(q.strides[0], (std::vector<std::int64_t>{1, 0}));
  EXPECT_EQ(q.strides[1], (std::vector<std::int64_t>{0, 1}));
  std::int64_t off[2];
  q.row_offsets(3, off);
  EXPECT_EQ(off[0], 3);
  EXPECT_EQ(off[1], 0);
  std::vector<std::vector<std::int64_t>> scalars{{}, {}};
  auto r = cpu::plan_broadcast({}, scalars);
  EXPECT_EQ(r.dims, (std::vector<std::int64_t>{1}));
  EXPECT_EQ(r.rows(), 1);
}

} // namespace
