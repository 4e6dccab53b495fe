// llama.cpp: the LLaMA decoder builder (HuggingFace LlamaModel names and layouts).
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

void check(const LlamaConfig& c) {
  detail::require_in_range("llama", "layers", c.layers, ModelLimits::layers);
  detail::require_in_range("llama", "hidden", c.hidden, ModelLimits::hidden);
  detail::require_in_range("llama", "heads", c.heads, ModelLimits::heads);
  detail::require_in_range("llama", "kv_heads", c.kv_heads, ModelLimits::heads);
  detail::require_in_range("llama", "ffn", c.ffn, ModelLimits::ffn);
  detail::require_multiple("llama", "hidden", c.hidden, "heads", c.heads);
  detail::require_multiple("llama", "heads", c.heads, "kv_heads", c.kv_heads);
  detail::require((c.hidden / c.heads) % 2 == 0, "llama",
                  "head_dim (hidden / heads = " + std::to_string(c.hidden / c.heads) +
                      ") must be even for RoPE");
  detail::require(c.eps > 0 && std::isfinite(c.eps), "llama", "eps must be positive");
  detail::require(c.rope_theta > 0 && std::isfinite(c.rope_theta), "llama",
                  "rope_theta must be positive");
  if (c.embeddings || c.lm_head)
    detail::require_in_range("llama", "vocab", c.vocab, ModelLimits::vocab);
  detail::require(!c.tie_word_embeddings || (c.lm_head && c.embeddings), "llama",
                  "tie_word_embeddings needs lm_head and embeddings");
}

} // namespace

ir::Graph build_llama(const LlamaConfig& c) {
  check(c);
  ir::Graph g("llama");
  ir::Builder b(g);
  const std::string& p = c.prefix;
  const std::int64_t h = c.hidden, f = c.ffn;
  const std::int64_t kv = h / c.heads * c.kv_heads;
  auto param = [&](const std::string& name, std::vector<std::int64_t> dims) {
    return b.param(p + name, Shape::of(dims));
  };

  NodeId x, table;
  if (c.embeddings) {
    NodeId ids = b.input("input_ids", Shape({c.batch, c.seq}, DType::i64));
    table = param("embed_tokens.weight", {c.vocab, h});
    x = b.gather(table, ids);
  } else {
    x = b.input("x", Shape({c.batch, c.seq, Dim(h)}, DType::f32));
  }

  ir::LlamaBlockAttrs attrs;
  attrs.num_heads = c.heads;
  attrs.num_kv_heads = c.kv_heads;
  attrs.eps = c.eps;
  attrs.rope_theta = c.rope_theta;
  for (int i = 0; i < c.layers; ++i) {
    const std::string l = "layers." + std::to_string(i) + ".";
    std::vector<NodeId> in{x,
                           param(l + "input_layernorm.weight", {h}),
                           param(l + "self_attn.q_proj.weight", {h, h}),
                           param(l + "self_attn.k_proj.weight", {kv, h}),
                           param(l + "self_attn.v_proj.weight", {kv, h}),
                           param(l + "self_attn.o_proj.weight", {h, h}),
                           param(l + "post_attention_layernorm.weight", {h}),
                           param(l + "mlp.gate_proj.weight", {f, h}),
                           param(l + "mlp.up_proj.weight", {f, h}),
                           param(l + "mlp.down_proj.weight", {h, f})};
    x = b.op(ir::OpKind::LlamaBlock, std::move(in), attrs, "layer" + std::to_string(i));
  }
  NodeId norm = param("norm.weight", {h});
  if (c.lm_head) {
    x = b.op(ir::OpKind::RmsNorm, {x, norm}, ir::NormAttrs{c.eps}, "norm");
    // HF keeps lm_head outside the "model." prefix; tied, it is the embedding table.
    NodeId w = c.tie_word_embeddings ? table : b.param("lm_head.weight", Shape::of({c.vocab, h}));
    x = b.op(ir::OpKind::Linear, {x, w}, ir::LinearAttrs{}, "y");
  } else {
    x = b.op(ir::OpKind::RmsNorm, {x, norm}, ir::NormAttrs{c.eps}, "y");
  }
  b.output(x);
  return g;
}

} // namespace rlx::runtime
