// builder_errors_test.cpp: every builder rejects malformed input with a clear ShapeError, one test
// per class of error (rank, dtype, axis, perm, attribute values, arity, custom ops, sub-graphs...).
#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "testing/op_samples.hpp"

#include <gtest/gtest.h>

#include <functional>
#include <limits>

namespace rlx::ir {
namespace {

constexpr DType f32 = DType::f32;

/// Builds into a fresh graph with inputs x [2, 3] f32, v [3] f32, i [2] i64, m [2, 3, 4] f32;
/// \returns the ShapeError message the \p build step throws ("" when it does not throw).
std::string
error_of(const std::function<void(Builder&, NodeId x, NodeId v, NodeId i, NodeId m)>& build) {
  Graph g("g");
  Builder b(g);
  NodeId x = b.input("x", Shape({2, 3}));
  NodeId v = b.input("v", Shape({3}));
  NodeId i = b.input("i", Shape({2}, DType::i64));
  NodeId m = b.input("m", Shape({2, 3, 4}));
  try {
    build(b, x, v, i, m);
  } catch (const ShapeError& e) {
    return e.what();
  }
  return "";
}

/// True when \p msg contains \p part; gtest prints both when it does not.
::testing::AssertionResult mentions(const std::string& msg, const std::string& part) {
  if (msg.find(part) != std::string::npos)
    return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << "message \"" << msg << "\" lacks \"" << part << "\"";
}

using B = Builder&;

TEST(BuilderErrors, WrongRank) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId v, NodeId, NodeId) { b.matmul(v, v); }),
                       "matmul (new node %4) on [3] f32, [3] f32: matmul operands need rank >= 2 "
                       "(reshape vectors), got [3] f32 and [3] f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.conv2d(x, x, NodeId(), Conv2dAttrs{});
                       }),
                       "conv2d input [N, C, H, W] must have rank 4, got [2, 3] f32"));
  EXPECT_TRUE(mentions(
      error_of([](B b, NodeId, NodeId v, NodeId i, NodeId) { b.softmax_cross_entropy(v, i); }),
      "softmax_cross_entropy logits must have rank 2, got [3] f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.attention(x, x, x, AttentionAttrs{});
                       }),
                       "attention query must be 4-D ([B, S, H, D]), got [2, 3] f32"));
  EXPECT_TRUE(mentions(
      error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.layer_norm(x, x, NodeId(), 1e-5); }),
      "layer_norm gamma must be [3] f32, got [2, 3] f32"));
}

TEST(BuilderErrors, DtypeMismatch) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId v, NodeId i, NodeId) { b.add(v, i); }),
                       "binary op: operand types differ (f32 vs i64); insert a cast"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.where(x, x, x); }),
                       "where: condition must be bool, got f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId v, NodeId, NodeId) { b.gather(x, v); }),
                       "gather indices must be an integer type, got f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId i, NodeId) { b.exp(i); }),
                       "operand must be a float type, got i64"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.dequantize(x, QuantAttrs{std::nullopt, {1.0}, {0}});
                       }),
                       "dequantize input must be i8, got f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         NodeId flag = b.compare(CmpOp::gt, x, x);
                         b.relu(flag);
                       }),
                       "operand must be numeric, got bool"));
}

TEST(BuilderErrors, IncompatibleDims) {
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId x, NodeId, NodeId i, NodeId) { b.add(x, b.cast(i, f32)); }),
               "[2, 3] f32, [2] f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.matmul(x, x); }),
                       "matmul contraction mismatch: [2, 3] f32 x [2, 3] f32 (K 3 vs 2)"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.reshape(x, {4, 2});
                       }),
                       "reshape [2, 3] f32 to [4, 2]: element counts differ"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.expand(x, {4, 3, 3});
                       }),
                       "expand: [2, 3] f32 does not broadcast to [4, 3, 3] f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId v, NodeId, NodeId) {
                         b.concat({x, v}, 0);
                       }),
                       "concat: operand 1 has rank 1, expected 2"));
}

TEST(BuilderErrors, BadAxis) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.softmax(x, 2); }),
                       "softmax"));
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.softmax(x, 2); }), "axis 2"));
  EXPECT_TRUE(mentions(
      error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.narrow(x, -3, 0, 1); }), "axis -3"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.sum(x, {1, -1});
                       }),
                       "reduce: axis -1 listed twice"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.dot_general(x, x, DotGeneralAttrs{{}, {}, {2}, {0}});
                       }),
                       "dot_general: bad or repeated lhs dim 2"));
}

TEST(BuilderErrors, BadPerm) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId m) {
                         b.transpose(m, {0, 0, 1});
                       }),
                       "transpose: perm is not a permutation of 0..2"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId m) {
                         b.transpose(m, {1, 0});
                       }),
                       "transpose: perm has 2 entries for rank 3"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId m) {
                         b.transpose(m, {0, 1, 3});
                       }),
                       "transpose: perm is not a permutation of 0..2"));
}

