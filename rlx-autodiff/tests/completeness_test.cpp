// completeness_test.cpp: the VJP rule table covers ops.def.
#include "rlx/autodiff/vjp_rules.hpp"
#include "rlx/ir/op.hpp"

#include <gtest/gtest.h>

namespace {

using namespace rlx;

TEST(VjpTable, EveryDifferentiableOpHasARule) {
  // Leaves have nothing to propagate; HIR blocks are lowered by prepare_graph_for_ad first.
  ir::for_each_op([](ir::OpKind k) {
    if (!ir::is_differentiable(k) || ir::is_leaf(k) || ir::is_hir(k))
      return;
    const autodiff::VjpRule* r = autodiff::vjp_rule(k);
    EXPECT_NE(r, nullptr) << "differentiable op '" << ir::op_name(k) << "' has no VJP rule";
  });
}

TEST(VjpTable, RulesOnlyForOpsThatNeedThem) {
  // A rule for a leaf or a HIR block would never run: the table and ops.def would disagree.
  ir::for_each_op([](ir::OpKind k) {
    if (ir::is_leaf(k) || ir::is_hir(k)) {
      EXPECT_EQ(autodiff::vjp_rule(k), nullptr) << ir::op_name(k);
    }
  });
}

TEST(VjpTable, NonDifferentiableOperandsAreDeclared) {
  using K = ir::OpKind;
  auto bits = [](K k) { return autodiff::vjp_rule(k)->non_differentiable; };
  EXPECT_EQ(bits(K::Gather), 1u << 1);              // indices
  EXPECT_EQ(bits(K::ScatterAdd), 1u << 1);          // indices
  EXPECT_EQ(bits(K::Where), 1u << 0);               // condition
  EXPECT_EQ(bits(K::SoftmaxCrossEntropy), 1u << 1); // labels
  EXPECT_EQ(bits(K::If), 1u << 0);                  // predicate
  ir::Node att{K::Attention, {}, ir::AttentionAttrs{}, {}, {}};
  auto& a = std::get<ir::AttentionAttrs>(att.attrs);
  a.mask = ir::MaskKind::padding;
  EXPECT_EQ(autodiff::non_differentiable_operands(att), 1u << 3);
  a.mask = ir::MaskKind::bias;
  EXPECT_EQ(autodiff::non_differentiable_operands(att), 0u);
}

TEST(VjpTable, ViaDecompositionIsDeclared) {
  using K = ir::OpKind;
  // Conv2d / Pool2d emit conv2d_grad_input / conv2d_grad_weight / pool2d_grad (closed forms).
  for (K k : {K::MatMul, K::LayerNorm, K::RmsNorm, K::Softmax, K::Rope, K::SoftmaxCrossEntropy,
              K::Attention, K::Conv2d, K::Pool2d})
    EXPECT_FALSE(autodiff::vjp_rule(k)->via_decomposition) << ir::op_name(k);
}

} // namespace
