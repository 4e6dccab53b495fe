// cli_train_test.cpp: `rlx train --device opencl` on the digits data: the training step runs on
// the OpenCL device (parameters and optimizer state on it, updated in place, the loss read back
// once a step) and gives the CPU's per-step losses and test accuracy.
//
// Tolerance: as Training.DigitsMlp* (training_test.cpp): f32 on both backends with different
// summation orders; over 10 AdamW steps of the 64-32-10 MLP the losses agree to ~1e-7 relative
// (in practice to every printed digit), so 1e-4 relative is headroom that a wrong gradient or a
// lost in-place update (the loss stops falling) does not fit in.
#include "cli_testing.hpp"

#include <nlohmann/json.hpp>

#include <cmath>

namespace rlx::runtime::testing {
namespace {

TEST_F(Cli, OpenClTrainsTheDigitsMlpAsTheCpuDoes) {
  const std::string common = std::string("train --model mlp --data ") + RLX_DIGITS_DIR +
                             " --hidden 32 --batch 32 --steps 10 --eval-every 1 --optimizer adamw"
                             " --lr 0.003 --seed 1 --json --device ";
  Result cpu = rlx(common + "cpu");
  ASSERT_EQ(cpu.status, 0) << cpu.err;
  Result cl = rlx(common + "opencl");
  ASSERT_EQ(cl.status, 0) << cl.err;
  const auto a = json_lines(cpu.out), b = json_lines(cl.out);
  ASSERT_EQ(a.size(), 11u) << cpu.out; // 10 steps, then the summary
  ASSERT_EQ(b.size(), a.size()) << cl.out;
  EXPECT_EQ(a.back()["device"], "cpu");
  EXPECT_EQ(b.back()["device"], "opencl");
  for (std::size_t i = 0; i + 1 < a.size(); ++i) {
    const double x = a[i]["train_loss"].get<double>(), y = b[i]["train_loss"].get<double>();
    EXPECT_NEAR(y, x, 1e-4 * std::abs(x)) << "step " << i + 1;
    EXPECT_NEAR(b[i]["test_accuracy"].get<double>(), a[i]["test_accuracy"].get<double>(), 1e-9)
        << "step " << i + 1;
  }
  EXPECT_LT(b[9]["test_loss"].get<double>(), b[0]["test_loss"].get<double>()); // it learns
}

TEST_F(Cli, TrainDeviceAutoAndBadDevicesAreOneLineErrors) {
  const std::string common =
      std::string("train --model mlp --data ") + RLX_DIGITS_DIR + " --steps 1 --device ";
  expect_error(common + "auto", 1, "--device auto");
  expect_error(common + "tpu", 1, "unknown device");
  expect_error(common + "opencl:99", 1, "opencl:99");
}

} // namespace
} // namespace rlx::runtime::testing
