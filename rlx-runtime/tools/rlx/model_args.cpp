// model_args.cpp: model selection (built-in, graph file or HuggingFace folder), checkpoint
// inspection and weight loading for the rlx command. Every size flag is bounded.
#include "model_args.hpp"

#include "report.hpp"
#include "rlx/runtime/device_choice.hpp"

#include "rlx/ir/json.hpp"

#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <iostream>
#include <limits>
#include <set>
#include <sstream>

namespace rlx::cli {

namespace {

using runtime::ModelLimits;

template <class T>
CLI::Option* opt(CLI::App& app, const char* name, std::optional<T>& dst, const char* doc) {
  return app.add_option_function<T>(
      name, [&dst](const T& v) { dst = v; }, doc);
}

/// A finite number > 0.
CLI::Validator positive_finite() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        double v = 0;
        if (!CLI::detail::lexical_cast(s, v) || !std::isfinite(v) || !(v > 0))
          return "must be a finite number > 0, got " + s;
        return {};
      },
      "POSITIVE");
}

/// A decimal unsigned 64-bit integer: no sign, no wrap-around past 2^64 - 1.
CLI::Validator uint64_value() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        std::uint64_t v = 0;
        const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (s.empty() || ec != std::errc() || end != s.data() + s.size())
          return "must be an integer in [0, 2^64 - 1], got " + s;
        return {};
      },
      "UINT64");
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot open graph file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  if (in.bad())
    throw Error("cannot read graph file '" + path + "'");
  return ss.str();
}

/// Dim \p i of the tensor named \p name, or nullopt; throws when it is past \p max (a size no
/// model has: a corrupt or hostile checkpoint).
std::optional<int> dim_of(const runtime::Checkpoint& r, const std::string& name, std::size_t i,
                          long long max) {
  const auto* e = r.find(name);
  if (!e)
    return std::nullopt;
  if (e->shape.rank() <= i)
    throw Error("checkpoint tensor '" + name + "' is " + e->shape.str() + ": expected rank " +
                std::to_string(i + 1) + " or more");
  const std::int64_t v = e->shape[i].size();
  if (v < 1 || v > max)
    throw Error("checkpoint tensor '" + name + "' is " + e->shape.str() + ": dim " +
                std::to_string(i) + " must be in [1, " + std::to_string(max) + "]");
  return static_cast<int>(v);
}

/// The number of layers a checkpoint holds: how many of \p probe(0), \p probe(1), ... exist, in
/// a row. Tensors of layers past a gap (or past --layers) stay unused, which load_weights reports.
std::optional<int> count_layers(const runtime::Checkpoint& r,
                                const std::function<std::string(int)>& probe) {
  int n = 0;
  while (n < ModelLimits::layers && r.find(probe(n)))
    ++n;
  return n > 0 ? std::optional<int>(n) : std::nullopt;
}

/// Fills \p field from the checkpoint when the command line left it unset.
void infer(std::optional<int>& field, std::optional<int> from_file, const char* what,
           std::vector<std::string>& notes) {
  if (field || !from_file)
    return;
  field = from_file;
  notes.push_back(std::string(what) + " = " + std::to_string(*from_file) + " (from the weights)");
}

/// The prefix the checkpoint's names carry before \p probe ("", "bert.", "model."), or nullopt.
std::optional<std::string> find_prefix(const runtime::Checkpoint& r, const std::string& probe) {
  for (const auto& e : r.entries())
    if (e.name == probe || e.name.ends_with("." + probe))
      return e.name.substr(0, e.name.size() - probe.size());
  return std::nullopt;
}

/// Heads of head size 64 (BERT-mini/base and the anchors' models) for seeded random weights. A
/// checkpoint's head count cannot be read off its weights: it needs --heads or --model-dir.
int default_heads(const char* model, int hidden, bool from_checkpoint) {
  if (from_checkpoint)
    throw Error(std::string(model) +
                ": give --heads (a checkpoint's head count is not in its weights; --model-dir "
                "reads it from config.json)");
  if (hidden % 64 != 0)
    throw Error(std::string(model) + ": give --heads (hidden " + std::to_string(hidden) +
                " is not a multiple of the default head size 64)");
  return hidden / 64;
}

std::string dims_text(const std::vector<std::int64_t>& dims) {
  std::string s;
  for (auto d : dims)
    s += (s.empty() ? "" : "-") + std::to_string(d);
  return s;
}

