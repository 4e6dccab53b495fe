// op_samples.cpp: one sample graph per op of the table, and use-aware random inputs.
#include "testing/op_samples.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/custom_op.hpp"
#include "rlx/ir/error.hpp"

#include <algorithm>
#include <charconv>
#include <limits>
#include <memory>
#include <random>

namespace rlx::ir::testing {

namespace {

constexpr DType f32 = DType::f32;

Dim sym(const char* s) {
  return Dim::sym(s);
}

/// Parses the sample custom op's params: a decimal scale, empty meaning 1.
double custom_scale(const CustomAttrs& a) {
  if (a.params.empty())
    return 1.0;
  double v = 0;
  auto r = std::from_chars(a.params.data(), a.params.data() + a.params.size(), v);
  if (r.ec != std::errc() || r.ptr != a.params.data() + a.params.size())
    throw ShapeError(std::string(kSampleCustomOp) + ": params must be a number, got '" + a.params +
                     "'");
  return v;
}

// ---- samples, grouped like ops.def -------------------------------------------------------------

Graph leaf_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  if (op == OpKind::Input) {
    b.output(b.input("x", Shape({sym("batch"), 3}, f32)));
    b.output(b.input("ids", Shape({sym("batch")}, DType::i64)));
  } else if (op == OpKind::Param) {
    b.output(b.param("w", Shape({3, 2}, f32)));
    b.output(b.param("table", Shape({4}, DType::i32)));
  } else {
    b.output(b.constant(Tensor::from<float>({2, 3}, {1.5f, -0.0f, 1e-30f, 3.4e38f, -2.0f, 0.1f}),
                        "c_f32"));
    b.output(b.constant(Tensor::from<double>({2}, {0.1, -1e300}), "c_f64"));
    b.output(b.constant(
        Tensor::from<f16_t>({3}, {float_to_f16(1.0f), float_to_f16(-0.5f), float_to_f16(65504.0f)}),
        "c_f16"));
    b.output(b.constant(Tensor::from<bf16_t>({2}, {float_to_bf16(1.0f), float_to_bf16(-3.5f)}),
                        "c_bf16"));
    b.output(b.constant(Tensor::from<std::int8_t>({3}, {-128, 0, 127}), "c_i8"));
    b.output(b.constant(Tensor::from<std::int32_t>({2}, {-7, 2147483647}), "c_i32"));
    b.output(b.constant(Tensor::from<std::int64_t>({2}, {-9007199254740993LL, 42}), "c_i64"));
    b.output(b.constant(Tensor::from<std::uint8_t>({2}, {0, 255}), "c_u8"));
    b.output(b.constant(Tensor::from<bool>({3}, {true, false, true}), "c_bool"));
    b.output(b.constant(Tensor::from<float>({0, 2}, {}), "c_empty"));
    b.output(b.scalar(2.5));
  }
  return g;
}

Graph unary_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  DType t = op == OpKind::Neg ? DType::i32 : op == OpKind::Abs ? DType::f64 : f32;
  NodeId x = b.input("x", Shape({sym("batch"), 4}, t));
  if (op == OpKind::Acosh) // defined from 1: the sample reads 2 + x (random inputs lie in [-1, 1])
    x = b.add(x, b.scalar(2.0));
  b.output(b.op(op, {x}, NoAttrs{}, "y"));
  return g;
}

Graph binary_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  NodeId x = b.input("a", Shape({sym("batch"), 1, 4}, f32));
  NodeId y = b.input("b", Shape({3, 1}, f32));
  b.output(b.op(op, {x, y}, NoAttrs{}, "out"));
  return g;
}

Graph elementwise_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  switch (op) {
  case OpKind::Cast:
    b.output(g.add(OpKind::Cast, {b.input("x", Shape({2, 3}, f32))}, CastAttrs{DType::i32}, "y"));
    break;
  case OpKind::Compare: {
    NodeId x = b.input("a", Shape({2, 3}, f32));
    NodeId y = b.input("b", Shape({3}, f32));
    b.output(g.add(OpKind::Compare, {x, y}, CompareAttrs{CmpOp::le}, "le"));
    break;
  }
  default: { // Where
    NodeId c = b.input("cond", Shape({2, 3}, DType::boolean));
    NodeId x = b.input("a", Shape({2, 3}, f32));
    NodeId y = b.input("b", Shape({1, 3}, f32));
    b.output(g.add(OpKind::Where, {c, x, y}, NoAttrs{}, "pick"));
    break;
  }
  }
  return g;
}

Graph linalg_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  if (op == OpKind::MatMul) {
    NodeId x = b.input("a", Shape({2, 1, 3, 4}, f32));
    NodeId w = b.param("b", Shape({2, 5, 4}, f32));
    b.output(g.add(OpKind::MatMul, {x, w}, MatMulAttrs{false, true}, "ab_t"));
  } else if (op == OpKind::DotGeneral) {
    NodeId x = b.input("lhs", Shape({2, 3, 4}, f32));
    NodeId y = b.input("rhs", Shape({4, 2, 5}, f32));
    b.output(g.add(OpKind::DotGeneral, {x, y}, DotGeneralAttrs{{0}, {1}, {2}, {0}}, "dot"));
  } else { // DenseSolve
    NodeId a = b.input("a", Shape({2, 3, 3}, DType::f64));
    NodeId y = b.input("rhs", Shape({2, 3, 2}, DType::f64));
    b.output(g.add(OpKind::DenseSolve, {a, y}, NoAttrs{}, "x"));
  }
  return g;
}

