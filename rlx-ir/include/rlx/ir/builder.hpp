// builder.hpp: typed, shape-inferring construction of graphs.
#pragma once

#include "rlx/ir/graph.hpp"

#include <optional>
#include <string>
#include <vector>

namespace rlx::ir {

/// Builds nodes into a Graph. Every method infers the output type and throws ShapeError (naming the
/// op and the reason) on bad shapes, dtypes or attributes. Methods return the new node's id.
class Builder {
public:
  explicit Builder(Graph& g) : g_(g) {}
  Graph& graph() { return g_; }
  const Shape& shape(NodeId x) const { return g_.shape(x); }

  /// Any op with explicit attributes (the generic form the typed methods wrap).
  NodeId op(OpKind k, std::vector<NodeId> inputs, Attrs attrs = NoAttrs{}, std::string name = {});

  // leaves
  NodeId input(std::string name, Shape type);
  NodeId param(std::string name, Shape type);
  NodeId constant(Tensor value, std::string name = {});
  /// A rank-0 constant \p v of \p t.
  NodeId scalar(double v, DType t = DType::f32);

  // elementwise
  NodeId unary(OpKind k, NodeId x);
  NodeId neg(NodeId x) { return unary(OpKind::Neg, x); }
  NodeId abs(NodeId x) { return unary(OpKind::Abs, x); }
  NodeId exp(NodeId x) { return unary(OpKind::Exp, x); }
  NodeId log(NodeId x) { return unary(OpKind::Log, x); }
  NodeId sqrt(NodeId x) { return unary(OpKind::Sqrt, x); }
  NodeId rsqrt(NodeId x) { return unary(OpKind::Rsqrt, x); }
  NodeId reciprocal(NodeId x) { return unary(OpKind::Reciprocal, x); }
  NodeId tanh(NodeId x) { return unary(OpKind::Tanh, x); }
  NodeId sigmoid(NodeId x) { return unary(OpKind::Sigmoid, x); }
  NodeId relu(NodeId x) { return unary(OpKind::Relu, x); }
  NodeId gelu(NodeId x) { return unary(OpKind::Gelu, x); }
  NodeId gelu_tanh(NodeId x) { return unary(OpKind::GeluTanh, x); }
  NodeId silu(NodeId x) { return unary(OpKind::Silu, x); }
  NodeId sin(NodeId x) { return unary(OpKind::Sin, x); }
  NodeId cos(NodeId x) { return unary(OpKind::Cos, x); }
  NodeId erf(NodeId x) { return unary(OpKind::Erf, x); }
  NodeId sinh(NodeId x) { return unary(OpKind::Sinh, x); }
  NodeId cosh(NodeId x) { return unary(OpKind::Cosh, x); }
  NodeId asin(NodeId x) { return unary(OpKind::Asin, x); }
  NodeId acos(NodeId x) { return unary(OpKind::Acos, x); }
  NodeId atan(NodeId x) { return unary(OpKind::Atan, x); }
  NodeId asinh(NodeId x) { return unary(OpKind::Asinh, x); }
  NodeId acosh(NodeId x) { return unary(OpKind::Acosh, x); }
  NodeId atanh(NodeId x) { return unary(OpKind::Atanh, x); }
  /// Applies \p act (identity for Activation::none).
  NodeId activation(Activation act, NodeId x);
  NodeId cast(NodeId x, DType to);

  NodeId binary(OpKind k, NodeId a, NodeId b);
  NodeId add(NodeId a, NodeId b) { return binary(OpKind::Add, a, b); }
  NodeId sub(NodeId a, NodeId b) { return binary(OpKind::Sub, a, b); }
  NodeId mul(NodeId a, NodeId b) { return binary(OpKind::Mul, a, b); }
  NodeId div(NodeId a, NodeId b) { return binary(OpKind::Div, a, b); }
  NodeId pow(NodeId a, NodeId b) { return binary(OpKind::Pow, a, b); }
  NodeId maximum(NodeId a, NodeId b) { return binary(OpKind::Maximum, a, b); }
  NodeId minimum(NodeId a, NodeId b) { return binary(OpKind::Minimum, a, b); }
  NodeId compare(CmpOp op, NodeId a, NodeId b);
  NodeId where(NodeId cond, NodeId a, NodeId b);

  // linear algebra
  NodeId matmul(NodeId a, NodeId b, bool transpose_a = false, bool transpose_b = false);
  NodeId dot_general(NodeId a, NodeId b, DotGeneralAttrs dims);
  NodeId dense_solve(NodeId a, NodeId b);

