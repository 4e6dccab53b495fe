// model_args.hpp: the options that choose a model (built-in or a graph file), its weights, its
// shape and the device, shared by the rlx subcommands.
#pragma once

#include "rlx/runtime/runtime.hpp"

#include <CLI/CLI.hpp>

#include <optional>
#include <string>
#include <vector>

namespace rlx::cli {

/// Bounds of the size flags that are not model fields (those are runtime::ModelLimits).
struct CliLimits {
  static constexpr std::int64_t batch = 1 << 24; ///< --batch
  static constexpr std::int64_t seq = 1 << 24;   ///< --seq
  static constexpr int threads = 256;            ///< --threads
  static constexpr int runs = 1000000;           ///< --runs, --warmup
};

/// What the model options parsed to.
struct ModelArgs {
  std::string model;      ///< bert | llama | mlp; empty = bert, or config.json's with --model-dir
  std::string graph_file; ///< a graph JSON file instead of a built-in model
  std::string model_dir;  ///< a HuggingFace model folder (config.json + safetensors)
  std::string onnx_file;  ///< an ONNX model instead of a built-in model (rlx-onnx)
  /// --onnx: every float initializer is a Param, however small (set by `rlx grad`: the
  /// initializers are the parameters); else small ones are Constants that fold.
  bool onnx_all_params = false;
  std::optional<int> layers, hidden, heads, kv_heads, ffn, vocab;
  std::optional<double> norm_eps, rope_theta;
  std::optional<std::int64_t> batch, seq;
  std::vector<std::int64_t> dims; ///< MLP widths
  bool embeddings = false, padding_mask = false, lm_head = false, tie_embeddings = false;
  std::string weights; ///< safetensors file or index; empty = seeded random weights
  std::string weights_prefix;
  bool allow_extra_weights = false;
  std::uint64_t seed = 0;
  std::string device = "cpu";
  std::string gemm = "auto";
  int threads = 0;
  bool no_fuse = false;
  std::vector<std::string> no_fuse_passes; ///< --no-fuse-pass, repeatable
  bool no_io_gate = false;                 ///< --no-io-gate: every legal fusion, unjudged
};

/// Registers the model options on \p app. \p with_weights adds --weights and its companions.
void add_model_options(CLI::App& app, ModelArgs& a, bool with_weights = true);

/// A resolved model: its graph, a one-line description, how its weights are loaded and the
/// default symbol sizes (--batch / --seq, defaulting to 1 and 128).
struct ResolvedModel {
  ir::Graph graph;
  std::string description;
  ir::Bindings bindings;          ///< default sizes of the graph's symbols
  ir::Bindings fixed;             ///< sizes given explicitly on the command line
  runtime::LoadOptions load;      ///< how --weights maps onto the params
  std::string weights;            ///< the checkpoint to load (--weights or --model-dir), or empty
  std::int64_t max_positions = 0; ///< rows of a position table bounding --seq (0: no bound)
  std::vector<std::string> notes; ///< things worth telling the user (inferred config, ...)
  runtime::TensorMap params;      ///< weights that come with the model (ONNX initializers)
};

/// Builds the model the options describe. With --model-dir the architecture and hyper-parameters
/// come from config.json (flags override them) and the weights from the folder. With --weights on
/// a built-in model, the config fields not given on the command line are read off the checkpoint
/// (layers, widths, embeddings, a "bert." / "model." prefix). Throws rlx::Error with one clear
/// line on a bad combination.
/// \p with_weights false (inspect, export, demo) reads only the config of --model-dir.
ResolvedModel resolve_model(const ModelArgs& a, bool with_weights = true);

/// The model of --onnx: imported with --batch / --seq bound (onnx_model.cpp). Throws rlx::Error
/// listing every unsupported op, or saying that rlx was built without rlx-onnx.
ResolvedModel resolve_onnx(const ModelArgs& a);

/// A session on the options' device with their backend settings. `--device auto` compiles \p m
/// for every available device, predicts its run time on each with the measured cost model and
/// takes the fastest, printing the predictions on stderr.
runtime::Session make_session(const ModelArgs& a, const ResolvedModel& m);

/// Compile options from the model options: --no-fuse and the explicitly given sizes.
runtime::CompileOptions compile_options(const ModelArgs& a, const ResolvedModel& m);

/// Sets the executable's params: from --weights / --model-dir (unused checkpoint tensors are an
/// error unless --allow-extra-weights), else seeded random values (--seed).
void load_weights(runtime::Executable& exe, const ModelArgs& a, const ResolvedModel& m);

/// Splits "name=path" (of \p flag, e.g. "--input"); throws naming the flag on a malformed pair.
std::pair<std::string, std::string> split_pair(const std::string& s, const char* flag);

/// The [batch, seq] i64 defaults HuggingFace uses for inputs a caller leaves out (positions
/// 0..seq-1, token type 0, attention everywhere) for input \p name of \p type under \p b;
/// nullopt for any other input or a size \p b leaves symbolic.
std::optional<ir::Tensor> hf_default(const std::string& name, const ir::Shape& type,
                                     const ir::Bindings& b);

} // namespace rlx::cli
