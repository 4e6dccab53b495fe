// json_test.cpp: the JSON form: document layout, exact constants, params by name, defaults, and
// errors that name the JSON path.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/json.hpp"
#include "rlx/ir/text.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include <cstring>
#include <functional>
#include <limits>

namespace rlx::ir {
namespace {

using nlohmann::json;

Graph demo_graph() {
  Graph g("demo");
  Builder b(g);
  NodeId x = b.input("x", Shape({Dim::sym("batch"), 4}));
  NodeId w = b.param("w", Shape({4, 4}));
  NodeId y = b.matmul(x, w, false, true);
  NodeId c = b.constant(Tensor::from<float>({4}, {1, -2, 0.5f, 0}), "bias");
  b.output(g.add(OpKind::Add, {y, c}, NoAttrs{}, "out"));
  return g;
}

TEST(Json, DocumentLayout) {
  json j = to_json(demo_graph());
  EXPECT_EQ(j["format"], "rlx.graph");
  EXPECT_EQ(j["version"], 1);
  EXPECT_EQ(j["name"], "demo");
  ASSERT_EQ(j["nodes"].size(), 5u);
  EXPECT_EQ(j["nodes"][0]["op"], "input");
  EXPECT_EQ(j["nodes"][0]["attrs"]["name"], "x");
  EXPECT_EQ(j["nodes"][0]["attrs"]["shape"],
            json::parse(R"({"dims": ["batch", 4], "dtype": "f32"})"));
  // A param is a name and a type: its weights live outside the graph.
  EXPECT_EQ(j["nodes"][1]["attrs"],
            json::parse(R"({"name": "w", "shape": {"dims": [4, 4], "dtype": "f32"}})"));
  EXPECT_EQ(j["nodes"][2]["inputs"], json::parse("[0, 1]"));
  EXPECT_EQ(j["nodes"][2]["attrs"]["transpose_b"], true);
  // A constant is inline.
  EXPECT_EQ(j["nodes"][3]["attrs"]["value"]["data"], json::parse("[1.0, -2.0, 0.5, 0.0]"));
  EXPECT_EQ(j["nodes"][3]["label"], "bias");
  EXPECT_FALSE(j["nodes"][2].contains("label"));
  EXPECT_EQ(j["nodes"][4]["shape"], json::parse(R"({"dims": ["batch", 4], "dtype": "f32"})"));
  EXPECT_EQ(j["outputs"], json::parse("[4]"));
}

TEST(Json, RoundTripKeepsNamesAndLabels) {
  Graph g = demo_graph();
  Graph back = load_json(save_json(g));
  EXPECT_TRUE(back == g);
  EXPECT_EQ(back.name(), "demo");
  EXPECT_EQ(back.node(NodeId(3)).name, "bias");
  EXPECT_EQ(back.node(NodeId(4)).name, "out");
}

TEST(Json, ConstantsRoundTripBitExactly) {
  Tensor payload(Shape::of({1}, DType::f32));
  std::uint32_t bits = 0x7fc00001;
  std::memcpy(payload.raw(), &bits, 4);
  Tensor odd_bool(Shape::of({1}, DType::boolean));
  odd_bool.raw()[0] = std::byte{7};
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<Tensor> values = {
      Tensor::from<float>({4}, {0.1f, -0.0f, std::numeric_limits<float>::quiet_NaN(), 1e-45f}),
      Tensor::from<double>({3}, {-inf, 5e-324, 0.1}),
      Tensor::from<f16_t>({2}, {f16_t{0x7c00}, f16_t{0x0001}}),
      Tensor::from<bf16_t>({1}, {bf16_t{0x3f81}}),
      Tensor::from<std::int64_t>({2}, {std::numeric_limits<std::int64_t>::min(), -1}),
      Tensor::from<std::uint8_t>({1}, {255}),
      Tensor::from<bool>({2}, {false, true}),
      payload,
      odd_bool,
  };
  Graph g("c");
  Builder b(g);
  for (const Tensor& t : values)
    b.output(b.constant(t));
  json j = to_json(g);
  EXPECT_EQ(j["nodes"][0]["attrs"]["value"]["data"][2], "nan");
  EXPECT_EQ(j["nodes"][1]["attrs"]["value"]["data"][0], "-inf");
  EXPECT_EQ(j["nodes"][6]["attrs"]["value"]["data"], json::parse("[false, true]"));
  EXPECT_EQ(j["nodes"][7]["attrs"]["value"]["hex"], "0100c07f");
  EXPECT_EQ(j["nodes"][8]["attrs"]["value"]["hex"], "07");
  Graph back = load_json(save_json(g));
  ASSERT_TRUE(back == g);
  for (std::size_t i = 0; i < values.size(); ++i)
    EXPECT_TRUE(back.node(NodeId(static_cast<std::uint32_t>(i))).attr<ConstantAttrs>().value ==
                values[i])
        << i;
}

TEST(Json, NonFiniteAttributesAreStrings) {
  // No op accepts a non-finite double attribute, but the writer must still express one (it dumps
  // graphs that fail verification too) and the reader must read it back to the op's own check.
  Graph g("g");
  const Shape q({1, 2, 1, 4});
  NodeId x = g.add_unchecked(Node{OpKind::Input, {}, LeafAttrs{"x", q}, q, {}});
  AttentionAttrs a;
  a.scale = -std::numeric_limits<double>::infinity();
  a.softcap = std::numeric_limits<double>::quiet_NaN();
  g.set_outputs({g.add_unchecked(Node{OpKind::Attention, {x, x, x}, a, q, {}})});
  json j = to_json(g);
  EXPECT_EQ(j["nodes"][1]["attrs"]["scale"], "-inf");
  EXPECT_EQ(j["nodes"][1]["attrs"]["softcap"], "nan");
  try {
    graph_from_json(j);
    ADD_FAILURE() << "a non-finite scale loaded";
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(), "nodes[1]: attention (new node %1) on [1, 2, 1, 4] f32, [1, 2, 1, 4] "
                           "f32, [1, 2, 1, 4] f32: attention: scale must be finite");
  }
  j["nodes"][1]["attrs"]["scale"] = "large";
  try {
    graph_from_json(j);
    ADD_FAILURE() << "a bad number loaded";
  } catch (const ParseError& e) {
    EXPECT_STREQ(e.what(), "nodes[1].attrs.scale: expected a number (or \"nan\", \"inf\", "
                           "\"-inf\"), got string");
  }
}

TEST(Json, MissingAttributesTakeTheirDefaults) {
  json j = to_json(testing::sample_graph(OpKind::Reduce));
  j["nodes"][1]["attrs"].erase("keep_dims");
  j["nodes"][1].erase("shape");
  Graph g = graph_from_json(j);
  EXPECT_FALSE(g.node(NodeId(1)).attr<ReduceAttrs>().keep_dims);
  EXPECT_EQ(g.shape(NodeId(1)), Shape({3}));
}

TEST(Json, SubGraphsNestAsGraphObjects) {
  Graph g = testing::sample_graph(OpKind::While);
  json j = to_json(g);
  const json& body = j["nodes"][2]["attrs"]["body"];
  EXPECT_EQ(body["name"], "body");
  EXPECT_FALSE(body.contains("version"));
  EXPECT_TRUE(graph_from_json(j) == g);
  json k = to_json(testing::sample_graph(OpKind::CustomFn));
  k["nodes"][2]["attrs"]["vjp"] = nullptr;
  EXPECT_FALSE(graph_from_json(k).node(NodeId(2)).attr<CustomFnAttrs>().vjp);
}

TEST(Json, SavedTextHasOneNodePerLine) {
  std::string text = save_json(demo_graph());
  EXPECT_EQ(text.substr(0, text.find('\n')),
            "{\"format\": \"rlx.graph\", \"version\": 1, \"name\": \"demo\",");
  EXPECT_NE(
      text.find("\n  {\"attrs\":{\"transpose_a\":false,\"transpose_b\":true},\"inputs\":[0,1],"
                "\"op\":\"matmul\",\"shape\":{\"dims\":[\"batch\",4],\"dtype\":\"f32\"}},\n"),
      std::string::npos)
      << text;
  EXPECT_TRUE(to_json(demo_graph()) == json::parse(text));
}

TEST(Json, NamesThatAreNotUtf8AreRefusedOnSave) {
  Graph g("g");
  Builder b(g);
  b.output(g.add(OpKind::Neg, {b.input("x", Shape({2}))}, NoAttrs{}, "bad \xff byte"));
  try {
    save_json(g);
    ADD_FAILURE() << "saved";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("names must be valid UTF-8"), std::string::npos);
  }
}

