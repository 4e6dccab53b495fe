// train_data.cpp: the data sets and batch sources of `rlx train`.
#include "train_data.hpp"

#include "rlx/ir/error.hpp"
#include "rlx/runtime/npy.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <algorithm>
#include <filesystem>
#include <numeric>
#include <random>

namespace rlx::cli {

namespace fs = std::filesystem;

DataFiles::DataFiles(std::string path) : path_(std::move(path)) {
  if (fs::is_directory(path_))
    return;
  if (!fs::is_regular_file(path_))
    throw Error("--data: '" + path_ + "' is neither a directory of .npy files nor a file");
  if (!path_.ends_with(".safetensors"))
    throw Error("--data: '" + path_ + "' must be a directory of .npy files or a .safetensors file");
  dir_ = false;
  tensors_ = runtime::read_safetensors(path_).tensors;
}

std::optional<ir::Tensor> DataFiles::find(const std::string& name) const {
  if (!dir_) {
    auto it = tensors_.find(name);
    return it == tensors_.end() ? std::nullopt : std::optional<ir::Tensor>(it->second);
  }
  const fs::path p = fs::path(path_) / (name + ".npy");
  if (!fs::exists(p))
    return std::nullopt;
  return runtime::read_npy(p);
}

std::string DataFiles::where(const std::string& name) const {
  return dir_ ? (fs::path(path_) / (name + ".npy")).string() : path_ + ":" + name;
}

namespace {

/// Rows [begin, begin + n) of \p order of \p t, stacked.
ir::Tensor take_rows(const ir::Tensor& t, const std::vector<std::int64_t>& order, std::size_t begin,
                     std::int64_t n) {
  std::vector<ir::Dim> dims = t.shape().dims;
  const std::int64_t rows = dims[0].size();
  const std::size_t row_bytes =
      t.nbytes() / static_cast<std::size_t>(std::max<std::int64_t>(rows, 1));
  dims[0] = ir::Dim(n);
  ir::Tensor out(ir::Shape(dims, t.dtype()));
  const std::byte* src = t.raw();
  std::byte* dst = out.raw();
  for (std::int64_t r = 0; r < n; ++r)
    std::copy_n(src + static_cast<std::size_t>(order[begin + static_cast<std::size_t>(r)]) *
                          row_bytes,
                row_bytes, dst + static_cast<std::size_t>(r) * row_bytes);
  return out;
}

std::vector<std::int64_t> epoch_order(std::int64_t rows, unsigned seed, std::int64_t epoch,
                                      bool shuffle) {
  std::vector<std::int64_t> order(static_cast<std::size_t>(rows));
  std::iota(order.begin(), order.end(), 0);
  std::mt19937 rng(seed * 1000003u + static_cast<unsigned>(epoch));
  if (shuffle)
    std::shuffle(order.begin(), order.end(), rng);
  return order;
}

class RowSource final : public BatchSource {
public:
  RowSource(std::map<std::string, ir::Tensor> train, std::int64_t batch, unsigned seed,
            bool shuffle)
      : train_(std::move(train)), batch_(batch), seed_(seed), shuffle_(shuffle) {
    rows_ = train_.begin()->second.shape()[0].size();
  }
  std::int64_t per_epoch() const override { return rows_ / batch_; }
  Batch train(std::int64_t step) const override {
    const std::int64_t epoch = step / per_epoch();
    if (epoch != epoch_) {
      order_ = epoch_order(rows_, seed_, epoch, shuffle_);
      epoch_ = epoch;
    }
    Batch b;
    for (const auto& [name, t] : train_)
      b[name] =
          take_rows(t, order_, static_cast<std::size_t>((step % per_epoch()) * batch_), batch_);
    return b;
  }

private:
  std::map<std::string, ir::Tensor> train_;
  std::int64_t batch_, rows_ = 0;
  unsigned seed_;
  bool shuffle_;
  mutable std::int64_t epoch_ = -1;
  mutable std::vector<std::int64_t> order_;
};

} // namespace

std::unique_ptr<BatchSource> row_source(std::map<std::string, ir::Tensor> train,
                                        std::map<std::string, ir::Tensor> eval, std::int64_t batch,
                                        unsigned seed, bool shuffle, std::int64_t eval_batches) {
  if (train.empty())
    throw Error("--data: no training tensors");
  const std::int64_t rows =
      train.begin()->second.shape().rank() > 0 ? train.begin()->second.shape()[0].size() : 0;
  for (const auto& [name, t] : train)
    if (t.shape().rank() < 1 || t.shape()[0].size() != rows)
      throw Error("--data: training tensor '" + name + "' is " + t.shape().str() +
                  ", expected a leading dim of " + std::to_string(rows) + " rows");
  if (batch < 1 || batch > rows)
    throw Error("--batch must be in [1, " + std::to_string(rows) + "], got " +
                std::to_string(batch));
  auto src = std::make_unique<RowSource>(std::move(train), batch, seed, shuffle);
  src->items_per_step = batch;
  if (!eval.empty()) {
    const std::int64_t erows = eval.begin()->second.shape()[0].size();
    std::vector<std::int64_t> order(static_cast<std::size_t>(erows));
    std::iota(order.begin(), order.end(), 0);
    for (std::int64_t k = 0; k < std::min(erows / batch, eval_batches); ++k) {
      Batch b;
      for (const auto& [name, t] : eval)
        b[name] = take_rows(t, order, static_cast<std::size_t>(k * batch), batch);
      src->eval.push_back(std::move(b));
    }
  }
  return src;
}

TokenIds read_token_ids(const DataFiles& files, const std::string& name, std::int64_t vocab) {
  TokenIds r;
  std::optional<ir::Tensor> t = files.find(name);
  if (!t)
    return r;
  const std::string at = files.where(name);
  if (t->dtype() != ir::DType::i32 && t->dtype() != ir::DType::i64)
    throw Error("--data: " + at + " must hold int32 or int64 token ids, got " + t->shape().str());
  if (t->shape().rank() != 1 && t->shape().rank() != 2)
    throw Error("--data: " + at + " must be a stream [T] or sequences [N, L] of token ids, got " +
                t->shape().str());
  if (t->shape().rank() == 2) {
    r.rows = t->shape()[0].size();
    r.length = t->shape()[1].size();
  } else {
    r.length = t->shape()[0].size();
  }
  r.ids.resize(static_cast<std::size_t>(t->numel()));
  for (std::int64_t i = 0; i < t->numel(); ++i) {
    const std::int64_t v = t->get_i64(i);
    if (v < 0 || (vocab > 0 && v >= vocab))
      throw Error("--data: token id " + std::to_string(v) + " at element " + std::to_string(i) +
                  " of " + at + " is outside [0, " +
                  (vocab > 0 ? std::to_string(vocab) + ") (--vocab)" : "inf)"));
    r.ids[static_cast<std::size_t>(i)] = v;
    r.max_id = std::max(r.max_id, v);
  }
  return r;
}

namespace {

class TokenSource final : public BatchSource {
public:
  TokenSource(TokenIds ids, const TokenSourceOptions& o) : ids_(std::move(ids)), o_(o) {
    window_ = o.seq + (o.task == TokenTask::causal ? 1 : 0);
  }
  std::int64_t window() const { return window_; }

