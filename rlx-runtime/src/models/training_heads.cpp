// training_heads.cpp: BERT classification / masked-LM heads and the token cross-entropy loss.
#include "rlx/runtime/training_heads.hpp"

#include "rlx/ir/builder.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/verify.hpp"

namespace rlx::runtime {

using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::Shape;

namespace {

/// The encoder's output 0 as [B, S, H] with static dims; throws naming \p what otherwise.
Shape hidden_state(const ir::Graph& g, const char* what) {
  if (g.outputs().empty())
    throw Error(std::string(what) + ": the model has no output");
  const Shape t = g.shape(g.outputs()[0]);
  if (t.rank() != 3 || !t.is_static() || !ir::is_float(t.dtype))
    throw Error(std::string(what) +
                ": needs a static float hidden state [batch, seq, hidden], got " + t.str());
  return t;
}

/// The param \p name of \p g (with the graph's prefix, found by suffix), or an invalid id.
NodeId find_param_by_suffix(const ir::Graph& g, const std::string& suffix) {
  for (NodeId p : g.params()) {
    const std::string& n = g.node(p).attr<ir::LeafAttrs>().name;
    if (n == suffix || n.ends_with("." + suffix))
      return p;
  }
  return {};
}

} // namespace

ir::Graph add_classifier_head(const ir::Graph& encoder, std::int64_t classes) {
  const Shape t = hidden_state(encoder, "classifier head");
  if (classes < 1)
    throw Error("classifier head: classes must be >= 1, got " + std::to_string(classes));
  ir::Graph g = encoder;
  g.set_aliases({});
  ir::Builder b(g);
  const std::int64_t batch = t[0].size(), h = t[2].size();
  const NodeId y = g.outputs()[0];
  const NodeId first = b.reshape(b.narrow(y, 1, 0, 1), {Dim(batch), Dim(h)}); // [CLS]
  const NodeId pooled = b.tanh(b.linear(first, b.param("pooler.dense.weight", Shape::of({h, h})),
                                        b.param("pooler.dense.bias", Shape::of({h}))));
  const NodeId logits = b.op(ir::OpKind::Linear,
                             {pooled, b.param("classifier.weight", Shape::of({classes, h})),
                              b.param("classifier.bias", Shape::of({classes}))},
                             ir::LinearAttrs{}, "y");
  g.set_outputs({logits});
  g.compact();
  ir::verify(g);
  return g;
}

ir::Graph add_mlm_head(const ir::Graph& encoder, double eps) {
  const Shape t = hidden_state(encoder, "masked-LM head");
  const NodeId table = find_param_by_suffix(encoder, "embeddings.word_embeddings.weight");
  if (!table.valid())
    throw Error("masked-LM head: the model has no word embeddings (build it with embeddings)");
  ir::Graph g = encoder;
  g.set_aliases({});
  ir::Builder b(g);
  const std::int64_t h = t[2].size();
  const std::int64_t vocab = g.shape(table)[0].size();
  const std::string c = "cls.predictions.";
  NodeId x = b.linear(g.outputs()[0], b.param(c + "transform.dense.weight", Shape::of({h, h})),
                      b.param(c + "transform.dense.bias", Shape::of({h})), ir::Activation::gelu);
  x = b.layer_norm(x, b.param(c + "transform.LayerNorm.weight", Shape::of({h})),
                   b.param(c + "transform.LayerNorm.bias", Shape::of({h})), eps);
  const NodeId logits =
      b.op(ir::OpKind::Linear, {x, table, b.param(c + "bias", Shape::of({vocab}))},
           ir::LinearAttrs{}, "y");
  g.set_outputs({logits});
  g.compact();
  ir::verify(g);
  return g;
}

ir::Graph with_token_loss(const ir::Graph& model, bool weighted) {
  if (model.outputs().empty())
    throw Error("token loss: the model has no output");
  ir::Graph g = model;
  g.set_aliases({});
  ir::Builder b(g);
  const NodeId y = g.outputs()[0];
  const Shape t = g.shape(y);
  if (!t.is_static() || !ir::is_float(t.dtype) || t.rank() < 2)
    throw Error("token loss: needs static float logits [..., vocab], got " + t.str());
  std::vector<Dim> rows_dims(t.dims.begin(), t.dims.end() - 1);
  std::int64_t rows = 1;
  for (const Dim& d : rows_dims)
    rows *= d.size();
  const std::int64_t vocab = t[t.rank() - 1].size();
  const NodeId labels = b.input(kTokenLabels, Shape(rows_dims, DType::i64));
  const NodeId xent = b.softmax_cross_entropy(b.reshape(y, {Dim(rows), Dim(vocab)}),
                                              b.reshape(labels, {Dim(rows)}));
  NodeId loss;
  if (weighted) {
    const NodeId w = b.reshape(b.input(kTokenLabelWeights, Shape(rows_dims, t.dtype)), {Dim(rows)});
    // sum(xent * (w / sum(w))): the weights are normalised first. The same value as
    // sum(w * xent) / sum(w), which rlx-autodiff fails to differentiate after a one-layer BERT
    // masked-LM head ("the VJP rule of layer_norm ... gave operand 1 a gradient of type []").
    loss = b.sum(b.mul(xent, b.div(w, b.sum(w, {0}))), {0});
  } else {
    loss = b.mean(xent, {0});
  }
  g.set_outputs({loss});
  g.compact();
  ir::verify(g);
  return g;
}

} // namespace rlx::runtime