// ---- errors name the JSON path ------------------------------------------------------------------

/// The message of the ParseError that loading the demo graph's JSON, edited by \p edit, throws.
std::string error_after(const std::function<void(json&)>& edit) {
  json j = to_json(demo_graph());
  edit(j);
  try {
    graph_from_json(j);
  } catch (const ParseError& e) {
    return e.what();
  }
  return "";
}

TEST(JsonErrors, TypesOfFields) {
  EXPECT_EQ(
      error_after([](json& j) {
        j["nodes"].push_back({{"op", "transpose"}, {"inputs", {4}}, {"attrs", {{"perm", 1}}}});
      }),
      "nodes[5].attrs.perm: expected array of integers, got number");
  EXPECT_EQ(error_after([](json& j) {
              j["nodes"].push_back(
                  {{"op", "transpose"}, {"inputs", {4}}, {"attrs", {{"perm", {1, "0"}}}}});
            }),
            "nodes[5].attrs.perm[1]: expected an integer, got string");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["attrs"]["transpose_b"] = 1; }),
            "nodes[2].attrs.transpose_b: expected true or false, got number");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][0]["attrs"]["name"] = 3; }),
            "nodes[0].attrs.name: expected a string, got number");
  EXPECT_EQ(
      error_after([](json& j) { j["nodes"][0]["attrs"]["shape"]["dims"][0] = 1.5; }),
      "nodes[0].attrs.shape.dims[0]: expected a dim (an integer or a symbol name), got number");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][0]["attrs"]["shape"]["dtype"] = "f31"; }),
            "nodes[0].attrs.shape.dtype: unknown dtype 'f31'");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][0]["attrs"]["shape"] = "[2] f32"; }),
            "nodes[0].attrs.shape: expected a shape object {\"dims\": [...], \"dtype\": ...}, got "
            "string");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][1]["attrs"]["name"] = nullptr; }),
            "nodes[1].attrs.name: expected a string, got null");
  EXPECT_EQ(
      error_after([](json& j) { j["nodes"][2]["attrs"]["transpose_a"] = 18446744073709551615ull; }),
      "nodes[2].attrs.transpose_a: expected true or false, got number");
  EXPECT_EQ(error_after([](json& j) {
              j["nodes"].push_back({{"op", "narrow"},
                                    {"inputs", {4}},
                                    {"attrs", {{"axis", 18446744073709551615ull}}}});
            }),
            "nodes[5].attrs.axis: integer out of range");
}

