// control_flow_test.cpp: If and While run for real on the CPU (only the chosen branch; the body
// only while cond holds), against the reference interpreter, through the whole compile pipeline.
#include "rlx/compile/pipeline.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/reference.hpp"

#include <gtest/gtest.h>

namespace {

using namespace rlx;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::Shape;
using ir::Tensor;

/// Compiles \p g for the CPU, runs it on \p inputs and expects the reference's outputs exactly.
void expect_reference(const Graph& g, const ir::reference::TensorMap& inputs) {
  cpu::CpuBackend backend;
  compile::CompileResult r = compile::CompilePipeline(backend).run(g);
  std::unique_ptr<compile::Executable> exe = backend.compile(r.lir);
  for (const auto& [name, t] : inputs)
    exe->set_input(name, t);
  const std::vector<Tensor> want = ir::reference::evaluate(g, inputs);
  exe->execute();
  for (std::size_t i = 0; i < want.size(); ++i)
    EXPECT_TRUE(exe->output(i).identical(want[i]))
        << "output " << i << ": " << exe->output(i).str() << " where the reference gives "
        << want[i].str();
}

/// `if d != 0 then x / d else 0` on integers: the division must not run when d is 0.
Graph guarded_division() {
  const Shape tx = Shape::of({4}, DType::i32), td = Shape::scalar(DType::i32);
  Graph then_b("then");
  {
    Builder b(then_b);
    NodeId x = b.input("x", tx);
    NodeId d = b.input("d", td);
    b.output(b.div(x, d));
  }
  Graph else_b("else");
  {
    Builder b(else_b);
    NodeId x = b.input("x", tx);
    b.input("d", td);
    b.output(b.mul(x, b.scalar(0, DType::i32)));
  }
  Graph g("guarded_division");
  Builder b(g);
  NodeId x = b.input("x", tx);
  NodeId d = b.input("d", td);
  NodeId pred = b.compare(ir::CmpOp::ne, d, b.scalar(0, DType::i32));
  b.output(b.if_(pred, {x, d}, then_b, else_b));
  return g;
}

TEST(CpuControlFlow, ClaimsIfAndWhile) {
  EXPECT_TRUE(cpu::cpu_claims().claims(ir::OpKind::If));
  EXPECT_TRUE(cpu::cpu_claims().claims(ir::OpKind::While));
}

TEST(CpuControlFlow, GuardedIntegerDivisionRunsOnlyTheTakenBranch) {
  const Graph g = guarded_division();
  const Tensor x = Tensor::from<std::int32_t>({4}, {7, -9, 12, 0});
  expect_reference(g, {{"x", x}, {"d", Tensor::scalar<std::int32_t>(0)}});
  expect_reference(g, {{"x", x}, {"d", Tensor::scalar<std::int32_t>(3)}});
  expect_reference(g, {{"x", x}, {"d", Tensor::scalar<std::int32_t>(-2)}});
}

/// While over (i: i64, acc: f32 [2], table: f32 [5, 2]): while i < 5: acc += table[i]; i += 1,
/// with max_iterations \p max_iterations. Unrolled eagerly, the body would gather row 5, 6 ...
Graph gathering_while(std::int64_t max_iterations) {
  const Shape ti = Shape::scalar(DType::i64), ta = Shape::of({2}), tt = Shape::of({5, 2});
  Graph cond("cond");
  {
    Builder b(cond);
    NodeId i = b.input("i", ti);
    b.input("acc", ta);
    b.input("table", tt);
    b.output(b.compare(ir::CmpOp::lt, i, b.scalar(5, DType::i64)));
  }
  Graph body("body");
  {
    Builder b(body);
    NodeId i = b.input("i", ti);
    NodeId acc = b.input("acc", ta);
    NodeId table = b.input("table", tt);
    b.output(b.add(i, b.scalar(1, DType::i64)));
    b.output(b.add(acc, b.gather(table, i, 0)));
    b.output(table);
  }
  Graph g("gathering_while");
  Builder b(g);
  NodeId table = b.input("table", tt);
  NodeId start = b.input("start", ti);
  NodeId zero = b.constant(Tensor(ta));
  b.output(b.while_({start, zero, table}, cond, body, max_iterations, 1));
  b.output(b.while_({start, zero, table}, cond, body, max_iterations, 0));
  return g;
}

TEST(CpuControlFlow, WhileGathersWithItsCounterAndStopsAtTheTablesEnd) {
  Tensor table(Shape::of({5, 2}));
  for (std::int64_t k = 0; k < table.numel(); ++k)
    table.set_f64(k, 0.5 * static_cast<double>(k) - 1.25);
  for (std::int64_t max_iterations : {100, 5, 3, 1}) {
    SCOPED_TRACE("max_iterations " + std::to_string(max_iterations));
    const Graph g = gathering_while(max_iterations);
    for (std::int64_t start : {0, 2, 5, 9})
      expect_reference(g, {{"table", table}, {"start", Tensor::scalar<std::int64_t>(start)}});
  }
}

TEST(CpuControlFlow, NestedControlFlowAndRepeatedRuns) {
  // A While whose body holds the guarded division: x = d != 0 ? x / d : 0, d -= 1, three times
  // from d = 2 (so the third run takes the else branch). The executable is run twice.
  const Shape tx = Shape::of({4}, DType::i32), td = Shape::scalar(DType::i32);
  Graph cond("cond");
  {
    Builder b(cond);
    b.input("x", tx);
    NodeId d = b.input("d", td);
    b.output(b.compare(ir::CmpOp::gt, d, b.scalar(-5, DType::i32)));
  }
  Graph body("body");
  {
    Builder b(body);
    NodeId x = b.input("x", tx);
    NodeId d = b.input("d", td);
    Graph guarded = guarded_division();
    NodeId pred = b.compare(ir::CmpOp::ne, d, b.scalar(0, DType::i32));
    const auto& a = guarded.node(guarded.outputs()[0]).attr<ir::IfAttrs>();
    b.output(b.if_(pred, {x, d}, *a.then_branch, *a.else_branch));
    b.output(b.sub(d, b.scalar(1, DType::i32)));
  }
  Graph g("nested");
  Builder b(g);
  NodeId x = b.input("x", tx);
  NodeId d = b.input("d", td);
  b.output(b.while_({x, d}, cond, body, 3));
  const ir::reference::TensorMap in = {{"x", Tensor::from<std::int32_t>({4}, {40, -80, 7, 1})},
                                       {"d", Tensor::scalar<std::int32_t>(2)}};
  expect_reference(g, in);
  cpu::CpuBackend backend;
  auto exe = backend.compile(compile::CompilePipeline(backend).run(g).lir);
  for (const auto& [name, t] : in)
    exe->set_input(name, t);
  exe->execute();
  const Tensor first = exe->output(0);
  exe->execute();
  EXPECT_TRUE(exe->output(0).identical(first));
  EXPECT_TRUE(first.identical(ir::reference::evaluate(g, in).at(0)));
}

} // namespace
