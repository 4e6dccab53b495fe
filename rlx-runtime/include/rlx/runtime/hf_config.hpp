// hf_config.hpp: a HuggingFace model folder's config.json read into rlx's model configs.
//
// Supported: model_type "bert" (BertModel and its task heads; rlx computes the encoder) and
// "llama" (LlamaModel / LlamaForCausalLM). Every field that changes the computation is read or
// rejected: an unsupported architecture, activation, rope_scaling, attention bias, head_dim or a
// field rlx does not know is an Error naming the file and the field, never a silent default.
// Fields HF documents as defaults (layer_norm_eps, rope_theta, ...) take HF's default when absent.
#pragma once

#include "rlx/runtime/models.hpp"

#include <filesystem>
#include <optional>
#include <string>
#include <vector>

namespace rlx::runtime {

/// What config.json describes.
struct HfConfig {
  std::string model_type;                 ///< "bert" or "llama"
  std::vector<std::string> architectures; ///< e.g. "LlamaForCausalLM" (may be empty)
  std::optional<BertConfig> bert;         ///< set when model_type is "bert"
  std::optional<LlamaConfig> llama;       ///< set when model_type is "llama"
  /// max_position_embeddings (both kinds; for llama it bounds the sequence length HF was
  /// trained for, for bert it is the position table's row count).
  int max_positions = 0;
};

/// Parses config.json text; \p what names the file in messages. Throws Error with one line naming
/// \p what and the offending field.
HfConfig parse_hf_config(const std::string& text, const std::string& what = "config.json");

/// Reads `<dir>/config.json`; throws IoError when it cannot be read, Error when it is unsupported.
HfConfig read_hf_config(const std::filesystem::path& dir);

} // namespace rlx::runtime
