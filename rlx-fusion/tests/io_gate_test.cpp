// io_gate_test.cpp: the IO fusion-benefit gate. Profiles and benefits of node sets, the score and
// its knobs, and the gate inside the pattern driver: a gate that says no leaves the graph as it
// was and reports not_profitable, one that says yes fuses, and changing a knob changes the answer.
#include "fusion_testing.hpp"
#include "rlx/fusion/io_gate.hpp"
#include "rlx/ir/builder.hpp"

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

/// gelu(x [8, 16] · w [32, 16]^T + b): MatMul, Add, Gelu.
Graph dense_gelu() {
  Graph g("dense");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({8, 16}));
  NodeId w = b.param("w", Shape::of({32, 16}));
  NodeId bias = b.param("b", Shape::of({32}));
  b.output(b.gelu(b.add(b.matmul(x, w, false, true), bias)));
  return g;
}

/// The activation of the graph's MatMulBiasAct (none when there is none or it has none).
ir::Activation fused_act(const Graph& g) {
  for (NodeId id : g.ids())
    if (g.node(id).op == OpKind::MatMulBiasAct)
      return g.node(id).attr<ir::MatMulBiasActAttrs>().act;
  return ir::Activation::none;
}

Graph run_gated(const Graph& g, const IoFusionGate* gate, FusionReport& rep) {
  PassRegistry reg;
  register_fusion_passes(reg);
  PassContext ctx;
  ctx.report = &rep;
  ctx.io_gate = gate;
  Graph out = g;
  reg.create("fuse-matmul-bias-act")->run(out, ctx);
  ir::verify(out);
  return out;
}

TEST(IoGate, ProfileCountsKernelsBytesAndPricedElements) {
  const Graph g = dense_gelu();
  IoFusionGate gate;
  gate.ns_per_element["gelu"] = 2.0;
  const GraphIoProfile p = profile_graph_io(g, gate);
  EXPECT_EQ(p.kernel_launches, 3); // matmul, add, gelu; leaves run none
  // matmul reads x, w and writes y; add reads y, b and writes; gelu reads and writes [8, 32].
  const std::int64_t y = 8 * 32 * 4;
  EXPECT_EQ(p.device_traffic_bytes, (8 * 16 + 32 * 16) * 4 + y + (y + 32 * 4 + y) + 2 * y);
  EXPECT_EQ(p.host_output_bytes, y);
  EXPECT_DOUBLE_EQ(p.compute_ns, 2.0 * 8 * 32);
  EXPECT_EQ(cost_key(g, NodeId(5)), "gelu");
}

TEST(IoGate, DyingWithFollowsSingleUseOperandsOnly) {
  Graph g("d");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4}));
  NodeId e = b.exp(x);
  NodeId s = b.sigmoid(e);
  NodeId t = b.tanh(e); // e has two users
  NodeId root = b.add(s, b.neg(x));
  b.output(root);
  b.output(t);
  auto dead = dying_with(g, root);
  std::vector<NodeId> want{root, NodeId(root.v - 1), s}; // add, neg, sigmoid; not e, not x
  std::sort(dead.begin(), dead.end());
  std::sort(want.begin(), want.end());
  EXPECT_EQ(dead, want);
}

TEST(IoGate, ScoreWeighsLaunchesBytesAndCompute) {
  IoFusionGate gate;
  gate.dispatch_ns = 100;
  gate.memory_bytes_per_ns = 10;
  FusionBenefit b;
  b.launches_saved = 2;
  b.device_traffic_bytes_saved = 1000;
  b.compute_ns_saved = -50;
  EXPECT_DOUBLE_EQ(gate.score_ns(b), 200 + 100 - 50);
  b.sync_points_saved = -1; // a fusion that adds a host sync pays the thunk penalty
  gate.host_thunk_penalty_ns = 30;
  EXPECT_DOUBLE_EQ(gate.score_ns(b), 200 + 100 - 50 - 30);
}

