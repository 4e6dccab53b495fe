// text_test.cpp: the text form: the printed layout, hand-written input, exact constants, names and
// labels, sub-graphs, and one test per class of parse error.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/text.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <limits>

namespace rlx::ir {
namespace {

/// The message of the ParseError that parse(\p text) throws ("" when it does not throw).
std::string parse_error(const std::string& text) {
  try {
    parse(text);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

Graph demo_graph() {
  Graph g("demo");
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), 4}));
  NodeId w = b.param("w", Shape({3, 4}));
  NodeId y = b.matmul(x, w, false, true);
  b.output(g.add(OpKind::Relu, {y}, NoAttrs{}, "act"));
  return g;
}

TEST(Text, PrintsTheDocumentedForm) {
  EXPECT_EQ(print(demo_graph()), "graph @demo {\n"
                                 "  %0 = input[name=\"x\", shape=[batch, 4] f32] : [batch, 4] f32\n"
                                 "  %1 = param[name=\"w\", shape=[3, 4] f32] : [3, 4] f32\n"
                                 "  %2 = matmul[transpose_b=true](%0, %1) : [batch, 3] f32\n"
                                 "  %3 = relu(%2) : [batch, 3] f32  # act\n"
                                 "  return %3\n"
                                 "}\n");
}

TEST(Text, ParsesHandWrittenText) {
  // Free value names, comment lines, attributes in any order, omitted types and defaults.
  const char* text = R"(# a hand-written graph
graph @demo {
  # leaves first
  %x = input[shape=[batch, 4] f32, name="x"]
  %weight = param[name="w", shape=[3, 4] f32] : [3, 4] f32

  %y = matmul[transpose_a=false, transpose_b=true](%x, %weight)
  %out = relu(%y) : [batch, 3] f32   # act
  return %out
}
)";
  Graph g = parse(text);
  EXPECT_TRUE(g == demo_graph()) << print(g);
  EXPECT_EQ(g.name(), "demo");
  EXPECT_EQ(g.node(NodeId(3)).name, "act");
  EXPECT_EQ(g.node(NodeId(2)).name, "");
  EXPECT_EQ(g.node(NodeId(1)).name, "");
}

TEST(Text, DefaultAttributesAreOmittedAndOthersShown) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 3, 4}));
  b.output(b.reduce(ReduceOp::sum, x, {}, false));
  b.output(b.reduce(ReduceOp::mean, x, {-1}, true));
  std::string text = print(g);
  EXPECT_NE(text.find("%1 = reduce(%0) : [] f32"), std::string::npos) << text;
  EXPECT_NE(text.find("%2 = reduce[op=mean, axes=[-1], keep_dims=true](%0) : [2, 3, 1] f32"),
            std::string::npos)
      << text;
  EXPECT_TRUE(parse(text) == g);
}

TEST(Text, NamesLabelsAndSymbolsWithAnyCharactersRoundTrip) {
  Graph g("my graph \"1\"\n");
  Builder b(g);
  NodeId x = b.input("in \"put\"\\ \x01 é", Shape({Dim::sym("my sym"), Dim::sym("none"), 2}));
  const char* labels[] = {"plain label", " leading space", "trailing space ", "\"quoted\"",
                          "tab\there",   "new\nline",      "# hash",          "ünï"};
  NodeId y = x;
  for (const char* l : labels)
    y = g.add(OpKind::Neg, {y}, NoAttrs{}, l);
  b.output(y);
  std::string text = print(g);
  Graph back = parse(text);
  EXPECT_TRUE(back == g) << text;
  EXPECT_EQ(back.name(), g.name());
  for (NodeId id : g.ids())
    EXPECT_EQ(back.node(id).name, g.node(id).name) << text;
  EXPECT_EQ(print(back), text);
}

/// A one-element tensor of \p T with the given bit pattern.
template <class T, class Bits> Tensor bits_tensor(Bits bits) {
  Tensor t(Shape::of({1}, dtype_of<T>()));
  std::memcpy(t.raw(), &bits, sizeof(Bits));
  return t;
}

