// executable.hpp: Executable, a compiled graph with its weights, run on named host tensors.
#pragma once

#include "rlx/compile/pipeline.hpp"
#include "rlx/compile/weights.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/tensor.hpp"
#include "rlx/runtime/compile_cache.hpp"
#include "rlx/runtime/safetensors.hpp"

#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlx::runtime {

namespace detail {
struct ExecutableState;
} // namespace detail

/// How Executable::load_params matches a weights file to the graph's Params.
struct LoadOptions {
  /// Prepended to every Param name to find its tensor in the file (e.g. "bert." for a
  /// BertModel checkpoint read by a graph built without a prefix). A Param the file lacks under
  /// the prefix is looked up under its own name (HF keeps "lm_head.weight" outside "model."); a
  /// "*.LayerNorm.weight" / ".bias" also under the legacy "*.LayerNorm.gamma" / ".beta".
  std::string prefix;
  /// Tolerate tensors in the file that no Param reads (a checkpoint's pooler or heads).
  bool allow_extra = false;
  /// Tolerate Params the file lacks (they must then be set with set_param before run).
  bool allow_missing = false;
  /// Convert between float dtypes (an f16 / bf16 checkpoint into f32 Params); other dtype
  /// differences are always errors.
  bool convert_floats = true;
};

/// One compiled variant of an Executable: the sizes its symbols are bound to and how it was made.
struct VariantInfo {
  ir::Bindings bindings;                         ///< the variant's symbol sizes
  std::shared_ptr<const CompiledGraph> compiled; ///< the pipeline's result (shared via the cache)
  bool cache_hit = false; ///< whether the pipeline result came from the compile cache
  double backend_ms = 0;  ///< wall time of the backend compile (kernels, arena)
  /// Device memory of the variant's first backend executable: its arena less the Param slots,
  /// plus the packed weight copies it reads (shared with other variants).
  std::int64_t device_bytes = 0;
  /// The backend's executable (for backend-specific inspection such as
  /// rlx::cpu::kernel_listing); owned by the Executable, valid while it lives.
  const compile::Executable* executable = nullptr;
};

/// A compiled graph on one device, with its weights. Made by Session::compile.
///
/// A graph with symbolic dims (batch, seq) compiles once per binding: run() binds the symbols from
/// its inputs' shapes and compiles that variant on first use (looking the pipeline up in the
/// session's compile cache). Weights are held once, in a compile::WeightRegion bound by name
/// (weights()): every variant reads them in place (a host backend) or receives a copy (a device
/// with memory of its own), and load_params maps safetensors files instead of copying them.
///
/// run() may be called from several threads at once: each run takes a backend executable of its
/// variant that no other run is using (its own activation arena; the weights are shared) and
/// makes one more when all are busy, so the pool grows to the number of concurrent runs and is
/// reused after. set_param / load_params wait for running kernels; the other members are safe
/// to call from any thread but are meant for setup.
class Executable {
public:
  Executable(Executable&&) noexcept;
  Executable& operator=(Executable&&) noexcept;
  ~Executable();

  /// The graph as given to Session::compile.
  const ir::Graph& graph() const;
  /// Input names with their declared types, in graph order.
  std::vector<std::pair<std::string, ir::Shape>> inputs() const;
  /// Param names with their declared types, in graph order.
  std::vector<std::pair<std::string, ir::Shape>> params() const;
  /// Output names, in graph-output order: the output node's label, else "output<i>" (also used
  /// when a label repeats an earlier output's name).
  const std::vector<std::string>& output_names() const;

  /// Sets Param \p name to \p value (shape and dtype must match the declaration; symbolic param
  /// dims must agree across params). Throws Error naming the param and both types otherwise.
  void set_param(const std::string& name, const ir::Tensor& value);
  /// set_param for every entry of \p values; throws on an unknown name.
  void set_params(const TensorMap& values);
  /// Loads Params from the safetensors file at \p path. Every problem is reported at once, before
  /// any data is read, in one line: missing weights, unexpected ones, and ones whose shape or
  /// dtype differs (see LoadOptions for what may be tolerated).
  void load_params(const std::filesystem::path& path, const LoadOptions& opts = {});
  /// Names of Params not set yet.
  std::vector<std::string> missing_params() const;
  /// The weight region the Params are bound to (pass it as CompileOptions::weights to share the
  /// weights with another Executable of the same model).
  std::shared_ptr<compile::WeightRegion> weights() const;

  /// Runs the graph on \p inputs (every Input by name, with matching dtype and rank; symbolic dims
  /// take the inputs' sizes). \returns the outputs by output_names(). Throws Error naming the
  /// input on a missing, unknown or mistyped input, and naming the params never set.
  std::map<std::string, ir::Tensor> run(const std::map<std::string, ir::Tensor>& inputs);
  /// run() that copies back only the outputs at indices \p outputs (in that order): a training
  /// step reads its loss, not the weights it updated in place.
  std::vector<ir::Tensor> run_selected(const std::map<std::string, ir::Tensor>& inputs,
                                       const std::vector<std::size_t>& outputs);

  /// Compiles the variant for \p bindings now (a no-op when it exists) and \returns it; run() does
  /// this implicitly. Useful to time compilation apart from execution.
  const VariantInfo& prepare(const ir::Bindings& bindings = {});
  /// The variants compiled so far, by binding.
  std::vector<const VariantInfo*> variants() const;
  /// The variant a run with these bindings would use, or null when not compiled yet.
  const VariantInfo* variant(const ir::Bindings& bindings) const;
  /// Backend executables made so far over every variant (one per run that was in flight at
  /// once, per variant); each holds an activation arena, none a copy of the weights.
  std::size_t contexts() const;

private:
  friend class Session;
  explicit Executable(std::unique_ptr<detail::ExecutableState> state);
  std::unique_ptr<detail::ExecutableState> state_;
};

} // namespace rlx::runtime
