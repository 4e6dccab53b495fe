// tuple_test.cpp: tuple types (ops with several results): Shape, Split / Get, the verifier's tuple
// rules (one graph per rule), the text and JSON forms, and the reference interpreter.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/ir/text.hpp"
#include "rlx/ir/verify.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cmath>
#include <limits>

namespace rlx::ir {
namespace {

std::string verify_error(const Graph& g) {
  try {
    verify(g);
  } catch (const VerifyError& e) {
    return e.what();
  }
  return "";
}

/// x [2, 7] f32 -> split(axis 1, [2, 4, 1]); returns the split's id.
NodeId split_graph(Builder& b) {
  NodeId x = b.input("x", Shape::of({2, 7}));
  return b.split(x, 1, {2, 4, 1});
}

TEST(TupleShape, PartsLayoutAndErrors) {
  Shape t =
      Shape::tuple({Shape::of({3}), Shape::of({2, 2}, DType::f64), Shape::of({1}, DType::i8)});
  EXPECT_TRUE(t.is_tuple());
  EXPECT_EQ(t.dtype, DType::f32); // the first part's
  EXPECT_EQ(t.part(1), Shape::of({2, 2}, DType::f64));
  EXPECT_EQ(t.part_offset(0), 0);
  EXPECT_EQ(t.part_offset(1), 64); // 12 bytes, rounded up to kTuplePartAlignment
  EXPECT_EQ(t.part_offset(2), 128);
  EXPECT_EQ(t.bytes(), 129);
  EXPECT_EQ(t.str(), "([3] f32, [2, 2] f64, [1] i8)");
  EXPECT_THROW(t.numel(), ShapeError);
  EXPECT_THROW(t.sizes(), ShapeError);
  EXPECT_THROW(t.part(3), ShapeError);
  EXPECT_THROW(t.part(-1), ShapeError);
  EXPECT_THROW(Shape::of({3}).part(0), ShapeError);
  EXPECT_THROW(Shape::tuple({}), ShapeError);
  EXPECT_THROW(Shape::tuple({t}), ShapeError);
  EXPECT_FALSE(t == Shape::tuple({Shape::of({3}), Shape::of({2, 2}, DType::f64)}));
  Shape s = Shape::tuple({Shape({Dim::sym("b"), 2}, DType::f32)});
  EXPECT_FALSE(s.is_static());
  std::vector<std::string> syms;
  s.collect_symbols(syms);
  EXPECT_EQ(syms, std::vector<std::string>{"b"});
  EXPECT_EQ(s.bind({{"b", 5}}), Shape::tuple({Shape::of({5, 2})}));
}

TEST(TupleOps, SplitTypeAndGetParts) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  EXPECT_EQ(g.shape(t), Shape::tuple({Shape::of({2, 2}), Shape::of({2, 4}), Shape::of({2, 1})}));
  auto parts = b.parts(t);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(g.shape(parts[1]), Shape::of({2, 4}));
  for (NodeId p : parts)
    b.output(p);
  verify(g);
}

TEST(TupleOps, ShapeRulesRejectBadSplitsAndGets) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 7}));
  EXPECT_THROW(b.split(x, 1, {2, 4}), ShapeError); // sums to 6
  EXPECT_THROW(b.split(x, 1, {2, 6}), ShapeError); // exceeds 7
  EXPECT_THROW(b.split(x, 1, {0, 7}), ShapeError); // an empty piece
  EXPECT_THROW(b.split(x, 1, {}), ShapeError);     // no piece
  EXPECT_THROW(b.split(x, 2, {7}), ShapeError);    // axis out of range
  EXPECT_THROW(b.get(x, 0), ShapeError);           // not a tuple
  NodeId t = b.split(x, 0, {1, 1});
  EXPECT_THROW(b.get(t, 2), ShapeError); // index out of range
  EXPECT_THROW(b.neg(t), ShapeError);    // only get reads a tuple
  EXPECT_THROW(b.parts(x), ShapeError);
  NodeId s = b.input("s", Shape({Dim::sym("n"), 2}, DType::f32));
  EXPECT_THROW(b.split(s, 0, {1, 1}), ShapeError); // symbolic axis
  EXPECT_NO_THROW(b.split(s, 1, {1, 1}));          // other dims may be symbolic
}