TEST(BuilderErrors, BadAttributeValues) {
  EXPECT_TRUE(mentions(
      error_of([](B b, NodeId x, NodeId v, NodeId, NodeId) { b.layer_norm(x, v, NodeId(), 0.0); }),
      "layer_norm: eps must be > 0"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId v, NodeId, NodeId) {
                         b.rms_norm(x, v, std::numeric_limits<double>::quiet_NaN());
                       }),
                       "rms_norm: eps must be > 0"));
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.narrow(x, 1, 2, 2); }),
               "narrow: start 2 length 2 exceeds dim 3 of [2, 3] f32"));
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.narrow(x, 1, 0, 0); }),
               "narrow: start must be >= 0 and length >= 1"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.reshape(x, {-1, -1});
                       }),
                       "reshape: at most one -1 dim allowed"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.quantize(x, QuantAttrs{std::nullopt, {}, {}});
                       }),
                       "quantize: scales are required"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.quantize(x, QuantAttrs{std::nullopt, {-0.5}, {0}});
                       }),
                       "quantize: scales must be > 0"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.quantize(x, QuantAttrs{std::nullopt, {0.5}, {300}});
                       }),
                       "quantize: zero points must fit in i8"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.quantize(x, QuantAttrs{1, {0.5, 0.5}, {0, 0}});
                       }),
                       "quantize: per-channel needs one scale per element of dim 3"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId q = b.input("q", Shape({1, 2, 4, 8}));
                         AttentionAttrs a;
                         a.num_heads = 4;
                         a.num_kv_heads = 3;
                         b.attention(q, q, q, a);
                       }),
                       "attention: num_heads (4) must be a positive multiple of num_kv_heads (3)"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId q = b.input("q", Shape({1, 2, 1, 8}));
                         RopeAttrs r;
                         r.n_rot = 3;
                         b.rope(q, r);
                       }),
                       "rope: n_rot must be even and <= head_dim 8, got 3"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId img = b.input("img", Shape({1, 1, 4, 4}));
                         b.pool2d(img, Pool2dAttrs{PoolKind::max, {2, 2}, {0, 1}, {0, 0}});
                       }),
                       "pool2d stride must be two values >= 1"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId img = b.input("img", Shape({1, 4, 4, 4}));
                         NodeId w = b.param("w", Shape({4, 2, 1, 1}));
                         b.conv2d(img, w, NodeId(), Conv2dAttrs{{1, 1}, {0, 0}, {1, 1}, 3});
                       }),
                       "conv2d: groups 3 must divide C 4 and O 4"));
}

TEST(BuilderErrors, WrongArity) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.op(OpKind::Relu, {x, x});
                       }),
                       "relu: takes 1 inputs, got 2"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId q = b.input("q", Shape({1, 2, 1, 8}));
                         b.attention(q, q, q, AttentionAttrs{}, q);
                       }),
                       "attention: mask kind none takes no mask input"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.bert_layer({x, x, x}, BertLayerAttrs{});
                       }),
                       "bert_layer: takes 17 to 18 inputs, got 3"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.concat({}, 0);
                         (void)x;
                       }),
                       "concat: takes at least 1 inputs, got 0"));
}

TEST(BuilderErrors, WrongAttributeStruct) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.op(OpKind::Relu, {x}, MatMulAttrs{});
                       }),
                       "relu: wrong attribute type for this op"));
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.unary(OpKind::Add, x); }),
               "add is not a unary elementwise op"));
}

TEST(BuilderErrors, InvalidNodeIds) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) { b.relu(NodeId(99)); }),
                       "node id %99 does not exist (graph has 4 nodes)"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) { b.relu(NodeId()); }),
                       "node id %<invalid> does not exist"));
}

TEST(BuilderErrors, Leaves) {
  EXPECT_EQ(error_of([](B b, NodeId, NodeId, NodeId, NodeId) { b.input("x", Shape({1})); }),
            "input 'x' is already defined");
  EXPECT_EQ(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
              b.param("w", Shape({1}));
              b.param("w", Shape({2}));
            }),
            "param 'w' is already defined");
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) { b.input("", Shape({1})); }),
               "leaf nodes need a non-empty name"));
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) { b.input("neg", Shape({-2})); }),
               "negative dimension in [-2] f32"));
}

TEST(BuilderErrors, SymbolicWhereStaticIsRequired) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId s = b.input("s", Shape({Dim::sym("n"), 4}));
                         b.reshape(s, {-1});
                       }),
                       "cannot infer -1 across symbolic dims; bind them first"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId s = b.input("s", Shape({1, Dim::sym("c"), 4, 4}));
                         NodeId w = b.param("w", Shape({1, 1, 1, 1}));
                         b.conv2d(s, w, NodeId(), Conv2dAttrs{});
                       }),
                       "conv2d: C, H, W must be static"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId) {
                         NodeId s = b.input("s", Shape({Dim::sym("n")}));
                         b.concat({s, s}, 0);
                       }),
                       "concat: the concatenated dim must be static, got n"));
}