/// Fused ops (ops.def's "fused ops" section): what rlx-fusion emits, with non-default attributes.
Graph fused_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  switch (op) {
  case OpKind::MatMulBiasAct: {
    // x [batch, 3, 4] · Wᵀ (W [5, 4], the Linear layout) + bias [5], then tanh-GELU.
    NodeId x = b.input("x", Shape({sym("batch"), 3, 4}, f32));
    NodeId w = b.param("w", Shape({5, 4}, f32));
    NodeId bias = b.param("bias", Shape({5}, f32));
    b.output(
        g.add(op, {x, w, bias}, MatMulBiasActAttrs{false, true, Activation::gelu_tanh}, "proj"));
    break;
  }
  default:
    throw Error("fused_sample: not a fused op");
  }
  return g;
}

Graph movement_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  switch (op) {
  case OpKind::Reshape: {
    NodeId x = b.input("x", Shape({sym("batch"), 6}, f32));
    b.output(g.add(op, {x}, TargetShapeAttrs{{sym("batch"), 2, -1}}, "split"));
    break;
  }
  case OpKind::Transpose: {
    NodeId x = b.input("x", Shape({2, 3, 4}, f32));
    b.output(g.add(op, {x}, TransposeAttrs{{2, 0, 1}}, "rotate"));
    break;
  }
  case OpKind::Narrow: {
    NodeId x = b.input("x", Shape({sym("batch"), 6}, f32));
    b.output(g.add(op, {x}, NarrowAttrs{-1, 1, 3}, "middle"));
    break;
  }
  case OpKind::Split:
  case OpKind::Get: {
    // A tuple with a symbolic dim, one part unread (its bytes still belong to the tuple).
    NodeId x = b.input("x", Shape({sym("batch"), 7}, f32));
    NodeId t = g.add(OpKind::Split, {x}, SplitAttrs{-1, {2, 4, 1}}, "pieces");
    b.output(g.add(OpKind::Get, {t}, GetAttrs{2}, "last"));
    b.output(g.add(OpKind::Get, {t}, GetAttrs{0}, "first"));
    break;
  }
  case OpKind::TopK: {
    // The 3 largest along the middle axis, values and indices both read.
    NodeId x = b.input("x", Shape({sym("batch"), 6, 2}, f32));
    NodeId t = g.add(OpKind::TopK, {x}, TopKAttrs{1, 3, true}, "top");
    b.output(g.add(OpKind::Get, {t}, GetAttrs{0}, "values"));
    b.output(g.add(OpKind::Get, {t}, GetAttrs{1}, "indices"));
    break;
  }
  case OpKind::Concat: {
    NodeId x = b.input("a", Shape({2, 1}, f32));
    NodeId y = b.input("b", Shape({2, 3}, f32));
    NodeId z = b.input("c", Shape({2, 2}, f32));
    b.output(g.add(op, {x, y, z}, AxisAttrs{-1}, "joined"));
    break;
  }
  case OpKind::Expand: {
    NodeId x = b.input("x", Shape({3, 1}, f32));
    b.output(g.add(op, {x}, TargetShapeAttrs{{2, -1, 4}}, "broadcast"));
    break;
  }
  case OpKind::Gather: {
    NodeId t = b.param("table", Shape({3, 5}, f32));
    NodeId i = b.input("idx", Shape({2, 2}, DType::i32));
    b.output(g.add(op, {t, i}, AxisAttrs{1}, "picked"));
    break;
  }
  default: { // ScatterAdd
    NodeId t = b.input("target", Shape({5, 3}, f32));
    NodeId i = b.input("idx", Shape({4}, DType::i64));
    NodeId u = b.input("updates", Shape({4, 3}, f32));
    b.output(g.add(op, {t, i, u}, AxisAttrs{0}, "scattered"));
    break;
  }
  }
  return g;
}

Graph reduce_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  switch (op) {
  case OpKind::Reduce: {
    NodeId x = b.input("x", Shape({2, 3, 4}, f32));
    b.output(g.add(op, {x}, ReduceAttrs{ReduceOp::max, {0, -1}, true}, "peak"));
    break;
  }
  case OpKind::Softmax:
    b.output(g.add(op, {b.input("x", Shape({sym("batch"), 5}, f32))}, AxisAttrs{-1}, "probs"));
    break;
  case OpKind::LogSoftmax:
    b.output(g.add(op, {b.input("x", Shape({4, sym("batch")}, f32))}, AxisAttrs{0}, "logp"));
    break;
  case OpKind::ArgMax:
    b.output(g.add(op, {b.input("x", Shape({3, 4}, f32))}, ArgMaxAttrs{0, true}, "best"));
    break;
  case OpKind::LayerNorm: {
    NodeId x = b.input("x", Shape({sym("batch"), 4}, f32));
    NodeId gamma = b.param("gamma", Shape({4}, f32));
    NodeId beta = b.param("beta", Shape({4}, f32));
    b.output(g.add(op, {x, gamma, beta}, NormAttrs{1e-3}, "normed"));
    break;
  }
  default: { // RmsNorm
    NodeId x = b.input("x", Shape({2, 3, 4}, f32));
    NodeId gamma = b.param("gamma", Shape({4}, f32));
    b.output(g.add(op, {x, gamma}, NormAttrs{1e-6}, "normed"));
    break;
  }
  }
  return g;
}