// ---- the verifier's tuple rules, one graph each ----------------------------------------------

TEST(TupleVerify, OnlyGetMayReadATuple) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  NodeId bad = g.add_unchecked(Node{OpKind::Neg, {t}, NoAttrs{}, g.shape(t), {}});
  b.output(b.get(t, 0));
  g.add_output(b.get(t, 1));
  (void)bad;
  EXPECT_NE(verify_error(g).find("only get may read a tuple"), std::string::npos)
      << verify_error(g);
}

TEST(TupleVerify, GetOperandMustBeATuple) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3}));
  b.output(g.add_unchecked(Node{OpKind::Get, {x}, GetAttrs{0}, Shape::of({3}), {}}));
  EXPECT_NE(verify_error(g).find("not a tuple"), std::string::npos) << verify_error(g);
}

TEST(TupleVerify, GetIndexInRange) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  b.output(g.add_unchecked(Node{OpKind::Get, {t}, GetAttrs{3}, Shape::of({2, 1}), {}}));
  EXPECT_NE(verify_error(g).find("out of range"), std::string::npos) << verify_error(g);
}

TEST(TupleVerify, GetTypeMustBeItsPart) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  b.output(g.add_unchecked(Node{OpKind::Get, {t}, GetAttrs{0}, Shape::of({2, 4}), {}}));
  EXPECT_NE(verify_error(g).find("shape rule derives [2, 2] f32"), std::string::npos)
      << verify_error(g);
}

TEST(TupleVerify, OutputsMustNotBeTuples) {
  Graph g("g");
  Builder b(g);
  b.output(split_graph(b));
  EXPECT_NE(verify_error(g).find("a graph output must be a tensor"), std::string::npos)
      << verify_error(g);
}

TEST(TupleVerify, LeavesMustNotBeTuples) {
  Graph g("g");
  Shape t = Shape::tuple({Shape::of({3})});
  NodeId x = g.add_unchecked(Node{OpKind::Input, {}, LeafAttrs{"x", t}, t, {}});
  g.add_output(g.add_unchecked(Node{OpKind::Get, {x}, GetAttrs{0}, Shape::of({3}), {}}));
  EXPECT_NE(verify_error(g).find("a leaf cannot have the tuple type"), std::string::npos)
      << verify_error(g);
}

TEST(TupleVerify, TuplesDoNotNest) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  Shape nested = g.shape(t);
  nested.parts.push_back(g.shape(t));
  NodeId bad = g.add_unchecked(Node{OpKind::Split, {g.inputs()[0]}, g.node(t).attrs, nested, {}});
  b.output(g.add_unchecked(Node{OpKind::Get, {bad}, GetAttrs{0}, Shape::of({2, 2}), {}}));
  EXPECT_NE(verify_error(g).find("nests a tuple"), std::string::npos) << verify_error(g);
}

TEST(TupleVerify, SplitSizesMustCoverTheAxis) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 7}));
  Shape t = Shape::tuple({Shape::of({2, 2}), Shape::of({2, 4})});
  NodeId bad = g.add_unchecked(Node{OpKind::Split, {x}, SplitAttrs{1, {2, 4}}, t, {}});
  b.output(b.get(bad, 0));
  EXPECT_NE(verify_error(g).find("sum to 6"), std::string::npos) << verify_error(g);
}

// ---- text and JSON ---------------------------------------------------------------------------

Graph sample() {
  Graph g("tuples");
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), 7}, DType::f32));
  NodeId t = b.split(x, -1, {2, 4, 1});
  auto p = b.parts(t);
  b.output(b.neg(p[2]));
  b.output(p[0]);
  return g;
}

