// size_test.cpp: checked size arithmetic at the overflow boundaries: Shape::numel / bytes, the
// shape rules that multiply or add sizes, Tensor allocation, and leaf lookup on big graphs.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/size.hpp"
#include "rlx/ir/tensor.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

using namespace rlx::ir;

namespace {

constexpr std::int64_t kMax = std::numeric_limits<std::int64_t>::max();

/// Expects \p f to throw ShapeError whose message holds \p text.
template <class F> void expect_shape_error(F&& f, const std::string& text) {
  try {
    f();
    ADD_FAILURE() << "no ShapeError (expected one mentioning '" << text << "')";
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find(text), std::string::npos) << e.what();
  }
}

} // namespace

TEST(CheckedSize, MulAndAddAtTheBoundary) {
  EXPECT_EQ(checked_mul(kMax, 1, "t"), kMax);
  EXPECT_EQ(checked_mul(3037000499, 3037000499, "t"), 3037000499LL * 3037000499LL);
  EXPECT_EQ(checked_mul(0, kMax, "t"), 0);
  expect_shape_error([] { checked_mul(3037000500, 3037000500, "my op"); }, "my op");
  expect_shape_error([] { checked_mul(kMax / 2 + 1, 2, "t"); }, "overflow");
  EXPECT_EQ(checked_add(kMax - 1, 1, "t"), kMax);
  expect_shape_error([] { checked_add(kMax, 1, "sum"); }, "sum");
}

TEST(CheckedSize, NumelAndBytesThrowInsteadOfWrapping) {
  EXPECT_EQ(Shape::of({kMax}, DType::u8).bytes(), kMax);
  EXPECT_EQ(Shape::of({kMax / 4}, DType::f32).bytes(), kMax / 4 * 4);
  // The parameter: [2^62 + 1] f32 is 2^64 + 4 bytes, which wrapped to 4.
  expect_shape_error([] { Shape::of({4611686018427387905LL}, DType::f32).bytes(); },
                     "[4611686018427387905] f32");
  expect_shape_error([] { Shape::of({1LL << 32, 1LL << 32}).numel(); }, "overflow");
  EXPECT_EQ(Shape::of({1LL << 31, 1LL << 31}).numel(), 1LL << 62);
  // A zero dim makes the count 0 whatever the other dims are.
  EXPECT_EQ(Shape::of({1LL << 62, 1LL << 62, 0}).numel(), 0);
}

TEST(CheckedSize, TensorAllocationIsCheckedBeforeAllocating) {
  expect_shape_error([] { Tensor t(Shape::of({4611686018427387905LL})); }, "overflow");
  // Representable, but more than any machine holds: a clear error, not std::bad_alloc.
  try {
    Tensor t(Shape::of({1LL << 60}, DType::u8));
    ADD_FAILURE() << "no AllocationError";
  } catch (const AllocationError& e) {
    EXPECT_NE(std::string(e.what()).find("memory"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW(check_allocation(1 << 20, "a small buffer"));
  EXPECT_THROW(check_allocation(-1, "a negative size"), AllocationError);
}

TEST(CheckedSize, ShapeRulesThatMultiplyOrAdd) {
  Graph g;
  Builder b(g);
  NodeId big = b.input("big", Shape::of({1LL << 32, 1LL << 32}));
  // Reshape's element counts: 2^64 wrapped to 0, and -1 then inferred 0.
  expect_shape_error([&] { b.reshape(big, {Dim(-1)}); }, "reshape");
  NodeId x = b.input("x", Shape::of({5}));
  // Narrow: start + length past int64.
  expect_shape_error([&] { b.narrow(x, 0, kMax - 1, 10); }, "narrow");
  // Concat: the summed dim past int64.
  NodeId h = b.input("h", Shape::of({1LL << 62}));
  expect_shape_error([&] { b.concat({h, h}, 0); }, "concat");
  // Conv2d and pool2d: padded extents past int64.
  NodeId img = b.input("img", Shape::of({1, 1, 4, 4}));
  NodeId w = b.param("w", Shape::of({1, 1, 3, 3}));
  Conv2dAttrs ca;
  ca.padding = {kMax / 2, 0};
  expect_shape_error([&] { b.conv2d(img, w, {}, ca); }, "conv2d");
  ca.padding = {0, 0};
  ca.dilation = {kMax / 2 + 1, 1};
  expect_shape_error([&] { b.conv2d(img, w, {}, ca); }, "conv2d");
  Pool2dAttrs pa;
  pa.kernel = {kMax, 2};
  pa.padding = {kMax / 2 + 1, 0};
  expect_shape_error([&] { b.pool2d(img, pa); }, "pool2d");
}

TEST(Graph, FindLeafOnAHundredThousandParamsIsALookup) {
  // Graph building was quadratic (find_leaf scanned the node list per new leaf); this completes.
  Graph g;
  Builder b(g);
  constexpr int n = 100000;
  for (int i = 0; i < n; ++i)
    b.param("p" + std::to_string(i), Shape::of({1}));
  EXPECT_EQ(g.params().size(), static_cast<std::size_t>(n));
  EXPECT_EQ(g.find_leaf("p77777", /*param=*/true), NodeId(77777));
  EXPECT_FALSE(g.find_leaf("p77777").valid()); // an Input of that name does not exist
  EXPECT_THROW(b.param("p5", Shape::of({1})), ShapeError);
}

TEST(Graph, FindLeafFollowsCompactionAndCopies) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}));
  NodeId dead = b.neg(x);
  NodeId w = b.param("w", Shape::of({2}));
  b.output(b.add(x, w));
  (void)dead;
  g.compact();
  Graph copy = g;
  for (const Graph* gr : {&g, &copy}) {
    NodeId fx = gr->find_leaf("x");
    NodeId fw = gr->find_leaf("w", true);
    ASSERT_TRUE(fx.valid() && fw.valid());
    EXPECT_EQ(gr->node(fx).attr<LeafAttrs>().name, "x");
    EXPECT_EQ(gr->node(fw).attr<LeafAttrs>().name, "w");
    EXPECT_EQ(gr->node(fw).op, OpKind::Param);
  }
  Graph bound = g.bind({});
  EXPECT_EQ(bound.find_leaf("w", true), g.find_leaf("w", true));
}
