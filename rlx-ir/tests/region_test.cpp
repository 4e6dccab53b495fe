// region_test.cpp: the ElementwiseRegion op: its shape rule and verifier (one graph per rule), the
// text and JSON forms (round trip, one and several results), the reference semantics (the body
// inlined) and inline_region.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/region.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <memory>

namespace rlx::ir {
namespace {

using BodyFn = std::function<std::vector<NodeId>(Builder&, const std::vector<NodeId>&)>;

/// A body graph with one Input per type of \p types, outputs from \p fn.
std::shared_ptr<Graph> body_of(const std::vector<Shape>& types, const BodyFn& fn) {
  auto body = std::make_shared<Graph>("body");
  Builder b(*body);
  std::vector<NodeId> ins;
  for (std::size_t i = 0; i < types.size(); ++i)
    ins.push_back(b.input("in" + std::to_string(i), types[i]));
  for (NodeId o : fn(b, ins))
    b.output(o);
  return body;
}

/// x [4, 6], b [6] -> region: (exp(x * b), tanh(x * b) - b): a tuple of two [4, 6] parts.
Graph two_result_graph() {
  Graph g("two");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({4, 6}));
  NodeId v = b.param("b", Shape::of({6}));
  auto body = body_of({g.shape(x), g.shape(v)}, [](Builder& c, const std::vector<NodeId>& a) {
    NodeId t = c.mul(a[0], a[1]);
    return std::vector<NodeId>{c.exp(t), c.sub(c.tanh(t), a[1])};
  });
  NodeId r = g.add(OpKind::ElementwiseRegion, {x, v}, RegionAttrs{SubGraph{body}}, "r");
  b.output(b.get(r, 0));
  b.output(b.add(b.get(r, 1), b.scalar(2.0)));
  return g;
}

/// The ShapeError message of adding a region over \p operands with \p body, or "".
std::string region_error(Graph& g, const std::vector<NodeId>& operands,
                         std::shared_ptr<Graph> body) {
  try {
    g.add(OpKind::ElementwiseRegion, operands, RegionAttrs{SubGraph{std::move(body)}});
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

TEST(ElementwiseRegion, OneResultIsATensorSeveralAreATuple) {
  Graph g = two_result_graph();
  verify(g);
  const Shape& t = g.shape(NodeId(2));
  ASSERT_TRUE(t.is_tuple());
  EXPECT_EQ(t.parts.size(), 2u);
  EXPECT_EQ(t.part(0), Shape::of({4, 6}));

  Graph one("one");
  Builder b(one);
  NodeId x = b.input("x", Shape::of({3}));
  auto body = body_of({one.shape(x)}, [](Builder& c, const std::vector<NodeId>& a) {
    return std::vector<NodeId>{c.relu(c.neg(a[0]))};
  });
  NodeId r = one.add(OpKind::ElementwiseRegion, {x}, RegionAttrs{SubGraph{body}});
  EXPECT_EQ(one.shape(r), Shape::of({3}));
}

TEST(ElementwiseRegion, EvaluatesAsItsBodyInlined) {
  Graph g = two_result_graph();
  // The same computation written with primitives.
  Graph flat("flat");
  Builder b(flat);
  NodeId x = b.input("x", Shape::of({4, 6}));
  NodeId v = b.param("b", Shape::of({6}));
  NodeId t = b.mul(x, v);
  b.output(b.exp(t));
  b.output(b.add(b.sub(b.tanh(t), v), b.scalar(2.0)));
  auto ins = testing::random_inputs(g, 3);
  auto params = testing::random_params(g, 4);
  auto got = reference::evaluate(g, ins, params);
  auto want = reference::evaluate(flat, ins, params);
  ASSERT_EQ(got.size(), 2u);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(max_abs_diff(got[i], want[i]), 0.0) << "output " << i;

  // inline_region gives the same graph values.
  Graph inl("inl");
  Builder ib(inl);
  NodeId ix = ib.input("x", Shape::of({4, 6}));
  NodeId iv = ib.param("b", Shape::of({6}));
  auto outs = inline_region(ib, g.node(NodeId(2)), std::vector<NodeId>{ix, iv});
  ASSERT_EQ(outs.size(), 2u);
  ib.output(outs[0]);
  ib.output(ib.add(outs[1], ib.scalar(2.0)));
  auto inlined = reference::evaluate(inl, ins, params);
  for (std::size_t i = 0; i < 2; ++i)
    EXPECT_EQ(max_abs_diff(inlined[i], want[i]), 0.0) << "output " << i;
}

TEST(ElementwiseRegion, TextAndJsonRoundTrip) {
  for (const Graph& g : {two_result_graph(), testing::sample_graph(OpKind::ElementwiseRegion)}) {
    std::string text = print(g);
    EXPECT_NE(text.find("elementwise_region"), std::string::npos) << text;
    Graph back = parse(text);
    verify(back);
    EXPECT_TRUE(back == g) << text << "\n---\n" << print(back);
    EXPECT_EQ(print(back), text);
    Graph from_json = load_json(save_json(g));
    verify(from_json);
    EXPECT_TRUE(from_json == g);
  }
}

TEST(ElementwiseRegion, VerifierRejectsEachBrokenRule) {
  const Shape m = Shape::of({2, 3});
  auto fresh = [&] {
    auto g = std::make_unique<Graph>("bad");
    Builder b(*g);
    b.input("x", m);
    b.input("y", Shape::of({3}));
    return g;
  };
  auto x = NodeId(0), y = NodeId(1);
  struct Case {
    const char* what;
    std::vector<NodeId> operands;
    std::vector<Shape> body_types;
    BodyFn fn;
    const char* expect;
  };
  const std::vector<Case> cases = {
      {"an opaque op",
       {x, x},
       {m, m},
       [](Builder& c, const auto& a) {
         return std::vector<NodeId>{c.matmul(a[0], a[1], false, true)};
       },
       "may not be in a region: opaque op"},
      {"a reduction",
       {x},
       {m},
       [](Builder& c, const auto& a) { return std::vector<NodeId>{c.sum(a[0], {1}, true)}; },
       "may not be in a region: reduce op"},
      {"quantisation",
       {x},
       {m},
       [](Builder& c, const auto& a) {
         return std::vector<NodeId>{c.fake_quantize(a[0], QuantAttrs{std::nullopt, {0.1}, {0}})};
       },
       "element coordinates"},
      {"a leaf output",
       {x},
       {m},
       [](Builder&, const auto& a) { return std::vector<NodeId>{a[0]}; },
       "every result must be computed in the region"},
      {"outputs of different dims",
       {x, y},
       {m, Shape::of({3})},
       [](Builder& c, const auto& a) {
         return std::vector<NodeId>{c.exp(a[0]), c.exp(a[1])};
       },
       "every result has the same dims"},
      {"an operand type mismatch",
       {x, y},
       {m, m},
       [](Builder& c, const auto& a) { return std::vector<NodeId>{c.add(a[0], a[1])}; },
       "input 1 is [2, 3] f32 but receives [3] f32"},
      {"an arity mismatch",
       {x},
       {m, m},
       [](Builder& c, const auto& a) { return std::vector<NodeId>{c.add(a[0], a[1])}; },
       "takes 2 inputs but receives 1"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    auto g = fresh();
    std::string err = region_error(*g, c.operands, body_of(c.body_types, c.fn));
    EXPECT_NE(err.find(c.expect), std::string::npos) << err;
  }
  // A body holding a Param; an integer division that may fail; no body.
  {
    auto g = fresh();
    auto body = std::make_shared<Graph>("body");
    Builder c(*body);
    c.output(c.exp(c.add(c.input("in0", m), c.param("w", m))));
    EXPECT_NE(region_error(*g, {x}, body).find("may not hold params"), std::string::npos);
  }
  {
    Graph g("int");
    Builder b(g);
    NodeId i = b.input("i", Shape::of({4}, DType::i32));
    auto body = body_of({g.shape(i)}, [](Builder& c, const std::vector<NodeId>& a) {
      return std::vector<NodeId>{c.div(a[0], a[0])};
    });
    EXPECT_NE(region_error(g, {i}, body).find("may fail at run time on integer operands"),
              std::string::npos);
  }
  {
    auto g = fresh();
    EXPECT_NE(region_error(*g, {x}, nullptr).find("body is required"), std::string::npos);
  }
  // The verifier reports a wrong declared type of a region node.
  Graph g = two_result_graph();
  Graph bad("bad");
  for (const Node& n : g.nodes()) {
    Node copy = n;
    if (copy.op == OpKind::ElementwiseRegion)
      copy.shape = Shape::of({4, 6});
    bad.add_unchecked(std::move(copy));
  }
  bad.set_outputs({NodeId(0)});
  EXPECT_THROW(verify(bad), VerifyError);
}

} // namespace
} // namespace rlx::ir
