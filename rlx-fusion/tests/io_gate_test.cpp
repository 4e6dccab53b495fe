// io_gate_test.cpp: the IO fusion-benefit gate. Profiles and benefits of node sets, the score and
// its knobs, and the gate inside the pattern driver: a gate that says no leaves the graph as it
// was and reports not_profitable, one that says yes fuses, and changing a knob changes the answer.
#include "fusion_testing.hpp"
#include "rlx/fusion/elementwise_regions.hpp"
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

/// relu(sigmoid(x * s + b) - x) on [64, 128]: four elementwise ops, one region without a gate.
Graph sigmoid_chain() {
  Graph g("chain");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({64, 128}));
  NodeId s = b.param("s", Shape::of({128}));
  NodeId bias = b.param("b", Shape::of({128}));
  b.output(b.relu(b.sub(b.sigmoid(b.add(b.mul(x, s), bias)), x)));
  return g;
}

Graph mark_regions(const Graph& g, const IoFusionGate* gate, FusionReport& rep) {
  PassContext ctx;
  ctx.report = &rep;
  ctx.io_gate = gate;
  Graph out = g;
  MarkElementwiseRegionsPass().run(out, ctx);
  ir::verify(out);
  return out;
}

/// A gate that prices bytes and launches only (dispatch 1 µs, 10 bytes per ns) and the region's
/// sigmoid instruction at \p region_sigmoid ns per element over the one-op kernel's \p sigmoid.
IoFusionGate region_gate(double region_sigmoid, double sigmoid) {
  IoFusionGate gate;
  gate.dispatch_ns = 1000;
  gate.memory_bytes_per_ns = 10;
  gate.ns_per_element["elementwise_region"] = 0.05;
  gate.ns_per_element[region_cost_key(OpKind::Sigmoid)] = region_sigmoid;
  gate.ns_per_element["sigmoid"] = sigmoid;
  return gate;
}

TEST(IoGate, RegionProfileReadsOperandsOnceAndWritesOnlyResults) {
  const Graph g = sigmoid_chain(); // x, s, b, mul, add, sigmoid, sub, relu
  std::vector<NodeId> members;
  for (NodeId id : g.ids())
    if (!ir::is_leaf(g.node(id).op))
      members.push_back(id);
  ASSERT_EQ(members.size(), 5u);
  const IoFusionGate gate = region_gate(2.0, 0.5);
  const GraphIoProfile p = profile_region_io(g, members, gate);
  EXPECT_EQ(p.kernel_launches, 1);
  // x once (the mul and the sub read it), s and b, and the relu's result: the only one used
  // outside the set (a graph output).
  const std::int64_t t = 64 * 128 * 4;
  EXPECT_EQ(p.device_traffic_bytes, t + 128 * 4 + 128 * 4 + t);
  EXPECT_EQ(p.host_output_bytes, t);
  // Four cheap members at the generic price, the sigmoid at its own.
  EXPECT_DOUBLE_EQ(p.compute_ns, (4 * 0.05 + 2.0) * 64 * 128);
  const GraphIoProfile apart = profile_graph_io(g, members, gate);
  EXPECT_EQ(apart.kernel_launches, 5);
  EXPECT_DOUBLE_EQ(apart.compute_ns, 0.5 * 64 * 128); // only "sigmoid" is priced as a kernel
}

TEST(IoGate, ARegionTheGateRefusesStaysOpsAndIsReportedNotProfitable) {
  const Graph g = sigmoid_chain();
  // Fusing saves 4 launches (4000 ns) and 9 tensor passes (9 * 32 KiB / 10 = 29491 ns), but
  // the region's instructions cost about 8.2 ns per element more than the kernels': 67174 ns.
  const IoFusionGate gate = region_gate(8.5, 0.5);
  FusionReport rep;
  const Graph out = mark_regions(g, &gate, rep);
  EXPECT_EQ(testing::count_ops(out, OpKind::ElementwiseRegion), 0);
  EXPECT_EQ(out.size(), g.size());
  EXPECT_TRUE(rep.applied.empty()) << rep.str();
  bool seen = false;
  for (const MissedFusion& m : rep.missed)
    if (m.pattern == "elementwise_region" && m.reason == MissReason::not_profitable) {
      seen = true;
      EXPECT_NE(m.detail.find("IO gate"), std::string::npos) << m.detail;
    }
  EXPECT_TRUE(seen) << rep.str();
  EXPECT_NE(rep.str().find("not_profitable"), std::string::npos);
  testing::expect_same_values(g, out, 0);
}

