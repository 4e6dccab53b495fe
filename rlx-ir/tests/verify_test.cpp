// verify_test.cpp: every rule of the verifier, each broken by a graph built with add_unchecked (or
// a mutation that the Graph API allows), and the message naming the node and the rule.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

namespace rlx::ir {
namespace {

/// The message of the VerifyError that verify(\p g, \p opts) throws ("" when it passes).
std::string verify_error(const Graph& g, VerifyOptions opts = {}) {
  try {
    verify(g, opts);
  } catch (const VerifyError& e) {
    return e.what();
  }
  return "";
}

const Shape kVec({3}, DType::f32);

Node leaf(OpKind op, std::string name, Shape s = kVec) {
  return Node{op, {}, LeafAttrs{std::move(name), s}, s, {}};
}

TEST(Verify, AcceptsEverySampleGraph) {
  for (OpKind op : testing::all_ops())
    EXPECT_EQ(verify_error(testing::sample_graph(op)), "") << op_name(op);
}

TEST(Verify, EdgesOutOfRangeCannotBeBuilt) {
  // The Graph API refuses dangling ids itself, so the verifier's range check is a second line.
  Graph g("g");
  EXPECT_THROW(g.add_unchecked(Node{OpKind::Relu, {NodeId(0)}, NoAttrs{}, kVec, {}}), ShapeError);
  g.add_unchecked(leaf(OpKind::Input, "x"));
  EXPECT_THROW(g.set_outputs({NodeId(4)}), ShapeError);
  EXPECT_THROW(g.add_unchecked(Node{OpKind::Relu, {NodeId()}, NoAttrs{}, kVec, {}}), ShapeError);
}

TEST(Verify, TopologicalOrder) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", kVec);
  NodeId y = b.neg(x);
  NodeId z = b.exp(x);
  b.output(y);
  b.output(z);
  g.set_input(y, 0, z); // %1 now reads %2
  EXPECT_EQ(verify_error(g), "graph @g: neg %1: operand 0 is %2, which is not defined before the "
                             "node (the node list must be in topological order)");
}

TEST(Verify, Arity) {
  Graph g("g");
  NodeId x = g.add_unchecked(leaf(OpKind::Input, "x"));
  NodeId y = g.add_unchecked(Node{OpKind::Relu, {x, x}, NoAttrs{}, kVec, {}});
  g.set_outputs({y});
  EXPECT_EQ(verify_error(g), "graph @g: relu %1: has 2 operands; the op takes 1");
  Graph h("h");
  NodeId a = h.add_unchecked(leaf(OpKind::Input, "a"));
  h.set_outputs({h.add_unchecked(Node{OpKind::LayerNorm, {a}, NormAttrs{}, kVec, {}})});
  EXPECT_EQ(verify_error(h), "graph @h: layer_norm %1: has 1 operands; the op takes 2 to 3");
  Graph k("k");
  k.set_outputs({k.add_unchecked(Node{OpKind::Concat, {}, AxisAttrs{}, kVec, {}})});
  EXPECT_EQ(verify_error(k), "graph @k: concat %0: has 0 operands; the op takes at least 1");
}

TEST(Verify, AttributeStructMatchesTheOp) {
  Graph g("g");
  NodeId x = g.add_unchecked(leaf(OpKind::Input, "x"));
  g.set_outputs({g.add_unchecked(Node{OpKind::Relu, {x}, MatMulAttrs{}, kVec, {}})});
  EXPECT_EQ(verify_error(g), "graph @g: relu %1: carries the wrong attribute struct for this op "
                             "(alternative 5, ops.def says 0)");
}

TEST(Verify, AttributeValues) {
  Graph g("g");
  NodeId x = g.add_unchecked(leaf(OpKind::Input, "x", Shape({2, 3})));
  g.set_outputs(
      {g.add_unchecked(Node{OpKind::Transpose, {x}, TransposeAttrs{{1, 1}}, Shape({3, 2}), {}})});
  EXPECT_EQ(verify_error(g), "graph @g: transpose %1: attributes or operand types are invalid: "
                             "transpose: perm is not a permutation of 0..1");
  Graph h("h");
  NodeId y = h.add_unchecked(leaf(OpKind::Input, "x"));
  NodeId gamma = h.add_unchecked(leaf(OpKind::Param, "gamma"));
  h.set_outputs(
      {h.add_unchecked(Node{OpKind::LayerNorm, {y, gamma}, NormAttrs{-1.0}, kVec, "ln"})});
  EXPECT_EQ(verify_error(h), "graph @h: layer_norm %2 'ln': attributes or operand types are "
                             "invalid: layer_norm: eps must be > 0");
}

TEST(Verify, DeclaredTypeIsTheDerivedOne) {
  Graph g("g");
  NodeId x = g.add_unchecked(leaf(OpKind::Input, "x"));
  g.set_outputs({g.add_unchecked(Node{OpKind::Relu, {x}, NoAttrs{}, Shape({3}, DType::f64), {}})});
  EXPECT_EQ(verify_error(g),
            "graph @g: relu %1: declared type [3] f64 but the shape rule derives [3] f32");
  Graph h("h");
  NodeId y = h.add_unchecked(leaf(OpKind::Input, "x"));
  h.set_outputs({h.add_unchecked(Node{OpKind::Relu, {y}, NoAttrs{}, Shape({4}), {}})});
  EXPECT_EQ(verify_error(h),
            "graph @h: relu %1: declared type [4] f32 but the shape rule derives [3] f32");
  // A leaf's type is the one its attributes declare.
  Graph k("k");
  k.set_outputs({k.add_unchecked(Node{OpKind::Input, {}, LeafAttrs{"x", kVec}, Shape({2}), {}})});
  EXPECT_EQ(verify_error(k),
            "graph @k: input %0 'x': declared type [2] f32 but the shape rule derives [3] f32");
}

TEST(Verify, LeafNamesAreNonEmptyAndUniquePerKind) {
  Graph g("g");
  g.set_outputs({g.add_unchecked(leaf(OpKind::Input, ""))});
  EXPECT_EQ(verify_error(g), "graph @g: input %0 '': leaf has an empty interface name");
  Graph h("h");
  NodeId a = h.add_unchecked(leaf(OpKind::Input, "x"));
  NodeId b = h.add_unchecked(leaf(OpKind::Input, "x"));
  h.set_outputs({a, b});
  EXPECT_EQ(verify_error(h), "graph @h: input %1 'x': a second input named 'x' (interface names "
                             "must be unique per kind)");
  Graph k("k");
  NodeId p = k.add_unchecked(leaf(OpKind::Param, "w"));
  NodeId q = k.add_unchecked(leaf(OpKind::Param, "w"));
  k.set_outputs({p, q});
  EXPECT_EQ(verify_error(k), "graph @k: param %1 'w': a second param named 'w' (interface names "
                             "must be unique per kind)");
  // An input and a param may share a name: they are looked up in different maps.
  Graph ok("ok");
  NodeId i = ok.add_unchecked(leaf(OpKind::Input, "x"));
  NodeId w = ok.add_unchecked(leaf(OpKind::Param, "x"));
  ok.set_outputs({i, w});
  EXPECT_EQ(verify_error(ok), "");
}

TEST(Verify, ConstantsHoldATensor) {
  Graph g("g");
  g.set_outputs(
      {g.add_unchecked(Node{OpKind::Constant, {}, ConstantAttrs{Tensor()}, Shape::scalar(), "c"})});
  EXPECT_EQ(verify_error(g), "graph @g: constant %0 'c': constant holds no tensor");
}

TEST(Verify, OutputsAreNonEmpty) {
  Graph g("g");
  Builder b(g);
  b.input("x", kVec);
  EXPECT_EQ(verify_error(g), "graph @g: has no outputs");
}

TEST(Verify, SubGraphsAreVerifiedRecursively) {
  // A then-branch whose signature fits the If but whose body is broken inside.
  Graph bad("then");
  NodeId a = bad.add_unchecked(leaf(OpKind::Input, "a"));
  NodeId r = bad.add_unchecked(Node{OpKind::Relu, {a}, NoAttrs{}, kVec, {}});
  NodeId n = bad.add_unchecked(Node{OpKind::Neg, {r}, NoAttrs{}, kVec, {}});
  bad.set_outputs({n});
  bad.set_input(r, 0, n); // relu reads the later neg
  Graph good("else");
  {
    Builder e(good);
    e.output(e.neg(e.input("a", kVec)));
  }
  Graph g("g");
  NodeId p = g.add_unchecked(leaf(OpKind::Input, "p", Shape::scalar(DType::boolean)));
  NodeId x = g.add_unchecked(leaf(OpKind::Input, "x"));
  IfAttrs attrs{SubGraph{std::make_shared<const Graph>(std::move(bad))},
                SubGraph{std::make_shared<const Graph>(std::move(good))}};
  g.set_outputs({g.add_unchecked(Node{OpKind::If, {p, x}, attrs, kVec, "branch"})});
  EXPECT_EQ(verify_error(g), "graph @g: if %2 'branch': in sub-graph 'then_branch': graph @then: "
                             "relu %1: operand 0 is %2, which is not defined before the node (the "
                             "node list must be in topological order)");
}

TEST(Verify, HirOpsOnlyWhereAllowed) {
  Graph g = testing::sample_graph(OpKind::SwiGluFfn);
  EXPECT_EQ(verify_error(g), "");
  EXPECT_EQ(verify_error(g, VerifyOptions{.allow_hir = false}),
            "graph @swiglu_ffn: swiglu_ffn %4: HIR block op at a stage that allows only MIR ops "
            "(lower it with lower_hir)");
  EXPECT_EQ(verify_error(testing::sample_graph(OpKind::MatMul), VerifyOptions{.allow_hir = false}),
            "");
}

TEST(Verify, UnknownOpKind) {
  Graph g("g");
  g.set_outputs({g.add_unchecked(Node{static_cast<OpKind>(kNumOps + 3), {}, NoAttrs{}, kVec, {}})});
  EXPECT_EQ(verify_error(g),
            "graph @g: %0: op kind " + std::to_string(kNumOps + 3) + " is not in the op table");
}

} // namespace
} // namespace rlx::ir
