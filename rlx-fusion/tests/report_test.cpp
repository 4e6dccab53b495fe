// report_test.cpp: FusionReport bookkeeping and text, MissReason names, structural node keys.
#include "rlx/fusion/node_key.hpp"
#include "rlx/fusion/report.hpp"
#include "rlx/ir/builder.hpp"

#include <gtest/gtest.h>

namespace rlx::fusion {
namespace {

TEST(FusionReport, CountsMergesAndPrints) {
  FusionReport r;
  EXPECT_EQ(r.total_applied(), 0);
  EXPECT_EQ(r.str(), "fusion: 0 applied, 0 missed\n");
  r.record_applied("matmul_bias_act");
  r.record_applied("matmul_bias_act", 2);
  r.record_missed({"residual_ln", "add %4", MissReason::multiple_consumers, "add %4 has 2 uses"});
  FusionReport other;
  other.record_applied("swiglu");
  other.record_applied("matmul_bias_act");
  other.record_missed({"swiglu", "mul %9", MissReason::not_claimed, ""});
  r.merge(other);
  EXPECT_EQ(r.applied.at("matmul_bias_act"), 4);
  EXPECT_EQ(r.applied.at("swiglu"), 1);
  EXPECT_EQ(r.total_applied(), 5);
  ASSERT_EQ(r.missed.size(), 2u);
  EXPECT_EQ(r.str(), "fusion: 5 applied, 2 missed\n"
                     "  applied matmul_bias_act x4\n"
                     "  applied swiglu x1\n"
                     "  missed  residual_ln at add %4: multiple_consumers (add %4 has 2 uses)\n"
                     "  missed  swiglu at mul %9: not_claimed\n");
}

TEST(MissReason, EveryReasonHasAName) {
  for (auto r :
       {MissReason::multiple_consumers, MissReason::shape_mismatch, MissReason::dtype_mismatch,
        MissReason::not_claimed, MissReason::attribute_mismatch, MissReason::operand_mismatch,
        MissReason::is_graph_output, MissReason::not_profitable, MissReason::limit_exceeded,
        MissReason::would_create_cycle})
    EXPECT_NE(miss_reason_name(r), "unknown");
  EXPECT_EQ(miss_reason_name(MissReason::shape_mismatch), "shape_mismatch");
}

TEST(NodeKey, EqualNodesHashEqualAndDifferencesShow) {
  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({2, 3}));
  auto y = b.input("y", ir::Shape::of({2, 3}));
  auto c1 = b.constant(ir::Tensor::from<float>({2}, {1, 2}));
  auto c2 = b.constant(ir::Tensor::from<float>({2}, {1, 2}), "other label");
  auto c3 = b.constant(ir::Tensor::from<float>({2}, {1, 3}));
  auto t1 = b.transpose(x, {1, 0});
  auto t2 = b.transpose(x, {1, 0});
  auto t3 = b.transpose(y, {1, 0});
  auto r1 = b.reduce(ir::ReduceOp::sum, x, {1});
  auto r2 = b.reduce(ir::ReduceOp::max, x, {1});
  auto key_eq = [&](ir::NodeId a, ir::NodeId c) {
    return node_hash(g.node(a)) == node_hash(g.node(c)) && node_equal(g.node(a), g.node(c));
  };
  EXPECT_TRUE(key_eq(c1, c2)); // the debug label is not part of the key
  EXPECT_FALSE(key_eq(c1, c3));
  EXPECT_NE(node_hash(g.node(c1)), node_hash(g.node(c3)));
  EXPECT_TRUE(key_eq(t1, t2));
  EXPECT_FALSE(key_eq(t1, t3));
  EXPECT_FALSE(key_eq(r1, r2));
  EXPECT_NE(node_hash(g.node(r1)), node_hash(g.node(r2)));
  EXPECT_FALSE(key_eq(x, y)); // leaves differ by name
}

} // namespace
} // namespace rlx::fusion