TEST(Text, ConstantsRoundTripBitExactlyInEveryDtype) {
  const float inf = std::numeric_limits<float>::infinity();
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const double dinf = std::numeric_limits<double>::infinity();
  std::vector<Tensor> values = {
      Tensor::from<float>({8}, {0.1f, -0.0f, 1e-45f, 3.4028235e38f, inf, -inf, nan, -nan}),
      Tensor::from<double>({6}, {0.1, -0.0, 5e-324, 1.7976931348623157e308, -dinf,
                                 std::numeric_limits<double>::quiet_NaN()}),
      Tensor::from<f16_t>({4}, {f16_t{0x0001}, f16_t{0x7bff}, f16_t{0xfc00}, f16_t{0x8000}}),
      Tensor::from<bf16_t>({3}, {bf16_t{0x0001}, bf16_t{0x7f7f}, bf16_t{0xff80}}),
      Tensor::from<std::int8_t>({2}, {-128, 127}),
      Tensor::from<std::int32_t>({2}, {std::numeric_limits<std::int32_t>::min(), 7}),
      Tensor::from<std::int64_t>({2}, {std::numeric_limits<std::int64_t>::min(),
                                       std::numeric_limits<std::int64_t>::max()}),
      Tensor::from<std::uint8_t>({2}, {0, 255}),
      Tensor::from<bool>({2}, {true, false}),
      Tensor::from<float>({2, 0}, {}),
      Tensor::scalar(2.5f),
      // Not expressible in decimal: NaN payloads and a bool byte that is not 0 / 1 (hex form).
      bits_tensor<float>(std::uint32_t{0x7fc00001}),
      bits_tensor<double>(std::uint64_t{0xfff0000000000001}),
      bits_tensor<f16_t>(std::uint16_t{0x7e01}),
      bits_tensor<bf16_t>(std::uint16_t{0x7f81}),
      bits_tensor<bool>(std::uint8_t{2}),
  };
  Graph g("constants");
  Builder b(g);
  for (const Tensor& t : values)
    b.output(b.constant(t));
  std::string text = print(g);
  Graph back = parse(text);
  ASSERT_TRUE(back == g) << text;
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_TRUE(back.node(NodeId(static_cast<std::uint32_t>(i))).attr<ConstantAttrs>().value ==
                values[i])
        << "constant " << i << "\n"
        << text;
  EXPECT_NE(text.find("{0.1, -0, 1e-45, 3.4028235e+38, inf, -inf, nan, -nan}"), std::string::npos)
      << text;
  EXPECT_NE(text.find("[1] f32 0x0100c07f"), std::string::npos) << text;
  EXPECT_NE(text.find("[1] bool 0x02"), std::string::npos) << text;
  EXPECT_NE(text.find("[2] bool {true, false}"), std::string::npos) << text;
}

TEST(Text, SubGraphsPrintNestedAndParseBack) {
  Graph g = testing::sample_graph(OpKind::If);
  std::string text = print(g);
  EXPECT_NE(text.find("if[then_branch=graph @then {\n      %0 = input"), std::string::npos) << text;
  EXPECT_NE(text.find("    }, else_branch=graph @else {\n"), std::string::npos) << text;
  EXPECT_TRUE(parse(text) == g);

  // An absent optional body prints as nothing (the default) and may be written as `none`.
  Graph h = testing::sample_graph(OpKind::CustomFn);
  auto attrs = h.node(NodeId(2)).attr<CustomFnAttrs>();
  attrs.vjp = SubGraph{};
  Graph no_vjp("g");
  Builder b(no_vjp);
  NodeId a = b.input("a", h.shape(NodeId(0)));
  NodeId v = b.input("b", h.shape(NodeId(1)));
  b.output(no_vjp.add(OpKind::CustomFn, {a, v}, attrs));
  std::string t2 = print(no_vjp);
  EXPECT_EQ(t2.find("vjp="), std::string::npos) << t2;
  EXPECT_TRUE(parse(t2) == no_vjp);
  std::string explicit_none = t2;
  explicit_none.replace(explicit_none.find("custom_fn[body="), 15, "custom_fn[vjp=none, body=");
  EXPECT_TRUE(parse(explicit_none) == no_vjp) << explicit_none;
}