std::string bert_description(const runtime::BertConfig& c) {
  return "bert: " + std::to_string(c.layers) + " layers, hidden " + std::to_string(c.hidden) +
         ", " + std::to_string(c.heads) + " heads, ffn " + std::to_string(c.ffn) +
         (c.embeddings ? ", embeddings" : "") + (c.padding_mask ? ", padding mask" : "");
}

std::string llama_description(const runtime::LlamaConfig& c) {
  std::ostringstream theta;
  theta << c.rope_theta;
  return "llama: " + std::to_string(c.layers) + " blocks, hidden " + std::to_string(c.hidden) +
         ", " + std::to_string(c.heads) + " heads / " + std::to_string(c.kv_heads) +
         " kv heads, ffn " + std::to_string(c.ffn) + ", rope_theta " + theta.str() +
         (c.embeddings ? ", embeddings" : "") +
         (c.lm_head ? (c.tie_word_embeddings ? ", tied lm head" : ", lm head") : "");
}

/// Builds the model of a HuggingFace folder: config.json, overridden by the flags given.
void resolve_model_dir(const ModelArgs& a, ResolvedModel& m,
                       std::optional<runtime::Checkpoint>& ckpt, bool with_weights) {
  if (!a.graph_file.empty())
    throw Error("--model-dir and --graph both choose the model; give one");
  if (!a.weights.empty())
    throw Error("--model-dir reads the weights from the folder; drop --weights");
  if (!a.dims.empty() || a.embeddings)
    throw Error("--model-dir takes the model from config.json; drop --dims / --embeddings");
  runtime::HfConfig hf = runtime::read_hf_config(a.model_dir);
  if (!a.model.empty() && a.model != hf.model_type)
    throw Error("--model " + a.model + " but " + a.model_dir + "/config.json describes a " +
                hf.model_type + " model");
  if (with_weights)
    ckpt.emplace(a.model_dir);
  // The flags both architectures share override config.json; the checkpoint's name prefix is
  // wherever it keeps the first layer's \p probe tensor.
  auto override_common = [&](auto& c, const std::string& probe) {
    c.layers = a.layers.value_or(c.layers);
    c.hidden = a.hidden.value_or(c.hidden);
    c.heads = a.heads.value_or(c.heads);
    c.ffn = a.ffn.value_or(c.ffn);
    c.vocab = a.vocab.value_or(c.vocab);
    c.eps = a.norm_eps.value_or(c.eps);
    if (ckpt)
      if (auto prefix = find_prefix(*ckpt, probe))
        m.load.prefix = *prefix;
  };
  if (hf.bert) {
    runtime::BertConfig c = *hf.bert;
    if (a.lm_head || a.tie_embeddings || a.rope_theta)
      throw Error("--lm-head, --tie-word-embeddings and --rope-theta are llama options");
    if (a.kv_heads && *a.kv_heads != a.heads.value_or(c.heads))
      throw Error("bert has no grouped-query attention: --kv-heads must equal --heads");
    override_common(c, "encoder.layer.0.attention.self.query.weight");
    m.max_positions = c.max_positions;
    m.graph = runtime::build_bert(c);
    m.description = bert_description(c);
  } else {
    runtime::LlamaConfig c = *hf.llama;
    if (a.padding_mask)
      throw Error("--padding-mask is a bert option (llama attention is causal)");
    override_common(c, "layers.0.self_attn.q_proj.weight");
    c.kv_heads = a.kv_heads.value_or(c.kv_heads);
    c.rope_theta = a.rope_theta.value_or(c.rope_theta);
    if (a.lm_head)
      c.lm_head = true;
    if (a.tie_embeddings)
      c.tie_word_embeddings = true;
    m.graph = runtime::build_llama(c);
    m.description = llama_description(c);
  }
  m.description += " (" + a.model_dir + ")";
}

} // namespace