Graph attention_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  if (op == OpKind::Attention) {
    // Grouped-query (4 query heads on 2 KV heads), [B, H, S, D], causal with Sk > Sq, a value
    // head_dim that differs from the key's, an explicit scale and a logit softcap.
    NodeId q = b.input("q", Shape({1, 4, 3, 8}, f32));
    NodeId k = b.input("k", Shape({1, 2, 5, 8}, f32));
    NodeId v = b.input("v", Shape({1, 2, 5, 6}, f32));
    AttentionAttrs a;
    a.layout = AttnLayout::bhsd;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = MaskKind::causal;
    a.scale = 0.3;
    a.softcap = 20.0;
    b.output(g.add(op, {q, k, v}, a, "attn"));
  } else { // Rope
    NodeId x = b.input("x", Shape({1, sym("seq"), 2, 8}, f32));
    RopeAttrs a;
    a.style = RopeStyle::interleaved;
    a.n_rot = 4;
    a.position_offset = 2;
    a.theta = 500.0;
    b.output(g.add(op, {x}, a, "rotated"));
  }
  return g;
}

Graph misc_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  switch (op) {
  case OpKind::SoftmaxCrossEntropy: {
    NodeId logits = b.input("logits", Shape({4, 5}, f32));
    NodeId labels = b.input("labels", Shape({4}, DType::i64));
    b.output(g.add(op, {logits, labels}, NoAttrs{}, "loss"));
    break;
  }
  case OpKind::Conv2d: {
    NodeId x = b.input("x", Shape({1, 4, 5, 5}, f32));
    NodeId w = b.param("w", Shape({6, 2, 3, 3}, f32));
    NodeId bias = b.param("bias", Shape({6}, f32));
    b.output(g.add(op, {x, w, bias}, Conv2dAttrs{{2, 1}, {1, 1}, {1, 2}, 2}, "conv"));
    break;
  }
  case OpKind::Pool2d: {
    NodeId x = b.input("x", Shape({1, 2, 5, 5}, f32));
    b.output(g.add(op, {x}, Pool2dAttrs{PoolKind::avg, {3, 3}, {2, 2}, {1, 1}}, "pooled"));
    break;
  }
  case OpKind::Quantize: {
    NodeId x = b.input("x", Shape({2, 3}, f32));
    b.output(g.add(op, {x}, QuantAttrs{-1, {0.1, 0.2, 0.05}, {0, -3, 5}}, "q"));
    break;
  }
  case OpKind::Dequantize: {
    NodeId x = b.input("q", Shape({2, 3}, DType::i8));
    b.output(g.add(op, {x}, QuantAttrs{std::nullopt, {0.5}, {1}}, "x"));
    break;
  }
  default: { // FakeQuantize
    NodeId x = b.input("x", Shape({sym("batch"), 4}, f32));
    b.output(g.add(op, {x}, QuantAttrs{std::nullopt, {0.02}, {-2}}, "fq"));
    break;
  }
  }
  return g;
}

Graph control_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  const Shape vec3({3}, f32);
  switch (op) {
  case OpKind::If: {
    Graph then_g("then");
    {
      Builder t(then_g);
      t.output(t.add(t.input("a", vec3), t.input("b", vec3)));
    }
    Graph else_g("else");
    {
      Builder e(else_g);
      e.output(e.mul(e.input("a", vec3), e.input("b", vec3)));
    }
    NodeId p = b.input("pred", Shape::scalar(DType::boolean));
    NodeId x = b.input("a", vec3);
    NodeId y = b.input("b", vec3);
    b.output(b.if_(p, {x, y}, std::move(then_g), std::move(else_g)));
    break;
  }
  case OpKind::While: {
    // Doubles x while the counter is below 3.
    const Shape x2({2}, f32);
    const Shape count = Shape::scalar(DType::i64);
    Graph cond("cond");
    {
      Builder c(cond);
      c.input("x", x2);
      NodeId i = c.input("i", count);
      c.output(c.compare(CmpOp::lt, i, c.scalar(3, DType::i64)));
    }
    Graph body("body");
    {
      Builder c(body);
      NodeId x = c.input("x", x2);
      NodeId i = c.input("i", count);
      c.output(c.add(x, x));
      c.output(c.add(i, c.scalar(1, DType::i64)));
    }
    NodeId x = b.input("x", x2);
    NodeId i0 = b.scalar(0, DType::i64);
    b.output(b.while_({x, i0}, std::move(cond), std::move(body), 10, 0));
    break;
  }
  case OpKind::Custom: {
    register_sample_custom_op();
    NodeId x = b.input("x", Shape({sym("batch"), 2}, f32));
    b.output(g.add(op, {x}, CustomAttrs{std::string(kSampleCustomOp), "2.5"}, "scaled"));
    break;
  }
  default: { // CustomFn: a * sigmoid(b) with a hand-written VJP
    const Shape m({2, 3}, f32);
    Graph body("body");
    {
      Builder c(body);
      NodeId a = c.input("a", m);
      NodeId v = c.input("b", vec3);
      c.output(c.mul(a, c.sigmoid(v)));
    }
    Graph vjp("vjp");
    {
      Builder c(vjp);
      NodeId a = c.input("a", m);
      NodeId v = c.input("b", vec3);
      NodeId dy = c.input("dy", m);
      NodeId s = c.sigmoid(v);
      NodeId ds = c.mul(s, c.sub(c.scalar(1.0), s));
      c.output(c.mul(dy, s));
      c.output(c.mul(c.sum(c.mul(dy, a), {0}), ds));
    }
    NodeId a = b.input("a", m);
    NodeId v = b.input("b", vec3);
    b.output(b.custom_fn({a, v}, std::move(body), std::move(vjp)));
    break;
  }
  }
  return g;
}

