// cli_io_gate_test.cpp: the CPU's IO fusion-benefit gate as the command shows it. sigmoid(x + b)
// on [128, 1024]: the calibrated gate refuses the two-op region (the region loop's sigmoid costs
// more than the traffic it saves), `rlx demo` and `rlx inspect` report it as not profitable,
// and `--no-io-gate` fuses it; both agree with the reference interpreter.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/json.hpp"

#include "cli_testing.hpp"

#include <fstream>

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

} // namespace
} // namespace rlx::runtime
