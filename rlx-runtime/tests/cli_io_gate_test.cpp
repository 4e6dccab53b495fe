// cli_io_gate_test.cpp: the CPU's IO fusion-benefit gate as the command shows it. sigmoid(x + b)
// on [128, 1024]: the calibrated gate refuses the two-op region (the region loop's sigmoid costs
// more than the traffic it saves), `rlx demo` and `rlx inspect` report it as not profitable,
// and `--no-io-gate` fuses it; both agree with the reference interpreter. `rlx train
// --no-io-gate` trains exp(x + b) with the refused forward region fused (its --profile lists no
// exp kernel of its own), to the same losses as the gated step.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/runtime/npy.hpp"

#include "cli_testing.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <random>

namespace rlx::runtime {
namespace {

using testing::Result;

class CliIoGate : public testing::Cli {
protected:
  std::string write_graph() const {
    ir::Graph g("add_sigmoid");
    ir::Builder b(g);
    auto x = b.input("x", ir::Shape::of({128, 1024}));
    auto bias = b.param("b", ir::Shape::of({1024}));
    b.output(b.sigmoid(b.add(x, bias)));
    const std::string file = path("g.json");
    std::ofstream(file) << ir::save_json(g);
    return file;
  }
};

TEST_F(CliIoGate, DemoAndInspectReportTheRefusedRegionAndNoIoGateFusesIt) {
  const std::string g = write_graph();
  Result on = rlx("demo --graph " + g + " --runs 1");
  ASSERT_EQ(on.status, 0) << on.err;
  EXPECT_NE(on.out.find("1 of them not profitable (IO gate)"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("kernels 2 -> 2"), std::string::npos) << on.out;
  EXPECT_NE(on.out.find("rlx demo: OK"), std::string::npos) << on.out;
  Result insp = rlx("inspect --graph " + g);
  ASSERT_EQ(insp.status, 0) << insp.err;
  EXPECT_NE(insp.out.find("missed  elementwise_region"), std::string::npos) << insp.out;
  EXPECT_NE(insp.out.find("not_profitable (the IO gate models"), std::string::npos) << insp.out;

  Result off = rlx("demo --graph " + g + " --runs 1 --no-io-gate");
  ASSERT_EQ(off.status, 0) << off.err;
  EXPECT_NE(off.out.find("elementwise_region x1"), std::string::npos) << off.out;
  EXPECT_EQ(off.out.find("not profitable"), std::string::npos) << off.out;
  EXPECT_NE(off.out.find("rlx demo: OK"), std::string::npos) << off.out;
}

TEST_F(CliIoGate, TrainNoIoGateFusesTheRegionTheGateRefuses) {
  // exp(x + c) W, x [batch, 1024], MSE against a target: the gate keeps add and exp apart (the
  // region loop's exp costs more than the traffic it saves), a product away from the backward's
  // regions.
  ir::Graph g("add_exp_dense");
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape({ir::Dim::sym("batch"), ir::Dim(1024)}));
  auto h = b.exp(b.add(x, b.input("c", ir::Shape({ir::Dim::sym("batch"), ir::Dim(1024)}))));
  b.output(b.matmul(h, b.param("w", ir::Shape::of({1024, 16}))));
  const std::string file = path("exp.json");
  std::ofstream(file) << ir::save_json(g);
  std::mt19937 rng(5);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const auto& [name, cols] :
       {std::pair<std::string, std::int64_t>{"x", 1024}, {"c", 1024}, {"target", 16}}) {
    ir::Tensor t(ir::Shape::of({128, cols}));
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, u(rng));
    write_npy(path("train_" + name + ".npy"), t);
  }
  const std::string common = "train --graph " + file + " --loss mse --data " + path("") +
                             " --batch 128 --steps 3 --lr 0.01 --json --no-shuffle --profile ";
  Result on = rlx(common + path("on.txt"));
  ASSERT_EQ(on.status, 0) << on.err;
  Result off = rlx(common + path("off.txt") + " --no-io-gate");
  ASSERT_EQ(off.status, 0) << off.err;
  const std::string p_on = slurp(path("on.txt")), p_off = slurp(path("off.txt"));
  EXPECT_NE(p_on.find(" exp ["), std::string::npos) << p_on;
  EXPECT_EQ(p_off.find(" exp ["), std::string::npos) << p_off;
  EXPECT_NE(p_off.find("elementwise_region"), std::string::npos) << p_off;
  // The same training either way (the region loop computes as the kernels, to rounding).
  const auto rows_on = testing::json_lines(on.out), rows_off = testing::json_lines(off.out);
  ASSERT_EQ(rows_on.size(), rows_off.size());
  for (std::size_t i = 0; i + 1 < rows_on.size(); ++i)
    EXPECT_NEAR(rows_on[i]["train_loss"].get<double>(), rows_off[i]["train_loss"].get<double>(),
                1e-5 * (1 + std::abs(rows_on[i]["train_loss"].get<double>())));
}

} // namespace
} // namespace rlx::runtime
