// session.hpp: Session, the front door of the runtime: compile graphs for one device.
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/fusion/fusion_passes.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"
#include "rlx/runtime/backend_registry.hpp"
#include "rlx/runtime/compile_cache.hpp"
#include "rlx/runtime/device.hpp"
#include "rlx/runtime/executable.hpp"
#include "rlx/runtime/trainer.hpp"

#include <memory>

namespace rlx::runtime {

/// Options of one compile (part of the compile-cache key).
struct CompileOptions {
  bool fold_constants = true;   ///< run constant folding
  bool fuse = true;             ///< run the fusion passes the backend's claims allow
  fusion::FusionOptions fusion; ///< per-pass toggles: fusion passes not to run
  /// Sizes for some or all symbols fixed at compile time. When they bind every symbol of the
  /// graph, Session::compile compiles that variant at once (so errors show there); inputs of
  /// other sizes are then an error.
  ir::Bindings bindings;
  /// The weight region to bind Params to by name, shared with the Executables already using it
  /// (e.g. `other.weights()`: a second graph of the same model shares its weights and their
  /// packed copies). Null gives the Executable a region of its own. Not part of the cache key.
  std::shared_ptr<compile::WeightRegion> weights;
};

/// Options of a Session.
struct SessionOptions {
  /// The backends to use; when empty, builtin_backends(cpu).
  BackendRegistry backends;
  /// Options of the builtin CPU backend (ignored when `backends` is given).
  cpu::CpuOptions cpu;
  /// The compile cache; null gives the session a cache of its own. Sessions may share one.
  std::shared_ptr<CompileCache> cache;
};

namespace detail {
struct SessionState;
} // namespace detail

/// Compiles graphs for one device. Executables keep what they need of the session alive, so they
/// may outlive it.
class Session {
public:
  /// A session on \p device; throws Error when no registered backend can drive it.
  explicit Session(Device device = Device::cpu(), SessionOptions opts = {});
  ~Session();
  Session(Session&&) noexcept;
  Session& operator=(Session&&) noexcept;

  /// The session's device.
  const Device& device() const;
  /// The backend the session compiles for.
  const compile::Backend& backend() const;
  /// The compile cache (shared with any session given the same one).
  CompileCache& cache() const;

  /// Compiles a HIR or MIR graph. The graph is verified at once; static graphs (or graphs whose
  /// symbols \p opts binds) are compiled at once, symbolic ones per binding when they run.
  /// Throws Error naming the node on an invalid graph or an op the backend cannot run.
  Executable compile(const ir::Graph& g, const CompileOptions& opts = {}) const;
  /// Compiles a HIR or MIR module (an LIR module is already compiled: an Error).
  Executable compile(const ir::Module& m, const CompileOptions& opts = {}) const;
  /// Compiles the training step of \p model (compile::build_training_graph: forward, loss,
  /// backward and optimizer update in one graph, compiled and memory-planned once, parameters and
  /// optimizer state updated in place). The optimizer state starts at zero; set the model's
  /// params (Trainer::set_params / load_params) before the first step. Throws
  /// compile::TrainingCompileError or autodiff::AutodiffError with the reason.
  Trainer compile_training(const ir::Graph& model, const TrainerOptions& topts = {},
                           const CompileOptions& opts = {}) const;

private:
  std::shared_ptr<detail::SessionState> state_;
};

} // namespace rlx::runtime