TEST(Text, OptionalAndEnumAndListFields) {
  Graph g = testing::sample_graph(OpKind::Attention);
  std::string text = print(g);
  EXPECT_NE(text.find("attention[layout=bhsd, num_heads=4, num_kv_heads=2, mask=causal, "
                      "scale=0.3, softcap=20](%0, %1, %2)"),
            std::string::npos)
      << text;
  std::string none = text;
  none.replace(none.find("scale=0.3"), 9, "scale=none");
  Graph back = parse(none);
  EXPECT_FALSE(back.node(NodeId(3)).attr<AttentionAttrs>().scale.has_value());
}

TEST(Text, NonFiniteAttributesPrintAsTokens) {
  // No op accepts them, but print() shows whatever a broken graph holds.
  Graph g("g");
  const Shape q({1, 2, 1, 4});
  NodeId x = g.add_unchecked(Node{OpKind::Input, {}, LeafAttrs{"x", q}, q, {}});
  AttentionAttrs a;
  a.scale = -std::numeric_limits<double>::infinity();
  a.softcap = std::numeric_limits<double>::quiet_NaN();
  g.set_outputs({g.add_unchecked(Node{OpKind::Attention, {x, x, x}, a, q, {}})});
  std::string text = print(g);
  EXPECT_NE(text.find("%1 = attention[scale=-inf, softcap=nan](%0, %0, %0)"), std::string::npos)
      << text;
  EXPECT_EQ(parse_error(text), "line 3:8: attention (new node %1) on [1, 2, 1, 4] f32, [1, 2, 1, "
                               "4] f32, [1, 2, 1, 4] f32: attention: scale must be finite");
}

// ---- errors: one test per class, each naming line:column ----------------------------------------

const char* kHead = "graph @g {\n  %0 = input[name=\"x\", shape=[2, 3] f32]\n";

TEST(TextErrors, SyntaxNamesLineAndColumn) {
  EXPECT_EQ(parse_error(""), "line 1:1: expected 'graph', got the end of the input");
  EXPECT_EQ(parse_error("graph g {}"),
            "line 1:7: expected '@' before the graph name, got \"g {}\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu(%0\n  return %1\n}"),
            "line 4:3: expected ')' to close the operand list, got \"return %1\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu(%0)\n"),
            "line 4:1: expected a node (%name = op ...) or 'return', got the end of the input");
  EXPECT_EQ(parse_error(std::string(kHead) + "  return %0\n}\ngarbage"),
            "line 5:1: expected the end of the input after the graph, got \"garbage\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = input[name=\"y\n  return %0\n}"),
            "line 3:19: unterminated string");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = input[name=\"\\q\"]\n  return %0\n}"),
            "line 3:21: unknown escape \\q in a string");
}

TEST(TextErrors, UnknownNames) {
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = frob(%0)\n  return %1\n}"),
            "line 3:8: unknown op \"frob\"");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = input[name=\"x\", shap=[2] f32]\n  return %0\n}"),
            "line 2:24: input has no attribute 'shap' (attributes: name, shape)");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu[axis=1](%0)\n  return %1\n}"),
            "line 3:13: relu has no attribute 'axis' (it takes none)");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = input[name=\"x\", shape=[2] f31]\n  return %0\n}"),
            "line 2:34: unknown dtype \"f31\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = reduce[op=avg](%0)\n  return %1\n}"),
            "line 3:18: unknown value \"avg\" (expected one of sum, mean, max, min, prod)");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu(%5)\n  return %1\n}"),
            "line 3:13: %5 is not defined before this use");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu(%0)\n  return %7\n}"),
            "line 4:10: %7 is not defined before this use");
}

