// models.hpp: builders of the reference workloads (BERT encoder, LLaMA decoder, MLP) as HIR graphs.
//
// Parameter names and layouts follow the HuggingFace checkpoints ([out, in] weights), so a real
// `model.safetensors` loads with Executable::load_params; input and output names follow the peer
// anchor models (hidden states in as "x", result out as "y") unless token embeddings are enabled.
// Batch and sequence dims are symbolic ("batch", "seq") by default: one graph serves every shape
// and the runtime compiles once per binding.
#pragma once

#include "rlx/ir/attrs.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <string>
#include <vector>

namespace rlx::runtime {

/// Upper bounds on model sizes, checked by the builders, the HF config reader and the rlx command.
/// Each is far above any published model of its kind; a value past one is a typo or an attack
/// (a 100001-layer graph from a 100-byte file), reported as an Error before any graph is built.
struct ModelLimits {
  static constexpr int layers = 1024;                ///< transformer layers
  static constexpr int hidden = 65536;               ///< hidden size
  static constexpr int heads = 4096;                 ///< attention (and key/value) heads
  static constexpr int ffn = 1 << 20;                ///< feed-forward width
  static constexpr int vocab = 1 << 24;              ///< vocabulary rows
  static constexpr int max_positions = 1 << 24;      ///< position table rows
  static constexpr int type_vocab = 1 << 16;         ///< token-type table rows
  static constexpr std::int64_t mlp_width = 1 << 24; ///< one MLP layer width
  static constexpr std::size_t mlp_layers = 1024;    ///< MLP widths (layers + 1)
};

/// A BERT encoder: post-norm layers (HF BertLayer) with optional embeddings and padding mask.
///
/// Without embeddings the input is "x" [batch, seq, hidden] f32. With embeddings the inputs are
/// "input_ids", "token_type_ids" and "position_ids" ([batch, seq] i64), summed through the word /
/// token-type / position tables and normalised by the embedding LayerNorm. With a padding mask the
/// extra input "attention_mask" [batch, seq] i64 (nonzero = attend) masks keys. The output "y" is
/// the last hidden state [batch, seq, hidden].
struct BertConfig {
  int layers = 4;
  int hidden = 256;
  int heads = 4;
  int ffn = 1024;
  double eps = 1e-12;                        ///< LayerNorm epsilon (HF default)
  ir::Activation act = ir::Activation::gelu; ///< FFN activation (erf GELU, as HF "gelu")
  bool padding_mask = false;                 ///< add the "attention_mask" input
  bool embeddings = false;                   ///< token inputs and embedding tables
  int vocab = 30522;                         ///< word embedding rows (with embeddings)
  int max_positions = 512;                   ///< position embedding rows (with embeddings)
  int type_vocab = 2;                        ///< token-type embedding rows (with embeddings)
  std::string prefix;                        ///< parameter name prefix, e.g. "bert."
  ir::Dim batch = ir::Dim::sym("batch");     ///< batch dim (symbolic or static)
  ir::Dim seq = ir::Dim::sym("seq");         ///< sequence dim (symbolic or static)
};

/// A LLaMA decoder: pre-norm blocks (RMSNorm, rotate-half RoPE, causal grouped-query attention,
/// SwiGLU) and a final RMSNorm, as HF LlamaModel.
///
/// Without embeddings the input is "x" [batch, seq, hidden] f32; with embeddings it is
/// "input_ids" [batch, seq] i64. The output "y" is the final normed hidden state, or the logits
/// [batch, seq, vocab] when lm_head is set.
struct LlamaConfig {
  int layers = 4;
  int hidden = 512;
  int heads = 8;
  int kv_heads = 8;
  int ffn = 1376;
  double eps = 1e-6;           ///< RMSNorm epsilon
  double rope_theta = 10000.0; ///< RoPE base
  bool embeddings = false;     ///< "input_ids" input and the embed_tokens table
  bool lm_head = false;        ///< project to the vocabulary ("lm_head.weight")
  /// With lm_head: project with the embed_tokens table (HF tie_word_embeddings) instead of a
  /// separate "lm_head.weight". Needs embeddings.
  bool tie_word_embeddings = false;
  int vocab = 32000;  ///< vocabulary size (with embeddings or lm_head)
  std::string prefix; ///< parameter name prefix, e.g. "model."
  ir::Dim batch = ir::Dim::sym("batch");
  ir::Dim seq = ir::Dim::sym("seq");
};

/// A multi-layer perceptron: Linear layers "fc1", "fc2", ... with an activation between them.
/// Input "x" [batch, dims.front()], output "y" [batch, dims.back()].
struct MlpConfig {
  std::vector<std::int64_t> dims{784, 512, 512, 10}; ///< layer widths, input first
  ir::Activation act = ir::Activation::relu;         ///< between layers (not after the last)
  ir::Dim batch = ir::Dim::sym("batch");
};

/// Builds the BERT encoder HIR graph; throws Error naming the field of an invalid config.
ir::Graph build_bert(const BertConfig& cfg);
/// Builds the LLaMA decoder HIR graph; throws Error naming the field of an invalid config.
ir::Graph build_llama(const LlamaConfig& cfg);
/// Builds the MLP HIR graph; throws Error naming the field of an invalid config.
ir::Graph build_mlp(const MlpConfig& cfg);

} // namespace rlx::runtime