/// ElementwiseRegion: where(tanh(x * scale) > 0.25, tanh(.), x * scale) + 1 over a broadcast
/// scale, with a body constant (a single result: the tuple form is tested by the region tests).
Graph region_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  const Shape xs({sym("batch"), 4}, f32), ss({4}, f32);
  Graph body("region0");
  {
    Builder c(body);
    NodeId x = c.input("in0", xs);
    NodeId scale = c.input("in1", ss);
    NodeId t = c.mul(x, scale);
    NodeId u = c.tanh(t);
    NodeId keep = c.compare(CmpOp::gt, u, c.scalar(0.25));
    c.output(c.add(c.where(keep, u, t), c.scalar(1.0)));
  }
  NodeId x = b.input("x", xs);
  NodeId scale = b.param("scale", ss);
  b.output(g.add(op, {x, scale},
                 RegionAttrs{SubGraph{std::make_shared<const Graph>(std::move(body))}}, "region"));
  return g;
}

Graph hir_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  auto w = [&](const char* name, std::vector<std::int64_t> sizes) {
    return b.param(name, Shape::of(sizes, f32));
  };
  switch (op) {
  case OpKind::Linear: {
    NodeId x = b.input("x", Shape({2, 3, 4}, f32));
    b.output(b.linear(x, w("w", {5, 4}), w("b", {5}), Activation::gelu));
    break;
  }
  case OpKind::AttentionBlock: {
    NodeId x = b.input("x", Shape({1, 4, 8}, f32));
    AttentionBlockAttrs a;
    a.num_heads = 2;
    a.num_kv_heads = 1;
    a.mask = MaskKind::causal;
    a.bias = true;
    a.rope = true;
    a.rope_theta = 1000.0;
    b.output(
        b.attention_block({x, w("wq", {8, 8}), w("wk", {4, 8}), w("wv", {4, 8}), w("wo", {8, 8}),
                           w("bq", {8}), w("bk", {4}), w("bv", {4}), w("bo", {8})},
                          a));
    break;
  }
  case OpKind::SwiGluFfn: {
    NodeId x = b.input("x", Shape({2, 3, 4}, f32));
    b.output(b.swiglu_ffn(x, w("w_gate", {6, 4}), w("w_up", {6, 4}), w("w_down", {4, 6})));
    break;
  }
  case OpKind::BertLayer: {
    NodeId x = b.input("x", Shape({1, 3, 8}, f32));
    NodeId mask = b.input("mask", Shape({1, 3}, f32));
    BertLayerAttrs a;
    a.num_heads = 2;
    a.padding_mask = true;
    b.output(b.bert_layer({x, w("wq", {8, 8}), w("bq", {8}), w("wk", {8, 8}), w("bk", {8}),
                           w("wv", {8, 8}), w("bv", {8}), w("wo", {8, 8}), w("bo", {8}),
                           w("ln1_g", {8}), w("ln1_b", {8}), w("w1", {16, 8}), w("b1", {16}),
                           w("w2", {8, 16}), w("b2", {8}), w("ln2_g", {8}), w("ln2_b", {8}), mask},
                          a));
    break;
  }
  default: { // LlamaBlock
    NodeId x = b.input("x", Shape({1, 3, 8}, f32));
    LlamaBlockAttrs a;
    a.num_heads = 2;
    a.num_kv_heads = 1;
    b.output(b.llama_block({x, w("attn_norm", {8}), w("wq", {8, 8}), w("wk", {4, 8}),
                            w("wv", {4, 8}), w("wo", {8, 8}), w("ffn_norm", {8}),
                            w("w_gate", {12, 8}), w("w_up", {12, 8}), w("w_down", {8, 12})},
                           a));
    break;
  }
  }
  return g;
}

// ---- random values -----------------------------------------------------------------------------

/// What a leaf's direct users need from its values.
struct LeafNeeds {
  bool positive = false;         ///< Log / Sqrt / Rsqrt / Reciprocal / Pow base / Div divisor
  bool solvable = false;         ///< DenseSolve matrix
  bool mask = false;             ///< padding mask: 0 / 1
  bool full_i8 = false;          ///< Dequantize input
  std::int64_t index_bound = -1; ///< indexes a dim of this size
};

