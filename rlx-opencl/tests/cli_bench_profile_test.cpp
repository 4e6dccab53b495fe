// cli_bench_profile_test.cpp: `rlx bench --profile --device opencl`: the per-node device times of
// the timed runs (profiling events on the device's profiling queue), as a table and as --json's
// "kernels" array. The rows must be exactly the executable's launches (`rlx inspect --kernels`,
// one row per node, its first kernel as the provider) and the shares must add up to 100%.
#include "cli_testing.hpp"

#include <nlohmann/json.hpp>

#include <map>
#include <sstream>

namespace rlx::runtime::testing {
namespace {

/// node ("%12") -> its launches' kernel names, in order, from `rlx inspect --kernels` lines such
/// as "%12 matmul_bias_act [matmul_rows_f32_k] ...".
std::map<std::string, std::vector<std::string>> listed_kernels(const std::string& out) {
  std::map<std::string, std::vector<std::string>> nodes;
  std::istringstream in(out);
  bool in_kernels = false;
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("#", 0) == 0) { // a section header: the kernels' is "# kernels (opencl)"
      in_kernels = line.rfind("# kernels", 0) == 0;
      continue;
    }
    if (!in_kernels || line.empty() || line[0] != '%')
      continue;
    const auto open = line.find('['), close = line.find(']');
    if (open == std::string::npos || close == std::string::npos)
      continue;
    std::string what = line.substr(open + 1, close - open - 1);
    what = what.substr(0, what.find(' ', what.find(' ') + 1)); // "clblast sgemm 8x..." -> 2 words
    for (char& c : what)
      if (c == ' ')
        c = '_';
    nodes[line.substr(0, line.find(' '))].push_back(what);
  }
  return nodes;
}

class CliProfile : public Cli {
protected:
  void expect_profile_matches_listing(const std::string& model) const;
};

void CliProfile::expect_profile_matches_listing(const std::string& model) const {
  const Result listing = rlx("inspect " + model + " --device opencl");
  ASSERT_EQ(listing.status, 0) << listing.err;
  const auto nodes = listed_kernels(listing.out);
  ASSERT_FALSE(nodes.empty()) << listing.out;

  const Result r = rlx("bench " + model + " --device opencl --runs 3 --warmup 1 --profile --json");
  ASSERT_EQ(r.status, 0) << r.err;
  const auto lines = json_lines(r.out);
  ASSERT_EQ(lines.size(), 1u) << r.out;
  const nlohmann::json& kernels = lines[0]["kernels"];
  ASSERT_TRUE(kernels.is_array()) << r.out;
  ASSERT_EQ(kernels.size(), nodes.size()) << r.out << "\n" << listing.out;
  double share = 0, summed = 0;
  for (const auto& k : kernels) {
    const std::string node = k["node"].get<std::string>();
    ASSERT_TRUE(nodes.count(node)) << node << " is not a launch of\n" << listing.out;
    const auto& launches = nodes.at(node);
    EXPECT_EQ(k["provider"].get<std::string>(), launches[0]) << node;
    if (launches.size() > 1) {
      EXPECT_NE(k["note"].get<std::string>().find(launches[1]), std::string::npos) << node;
    }
    EXPECT_GT(k["median_ms"].get<double>(), 0.0) << node;
    EXPECT_GE(k["total_ms"].get<double>(), k["median_ms"].get<double>()) << node;
    share += k["share"].get<double>();
    summed += k["median_ms"].get<double>();
  }
  EXPECT_NEAR(share, 1.0, 1e-9);
  // Device time of the kernels alone cannot exceed the wall time of a whole run by much (the
  // median run's wall time includes the enqueues and the wait).
  EXPECT_LT(summed, 2.0 * lines[0]["max_ms"].get<double>());
}

TEST_F(CliProfile, OpenClBenchProfileListsEveryLaunchOfTheMlp) {
  expect_profile_matches_listing("--model mlp --batch 8");
}

TEST_F(CliProfile, OpenClBenchProfileListsEveryLaunchOfASmallBert) {
  // Attention, the fused residual norms, regions and products on one device.
  expect_profile_matches_listing(
      "--model bert --layers 2 --hidden 64 --heads 4 --kv-heads 4 --ffn 128 --seq 16");
}

TEST_F(Cli, OpenClBenchProfilePrintsTheTable) {
  const Result r = rlx("bench --model mlp --batch 8 --device opencl --runs 2 --warmup 1 --profile");
  ASSERT_EQ(r.status, 0) << r.err;
  EXPECT_NE(r.out.find("kernels:"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("over 2 runs"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("provider"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("_f32_k"), std::string::npos) << r.out; // a kernel name as the provider
}

} // namespace
} // namespace rlx::runtime::testing
