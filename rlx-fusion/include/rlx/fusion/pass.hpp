// pass.hpp: Pass, PassContext, PassRegistry and the PassManager that runs named pass lists.
//
// A pass is a graph transformation `bool run(Graph&, PassContext&)` that returns whether it changed
// the graph. Passes are registered by explicit calls (no static initialisers) in a PassRegistry
// under a name, so pipelines are lists of names ("const-fold,simplify,cse,dce"). The PassManager
// owns the cross-cutting debugging: it verifies the graph after every pass (in debug builds, and in
// release builds when RLX_VERIFY=1) and throws a VerifyError naming the pass that broke it, dumps
// the text IR of every stage to files when RLX_IR_DUMP=<dir>, and records each pass's wall time,
// whether it changed the graph and the node counts before and after (printed to stderr when
// RLX_PRINT_PASSES=1). No pass prints anything itself.
#pragma once

#include "rlx/ir/claims.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/reference.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::fusion {

struct IoFusionGate;

struct FusionReport;

/// How binary ops (Add ... Minimum, Compare, Where) receive operands of a smaller shape.
enum class BroadcastPolicy : std::uint8_t {
  implicit, ///< the backend broadcasts itself (NumPy rules): nothing is materialised
  simple,   ///< the backend handles equal shapes, scalars and trailing suffixes ([N, C] + [C]);
            ///< every other broadcast operand is materialised with an Expand
  none,     ///< every operand whose shape differs from the result is materialised with an Expand
};

/// Knobs of the standard passes. Defaults are what the compile pipeline uses.
struct PassOptions {
  /// const-fold: a node is folded when its result has at most this many elements, or no more
  /// bytes than its constant operands together (folding never inflates the graph's constant
  /// data beyond this bound).
  std::int64_t fold_max_elements = 4096;
  /// const-fold: a node whose estimated work exceeds this many units (about 4 ns each: one
  /// multiply-add of a MatMul, a quarter of an element of other ops; a While counts max_iterations
  /// bodies) is not folded, so one fold stays well under 10 ms in the reference interpreter
  /// (rlx-compile/DESIGN.md has the measurements).
  std::int64_t fold_max_work = std::int64_t{1} << 20;
  /// legalize, lower-control-flow, lower-dot-general and unfuse: the limits the decompositions
  /// honour (a While whose unrolled copy would exceed DecomposeOptions::unroll_max_nodes nodes is
  /// an error rather than a silent explosion of the graph).
  ir::DecomposeOptions decompose;
  /// legalize-broadcast: which implicit broadcasts to materialise.
  BroadcastPolicy broadcast = BroadcastPolicy::implicit;
};

/// What a pass may read besides the graph: the backend's claims, where to report fusions, options,
/// and the inputs of the parameterised passes (specialise-params, bind-symbols).
struct PassContext {
  const ir::ClaimSet* claims = nullptr; ///< the backend's claim set; null = claims everything
  FusionReport* report = nullptr;       ///< where fusion passes record applied / missed patterns
  PassOptions options;
  std::string backend;                                         ///< backend name, for messages
  const ir::reference::TensorMap* specialize_params = nullptr; ///< specialize-params: name → value
  const ir::Bindings* bindings = nullptr;                      ///< bind-symbols: symbol → size
  /// The backend's IO fusion-benefit gate (io_gate.hpp); null = every legal fusion applies.
  const IoFusionGate* io_gate = nullptr;
};

/// A graph transformation.
class Pass {
public:
  virtual ~Pass() = default;
  /// The name under which the pass is registered ("const-fold").
  virtual std::string_view name() const = 0;
  /// Transforms \p g; \returns whether \p g changed. Throws rlx::Error on input it cannot handle.
  virtual bool run(ir::Graph& g, PassContext& ctx) = 0;
};

/// One pass execution, as recorded by the PassManager.
struct PassStats {
  std::string name;
  double ms = 0; ///< wall time in milliseconds (including repeats to a fixed point)
  bool changed = false;
  std::size_t nodes_before = 0;
  std::size_t nodes_after = 0;
};

/// Pass factories by name. Filled by explicit calls such as rlx::compile::register_compile_passes.
class PassRegistry {
public:
  using Factory = std::function<std::unique_ptr<Pass>()>;
  /// Registers \p factory under \p name; throws Error when the name is taken.
  void add(std::string name, Factory factory);
  /// \returns whether a pass named \p name is registered.
  bool contains(std::string_view name) const;
  /// A new instance of the pass named \p name; throws Error listing the known names otherwise.
  std::unique_ptr<Pass> create(std::string_view name) const;
  /// Every registered name, sorted.
  std::vector<std::string> names() const;

private:
  std::map<std::string, Factory, std::less<>> factories_;
};

/// Splits a pipeline string "a,b, c" into names (empty entries are an error).
std::vector<std::string> parse_pipeline(std::string_view pipeline);

/// Options of a PassManager.
struct PassManagerOptions {
  /// Verify the graph before the first and after every pass (debug builds, or RLX_VERIFY=1).
  bool verify = false;
  /// Directory to write every stage's text IR into ("" = no dump; RLX_IR_DUMP).
  std::string dump_dir;
  /// Print one statistics line per pass to stderr as it finishes (RLX_PRINT_PASSES).
  bool print_passes = false;
  /// Called with (pass name, graph) after every pass and once before the first with name "input";
  /// inspect_pipeline collects the stages through it.
  std::function<void(std::string_view, const ir::Graph&)> observer;

  /// The defaults: verify in debug builds or when RLX_VERIFY is 1/true/on; dump to RLX_IR_DUMP;
  /// print pass statistics when RLX_PRINT_PASSES is 1/true/on.
  static PassManagerOptions from_env();
};

/// Runs a list of passes over a graph with verification, dumps and timing.
class PassManager {
public:
  explicit PassManager(PassManagerOptions opts = PassManagerOptions::from_env());

  /// Appends \p pass. With \p to_fixed_point the pass is repeated until it reports no change (at
  /// most 16 times).
  PassManager& add(std::unique_ptr<Pass> pass, bool to_fixed_point = false);
  /// Appends the pass named \p name from \p registry.
  PassManager& add(const PassRegistry& registry, std::string_view name,
                   bool to_fixed_point = false);
  /// Appends every pass named in \p names, in order.
  PassManager& add(const PassRegistry& registry, const std::vector<std::string>& names);

  /// The names of the passes, in run order.
  std::vector<std::string> names() const;
  /// The options this manager runs with.
  const PassManagerOptions& options() const { return opts_; }

  /// Runs every pass in order; \returns whether any changed \p g. Throws VerifyError naming the
  /// pass when the graph fails verification after it (or naming "input" when it fails before the
  /// first pass), and rethrows a pass's Error prefixed with the pass name.
  bool run(ir::Graph& g, PassContext& ctx);
  /// Per-pass statistics of every run() so far, in run order.
  const std::vector<PassStats>& stats() const { return stats_; }

private:
  struct Entry {
    std::unique_ptr<Pass> pass;
    bool to_fixed_point;
  };
  void after_stage(std::string_view stage, const ir::Graph& g);
  PassManagerOptions opts_;
  std::vector<Entry> passes_;
  std::vector<PassStats> stats_;
  int stage_counter_ = 0;
};

} // namespace rlx::fusion
