// claims_test.cpp: the OpenCL claim set is honest and complete: every op of the table is claimed
// or listed with a reason, never both.
#include "rlx/ir/op.hpp"
#include "rlx/opencl/claims.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>

namespace rlx::opencl {
namespace {

TEST(Claims, EveryOpIsClaimedOrListedWithAReason) {
  std::set<ir::OpKind> listed;
  const auto unclaimed = opencl_unclaimed();
  EXPECT_TRUE(std::is_sorted(unclaimed.begin(), unclaimed.end(),
                             [](const UnclaimedOp& a, const UnclaimedOp& b) {
                               return static_cast<int>(a.op) < static_cast<int>(b.op);
                             }))
      << "the unclaimed list is not in table order";
  for (const UnclaimedOp& u : unclaimed) {
    EXPECT_TRUE(listed.insert(u.op).second) << ir::op_name(u.op) << " is listed twice";
    EXPECT_FALSE(u.reason.empty()) << ir::op_name(u.op);
  }
  ir::for_each_op([&](ir::OpKind k) {
    if (ir::is_leaf(k))
      return;
    const bool claimed = opencl_claims().claims(k);
    EXPECT_NE(claimed, listed.count(k) != 0)
        << ir::op_name(k)
        << (claimed ? " is claimed and listed" : " is neither claimed nor listed");
  });
}

TEST(Claims, MathIsClaimedForF32Only) {
  // The program's math kernels are f32: a claim for another float type would be a lie.
  for (ir::OpKind k : {ir::OpKind::MatMul, ir::OpKind::Exp, ir::OpKind::LayerNorm, ir::OpKind::Add,
                       ir::OpKind::MatMulBiasAct, ir::OpKind::SwiGluMatMul}) {
    EXPECT_TRUE(opencl_claims().claims(k, ir::DType::f32)) << ir::op_name(k);
    for (ir::DType t : {ir::DType::f64, ir::DType::f16, ir::DType::bf16, ir::DType::i32})
      EXPECT_FALSE(opencl_claims().claims(k, t)) << ir::op_name(k) << " " << ir::dtype_name(t);
  }
  // Attention: f32 data; integer and bool dtypes only as a padding mask (its shape rule makes
  // q / k / v float), no other float type.
  EXPECT_TRUE(opencl_claims().claims(ir::OpKind::Attention, ir::DType::f32));
  EXPECT_TRUE(opencl_claims().claims(ir::OpKind::Attention, ir::DType::i64));
  EXPECT_TRUE(opencl_claims().claims(ir::OpKind::Attention, ir::DType::boolean));
  for (ir::DType t : {ir::DType::f64, ir::DType::f16, ir::DType::bf16})
    EXPECT_FALSE(opencl_claims().claims(ir::OpKind::Attention, t));
  // Movement copies elements by size: every dtype.
  for (ir::DType t : {ir::DType::f64, ir::DType::f16, ir::DType::i64, ir::DType::boolean})
    EXPECT_TRUE(opencl_claims().claims(ir::OpKind::Transpose, t));
}

} // namespace
} // namespace rlx::opencl
