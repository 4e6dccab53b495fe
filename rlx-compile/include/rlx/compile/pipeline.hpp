// pipeline.hpp: CompilePipeline, HIR / MIR → LIR for one backend.
//
// Stage order: lower HIR → (specialise params) → constant folding → simplify / CSE → fusion passes
// (chosen by the backend's claim set) → legalise against the claim set → (materialise broadcasts
// the backend's kernels do not take) → DCE → bind symbols → memory plan → LIR. Every graph stage
// runs through one PassManager, so RLX_VERIFY and RLX_IR_DUMP cover all of them; the input graph is
// always verified, and so is the final MIR.
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/compile/legalize.hpp"
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/fusion/pass.hpp"
#include "rlx/fusion/report.hpp"
#include "rlx/ir/module.hpp"
#include "rlx/ir/reference.hpp"

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::compile {

/// Options of one compile.
struct CompileOptions {
  ir::Bindings bindings;        ///< sizes of symbolic dims (all must be bound before planning)
  bool fold_constants = true;   ///< run constant folding
  bool fuse = true;             ///< run the fusion passes the claim set allows
  fusion::FusionOptions fusion; ///< per-pass toggles (fusion passes not to run)
  /// Params to specialise into constants (parameter specialisation); empty = keep all params.
  ir::reference::TensorMap specialize_params;
};

/// Everything one compile produced.
struct CompileResult {
  ir::Module lir;                        ///< MIR + memory plan
  fusion::FusionReport fusion;           ///< what fused, what was missed and why
  DispatchReport dispatch;               ///< native / rewritten / unsupported per op kind
  std::vector<fusion::PassStats> passes; ///< per-pass time and change, in run order
  double total_ms = 0;                   ///< wall time of the whole pipeline
  /// Kernels (non-leaf nodes other than `get`, a view of a tuple part) of the graph just before
  /// the first fusion pass and just after the last one (equal when no fusion pass runs).
  int kernels_before_fusion = 0;
  int kernels_after_fusion = 0;
};

/// The staged compile pipeline for one backend.
class CompilePipeline {
public:
  CompilePipeline(const Backend& backend, CompileOptions opts = {});
  /// Compiles a HIR or MIR module to LIR. Throws Error naming the op, node and backend when an op
  /// stays unsupported after legalisation, and VerifyError naming the pass that broke the graph.
  CompileResult run(const ir::Module& m) const;
  /// Same as run(ir::Module::hir(g)).
  CompileResult run(const ir::Graph& g) const;
  /// The pass names each stage runs, in order (for inspection and tests); the last entry is the
  /// "memory-plan" stage, which is not a graph pass.
  std::vector<std::string> pass_names() const;
  /// Calls \p fn with (stage name, graph) for the input and after every graph pass of every run
  /// (inspect_pipeline collects the stages' text through it).
  void set_observer(std::function<void(std::string_view, const ir::Graph&)> fn) {
    observer_ = std::move(fn);
  }
  /// The backend this pipeline compiles for.
  const Backend& backend() const { return backend_; }
  /// The options of every run().
  const CompileOptions& options() const { return opts_; }

private:
  void verify_input(const ir::Graph& g) const;
  const Backend& backend_;
  CompileOptions opts_;
  std::function<void(std::string_view, const ir::Graph&)> observer_;
};

} // namespace rlx::compile
