// elementwise_regions_test.cpp: MarkElementwiseRegions and UnfuseElementwiseRegions: grouping
// (positive cases with IR before / after), one negative case per precondition (effects, shape,
// dtype claims, a would-be cycle, limits, claims), values used outside a region becoming tuple
// parts, and numerical equivalence with the reference interpreter on random inputs.
#include "rlx/fusion/elementwise_regions.hpp"
#include "rlx/fusion/report.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/count_ops.hpp"
#include "testing/effect_op.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <iostream>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

using ir::testing::count_ops;

/// Ops of the body of the \p i-th region of \p g.
int body_ops(const Graph& g, int i = 0) {
  for (const auto& node : g.nodes())
    if (node.op == OpKind::ElementwiseRegion && i-- == 0) {
      int n = 0;
      for (const auto& b : node.attr<ir::RegionAttrs>().body->nodes())
        n += !ir::is_leaf(b.op);
      return n;
    }
  return -1;
}

/// The CPU's region claims (f32 and bool), everything else claimed.
ir::ClaimSet cpu_like_claims() {
  ir::ClaimSet c;
  ir::for_each_op([&](OpKind k) {
    if (k != OpKind::ElementwiseRegion)
      c.claim(k);
  });
  c.claim(OpKind::ElementwiseRegion, {DType::f32, DType::boolean});
  return c;
}

struct Marked {
  Graph before;
  Graph after;
  FusionReport report;
};

/// Runs the pass on \p g (verifying before and after) and checks the result against the
/// reference on random inputs.
Marked mark(const Graph& g, FusionLimits limits = {}, const ir::ClaimSet* claims = nullptr,
            double tol = 0.0) {
  Marked r{g, g, {}};
  ir::verify(r.before);
  PassContext ctx;
  ir::ClaimSet def = cpu_like_claims();
  ctx.claims = claims ? claims : &def;
  ctx.report = &r.report;
  MarkElementwiseRegionsPass(limits).run(r.after, ctx);
  ir::verify(r.after);
  for (std::uint64_t seed : {1u, 2u}) {
    auto ins = ir::testing::random_inputs(g, seed);
    auto ps = ir::testing::random_params(g, seed + 10);
    auto want = ir::reference::evaluate(r.before, ins, ps);
    auto got = ir::reference::evaluate(r.after, ins, ps);
    EXPECT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size() && i < got.size(); ++i)
      EXPECT_LE(ir::max_abs_diff(got[i], want[i]), tol) << "output " << i << "\n"
                                                        << ir::print(r.after);
  }
  return r;
}

bool missed(const FusionReport& r, MissReason why) {
  for (const auto& m : r.missed)
    if (m.pattern == "elementwise_region" && m.reason == why)
      return true;
  return false;
}

/// x [N, C] -> a 6-op chain with a bias row and a constant.
Graph chain6(std::int64_t n = 8, std::int64_t c = 12) {
  Graph g("chain6");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({n, c}));
  NodeId bias = b.param("bias", Shape::of({c}));
  NodeId y = b.add(x, bias);
  y = b.mul(y, b.scalar(0.5));
  y = b.tanh(y);
  y = b.sub(y, bias);
  y = b.sigmoid(y);
  y = b.relu(y);
  b.output(y);
  return g;
}

TEST(MarkElementwiseRegions, AChainBecomesOneRegion) {
  Marked r = mark(chain6());
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 1) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after), 6);
  // The region reads x and bias once (the 0.5 constant moved into the body); nothing else runs.
  for (const auto& n : r.after.nodes())
    EXPECT_TRUE(ir::is_leaf(n.op) || n.op == OpKind::ElementwiseRegion) << ir::print(r.after);
  EXPECT_EQ(r.report.applied.at("elementwise_region"), 1);
  const std::string text = ir::print(r.after);
  EXPECT_NE(text.find("elementwise_region"), std::string::npos) << text;
  // Before / after IR, for the record of what grouped.
  std::cout << "before:\n" << ir::print(r.before) << "after:\n" << text;
}

TEST(MarkElementwiseRegions, ValuesUsedOutsideBecomeTupleParts) {
  // t = exp(x + 1) is read by the chain, by a MatMul and is a graph output: the region returns
  // (t, tail) as a tuple and the MatMul and the output read t through Get.
  Graph g("multi");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 4}));
  NodeId w = b.param("w", Shape::of({4, 4}));
  NodeId t = b.exp(b.add(x, b.scalar(1.0)));
  NodeId tail = b.neg(b.mul(t, t));
  b.output(b.matmul(t, w));
  b.output(tail);
  b.output(t);
  Marked r = mark(g);
  ASSERT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 1) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after), 4);
  EXPECT_EQ(count_ops(r.after, OpKind::Get), 2) << ir::print(r.after);
  for (const auto& n : r.after.nodes())
    if (n.op == OpKind::ElementwiseRegion) {
      EXPECT_TRUE(n.shape.is_tuple());
    }
}

