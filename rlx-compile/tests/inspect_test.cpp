// inspect_test.cpp: inspect_pipeline (the text of every stage) and the report formatters.
#include "rlx/compile/inspect.hpp"
#include "rlx/ir/text.hpp"
#include "testing/compile_testing.hpp"

#include <gtest/gtest.h>

namespace rlx::compile {
namespace {

using ir::OpKind;

CompileOptions bound() {
  CompileOptions o;
  o.bindings = {{"batch", 2}, {"seq", 4}};
  return o;
}

TEST(Inspect, RecordsTheTextOfEveryStage) {
  testing::TestBackend no_relu("no-relu",
                               testing::claim_all_but({OpKind::Relu, OpKind::MatMulBiasAct}));
  ir::Graph hir = testing::mlp_hir();
  PipelineInspection ins = inspect_pipeline(no_relu, hir, bound());
  CompilePipeline pipe(no_relu, bound());
  std::vector<std::string> names = pipe.pass_names();
  names.pop_back(); // memory-plan has no graph text
  ASSERT_EQ(ins.stages.size(), names.size() + 1);
  EXPECT_EQ(ins.stages[0].stage, "input");
  EXPECT_EQ(ins.stages[0].text, ir::print(hir));
  for (std::size_t i = 0; i < names.size(); ++i)
    EXPECT_EQ(ins.stages[i + 1].stage, names[i]);
  // Each stage's text parses back, and the last one is the LIR graph.
  for (const auto& s : ins.stages)
    EXPECT_NO_THROW(ir::parse(s.text)) << s.stage;
  EXPECT_EQ(ins.stages.back().text, ir::print(ins.result.lir.graph()));
  // lower-hir changed the graph; cse found nothing to merge in an MLP.
  EXPECT_TRUE(ins.stages[1].changed);
  const std::string text = ins.str();
  EXPECT_NE(text.find("==== lower-hir"), std::string::npos);
  EXPECT_NE(text.find("linear("), std::string::npos);  // the HIR input
  EXPECT_NE(text.find("maximum("), std::string::npos); // relu legalised
  EXPECT_NE(text.find("==== dispatch"), std::string::npos);
  EXPECT_NE(text.find("dispatch on no-relu"), std::string::npos);
  EXPECT_NE(text.find("==== memory plan"), std::string::npos);
  EXPECT_NE(text.find("(unchanged)"), std::string::npos) << text;
}

TEST(Inspect, FormatsBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(5 * 1024 * 1024), "5.0 MiB");
  EXPECT_EQ(format_bytes(3LL * 1024 * 1024 * 1024), "3.0 GiB");
}

TEST(Inspect, MemoryPlanSummaryShowsArenaAgainstTheLowerBound) {
  ir::MemoryPlan p;
  p.arena_size = 3 * 1024 * 1024;
  p.lower_bound = 2 * 1024 * 1024;
  p.pinned_bytes = 1024 * 1024;
  p.alignment = 64;
  p.assignments.resize(3);
  p.assignments[0].storage = ir::Storage::input;
  p.assignments[1].storage = ir::Storage::temp;
  p.assignments[2].storage = ir::Storage::temp;
  p.scratch.push_back({ir::NodeId(1), 0, 4096});
  const std::string s = format_memory_plan(p);
  EXPECT_NE(s.find("arena        3.0 MiB (3145728 bytes)"), std::string::npos) << s;
  EXPECT_NE(s.find("lower bound  2.0 MiB"), std::string::npos) << s;
  EXPECT_NE(s.find("arena / bound 1.500"), std::string::npos) << s;
  EXPECT_NE(s.find("temporaries  2.0 MiB placed for a peak of 1.0 MiB (ratio 2.000)"),
            std::string::npos)
      << s;
  EXPECT_NE(s.find("input=1 temp=2"), std::string::npos) << s;
  EXPECT_NE(s.find("scratch      1 buffers, 4.0 KiB"), std::string::npos) << s;
}

TEST(Inspect, PassStatsAndSummary) {
  std::vector<fusion::PassStats> st{{"const-fold", 1.25, true, 10, 8}, {"dce", 0.5, false, 8, 8}};
  const std::string s = format_pass_stats(st);
  EXPECT_NE(s.find("const-fold"), std::string::npos);
  EXPECT_NE(s.find("1.250 ms  changed"), std::string::npos) << s;
  EXPECT_NE(s.find("10 -> 8 nodes"), std::string::npos) << s;
  EXPECT_NE(s.find("unchanged"), std::string::npos) << s;
  EXPECT_NE(s.find("total                    1.750 ms"), std::string::npos) << s;

  testing::TestBackend full;
  CompileResult r = CompilePipeline(full, bound()).run(testing::mlp_hir());
  const std::string sum = format_compile_summary(r);
  EXPECT_NE(sum.find("compiled 'mlp'"), std::string::npos) << sum;
  EXPECT_NE(sum.find("0 rewritten, 0 unsupported"), std::string::npos) << sum;
  EXPECT_NE(sum.find("arena"), std::string::npos) << sum;
}

} // namespace
} // namespace rlx::compile
