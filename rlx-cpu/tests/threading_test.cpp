// threading_test.cpp: the process environment the CPU backend asks for (passive OpenMP waiting).
#include "rlx/cpu/threading.hpp"

#include <gtest/gtest.h>

#include <cstdlib>
#include <string>

namespace {

TEST(CpuThreading, AsksForPassiveOpenmpWaiting) {
  bool found = false;
  for (const auto& s : rlx::cpu::threading_environment())
    found = found || (s.name == "OMP_WAIT_POLICY" && s.value == "PASSIVE");
  EXPECT_TRUE(found);
}

TEST(CpuThreading, DetectsTheSettingAndNeverOverridesAUserChoice) {
  setenv("OMP_WAIT_POLICY", "ACTIVE", 1);
  EXPECT_FALSE(rlx::cpu::passive_waiting_active());
  char arg0[] = "threading_test";
  char* argv[] = {arg0, nullptr};
  // A user's own OMP_WAIT_POLICY is respected: no re-exec (this call would not return otherwise).
  EXPECT_FALSE(rlx::cpu::reexec_with_threading_environment(argv));
  setenv("OMP_WAIT_POLICY", "passive", 1);
  EXPECT_TRUE(rlx::cpu::passive_waiting_active());
  unsetenv("OMP_WAIT_POLICY");
  setenv("GOMP_SPINCOUNT", "0", 1);
  EXPECT_TRUE(rlx::cpu::passive_waiting_active());
  EXPECT_FALSE(rlx::cpu::reexec_with_threading_environment(argv));
  unsetenv("GOMP_SPINCOUNT");
  setenv("RLX_NO_REEXEC", "1", 1); // the opt-out
  EXPECT_FALSE(rlx::cpu::reexec_with_threading_environment(argv));
  unsetenv("RLX_NO_REEXEC");
}

} // namespace
