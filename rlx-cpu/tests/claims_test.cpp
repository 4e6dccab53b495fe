// claims_test.cpp: the claim set is honest and complete: every claimed op has a kernel, and every
// op of the table is either claimed or deliberately unclaimed with a reason that holds.
#include "rlx/compile/legalize.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/cpu/claims.hpp"
#include "rlx/ir/decompose.hpp"

#include <gtest/gtest.h>

#include <set>

namespace {

using rlx::ir::OpKind;

TEST(CpuClaims, EveryClaimedOpHasAKernel) {
  rlx::ir::for_each_op([](OpKind k) {
    if (rlx::cpu::cpu_claims().claims(k)) {
      EXPECT_TRUE(rlx::cpu::has_kernel(k)) << rlx::ir::op_name(k) << " is claimed without a kernel";
    }
  });
}

TEST(CpuClaims, EveryOpIsClaimedOrDeliberatelyUnclaimedWithAReason) {
  std::set<OpKind> unclaimed;
  for (const auto& u : rlx::cpu::deliberately_unclaimed()) {
    EXPECT_TRUE(unclaimed.insert(u.op).second) << rlx::ir::op_name(u.op) << " is listed twice";
    EXPECT_FALSE(u.reason.empty()) << rlx::ir::op_name(u.op) << " has no reason";
  }
  rlx::ir::for_each_op([&](OpKind k) {
    bool claimed = rlx::cpu::cpu_claims().claims(k);
    bool listed = unclaimed.count(k) > 0;
    EXPECT_NE(claimed, listed) << rlx::ir::op_name(k)
                               << (claimed ? " is claimed and listed as unclaimed"
                                           : " is neither claimed nor listed as unclaimed");
  });
}

TEST(CpuClaims, UnclaimedOpsAreHandledBeforeTheBackend) {
  // The reasons say the compile pipeline removes these ops: HIR lowering or a decomposition.
  for (const auto& u : rlx::cpu::deliberately_unclaimed())
    EXPECT_TRUE(rlx::ir::is_hir(u.op) || rlx::ir::has_decomposition(u.op))
        << rlx::ir::op_name(u.op) << " is unclaimed but nothing upstream removes it";
}

TEST(CpuClaims, UnclaimedOpsHaveNoKernel) {
  for (const auto& u : rlx::cpu::deliberately_unclaimed())
    EXPECT_FALSE(rlx::cpu::has_kernel(u.op)) << rlx::ir::op_name(u.op);
}

TEST(CpuClaims, RegionsAreClaimedUnlessTurnedOff) {
  EXPECT_TRUE(rlx::cpu::cpu_claims().claims(OpKind::ElementwiseRegion, rlx::ir::DType::f32));
  EXPECT_FALSE(rlx::cpu::cpu_claims(false).claims(OpKind::ElementwiseRegion));
  EXPECT_TRUE(rlx::cpu::CpuOptions{}.elementwise_regions);
}

TEST(CpuClaims, DtypesAreClaimedPerOp) {
  const auto& c = rlx::cpu::cpu_claims();
  using rlx::ir::DType;
  EXPECT_TRUE(c.claims(OpKind::MatMul, DType::f32));
  EXPECT_TRUE(c.claims(OpKind::MatMul, DType::i64));
  EXPECT_FALSE(c.claims(OpKind::MatMul, DType::f16));
  EXPECT_TRUE(c.claims(OpKind::Attention, DType::f64));
  EXPECT_FALSE(c.claims(OpKind::Attention, DType::f16));
  // supports() checks every operand: integer and bool padding masks are claimed (attention's shape
  // rule keeps q, k and v float), and so are integer labels of softmax_cross_entropy.
  EXPECT_TRUE(c.claims(OpKind::Attention, DType::i64));
  EXPECT_TRUE(c.claims(OpKind::Attention, DType::boolean));
  EXPECT_TRUE(c.claims(OpKind::SoftmaxCrossEntropy, DType::i32));
  EXPECT_FALSE(c.claims(OpKind::Exp, DType::i32));
  EXPECT_TRUE(c.claims(OpKind::Transpose, DType::bf16));
}

TEST(CpuBackend, NameAlignmentAndOptions) {
  rlx::cpu::CpuBackend b;
  EXPECT_EQ(b.name(), "cpu");
  EXPECT_EQ(b.alignment(), 64);
  EXPECT_GE(b.threads(), 1);
  EXPECT_EQ(
      rlx::cpu::CpuBackend(rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::openblas, 3}).threads(), 3);
  EXPECT_THROW(rlx::cpu::CpuBackend(rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::onednn, -1}),
               rlx::Error);
  auto f = rlx::cpu::make_cpu_backend();
  EXPECT_EQ(f->name(), "cpu");
}

} // namespace