TEST(BuilderErrors, UnknownCustomOp) {
  EXPECT_TRUE(
      mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) { b.custom("no.such.op", {x}); }),
               "custom op 'no.such.op' is not registered"));
  testing::register_sample_custom_op();
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.custom(std::string(testing::kSampleCustomOp), {x, x});
                       }),
                       "custom op 'testing.scale': wrong number of inputs (2)"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.custom(std::string(testing::kSampleCustomOp), {x}, "two");
                       }),
                       "testing.scale: params must be a number, got 'two'"));
}

/// A one-output graph of inputs \p types computing the first input (or \p fn of the inputs).
Graph body(std::vector<Shape> types, int outputs = 1, bool with_param = false) {
  Graph g("body");
  Builder b(g);
  std::vector<NodeId> ins;
  for (std::size_t k = 0; k < types.size(); ++k)
    ins.push_back(b.input("in" + std::to_string(k), types[k]));
  if (with_param)
    b.param("w", types[0]);
  for (int o = 0; o < outputs; ++o)
    b.output(ins.at(static_cast<std::size_t>(o) % ins.size()));
  return g;
}

TEST(BuilderErrors, SubGraphSignatures) {
  const Shape s23({2, 3});
  const Shape pred = Shape::scalar(DType::boolean);
  auto with_pred = [&](auto&& fn) {
    return error_of([&](B b, NodeId x, NodeId v, NodeId i, NodeId m) {
      fn(b, b.input("p", pred), x, v, i, m);
    });
  };
  EXPECT_TRUE(mentions(with_pred([&](B b, NodeId p, NodeId x, NodeId, NodeId, NodeId) {
                         b.if_(p, {x}, body({s23, s23}), body({s23}));
                       }),
                       "if then-branch takes 2 inputs but receives 1"));
  EXPECT_TRUE(mentions(with_pred([&](B b, NodeId p, NodeId x, NodeId, NodeId, NodeId) {
                         b.if_(p, {x}, body({Shape({2, 3}, DType::f64)}), body({s23}));
                       }),
                       "if then-branch input 0 is [2, 3] f64 but receives [2, 3] f32"));
  EXPECT_TRUE(mentions(with_pred([&](B b, NodeId p, NodeId x, NodeId v, NodeId, NodeId) {
                         b.if_(p, {x, v}, body({s23, Shape({3})}), body({Shape({3}), s23}));
                       }),
                       "if else-branch input 0 is [3] f32 but receives [2, 3] f32"));
  EXPECT_TRUE(mentions(with_pred([&](B b, NodeId p, NodeId x, NodeId, NodeId, NodeId) {
                         b.if_(p, {x}, body({s23}, 2), body({s23}));
                       }),
                       "if: each branch must have exactly one output"));
  EXPECT_TRUE(mentions(with_pred([&](B b, NodeId p, NodeId x, NodeId, NodeId, NodeId) {
                         b.if_(p, {x}, body({s23}, 1, true), body({s23}));
                       }),
                       "if then-branch may not hold params; pass them in as inputs"));
  EXPECT_TRUE(mentions(error_of([&](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.if_(x, {x}, body({s23}), body({s23}));
                       }),
                       "if: predicate must be a bool scalar, got [2, 3] f32"));
  EXPECT_TRUE(mentions(error_of([&](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.while_({x}, body({s23}), body({s23}), 4);
                       }),
                       "while: cond must return one bool scalar"));
  EXPECT_TRUE(mentions(error_of([&](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.while_({x}, body({s23}), body({s23}), 0);
                       }),
                       "while: max_iterations must be >= 1"));
  EXPECT_TRUE(mentions(error_of([&](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.custom_fn({x}, body({s23}), body({s23, s23}, 2));
                       }),
                       "custom_fn: vjp must return one gradient per input"));
  EXPECT_TRUE(mentions(error_of([&](B b, NodeId x, NodeId, NodeId, NodeId) {
                         b.custom_fn({x}, body({s23, s23}));
                       }),
                       "custom_fn body takes 2 inputs but receives 1"));
}

TEST(BuilderErrors, HirBlockShapes) {
  EXPECT_TRUE(mentions(error_of([](B b, NodeId x, NodeId v, NodeId, NodeId) { b.linear(x, v); }),
                       "linear weight must be a 2-D [out, in] f32 weight, got [3] f32"));
  EXPECT_TRUE(mentions(error_of([](B b, NodeId, NodeId, NodeId, NodeId m) {
                         NodeId w = b.param("w", Shape({4, 4}));
                         AttentionBlockAttrs a;
                         a.num_heads = 3;
                         b.attention_block({m, w, w, w, w}, a);
                       }),
                       "attention_block: wq rows / num_heads: 4 is not divisible by 3"));
}

} // namespace
} // namespace rlx::ir