  std::int64_t per_epoch() const override {
    if (ids_.rows > 0)
      return ids_.rows / o_.batch;
    return std::max<std::int64_t>(1, (ids_.length - 1) / (o_.batch * o_.seq));
  }

  Batch train(std::int64_t step) const override {
    std::vector<std::int64_t> starts(static_cast<std::size_t>(o_.batch));
    std::vector<std::int64_t> rows(static_cast<std::size_t>(o_.batch), -1);
    if (ids_.rows > 0) {
      const std::int64_t epoch = step / per_epoch();
      if (epoch != epoch_) {
        order_ = epoch_order(ids_.rows, o_.seed, epoch, o_.shuffle);
        epoch_ = epoch;
      }
      for (std::int64_t r = 0; r < o_.batch; ++r) {
        rows[static_cast<std::size_t>(r)] =
            order_[static_cast<std::size_t>((step % per_epoch()) * o_.batch + r)];
        starts[static_cast<std::size_t>(r)] = rows[static_cast<std::size_t>(r)] * ids_.length;
      }
    } else {
      std::mt19937_64 rng(o_.seed * 1000003ull + static_cast<std::uint64_t>(step));
      std::uniform_int_distribution<std::int64_t> u(0, ids_.length - window_);
      for (auto& s : starts)
        s = u(rng);
    }
    return make(ids_, starts, rows, o_.labels, 0x9e3779b9u + static_cast<std::uint64_t>(step));
  }

