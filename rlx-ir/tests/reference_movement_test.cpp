// reference_movement_test.cpp: the reference interpreter's data-movement ops (Reshape, Transpose,
// Narrow, Concat, Expand, Gather, ScatterAdd) against hand-computed values.
#include "reference_testing.hpp"

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {
const Tensor kMat = f32({2, 3}, {1, 2, 3, 4, 5, 6});
}

TEST(ReferenceReshape, KeepsRowMajorOrder) {
  Tensor r = run({kMat}, [](Builder& b, const auto& a) { return b.reshape(a[0], {3, -1}); });
  expect_eq(r, {3, 2}, {1, 2, 3, 4, 5, 6});
  Tensor i = run({i64({4}, {7, 8, 9, 10})}, [](Builder& b, const auto& a) {
    return b.reshape(a[0], {2, 1, 2});
  });
  expect_eq(i, {2, 1, 2}, {7, 8, 9, 10});
}

TEST(ReferenceTranspose, OutDimIIsInDimPermI) {
  expect_eq(run({kMat},
                [](Builder& b, const auto& a) {
                  return b.transpose(a[0], {1, 0});
                }),
            {3, 2}, {1, 4, 2, 5, 3, 6});
  // [2, 3, 2] with perm [2, 0, 1]: out[k][i][j] = in[i][j][k].
  Vec v{0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  Tensor r = run({f64({2, 3, 2}, v)}, [](Builder& b, const auto& a) {
    return b.transpose(a[0], {2, 0, 1});
  });
  expect_eq(r, {2, 2, 3}, {0, 2, 4, 6, 8, 10, 1, 3, 5, 7, 9, 11});
}

TEST(ReferenceNarrow, SlicesAlongAnyAxis) {
  Tensor x = i64({3, 4}, {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12});
  expect_eq(run({x}, [](Builder& b, const auto& a) { return b.narrow(a[0], 1, 1, 2); }), {3, 2},
            {2, 3, 6, 7, 10, 11});
  expect_eq(run({x}, [](Builder& b, const auto& a) { return b.narrow(a[0], 0, 2, 1); }), {1, 4},
            {9, 10, 11, 12});
  expect_eq(run({x}, [](Builder& b, const auto& a) { return b.narrow(a[0], -1, 3, 1); }), {3, 1},
            {4, 8, 12});
}

TEST(ReferenceConcat, JoinsAlongTheAxis) {
  Tensor a = f32({2, 1}, {1, 2});
  Tensor b = f32({2, 2}, {3, 4, 5, 6});
  expect_eq(run({a, b, a},
                [](Builder& bl, const auto& s) {
                  return bl.concat({s[0], s[1], s[2]}, 1);
                }),
            {2, 4}, {1, 3, 4, 1, 2, 5, 6, 2});
  expect_eq(run({b, b},
                [](Builder& bl, const auto& s) {
                  return bl.concat({s[0], s[1]}, 0);
                }),
            {4, 2}, {3, 4, 5, 6, 3, 4, 5, 6});
  Tensor t = Tensor::from<bool>({1}, {true});
  Tensor f = Tensor::from<bool>({2}, {false, true});
  expect_eq(run({t, f},
                [](Builder& bl, const auto& s) {
                  return bl.concat({s[0], s[1]}, 0);
                }),
            {3}, {1, 0, 1});
}

TEST(ReferenceExpand, BroadcastsToTheTarget) {
  Tensor x = f32({3, 1}, {1, 2, 3});
  expect_eq(run({x},
                [](Builder& b, const auto& a) {
                  return b.expand(a[0], {2, -1, 2});
                }),
            {2, 3, 2}, {1, 1, 2, 2, 3, 3, 1, 1, 2, 2, 3, 3});
}

TEST(ReferenceGather, EmbeddingLookupAlongAxis0) {
  // out dims = indices dims + table[1:]; out[i, j, :] = table[indices[i, j], :].
  Tensor table = f32({4, 2}, {0, 1, 10, 11, 20, 21, 30, 31});
  Tensor idx = i64({2, 2}, {3, 0, 1, 1});
  expect_eq(run({table, idx}, [](Builder& b, const auto& a) { return b.gather(a[0], a[1], 0); }),
            {2, 2, 2}, {30, 31, 0, 1, 10, 11, 10, 11});
}

TEST(ReferenceGather, AlongAnInnerAxisWithI32Indices) {
  // out[r, k] = kMat[r, idx[k]].
  Tensor idx = i32({3}, {2, 0, 2});
  expect_eq(run({kMat, idx}, [](Builder& b, const auto& a) { return b.gather(a[0], a[1], 1); }),
            {2, 3}, {3, 1, 3, 6, 4, 6});
}

TEST(ReferenceGather, OutOfRangeAndNegativeIndicesAreErrors) {
  for (std::int64_t bad : {std::int64_t{2}, std::int64_t{-1}}) {
    try {
      run({kMat, i64({2}, {0, bad})},
          [](Builder& b, const auto& a) { return b.gather(a[0], a[1], 0); });
      FAIL() << "index " << bad << " accepted";
    } catch (const EvalError& e) {
      EXPECT_NE(std::string(e.what()).find("out of range"), std::string::npos) << e.what();
    }
  }
}

TEST(ReferenceScatterAdd, RepeatedIndicesAccumulate) {
  // Rows 1, 3, 1 of a zero [4, 2] target receive [1, 2], [3, 4], [5, 6].
  Tensor target = f32({4, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
  Tensor idx = i64({3}, {1, 3, 1});
  Tensor upd = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_eq(run({target, idx, upd},
                [](Builder& b, const auto& a) { return b.scatter_add(a[0], a[1], a[2], 0); }),
            {4, 2}, {0, 0, 6, 8, 0, 0, 3, 4});
}

TEST(ReferenceScatterAdd, AlongAxis1OnIntegers) {
  Tensor target = i64({2, 3}, {1, 1, 1, 1, 1, 1});
  Tensor idx = i64({2}, {2, 2});
  Tensor upd = i64({2, 2}, {1, 2, 3, 4});
  expect_eq(run({target, idx, upd},
                [](Builder& b, const auto& a) { return b.scatter_add(a[0], a[1], a[2], 1); }),
            {2, 3}, {1, 1, 4, 1, 1, 8});
}

TEST(ReferenceScatterAdd, OutOfRangeIsAnError) {
  EXPECT_THROW(run({f32({2}, {0, 0}), i64({1}, {2}), f32({1}, {1})},
                   [](Builder& b, const auto& a) { return b.scatter_add(a[0], a[1], a[2], 0); }),
               EvalError);
}
