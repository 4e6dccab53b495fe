// bert.cpp: the BERT encoder builder (HuggingFace BertModel names and layouts).
#include "config_check.hpp"
#include "rlx/ir/builder.hpp"
#include "rlx/runtime/models.hpp"

#include <cmath>

namespace rlx::runtime {

using ir::Dim;
using ir::DType;
using ir::NodeId;
using ir::Shape;

namespace {

void check(const BertConfig& c) {
  detail::require_in_range("bert", "layers", c.layers, ModelLimits::layers);
  detail::require_in_range("bert", "hidden", c.hidden, ModelLimits::hidden);
  detail::require_in_range("bert", "heads", c.heads, ModelLimits::heads);
  detail::require_in_range("bert", "ffn", c.ffn, ModelLimits::ffn);
  detail::require_multiple("bert", "hidden", c.hidden, "heads", c.heads);
  detail::require(c.eps > 0 && std::isfinite(c.eps), "bert", "eps must be positive");
  if (c.embeddings) {
    detail::require_in_range("bert", "vocab", c.vocab, ModelLimits::vocab);
    detail::require_in_range("bert", "max_positions", c.max_positions, ModelLimits::max_positions);
    detail::require_in_range("bert", "type_vocab", c.type_vocab, ModelLimits::type_vocab);
  }
}

} // namespace

ir::Graph build_bert(const BertConfig& c) {
  check(c);
  ir::Graph g("bert");
  ir::Builder b(g);
  const std::string& p = c.prefix;
  const std::int64_t h = c.hidden, f = c.ffn;
  auto param = [&](const std::string& name, std::vector<std::int64_t> dims) {
    return b.param(p + name, Shape::of(dims));
  };

  NodeId x;
  if (c.embeddings) {
    const Shape ids({c.batch, c.seq}, DType::i64);
    NodeId input_ids = b.input("input_ids", ids);
    NodeId token_types = b.input("token_type_ids", ids);
    NodeId positions = b.input("position_ids", ids);
    const std::string e = "embeddings.";
    NodeId words = b.gather(param(e + "word_embeddings.weight", {c.vocab, h}), input_ids);
    NodeId pos = b.gather(param(e + "position_embeddings.weight", {c.max_positions, h}), positions);
    NodeId types =
        b.gather(param(e + "token_type_embeddings.weight", {c.type_vocab, h}), token_types);
    x = b.add(b.add(words, types), pos);
    x = b.layer_norm(x, param(e + "LayerNorm.weight", {h}), param(e + "LayerNorm.bias", {h}),
                     c.eps);
  } else {
    x = b.input("x", Shape({c.batch, c.seq, Dim(h)}, DType::f32));
  }
  NodeId mask;
  if (c.padding_mask)
    mask = b.input("attention_mask", Shape({c.batch, c.seq}, DType::i64));

  ir::BertLayerAttrs attrs;
  attrs.num_heads = c.heads;
  attrs.eps = c.eps;
  attrs.act = c.act;
  attrs.padding_mask = c.padding_mask;
  for (int i = 0; i < c.layers; ++i) {
    const std::string l = "encoder.layer." + std::to_string(i) + ".";
    const std::string a = l + "attention.";
    std::vector<NodeId> in{x};
    for (const char* proj : {"query", "key", "value"}) {
      in.push_back(param(a + "self." + proj + ".weight", {h, h}));
      in.push_back(param(a + "self." + proj + ".bias", {h}));
    }
    in.push_back(param(a + "output.dense.weight", {h, h}));
    in.push_back(param(a + "output.dense.bias", {h}));
    in.push_back(param(a + "output.LayerNorm.weight", {h}));
    in.push_back(param(a + "output.LayerNorm.bias", {h}));
    in.push_back(param(l + "intermediate.dense.weight", {f, h}));
    in.push_back(param(l + "intermediate.dense.bias", {f}));
    in.push_back(param(l + "output.dense.weight", {h, f}));
    in.push_back(param(l + "output.dense.bias", {h}));
    in.push_back(param(l + "output.LayerNorm.weight", {h}));
    in.push_back(param(l + "output.LayerNorm.bias", {h}));
    if (c.padding_mask)
      in.push_back(mask);
    x = b.op(ir::OpKind::BertLayer, std::move(in), attrs, "layer" + std::to_string(i));
  }
  // The encoder's last hidden state, named "y" by a no-op reshape (a view: no kernel, no copy).
  b.output(b.op(ir::OpKind::Reshape, {x}, ir::TargetShapeAttrs{g.shape(x).dims}, "y"));
  return g;
}

} // namespace rlx::runtime