// fused ops: transformer
Graph fused_transformer_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  if (op == OpKind::SwiGlu) {
    NodeId gate = b.input("gate", Shape({sym("batch"), 6}, f32));
    NodeId up = b.input("up", Shape({sym("batch"), 6}, f32));
    b.output(b.op(op, {gate, up}, NoAttrs{}, "h"));
  } else { // SwiGluMatMul
    NodeId x = b.input("x", Shape({2, sym("seq"), 4}, f32));
    NodeId wg = b.param("w_gate", Shape({6, 4}, f32));
    NodeId wu = b.param("w_up", Shape({6, 4}, f32));
    b.output(b.op(op, {x, wg, wu}, SwiGluMatMulAttrs{}, "h"));
  }
  return g;
}

// fused ops: attention block. GQA (4 query heads, 2 kv heads, head_dim 4), both biases, RoPE, a
// padding mask and a symbolic sequence length: every operand slot is used.
Graph fused_attention_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  NodeId x = b.input("x", Shape({2, sym("seq"), 12}, f32));
  NodeId mask = b.input("mask", Shape({2, sym("seq")}, f32));
  FusedAttentionBlockAttrs a;
  a.num_heads = 4;
  a.num_kv_heads = 2;
  a.mask = MaskKind::padding;
  a.qkv_bias = true;
  a.out_bias = true;
  a.rope = true;
  a.rope_theta = 100.0;
  b.output(b.op(op,
                {x, b.param("w_qkv", Shape({32, 12}, f32)), b.param("w_o", Shape({10, 16}, f32)),
                 b.param("b_qkv", Shape({32}, f32)), b.param("b_o", Shape({10}, f32)), mask},
                a, "attn"));
  return g;
}

// fused ops: transformer layer. A BERT post-norm layer with every optional operand (biases, betas,
// a padding mask) and a symbolic sequence length; GQA, RoPE and LLaMA layers are conformance cases.
Graph fused_layer_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  NodeId x = b.input("x", Shape({2, sym("seq"), 8}, f32));
  NodeId mask = b.input("mask", Shape({2, sym("seq")}, f32));
  FusedTransformerLayerAttrs a;
  a.block.num_heads = 2;
  a.block.num_kv_heads = 2;
  a.block.mask = MaskKind::padding;
  a.block.qkv_bias = a.block.out_bias = a.up_bias = a.down_bias = a.norm_beta = true;
  a.act = Activation::gelu;
  a.eps = 1e-5;
  auto w = [&](const char* name, std::vector<Dim> dims) {
    return b.param(name, Shape(std::move(dims), f32));
  };
  b.output(b.op(op,
                {x, w("w_qkv", {24, 8}), w("w_o", {8, 8}), w("b_qkv", {24}), w("b_o", {8}),
                 w("g1", {8}), w("beta1", {8}), w("w_up", {12, 8}), w("b_up", {12}),
                 w("w_down", {8, 12}), w("b_down", {8}), w("g2", {8}), w("beta2", {8}), mask},
                a, "layer"));
  return g;
}

// fused ops: residual + norm. The sum is read (a residual) and the normalised value too; the layer
// norm has a beta, a symbolic batch and an odd width.
Graph fused_norm_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  NodeId x = b.input("x", Shape({sym("batch"), 3, 5}, f32));
  NodeId r = b.input("residual", Shape({sym("batch"), 3, 5}, f32));
  NodeId gamma = b.param("gamma", Shape({5}, f32));
  std::vector<NodeId> in{x, r, gamma};
  if (op == OpKind::ResidualLayerNorm)
    in.push_back(b.param("beta", Shape({5}, f32)));
  NodeId t = g.add(op, in, NormAttrs{1e-3}, "ln");
  b.output(g.add(OpKind::Get, {t}, GetAttrs{1}, "normed"));
  b.output(g.add(OpKind::Get, {t}, GetAttrs{0}, "sum"));
  return g;
}

