// lir_check_test.cpp: check_compilable, what every backend's compile asks of its LIR module
// (an LIR stage, the backend's alignment, no symbolic type), each refusal a one-line error that
// names the backend.
#include "rlx/compile/lir_check.hpp"
#include "rlx/compile/memory_plan.hpp"
#include "rlx/ir/builder.hpp"
#include "testing/compile_testing.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using testing::expect_error;

ir::Graph relu_graph(ir::Shape s) {
  ir::Graph g("g");
  ir::Builder b(g);
  b.output(b.relu(b.input("x", s)));
  return g;
}

TEST(CheckCompilable, AcceptsAPlannedStaticGraph) {
  const ir::Graph g = relu_graph(ir::Shape::of({2, 3}));
  const ir::Module lir = ir::Module::lir(g, plan_memory(g));
  EXPECT_NO_THROW(check_compilable(lir, "rlx-test", 64));
  EXPECT_NO_THROW(check_compilable(lir, "rlx-test", 16)); // 64 is a multiple of 16
}

TEST(CheckCompilable, RefusesAModuleBeforeLir) {
  expect_error(
      "a MIR module compiled",
      [] { check_compilable(ir::Module::mir(relu_graph(ir::Shape::of({2}))), "rlx-test", 64); },
      {"rlx-test: compile needs an LIR module", "got mir"});
}

TEST(CheckCompilable, RefusesAPlanOfAnotherAlignment) {
  const ir::Graph g = relu_graph(ir::Shape::of({2, 3}));
  PlanOptions o;
  o.alignment = 16;
  const ir::Module lir = ir::Module::lir(g, plan_memory(g, o));
  expect_error("a 16-byte plan for a 64-byte backend", [&] { check_compilable(lir, "rlx-x", 64); },
               {"rlx-x: the memory plan's alignment 16 is not a multiple of the backend's 64"});
}

TEST(CheckCompilable, RefusesASymbolicType) {
  const ir::Graph g = relu_graph(ir::Shape({ir::Dim::sym("batch"), 3}));
  ir::MemoryPlan plan;
  plan.assignments.resize(g.size());
  const ir::Module lir = ir::Module::lir(g, plan);
  expect_error("a symbolic graph compiled", [&] { check_compilable(lir, "rlx-test", 64); },
               {"rlx-test: input %0", "has symbolic type", "bind the symbols"});
}

} // namespace
} // namespace rlx::compile