void add_model_options(CLI::App& app, ModelArgs& a, bool with_weights) {
  app.add_option("--model", a.model, "built-in model: bert (default), llama or mlp")
      ->check(CLI::IsMember({"bert", "llama", "mlp"}));
  app.add_option("--graph", a.graph_file,
                 "a graph JSON file (from `rlx export`) instead of --model");
  app.add_option("--onnx", a.onnx_file,
                 "an ONNX model file instead of --model (weights from its initializers)");
  app.add_option("--model-dir", a.model_dir,
                 "a HuggingFace model folder: config.json (bert or llama) and model.safetensors "
                 "or a sharded model.safetensors.index.json; flags override its config");
  opt(app, "--layers", a.layers, "transformer layers")->check(CLI::Range(1, ModelLimits::layers));
  opt(app, "--hidden", a.hidden, "hidden size")->check(CLI::Range(1, ModelLimits::hidden));
  opt(app, "--heads", a.heads, "attention heads")->check(CLI::Range(1, ModelLimits::heads));
  opt(app, "--kv-heads", a.kv_heads, "key/value heads (llama; bert requires = heads)")
      ->check(CLI::Range(1, ModelLimits::heads));
  opt(app, "--ffn", a.ffn, "feed-forward width")->check(CLI::Range(1, ModelLimits::ffn));
  opt(app, "--vocab", a.vocab, "vocabulary size (with --embeddings or --lm-head)")
      ->check(CLI::Range(1, ModelLimits::vocab));
  opt(app, "--norm-eps", a.norm_eps, "LayerNorm (bert) / RMSNorm (llama) epsilon")
      ->check(positive_finite());
  opt(app, "--rope-theta", a.rope_theta, "llama: RoPE base (10000; LLaMA-3 uses 500000)")
      ->check(positive_finite());
  opt(app, "--batch", a.batch, "batch size (default 1)")
      ->check(CLI::Range(std::int64_t{1}, CliLimits::batch));
  opt(app, "--seq", a.seq, "sequence length (default 128)")
      ->check(CLI::Range(std::int64_t{1}, CliLimits::seq));
  // Parsed by hand: CLI11's delimiter split drops empty items, so "4,,2" would pass as 4,2.
  app.add_option_function<std::string>(
      "--dims",
      [&a](const std::string& text) {
        a.dims.clear();
        std::size_t at = 0;
        while (true) {
          const std::size_t comma = std::min(text.find(',', at), text.size());
          std::int64_t v = 0;
          const auto [end, ec] = std::from_chars(text.data() + at, text.data() + comma, v);
          if (ec != std::errc() || end != text.data() + comma || v < 1 ||
              v > ModelLimits::mlp_width)
            throw CLI::ValidationError("--dims", "widths must be integers in [1, " +
                                                     std::to_string(ModelLimits::mlp_width) +
                                                     "] separated by commas, got '" + text + "'");
          a.dims.push_back(v);
          if (comma == text.size())
            break;
          at = comma + 1;
        }
      },
      "mlp layer widths, input first (default 784,512,512,10)");
  app.add_flag("--embeddings", a.embeddings, "token-id inputs and embedding tables (bert, llama)");
  app.add_flag("--padding-mask", a.padding_mask, "bert: an attention_mask input");
  app.add_flag("--lm-head", a.lm_head, "llama: project to vocabulary logits");
  app.add_flag("--tie-word-embeddings", a.tie_embeddings,
               "llama: the lm head is the embedding table (needs --embeddings --lm-head)");
  if (with_weights) {
    app.add_option("--weights", a.weights,
                   "safetensors weights, or a sharded model.safetensors.index.json (default: "
                   "seeded random)");
    app.add_option("--weights-prefix", a.weights_prefix,
                   "prefix of the param names in the weights file (detected for bert./model.)");
    app.add_flag("--allow-extra-weights", a.allow_extra_weights,
                 "ignore tensors of the checkpoint that the model does not use (else an error)");
  }
  app.add_option("--seed", a.seed, "seed of random weights and inputs")
      ->check(uint64_value())
      ->capture_default_str();
  app.add_option(
         "--device", a.device,
         "device: cpu, opencl, opencl:N (see rlx devices) or auto (the lowest predicted time)")
      ->capture_default_str();
  app.add_option("--gemm", a.gemm,
                 "cpu matrix-product library: auto (per shape, the fastest measured at compile "
                 "time), onednn, openblas or packed (rlx's own)")
      ->check(CLI::IsMember({"auto", "onednn", "openblas", "packed"}))
      ->capture_default_str();
  app.add_option("--threads", a.threads, "cpu threads (0 = all cores)")
      ->check(CLI::Range(0, CliLimits::threads));
  app.add_flag("--no-fuse", a.no_fuse, "skip the fusion passes");
  app.add_option(
      "--no-fuse-pass", a.no_fuse_passes,
      "skip one fusion pass (repeatable): fuse-gelu-spelling, fuse-matmul-bias-act, ...");
  app.add_flag("--no-io-gate", a.no_io_gate,
               "cpu: apply every legal fusion, without the IO fusion-benefit gate's verdict");
}

