// train_data.hpp: the data `rlx train` reads (a directory of .npy files or one .safetensors file)
// and the batches it feeds the training step: rows of feature tensors, or windows of token ids
// (a causal LM's next tokens, a masked LM's masked tokens, a classifier's sequences).
#pragma once

#include "rlx/ir/tensor.hpp"

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

namespace rlx::cli {

/// One batch: every input of the step graph by name.
using Batch = std::map<std::string, ir::Tensor>;

/// Named tensors of a data set: `<name>.npy` files in a directory, or the tensors of one
/// .safetensors file. Throws rlx::Error on a path that is neither.
class DataFiles {
public:
  explicit DataFiles(std::string path);
  /// The tensor \p name, or nullopt when the data set lacks it.
  std::optional<ir::Tensor> find(const std::string& name) const;
  /// Where tensor \p name is (or would be), for messages: "dir/name.npy" or "file.st:name".
  std::string where(const std::string& name) const;

private:
  std::string path_;
  bool dir_ = true;
  std::map<std::string, ir::Tensor> tensors_; ///< the safetensors file's tensors
};

/// Batches for the steps of a run and the fixed evaluation batches. train(step) depends only on
/// the step index and the seed, so a resumed run sees the batches an uninterrupted one would.
class BatchSource {
public:
  virtual ~BatchSource() = default;
  /// Steps in one pass over the training data (at least 1).
  virtual std::int64_t per_epoch() const = 0;
  /// The batch of 0-based step \p step.
  virtual Batch train(std::int64_t step) const = 0;
  std::vector<Batch> eval;         ///< evaluation batches (empty: no evaluation data)
  std::int64_t items_per_step = 0; ///< samples or tokens per step, for the throughput
  std::string items = "samples";   ///< what items_per_step counts
};

/// Rows: every tensor of \p train has the same leading dim N; step batches are \p batch rows in a
/// per-epoch seeded shuffle (file order with \p shuffle false), the last partial batch dropped;
/// \p eval (possibly empty) is cut into up to \p eval_batches batches of \p batch rows in order.
std::unique_ptr<BatchSource> row_source(std::map<std::string, ir::Tensor> train,
                                        std::map<std::string, ir::Tensor> eval, std::int64_t batch,
                                        unsigned seed, bool shuffle, std::int64_t eval_batches);

/// What a token model learns from its ids.
enum class TokenTask : std::uint8_t {
  causal,   ///< next token: input_ids = w[0, seq), labels = w[1, seq] (LLaMA)
  masked,   ///< masked LM: ~15% of the positions (at least one) become mask_id, labels there (BERT)
  classify, ///< one label per sequence (BERT with a classifier head)
};

/// Token ids as read: a stream [T] or sequences [N, L] (int32 or int64, checked in [0, vocab)).
struct TokenIds {
  std::vector<std::int64_t> ids;
  std::int64_t rows = 0, length = 0; ///< rows = 0 for a stream
  std::int64_t max_id = -1;
};

/// Reads tensor \p name of \p files as token ids; throws one line on a wrong dtype or rank, a
/// negative id or (when \p vocab > 0) an id >= vocab.
TokenIds read_token_ids(const DataFiles& files, const std::string& name, std::int64_t vocab);

/// Settings of token_source.
struct TokenSourceOptions {
  TokenTask task = TokenTask::causal;
  std::int64_t batch = 8, seq = 64;
  unsigned seed = 0;
  std::int64_t mask_id = 0;         ///< masked: the id that replaces a masked token
  std::int64_t eval_batches = 8;    ///< at most this many evaluation batches
  bool bert_inputs = false;         ///< add token_type_ids (0) and position_ids (0..seq-1)
  bool shuffle = true;              ///< sequences: a seeded shuffle per epoch (else file order)
  std::vector<std::int64_t> labels; ///< classify: one label per training row
  std::vector<std::int64_t> eval_labels; ///< classify: one label per evaluation row
};

/// Token batches of \p train (and evaluation batches of \p eval when it has ids). Inputs:
/// "input_ids" [batch, seq] i64, plus "labels" ([batch, seq] i64; classify: [batch]) and, for a
/// masked LM, "label_weights" [batch, seq] f32. A stream yields windows at seeded random offsets;
/// sequences yield their first seq (+1) tokens in a per-epoch seeded shuffle. Throws one line when
/// the data is too short for one window or one batch.
std::unique_ptr<BatchSource> token_source(TokenIds train, const TokenIds& eval,
                                          const TokenSourceOptions& o);

} // namespace rlx::cli
