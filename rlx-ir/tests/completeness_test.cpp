// completeness_test.cpp: every op of the table has a sample graph, shape inference, a text round
// trip, a JSON round trip and a reference kernel that evaluates it to finite values.
#include "rlx/ir/error.hpp"
#include "rlx/ir/hir.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>

namespace rlx::ir {
namespace {

using testing::sample_graph;

class EveryOp : public ::testing::TestWithParam<OpKind> {};

/// Node names and the graph name survive a round trip (Graph::operator== ignores them).
void expect_same_names(const Graph& want, const Graph& got) {
  EXPECT_EQ(want.name(), got.name());
  ASSERT_EQ(want.size(), got.size());
  for (NodeId id : want.ids())
    EXPECT_EQ(want.node(id).name, got.node(id).name) << describe(want, id);
}

TEST_P(EveryOp, HasAVerifiedSampleGraphUsingTheOp) {
  const OpKind op = GetParam();
  Graph g = sample_graph(op);
  EXPECT_NO_THROW(verify(g));
  bool uses = false;
  for (const Node& n : g.nodes())
    uses = uses || n.op == op;
  EXPECT_TRUE(uses) << "the sample graph of " << op_name(op) << " does not contain it";
}

TEST_P(EveryOp, ShapeInferenceRederivesEveryType) {
  Graph g = sample_graph(GetParam());
  for (NodeId id : g.ids()) {
    const Node& n = g.node(id);
    std::vector<Shape> in;
    for (NodeId i : n.inputs)
      in.push_back(g.shape(i));
    EXPECT_EQ(infer_shape(n.op, in, n.attrs), n.shape) << describe(g, id);
  }
}

TEST_P(EveryOp, TextRoundTrip) {
  Graph g = sample_graph(GetParam());
  std::string text = print(g);
  Graph back = parse(text);
  EXPECT_TRUE(back == g) << text << "\nparsed back as\n" << print(back);
  expect_same_names(g, back);
  EXPECT_EQ(print(back), text);
}

TEST_P(EveryOp, JsonRoundTrip) {
  Graph g = sample_graph(GetParam());
  std::string text = save_json(g);
  Graph back = load_json(text);
  EXPECT_TRUE(back == g) << text;
  expect_same_names(g, back);
  EXPECT_EQ(save_json(back), text);
  EXPECT_TRUE(graph_from_json(to_json(g)) == g);
}

TEST_P(EveryOp, ReferenceEvaluatesToFiniteValues) {
  const OpKind op = GetParam();
  Graph g = sample_graph(op);
  auto outs = reference::evaluate(g, testing::random_inputs(g, 7), testing::random_params(g, 7));
  ASSERT_EQ(outs.size(), g.outputs().size());
  Bindings b = testing::sample_bindings(g);
  for (std::size_t i = 0; i < outs.size(); ++i) {
    EXPECT_EQ(outs[i].shape(), g.shape(g.outputs()[i]).bind(b)) << "output " << i;
    for (std::int64_t e = 0; e < outs[i].numel(); ++e)
      ASSERT_TRUE(std::isfinite(outs[i].get_f64(e)))
          << op_name(op) << " output " << i << " element " << e << " is " << outs[i].get_f64(e);
  }
  if (is_hir(op)) {
    Graph mir = lower_hir(g);
    EXPECT_NO_THROW(verify(mir, VerifyOptions{.allow_hir = false}));
  }
}

INSTANTIATE_TEST_SUITE_P(OpTable, EveryOp, ::testing::ValuesIn(testing::all_ops()),
                         [](const ::testing::TestParamInfo<OpKind>& param_info) {
                           return std::string(op_name(param_info.param));
                         });

TEST(OpSamples, AnOpWithoutASampleIsAnError) {
  EXPECT_THROW(sample_graph(static_cast<OpKind>(kNumOps)), Error);
}

TEST(OpSamples, RandomInputsAreDeterministicAndFitTheirUses) {
  Graph g = sample_graph(OpKind::Gather);
  auto a = testing::random_inputs(g, 3);
  auto b = testing::random_inputs(g, 3);
  ASSERT_TRUE(a.count("idx"));
  EXPECT_TRUE(a.at("idx") == b.at("idx"));
  EXPECT_FALSE(testing::random_inputs(g, 4).at("idx") == a.at("idx"));
  // Gather along axis 1 of a [3, 5] table: indices in [0, 5).
  const Tensor& idx = a.at("idx");
  for (std::int64_t i = 0; i < idx.numel(); ++i) {
    EXPECT_GE(idx.get_i64(i), 0);
    EXPECT_LT(idx.get_i64(i), 5);
  }
  Graph logs = sample_graph(OpKind::Log);
  const Tensor x = testing::random_inputs(logs, 1).at("x");
  EXPECT_EQ(x.shape(), Shape({testing::kSymbolSize, 4}));
  for (std::int64_t i = 0; i < x.numel(); ++i)
    EXPECT_GT(x.get_f64(i), 0.0);
}

} // namespace
} // namespace rlx::ir
