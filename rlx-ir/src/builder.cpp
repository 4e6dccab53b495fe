// builder.cpp: the typed builder methods, thin wrappers over Graph::add.
#include "rlx/ir/builder.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir {

namespace {
std::vector<NodeId> with_optional(std::vector<NodeId> v, NodeId opt) {
  if (opt.valid())
    v.push_back(opt);
  return v;
}
std::shared_ptr<const Graph> share(Graph g) {
  return std::make_shared<const Graph>(std::move(g));
}
} // namespace

NodeId Builder::op(OpKind k, std::vector<NodeId> inputs, Attrs attrs, std::string name) {
  return g_.add(k, std::move(inputs), std::move(attrs), std::move(name));
}

NodeId Builder::input(std::string name, Shape type) {
  if (g_.find_leaf(name).valid())
    throw ShapeError("input '" + name + "' is already defined");
  return g_.add(OpKind::Input, {}, LeafAttrs{std::move(name), std::move(type)});
}

NodeId Builder::param(std::string name, Shape type) {
  if (g_.find_leaf(name, /*param=*/true).valid())
    throw ShapeError("param '" + name + "' is already defined");
  return g_.add(OpKind::Param, {}, LeafAttrs{std::move(name), std::move(type)});
}

NodeId Builder::constant(Tensor value, std::string name) {
  return g_.add(OpKind::Constant, {}, ConstantAttrs{std::move(value)}, std::move(name));
}

NodeId Builder::scalar(double v, DType t) {
  Tensor s(Shape::scalar(t));
  s.set_f64(0, v);
  return constant(std::move(s));
}

NodeId Builder::unary(OpKind k, NodeId x) {
  if (op_info(k).min_arity != 1 || op_info(k).max_arity != 1 || !is_elementwise(k))
    throw ShapeError(std::string(op_name(k)) + " is not a unary elementwise op");
  return g_.add(k, {x}, default_attrs(k));
}

NodeId Builder::activation(Activation act, NodeId x) {
  auto k = activation_op(act);
  return k ? unary(*k, x) : x;
}

NodeId Builder::cast(NodeId x, DType to) {
  return g_.add(OpKind::Cast, {x}, CastAttrs{to});
}

NodeId Builder::binary(OpKind k, NodeId a, NodeId b) {
  if (op_info(k).min_arity != 2 || fusion_kind(k) != FusionKind::broadcast || k == OpKind::Compare)
    throw ShapeError(std::string(op_name(k)) + " is not a binary arithmetic op");
  return g_.add(k, {a, b}, NoAttrs{});
}

NodeId Builder::compare(CmpOp op, NodeId a, NodeId b) {
  return g_.add(OpKind::Compare, {a, b}, CompareAttrs{op});
}

NodeId Builder::where(NodeId c, NodeId a, NodeId b) {
  return g_.add(OpKind::Where, {c, a, b}, NoAttrs{});
}

NodeId Builder::matmul(NodeId a, NodeId b, bool ta, bool tb) {
  return g_.add(OpKind::MatMul, {a, b}, MatMulAttrs{ta, tb});
}

NodeId Builder::dot_general(NodeId a, NodeId b, DotGeneralAttrs dims) {
  return g_.add(OpKind::DotGeneral, {a, b}, std::move(dims));
}

NodeId Builder::dense_solve(NodeId a, NodeId b) {
  return g_.add(OpKind::DenseSolve, {a, b}, NoAttrs{});
}

NodeId Builder::reshape(NodeId x, std::vector<Dim> shape) {
  return g_.add(OpKind::Reshape, {x}, TargetShapeAttrs{std::move(shape)});
}

NodeId Builder::transpose(NodeId x, std::vector<std::int64_t> perm) {
  return g_.add(OpKind::Transpose, {x}, TransposeAttrs{std::move(perm)});
}

NodeId Builder::narrow(NodeId x, std::int64_t axis, std::int64_t start, std::int64_t length) {
  return g_.add(OpKind::Narrow, {x}, NarrowAttrs{axis, start, length});
}

NodeId Builder::concat(std::vector<NodeId> xs, std::int64_t axis) {
  return g_.add(OpKind::Concat, std::move(xs), AxisAttrs{axis});
}

NodeId Builder::split(NodeId x, std::int64_t axis, std::vector<std::int64_t> sizes) {
  return g_.add(OpKind::Split, {x}, SplitAttrs{axis, std::move(sizes)});
}

NodeId Builder::get(NodeId tuple, std::int64_t index) {
  return g_.add(OpKind::Get, {tuple}, GetAttrs{index});
}

std::vector<NodeId> Builder::parts(NodeId tuple) {
  const Shape& t = g_.shape(tuple);
  if (!t.is_tuple())
    throw ShapeError("parts: " + describe(g_, tuple) + " has type " + t.str() +
                     ", which is not a tuple");
  const std::size_t count = t.parts.size(); // get() appends nodes, so \p t may move
  std::vector<NodeId> out;
  for (std::size_t i = 0; i < count; ++i)
    out.push_back(get(tuple, static_cast<std::int64_t>(i)));
  return out;
}

NodeId Builder::expand(NodeId x, std::vector<Dim> shape) {
  return g_.add(OpKind::Expand, {x}, TargetShapeAttrs{std::move(shape)});
}