TEST(TupleText, PrintsAndParsesBack) {
  Graph g = sample();
  std::string text = print(g);
  EXPECT_NE(text.find("split[axis=-1, sizes=[2, 4, 1]](%0) : ([batch, 2] f32, [batch, 4] f32, "
                      "[batch, 1] f32)"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("get[index=2](%1) : [batch, 1] f32"), std::string::npos) << text;
  Graph back = parse(text);
  EXPECT_TRUE(back == g);
  EXPECT_EQ(back.hash(), g.hash());
  EXPECT_EQ(print(back), text);
}

TEST(TupleText, RejectsBadTupleTypes) {
  const std::string head = "graph @g {\n  %0 = input[name=\"x\", shape=[2] f32] : [2] f32\n";
  EXPECT_THROW(parse(head + "  %1 = split[sizes=[1, 1]](%0) : (([1] f32), [1] f32)\n"
                            "  %2 = get(%1) : [1] f32\n  return %2\n}\n"),
               ParseError);
  EXPECT_THROW(parse(head + "  %1 = split[sizes=[1, 1]](%0) : ()\n"
                            "  %2 = get(%1) : [1] f32\n  return %2\n}\n"),
               ParseError);
  // A declared tuple type that is not what the rule derives.
  EXPECT_THROW(parse(head + "  %1 = split[sizes=[1, 1]](%0) : ([1] f32, [1] f64)\n"
                            "  %2 = get(%1) : [1] f32\n  return %2\n}\n"),
               Error);
}

TEST(TupleJson, RoundTripsAndRejectsBadTuples) {
  Graph g = sample();
  std::string text = save_json(g);
  EXPECT_NE(text.find("\"tuple\""), std::string::npos);
  Graph back = load_json(text);
  EXPECT_TRUE(back == g);
  auto j = to_json(g);
  for (auto& node : j["nodes"])
    if (node["op"] == "split")
      node["shape"]["tuple"] = nlohmann::json::array();
  EXPECT_THROW(graph_from_json(j), ParseError);
}

// ---- reference interpreter -------------------------------------------------------------------

TEST(TupleReference, SplitPartsAreNarrows) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({3, 7}, DType::f64));
  NodeId t = b.split(x, 1, {2, 4, 1});
  auto p = b.parts(t);
  for (int i = 2; i >= 0; --i)
    b.output(p[static_cast<std::size_t>(i)]);
  b.output(b.narrow(x, 1, 0, 2));
  b.output(b.narrow(x, 1, 2, 4));
  b.output(b.narrow(x, 1, 6, 1));
  Tensor xv(Shape::of({3, 7}, DType::f64));
  for (std::int64_t i = 0; i < xv.numel(); ++i)
    xv.set_f64(i, 0.25 * static_cast<double>(i) - 1.0);
  auto outs = reference::evaluate(g, {{"x", xv}});
  ASSERT_EQ(outs.size(), 6u);
  EXPECT_TRUE(outs[2].identical(outs[3]));
  EXPECT_TRUE(outs[1].identical(outs[4]));
  EXPECT_TRUE(outs[0].identical(outs[5]));
  // The first column block starts at element 0 of each row.
  EXPECT_EQ(outs[2].get_f64(0), -1.0);
  EXPECT_EQ(outs[2].get_f64(2), 0.75); // row 1, column 0: element 7
}

TEST(TupleReference, NodeEntryPoints) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  NodeId p = b.get(t, 1);
  Tensor xv(Shape::of({2, 7}));
  for (std::int64_t i = 0; i < xv.numel(); ++i)
    xv.set_f64(i, static_cast<double>(i));
  std::vector<Tensor> args{xv};
  EXPECT_THROW(reference::evaluate_node(g.node(t), args), EvalError);
  auto parts = reference::evaluate_node_parts(g.node(t), args);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[1].shape(), Shape::of({2, 4}));
  EXPECT_EQ(parts[1].get_f64(4), 9.0); // row 1, column 2
  EXPECT_THROW(reference::evaluate_node_parts(g.node(p), args), EvalError);
  EXPECT_THROW(reference::evaluate_node(g.node(p), args), EvalError);
  // A single-result node gives one part.
  NodeId n = b.neg(p);
  auto one = reference::evaluate_node_parts(g.node(n), std::vector<Tensor>{parts[1]});
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].get_f64(4), -9.0);
}