// backward ops: the norms' grads read both gradients of their tuple (a symbolic row count), the
// softmax grads a symbolic batch with the axis in the middle.
Graph backward_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  if (op == OpKind::LayerNormGrad || op == OpKind::RmsNormGrad) {
    NodeId x = b.input("x", Shape({2, sym("seq"), 6}, f32));
    NodeId gamma = b.param("gamma", Shape({6}, f32));
    NodeId dy = b.input("dy", Shape({2, sym("seq"), 6}, f32));
    NodeId t = g.add(op, {x, gamma, dy}, NormAttrs{1e-5}, "grads");
    b.output(g.add(OpKind::Get, {t}, GetAttrs{0}, "dx"));
    b.output(g.add(OpKind::Get, {t}, GetAttrs{1}, "dgamma"));
    if (op == OpKind::LayerNormGrad)
      b.output(g.add(OpKind::Get, {t}, GetAttrs{2}, "dbeta"));
  } else if (op == OpKind::AttentionGrad) { // GQA, a padding mask, bshd, every gradient read
    NodeId q = b.input("q", Shape({2, 5, 4, 8}, f32));
    NodeId k = b.input("k", Shape({2, 5, 2, 8}, f32));
    NodeId v = b.input("v", Shape({2, 5, 2, 8}, f32));
    NodeId out = b.input("out", Shape({2, 5, 4, 8}, f32));
    NodeId dout = b.input("dout", Shape({2, 5, 4, 8}, f32));
    NodeId mask = b.input("mask", Shape({2, 5}, DType::boolean));
    AttentionAttrs a;
    a.num_heads = 4;
    a.num_kv_heads = 2;
    a.mask = MaskKind::padding;
    NodeId t = g.add(op, {q, k, v, out, dout, mask}, a, "grads");
    b.output(g.add(OpKind::Get, {t}, GetAttrs{0}, "dq"));
    b.output(g.add(OpKind::Get, {t}, GetAttrs{1}, "dk"));
    b.output(g.add(OpKind::Get, {t}, GetAttrs{2}, "dv"));
  } else if (op == OpKind::SoftmaxCrossEntropyGrad) { // a symbolic row count
    NodeId x = b.input("logits", Shape({sym("batch"), 7}, f32));
    NodeId labels = b.input("labels", Shape({sym("batch")}, DType::i64));
    NodeId dloss = b.input("dloss", Shape({sym("batch")}, f32));
    b.output(g.add(op, {x, labels, dloss}, NoAttrs{}, "dlogits"));
  } else if (op == OpKind::RopeGrad) { // interleaved, partial, offset, a symbolic batch
    RopeAttrs a;
    a.style = RopeStyle::interleaved;
    a.n_rot = 4;
    a.position_offset = 3;
    b.output(g.add(op, {b.input("dy", Shape({sym("batch"), 5, 2, 8}, f32))}, a, "dx"));
  } else { // SoftmaxGrad, LogSoftmaxGrad
    NodeId y = b.input("y", Shape({sym("batch"), 5, 3}, f32));
    NodeId dy = b.input("dy", Shape({sym("batch"), 5, 3}, f32));
    b.output(g.add(op, {y, dy}, AxisAttrs{1}, "dx"));
  }
  return g;
}

// conv / pool backward: stride 2 with padding, dilation and groups (so the sizes the attributes
// carry are needed), a symbolic batch; pool2d_grad max with overlapping padded windows, avg on
// its own.
Graph conv_backward_sample(OpKind op) {
  Graph g(std::string(op_name(op)));
  Builder b(g);
  Conv2dGradAttrs c;
  c.stride = {2, 1};
  c.padding = {1, 2};
  c.dilation = {1, 2};
  c.groups = 2;
  if (op == OpKind::Conv2dGradInput) {
    c.size = {6, 5};
    NodeId dy = b.input("dy", Shape({sym("batch"), 4, 3, 5}, f32));
    NodeId w = b.param("w", Shape({4, 3, 3, 3}, f32));
    b.output(g.add(op, {dy, w}, c, "dx"));
  } else if (op == OpKind::Conv2dGradWeight) {
    c.size = {3, 3};
    NodeId x = b.input("x", Shape({sym("batch"), 6, 6, 5}, f32));
    NodeId dy = b.input("dy", Shape({sym("batch"), 4, 3, 5}, f32));
    b.output(g.add(op, {x, dy}, c, "dw"));
  } else { // Pool2dGrad
    Pool2dGradAttrs p;
    p.kernel = {3, 3};
    p.stride = {2, 1};
    p.padding = {1, 1};
    p.input_size = {5, 4};
    NodeId x = b.input("x", Shape({sym("batch"), 3, 5, 4}, f32));
    Pool2dAttrs f;
    f.kernel = p.kernel;
    f.stride = p.stride;
    f.padding = p.padding;
    NodeId y = b.pool2d(x, f);
    NodeId dy = b.input("dy", Shape({sym("batch"), 3, 3, 4}, f32));
    b.output(g.add(op, {x, y, dy}, p, "dx_max"));
    p.kind = PoolKind::avg;
    b.output(g.add(op, {dy}, p, "dx_avg"));
  }
  return g;
}

std::int64_t bound_size(const Dim& d, const Bindings& b) {
  if (d.is_static())
    return d.size();
  auto it = b.find(d.symbol());
  return it == b.end() ? kSymbolSize : it->second;
}

