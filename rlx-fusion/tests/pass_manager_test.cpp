// pass_manager_test.cpp: PassRegistry, pipeline strings and the PassManager's verification,
// dumps, statistics and error naming.
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/fusion/pass.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/text.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace rlx::fusion {
namespace {

using ir::Builder;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;
using ir::Shape;

Graph small_graph() {
  Graph g("small");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 3}));
  NodeId y = b.relu(x);
  b.output(b.neg(y));
  return g;
}

/// Replaces every Neg by Abs(Neg): changes the graph once per Neg that has no Abs user.
class WrapNegInAbs final : public Pass {
public:
  std::string_view name() const override { return "wrap-neg"; }
  bool run(Graph& g, PassContext&) override {
    bool changed = false;
    const std::size_t n = g.size();
    for (std::uint32_t i = 0; i < n; ++i) {
      NodeId id(i);
      if (g.node(id).op != OpKind::Neg || g.users(id).size() == 1)
        continue;
      NodeId a = Builder(g).abs(id);
      // Rewire every user of the Neg except the new Abs.
      std::vector<NodeId> outs(g.outputs().begin(), g.outputs().end());
      for (auto& o : outs)
        if (o == id)
          o = a;
      g.set_outputs(outs);
      changed = true;
    }
    if (changed)
      g.compact();
    return changed;
  }
};

/// Does nothing.
class Nop final : public Pass {
public:
  std::string_view name() const override { return "nop"; }
  bool run(Graph&, PassContext&) override { return false; }
};

/// Appends a node with a wrong type and makes it an output: the verifier must catch it.
class Breaker final : public Pass {
public:
  std::string_view name() const override { return "breaker"; }
  bool run(Graph& g, PassContext&) override {
    NodeId bad = g.add_unchecked(
        ir::Node{OpKind::Relu, {g.outputs()[0]}, ir::NoAttrs{}, Shape::of({7}), ""});
    g.add_output(bad);
    return true;
  }
};

/// Throws a ShapeError.
class Thrower final : public Pass {
public:
  std::string_view name() const override { return "thrower"; }
  bool run(Graph&, PassContext&) override { throw ir::ShapeError("no good"); }
};

/// Counts its runs and reports a change on the first two only.
class Converges final : public Pass {
public:
  explicit Converges(int* runs) : runs_(runs) {}
  std::string_view name() const override { return "converges"; }
  bool run(Graph&, PassContext&) override { return ++*runs_ <= 2; }

private:
  int* runs_;
};

PassRegistry test_registry() {
  PassRegistry r;
  r.add("wrap-neg", [] { return std::make_unique<WrapNegInAbs>(); });
  r.add("nop", [] { return std::make_unique<Nop>(); });
  r.add("breaker", [] { return std::make_unique<Breaker>(); });
  r.add("thrower", [] { return std::make_unique<Thrower>(); });
  return r;
}

PassManagerOptions quiet(bool verify = true) {
  PassManagerOptions o;
  o.verify = verify;
  return o;
}

TEST(PassRegistry, CreatesByNameAndRejectsDuplicatesAndUnknownNames) {
  PassRegistry r = test_registry();
  EXPECT_TRUE(r.contains("nop"));
  EXPECT_FALSE(r.contains("cse"));
  EXPECT_EQ(r.create("nop")->name(), "nop");
  EXPECT_EQ(r.names(), (std::vector<std::string>{"breaker", "nop", "thrower", "wrap-neg"}));
  EXPECT_THROW(r.add("nop", [] { return std::make_unique<Nop>(); }), Error);
  try {
    r.create("cse");
    FAIL() << "unknown pass accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("unknown pass 'cse'"), std::string::npos);
    EXPECT_NE(std::string(e.what()).find("wrap-neg"), std::string::npos) << e.what();
  }
}

TEST(PassRegistry, FactoryMustMakeThePassItNames) {
  PassRegistry r;
  r.add("liar", [] { return std::make_unique<Nop>(); });
  EXPECT_THROW(r.create("liar"), Error);
}

TEST(Pipeline, ParsesCommaSeparatedNames) {
  EXPECT_EQ(parse_pipeline("const-fold, simplify,cse ,dce"),
            (std::vector<std::string>{"const-fold", "simplify", "cse", "dce"}));
  EXPECT_EQ(parse_pipeline("dce"), (std::vector<std::string>{"dce"}));
  EXPECT_THROW(parse_pipeline(""), Error);
  EXPECT_THROW(parse_pipeline("a,,b"), Error);
  EXPECT_THROW(parse_pipeline("a,"), Error);
}

