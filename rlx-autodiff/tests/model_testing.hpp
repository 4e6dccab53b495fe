// model_testing.hpp: the model pieces the whole-model gradient tests build (models_test, cpu_test,
// vmap_test): a LLaMA block with grouped-query attention and a cross-entropy classifier head.
#pragma once

#include "rlx/ir/builder.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rlx::autodiff::testing {

/// Makes a weight leaf of a model: its name and dims (the caller picks Param or Input and dtype).
using MakeWeight = std::function<ir::NodeId(const std::string&, std::vector<std::int64_t>)>;

/// The sizes of a LLaMA block with grouped-query attention.
struct GqaSizes {
  std::int64_t hidden = 0, heads = 0, kv_heads = 0, ffn = 0;
};

/// A HIR llama_block of \p x with its ten weights (HuggingFace names and [out, in] layouts) made
/// by \p weight.
inline ir::NodeId gqa_llama_block(ir::Builder& b, ir::NodeId x, const GqaSizes& s,
                                  const MakeWeight& weight) {
  const std::int64_t h = s.hidden, f = s.ffn, kv = s.kv_heads * (s.hidden / s.heads);
  ir::LlamaBlockAttrs a;
  a.num_heads = s.heads;
  a.num_kv_heads = s.kv_heads;
  return b.llama_block({x, weight("attn_norm", {h}), weight("wq", {h, h}), weight("wk", {kv, h}),
                        weight("wv", {kv, h}), weight("wo", {h, h}), weight("ffn_norm", {h}),
                        weight("w_gate", {f, h}), weight("w_up", {f, h}), weight("w_down", {h, f})},
                       a);
}

/// The mean softmax cross-entropy of a linear head ("head_w" [classes, hidden], of \p dtype) over
/// \p x reshaped to [tokens, hidden], against an i64 "labels" input of [tokens].
inline ir::NodeId xent_head(ir::Builder& b, ir::NodeId x, std::int64_t tokens, std::int64_t hidden,
                            std::int64_t classes, ir::DType dtype = ir::DType::f32) {
  const ir::NodeId w = b.param("head_w", ir::Shape::of({classes, hidden}, dtype));
  const ir::NodeId labels = b.input("labels", ir::Shape::of({tokens}, ir::DType::i64));
  const ir::NodeId logits =
      b.matmul(b.reshape(x, {ir::Dim(tokens), ir::Dim(hidden)}), w, false, true);
  return b.mean(b.softmax_cross_entropy(logits, labels), {});
}

} // namespace rlx::autodiff::testing
