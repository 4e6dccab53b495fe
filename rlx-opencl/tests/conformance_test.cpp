// conformance_test.cpp: the cross-backend conformance table on the OpenCL backend (device 0), one
// test per case, skipped only where the claim set, after legalisation, says so.
#include "op_cases.hpp"
#include "rlx/opencl/backend.hpp"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>

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

class OpenClConformance : public testing::TestWithParam<std::size_t> {};
TEST_P(OpenClConformance, MatchesReference) {
  const auto& c = op_cases().at(GetParam());
  CaseResult r = rlx::conformance::run_case(c, backend());
  if (std::getenv("RLX_CONFORMANCE_VERBOSE"))
    std::printf("%-50s %s\n", c.name.c_str(), r.message.c_str());
  if (r.status == CaseResult::Status::skipped)
    GTEST_SKIP() << r.message;
  EXPECT_EQ(r.status, CaseResult::Status::passed)
      << c.name << ": " << r.message << "\n  tolerance: " << c.tol.why;
}
INSTANTIATE_TEST_SUITE_P(OpenCl, OpenClConformance,
                         testing::Range<std::size_t>(0, op_cases().size()), case_name);

} // namespace