TEST(IoGate, ARegionTheGateAcceptsIsFormedAndKnobsFlipIt) {
  const Graph g = sigmoid_chain();
  const double elems = 64 * 128;
  // Saving: 4 launches, and bytes: apart 5 kernels read and write; fused reads x, s, b once.
  const IoFusionGate probe = region_gate(0, 0);
  std::vector<NodeId> members;
  for (NodeId id : g.ids())
    if (!ir::is_leaf(g.node(id).op))
      members.push_back(id);
  const double io_saving = probe.score_ns(
      fusion_benefit(profile_graph_io(g, members, probe), profile_region_io(g, members, probe)));
  const double extra_per_element = io_saving / elems; // where the verdict flips
  for (double margin : {-0.25, 0.25}) {
    const IoFusionGate gate = region_gate(extra_per_element + margin, 0);
    FusionReport rep;
    const Graph out = mark_regions(g, &gate, rep);
    const int regions = testing::count_ops(out, OpKind::ElementwiseRegion);
    EXPECT_EQ(regions, margin < 0 ? 1 : 0) << "margin " << margin << "\n" << rep.str();
    testing::expect_same_values(g, out, 0);
  }
  // A faster one-op sigmoid kernel makes the fused one relatively cheaper: it fuses again.
  const IoFusionGate cheaper = region_gate(extra_per_element + 0.25, 0.5);
  FusionReport rep;
  EXPECT_EQ(testing::count_ops(mark_regions(g, &cheaper, rep), OpKind::ElementwiseRegion), 1);
  // No gate: the region.
  FusionReport none;
  EXPECT_EQ(testing::count_ops(mark_regions(g, nullptr, none), OpKind::ElementwiseRegion), 1);
}

TEST(IoGate, APreNormResidualFusesUnderAGateThatPricesBytes) {
  // h = x + a; out = h + rms_norm(h): the sum has two users, so the norm's step alone would only
  // add a result; with the sum's step the Add dies. A gate that prices bytes heavily still fuses.
  Graph g("prenorm");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({8, 32}));
  NodeId a = b.input("a", Shape::of({8, 32}));
  NodeId gamma = b.param("g", Shape::of({32}));
  NodeId h = b.add(x, a);
  b.output(b.add(h, b.rms_norm(h, gamma, 1e-6)));
  IoFusionGate gate;
  gate.dispatch_ns = 0;
  gate.memory_bytes_per_ns = 1e-3;
  PassRegistry reg;
  register_fusion_passes(reg);
  PassContext ctx;
  FusionReport rep;
  ctx.report = &rep;
  ctx.io_gate = &gate;
  Graph out = g;
  reg.create("fuse-residual-rms-norm")->run(out, ctx);
  ir::verify(out);
  EXPECT_EQ(testing::count_ops(out, OpKind::ResidualRmsNorm), 1) << rep.str();
  EXPECT_EQ(rep.applied["residual_rms_norm_sum"], 1) << rep.str();
  testing::expect_same_values(g, out, 1e-6);
}

TEST(IoGate, FingerprintChangesWithAnyKnob) {
  IoFusionGate a;
  IoFusionGate b = a;
  EXPECT_EQ(a.fingerprint(), b.fingerprint());
  EXPECT_EQ(a.fingerprint().size(), 16u);
  b.ns_per_element["gelu"] = 0.1;
  EXPECT_NE(a.fingerprint(), b.fingerprint());
  IoFusionGate c = a;
  c.dispatch_ns += 1;
  EXPECT_NE(a.fingerprint(), c.fingerprint());
}

} // namespace
} // namespace rlx::fusion