NodeId Builder::gather(NodeId table, NodeId indices, std::int64_t axis) {
  return g_.add(OpKind::Gather, {table, indices}, AxisAttrs{axis});
}

NodeId Builder::scatter_add(NodeId target, NodeId indices, NodeId updates, std::int64_t axis) {
  return g_.add(OpKind::ScatterAdd, {target, indices, updates}, AxisAttrs{axis});
}

NodeId Builder::reduce(ReduceOp op, NodeId x, std::vector<std::int64_t> axes, bool keep) {
  return g_.add(OpKind::Reduce, {x}, ReduceAttrs{op, std::move(axes), keep});
}

NodeId Builder::softmax(NodeId x, std::int64_t axis) {
  return g_.add(OpKind::Softmax, {x}, AxisAttrs{axis});
}

NodeId Builder::log_softmax(NodeId x, std::int64_t axis) {
  return g_.add(OpKind::LogSoftmax, {x}, AxisAttrs{axis});
}

NodeId Builder::argmax(NodeId x, std::int64_t axis, bool keep) {
  return g_.add(OpKind::ArgMax, {x}, ArgMaxAttrs{axis, keep});
}

NodeId Builder::layer_norm(NodeId x, NodeId gamma, NodeId beta, double eps) {
  return g_.add(OpKind::LayerNorm, with_optional({x, gamma}, beta), NormAttrs{eps});
}

NodeId Builder::rms_norm(NodeId x, NodeId gamma, double eps) {
  return g_.add(OpKind::RmsNorm, {x, gamma}, NormAttrs{eps});
}

NodeId Builder::attention(NodeId q, NodeId k, NodeId v, AttentionAttrs attrs, NodeId mask) {
  return g_.add(OpKind::Attention, with_optional({q, k, v}, mask), std::move(attrs));
}

NodeId Builder::rope(NodeId x, RopeAttrs attrs) {
  return g_.add(OpKind::Rope, {x}, attrs);
}

NodeId Builder::softmax_cross_entropy(NodeId logits, NodeId labels) {
  return g_.add(OpKind::SoftmaxCrossEntropy, {logits, labels}, NoAttrs{});
}

NodeId Builder::conv2d(NodeId x, NodeId w, NodeId bias, Conv2dAttrs attrs) {
  return g_.add(OpKind::Conv2d, with_optional({x, w}, bias), std::move(attrs));
}

NodeId Builder::pool2d(NodeId x, Pool2dAttrs attrs) {
  return g_.add(OpKind::Pool2d, {x}, std::move(attrs));
}

NodeId Builder::if_(NodeId pred, std::vector<NodeId> captures, Graph then_b, Graph else_b) {
  captures.insert(captures.begin(), pred);
  return g_.add(OpKind::If, std::move(captures),
                IfAttrs{SubGraph{share(std::move(then_b))}, SubGraph{share(std::move(else_b))}});
}

NodeId Builder::while_(std::vector<NodeId> init, Graph cond, Graph body, std::int64_t max_it,
                       std::int64_t output_index) {
  return g_.add(OpKind::While, std::move(init),
                WhileAttrs{SubGraph{share(std::move(cond))}, SubGraph{share(std::move(body))},
                           max_it, output_index});
}

NodeId Builder::custom(std::string op_name, std::vector<NodeId> inputs, std::string params) {
  return g_.add(OpKind::Custom, std::move(inputs),
                CustomAttrs{std::move(op_name), std::move(params)});
}

NodeId Builder::custom_fn(std::vector<NodeId> inputs, Graph body, std::optional<Graph> vjp) {
  CustomFnAttrs a{SubGraph{share(std::move(body))}, SubGraph{}};
  if (vjp)
    a.vjp = SubGraph{share(std::move(*vjp))};
  return g_.add(OpKind::CustomFn, std::move(inputs), std::move(a));
}

NodeId Builder::quantize(NodeId x, QuantAttrs q) {
  return g_.add(OpKind::Quantize, {x}, std::move(q));
}
NodeId Builder::dequantize(NodeId x, QuantAttrs q) {
  return g_.add(OpKind::Dequantize, {x}, std::move(q));
}
NodeId Builder::fake_quantize(NodeId x, QuantAttrs q) {
  return g_.add(OpKind::FakeQuantize, {x}, std::move(q));
}

NodeId Builder::linear(NodeId x, NodeId w, NodeId b, Activation act) {
  return g_.add(OpKind::Linear, with_optional({x, w}, b), LinearAttrs{act});
}

NodeId Builder::attention_block(std::vector<NodeId> inputs, AttentionBlockAttrs attrs) {
  return g_.add(OpKind::AttentionBlock, std::move(inputs), attrs);
}

NodeId Builder::swiglu_ffn(NodeId x, NodeId wg, NodeId wu, NodeId wd) {
  return g_.add(OpKind::SwiGluFfn, {x, wg, wu, wd}, NoAttrs{});
}

NodeId Builder::bert_layer(std::vector<NodeId> inputs, BertLayerAttrs attrs) {
  return g_.add(OpKind::BertLayer, std::move(inputs), attrs);
}

NodeId Builder::llama_block(std::vector<NodeId> inputs, LlamaBlockAttrs attrs) {
  return g_.add(OpKind::LlamaBlock, std::move(inputs), attrs);
}

} // namespace rlx::ir