TEST(JsonErrors, StructureOfTheDocument) {
  EXPECT_EQ(error_after([](json& j) { j.erase("version"); }), "document: missing key 'version'");
  EXPECT_EQ(error_after([](json& j) { j["version"] = 2; }),
            "version: unsupported version 2 (this build reads 1)");
  EXPECT_EQ(error_after([](json& j) { j["format"] = "onnx"; }), "format: expected \"rlx.graph\"");
  EXPECT_EQ(error_after([](json& j) { j["nodes"] = json::object(); }),
            "nodes: expected an array of node objects");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2] = 5; }),
            "nodes[2]: expected a node object, got number");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["opp"] = "x"; }),
            "nodes[2]: unknown key 'opp'");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2].erase("op"); }), "nodes[2]: missing key 'op'");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["op"] = "frob"; }),
            "nodes[2].op: unknown op 'frob'");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["attrs"]["transpose_c"] = true; }),
            "nodes[2].attrs.transpose_c: matmul has no attribute 'transpose_c' (attributes: "
            "transpose_a, transpose_b)");
  EXPECT_EQ(error_after([](json& j) { j.erase("outputs"); }), "document: missing key 'outputs'");
  EXPECT_EQ(error_after([](json& j) { j["outputs"] = json::array(); }),
            "graph: graph @demo: has no outputs");
}

