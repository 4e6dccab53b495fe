// reference_linalg_test.cpp: the reference interpreter's MatMul, DotGeneral and DenseSolve against
// hand-computed values and plain loops written here.
#include "reference_testing.hpp"

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

Tensor matmul(const Tensor& a, const Tensor& b, bool ta = false, bool tb = false) {
  return run({a, b}, [=](Builder& bl, const auto& s) { return bl.matmul(s[0], s[1], ta, tb); });
}
Tensor dot_general(const Tensor& a, const Tensor& b, DotGeneralAttrs d) {
  return run({a, b}, [&](Builder& bl, const auto& s) { return bl.dot_general(s[0], s[1], d); });
}
Tensor solve(const Tensor& a, const Tensor& b) {
  return run({a, b}, [](Builder& bl, const auto& s) { return bl.dense_solve(s[0], s[1]); });
}
Vec iota(std::size_t n, double start = 1) {
  Vec v(n);
  for (std::size_t i = 0; i < n; ++i)
    v[i] = start + static_cast<double>(i);
  return v;
}

} // namespace

TEST(ReferenceMatMul, TwoByThreeTimesThreeByTwo) {
  // [[1,2,3],[4,5,6]] x [[7,8],[9,10],[11,12]] = [[58,64],[139,154]].
  Tensor a = f32({2, 3}, {1, 2, 3, 4, 5, 6});
  Tensor b = f32({3, 2}, {7, 8, 9, 10, 11, 12});
  expect_eq(matmul(a, b), {2, 2}, {58, 64, 139, 154});
  Tensor at = f32({3, 2}, {1, 4, 2, 5, 3, 6});    // a transposed
  Tensor bt = f32({2, 3}, {7, 9, 11, 8, 10, 12}); // b transposed
  expect_eq(matmul(at, b, true, false), {2, 2}, {58, 64, 139, 154});
  expect_eq(matmul(a, bt, false, true), {2, 2}, {58, 64, 139, 154});
  expect_eq(matmul(at, bt, true, true), {2, 2}, {58, 64, 139, 154});
}

TEST(ReferenceMatMul, BatchDimsBroadcast) {
  // a [2, 1, 2, 2] x b [3, 2, 2] -> [2, 3, 2, 2]; out[i, j] = a[i, 0] x b[j].
  Vec av = iota(8), bv = iota(12, -5);
  Tensor r = matmul(f64({2, 1, 2, 2}, av), f64({3, 2, 2}, bv));
  Vec want;
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 2; ++m)
        for (int n = 0; n < 2; ++n) {
          double acc = 0;
          for (int k = 0; k < 2; ++k)
            acc += av[static_cast<std::size_t>(i * 4 + m * 2 + k)] *
                   bv[static_cast<std::size_t>(j * 4 + k * 2 + n)];
          want.push_back(acc);
        }
  expect_eq(r, {2, 3, 2, 2}, want);
}

TEST(ReferenceMatMul, IntegersComputeExactly) {
  expect_eq(matmul(i64({2, 2}, {1, 2, 3, 4}), i64({2, 2}, {5, 6, 7, 8})), {2, 2}, {19, 22, 43, 50});
  // 2^40 * 2^20 needs int64; doubles would also hold it, but 2^53 + 1 would not.
  const std::int64_t p53 = std::int64_t{1} << 53;
  Tensor r = matmul(i64({1, 2}, {p53, 1}), i64({2, 1}, {1, 1}));
  EXPECT_EQ(r.data<std::int64_t>()[0], p53 + 1);
}

TEST(ReferenceMatMul, BadOperandsAreRejected) {
  EXPECT_THROW(matmul(f32({2, 3}, iota(6)), f32({2, 3}, iota(6))), rlx::Error);
}

TEST(ReferenceDotGeneral, CanonicalMatrixProduct) {
  DotGeneralAttrs d{{}, {}, {1}, {0}};
  expect_eq(dot_general(f32({2, 2}, {1, 2, 3, 4}), f32({2, 2}, {5, 6, 7, 8}), d), {2, 2},
            {19, 22, 43, 50});
}

TEST(ReferenceDotGeneral, BatchAndContractingDimsAnywhere) {
  // lhs [K=3, B=2, M=4], rhs [N=5, B=2, K=3]: out[b, m, n] = sum_k lhs[k, b, m] rhs[n, b, k].
  Vec lv = iota(24, -7), rv = iota(30, -11);
  DotGeneralAttrs d{{1}, {1}, {0}, {2}};
  Tensor r = dot_general(f64({3, 2, 4}, lv), f64({5, 2, 3}, rv), d);
  Vec want;
  for (int b = 0; b < 2; ++b)
    for (int m = 0; m < 4; ++m)
      for (int n = 0; n < 5; ++n) {
        double acc = 0;
        for (int k = 0; k < 3; ++k)
          acc += lv[static_cast<std::size_t>((k * 2 + b) * 4 + m)] *
                 rv[static_cast<std::size_t>((n * 2 + b) * 3 + k)];
        want.push_back(acc);
      }
  expect_eq(r, {2, 4, 5}, want);
}

TEST(ReferenceDotGeneral, SeveralContractingDimsGiveAScalar) {
  // sum_{i,j} l[i, j] r[j, i] with l = [[1,2,3],[4,5,6]], r = [[1,0],[0,1],[1,1]]:
  // 1*1 + 2*0 + 3*1 + 4*0 + 5*1 + 6*1 = 15.
  DotGeneralAttrs d{{}, {}, {0, 1}, {1, 0}};
  expect_eq(dot_general(i64({2, 3}, {1, 2, 3, 4, 5, 6}), i64({3, 2}, {1, 0, 0, 1, 1, 1}), d), {},
            {15});
}

TEST(ReferenceDenseSolve, TwoByTwo) {
  // 2x + y = 3, x + 3y = 5 -> x = 0.8, y = 1.4.
  Tensor a = f64({2, 2}, {2, 1, 1, 3});
  expect_near(solve(a, f64({2, 1}, {3, 5})), {2, 1}, {0.8, 1.4}, 1e-15);
  expect_near(solve(a, f64({2}, {3, 5})), {2}, {0.8, 1.4}, 1e-15);
  // Two right-hand sides at once: b = [[3, 1], [5, 0]] -> second column x = 0.6, y = -0.2.
  expect_near(solve(a, f64({2, 2}, {3, 1, 5, 0})), {2, 2}, {0.8, 0.6, 1.4, -0.2}, 1e-15);
}

TEST(ReferenceDenseSolve, BatchedAndF32) {
  Tensor a = f32({2, 2, 2}, {2, 1, 1, 3, 1, 0, 0, 2});
  Tensor b = f32({2, 2, 1}, {3, 5, 1, 1});
  expect_near(solve(a, b), {2, 2, 1}, {0.8, 1.4, 1, 0.5}, 1e-6);
}

TEST(ReferenceDenseSolve, SingularMatrixIsAnError) {
  try {
    solve(f64({2, 2}, {1, 2, 2, 4}), f64({2}, {1, 1}));
    FAIL() << "no error";
  } catch (const EvalError& e) {
    EXPECT_NE(std::string(e.what()).find("singular"), std::string::npos) << e.what();
  }
}
