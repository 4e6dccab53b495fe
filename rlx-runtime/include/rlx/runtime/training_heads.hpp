// training_heads.hpp: task heads and token losses that turn the built-in encoders and decoders
// (models.hpp) into trainable graphs: BERT sequence classification and masked-LM heads (the
// HuggingFace BertForSequenceClassification / BertForMaskedLM layouts) and a token-level softmax
// cross-entropy (a causal LM's next-token loss, a masked LM's loss over masked positions).
#pragma once

#include "rlx/ir/graph.hpp"

#include <cstdint>

namespace rlx::runtime {

/// Name of the per-token label input of with_token_loss ([batch, seq] i64).
inline constexpr const char* kTokenLabels = "labels";
/// Name of the per-token weight input of a weighted with_token_loss ([batch, seq] f32).
inline constexpr const char* kTokenLabelWeights = "label_weights";

/// \p encoder (a build_bert graph, static shapes, output "y" [batch, seq, hidden]) followed by the
/// HF BertForSequenceClassification head: the pooler (tanh(dense) of the first token,
/// "pooler.dense.weight/bias") and a classifier Linear ("classifier.weight/bias"). Output "y":
/// logits [batch, classes]. Throws Error on a non-static or non-[B, S, H] output or classes < 1.
ir::Graph add_classifier_head(const ir::Graph& encoder, std::int64_t classes);

/// \p encoder (a build_bert graph with embeddings, static shapes) followed by the HF
/// BertForMaskedLM head: "cls.predictions.transform.dense" + GELU + "...transform.LayerNorm"
/// (epsilon \p eps), then the decoder tied to "embeddings.word_embeddings.weight" plus
/// "cls.predictions.bias". Output "y": logits [batch, seq, vocab]. Throws Error when the encoder
/// has no word-embedding table.
ir::Graph add_mlm_head(const ir::Graph& encoder, double eps = 1e-12);

/// \p model with its output 0 (logits [d0, ..., dk, vocab], static, float) replaced by the mean
/// softmax cross-entropy over every position against the new Input kTokenLabels ([d0, ..., dk]
/// i64). \p weighted adds the Input kTokenLabelWeights (same shape, f32) and takes
/// sum(w * xent) / sum(w) instead (a masked LM: weight 1 at masked positions, 0 elsewhere; the
/// caller keeps sum(w) > 0). Throws Error on a symbolic, non-float or rank < 2 output.
ir::Graph with_token_loss(const ir::Graph& model, bool weighted = false);

} // namespace rlx::runtime
