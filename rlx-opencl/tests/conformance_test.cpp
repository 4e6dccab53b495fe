// conformance_test.cpp: the cross-backend conformance table on the OpenCL backend (device 0), one
// test per case, skipped only where the claim set, after legalisation, says so.
#include "op_cases.hpp"
#include "rlx/opencl/backend.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <set>

namespace {

using rlx::conformance::CaseResult;
using rlx::conformance::op_cases;

const rlx::opencl::OpenClBackend& backend() {
  static const rlx::opencl::OpenClBackend b;
  return b;
}

std::string case_name(const testing::TestParamInfo<std::size_t>& param) {
  return op_cases().at(param.param).name;
}

/// Runs case \p index on \p be and reports it.
void check(const rlx::compile::Backend& be, std::size_t index) {
  const auto& c = op_cases().at(index);
  CaseResult r = rlx::conformance::run_case(c, be);
  if (std::getenv("RLX_CONFORMANCE_VERBOSE"))
    std::printf("%-50s %s\n", c.name.c_str(), r.message.c_str());
  if (r.status == CaseResult::Status::skipped)
    GTEST_SKIP() << r.message;
  EXPECT_EQ(r.status, CaseResult::Status::passed)
      << c.name << ": " << r.message << "\n  tolerance: " << c.tol.why;
}

/// The default backend (automatic GEMM choice: the rows kernel below 64 rows, as in most cases).
class OpenClConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenClConformance, MatchesReference) {
  check(backend(), GetParam());
}
INSTANTIATE_TEST_SUITE_P(OpenCl, OpenClConformance,
                         testing::Range<std::size_t>(0, op_cases().size()), case_name);

/// The cases that run matrix products again with the tiled GEMM kernel pinned.
std::vector<std::size_t> gemm_cases() {
  using K = rlx::ir::OpKind;
  const std::set<K> gemm{K::MatMul,         K::DotGeneral, K::Linear,     K::SwiGluFfn,
                         K::AttentionBlock, K::BertLayer,  K::LlamaBlock, K::MatMulBiasAct};
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < op_cases().size(); ++i)
    if (gemm.count(op_cases()[i].op))
      out.push_back(i);
  return out;
}
class OpenClTiledGemmConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenClTiledGemmConformance, MatchesReference) {
  static const rlx::opencl::OpenClBackend tiled = [] {
    rlx::opencl::OpenClOptions o;
    o.gemm = rlx::opencl::GemmKernel::tiled;
    return rlx::opencl::OpenClBackend(o);
  }();
  check(tiled, GetParam());
}
INSTANTIATE_TEST_SUITE_P(OpenClTiledGemm, OpenClTiledGemmConformance,
                         testing::ValuesIn(gemm_cases()), case_name);

/// The same cases with CLBlast pinned (where rlx-opencl was built with it).
class OpenClClblastGemmConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenClClblastGemmConformance, MatchesReference) {
  if (!rlx::opencl::have_clblast())
    GTEST_SKIP() << "rlx-opencl was built without CLBlast";
  static const rlx::opencl::OpenClBackend clblast = [] {
    rlx::opencl::OpenClOptions o;
    o.gemm = rlx::opencl::GemmKernel::clblast;
    return rlx::opencl::OpenClBackend(o);
  }();
  check(clblast, GetParam());
}
INSTANTIATE_TEST_SUITE_P(OpenClClblastGemm, OpenClClblastGemmConformance,
                         testing::ValuesIn(gemm_cases()), case_name);

} // namespace

namespace {

/// The cases that run attention again with the local-memory tiled kernel pinned (the automatic
/// choice takes it only from 16 query rows, so most cases would run the rows kernel).
std::vector<std::size_t> attention_cases() {
  using K = rlx::ir::OpKind;
  const std::set<K> attn{K::Attention, K::AttentionBlock, K::BertLayer, K::LlamaBlock};
  std::vector<std::size_t> out;
  for (std::size_t i = 0; i < op_cases().size(); ++i)
    if (attn.count(op_cases()[i].op))
      out.push_back(i);
  return out;
}
class OpenClTiledAttentionConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenClTiledAttentionConformance, MatchesReference) {
  static const rlx::opencl::OpenClBackend tiled = [] {
    rlx::opencl::OpenClOptions o;
    o.attention = rlx::opencl::AttentionKernel::tiled;
    return rlx::opencl::OpenClBackend(o);
  }();
  check(tiled, GetParam());
}
INSTANTIATE_TEST_SUITE_P(OpenClTiledAttention, OpenClTiledAttentionConformance,
                         testing::ValuesIn(attention_cases()), case_name);

/// The same cases on the GPU-shaped kernel pinned (the automatic choice takes it on GPU devices
/// only; pocl is a CPU device).
class OpenClGpuAttentionConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenClGpuAttentionConformance, MatchesReference) {
  static const rlx::opencl::OpenClBackend gpu = [] {
    rlx::opencl::OpenClOptions o;
    o.attention = rlx::opencl::AttentionKernel::gpu;
    return rlx::opencl::OpenClBackend(o);
  }();
  check(gpu, GetParam());
}
INSTANTIATE_TEST_SUITE_P(OpenClGpuAttention, OpenClGpuAttentionConformance,
                         testing::ValuesIn(attention_cases()), case_name);

} // namespace