ResolvedModel resolve_model(const ModelArgs& in, bool with_weights) {
  if (!in.onnx_file.empty())
    return resolve_onnx(in);
  ModelArgs a = in;
  ResolvedModel m;
  const bool from_graph = !a.graph_file.empty();
  if (from_graph && (!a.model.empty() || a.layers || a.hidden || a.heads || a.kv_heads || a.ffn ||
                     a.vocab || a.norm_eps || a.rope_theta || !a.dims.empty() || a.embeddings ||
                     a.padding_mask || a.lm_head || a.tie_embeddings))
    throw Error("--graph takes the model from the file; drop the model config flags");

  std::optional<runtime::Checkpoint> ckpt;
  if (!a.model_dir.empty()) {
    resolve_model_dir(a, m, ckpt, with_weights);
  } else {
    if (!a.weights.empty() && !from_graph)
      ckpt.emplace(a.weights);
    if (a.model.empty())
      a.model = "bert";
  }
  const bool inferred = ckpt.has_value() && a.model_dir.empty();

  if (!a.model_dir.empty()) {
    // Built above from config.json.
  } else if (from_graph) {
    m.graph = ir::load_json(read_text(a.graph_file));
    m.description = "graph '" + m.graph.name() + "' from " + a.graph_file;
  } else if (a.model == "bert") {
    if (a.rope_theta || a.tie_embeddings)
      throw Error("--rope-theta and --tie-word-embeddings are llama options");
    if (ckpt) {
      if (auto p = find_prefix(*ckpt, "encoder.layer.0.attention.self.query.weight"))
        if (a.weights_prefix.empty())
          a.weights_prefix = *p;
      const std::string& p = a.weights_prefix;
      if (ckpt->find(p + "embeddings.word_embeddings.weight")) {
        a.embeddings = true;
        infer(a.vocab,
              dim_of(*ckpt, p + "embeddings.word_embeddings.weight", 0, ModelLimits::vocab),
              "vocab", m.notes);
      }
      infer(a.layers,
            count_layers(*ckpt,
                         [&](int i) {
                           return p + "encoder.layer." + std::to_string(i) +
                                  ".attention.self.query.weight";
                         }),
            "layers", m.notes);
      infer(
          a.hidden,
          dim_of(*ckpt, p + "encoder.layer.0.attention.self.query.weight", 0, ModelLimits::hidden),
          "hidden", m.notes);
      infer(a.ffn,
            dim_of(*ckpt, p + "encoder.layer.0.intermediate.dense.weight", 0, ModelLimits::ffn),
            "ffn", m.notes);
    }
    runtime::BertConfig c;
    c.layers = a.layers.value_or(c.layers);
    c.hidden = a.hidden.value_or(c.hidden);
    c.heads = a.heads ? *a.heads : default_heads("bert", c.hidden, inferred);
    c.ffn = a.ffn.value_or(static_cast<int>(std::min<std::int64_t>(
        4 * static_cast<std::int64_t>(c.hidden), ModelLimits::ffn))); // BERT's ratio
    c.eps = a.norm_eps.value_or(c.eps);
    if (a.kv_heads && *a.kv_heads != c.heads)
      throw Error("bert has no grouped-query attention: --kv-heads must equal --heads");
    c.embeddings = a.embeddings;
    c.padding_mask = a.padding_mask;
    c.vocab = a.vocab.value_or(c.vocab);
    c.prefix = "";
    if (a.lm_head)
      throw Error("--lm-head is a llama option");
    if (ckpt && c.embeddings) {
      const std::string& p = a.weights_prefix;
      c.max_positions =
          dim_of(*ckpt, p + "embeddings.position_embeddings.weight", 0, ModelLimits::max_positions)
              .value_or(c.max_positions);
      c.type_vocab =
          dim_of(*ckpt, p + "embeddings.token_type_embeddings.weight", 0, ModelLimits::type_vocab)
              .value_or(c.type_vocab);
    }
    if (c.embeddings)
      m.max_positions = c.max_positions;
    m.graph = runtime::build_bert(c);
    m.description = bert_description(c);
  } else if (a.model == "llama") {
    if (ckpt) {
      if (auto p = find_prefix(*ckpt, "layers.0.self_attn.q_proj.weight"))
        if (a.weights_prefix.empty())
          a.weights_prefix = *p;
      const std::string& p = a.weights_prefix;
      if (ckpt->find(p + "embed_tokens.weight")) {
        a.embeddings = true;
        infer(a.vocab, dim_of(*ckpt, p + "embed_tokens.weight", 0, ModelLimits::vocab), "vocab",
              m.notes);
      }
      if (ckpt->find("lm_head.weight") && !a.lm_head && a.embeddings)
        a.lm_head = true;
      infer(a.layers,
            count_layers(*ckpt,
                         [&](int i) {
                           return p + "layers." + std::to_string(i) + ".self_attn.q_proj.weight";
                         }),
            "layers", m.notes);
      infer(a.hidden, dim_of(*ckpt, p + "layers.0.self_attn.q_proj.weight", 0, ModelLimits::hidden),
            "hidden", m.notes);
      infer(a.ffn, dim_of(*ckpt, p + "layers.0.mlp.gate_proj.weight", 0, ModelLimits::ffn), "ffn",
            m.notes);
      if (a.heads && a.hidden && !a.kv_heads && *a.hidden % *a.heads == 0) {
        const int head_dim = *a.hidden / *a.heads;
        auto kv_rows =
            dim_of(*ckpt, p + "layers.0.self_attn.k_proj.weight", 0, ModelLimits::hidden);
        if (kv_rows) {
          if (*kv_rows % head_dim != 0)
            throw Error("llama: k_proj has " + std::to_string(*kv_rows) +
                        " rows, not a multiple of the head size " + std::to_string(head_dim));
          infer(a.kv_heads, *kv_rows / head_dim, "kv_heads", m.notes);
        }
      }
    }
    runtime::LlamaConfig c;
    c.layers = a.layers.value_or(c.layers);
    c.hidden = a.hidden.value_or(c.hidden);
    c.heads = a.heads ? *a.heads : default_heads("llama", c.hidden, inferred);
    c.kv_heads = a.kv_heads.value_or(c.heads);
    c.ffn = a.ffn.value_or(static_cast<int>(
        std::min<std::int64_t>((8 * static_cast<std::int64_t>(c.hidden) / 3 + 31) / 32 * 32,
                               ModelLimits::ffn))); // LLaMA's 8/3, rounded up to 32
    c.eps = a.norm_eps.value_or(c.eps);
    c.rope_theta = a.rope_theta.value_or(c.rope_theta);
    c.embeddings = a.embeddings;
    c.lm_head = a.lm_head;
    c.tie_word_embeddings = a.tie_embeddings;
    c.vocab = a.vocab.value_or(c.vocab);
    if (a.padding_mask)
      throw Error("--padding-mask is a bert option (llama attention is causal)");
    m.graph = runtime::build_llama(c);
    m.description = llama_description(c);
  } else {
    if (a.layers || a.hidden || a.heads || a.kv_heads || a.ffn || a.seq || a.embeddings ||
        a.padding_mask || a.lm_head || a.tie_embeddings || a.norm_eps || a.rope_theta)
      throw Error("mlp takes --dims (and --batch), not transformer flags");
    runtime::MlpConfig c;
    if (!a.dims.empty())
      c.dims = a.dims;
    else if (ckpt) {
      std::vector<std::int64_t> dims;
      for (std::size_t i = 1; i <= ModelLimits::mlp_layers; ++i) {
        const std::string name = "fc" + std::to_string(i) + ".weight";
        if (!ckpt->find(name))
          break;
        const int out = *dim_of(*ckpt, name, 0, ModelLimits::mlp_width);
        const int in_width = *dim_of(*ckpt, name, 1, ModelLimits::mlp_width);
        if (ckpt->find(name)->shape.rank() != 2)
          throw Error("checkpoint tensor '" + name + "' is " + ckpt->find(name)->shape.str() +
                      ": expected a 2-D [out, in] weight");
        if (dims.empty())
          dims.push_back(in_width);
        dims.push_back(out);
      }
      if (dims.size() >= 2) {
        if (dims != c.dims)
          m.notes.push_back("dims = " + dims_text(dims) + " (from the weights)");
        c.dims = dims;
      }
    }
    m.graph = runtime::build_mlp(c);
    m.description = "mlp: " + dims_text(c.dims);
  }

  for (const auto& sym : m.graph.symbols()) {
    if (sym == "batch") {
      m.bindings[sym] = a.batch.value_or(1);
      if (a.batch)
        m.fixed[sym] = *a.batch;
    } else if (sym == "seq") {
      m.bindings[sym] =
          a.seq.value_or(std::min<std::int64_t>(128, m.max_positions > 0 ? m.max_positions : 128));
      if (a.seq)
        m.fixed[sym] = *a.seq;
    } else {
      throw Error("graph symbol '" + sym + "' has no size option (rlx binds batch and seq)");
    }
  }
  for (const auto& [sym, v] : m.bindings)
    if (v <= 0)
      throw Error("--" + sym + " must be positive, got " + std::to_string(v));
  if (m.max_positions > 0 && m.bindings.count("seq") && m.bindings.at("seq") > m.max_positions)
    throw Error("--seq " + std::to_string(m.bindings.at("seq")) + " exceeds the model's " +
                std::to_string(m.max_positions) + " position embeddings");
  if (a.model_dir.empty())
    m.load.prefix = a.weights_prefix;
  else if (!a.weights_prefix.empty())
    m.load.prefix = a.weights_prefix;
  m.load.allow_extra = a.allow_extra_weights;
  if (ckpt)
    m.weights = ckpt->path();
  else if (with_weights)
    m.weights = a.weights; // a --graph model's weights
  return m;
}