LeafNeeds needs_of(const Graph& g, NodeId leaf, const Bindings& bindings) {
  LeafNeeds n;
  auto index_into = [&](NodeId table, std::int64_t axis) {
    const Shape& s = g.shape(table);
    if (s.rank() == 0)
      return;
    auto ax = static_cast<std::size_t>(normalize_axis(axis, s.rank(), "index"));
    std::int64_t size = bound_size(s[ax], bindings);
    n.index_bound = n.index_bound < 0 ? size : std::min(n.index_bound, size);
  };
  for (NodeId u : g.ids()) {
    const Node& user = g.node(u);
    for (std::size_t slot = 0; slot < user.inputs.size(); ++slot) {
      if (user.inputs[slot] != leaf)
        continue;
      switch (user.op) {
      case OpKind::Log:
      case OpKind::Sqrt:
      case OpKind::Rsqrt:
      case OpKind::Reciprocal:
        n.positive = true;
        break;
      case OpKind::Pow:
        n.positive = n.positive || slot == 0;
        break;
      case OpKind::Div:
        n.positive = n.positive || slot == 1;
        break;
      case OpKind::DenseSolve:
        n.solvable = n.solvable || slot == 0;
        break;
      case OpKind::Gather:
        if (slot == 1)
          index_into(user.inputs[0], user.attr<AxisAttrs>().axis);
        break;
      case OpKind::ScatterAdd:
        if (slot == 1)
          index_into(user.inputs[0], user.attr<AxisAttrs>().axis);
        break;
      case OpKind::SoftmaxCrossEntropy:
      case OpKind::SoftmaxCrossEntropyGrad:
        if (slot == 1)
          index_into(user.inputs[0], 1);
        break;
      case OpKind::Dequantize:
        n.full_i8 = true;
        break;
      case OpKind::Attention:
        n.mask = n.mask || (slot == 3 && user.attr<AttentionAttrs>().mask == MaskKind::padding);
        break;
      case OpKind::AttentionGrad:
        n.mask = n.mask || (slot == 5 && user.attr<AttentionAttrs>().mask == MaskKind::padding);
        break;
      case OpKind::AttentionBlock:
        n.mask = n.mask || (slot + 1 == user.inputs.size() &&
                            user.attr<AttentionBlockAttrs>().mask == MaskKind::padding);
        break;
      case OpKind::FusedAttentionBlock:
        n.mask = n.mask || (slot + 1 == user.inputs.size() &&
                            user.attr<FusedAttentionBlockAttrs>().mask == MaskKind::padding);
        break;
      case OpKind::FusedTransformerLayer:
        n.mask =
            n.mask || (slot + 1 == user.inputs.size() &&
                       user.attr<FusedTransformerLayerAttrs>().block.mask == MaskKind::padding);
        break;
      case OpKind::BertLayer:
        n.mask = n.mask || slot == 17;
        break;
      default:
        break;
      }
    }
  }
  return n;
}

std::uint64_t name_hash(std::string_view s) {
  std::uint64_t h = 0xcbf29ce484222325ull;
  for (char c : s) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ull;
  }
  return h;
}

} // namespace

void register_sample_custom_op() {
  auto& reg = CustomOpRegistry::global();
  if (reg.find(std::string(kSampleCustomOp)))
    return;
  CustomOpDef def;
  def.name = std::string(kSampleCustomOp);
  def.min_arity = 1;
  def.max_arity = 1;
  def.infer = [](std::span<const Shape> in, const CustomAttrs& a) {
    if (!is_float(in[0].dtype))
      throw ShapeError(std::string(kSampleCustomOp) + ": input must be a float type, got " +
                       in[0].str());
    custom_scale(a);
    return in[0];
  };
  def.reference = [](std::span<const Tensor> in, const CustomAttrs& a, const Shape& out) {
    double s = custom_scale(a);
    Tensor t(out);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, in[0].get_f64(i) * s);
    return t;
  };
  try {
    reg.add(std::move(def));
  } catch (const Error&) {
    // Registered by another thread in the meantime: the definition is the same.
  }
}

std::vector<OpKind> all_ops() {
  std::vector<OpKind> out;
  for_each_op([&](OpKind k) { out.push_back(k); });
  return out;
}

