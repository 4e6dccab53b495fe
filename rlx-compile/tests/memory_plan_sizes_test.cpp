// memory_plan_sizes_test.cpp: the planner's size arithmetic at the int64 boundary: slot alignment
// and the arena's running sum are checked (a ShapeError), never wrapped into a small arena.
#include "rlx/compile/memory_plan.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"

#include <gtest/gtest.h>

#include <limits>
#include <string>

namespace rlx::compile {
namespace {

TEST(MemoryPlanSizes, AnArenaPastInt64IsAShapeError) {
  // Four pinned params of 2^61 bytes: each fits in int64, their sum (2^63) does not.
  ir::Graph g;
  ir::Builder b(g);
  const ir::Shape big = ir::Shape::of({std::int64_t{1} << 61}, ir::DType::u8);
  ir::NodeId acc = b.param("p0", big);
  for (int i = 1; i < 4; ++i)
    acc = b.add(acc, b.param("p" + std::to_string(i), big));
  b.output(acc);
  EXPECT_THROW(plan_memory(g), ir::ShapeError);
  // Three of them fit: 3 * 2^61 < 2^63.
  ir::Graph fits;
  ir::Builder f(fits);
  f.output(f.add(f.param("a", big), f.param("b", big)));
  EXPECT_EQ(plan_memory(fits).arena_size, 3 * (std::int64_t{1} << 61));
}

TEST(MemoryPlanSizes, AligningASlotPastInt64IsAShapeError) {
  // INT64_MAX bytes fit, but rounding up to the 64-byte alignment does not.
  ir::Graph g;
  ir::Builder b(g);
  const auto max = std::numeric_limits<std::int64_t>::max();
  b.output(b.neg(b.param("p", ir::Shape::of({max}, ir::DType::i8))));
  EXPECT_THROW(plan_memory(g), ir::ShapeError);
}

} // namespace
} // namespace rlx::compile
