// import_test.cpp: the importer on hand-made models: error listing, initializers, symbolic dims,
// Shape-driven folding, opset-dependent attributes and If, checked against independently built
// rlx graphs evaluated by the reference interpreter.
#include "onnx_testing.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/onnx/import.hpp"

#include <gtest/gtest.h>

#include <cmath>

namespace rlx::onnx {
namespace {

using ir::DType;
using ir::Tensor;
using testing::attr;
using testing::attr_f;
using testing::ModelBuilder;

Tensor iota(const std::vector<std::int64_t>& sizes, double scale = 0.1, double offset = -0.5) {
  Tensor t(ir::Shape::of(sizes));
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, offset + scale * static_cast<double>(i % 17) - 0.03 * static_cast<double>(i % 5));
  return t;
}

std::vector<Tensor> run(const ImportedModel& m, const TensorMap& inputs) {
  return ir::reference::evaluate(m.graph, inputs, m.params);
}

TEST(OnnxImport, ListsEveryUnsupportedOpAttributeAndDtypeAtOnce) {
  ModelBuilder mb;
  mb.input("x", {2, 3}).input("u", {4}, ::onnx::TensorProto::UINT16);
  mb.node("Det", {"x"}, {"a"}, "first");
  mb.node("Relu", {"a"}, {"b"}); // downstream of a failure: not reported again
  auto& cast = mb.node("Cast", {"x"}, {"c"}, "cast");
  attr(cast, "to", std::int64_t{::onnx::TensorProto::UINT32}); // a dtype rlx does not have
  auto& sm = mb.node("Softmax", {"x"}, {"d"}, "soft");
  attr(sm, "bogus", std::int64_t{3});
  mb.node("FancyOp", {"x"}, {"e"}).set_domain("com.example");
  mb.output("b").output("c").output("d").output("e");
  try {
    import_model(mb.bytes());
    FAIL() << "no error";
  } catch (const ImportError& e) {
    EXPECT_TRUE(e.unsupported());
    ASSERT_EQ(e.problems().size(), 5u) << e.what();
    std::string msg = e.what();
    EXPECT_NE(msg.find("UINT16"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Det node 'first': op Det is not supported"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Cast node 'cast'"), std::string::npos) << msg;
    EXPECT_NE(msg.find("Softmax node 'soft': attribute bogus not supported"), std::string::npos)
        << msg;
    EXPECT_NE(msg.find("com.example::FancyOp"), std::string::npos) << msg;
    EXPECT_EQ(msg.find('\n'), std::string::npos);
  }
}

TEST(OnnxImport, InitializersBecomeParamsOrConstants) {
  ModelBuilder mb;
  mb.input("x", {2, 8});
  Tensor w = iota({8, 8}), bias = iota({8}, 0.01);
  mb.initializer("w", w).initializer("b", bias);
  mb.node("MatMul", {"x", "w"}, {"y"});
  mb.node("Add", {"y", "b"}, {"z"});
  mb.output("z");
  ImportOptions opts;
  opts.max_constant_elements = 8;
  auto m = import_model(mb.bytes(), opts);
  ASSERT_EQ(m.graph.params().size(), 1u);
  EXPECT_EQ(m.graph.node(m.graph.params()[0]).attr<ir::LeafAttrs>().name, "w");
  ASSERT_TRUE(m.params.count("w"));
  EXPECT_TRUE(m.params.at("w").identical(w));
  EXPECT_EQ(m.inputs, std::vector<std::string>{"x"});
  EXPECT_EQ(m.outputs, std::vector<std::string>{"z"});
  EXPECT_EQ(m.graph.node(m.graph.outputs()[0]).name, "z"); // nodes carry the ONNX value names

  ir::Graph g;
  ir::Builder b(g);
  auto x = b.input("x", ir::Shape::of({2, 8}));
  b.output(b.add(b.matmul(x, b.constant(w)), b.constant(bias)));
  Tensor xv = iota({2, 8}, 0.2);
  auto want = ir::reference::evaluate(g, {{"x", xv}});
  auto got = run(m, {{"x", xv}});
  EXPECT_TRUE(got[0].identical(want[0]));
}

TEST(OnnxImport, DynamicDimsBecomeSymbolsOrBindings) {
  ModelBuilder mb;
  mb.input("x", {std::string("batch"), std::string(), 4});
  mb.node("Relu", {"x"}, {"y"});
  mb.output("y");
  // An unnamed dynamic dim is named after its input and axis.
  mb.proto()
      .mutable_graph()
      ->mutable_input(0)
      ->mutable_type()
      ->mutable_tensor_type()
      ->mutable_shape()
      ->mutable_dim(1)
      ->clear_dim_param();
  auto m = import_model(mb.bytes());
  auto in = m.graph.node(m.graph.inputs()[0]).shape;
  EXPECT_EQ(in.dims[0], ir::Dim::sym("batch"));
  EXPECT_EQ(in.dims[1], ir::Dim::sym("x_1"));
  ImportOptions opts;
  opts.bindings = {{"batch", 3}, {"x_1", 5}};
  auto bound = import_model(mb.bytes(), opts);
  EXPECT_EQ(bound.graph.node(bound.graph.inputs()[0]).shape, ir::Shape::of({3, 5, 4}));
}

TEST(OnnxImport, ShapeDrivenSubgraphsFold) {
  // The exporter spelling of x.view(x.size(0), -1).
  ModelBuilder mb;
  mb.input("x", {2, 3, 4});
  mb.initializer("zero", Tensor::scalar<std::int64_t>(0));
  mb.initializer("minus1", Tensor::from<std::int64_t>({1}, {-1}));
  mb.node("Shape", {"x"}, {"s"});
  attr(mb.node("Gather", {"s", "zero"}, {"n"}), "axis", std::int64_t{0});
  mb.initializer("ax0", Tensor::from<std::int64_t>({1}, {0}));
  mb.node("Unsqueeze", {"n", "ax0"}, {"n1"});
  attr(mb.node("Concat", {"n1", "minus1"}, {"shape"}), "axis", std::int64_t{0});
  mb.node("Reshape", {"x", "shape"}, {"y"});
  mb.output("y");
  auto m = import_model(mb.bytes());
  // Only the input and the reshape survive: the shape computation folded away.
  ASSERT_EQ(m.graph.size(), 2u) << m.graph.size();
  EXPECT_EQ(m.graph.shape(m.graph.outputs()[0]), ir::Shape::of({2, 12}));
  Tensor xv = iota({2, 3, 4});
  EXPECT_TRUE(run(m, {{"x", xv}})[0].identical(xv.reshaped({2, 12})));
}

TEST(OnnxImport, ShapeOperandsFromInputsAreNamed) {
  ModelBuilder mb;
  mb.input("x", {2, 6}).input("shape", {2}, ::onnx::TensorProto::INT64);
  mb.node("Reshape", {"x", "shape"}, {"y"});
  mb.output("y");
  try {
    import_model(mb.bytes());
    FAIL() << "no error";
  } catch (const ImportError& e) {
    EXPECT_EQ(e.needed_inputs(), std::vector<std::string>{"shape"});
  }
  ImportOptions opts;
  opts.input_values["shape"] = Tensor::from<std::int64_t>({2}, {3, 4});
  auto m = import_model(mb.bytes(), opts);
  EXPECT_EQ(m.inputs, (std::vector<std::string>{"x", "shape"}));
  EXPECT_EQ(m.graph.shape(m.graph.outputs()[0]), ir::Shape::of({3, 4}));
}

TEST(OnnxImport, SoftmaxFollowsTheOpsetsAxisSemantics) {
  for (std::int64_t opset : {11, 13}) {
    ModelBuilder mb(opset);
    mb.input("x", {2, 3, 4});
    attr(mb.node("Softmax", {"x"}, {"y"}), "axis", std::int64_t{1});
    mb.output("y");
    auto m = import_model(mb.bytes());
    ir::Graph g;
    ir::Builder b(g);
    auto x = b.input("x", ir::Shape::of({2, 3, 4}));
    if (opset < 13) // coerced to [2, 12], softmax over the 12
      b.output(b.reshape(b.softmax(b.reshape(x, {2, 12}), 1), {2, 3, 4}));
    else
      b.output(b.softmax(x, 1));
    Tensor xv = iota({2, 3, 4});
    EXPECT_LT(ir::max_abs_diff(run(m, {{"x", xv}})[0], ir::reference::evaluate(g, {{"x", xv}})[0]),
              1e-7)
        << "opset " << opset;
  }
}

TEST(OnnxImport, LayerNormalizationAndItsPrimitiveSpellingAgree) {
  Tensor gamma = iota({6}, 0.05, 1.0), beta = iota({6}, 0.02);
  ModelBuilder ln;
  ln.input("x", {2, 6});
  ln.initializer("g", gamma).initializer("b", beta);
  attr_f(ln.node("LayerNormalization", {"x", "g", "b"}, {"y"}), "epsilon", 1e-5f);
  ln.output("y");
  // The primitive spelling PyTorch exports before opset 17.
  ModelBuilder pr(13);
  pr.input("x", {2, 6});
  pr.initializer("g", gamma).initializer("b", beta);
  pr.initializer("eps", Tensor::scalar<float>(1e-5f)).initializer("two", Tensor::scalar<float>(2));
  attr(pr.node("ReduceMean", {"x"}, {"m"}), "axes", std::vector<std::int64_t>{-1});
  pr.node("Sub", {"x", "m"}, {"c"});
  pr.node("Pow", {"c", "two"}, {"sq"});
  attr(pr.node("ReduceMean", {"sq"}, {"v"}), "axes", std::vector<std::int64_t>{-1});
  pr.node("Add", {"v", "eps"}, {"ve"});
  pr.node("Sqrt", {"ve"}, {"sd"});
  pr.node("Div", {"c", "sd"}, {"n"});
  pr.node("Mul", {"n", "g"}, {"ng"});
  pr.node("Add", {"ng", "b"}, {"y"});
  pr.output("y");
  Tensor xv = iota({2, 6}, 0.3);
  auto a = run(import_model(ln.bytes()), {{"x", xv}})[0];
  auto p = run(import_model(pr.bytes()), {{"x", xv}})[0];
  EXPECT_LT(ir::max_abs_diff(a, p), 1e-5);
  ir::Graph g;
  ir::Builder b(g);
  b.output(b.layer_norm(b.input("x", ir::Shape::of({2, 6})), b.constant(gamma), b.constant(beta)));
  EXPECT_TRUE(a.identical(ir::reference::evaluate(g, {{"x", xv}})[0]));
}

TEST(OnnxImport, IfCapturesOuterValues) {
  ModelBuilder mb;
  mb.input("c", {}, ::onnx::TensorProto::BOOL).input("x", {3});
  auto& n = mb.node("If", {"c"}, {"y"});
  auto branch = [&](const char* name, const char* op) {
    auto* a = n.add_attribute();
    a->set_name(name);
    a->set_type(::onnx::AttributeProto::GRAPH);
    auto* g = a->mutable_g();
    g->set_name(name);
    auto* bn = g->add_node();
    bn->set_op_type(op);
    bn->add_input("x");
    bn->add_output(std::string(name) + "_out");
    g->add_output()->set_name(std::string(name) + "_out");
  };
  branch("then_branch", "Relu");
  branch("else_branch", "Neg");
  mb.output("y");
  auto m = import_model(mb.bytes());
  Tensor xv = Tensor::from<float>({3}, {-1, 2, -3});
  auto yes = run(m, {{"c", Tensor::scalar<bool>(true)}, {"x", xv}})[0];
  auto no = run(m, {{"c", Tensor::scalar<bool>(false)}, {"x", xv}})[0];
  EXPECT_TRUE(yes.identical(Tensor::from<float>({3}, {0, 2, 0})));
  EXPECT_TRUE(no.identical(Tensor::from<float>({3}, {1, -2, 3})));
}

TEST(OnnxImport, EinsumMapsToDotGeneral) {
  ModelBuilder mb;
  mb.input("a", {2, 3, 4}).input("b", {2, 5, 4});
  auto& n = mb.node("Einsum", {"a", "b"}, {"y"});
  auto* at = n.add_attribute();
  at->set_name("equation");
  at->set_type(::onnx::AttributeProto::STRING);
  at->set_s("bij,bkj->bik");
  mb.output("y");
  auto m = import_model(mb.bytes());
  bool has_dot = false;
  for (const auto& nd : m.graph.nodes())
    has_dot |= nd.op == ir::OpKind::DotGeneral;
  EXPECT_TRUE(has_dot);
  ir::Graph g;
  ir::Builder b(g);
  b.output(b.matmul(b.input("a", ir::Shape::of({2, 3, 4})), b.input("b", ir::Shape::of({2, 5, 4})),
                    false, true));
  Tensor av = iota({2, 3, 4}), bv = iota({2, 5, 4}, 0.07);
  EXPECT_LT(ir::max_abs_diff(run(m, {{"a", av}, {"b", bv}})[0],
                             ir::reference::evaluate(g, {{"a", av}, {"b", bv}})[0]),
            1e-6);
}

TEST(OnnxImport, MalformedModelsGiveOneClearError) {
  EXPECT_THROW(import_model("definitely not protobuf \xff\xff\xff"), ImportError);
  {
    ModelBuilder mb; // a cycle: a reads b, b reads a
    mb.input("x", {2});
    mb.node("Add", {"x", "b"}, {"a"});
    mb.node("Relu", {"a"}, {"b"});
    mb.output("b");
    try {
      import_model(mb.bytes());
      FAIL();
    } catch (const ImportError& e) {
      EXPECT_NE(std::string(e.what()).find("reads undefined value 'b'"), std::string::npos);
      EXPECT_FALSE(e.unsupported());
    }
  }
  {
    ModelBuilder mb; // a huge declared dim
    mb.input("x", {std::int64_t{1} << 50, 4});
    mb.node("Relu", {"x"}, {"y"});
    mb.output("y");
    EXPECT_THROW(import_model(mb.bytes()), ImportError);
  }
  {
    ModelBuilder mb; // an attribute of the wrong type
    mb.input("x", {2, 3});
    auto& n = mb.node("Transpose", {"x"}, {"y"});
    testing::attr_f(n, "perm", 1.0f);
    mb.output("y");
    EXPECT_THROW(import_model(mb.bytes()), ImportError);
  }
}

TEST(OnnxImport, TopKReadsItsKAndRefusesARuntimeK) {
  {
    // k from an initializer, smallest first along axis 0; both outputs read.
    ModelBuilder mb;
    mb.input("x", {4, 2}).initializer("k", Tensor::from<std::int64_t>({1}, {3}));
    auto& n = mb.node("TopK", {"x", "k"}, {"v", "i"});
    testing::attr(n, "axis", 0);
    testing::attr(n, "largest", 0);
    mb.output("v").output("i");
    auto m = import_model(mb.bytes());
    auto out = run(m, {{"x", Tensor::from<float>({4, 2}, {5, 1, -2, 1, 7, 0, -2, 3})}});
    EXPECT_TRUE(out[0].identical(Tensor::from<float>({3, 2}, {-2, 0, -2, 1, 5, 1})));
    EXPECT_TRUE(out[1].identical(Tensor::from<std::int64_t>({3, 2}, {1, 2, 3, 0, 0, 1})));
  }
  {
    // k as a graph input: the result's shape would depend on a runtime value.
    ModelBuilder mb;
    mb.input("x", {4, 2}).input("k", {1}, ::onnx::TensorProto::INT64);
    mb.node("TopK", {"x", "k"}, {"v", "i"}, "top");
    mb.output("v");
    try {
      import_model(mb.bytes());
      FAIL();
    } catch (const ImportError& e) {
      EXPECT_NE(std::string(e.what()).find("TopK node 'top'"), std::string::npos) << e.what();
      EXPECT_TRUE(e.unsupported()) << e.what();
    }
  }
}

} // namespace
} // namespace rlx::onnx