TEST(PassManager, RunsNamedPassesInOrderAndRecordsStatistics) {
  PassRegistry r = test_registry();
  PassManager pm(quiet());
  pm.add(r, parse_pipeline("nop,wrap-neg,nop"));
  EXPECT_EQ(pm.names(), (std::vector<std::string>{"nop", "wrap-neg", "nop"}));
  Graph g = small_graph();
  PassContext ctx;
  EXPECT_TRUE(pm.run(g, ctx));
  ASSERT_EQ(pm.stats().size(), 3u);
  EXPECT_EQ(pm.stats()[0].name, "nop");
  EXPECT_FALSE(pm.stats()[0].changed);
  EXPECT_EQ(pm.stats()[1].name, "wrap-neg");
  EXPECT_TRUE(pm.stats()[1].changed);
  EXPECT_EQ(pm.stats()[1].nodes_before, 3u);
  EXPECT_EQ(pm.stats()[1].nodes_after, 4u);
  EXPECT_FALSE(pm.stats()[2].changed);
  for (const auto& s : pm.stats())
    EXPECT_GE(s.ms, 0.0);
  EXPECT_EQ(g.node(g.outputs()[0]).op, OpKind::Abs);
}

TEST(PassManager, VerificationNamesThePassThatBrokeTheGraph) {
  PassRegistry r = test_registry();
  PassManager pm(quiet());
  pm.add(r, parse_pipeline("nop,breaker,nop"));
  Graph g = small_graph();
  PassContext ctx;
  try {
    pm.run(g, ctx);
    FAIL() << "broken graph not detected";
  } catch (const ir::VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("pass 'breaker' broke the graph"), std::string::npos)
        << e.what();
  }
}

TEST(PassManager, WithoutVerificationABrokenGraphPassesThrough) {
  PassRegistry r = test_registry();
  PassManager pm(quiet(false));
  pm.add(r, "breaker");
  Graph g = small_graph();
  PassContext ctx;
  EXPECT_NO_THROW(pm.run(g, ctx));
}

TEST(PassManager, InvalidInputGraphIsReportedAsInput) {
  PassRegistry r = test_registry();
  PassManager pm(quiet());
  pm.add(r, "nop");
  Graph g = small_graph();
  g.add_output(
      g.add_unchecked(ir::Node{OpKind::Neg, {NodeId(0)}, ir::NoAttrs{}, Shape::of({3, 3}), ""}));
  PassContext ctx;
  try {
    pm.run(g, ctx);
    FAIL() << "invalid input accepted";
  } catch (const ir::VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find("input graph fails verification"), std::string::npos)
        << e.what();
  }
}

TEST(PassManager, PassErrorsArePrefixedWithThePassNameAndKeepTheirType) {
  PassRegistry r = test_registry();
  PassManager pm(quiet());
  pm.add(r, "thrower");
  Graph g = small_graph();
  PassContext ctx;
  try {
    pm.run(g, ctx);
    FAIL() << "error swallowed";
  } catch (const ir::ShapeError& e) {
    EXPECT_EQ(std::string(e.what()), "pass 'thrower': no good");
  }
}

TEST(PassManager, PrintsOneLinePerPassWhenAsked) {
  PassRegistry r = test_registry();
  PassManagerOptions o = quiet();
  o.print_passes = true;
  PassManager pm(o);
  pm.add(r, parse_pipeline("wrap-neg,nop"));
  Graph g = small_graph();
  PassContext ctx;
  ::testing::internal::CaptureStderr();
  pm.run(g, ctx);
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("rlx pass wrap-neg"), std::string::npos) << err;
  EXPECT_NE(err.find("changed        3 -> 4 nodes  (graph 'small')"), std::string::npos) << err;
  EXPECT_NE(err.find("rlx pass nop"), std::string::npos) << err;
}

TEST(PassManager, FixedPointRepeatsUntilNoChange) {
  int runs = 0;
  PassManager pm(quiet());
  pm.add(std::make_unique<Converges>(&runs), /*to_fixed_point=*/true);
  Graph g = small_graph();
  PassContext ctx;
  EXPECT_TRUE(pm.run(g, ctx));
  EXPECT_EQ(runs, 3); // two changes, then one run that reports none
  ASSERT_EQ(pm.stats().size(), 1u);
  EXPECT_TRUE(pm.stats()[0].changed);
}