  /// The batch of windows starting at \p starts (rows: their sequence index for classify labels);
  /// \p mask_seed seeds the masked-LM positions.
  Batch make(const TokenIds& ids, const std::vector<std::int64_t>& starts,
             const std::vector<std::int64_t>& rows, const std::vector<std::int64_t>& labels,
             std::uint64_t mask_seed) const {
    const std::int64_t b = o_.batch, s = o_.seq;
    ir::Tensor in(ir::Shape({b, s}, ir::DType::i64));
    auto iv = in.data<std::int64_t>();
    Batch out;
    for (std::int64_t r = 0; r < b; ++r)
      for (std::int64_t j = 0; j < s; ++j)
        iv[static_cast<std::size_t>(r * s + j)] =
            ids.ids[static_cast<std::size_t>(starts[static_cast<std::size_t>(r)] + j)];
    if (o_.task == TokenTask::causal) {
      ir::Tensor lab(ir::Shape({b, s}, ir::DType::i64));
      auto lv = lab.data<std::int64_t>();
      for (std::int64_t r = 0; r < b; ++r)
        for (std::int64_t j = 0; j < s; ++j)
          lv[static_cast<std::size_t>(r * s + j)] =
              ids.ids[static_cast<std::size_t>(starts[static_cast<std::size_t>(r)] + j + 1)];
      out["labels"] = lab;
    } else if (o_.task == TokenTask::masked) {
      ir::Tensor lab = in.clone(); // labels: the original ids (weight 0 where not masked)
      ir::Tensor w(ir::Shape({b, s}, ir::DType::f32));
      auto wv = w.data<float>();
      std::mt19937_64 rng(o_.seed * 7919ull + mask_seed);
      std::bernoulli_distribution pick(0.15);
      std::uniform_int_distribution<std::int64_t> any(0, s - 1);
      for (std::int64_t r = 0; r < b; ++r) {
        bool some = false;
        for (std::int64_t j = 0; j < s; ++j)
          if (pick(rng)) {
            wv[static_cast<std::size_t>(r * s + j)] = 1;
            some = true;
          }
        if (!some)
          wv[static_cast<std::size_t>(r * s + any(rng))] = 1;
        for (std::int64_t j = 0; j < s; ++j)
          if (wv[static_cast<std::size_t>(r * s + j)] != 0)
            iv[static_cast<std::size_t>(r * s + j)] = o_.mask_id;
      }
      out["labels"] = lab;
      out["label_weights"] = w;
    } else {
      ir::Tensor lab(ir::Shape({b}, ir::DType::i64));
      for (std::int64_t r = 0; r < b; ++r)
        lab.data<std::int64_t>()[static_cast<std::size_t>(r)] =
            labels[static_cast<std::size_t>(rows[static_cast<std::size_t>(r)])];
      out["labels"] = lab;
    }
    out["input_ids"] = in;
    if (o_.bert_inputs) {
      ir::Tensor types(ir::Shape({b, s}, ir::DType::i64)), pos(ir::Shape({b, s}, ir::DType::i64));
      for (std::int64_t r = 0; r < b; ++r)
        for (std::int64_t j = 0; j < s; ++j)
          pos.data<std::int64_t>()[static_cast<std::size_t>(r * s + j)] = j;
      out["token_type_ids"] = types;
      out["position_ids"] = pos;
    }
    return out;
  }

private:
  TokenIds ids_;
  TokenSourceOptions o_;
  std::int64_t window_ = 0;
  mutable std::int64_t epoch_ = -1;
  mutable std::vector<std::int64_t> order_;
};

/// Checks that \p ids holds at least one window of \p window tokens and, for sequences, at least
/// \p batch of them; \p what names the data ("training", "evaluation").
void check_length(const TokenIds& ids, std::int64_t window, std::int64_t batch, const char* what,
                  bool needs_batch) {
  const std::string need = std::to_string(window) + " tokens (--seq)";
  if (ids.rows > 0) {
    if (ids.length < window)
      throw Error(std::string("--data: the ") + what + " sequences have " +
                  std::to_string(ids.length) + " tokens, a window needs " + need);
    if (needs_batch && ids.rows < batch)
      throw Error(std::string("--data: the ") + what + " data has " + std::to_string(ids.rows) +
                  " sequences, fewer than --batch " + std::to_string(batch));
  } else if (ids.length < window) {
    throw Error(std::string("--data: the ") + what + " stream has " + std::to_string(ids.length) +
                " tokens, a window needs " + need);
  }
}

} // namespace

std::unique_ptr<BatchSource> token_source(TokenIds train, const TokenIds& eval,
                                          const TokenSourceOptions& o) {
  const std::int64_t window = o.seq + (o.task == TokenTask::causal ? 1 : 0);
  check_length(train, window, o.batch, "training", true);
  if (o.task == TokenTask::classify) {
    if (train.rows == 0)
      throw Error("--data: a classifier needs sequences [N, L] of ids, not a stream");
    if (static_cast<std::int64_t>(o.labels.size()) != train.rows)
      throw Error("--data: " + std::to_string(o.labels.size()) + " labels for " +
                  std::to_string(train.rows) + " training sequences");
  }
  auto src = std::make_unique<TokenSource>(std::move(train), o);
  src->items_per_step = o.batch * o.seq;
  src->items = "tokens";
  if (eval.ids.empty())
    return src;
  check_length(eval, window, o.batch, "evaluation", false);
  if (o.task == TokenTask::classify &&
      (eval.rows == 0 || static_cast<std::int64_t>(o.eval_labels.size()) != eval.rows))
    throw Error("--data: the evaluation sequences need one label each");
  // Fixed evaluation windows: sequences in order, or consecutive windows of the stream.
  const std::int64_t n = eval.rows > 0 ? eval.rows : (eval.length - (window - o.seq)) / o.seq;
  for (std::int64_t k = 0; k < std::min(n / o.batch, o.eval_batches); ++k) {
    std::vector<std::int64_t> starts, rows;
    for (std::int64_t r = 0; r < o.batch; ++r) {
      const std::int64_t i = k * o.batch + r;
      rows.push_back(i);
      starts.push_back(eval.rows > 0 ? i * eval.length : i * o.seq);
    }
    src->eval.push_back(
        src->make(eval, starts, rows, o.eval_labels, 0xe7a1u + static_cast<std::uint64_t>(k)));
  }
  return src;
}

} // namespace rlx::cli