runtime::Session make_session(const ModelArgs& a, const ResolvedModel& m) {
  runtime::SessionOptions so;
  so.cpu.gemm = cpu::parse_gemm_provider(a.gemm);
  so.cpu.num_threads = a.threads;
  so.cpu.use_io_gate = !a.no_io_gate;
  if (a.device != "auto")
    return runtime::Session(runtime::Device::parse(a.device), std::move(so));
  const auto ranked = runtime::rank_devices(m.graph, m.bindings, compile_options(a, m), so);
  std::cerr << "rlx: --device auto: " << ranked.front().device.str() << "\n";
  for (const auto& p : ranked) {
    std::cerr << "  " << p.device.str() << " (" << p.name << "): ";
    if (p.why_not.empty())
      std::cerr << format_ms(p.seconds * 1e3) << " predicted, " << p.kernels << " kernels; "
                << p.cost.str() << "\n";
    else
      std::cerr << "cannot run it: " << p.why_not << "\n";
  }
  return runtime::Session(ranked.front().device, std::move(so));
}

runtime::CompileOptions compile_options(const ModelArgs& a, const ResolvedModel& m) {
  runtime::CompileOptions co;
  co.fuse = !a.no_fuse;
  co.fusion.disabled.insert(a.no_fuse_passes.begin(), a.no_fuse_passes.end());
  co.bindings = m.fixed;
  return co;
}