TEST(PassManager, DumpsEveryStageAsParseableText) {
  namespace fs = std::filesystem;
  fs::path dir = fs::temp_directory_path() / ("rlx_dump_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  PassRegistry r = test_registry();
  PassManagerOptions o = quiet();
  o.dump_dir = dir.string();
  std::vector<std::string> seen;
  o.observer = [&](std::string_view stage, const Graph&) { seen.emplace_back(stage); };
  PassManager pm(o);
  pm.add(r, parse_pipeline("wrap-neg,nop"));
  Graph g = small_graph();
  PassContext ctx;
  pm.run(g, ctx);
  EXPECT_EQ(seen, (std::vector<std::string>{"input", "wrap-neg", "nop"}));
  std::vector<std::string> files;
  for (const auto& e : fs::directory_iterator(dir))
    files.push_back(e.path().filename().string());
  std::sort(files.begin(), files.end());
  ASSERT_EQ(files, (std::vector<std::string>{"small.00.input.ir", "small.01.wrap-neg.ir",
                                             "small.02.nop.ir"}));
  std::ifstream in(dir / "small.01.wrap-neg.ir");
  std::stringstream text;
  text << in.rdbuf();
  Graph back = ir::parse(text.str());
  EXPECT_TRUE(back == g);
  fs::remove_all(dir);
}

TEST(PassManager, DumpToAnUnwritablePlaceIsAClearError) {
  PassRegistry r = test_registry();
  PassManagerOptions o = quiet();
  o.dump_dir = "/proc/rlx-cannot-write-here";
  PassManager pm(o);
  pm.add(r, "nop");
  Graph g = small_graph();
  PassContext ctx;
  EXPECT_THROW(pm.run(g, ctx), Error);
}

TEST(PassManager, EnvironmentControlsVerificationAndDumps) {
  ::setenv("RLX_VERIFY", "1", 1);
  ::setenv("RLX_IR_DUMP", "/tmp/somewhere", 1);
  ::setenv("RLX_PRINT_PASSES", "on", 1);
  PassManagerOptions o = PassManagerOptions::from_env();
  EXPECT_TRUE(o.verify);
  EXPECT_EQ(o.dump_dir, "/tmp/somewhere");
  EXPECT_TRUE(o.print_passes);
  ::unsetenv("RLX_VERIFY");
  ::unsetenv("RLX_IR_DUMP");
  ::unsetenv("RLX_PRINT_PASSES");
  o = PassManagerOptions::from_env();
  EXPECT_TRUE(o.dump_dir.empty());
  EXPECT_FALSE(o.print_passes);
#ifdef NDEBUG
  EXPECT_FALSE(o.verify);
#else
  EXPECT_TRUE(o.verify);
#endif
}

TEST(FusionPasses, ListedOnlyWhenTheFusedOpIsClaimed) {
  ir::ClaimSet all;
  ir::for_each_op([&](OpKind k) { all.claim(k); });
  const auto names = fusion_passes_for_supported(all);
  PassRegistry r;
  register_fusion_passes(r);
  for (const auto& n : names)
    EXPECT_TRUE(r.contains(n)) << n;
  EXPECT_NE(std::find(names.begin(), names.end(), "fuse-swiglu"), names.end());
  EXPECT_TRUE(fusion_passes_for_supported(ir::ClaimSet{}).empty());
  ir::ClaimSet no_swiglu = all;
  no_swiglu.unclaim(OpKind::SwiGlu);
  const auto fewer = fusion_passes_for_supported(no_swiglu);
  EXPECT_EQ(std::find(fewer.begin(), fewer.end(), "fuse-swiglu"), fewer.end());
  EXPECT_EQ(fewer.size() + 1, names.size());
}

TEST(FusionPasses, TheListFollowsTheClaims) {
  // Two claim sets, two pass lists: the region pass runs only for a backend claiming its op.
  ir::ClaimSet all;
  ir::for_each_op([&](OpKind k) { all.claim(k); });
  ir::ClaimSet no_regions = all;
  no_regions.unclaim(OpKind::ElementwiseRegion);
  const auto with = fusion_passes_for_supported(all);
  const auto without = fusion_passes_for_supported(no_regions);
  EXPECT_EQ(with.back(), "mark-elementwise-regions"); // last: the pattern fusions go first
  EXPECT_EQ(std::count(without.begin(), without.end(), "mark-elementwise-regions"), 0);
  EXPECT_EQ(without.size() + 1, with.size());
  PassRegistry r;
  register_fusion_passes(r);
  for (const auto& name : fusion_passes_for_supported(all))
    EXPECT_TRUE(r.contains(name)) << name;
  EXPECT_TRUE(r.contains("unfuse-elementwise-regions"));
}

} // namespace
} // namespace rlx::fusion
