// model_args.cpp: model selection, checkpoint inspection and weight loading for the rlx command.
#include "model_args.hpp"

#include "rlx/ir/json.hpp"

#include <fstream>
#include <regex>
#include <set>
#include <sstream>

namespace rlx::cli {

namespace {

template <class T>
void opt(CLI::App& app, const char* name, std::optional<T>& dst, const char* doc) {
  app.add_option_function<T>(
      name, [&dst](const T& v) { dst = v; }, doc);
}

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in)
    throw Error("cannot open graph file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

/// The number of layers a checkpoint holds: 1 + the largest i in names matching \p pattern.
int count_layers(const std::vector<runtime::SafetensorsEntry>& entries, const std::regex& pattern) {
  int n = 0;
  std::smatch m;
  for (const auto& e : entries)
    if (std::regex_search(e.name, m, pattern))
      n = std::max(n, std::stoi(m[1].str()) + 1);
  return n;
}

/// Dim \p i of the tensor named \p name, or nullopt.
std::optional<int> dim_of(const runtime::SafetensorsReader& r, const std::string& name,
                          std::size_t i) {
  const auto* e = r.find(name);
  if (!e || e->shape.rank() <= i)
    return std::nullopt;
  return static_cast<int>(e->shape[i].size());
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
std::optional<std::string> find_prefix(const runtime::SafetensorsReader& r,
                                       const std::string& probe) {
  for (const auto& e : r.entries())
    if (e.name == probe || e.name.ends_with("." + probe))
      return e.name.substr(0, e.name.size() - probe.size());
  return std::nullopt;
}

/// Heads of head size 64 (BERT-mini/base and the anchors' LLaMA); other widths need --heads.
int default_heads(const char* model, int hidden) {
  if (hidden <= 0 || hidden % 64 != 0)
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

} // namespace

void add_model_options(CLI::App& app, ModelArgs& a, bool with_weights) {
  app.add_option("--model", a.model, "built-in model: bert, llama or mlp")
      ->check(CLI::IsMember({"bert", "llama", "mlp"}))
      ->capture_default_str();
  app.add_option("--graph", a.graph_file,
                 "a graph JSON file (from `rlx export`) instead of --model");
  app.add_option("--onnx", a.onnx_file,
                 "an ONNX model file instead of --model (weights from its initializers)");
  opt(app, "--layers", a.layers, "transformer layers");
  opt(app, "--hidden", a.hidden, "hidden size");
  opt(app, "--heads", a.heads, "attention heads");
  opt(app, "--kv-heads", a.kv_heads, "key/value heads (llama; bert requires = heads)");
  opt(app, "--ffn", a.ffn, "feed-forward width");
  opt(app, "--vocab", a.vocab, "vocabulary size (with --embeddings or --lm-head)");
  opt(app, "--batch", a.batch, "batch size (default 1)");
  opt(app, "--seq", a.seq, "sequence length (default 128)");
  app.add_option("--dims", a.dims, "mlp layer widths, input first (default 784,512,512,10)")
      ->delimiter(',');
  app.add_flag("--embeddings", a.embeddings, "token-id inputs and embedding tables (bert, llama)");
  app.add_flag("--padding-mask", a.padding_mask, "bert: an attention_mask input");
  app.add_flag("--lm-head", a.lm_head, "llama: project to vocabulary logits");
  if (with_weights) {
    app.add_option("--weights", a.weights, "safetensors weights (default: seeded random)");
    app.add_option("--weights-prefix", a.weights_prefix,
                   "prefix of the param names in the weights file (detected for bert./model.)");
    app.add_flag("--allow-extra-weights", a.allow_extra_weights,
                 "ignore tensors of the weights file that the model does not use");
  }
  app.add_option("--seed", a.seed, "seed of random weights and inputs")->capture_default_str();
  app.add_option("--device", a.device, "device: cpu (opencl in a later release)")
      ->capture_default_str();
  app.add_option("--gemm", a.gemm, "cpu matrix-product library: onednn or openblas")
      ->check(CLI::IsMember({"onednn", "openblas"}))
      ->capture_default_str();
  app.add_option("--threads", a.threads, "cpu threads (0 = all cores)")
      ->check(CLI::NonNegativeNumber);
  app.add_flag("--no-fuse", a.no_fuse, "skip the fusion passes");
}

ResolvedModel resolve_model(const ModelArgs& in) {
  if (!in.onnx_file.empty())
    return resolve_onnx(in);
  ModelArgs a = in;
  ResolvedModel m;
  const bool from_graph = !a.graph_file.empty();
  if (from_graph && (a.layers || a.hidden || a.heads || a.kv_heads || a.ffn || a.vocab ||
                     !a.dims.empty() || a.embeddings || a.padding_mask || a.lm_head))
    throw Error("--graph takes the model from the file; drop the model config flags");

  std::optional<runtime::SafetensorsReader> ckpt;
  if (!a.weights.empty() && !from_graph)
    ckpt.emplace(a.weights);
  bool checkpoint_layout = false; // a real checkpoint: tolerate its unused tensors

  if (from_graph) {
    m.graph = ir::load_json(read_text(a.graph_file));
    m.description = "graph '" + m.graph.name() + "' from " + a.graph_file;
  } else if (a.model == "bert") {
    if (ckpt) {
      if (auto p = find_prefix(*ckpt, "encoder.layer.0.attention.self.query.weight")) {
        if (a.weights_prefix.empty())
          a.weights_prefix = *p;
        checkpoint_layout = !p->empty();
      }
      const std::string& p = a.weights_prefix;
      if (ckpt->find(p + "embeddings.word_embeddings.weight")) {
        a.embeddings = checkpoint_layout = true;
        infer(a.vocab, dim_of(*ckpt, p + "embeddings.word_embeddings.weight", 0), "vocab", m.notes);
      }
      infer(a.layers, count_layers(ckpt->entries(), std::regex("encoder\\.layer\\.(\\d+)\\.")),
            "layers", m.notes);
      infer(a.hidden, dim_of(*ckpt, p + "encoder.layer.0.attention.self.query.weight", 0), "hidden",
            m.notes);
      infer(a.ffn, dim_of(*ckpt, p + "encoder.layer.0.intermediate.dense.weight", 0), "ffn",
            m.notes);
    }
    runtime::BertConfig c;
    c.layers = a.layers.value_or(c.layers);
    c.hidden = a.hidden.value_or(c.hidden);
    c.heads = a.heads ? *a.heads : default_heads("bert", c.hidden);
    c.ffn = a.ffn.value_or(4 * c.hidden); // BERT's ratio
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
          dim_of(*ckpt, p + "embeddings.position_embeddings.weight", 0).value_or(c.max_positions);
      c.type_vocab =
          dim_of(*ckpt, p + "embeddings.token_type_embeddings.weight", 0).value_or(c.type_vocab);
    }
    m.graph = runtime::build_bert(c);
    m.description = "bert: " + std::to_string(c.layers) + " layers, hidden " +
                    std::to_string(c.hidden) + ", " + std::to_string(c.heads) + " heads, ffn " +
                    std::to_string(c.ffn) + (c.embeddings ? ", embeddings" : "") +
                    (c.padding_mask ? ", padding mask" : "");
  } else if (a.model == "llama") {
    if (ckpt) {
      if (auto p = find_prefix(*ckpt, "layers.0.self_attn.q_proj.weight")) {
        if (a.weights_prefix.empty())
          a.weights_prefix = *p;
        checkpoint_layout = !p->empty();
      }
      const std::string& p = a.weights_prefix;
      if (ckpt->find(p + "embed_tokens.weight")) {
        a.embeddings = checkpoint_layout = true;
        infer(a.vocab, dim_of(*ckpt, p + "embed_tokens.weight", 0), "vocab", m.notes);
      }
      if (ckpt->find("lm_head.weight") && !a.lm_head && a.embeddings)
        a.lm_head = true;
      infer(a.layers, count_layers(ckpt->entries(), std::regex("layers\\.(\\d+)\\.")), "layers",
            m.notes);
      infer(a.hidden, dim_of(*ckpt, p + "layers.0.self_attn.q_proj.weight", 0), "hidden", m.notes);
      infer(a.ffn, dim_of(*ckpt, p + "layers.0.mlp.gate_proj.weight", 0), "ffn", m.notes);
      if (a.heads && a.hidden && !a.kv_heads) {
        auto kv_rows = dim_of(*ckpt, p + "layers.0.self_attn.k_proj.weight", 0);
        if (kv_rows && *a.hidden % *a.heads == 0)
          infer(a.kv_heads, *kv_rows / (*a.hidden / *a.heads), "kv_heads", m.notes);
      }
    }
    runtime::LlamaConfig c;
    c.layers = a.layers.value_or(c.layers);
    c.hidden = a.hidden.value_or(c.hidden);
    c.heads = a.heads ? *a.heads : default_heads("llama", c.hidden);
    c.kv_heads = a.kv_heads.value_or(c.heads);
    c.ffn = a.ffn.value_or((8 * c.hidden / 3 + 31) / 32 * 32); // LLaMA's 8/3, rounded up to 32
    c.embeddings = a.embeddings;
    c.lm_head = a.lm_head;
    c.vocab = a.vocab.value_or(c.vocab);
    if (a.padding_mask)
      throw Error("--padding-mask is a bert option (llama attention is causal)");
    m.graph = runtime::build_llama(c);
    m.description = "llama: " + std::to_string(c.layers) + " blocks, hidden " +
                    std::to_string(c.hidden) + ", " + std::to_string(c.heads) + " heads / " +
                    std::to_string(c.kv_heads) + " kv heads, ffn " + std::to_string(c.ffn) +
                    (c.embeddings ? ", embeddings" : "") + (c.lm_head ? ", lm head" : "");
  } else {
    if (a.layers || a.hidden || a.heads || a.kv_heads || a.ffn || a.seq || a.embeddings ||
        a.padding_mask || a.lm_head)
      throw Error("mlp takes --dims (and --batch), not transformer flags");
    runtime::MlpConfig c;
    if (!a.dims.empty())
      c.dims = a.dims;
    else if (ckpt) {
      std::vector<std::int64_t> dims;
      for (int i = 1; ckpt->find("fc" + std::to_string(i) + ".weight"); ++i) {
        const auto& s = ckpt->find("fc" + std::to_string(i) + ".weight")->shape;
        if (dims.empty())
          dims.push_back(s[1].size());
        dims.push_back(s[0].size());
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
      m.bindings[sym] = a.seq.value_or(128);
      if (a.seq)
        m.fixed[sym] = *a.seq;
    } else {
      throw Error("graph symbol '" + sym + "' has no size option (rlx binds batch and seq)");
    }
  }
  for (const auto& [sym, v] : m.bindings)
    if (v <= 0)
      throw Error("--" + sym + " must be positive, got " + std::to_string(v));
  m.load.prefix = a.weights_prefix;
  m.load.allow_extra = a.allow_extra_weights || checkpoint_layout;
  return m;
}

runtime::Session make_session(const ModelArgs& a) {
  runtime::SessionOptions so;
  so.cpu.gemm = a.gemm == "openblas" ? cpu::GemmProvider::openblas : cpu::GemmProvider::onednn;
  so.cpu.num_threads = a.threads;
  return runtime::Session(runtime::Device::parse(a.device), std::move(so));
}

runtime::CompileOptions compile_options(const ModelArgs& a, const ResolvedModel& m) {
  runtime::CompileOptions co;
  co.fuse = !a.no_fuse;
  co.bindings = m.fixed;
  return co;
}

void load_weights(runtime::Executable& exe, const ModelArgs& a, const ResolvedModel& m) {
  if (!m.params.empty())
    exe.set_params(m.params);
  else if (a.weights.empty())
    exe.set_params(runtime::init_params(exe.graph(), a.seed));
  else
    exe.load_params(a.weights, m.load);
}

} // namespace rlx::cli
