// device_choice_test.cpp: the measured cost knobs of each device and rank_devices, the machinery
// of `--device auto`.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/runtime/device_choice.hpp"
#include "rlx/runtime/devices.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace rlx::runtime {
namespace {

using ir::DType;
using ir::Shape;

ir::Graph mlp_like(DType t, bool symbolic = false) {
  ir::Graph g("mlp_like");
  ir::Builder b(g);
  const auto x = symbolic ? b.input("x", Shape({ir::Dim::sym("batch"), ir::Dim(64)}, t))
                          : b.input("x", Shape::of({8, 64}, t));
  const auto w = b.param("w", Shape::of({64, 32}, t));
  b.output(b.relu(b.matmul(x, w)));
  return g;
}

TEST(DeviceChoice, CpuKnobsArePositiveAndMemoised) {
  Session cpu(Device::cpu());
  const compile::DeviceCost c = measure_device_cost(cpu);
  EXPECT_GT(c.flops_per_s, 1e8); // any CPU of this decade does more than 0.1 GFLOP/s
  EXPECT_GT(c.bytes_per_s, 1e7);
  EXPECT_GT(c.launch_s, 0);
  EXPECT_LT(c.launch_s, 0.1);
  const compile::DeviceCost again = measure_device_cost(cpu);
  EXPECT_EQ(again.flops_per_s, c.flops_per_s);
  EXPECT_EQ(again.launch_s, c.launch_s);
}

TEST(DeviceChoice, RanksEveryDeviceFastestFirst) {
  const auto ranked = rank_devices(mlp_like(DType::f32), {}, {});
  EXPECT_EQ(ranked.size(), available_devices().size());
  for (std::size_t i = 1; i < ranked.size(); ++i)
    EXPECT_LE(ranked[i - 1].seconds, ranked[i].seconds);
  bool saw_cpu = false;
  for (const auto& p : ranked) {
    if (p.device != Device::cpu())
      continue;
    saw_cpu = true;
    EXPECT_TRUE(p.why_not.empty()) << p.why_not;
    EXPECT_TRUE(std::isfinite(p.seconds));
    EXPECT_GT(p.seconds, 0);
    EXPECT_EQ(p.kernels, 1); // matmul + relu fused into one MatMulBiasAct
  }
  EXPECT_TRUE(saw_cpu);
}

TEST(DeviceChoice, ADeviceThatCannotRunTheGraphComesLastWithItsReason) {
  // f64 math: the CPU runs it; OpenCL (f32 math only), when present, cannot.
  const auto ranked = rank_devices(mlp_like(DType::f64), {}, {});
  EXPECT_EQ(ranked.front().device, Device::cpu());
  for (const auto& p : ranked)
    if (p.device.kind == DeviceKind::opencl) {
      EXPECT_FALSE(p.why_not.empty());
      EXPECT_TRUE(std::isinf(p.seconds));
    }
}

TEST(DeviceChoice, UnboundSymbolsAreAnError) {
  try {
    (void)rank_devices(mlp_like(DType::f32, /*symbolic=*/true), {}, {});
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("no device can run"), std::string::npos) << e.what();
  }
  EXPECT_NO_THROW((void)rank_devices(mlp_like(DType::f32, true), {{"batch", 4}}, {}));
}

} // namespace
} // namespace rlx::runtime
