// reference_interpreter_test.cpp: the reference interpreter's entry points: binding inputs and
// symbols, error reporting, operand checks, output ownership and half-precision rounding. (That
// every op of the table evaluates is checked by completeness_test.cpp.)
#include "reference_testing.hpp"

#include <cmath>

using namespace rlx::ir;
using namespace rlx::ir::reftest;

namespace {

/// Expects \p fn to throw EvalError whose message contains \p part.
template <class Fn> void expect_eval_error(Fn&& fn, const std::string& part) {
  try {
    fn();
    ADD_FAILURE() << "no error; expected one mentioning '" << part << "'";
  } catch (const EvalError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

/// x [batch, 2] f32 + w [2] f32 (a param).
Graph symbolic_graph() {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), 2}, DType::f32));
  NodeId w = b.param("w", Shape::of({2}));
  b.output(b.add(x, w));
  return g;
}

} // namespace

TEST(ReferenceEvaluate, BindsSymbolsFromTheInputs) {
  Graph g = symbolic_graph();
  reference::TensorMap in{{"x", f32({3, 2}, {1, 2, 3, 4, 5, 6})}};
  reference::TensorMap params{{"w", f32({2}, {10, 20})}};
  EXPECT_EQ(reference::bind_inputs(g, in, params), (Bindings{{"batch", 3}}));
  expect_eq(reference::evaluate(g, in, params).at(0), {3, 2}, {11, 22, 13, 24, 15, 26});
  // Another binding of the same graph.
  in["x"] = f32({1, 2}, {0, 0});
  expect_eq(reference::evaluate(g, in, params).at(0), {1, 2}, {10, 20});
}

TEST(ReferenceEvaluate, MissingOrMistypedInterfaceValuesAreErrors) {
  Graph g = symbolic_graph();
  reference::TensorMap params{{"w", f32({2}, {1, 2})}};
  Tensor x = f32({3, 2}, {1, 2, 3, 4, 5, 6});
  expect_eval_error([&] { reference::evaluate(g, {}, params); }, "missing input 'x'");
  expect_eval_error([&] { reference::evaluate(g, {{"x", x}}); }, "missing param 'w'");
  expect_eval_error(
      [&] {
        reference::evaluate(g, {{"x", x.cast(DType::f64)}}, params);
      },
      "dtype f64");
  expect_eval_error([&] { reference::evaluate(g, {{"x", f32({6}, Vec(6, 0))}}, params); }, "rank");
  expect_eval_error(
      [&] {
        reference::evaluate(g, {{"x", f32({3, 3}, Vec(9, 0))}}, params);
      },
      "dim 1 is 3");
  expect_eval_error(
      [&] {
        reference::evaluate(g, {{"x", x}, {"y", x}}, params);
      },
      "unknown input 'y'");
  expect_eval_error([&] { reference::evaluate(g, {{"x", Tensor()}}, params); }, "no value");
}

TEST(ReferenceEvaluate, ContradictorySymbolIsAnError) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("n")}, DType::f32));
  NodeId y = b.input("y", Shape({Dim::sym("n")}, DType::f32));
  b.output(b.add(x, y));
  expect_eval_error(
      [&] {
        reference::evaluate(g, {{"x", f32({2}, {1, 2})}, {"y", f32({3}, {1, 2, 3})}});
      },
      "contradictory sizes for symbol 'n'");
}

TEST(ReferenceEvaluate, ErrorsNameTheNode) {
  Graph g;
  Builder b(g);
  NodeId t = b.input("t", Shape::of({2, 2}));
  NodeId i = b.input("i", Shape::of({1}, DType::i64));
  b.output(b.gather(t, i, 0));
  expect_eval_error(
      [&] {
        reference::evaluate(g, {{"t", f32({2, 2}, {1, 2, 3, 4})}, {"i", i64({1}, {5})}});
      },
      "gather %2");
}

TEST(ReferenceEvaluate, OutputsNeverAliasInputsOrEachOther) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}));
  NodeId n = b.neg(x);
  b.output(x);
  b.output(n);
  b.output(n);
  Tensor in = f32({2}, {1, 2});
  auto out = reference::evaluate(g, {{"x", in}});
  ASSERT_EQ(out.size(), 3u);
  out[0].data<float>()[0] = 100;
  out[1].data<float>()[0] = 100;
  EXPECT_EQ(in.data<float>()[0], 1);
  EXPECT_EQ(out[2].data<float>()[0], -1);
}

TEST(ReferenceEvaluate, ReleasingIntermediatesKeepsReusedValues) {
  // x is used by the first and the last node; the middle values are used once.
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}));
  NodeId y = b.exp(b.neg(x));
  b.output(b.add(b.mul(y, y), x));
  auto r = reference::evaluate(g, {{"x", f64({2}, {0, 1}).cast(DType::f32)}});
  expect_near(r.at(0), {2}, {1, std::exp(-2.0) + 1}, 1e-7);
}

TEST(ReferenceEvaluateNode, ChecksItsOperands) {
  Graph g;
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2}));
  NodeId s = b.add(x, x);
  const Node& add = g.node(s);
  Tensor a = f32({2}, {1, 2});
  std::vector<Tensor> one{a};
  expect_eval_error([&] { reference::evaluate_node(add, one); }, "1 operands");
  std::vector<Tensor> wrong{a, f32({3}, {1, 2, 3})};
  expect_eval_error([&] { reference::evaluate_node(add, wrong); }, "do not fit");
  std::vector<Tensor> other{f32({1}, {1}), f32({1}, {2})}; // fits add, not this node's type
  expect_eval_error([&] { reference::evaluate_node(add, other); }, "node's type");
  std::vector<Tensor> ok{a, a};
  expect_eq(reference::evaluate_node(add, ok), {2}, {2, 4});
  expect_eval_error([&] { reference::evaluate_node(g.node(x), {}); }, "binds it by name");
  Node bad = add;
  bad.attrs = AxisAttrs{};
  expect_eval_error([&] { reference::evaluate_node(bad, ok); }, "wrong attribute");
}

TEST(ReferenceEvaluateNode, ConstantReturnsACopyOfItsValue) {
  Graph g;
  Builder b(g);
  NodeId c = b.constant(i64({2}, {4, 5}));
  Tensor v = reference::evaluate_node(g.node(c), {});
  expect_eq(v, {2}, {4, 5});
  v.data<std::int64_t>()[0] = 9;
  EXPECT_EQ(g.node(c).attr<ConstantAttrs>().value.data<std::int64_t>()[0], 4);
}

TEST(ReferenceEvaluate, HalfPrecisionResultsRoundToTheNodeType) {
  // f16: 1 + 2^-11 (a tie) + 2^-12 rounds up to 1 + 2^-10; computed as 1 + (2^-11 + 2^-12).
  Tensor one = tensor({1}, {1.0}, DType::f16);
  Tensor tiny = tensor({1}, {std::ldexp(1.0, -11) + std::ldexp(1.0, -12)}, DType::f16);
  Tensor s = run({one, tiny}, [](Builder& b, const auto& a) { return b.add(a[0], a[1]); });
  EXPECT_EQ(s.dtype(), DType::f16);
  expect_eq(s, {1}, {1.0 + std::ldexp(1.0, -10)});
  // bf16 softmax of [0, 0] is exactly [0.5, 0.5].
  Tensor sm = run({tensor({2}, {0, 0}, DType::bf16)},
                  [](Builder& b, const auto& a) { return b.softmax(a[0]); });
  EXPECT_EQ(sm.dtype(), DType::bf16);
  expect_eq(sm, {2}, {0.5, 0.5});
}
