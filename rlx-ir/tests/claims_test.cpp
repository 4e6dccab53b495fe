// claims_test.cpp: ClaimSet::supports, the one capability question, checks the node's result and
// every operand's dtype.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/claims.hpp"

#include <gtest/gtest.h>

namespace rlx::ir {
namespace {

TEST(ClaimSet, SupportsChecksEveryOperandDType) {
  // where(bool, f16, f16) claimed for bool and f32 only: the f16 operands are not claimed even
  // though the first operand (bool) is.
  Graph g("where");
  Builder b(g);
  NodeId c = b.input("c", Shape::of({4}, DType::boolean));
  NodeId x = b.input("x", Shape::of({4}, DType::f16));
  NodeId w = b.where(c, x, x);
  b.output(w);
  ClaimSet s;
  s.claim(OpKind::Where, {DType::boolean, DType::f16});
  EXPECT_TRUE(s.supports(g, w));
  ClaimSet only_bool_out;
  only_bool_out.claim(OpKind::Where, {DType::boolean});
  EXPECT_FALSE(only_bool_out.supports(g, w));
}

TEST(ClaimSet, SupportsChecksLaterOperandsAndTheResult) {
  // softmax_cross_entropy(f32 logits, u8 labels): claimed for f32 and i64 labels only, so u8 labels
  // are not supported; the first operand alone would say yes.
  Graph g("sce");
  Builder b(g);
  NodeId logits = b.input("logits", Shape::of({2, 3}, DType::f32));
  NodeId labels = b.input("labels", Shape::of({2}, DType::u8));
  NodeId l = b.softmax_cross_entropy(logits, labels);
  b.output(l);
  ClaimSet s;
  s.claim(OpKind::SoftmaxCrossEntropy, {DType::f32, DType::i64});
  EXPECT_FALSE(s.supports(g, l));
  s.claim(OpKind::SoftmaxCrossEntropy, {DType::u8});
  EXPECT_TRUE(s.supports(g, l));

  // cast(i8 -> f32) needs both types.
  Graph h("cast");
  Builder hb(h);
  NodeId q = hb.cast(hb.input("q", Shape::of({2}, DType::i8)), DType::f32);
  hb.output(q);
  ClaimSet cs;
  cs.claim(OpKind::Cast, {DType::i8});
  EXPECT_FALSE(cs.supports(h, q));
  cs.claim(OpKind::Cast, {DType::f32});
  EXPECT_TRUE(cs.supports(h, q));
  ClaimSet any;
  any.claim(OpKind::Cast);
  EXPECT_TRUE(any.supports(h, q));
}

} // namespace
} // namespace rlx::ir