TEST(TextErrors, Redefinitions) {
  EXPECT_EQ(parse_error(std::string(kHead) + "  %0 = relu(%0)\n  return %0\n}"),
            "line 3:3: %0 is defined twice");
  EXPECT_EQ(
      parse_error(std::string(kHead) + "  %1 = input[name=\"x\", shape=[2] f32]\n  return %0\n}"),
      "line 3:8: input name 'x' is already defined");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = narrow[axis=1, axis=0](%0)\n  return %1\n}"),
            "line 3:23: attribute 'axis' is given twice");
}

TEST(TextErrors, ValuesOfTheWrongKind) {
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = narrow[axis=x](%0)\n  return %1\n}"),
            "line 3:20: expected an integer, got \"x\"");
  EXPECT_EQ(parse_error(std::string(kHead) +
                        "  %1 = narrow[axis=99999999999999999999](%0)\n  return %1\n}"),
            "line 3:20: expected an integer, got \"99999999999999999999\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = matmul[transpose_a=yes](%0, %0)\n  return "
                                             "%1\n}"),
            "line 3:27: expected true or false, got \"yes\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = layer_norm[eps=tiny](%0)\n  return %1\n}"),
            "line 3:23: expected a number, got \"tiny\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = transpose[perm=1](%0)\n  return %1\n}"),
            "line 3:23: expected '[' to open a list, got \"1](%0)\"");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = input[name=x]\n  return %0\n}"),
            "line 3:19: expected a string in double quotes, got \"x]\"");
}

TEST(TextErrors, ConstantsOfTheWrongSize) {
  const std::string tail = "\n  return %0\n}";
  EXPECT_EQ(parse_error("graph @g {\n  %0 = constant[value=[2] f32 {1}]" + tail),
            "line 2:23: tensor [2] f32 needs 2 elements, got 1");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = constant[value=[1] i8 {300}]" + tail),
            "line 2:31: tensor element 0: 300 is out of range for i8");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = constant[value=[1] bool {2}]" + tail),
            "line 2:33: tensor element 0: expected true or false");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = constant[value=[2] f32 0x0000]" + tail),
            "line 2:31: tensor [2] f32 needs 16 hex digits, got 4");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = constant[value=[1] u8 0xzz]" + tail),
            "line 2:30: bad hex digit in a constant");
  EXPECT_EQ(parse_error("graph @g {\n  %0 = constant[value=[n] f32 {1}]" + tail),
            "line 2:23: a constant's shape must be static, got [n] f32");
  EXPECT_EQ(
      parse_error("graph @g {\n  %0 = constant[value=[99999999999, 99999999999] f32 {1}]" + tail),
      "line 2:23: tensor [99999999999, 99999999999] f32 needs too many elements, got 1");
}

TEST(TextErrors, TypesThatDoNotMatchTheOp) {
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu(%0) : [2, 3] i32\n  return %1\n}"),
            "line 3:19: declared type [2, 3] i32 but relu %1 derives [2, 3] f32");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = transpose[perm=[0, 0]](%0)\n  return %1\n}"),
            "line 3:8: transpose (new node %1) on [2, 3] f32: transpose: perm is not a "
            "permutation of 0..1");
  EXPECT_EQ(parse_error(std::string(kHead) + "  %1 = relu(%0, %0)\n  return %1\n}"),
            "line 3:8: relu (new node %1) on [2, 3] f32, [2, 3] f32: relu: takes 1 inputs, got 2");
}

TEST(TextErrors, TheResultIsVerified) {
  EXPECT_EQ(parse_error(std::string(kHead) + "  return\n}"), "line 1:1: graph @g: has no outputs");
}

TEST(TextErrors, DeepNestingIsRefusedBeforeTheStackRunsOut) {
  std::string text;
  for (int i = 0; i < 200; ++i)
    text += "graph @g {\n %0 = custom_fn[body=";
  std::string msg = parse_error(text);
  EXPECT_NE(msg.find("sub-graphs nest deeper than 32 levels"), std::string::npos) << msg;
}

} // namespace
} // namespace rlx::ir