TEST(TupleReference, OutputsDoNotShareBuffers) {
  Graph g("g");
  Builder b(g);
  NodeId t = split_graph(b);
  b.output(b.get(t, 0));
  b.output(b.get(t, 0));
  Tensor xv(Shape::of({2, 7}));
  auto outs = reference::evaluate(g, {{"x", xv}});
  outs[0].set_f64(0, 5.0);
  EXPECT_EQ(outs[1].get_f64(0), 0.0);
}

// ---- onnx3: topk ----
/// TopK of [2, 5] rows, values and indices of the parts.
std::pair<std::vector<double>, std::vector<std::int64_t>> topk_of(std::vector<double> x,
                                                                  TopKAttrs a) {
  Graph g("g");
  Builder b(g);
  NodeId in = b.input("x", Shape::of({2, 5}, DType::f64));
  NodeId t = g.add(OpKind::TopK, {in}, a, "top");
  b.output(b.get(t, 0));
  b.output(b.get(t, 1));
  Tensor xv(Shape::of({2, 5}, DType::f64));
  for (std::int64_t i = 0; i < xv.numel(); ++i)
    xv.set_f64(i, x[static_cast<std::size_t>(i)]);
  auto outs = reference::evaluate(g, {{"x", xv}});
  std::vector<double> v;
  std::vector<std::int64_t> idx;
  for (std::int64_t i = 0; i < outs[0].numel(); ++i)
    v.push_back(outs[0].get_f64(i));
  for (std::int64_t i = 0; i < outs[1].numel(); ++i)
    idx.push_back(outs[1].get_i64(i));
  EXPECT_EQ(outs[1].dtype(), DType::i64);
  return {v, idx};
}

TEST(TupleReference, TopKOrderTiesAndNaN) {
  const double nan = std::numeric_limits<double>::quiet_NaN();
  // Row 0 holds ties (3 at 0 and 3) and a NaN (greater than every number); row 1 is plain.
  std::vector<double> x{3, 1, nan, 3, 2, /**/ 0.5, -2, 4, 0.25, 9};
  auto [v, idx] = topk_of(x, TopKAttrs{1, 3, true});
  ASSERT_EQ(v.size(), 6u);
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ((std::vector<double>{v[1], v[2], v[3], v[4], v[5]}),
            (std::vector<double>{3, 3, 9, 4, 0.5}));
  EXPECT_EQ(idx, (std::vector<std::int64_t>{2, 0, 3, 4, 2, 0}));
  auto [s, sidx] = topk_of(x, TopKAttrs{-1, 3, false});
  EXPECT_EQ(s, (std::vector<double>{1, 2, 3, -2, 0.25, 0.5}));
  EXPECT_EQ(sidx, (std::vector<std::int64_t>{1, 4, 0, 1, 3, 0}));
  // Along axis 0 (columns of two), k = 2: every column sorted, NaN first.
  Graph g("g");
  Builder b(g);
  NodeId in = b.input("x", Shape::of({2, 5}, DType::f64));
  NodeId t = g.add(OpKind::TopK, {in}, TopKAttrs{0, 2, true}, "top");
  EXPECT_EQ(g.shape(t).str(), "([2, 5] f64, [2, 5] i64)");
}

TEST(TupleShape, TopKErrors) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape::of({2, 5}));
  EXPECT_THROW(g.add(OpKind::TopK, {x}, TopKAttrs{1, 6, true}), ShapeError);  // k > 5
  EXPECT_THROW(g.add(OpKind::TopK, {x}, TopKAttrs{1, -1, true}), ShapeError); // k < 0
  EXPECT_THROW(g.add(OpKind::TopK, {x}, TopKAttrs{2, 1, true}), ShapeError);  // no axis 2
  NodeId flag = b.input("flag", Shape::of({4}, DType::boolean));
  EXPECT_THROW(g.add(OpKind::TopK, {flag}, TopKAttrs{0, 1, true}), ShapeError);
  NodeId sym = b.input("s", Shape({Dim::sym("n")}, DType::f32));
  EXPECT_THROW(g.add(OpKind::TopK, {sym}, TopKAttrs{0, 1, true}), ShapeError);
}

} // namespace
} // namespace rlx::ir
