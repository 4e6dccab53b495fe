// checkpoint.hpp: safetensors weights in one file or sharded over several, as HuggingFace saves
// them (model.safetensors, or model.safetensors.index.json naming model-0000i-of-0000n shards).
#pragma once

#include "rlx/runtime/executable.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlx::runtime {

/// The weights of a model, in one safetensors file or sharded over several. Every header (and the
/// index, when sharded) is read and validated when it is opened; tensor data is read on load.
class Checkpoint {
public:
  /// Opens \p path: a `.safetensors` file, a `*.safetensors.index.json` index, or a folder holding
  /// `model.safetensors` or `model.safetensors.index.json`. A sharded index must map every tensor
  /// to a plain file name beside it, and each shard must hold exactly the tensors mapped to it.
  /// Throws IoError naming the file and the problem.
  explicit Checkpoint(const std::filesystem::path& path);
  ~Checkpoint();
  Checkpoint(Checkpoint&&) noexcept;
  Checkpoint& operator=(Checkpoint&&) noexcept;

  /// Every tensor's entry over all files, in name order.
  const std::vector<SafetensorsEntry>& entries() const;
  /// The entry named \p name, or null.
  const SafetensorsEntry* find(const std::string& name) const;
  /// The safetensors files (one, or the shards in name order).
  std::vector<std::filesystem::path> files() const;
  /// The path as given (for messages).
  const std::string& path() const;

  /// Loads \p exe's Params with the rules of Executable::load_params (\p opts: prefix, legacy
  /// names, what may be missing or extra, float conversion). Every missing, unexpected or
  /// mistyped weight over all shards is reported at once, in one line, before any data is read.
  void load_into(Executable& exe, const LoadOptions& opts) const;

private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// The tensor name Executable::load_params reads for Param \p name: \p prefix + name when the
/// checkpoint has it, else the bare name (HF keeps lm_head.weight outside "model."), each also in
/// the legacy LayerNorm.gamma / .beta spelling; prefix + name when none is present.
std::string checkpoint_key(const std::string& name, const std::string& prefix,
                           const std::function<bool(const std::string&)>& has);

} // namespace rlx::runtime