Graph sample_graph(OpKind op) {
  switch (op) {
  case OpKind::Input:
  case OpKind::Param:
  case OpKind::Constant:
    return leaf_sample(op);
  case OpKind::Neg:
  case OpKind::Abs:
  case OpKind::Exp:
  case OpKind::Log:
  case OpKind::Sqrt:
  case OpKind::Rsqrt:
  case OpKind::Reciprocal:
  case OpKind::Tanh:
  case OpKind::Sigmoid:
  case OpKind::Relu:
  case OpKind::Gelu:
  case OpKind::GeluTanh:
  case OpKind::Silu:
  case OpKind::Sin:
  case OpKind::Cos:
  case OpKind::Erf:
  case OpKind::Sinh:
  case OpKind::Cosh:
  case OpKind::Asin:
  case OpKind::Acos:
  case OpKind::Atan:
  case OpKind::Asinh:
  case OpKind::Acosh:
  case OpKind::Atanh:
    return unary_sample(op);
  case OpKind::Add:
  case OpKind::Sub:
  case OpKind::Mul:
  case OpKind::Div:
  case OpKind::Pow:
  case OpKind::Maximum:
  case OpKind::Minimum:
    return binary_sample(op);
  case OpKind::Cast:
  case OpKind::Compare:
  case OpKind::Where:
    return elementwise_sample(op);
  case OpKind::MatMul:
  case OpKind::DotGeneral:
  case OpKind::DenseSolve:
    return linalg_sample(op);
  case OpKind::Reshape:
  case OpKind::Transpose:
  case OpKind::Narrow:
  case OpKind::Concat:
  case OpKind::Split:
  case OpKind::Get:
  case OpKind::Expand:
  case OpKind::Gather:
  case OpKind::ScatterAdd:
  case OpKind::TopK:
    return movement_sample(op);
  case OpKind::Reduce:
  case OpKind::Softmax:
  case OpKind::LogSoftmax:
  case OpKind::ArgMax:
  case OpKind::LayerNorm:
  case OpKind::RmsNorm:
    return reduce_sample(op);
  case OpKind::Attention:
  case OpKind::Rope:
    return attention_sample(op);
  case OpKind::SoftmaxCrossEntropy:
  case OpKind::Conv2d:
  case OpKind::Pool2d:
  case OpKind::Quantize:
  case OpKind::Dequantize:
  case OpKind::FakeQuantize:
    return misc_sample(op);
  case OpKind::If:
  case OpKind::While:
  case OpKind::Custom:
  case OpKind::CustomFn:
    return control_sample(op);
  case OpKind::ElementwiseRegion:
    return region_sample(op);
  case OpKind::Linear:
  case OpKind::AttentionBlock:
  case OpKind::SwiGluFfn:
  case OpKind::BertLayer:
  case OpKind::LlamaBlock:
    return hir_sample(op);
  case OpKind::MatMulBiasAct:
    return fused_sample(op);
  case OpKind::SwiGlu:
  case OpKind::SwiGluMatMul:
    return fused_transformer_sample(op);
  case OpKind::ResidualLayerNorm:
  case OpKind::ResidualRmsNorm:
    return fused_norm_sample(op);
  case OpKind::FusedAttentionBlock:
    return fused_attention_sample(op);
  case OpKind::FusedTransformerLayer:
    return fused_layer_sample(op);
  case OpKind::LayerNormGrad:
  case OpKind::RmsNormGrad:
  case OpKind::SoftmaxGrad:
  case OpKind::LogSoftmaxGrad:
  case OpKind::AttentionGrad:
  case OpKind::SoftmaxCrossEntropyGrad:
  case OpKind::RopeGrad:
    return backward_sample(op);
  case OpKind::Conv2dGradInput:
  case OpKind::Conv2dGradWeight:
  case OpKind::Pool2dGrad:
    return conv_backward_sample(op);
  default:
    break;
  }
  throw Error("no sample graph for op '" +
              (static_cast<int>(op) < kNumOps ? std::string(op_name(op)) : std::string("?")) +
              "': add one to rlx-ir/tests/testing/op_samples.cpp");
}

Bindings sample_bindings(const Graph& g) {
  Bindings b;
  for (const auto& s : g.symbols())
    b[s] = kSymbolSize;
  return b;
}

Tensor random_leaf(const Graph& g, NodeId leaf, std::uint64_t seed) {
  const Node& node = g.node(leaf);
  if (node.op != OpKind::Input && node.op != OpKind::Param)
    throw Error("random_leaf: " + describe(g, leaf) + " is not an Input or Param");
  Bindings bindings = sample_bindings(g);
  Shape type = node.shape.bind(bindings);
  LeafNeeds needs = needs_of(g, leaf, bindings);
  std::mt19937_64 rng(seed * 0x9e3779b97f4a7c15ull ^ name_hash(node.attr<LeafAttrs>().name) ^
                      (node.op == OpKind::Param ? 0x5bd1e995ull : 0));
  Tensor t(type);
  const DType dt = type.dtype;
  if (dt == DType::boolean || needs.mask) {
    std::bernoulli_distribution coin(0.5);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_i64(i, coin(rng) ? 1 : 0);
  } else if (is_float(dt)) {
    std::uniform_real_distribution<double> dist(needs.positive ? 0.5 : -1.0,
                                                needs.positive ? 2.0 : 1.0);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_f64(i, dist(rng));
    if (needs.solvable && type.rank() >= 2) {
      std::int64_t n = type[type.rank() - 1].size();
      for (std::int64_t i = 0; i < t.numel(); ++i)
        if ((i % (n * n)) / n == i % n)
          t.set_f64(i, t.get_f64(i) + static_cast<double>(n + 1));
    }
  } else {
    std::int64_t lo = -4, hi = 4;
    if (needs.index_bound >= 0) {
      lo = 0;
      hi = std::max<std::int64_t>(needs.index_bound - 1, 0);
    } else if (needs.full_i8) {
      lo = -128;
      hi = 127;
    } else if (needs.positive) {
      lo = 1;
    }
    if (dt == DType::u8)
      lo = std::max<std::int64_t>(lo, 0);
    std::uniform_int_distribution<std::int64_t> dist(lo, hi);
    for (std::int64_t i = 0; i < t.numel(); ++i)
      t.set_i64(i, dist(rng));
  }
  return t;
}

reference::TensorMap random_inputs(const Graph& g, std::uint64_t seed) {
  reference::TensorMap out;
  for (NodeId id : g.inputs())
    out[g.node(id).attr<LeafAttrs>().name] = random_leaf(g, id, seed);
  return out;
}

reference::TensorMap random_params(const Graph& g, std::uint64_t seed) {
  reference::TensorMap out;
  for (NodeId id : g.params())
    out[g.node(id).attr<LeafAttrs>().name] = random_leaf(g, id, seed);
  return out;
}

} // namespace rlx::ir::testing
