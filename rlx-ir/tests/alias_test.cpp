// alias_test.cpp: in-place updates (Graph::aliases): verifier rules, text and JSON round trips,
// hash / equality, bind.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"

#include <gtest/gtest.h>

namespace rlx::ir {
namespace {

/// loss = sum(w * x); w' = w - lr * x (returned as output 1, aliased to w).
Graph sgd_like(bool alias = true) {
  Graph g("step");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 3}));
  NodeId w = b.param("w", Shape({2, 3}));
  NodeId lr = b.input("lr", Shape::scalar());
  NodeId loss = b.sum(b.mul(w, x), {0, 1});
  NodeId w_new = b.sub(w, b.mul(lr, x));
  g.set_outputs({loss, w_new});
  if (alias)
    g.add_alias(1, "w");
  return g;
}

TEST(Alias, VerifiesAndRoundTripsThroughText) {
  Graph g = sgd_like();
  EXPECT_NO_THROW(verify(g));
  std::string text = print(g);
  EXPECT_NE(text.find("aliasing 1 = w"), std::string::npos) << text;
  Graph back = parse(text);
  ASSERT_EQ(back.aliases().size(), 1u);
  EXPECT_EQ(back.aliases()[0].output, 1u);
  EXPECT_EQ(back.aliases()[0].param, "w");
  EXPECT_TRUE(back == g);
  EXPECT_EQ(back.hash(), g.hash());
}

TEST(Alias, QuotedParamNamesRoundTrip) {
  Graph g("q");
  Builder b(g);
  NodeId w = b.param("layer.0 w", Shape({4}));
  g.set_outputs({b.neg(w)});
  g.add_alias(0, "layer.0 w");
  Graph back = parse(print(g));
  ASSERT_EQ(back.aliases().size(), 1u);
  EXPECT_EQ(back.aliases()[0].param, "layer.0 w");
}

TEST(Alias, RoundTripsThroughJson) {
  Graph g = sgd_like();
  std::string js = save_json(g);
  EXPECT_NE(js.find("\"aliases\""), std::string::npos);
  Graph back = load_json(js);
  EXPECT_TRUE(back == g);
  // A graph without aliases writes no key, so older readers and files are unchanged.
  EXPECT_EQ(save_json(sgd_like(false)).find("aliases"), std::string::npos);
}

TEST(Alias, TakesPartInHashAndEquality) {
  EXPECT_FALSE(sgd_like(true) == sgd_like(false));
  EXPECT_NE(sgd_like(true).hash(), sgd_like(false).hash());
}

TEST(Alias, BindKeepsAliases) {
  Graph g("sym");
  Builder b(g);
  NodeId w = b.param("w", Shape({Dim::sym("n")}));
  g.set_outputs({b.neg(w)});
  g.add_alias(0, "w");
  Graph bound = g.bind({{"n", 5}});
  ASSERT_EQ(bound.aliases().size(), 1u);
  EXPECT_NO_THROW(verify(bound));
}

void expect_verify_error(const Graph& g, const std::string& fragment) {
  try {
    verify(g);
    FAIL() << "verify accepted a bad alias (" << fragment << ")";
  } catch (const VerifyError& e) {
    EXPECT_NE(std::string(e.what()).find(fragment), std::string::npos) << e.what();
  }
}

TEST(Alias, VerifierRejectsBadAliases) {
  Graph g = sgd_like(false);
  g.add_alias(2, "w");
  expect_verify_error(g, "the graph has 2 outputs");

  g = sgd_like(false);
  g.add_alias(1, "nope");
  expect_verify_error(g, "no param of that name");

  g = sgd_like(false);
  g.add_alias(0, "w"); // the scalar loss is not of w's type
  expect_verify_error(g, "has type");

  g = sgd_like(false);
  g.add_alias(1, "w");
  g.add_alias(1, "w");
  expect_verify_error(g, "already updates");

  // x is an input, not a param.
  g = sgd_like(false);
  g.add_alias(1, "x");
  expect_verify_error(g, "no param of that name");
}

TEST(Alias, ParserRejectsMalformedAliasing) {
  std::string text = print(sgd_like(false));
  std::string bad = text;
  bad.insert(bad.rfind('}'), " aliasing 1 w\n");
  EXPECT_THROW(parse(bad), ParseError);
  bad = text;
  bad.insert(bad.rfind('}'), " aliasing 7 = w\n");
  EXPECT_THROW(parse(bad), ParseError);
}

} // namespace
} // namespace rlx::ir
