// inplace_plan_test.cpp: the memory planner on in-place updates (Graph::aliases): the output's
// buffer is the param's, the schedule runs the write after every other read, and the graphs where
// no order can work are clear errors.
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"

#include <gtest/gtest.h>

#include <algorithm>

namespace rlx::compile {
namespace {

using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Storage;

std::size_t position(const ir::MemoryPlan& p, NodeId id) {
  return static_cast<std::size_t>(std::find(p.schedule.begin(), p.schedule.end(), id) -
                                  p.schedule.begin());
}

TEST(InPlacePlan, OutputLiesOnTheParamItUpdates) {
  Graph g("step");
  Builder b(g);
  NodeId x = b.input("x", Shape({4, 8}));
  NodeId w = b.param("w", Shape({4, 8}));
  NodeId loss = b.sum(b.mul(w, x), {0, 1});
  NodeId w_new = b.sub(w, b.mul(b.scalar(0.5), x));
  g.set_outputs({loss, w_new});
  g.add_alias(1, "w");
  ir::MemoryPlan p = plan_memory(g);
  EXPECT_EQ(p.slot(w_new).storage, Storage::aliased);
  EXPECT_EQ(p.slot(w_new).offset, p.slot(w).offset);
  EXPECT_EQ(p.slot(w_new).view_of, w);
  EXPECT_EQ(p.slot(loss).storage, Storage::output);
  EXPECT_NO_THROW(check_memory_plan(g, p));
  // Without the alias the update is an output region of its own: the arena is larger.
  Graph plain = g;
  plain.set_aliases({});
  EXPECT_LT(p.pinned_bytes, plan_memory(plain).pinned_bytes);
}

TEST(InPlacePlan, ScheduleRunsTheWriteAfterLaterListedReads) {
  // The update is listed before a read of the old value that does not depend on it: the planner
  // must move the read first (or the read would see the new value).
  Graph g("late_read");
  Builder b(g);
  NodeId x = b.input("x", Shape({16}));
  NodeId w = b.param("w", Shape({16}));
  NodeId w_new = b.sub(w, x);
  NodeId late = b.mul(w, b.scalar(2.0)); // reads the old w, listed after the writer
  g.set_outputs({w_new, late});
  g.add_alias(0, "w");
  ir::MemoryPlan p = plan_memory(g);
  EXPECT_LT(position(p, late), position(p, w_new));
  EXPECT_NO_THROW(check_memory_plan(g, p));
  // The checker catches the list order, which would read the overwritten param.
  ir::MemoryPlan bad = p;
  bad.schedule = g.ids();
  EXPECT_THROW(check_memory_plan(g, bad), Error);
}

void expect_plan_error(const Graph& g, const std::string& fragment) {
  try {
    plan_memory(g);
    FAIL() << "plan_memory accepted it (" << fragment << ")";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(InPlacePlan, ReadOfTheOldValueAfterTheUpdateIsAnError) {
  Graph g("needs_both");
  Builder b(g);
  NodeId x = b.input("x", Shape({16}));
  NodeId w = b.param("w", Shape({16}));
  NodeId w_new = b.sub(w, x);
  NodeId both = b.add(w_new, w); // reads the old w but depends on the new one
  g.set_outputs({w_new, both});
  g.add_alias(0, "w");
  expect_plan_error(g, "depends on an in-place update");
}

TEST(InPlacePlan, NonElementwiseWriterIsAnError) {
  Graph g("matmul_writer");
  Builder b(g);
  NodeId w = b.param("w", Shape({4, 4}));
  NodeId w_new = b.matmul(w, w); // element i of the result reads a whole row of w
  g.set_outputs({w_new});
  g.add_alias(0, "w");
  expect_plan_error(g, "other than elementwise");
}

TEST(InPlacePlan, ViewOrLeafOutputIsAnError) {
  Graph g("view_writer");
  Builder b(g);
  NodeId w = b.param("w", Shape({4, 4}));
  NodeId v = b.param("v", Shape({16}));
  g.set_outputs({b.reshape(v, {4, 4})});
  g.add_alias(0, "w");
  (void)w;
  expect_plan_error(g, "a leaf or a view");
}

TEST(InPlacePlan, ReturningTheUpdatedParamToo) {
  Graph g("returns_param");
  Builder b(g);
  NodeId x = b.input("x", Shape({8}));
  NodeId w = b.param("w", Shape({8}));
  g.set_outputs({b.add(w, x), w});
  g.add_alias(0, "w");
  expect_plan_error(g, "also updates in place");
}

TEST(InPlacePlan, UnchangedParamNeedsNoWrite) {
  Graph g("identity");
  Builder b(g);
  NodeId w = b.param("w", Shape({8}));
  g.set_outputs({w});
  g.add_alias(0, "w");
  ir::MemoryPlan p = plan_memory(g);
  EXPECT_EQ(p.slot(w).storage, Storage::param);
  EXPECT_NO_THROW(check_memory_plan(g, p));
}

} // namespace
} // namespace rlx::compile
