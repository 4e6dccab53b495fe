// conformance_test.cpp: the cross-backend conformance table on the CPU backend, one test per case
// (skipped only where the claim set, after legalisation, says so).
#include "op_cases.hpp"
#include "rlx/cpu/backend.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>

namespace {

using rlx::conformance::CaseResult;
using rlx::conformance::op_cases;

/// Runs case \p index on \p backend and reports it.
void check(const rlx::compile::Backend& backend, std::size_t index) {
  const auto& c = op_cases().at(index);
  CaseResult r = rlx::conformance::run_case(c, backend);
  if (std::getenv("RLX_CONFORMANCE_VERBOSE")) // the error of every case, for reports
    std::printf("%-50s %s\n", c.name.c_str(), r.message.c_str());
  if (r.status == CaseResult::Status::skipped)
    GTEST_SKIP() << r.message;
  EXPECT_EQ(r.status, CaseResult::Status::passed)
      << c.name << ": " << r.message << "\n  tolerance: " << c.tol.why;
}

std::string case_name(const testing::TestParamInfo<std::size_t>& info) {
  return op_cases().at(info.param).name;
}

/// The default CPU backend: `--gemm auto`, every core.
class CpuConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(CpuConformance, MatchesReference) {
  static const rlx::cpu::CpuBackend backend;
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(Cpu, CpuConformance, testing::Range<std::size_t>(0, op_cases().size()),
                         case_name);

/// The OpenBLAS GEMM option on one thread, on the cases that run matrix products.
std::vector<std::size_t> gemm_cases() {
  using K = rlx::ir::OpKind;
  const std::set<K> gemm{K::MatMul,     K::DotGeneral,     K::Linear,
                         K::SwiGluFfn,  K::AttentionBlock, K::BertLayer,
                         K::LlamaBlock, K::MatMulBiasAct,  K::SwiGluMatMul};
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < op_cases().size(); ++i)
    if (gemm.count(op_cases()[i].op))
      out.push_back(i);
  return out;
}
class OpenblasConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenblasConformance, MatchesReference) {
  static const rlx::cpu::CpuBackend backend(
      rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::openblas, 1});
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CpuOpenblas1Thread, OpenblasConformance, testing::ValuesIn(gemm_cases()),
                         case_name);

/// `--gemm auto` with every product measured (no work threshold), on two threads; and oneDNN
/// forced (the default backend is auto, which leaves these small products to oneDNN unmeasured).
class AutoGemmConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(AutoGemmConformance, MatchesReference) {
  static const rlx::cpu::CpuBackend backend(
      rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::automatic, 2, false, 0});
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CpuAutoMeasured, AutoGemmConformance, testing::ValuesIn(gemm_cases()),
                         case_name);
class OnednnConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OnednnConformance, MatchesReference) {
  static const rlx::cpu::CpuBackend backend(
      rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::onednn, 0});
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CpuOnednn, OnednnConformance, testing::ValuesIn(gemm_cases()), case_name);
/// rlx's packed GEMM forced (`--gemm packed`), on two threads.
class PackedConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(PackedConformance, MatchesReference) {
  static const rlx::cpu::CpuBackend backend(
      rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::packed, 2});
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CpuPacked, PackedConformance, testing::ValuesIn(gemm_cases()), case_name);

/// AttentionGrad on five threads: more threads than (batch, KV head) pairs in most cases, so the
/// f32 kernel splits a pair's query blocks into parts with dK / dV partials summed afterwards.
std::vector<std::size_t> attention_grad_cases() {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < op_cases().size(); ++i)
    if (op_cases()[i].op == rlx::ir::OpKind::AttentionGrad)
      out.push_back(i);
  return out;
}
class AttentionGradConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(AttentionGradConformance, MatchesReference) {
  static const rlx::cpu::CpuBackend backend(
      rlx::cpu::CpuOptions{rlx::cpu::GemmProvider::automatic, 5});
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CpuAttentionGrad5Threads, AttentionGradConformance,
                         testing::ValuesIn(attention_grad_cases()), case_name);

/// The opt-in region loop (CpuOptions::elementwise_regions) on the ElementwiseRegion cases.
std::vector<std::size_t> region_cases() {
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < op_cases().size(); ++i)
    if (op_cases()[i].op == rlx::ir::OpKind::ElementwiseRegion)
      out.push_back(i);
  return out;
}
class RegionConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(RegionConformance, MatchesReference) {
  rlx::cpu::CpuOptions o;
  o.elementwise_regions = true;
  static const rlx::cpu::CpuBackend backend(o);
  check(backend, GetParam());
}
INSTANTIATE_TEST_SUITE_P(CpuRegions, RegionConformance, testing::ValuesIn(region_cases()),
                         case_name);

TEST(ConformanceTable, EveryOpHasACase) {
  std::set<rlx::ir::OpKind> covered;
  for (const auto& c : op_cases())
    covered.insert(c.op);
  rlx::ir::for_each_op([&](rlx::ir::OpKind k) {
    if (rlx::ir::is_leaf(k))
      return; // leaves are the inputs of every case
    EXPECT_TRUE(covered.count(k)) << "no conformance case for " << rlx::ir::op_name(k);
  });
}

TEST(ConformanceTable, NamesAreUniqueAndEveryToleranceIsJustified) {
  std::set<std::string> names;
  for (const auto& c : op_cases()) {
    EXPECT_TRUE(names.insert(c.name).second) << "duplicate case name " << c.name;
    EXPECT_FALSE(c.tol.why.empty()) << c.name << " has no tolerance justification";
    EXPECT_GE(c.tol.atol, 0.0);
    // Bugs (a wrong index, a missed mask) give O(1) errors; bf16 at |x| ~ 3 has a 0.016 ulp.
    EXPECT_LT(c.tol.atol, 0.05) << c.name << ": a tolerance this loose hides bugs";
    EXPECT_LT(c.tol.rtol, 0.02) << c.name << ": a tolerance this loose hides bugs";
  }
}

} // namespace
