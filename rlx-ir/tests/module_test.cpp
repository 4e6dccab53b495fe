// module_test.cpp: Module stages (HIR -> MIR -> LIR), the memory plan accessor and stage names.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/module.hpp"

#include <gtest/gtest.h>

#include <string>

using namespace rlx::ir;

namespace {

/// x [batch, 4] -> Linear(relu) -> output.
Graph linear_graph() {
  Graph g("mlp");
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), Dim(4)}, DType::f32));
  b.output(
      b.linear(x, b.param("w", Shape::of({3, 4})), b.param("b", Shape::of({3})), Activation::relu));
  return g;
}

std::string message_of(const auto& fn) {
  try {
    fn();
  } catch (const rlx::Error& e) {
    return e.what();
  }
  return "<no error>";
}

} // namespace

TEST(Module, HirLowersToMir) {
  Module hir = Module::hir(linear_graph());
  EXPECT_EQ(hir.stage(), Stage::hir);
  EXPECT_TRUE(has_hir_ops(hir.graph()));
  Module mir = hir.lower();
  EXPECT_EQ(mir.stage(), Stage::mir);
  EXPECT_FALSE(has_hir_ops(mir.graph()));
  EXPECT_TRUE(mir.graph() == lower_hir(hir.graph()));
  EXPECT_EQ(mir.graph().name(), "mlp");
  // Lowering a MIR module returns it unchanged; the HIR module itself is untouched.
  EXPECT_TRUE(mir.lower().graph() == mir.graph());
  EXPECT_EQ(mir.lower().stage(), Stage::mir);
  EXPECT_TRUE(has_hir_ops(hir.graph()));
}

TEST(Module, MirRejectsHirOps) {
  EXPECT_THROW(Module::mir(linear_graph()), VerifyError);
  EXPECT_NO_THROW(Module::mir(lower_hir(linear_graph())));
}

TEST(Module, ConstructorsVerify) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}));
  NodeId bad = g.add_unchecked(Node{OpKind::Relu, {x}, NoAttrs{}, Shape::of({3}), ""});
  g.set_outputs({bad});
  EXPECT_THROW(Module::hir(g), VerifyError);
  EXPECT_THROW(Module::mir(g), VerifyError);
  EXPECT_THROW(Module::lir(g, MemoryPlan{}), VerifyError);
}

TEST(Module, PlanOnlyAtLir) {
  Graph g = lower_hir(linear_graph());
  Module mir = Module::mir(g);
  std::string msg = message_of([&] { (void)mir.plan(); });
  EXPECT_NE(msg.find("mir"), std::string::npos) << msg;
  EXPECT_NE(msg.find("mlp"), std::string::npos) << msg;

  MemoryPlan plan;
  plan.arena_size = 4096;
  plan.assignments.resize(g.size());
  plan.assignments[0].storage = Storage::input;
  for (NodeId id : g.ids())
    plan.schedule.push_back(id);
  Module lir = Module::lir(g, plan);
  EXPECT_EQ(lir.stage(), Stage::lir);
  EXPECT_EQ(lir.plan().arena_size, 4096);
  EXPECT_EQ(lir.plan().slot(NodeId(0)).storage, Storage::input);
  EXPECT_THROW((void)lir.plan().slot(NodeId(99)), std::out_of_range);
  // Copies share the plan; lowering an LIR module returns it unchanged.
  Module copy = lir;
  EXPECT_EQ(&copy.plan(), &lir.plan());
  EXPECT_EQ(lir.lower().stage(), Stage::lir);
  EXPECT_EQ(lir.lower().plan().arena_size, 4096);
}

TEST(Module, LirRejectsAPlanForAnotherGraph) {
  Graph g = lower_hir(linear_graph());
  MemoryPlan short_plan;
  short_plan.assignments.resize(g.size() - 1);
  std::string msg = message_of([&] { Module::lir(g, short_plan); });
  EXPECT_NE(msg.find("assigns"), std::string::npos) << msg;
  MemoryPlan bad_schedule;
  bad_schedule.assignments.resize(g.size());
  bad_schedule.schedule.push_back(NodeId(static_cast<std::uint32_t>(g.size())));
  EXPECT_THROW(Module::lir(g, bad_schedule), rlx::Error);
  EXPECT_THROW(Module::lir(linear_graph(), MemoryPlan{}), VerifyError); // HIR ops at LIR
}

TEST(Module, StageAndStorageNames) {
  EXPECT_EQ(stage_name(Stage::hir), "hir");
  EXPECT_EQ(stage_name(Stage::mir), "mir");
  EXPECT_EQ(stage_name(Stage::lir), "lir");
  EXPECT_EQ(storage_name(Storage::none), "none");
  EXPECT_EQ(storage_name(Storage::input), "input");
  EXPECT_EQ(storage_name(Storage::param), "param");
  EXPECT_EQ(storage_name(Storage::constant), "constant");
  EXPECT_EQ(storage_name(Storage::output), "output");
  EXPECT_EQ(storage_name(Storage::temp), "temp");
  EXPECT_EQ(storage_name(Storage::view), "view");
}