TEST(MarkElementwiseRegions, AnInPlaceUpdateEndsItsRegionAsItsOnlyResult) {
  // An SGD-style step: m = 0.9 m + tanh(g); p = p - 0.1 m, both outputs updating their Params in
  // place. m is read by p's update too, so one region holding both would make them Gets of a
  // tuple, which the memory planner cannot alias to the Params. Each update closes a region of
  // its own instead: {mul, tanh, add} -> m and {mul, sub} -> p, single results, no Get.
  Graph g("step");
  Builder b(g);
  NodeId p = b.param("p", Shape::of({4, 4}));
  NodeId m = b.param("m", Shape::of({4, 4}));
  NodeId grad = b.input("g", Shape::of({4, 4}));
  NodeId m2 = b.add(b.mul(m, b.scalar(0.9)), b.tanh(grad));
  NodeId p2 = b.sub(p, b.mul(m2, b.scalar(0.1)));
  b.output(p2);
  b.output(m2);
  g.set_aliases({{0, "p"}, {1, "m"}});
  Marked r = mark(g);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 2) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after, 0) + body_ops(r.after, 1), 5);
  for (NodeId o : r.after.outputs()) {
    EXPECT_EQ(r.after.node(o).op, OpKind::ElementwiseRegion) << ir::print(r.after);
    EXPECT_FALSE(r.after.shape(o).is_tuple());
  }
  EXPECT_FALSE(missed(r.report, MissReason::is_graph_output)) << r.report.str();
}

TEST(MarkElementwiseRegions, AnInPlaceUpdateStaysAKernelOfItsOwnWhenItsRegionHasOtherResults) {
  // t = tanh(0.5 g) is also a graph output, so the update m + t cannot be its region's only
  // result: it stays an op of its own (a miss), never a Get of a tuple.
  Graph g("step");
  Builder b(g);
  NodeId m = b.param("m", Shape::of({4, 4}));
  NodeId grad = b.input("g", Shape::of({4, 4}));
  NodeId t = b.tanh(b.mul(grad, b.scalar(0.5)));
  b.output(b.add(m, t));
  b.output(t);
  g.set_aliases({{0, "m"}});
  Marked r = mark(g);
  EXPECT_EQ(r.after.node(r.after.outputs()[0]).op, OpKind::Add) << ir::print(r.after);
  EXPECT_TRUE(missed(r.report, MissReason::is_graph_output)) << r.report.str();
}

TEST(MarkElementwiseRegions, AnUpdateNeverJoinsARegionTwice) {
  // Two updates reading one chain: the chain's value feeds both, so neither may close it.
  Graph g("step2");
  Builder b(g);
  NodeId p = b.param("p", Shape::of({4, 4}));
  NodeId q = b.param("q", Shape::of({4, 4}));
  NodeId grad = b.input("g", Shape::of({4, 4}));
  NodeId t = b.tanh(b.mul(grad, b.scalar(0.5)));
  b.output(b.sub(p, t));
  b.output(b.add(q, t));
  g.set_aliases({{0, "p"}, {1, "q"}});
  Marked r = mark(g);
  for (NodeId o : r.after.outputs()) {
    EXPECT_NE(r.after.node(o).op, OpKind::Get) << ir::print(r.after);
    EXPECT_NE(r.after.node(o).op, OpKind::ElementwiseRegion) << ir::print(r.after);
  }
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 1) << ir::print(r.after);
}

TEST(MarkElementwiseRegions, TwoChainsMeetingAtABinaryOpMerge) {
  Graph g("merge");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({5, 3}));
  NodeId y = b.input("y", Shape::of({5, 3}));
  NodeId a = b.exp(b.neg(x));
  NodeId c = b.sin(b.abs(y));
  b.output(b.add(a, c));
  Marked r = mark(g);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 1) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after), 5);
}

TEST(MarkElementwiseRegions, NodesWithEffectsNeverJoin) {
  ir::testing::register_effect_op();
  Graph g("effects");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({6}));
  NodeId a = b.exp(b.neg(x));
  NodeId e = b.custom(ir::testing::kEffectOp, {a});
  b.output(b.relu(b.sin(e)));
  Marked r = mark(g);
  EXPECT_EQ(count_ops(r.after, OpKind::Custom), 1);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 2) << ir::print(r.after);
  for (const auto& n : r.after.nodes())
    if (n.op == OpKind::ElementwiseRegion) {
      for (const auto& bn : n.attr<ir::RegionAttrs>().body->nodes())
        EXPECT_NE(bn.op, OpKind::Custom);
    }
}

TEST(MarkElementwiseRegions, APathThroughAnotherOpWouldMakeACycle) {
  // a = exp(x); m = a @ w; d = a + m: d cannot join a's region (a -> matmul -> d leaves and
  // re-enters it). d and relu(d) form their own region; a stays alone (one op: no region).
  Graph g("cycle");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 4}));
  NodeId w = b.param("w", Shape::of({4, 4}));
  NodeId a = b.exp(x);
  NodeId d = b.add(a, b.matmul(a, w));
  b.output(b.relu(b.neg(d)));
  Marked r = mark(g);
  EXPECT_TRUE(missed(r.report, MissReason::would_create_cycle)) << r.report.str();
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 1) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after), 3);
  EXPECT_EQ(count_ops(r.after, OpKind::Exp), 1);
}

