// fused_layer_grad_test.cpp: gradients through FusedTransformerLayer (rlx-fusion's
// fuse-transformer-layer). prepare_graph_for_ad expands the fused layer (and the fused ops of its
// decomposition) into primitives, so the gradient of a graph holding the layer equals, value for
// value, the gradient of the same graph written as the chain of fused ops the layer replaced, and
// both match finite differences. Both layer kinds.
#include "fd.hpp"

#include "rlx/autodiff/grad.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/fused_layer.hpp"
#include "rlx/ir/reference.hpp"
#include "testing/random_tensor.hpp"

#include <gtest/gtest.h>

namespace {

using namespace rlx;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;
using ir::Tensor;
using ir::reference::TensorMap;

constexpr std::int64_t kB = 2, kS = 4, kE = 8, kF = 6;

using ir::testing::uniform_tensor;

ir::FusedTransformerLayerAttrs layer_attrs(bool llama) {
  ir::FusedTransformerLayerAttrs a;
  a.kind = llama ? ir::LayerKind::llama_pre_norm : ir::LayerKind::bert_post_norm;
  a.block.num_heads = 2;
  a.block.num_kv_heads = llama ? 1 : 2;
  a.block.mask = llama ? ir::MaskKind::causal : ir::MaskKind::none;
  a.block.rope = llama;
  a.block.rope_theta = 100.0;
  a.block.qkv_bias = a.block.out_bias = a.up_bias = a.down_bias = a.norm_beta = !llama;
  a.act = llama ? ir::Activation::none : ir::Activation::gelu;
  a.eps = 1e-5;
  return a;
}

/// tanh(layer(x)) with the layer fused (\p fused) or as its decomposition's chain of fused ops.
Graph model(bool llama, bool fused) {
  Graph g("layer");
  Builder b(g);
  const DType t = DType::f64;
  const ir::FusedTransformerLayerAttrs a = layer_attrs(llama);
  const std::int64_t nt = (a.block.num_heads + 2 * a.block.num_kv_heads) * 4;
  std::vector<NodeId> in{b.input("x", Shape::of({kB, kS, kE}, t)),
                         b.param("w_qkv", Shape::of({nt, kE}, t)),
                         b.param("w_o", Shape::of({kE, 8}, t))};
  if (!llama) {
    in.push_back(b.param("b_qkv", Shape::of({nt}, t)));
    in.push_back(b.param("b_o", Shape::of({kE}, t)));
  }
  in.push_back(b.param("g1", Shape::of({kE}, t)));
  if (!llama)
    in.push_back(b.param("beta1", Shape::of({kE}, t)));
  if (llama)
    in.push_back(b.param("w_gate", Shape::of({kF, kE}, t)));
  in.push_back(b.param("w_up", Shape::of({kF, kE}, t)));
  if (!llama)
    in.push_back(b.param("b_up", Shape::of({kF}, t)));
  in.push_back(b.param("w_down", Shape::of({kE, kF}, t)));
  if (!llama)
    in.push_back(b.param("b_down", Shape::of({kE}, t)));
  in.push_back(b.param("g2", Shape::of({kE}, t)));
  if (!llama)
    in.push_back(b.param("beta2", Shape::of({kE}, t)));
  NodeId y = b.op(OpKind::FusedTransformerLayer, in, a);
  b.output(b.tanh(y));
  if (!fused) { // the chain: the layer's own decomposition, emitted in the graph
    std::string why;
    ir::Builder d(g);
    const NodeId chain = ir::decompose(d, y, {}, why);
    EXPECT_TRUE(chain.valid()) << why;
    g.replace_all_uses(y, chain);
    g.compact();
  }
  return g;
}

TEST(FusedTransformerLayerGrad, EqualsTheChainGradientAndFiniteDifferences) {
  for (bool llama : {false, true}) {
    SCOPED_TRACE(llama ? "llama" : "bert");
    const Graph fused = model(llama, true), chain = model(llama, false);
    int layers = 0;
    for (const auto& n : chain.nodes())
      layers += n.op == OpKind::FusedTransformerLayer;
    EXPECT_EQ(layers, 0);
    const Graph prepared = autodiff::prepare_graph_for_ad(fused);
    for (const auto& n : prepared.nodes()) {
      EXPECT_NE(n.op, OpKind::FusedTransformerLayer);
      EXPECT_NE(n.op, OpKind::FusedAttentionBlock);
    }
    const auto lf = autodiff::testing::weighted_sum_loss(fused, 7);
    const auto lc = autodiff::testing::weighted_sum_loss(chain, 7);
    const auto wrt = autodiff::testing::differentiable_leaves(fused);
    const Graph gf = autodiff::grad_with_loss(lf.loss, wrt);
    const Graph gc =
        autodiff::grad_with_loss(lc.loss, autodiff::testing::differentiable_leaves(chain));
    TensorMap in{{"x", uniform_tensor(Shape::of({kB, kS, kE}, DType::f64), 1)}};
    TensorMap params;
    std::uint64_t seed = 2;
    for (NodeId id : fused.params()) {
      const auto& l = fused.node(id).attr<ir::LeafAttrs>();
      const bool gain = l.name == "g1" || l.name == "g2";
      params[l.name] = gain ? uniform_tensor(l.shape, seed++, 0.5, 1.5)
                            : uniform_tensor(l.shape, seed++, -0.5, 0.5);
    }
    const auto rf = ir::reference::evaluate(gf, in, params);
    const auto rc = ir::reference::evaluate(gc, in, params);
    ASSERT_EQ(rf.size(), rc.size());
    for (std::size_t i = 0; i < rf.size(); ++i)
      EXPECT_EQ(ir::max_abs_diff(rf[i], rc[i]), 0.0) << "output " << i;
    const auto fd = autodiff::testing::check_gradients(lf, in, params, wrt);
    EXPECT_LT(fd.max_err, 1e-6) << fd.worst;
  }
}

} // namespace