TEST(JsonErrors, EdgesAndTypes) {
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["inputs"][1] = 2; }),
            "nodes[2].inputs[1]: node 2 is not defined before this use (2 nodes precede it)");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["inputs"][1] = -1; }),
            "nodes[2].inputs[1]: node -1 is not defined before this use (2 nodes precede it)");
  EXPECT_EQ(error_after([](json& j) { j["outputs"][0] = 9; }),
            "outputs[0]: node 9 is not defined before this use (5 nodes precede it)");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][4]["shape"]["dtype"] = "f64"; }),
            "nodes[4].shape: declared [batch, 4] f64 but add %4 'out' derives [batch, 4] f32");
  EXPECT_EQ(error_after([](json& j) { j["nodes"][2]["inputs"] = {0}; }),
            "nodes[2]: matmul (new node %2) on [batch, 4] f32: matmul: takes 2 inputs, got 1");
  EXPECT_EQ(error_after([](json& j) {
              j["nodes"][1]["op"] = "input";
              j["nodes"][1]["attrs"]["name"] = "x";
            }),
            "nodes[1].attrs.name: input name 'x' is already defined");
}

TEST(JsonErrors, Constants) {
  auto value = [](json& j) -> json& { return j["nodes"][3]["attrs"]["value"]; };
  EXPECT_EQ(error_after([&](json& j) { value(j)["data"].erase(0); }),
            "nodes[3].attrs.value.data: tensor [4] f32 needs 4 elements, got 3");
  EXPECT_EQ(error_after([&](json& j) { value(j)["data"][1] = "x"; }),
            "nodes[3].attrs.value.data[1]: expected an f32 number");
  EXPECT_EQ(error_after([&](json& j) { value(j)["data"][1] = json::object(); }),
            "nodes[3].attrs.value.data[1]: expected a number, got object");
  EXPECT_EQ(error_after([&](json& j) { value(j)["hex"] = "00"; }),
            "nodes[3].attrs.value: expected exactly one of 'data' and 'hex'");
  EXPECT_EQ(error_after([&](json& j) {
              value(j).erase("data");
              value(j)["hex"] = "0011";
            }),
            "nodes[3].attrs.value.hex: tensor [4] f32 needs 32 hex digits, got 4");
  EXPECT_EQ(error_after([&](json& j) {
              value(j)["shape"]["dims"] = {1000000, 1000000, 1000000};
            }),
            "nodes[3].attrs.value.shape: bad or oversized constant shape [1000000, 1000000, "
            "1000000] f32");
}

TEST(JsonErrors, MalformedText) {
  std::string text = save_json(demo_graph());
  for (std::size_t cut : {std::size_t{0}, std::size_t{1}, text.size() / 2, text.size() - 2}) {
    try {
      load_json(text.substr(0, cut));
      ADD_FAILURE() << "a truncated document at " << cut << " loaded";
    } catch (const ParseError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("JSON syntax: ", 0), 0u) << e.what();
    }
  }
  EXPECT_THROW(load_json("[1, 2]"), ParseError);
  // Deep nesting neither overflows the stack while parsing nor while freeing.
  EXPECT_THROW(load_json(std::string(100000, '[') + std::string(100000, ']')), ParseError);
  std::string deep = R"({"version": 1, "nodes": [{"op": "input", "attrs": {"name": )";
  EXPECT_THROW(load_json(deep + std::string(100000, '[') + std::string(100000, ']') + "}}]}"),
               ParseError);
  EXPECT_THROW(load_json("null"), ParseError);
}

} // namespace
} // namespace rlx::ir