TEST(MarkElementwiseRegions, LimitsCapOpsAndInputs) {
  FusionLimits ops;
  ops.max_region_ops = 3;
  Marked r = mark(chain6(), ops);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 2) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after, 0), 3);
  EXPECT_EQ(body_ops(r.after, 1), 3);
  EXPECT_TRUE(missed(r.report, MissReason::limit_exceeded)) << r.report.str();

  Graph g("inputs");
  Builder b(g);
  NodeId acc = b.input("x0", Shape::of({3}));
  for (int i = 1; i < 5; ++i)
    acc = b.add(acc, b.input("x" + std::to_string(i), Shape::of({3})));
  b.output(acc);
  FusionLimits ins;
  ins.max_region_inputs = 3;
  Marked r2 = mark(g, ins);
  EXPECT_TRUE(missed(r2.report, MissReason::limit_exceeded)) << r2.report.str();
  for (const auto& n : r2.after.nodes())
    if (n.op == OpKind::ElementwiseRegion) {
      EXPECT_LE(n.inputs.size(), 3u);
    }
}

TEST(MarkElementwiseRegions, DimsDifferentFromTheRegionStayOut) {
  // s = exp(neg(v)) has dims [8]; y = x * s has [4, 8]: y starts a new region that reads s.
  Graph g("dims");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 8}));
  NodeId v = b.input("v", Shape::of({8}));
  NodeId s = b.exp(b.neg(v));
  b.output(b.tanh(b.mul(x, s)));
  Marked r = mark(g);
  EXPECT_TRUE(missed(r.report, MissReason::shape_mismatch)) << r.report.str();
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 2) << ir::print(r.after);
}

TEST(MarkElementwiseRegions, DtypesTheBackendDoesNotClaimStayOut) {
  Graph g("f64");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({5}, DType::f64));
  b.output(b.exp(b.neg(b.abs(x))));
  Marked r = mark(g);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 0);
  EXPECT_TRUE(missed(r.report, MissReason::dtype_mismatch)) << r.report.str();
  // A backend claiming every dtype (null claims) gets the region.
  PassContext ctx;
  Graph h = g;
  EXPECT_TRUE(MarkElementwiseRegionsPass().run(h, ctx));
  EXPECT_EQ(count_ops(h, OpKind::ElementwiseRegion), 1);
}

TEST(MarkElementwiseRegions, NothingHappensWithoutTheClaim) {
  ir::ClaimSet none = cpu_like_claims();
  none.unclaim(OpKind::ElementwiseRegion);
  Marked r = mark(chain6(), {}, &none);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 0);
  EXPECT_TRUE(r.after == r.before);
}

TEST(MarkElementwiseRegions, CompareWhereAndBoolOperandsJoin) {
  Graph g("where");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3, 7}));
  NodeId keep = b.input("keep", Shape::of({7}, DType::boolean));
  NodeId pos = b.compare(ir::CmpOp::gt, x, b.scalar(0.0));
  NodeId y = b.where(pos, b.silu(x), b.mul(x, b.scalar(0.1)));
  b.output(b.where(keep, y, b.neg(y)));
  Marked r = mark(g);
  EXPECT_EQ(count_ops(r.after, OpKind::ElementwiseRegion), 1) << ir::print(r.after);
  EXPECT_EQ(body_ops(r.after), 6);
}

TEST(UnfuseElementwiseRegions, RoundTripsToPrimitives) {
  for (Graph g : {chain6(), ir::testing::sample_graph(OpKind::ElementwiseRegion)}) {
    Marked r = mark(g);
    Graph back = r.after;
    PassContext ctx;
    EXPECT_TRUE(UnfuseElementwiseRegionsPass().run(back, ctx));
    ir::verify(back);
    EXPECT_EQ(count_ops(back, OpKind::ElementwiseRegion), 0);
    EXPECT_EQ(count_ops(back, OpKind::Get), 0);
    auto ins = ir::testing::random_inputs(g, 5);
    auto ps = ir::testing::random_params(g, 6);
    auto want = ir::reference::evaluate(g, ins, ps);
    auto got = ir::reference::evaluate(back, ins, ps);
    for (std::size_t i = 0; i < want.size(); ++i)
      EXPECT_EQ(ir::max_abs_diff(got[i], want[i]), 0.0);
  }
  // A tuple region unfuses too: every Get reads its body output again.
  Graph g("multi");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 4}));
  NodeId t = b.exp(b.add(x, b.scalar(1.0)));
  b.output(b.neg(b.mul(t, t)));
  b.output(b.matmul(t, t));
  Marked r = mark(g);
  ASSERT_EQ(count_ops(r.after, OpKind::Get), 2);
  Graph back = r.after;
  PassContext ctx;
  UnfuseElementwiseRegionsPass().run(back, ctx);
  ir::verify(back);
  EXPECT_EQ(count_ops(back, OpKind::ElementwiseRegion) + count_ops(back, OpKind::Get), 0);
  EXPECT_EQ(back.size(), g.size()) << ir::print(back);
}

} // namespace
} // namespace rlx::fusion