TEST(IoGate, AGateThatSaysYesFuses) {
  const Graph g = dense_gelu();
  IoFusionGate gate; // launches and bytes saved, nothing priced: fuse
  FusionReport rep;
  const Graph out = run_gated(g, &gate, rep);
  EXPECT_EQ(testing::count_ops(out, OpKind::MatMulBiasAct), 1);
  EXPECT_EQ(rep.applied["matmul_bias_act"], 1);
  testing::expect_same_values(g, out, 0);
}

TEST(IoGate, AGateThatSaysNoLeavesTheGraphAndReportsNotProfitable) {
  const Graph g = dense_gelu();
  IoFusionGate gate;
  gate.dispatch_ns = 10;
  // A GELU epilogue modelled 100 ns per element slower than the one-op GELU kernel: the bias
  // still fuses (matmul_bias), the activation stays a kernel of its own.
  gate.ns_per_element["matmul_bias_act.gelu"] = 100;
  FusionReport rep;
  const Graph out = run_gated(g, &gate, rep);
  EXPECT_EQ(out.size(), g.size() - 1); // MatMul + Add became one node; no trial nodes remain
  EXPECT_EQ(testing::count_ops(out, OpKind::MatMulBiasAct), 1);
  EXPECT_EQ(fused_act(out), ir::Activation::none);
  EXPECT_EQ(testing::count_ops(out, OpKind::Gelu), 1);
  EXPECT_EQ(rep.applied["matmul_bias"], 1);
  EXPECT_EQ(rep.applied.count("matmul_bias_act"), 0u);
  bool seen = false;
  for (const MissedFusion& m : rep.missed)
    if (m.pattern == "matmul_bias_act" && m.reason == MissReason::not_profitable) {
      seen = true;
      EXPECT_NE(m.detail.find("IO gate"), std::string::npos) << m.detail;
    }
  EXPECT_TRUE(seen) << rep.str();
  testing::expect_same_values(g, out, 0);
  // A gate that prices the bias add out too leaves the graph exactly as it was.
  gate.ns_per_element["matmul_bias_act.none"] = 1000;
  FusionReport rep2;
  const Graph same = run_gated(g, &gate, rep2);
  EXPECT_EQ(same.size(), g.size());
  EXPECT_EQ(testing::count_ops(same, OpKind::MatMulBiasAct), 0);
  EXPECT_TRUE(rep2.applied.empty()) << rep2.str();
  // Without a gate the whole chain fuses.
  FusionReport none;
  EXPECT_EQ(fused_act(run_gated(g, nullptr, none)), ir::Activation::gelu);
}

TEST(IoGate, KnobsChangeTheDecision) {
  const Graph g = dense_gelu(); // the epilogue covers 8 * 32 = 256 elements
  IoFusionGate gate;
  gate.dispatch_ns = 1000;        // taking the GELU into the epilogue saves one launch: 1000 ns
  gate.memory_bytes_per_ns = 1e9; // bytes cost next to nothing
  gate.ns_per_element["matmul_bias_act.gelu"] = 3.5; // 896 ns < 1000: fuse
  FusionReport a;
  EXPECT_EQ(fused_act(run_gated(g, &gate, a)), ir::Activation::gelu);
  gate.ns_per_element["matmul_bias_act.gelu"] = 4.5; // 1152 ns > 1000: do not
  FusionReport b;
  EXPECT_EQ(fused_act(run_gated(g, &gate, b)), ir::Activation::none);
  gate.ns_per_element["gelu"] = 1.0; // the one-op GELU costs 256 ns too: fuse again
  FusionReport c;
  EXPECT_EQ(fused_act(run_gated(g, &gate, c)), ir::Activation::gelu);
  gate.min_gain_ns = 1e6; // a floor no rewrite reaches
  FusionReport d;
  EXPECT_EQ(testing::count_ops(run_gated(g, &gate, d), OpKind::MatMulBiasAct), 0);
}

} // namespace
} // namespace rlx::fusion
