// roundtrip_test.cpp: rlx graph -> ONNX -> rlx graph keeps the meaning (the reference interpreter
// gives the same outputs on both) for every op the exporter spells; ops without an ONNX spelling
// are listed in one ExportError.
#include "rlx/ir/builder.hpp"
#include "rlx/ir/reference.hpp"
#include "rlx/onnx/export.hpp"
#include "rlx/onnx/import.hpp"

#include <gtest/gtest.h>

namespace rlx::onnx {
namespace {

using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::Shape;
using ir::Tensor;

Tensor values(const Shape& s, double scale = 0.1) {
  Tensor t(s);
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_f64(i, scale * static_cast<double>((i * 7) % 23) - 1.0);
  return t;
}

/// Exports \p g with \p params, imports it back, and compares both on \p inputs.
void round_trip(const Graph& g, const TensorMap& inputs, const TensorMap& params = {},
                double tol = 1e-6) {
  std::string bytes = export_model(g, params);
  ImportOptions opts;
  opts.max_constant_elements = 0; // keep the initializers as Params
  auto m = import_model(bytes, opts);
  auto want = ir::reference::evaluate(g, inputs, params);
  auto got = ir::reference::evaluate(m.graph, inputs, m.params);
  ASSERT_EQ(want.size(), got.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(want[i].shape(), got[i].shape()) << "output " << i;
    EXPECT_LE(ir::max_abs_diff(want[i], got[i]), tol) << "output " << i;
  }
}

TEST(OnnxRoundTrip, TransformerPrimitives) {
  Graph g;
  Builder b(g);
  auto x = b.input("x", Shape::of({2, 4, 8}));
  auto w = b.param("w", Shape::of({16, 8}));
  auto bias = b.param("b", Shape::of({16}));
  auto gamma = b.param("gamma", Shape::of({16}));
  auto h = b.add(b.matmul(x, w, false, true), bias);
  auto act = b.add(b.gelu(h), b.add(b.silu(h), b.gelu_tanh(h)));
  auto ln = b.layer_norm(act, gamma, bias, 1e-5);
  auto rms = b.rms_norm(b.rsqrt(b.add(b.mul(ln, ln), b.scalar(1.0))), gamma, 1e-6);
  auto sm = b.softmax(b.reshape(rms, {2, 4, 4, 4}), -1);
  auto lsm = b.log_softmax(b.transpose(sm, {0, 2, 1, 3}), 1);
  b.output(lsm);
  b.output(b.reduce(ir::ReduceOp::mean, b.exp(lsm), {1, 3}, true));
  b.output(b.reduce(ir::ReduceOp::sum, h, {}, false));
  round_trip(g, {{"x", values(Shape::of({2, 4, 8}))}},
             {{"w", values(Shape::of({16, 8}), 0.01)},
              {"b", values(Shape::of({16}), 0.02)},
              {"gamma", values(Shape::of({16}), 0.05)}},
             1e-5);
}

TEST(OnnxRoundTrip, MovementCompareAndIndexing) {
  Graph g;
  Builder b(g);
  auto x = b.input("x", Shape::of({3, 5}));
  auto idx = b.input("idx", Shape::of({4}, DType::i64));
  auto n = b.narrow(x, 1, 1, 3);
  auto c = b.concat({n, x}, 1);
  auto e = b.expand(b.reshape(b.reduce(ir::ReduceOp::max, x, {1}, false), {3, 1}), {2, 3, 8});
  auto sel = b.where(b.compare(ir::CmpOp::ne, e, c), b.maximum(e, c), b.minimum(e, c));
  b.output(sel);
  b.output(b.gather(x, idx, 1));
  b.output(b.cast(b.argmax(x, 1, true), DType::f32));
  b.output(b.pow(b.abs(x), b.scalar(1.5)));
  b.output(b.dot_general(x, b.transpose(x, {1, 0}), {{}, {}, {1}, {0}}));
  round_trip(g, {{"x", values(Shape::of({3, 5}))},
                 {"idx", Tensor::from<std::int64_t>({4}, {0, 4, 2, 2})}});
}

TEST(OnnxRoundTrip, TrigonometricAndHyperbolic) {
  // values() spans [-1, 1.2]: asin / acos / atanh read x / 2, acosh reads 2 + x.
  Graph g;
  Builder b(g);
  auto x = b.input("x", Shape::of({3, 7}));
  auto half = b.mul(x, b.scalar(0.5));
  b.output(b.add(b.sinh(x), b.cosh(x)));
  b.output(b.add(b.asin(half), b.acos(half)));
  b.output(b.add(b.atan(x), b.asinh(x)));
  b.output(b.add(b.acosh(b.add(x, b.scalar(2.0))), b.atanh(half)));
  round_trip(g, {{"x", values(Shape::of({3, 7}))}});
}

TEST(OnnxRoundTrip, ConvAndPooling) {
  Graph g;
  Builder b(g);
  auto x = b.input("x", Shape::of({1, 2, 7, 7}));
  auto w = b.param("w", Shape::of({4, 1, 3, 3}));
  ir::Conv2dAttrs ca;
  ca.stride = {2, 1};
  ca.padding = {1, 1};
  ca.groups = 2;
  auto y = b.relu(b.conv2d(x, w, {}, ca));
  ir::Pool2dAttrs pa;
  pa.kind = ir::PoolKind::avg;
  pa.kernel = {2, 3};
  pa.stride = {1, 2};
  pa.padding = {1, 1};
  b.output(b.pool2d(y, pa));
  pa.kind = ir::PoolKind::max;
  b.output(b.pool2d(y, pa));
  round_trip(g, {{"x", values(Shape::of({1, 2, 7, 7}))}},
             {{"w", values(Shape::of({4, 1, 3, 3}), 0.03)}}, 1e-5);
}

TEST(OnnxRoundTrip, SymbolicDimsStaySymbolic) {
  Graph g;
  Builder b(g);
  auto x = b.input("x", Shape({ir::Dim::sym("batch"), ir::Dim(6)}, DType::f32));
  b.output(b.reshape(b.tanh(x), {ir::Dim::sym("batch"), 2, 3}));
  auto m = import_model(export_model(g));
  EXPECT_EQ(m.graph.shape(m.graph.inputs()[0]).dims[0], ir::Dim::sym("batch"));
  EXPECT_EQ(m.graph.shape(m.graph.outputs()[0]),
            Shape({ir::Dim::sym("batch"), ir::Dim(2), ir::Dim(3)}, DType::f32));
  round_trip(g, {{"x", values(Shape::of({5, 6}))}});
}

TEST(OnnxRoundTrip, OpsWithoutAnOnnxSpellingAreListed) {
  Graph g;
  Builder b(g);
  auto q = b.input("q", Shape::of({1, 4, 2, 8}));
  ir::AttentionAttrs aa;
  aa.num_heads = 2;
  aa.num_kv_heads = 2;
  auto a = b.attention(q, q, q, aa);
  ir::RopeAttrs ra;
  b.output(b.rope(a, ra));
  try {
    export_model(g);
    FAIL() << "no error";
  } catch (const ExportError& e) {
    std::string msg = e.what();
    EXPECT_NE(msg.find("attention"), std::string::npos) << msg;
    EXPECT_NE(msg.find("rope"), std::string::npos) << msg;
  }
  Graph p;
  Builder pb(p);
  pb.output(pb.relu(pb.param("w", Shape::of({2}))));
  EXPECT_THROW(export_model(p), ExportError); // no value for the param
}

} // namespace
} // namespace rlx::onnx
