// hf_config.cpp: config.json of HuggingFace BERT and LLaMA folders → BertConfig / LlamaConfig.
#include "rlx/runtime/hf_config.hpp"

#include "rlx/runtime/safetensors.hpp"

#include <nlohmann/json.hpp>

#include <cmath>
#include <fstream>
#include <set>
#include <sstream>

namespace rlx::runtime {

namespace {

using nlohmann::json;

/// Reads the fields of one config object, remembering which were seen.
class Fields {
public:
  Fields(const json& j, std::string what) : j_(j), what_(std::move(what)) {}

  [[noreturn]] void fail(const std::string& key, const std::string& why) const {
    throw Error(what_ + ": " + key + " " + why);
  }
  bool has(const std::string& key) {
    seen_.insert(key);
    return j_.contains(key) && !j_[key].is_null();
  }
  /// An integer in [1, max]; \p fallback when absent (nullopt: required).
  int integer(const std::string& key, long long max, std::optional<int> fallback = std::nullopt) {
    if (!has(key)) {
      if (!fallback)
        fail(key, "is required");
      return *fallback;
    }
    const json& v = j_[key];
    if (!v.is_number_integer())
      fail(key, "must be an integer, got " + v.dump());
    const auto n = v.get<long long>();
    if (n < 1 || n > max)
      fail(key, "must be in [1, " + std::to_string(max) + "], got " + std::to_string(n));
    return static_cast<int>(n);
  }
  /// A finite number > 0; \p fallback when absent.
  double positive(const std::string& key, double fallback) {
    if (!has(key))
      return fallback;
    const json& v = j_[key];
    if (!v.is_number() || !(v.get<double>() > 0) || !std::isfinite(v.get<double>()))
      fail(key, "must be a positive number, got " + v.dump());
    return v.get<double>();
  }
  std::string string(const std::string& key, const std::string& fallback) {
    if (!has(key))
      return fallback;
    if (!j_[key].is_string())
      fail(key, "must be a string, got " + j_[key].dump());
    return j_[key].get<std::string>();
  }
  bool boolean(const std::string& key, bool fallback) {
    if (!has(key))
      return fallback;
    if (!j_[key].is_boolean())
      fail(key, "must be true or false, got " + j_[key].dump());
    return j_[key].get<bool>();
  }
  /// Marks keys that do not change the computation (training, tokenizer, bookkeeping).
  void ignore(std::initializer_list<const char*> keys) {
    for (const char* k : keys)
      seen_.insert(k);
  }
  /// Throws on the first key no reader asked for.
  void reject_unknown() const {
    for (const auto& [key, v] : j_.items())
      if (!seen_.count(key))
        throw Error(what_ + ": unsupported config field '" + key + "' (" + v.dump() +
                    "); rlx does not know what it changes");
  }

private:
  const json& j_;
  std::string what_;
  std::set<std::string> seen_;
};

/// Keys every HF PretrainedConfig may carry that do not change an inference forward pass.
void ignore_common(Fields& f) {
  f.ignore({"_name_or_path",
            "architectures",
            "model_type",
            "transformers_version",
            "torch_dtype",
            "dtype",
            "use_cache",
            "initializer_range",
            "bos_token_id",
            "eos_token_id",
            "pad_token_id",
            "sep_token_id",
            "cls_token_id",
            "decoder_start_token_id",
            "tokenizer_class",
            "id2label",
            "label2id",
            "num_labels",
            "problem_type",
            "return_dict",
            "output_hidden_states",
            "output_attentions",
            "torchscript",
            "gradient_checkpointing",
            "finetuning_task",
            "prefix",
            "task_specific_params",
            "classifier_dropout",
            "attention_dropout",
            "hidden_dropout",
            "pruned_heads"});
}

ir::Activation bert_activation(Fields& f) {
  const std::string act = f.string("hidden_act", "gelu");
  if (act == "gelu")
    return ir::Activation::gelu;
  if (act == "gelu_new" || act == "gelu_pytorch_tanh" || act == "gelu_fast")
    return ir::Activation::gelu_tanh;
  if (act == "relu")
    return ir::Activation::relu;
  if (act == "silu" || act == "swish")
    return ir::Activation::silu;
  if (act == "tanh")
    return ir::Activation::tanh;
  f.fail("hidden_act", "'" + act + "' is not supported (gelu, gelu_new, relu, silu, tanh)");
}

BertConfig read_bert(Fields& f, HfConfig& out) {
  BertConfig c;
  c.hidden = f.integer("hidden_size", ModelLimits::hidden);
  c.layers = f.integer("num_hidden_layers", ModelLimits::layers);
  c.heads = f.integer("num_attention_heads", ModelLimits::heads);
  c.ffn = f.integer("intermediate_size", ModelLimits::ffn);
  c.vocab = f.integer("vocab_size", ModelLimits::vocab);
  c.max_positions = f.integer("max_position_embeddings", ModelLimits::max_positions, 512);
  c.type_vocab = f.integer("type_vocab_size", ModelLimits::type_vocab, 2);
  c.eps = f.positive("layer_norm_eps", 1e-12);
  c.act = bert_activation(f);
  if (f.has("num_key_value_heads") &&
      f.integer("num_key_value_heads", ModelLimits::heads) != c.heads)
    f.fail("num_key_value_heads", "must equal num_attention_heads (bert has no grouped-query "
                                  "attention)");
  if (const auto pe = f.string("position_embedding_type", "absolute"); pe != "absolute")
    f.fail("position_embedding_type", "'" + pe + "' is not supported (only absolute)");
  if (f.boolean("is_decoder", false))
    f.fail("is_decoder", "is not supported (rlx runs the bidirectional encoder)");
  if (f.boolean("add_cross_attention", false))
    f.fail("add_cross_attention", "is not supported");
  // Dropout is off at inference, feed-forward chunking does not change the result, and only task
  // heads (which rlx does not compute) tie to the embeddings.
  f.ignore({"hidden_dropout_prob", "attention_probs_dropout_prob", "chunk_size_feed_forward",
            "tie_word_embeddings"});
  if (f.has("rope_scaling"))
    f.fail("rope_scaling", "is not a bert field");
  c.embeddings = true;
  c.padding_mask = true;
  out.max_positions = c.max_positions;
  return c;
}

LlamaConfig read_llama(Fields& f, HfConfig& out) {
  LlamaConfig c;
  c.hidden = f.integer("hidden_size", ModelLimits::hidden);
  c.layers = f.integer("num_hidden_layers", ModelLimits::layers);
  c.heads = f.integer("num_attention_heads", ModelLimits::heads);
  c.kv_heads = f.integer("num_key_value_heads", ModelLimits::heads, c.heads);
  c.ffn = f.integer("intermediate_size", ModelLimits::ffn);
  c.vocab = f.integer("vocab_size", ModelLimits::vocab);
  out.max_positions = f.integer("max_position_embeddings", ModelLimits::max_positions, 2048);
  c.eps = f.positive("rms_norm_eps", 1e-6);
  c.rope_theta = f.positive("rope_theta", 10000.0);
  if (const auto act = f.string("hidden_act", "silu"); act != "silu")
    f.fail("hidden_act", "'" + act + "' is not supported (llama's SwiGLU uses silu)");
  if (f.has("rope_scaling"))
    f.fail("rope_scaling", "is not supported (rlx implements plain RoPE; linear, dynamic or "
                           "llama3 scaling would change every output)");
  if (f.boolean("attention_bias", false))
    f.fail("attention_bias", "is not supported (rlx's llama projections have no bias)");
  if (f.boolean("mlp_bias", false))
    f.fail("mlp_bias", "is not supported (rlx's llama MLP has no bias)");
  if (f.has("head_dim") && f.integer("head_dim", ModelLimits::hidden) * c.heads != c.hidden)
    f.fail("head_dim", "must equal hidden_size / num_attention_heads");
  if (c.heads % c.kv_heads != 0)
    f.fail("num_key_value_heads", "(" + std::to_string(c.kv_heads) +
                                      ") must divide num_attention_heads (" +
                                      std::to_string(c.heads) + ")");
  c.tie_word_embeddings = f.boolean("tie_word_embeddings", false);
  f.ignore({"pretraining_tp", "rope_type"});
  c.embeddings = true;
  return c;
}

} // namespace

HfConfig parse_hf_config(const std::string& text, const std::string& what) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    throw Error(what + ": not valid JSON (" + std::string(e.what()) + ")");
  }
  if (!j.is_object())
    throw Error(what + ": must be a JSON object");
  Fields f(j, what);
  HfConfig out;
  out.model_type = f.string("model_type", "");
  if (f.has("architectures")) {
    if (!j["architectures"].is_array())
      f.fail("architectures", "must be a list of names");
    for (const auto& a : j["architectures"]) {
      if (!a.is_string())
        f.fail("architectures", "must be a list of names");
      out.architectures.push_back(a.get<std::string>());
    }
  }
  if (out.model_type.empty())
    f.fail("model_type", "is required (rlx reads bert and llama)");
  if (out.model_type == "bert") {
    out.bert = read_bert(f, out);
    for (const auto& a : out.architectures)
      if (!a.starts_with("Bert"))
        f.fail("architectures", "'" + a + "' is not a BERT architecture");
  } else if (out.model_type == "llama") {
    out.llama = read_llama(f, out);
    bool causal_lm = false;
    for (const auto& a : out.architectures) {
      if (a == "LlamaForCausalLM")
        causal_lm = true;
      else if (a != "LlamaModel")
        f.fail("architectures", "'" + a + "' is not supported (LlamaModel, LlamaForCausalLM)");
    }
    out.llama->lm_head = causal_lm;
    if (out.llama->tie_word_embeddings && !causal_lm)
      out.llama->tie_word_embeddings = false; // no output projection to tie
  } else {
    f.fail("model_type", "'" + out.model_type + "' is not supported (rlx reads bert and llama)");
  }
  ignore_common(f);
  f.reject_unknown();
  return out;
}

HfConfig read_hf_config(const std::filesystem::path& dir) {
  const std::filesystem::path p = dir / "config.json";
  std::ifstream in(p, std::ios::binary);
  if (!in)
    throw IoError("cannot open '" + p.string() +
                  "' (--model-dir needs a HuggingFace model folder)");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    throw IoError("cannot read '" + p.string() + "'");
  return parse_hf_config(ss.str(), p.string());
}

} // namespace rlx::runtime
