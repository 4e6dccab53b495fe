// fused_attention_grad_test.cpp: gradients through FusedAttentionBlock (rlx-fusion's
// fuse-attention-block). prepare_graph_for_ad expands the fused op into its decomposition, so the
// gradient of a graph holding the block equals, value for value, the gradient of the same graph
// written as the unfused chain, and both match finite differences.
#include "fd.hpp"

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "testing/random_tensor.hpp"

#include <gtest/gtest.h>

#include <random>

namespace {

using namespace rlx;
using ir::Builder;
using ir::Dim;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

constexpr std::int64_t kB = 2, kS = 5, kE = 8, kH = 2, kKvh = 1, kD = 4;
constexpr std::int64_t kNt = (kH + 2 * kKvh) * kD;

using ir::testing::uniform_tensor;

ir::FusedAttentionBlockAttrs block_attrs() {
  ir::FusedAttentionBlockAttrs a;
  a.num_heads = kH;
  a.num_kv_heads = kKvh;
  a.mask = ir::MaskKind::causal;
  a.qkv_bias = a.out_bias = true;
  a.rope = true;
  a.rope_theta = 100.0;
  return a;
}

/// tanh(block(x)) with the block fused (\p fused) or as the chain its decomposition spells.
Graph model(bool fused) {
  Graph g("attn");
  Builder b(g);
  const DType t = DType::f64;
  NodeId x = b.input("x", Shape::of({kB, kS, kE}, t));
  NodeId w = b.param("w_qkv", Shape::of({kNt, kE}, t));
  NodeId wo = b.param("w_o", Shape::of({kE, kH * kD}, t));
  NodeId bq = b.param("b_qkv", Shape::of({kNt}, t));
  NodeId bo = b.param("b_o", Shape::of({kE}, t));
  NodeId y;
  if (fused) {
    y = b.op(OpKind::FusedAttentionBlock, {x, w, wo, bq, bo}, block_attrs());
  } else {
    NodeId p = b.op(OpKind::MatMulBiasAct, {x, w, bq}, ir::MatMulBiasActAttrs{false, true, {}});
    NodeId sp = b.split(p, 2, {kH * kD, kKvh * kD, kKvh * kD});
    auto heads = [&](std::int64_t i, std::int64_t h) {
      return b.reshape(b.get(sp, i), {Dim(kB), Dim(kS), Dim(h), Dim(kD)});
    };
    ir::RopeAttrs r;
    r.theta = 100.0;
    NodeId q = b.op(OpKind::Rope, {heads(0, kH)}, r);
    NodeId k = b.op(OpKind::Rope, {heads(1, kKvh)}, r);
    ir::AttentionAttrs at;
    at.num_heads = kH;
    at.num_kv_heads = kKvh;
    at.mask = ir::MaskKind::causal;
    NodeId o = b.op(OpKind::Attention, {q, k, heads(2, kKvh)}, at);
    NodeId m = b.reshape(o, {Dim(kB), Dim(kS), Dim(kH * kD)});
    y = b.op(OpKind::MatMulBiasAct, {m, wo, bo}, ir::MatMulBiasActAttrs{false, true, {}});
  }
  b.output(b.tanh(y));
  return g;
}

TEST(FusedAttentionBlockGrad, EqualsTheUnfusedGradientAndFiniteDifferences) {
  const Graph fused = model(true), chain = model(false);
  const Graph prepared = autodiff::prepare_graph_for_ad(fused);
  for (const auto& n : prepared.nodes())
    EXPECT_NE(n.op, OpKind::FusedAttentionBlock);
  const auto lf = autodiff::testing::weighted_sum_loss(fused, 7);
  const auto lc = autodiff::testing::weighted_sum_loss(chain, 7);
  const auto wrt = autodiff::testing::differentiable_leaves(fused);
  ASSERT_EQ(wrt.size(), 5u);
  const Graph gf = autodiff::grad_with_loss(lf.loss, wrt);
  const Graph gc =
      autodiff::grad_with_loss(lc.loss, autodiff::testing::differentiable_leaves(chain));
  TensorMap in{{"x", uniform_tensor(Shape::of({kB, kS, kE}, DType::f64), 1)}};
  TensorMap params{{"w_qkv", uniform_tensor(Shape::of({kNt, kE}, DType::f64), 2, -0.5, 0.5)},
                   {"w_o", uniform_tensor(Shape::of({kE, kH * kD}, DType::f64), 3, -0.5, 0.5)},
                   {"b_qkv", uniform_tensor(Shape::of({kNt}, DType::f64), 4)},
                   {"b_o", uniform_tensor(Shape::of({kE}, DType::f64), 5)}};
  const auto rf = ir::reference::evaluate(gf, in, params);
  const auto rc = ir::reference::evaluate(gc, in, params);
  ASSERT_EQ(rf.size(), rc.size());
  for (std::size_t i = 0; i < rf.size(); ++i)
    EXPECT_EQ(ir::max_abs_diff(rf[i], rc[i]), 0.0) << "output " << i;
  const auto fd = autodiff::testing::check_gradients(lf, in, params, wrt);
  EXPECT_LT(fd.max_err, 1e-6) << fd.worst;
}

} // namespace