  // movement
  NodeId reshape(NodeId x, std::vector<Dim> shape);
  NodeId transpose(NodeId x, std::vector<std::int64_t> perm);
  NodeId narrow(NodeId x, std::int64_t axis, std::int64_t start, std::int64_t length);
  NodeId concat(std::vector<NodeId> xs, std::int64_t axis);

  // several results (tuple-typed nodes, read through get)
  /// The tuple-typed Split of \p x along \p axis into pieces of \p sizes.
  NodeId split(NodeId x, std::int64_t axis, std::vector<std::int64_t> sizes);
  /// Part \p index of tuple-typed node \p tuple.
  NodeId get(NodeId tuple, std::int64_t index);
  /// One Get per part of tuple-typed node \p tuple, in part order.
  std::vector<NodeId> parts(NodeId tuple);
  NodeId expand(NodeId x, std::vector<Dim> shape);
  NodeId gather(NodeId table, NodeId indices, std::int64_t axis = 0);
  NodeId scatter_add(NodeId target, NodeId indices, NodeId updates, std::int64_t axis = 0);

  // reductions and normalisation
  NodeId reduce(ReduceOp op, NodeId x, std::vector<std::int64_t> axes, bool keep_dims = false);
  NodeId sum(NodeId x, std::vector<std::int64_t> axes, bool keep_dims = false) {
    return reduce(ReduceOp::sum, x, std::move(axes), keep_dims);
  }
  NodeId mean(NodeId x, std::vector<std::int64_t> axes, bool keep_dims = false) {
    return reduce(ReduceOp::mean, x, std::move(axes), keep_dims);
  }
  NodeId softmax(NodeId x, std::int64_t axis = -1);
  NodeId log_softmax(NodeId x, std::int64_t axis = -1);
  NodeId argmax(NodeId x, std::int64_t axis = -1, bool keep_dims = false);
  /// LayerNorm over the last axis; \p beta may be invalid (no bias).
  NodeId layer_norm(NodeId x, NodeId gamma, NodeId beta, double eps = 1e-5);
  NodeId rms_norm(NodeId x, NodeId gamma, double eps = 1e-6);

  // attention
  /// Attention on q, k, v; \p mask is required for MaskKind padding / bias and must be invalid
  /// otherwise.
  NodeId attention(NodeId q, NodeId k, NodeId v, AttentionAttrs attrs, NodeId mask = {});
  NodeId rope(NodeId x, RopeAttrs attrs);

  NodeId softmax_cross_entropy(NodeId logits, NodeId labels);
  /// Conv2d; \p bias may be invalid.
  NodeId conv2d(NodeId x, NodeId w, NodeId bias, Conv2dAttrs attrs);
  NodeId pool2d(NodeId x, Pool2dAttrs attrs);

  // control flow and extension
  NodeId if_(NodeId pred, std::vector<NodeId> captures, Graph then_branch, Graph else_branch);
  NodeId while_(std::vector<NodeId> init, Graph cond, Graph body, std::int64_t max_iterations,
                std::int64_t output_index = 0);
  NodeId custom(std::string op_name, std::vector<NodeId> inputs, std::string params = {});
  /// CustomFn; \p vjp may be absent.
  NodeId custom_fn(std::vector<NodeId> inputs, Graph body, std::optional<Graph> vjp = {});

  // quantization
  NodeId quantize(NodeId x, QuantAttrs q);
  NodeId dequantize(NodeId x, QuantAttrs q);
  NodeId fake_quantize(NodeId x, QuantAttrs q);

  // HIR blocks
  /// act(x Wᵀ + b), \p w [out, in]; \p b may be invalid.
  NodeId linear(NodeId x, NodeId w, NodeId b = {}, Activation act = Activation::none);
  /// Inputs: x, wq, wk, wv, wo, then bq, bk, bv, bo when attrs.bias, then the mask when the mask
  /// kind takes one.
  NodeId attention_block(std::vector<NodeId> inputs, AttentionBlockAttrs attrs);
  NodeId swiglu_ffn(NodeId x, NodeId w_gate, NodeId w_up, NodeId w_down);
  /// Inputs: x, wq, bq, wk, bk, wv, bv, wo, bo, ln1_g, ln1_b, w1, b1, w2, b2, ln2_g, ln2_b [,
  /// mask].
  NodeId bert_layer(std::vector<NodeId> inputs, BertLayerAttrs attrs);
  /// Inputs: x, attn_norm, wq, wk, wv, wo, ffn_norm, w_gate, w_up, w_down.
  NodeId llama_block(std::vector<NodeId> inputs, LlamaBlockAttrs attrs);

  /// Marks \p x as a graph output; \returns x.
  NodeId output(NodeId x) {
    g_.add_output(x);
    return x;
  }

private:
  Graph& g_;
};

} // namespace rlx::ir