void load_weights(runtime::Executable& exe, const ModelArgs& a, const ResolvedModel& m) {
  if (!m.params.empty()) {
    exe.set_params(m.params);
    return;
  }
  if (m.weights.empty()) {
    exe.set_params(runtime::init_params(exe.graph(), a.seed));
    return;
  }
  const runtime::Checkpoint ckpt(m.weights);
  try {
    ckpt.load_into(exe, m.load);
  } catch (const Error& e) {
    const std::string what = e.what();
    if (!m.load.allow_extra && what.find(" unexpected: ") != std::string::npos)
      throw Error(what + " (the model does not use them: check --layers and the config, or "
                         "pass --allow-extra-weights)");
    throw;
  }
}

// Splits "name=path"; throws naming the flag on a malformed pair.
std::pair<std::string, std::string> split_pair(const std::string& s, const char* flag) {
  const auto eq = s.find('=');
  if (eq == std::string::npos || eq == 0 || eq + 1 == s.size())
    throw Error(std::string(flag) + " expects name=file.npy, got '" + s + "'");
  return {s.substr(0, eq), s.substr(eq + 1)};
}

// The [batch, seq] i64 defaults HuggingFace uses for inputs a caller leaves out: positions
// 0..seq-1, token type 0, attention everywhere.
std::optional<ir::Tensor> hf_default(const std::string& name, const ir::Shape& type,
                                     const ir::Bindings& b) {
  if (type.rank() != 2 || type.dtype != ir::DType::i64)
    return std::nullopt;
  if (name != "position_ids" && name != "token_type_ids" && name != "attention_mask")
    return std::nullopt;
  const ir::Shape s = type.bind(b);
  if (!s.is_static())
    return std::nullopt;
  ir::Tensor t(s);
  const std::int64_t seq = s[1].size();
  for (std::int64_t i = 0; i < t.numel(); ++i)
    t.set_i64(i, name == "position_ids" ? i % seq : name == "attention_mask" ? 1 : 0);
  return t;
}

} // namespace rlx::cli
