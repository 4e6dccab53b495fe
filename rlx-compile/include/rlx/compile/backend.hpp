// backend.hpp: the interface between the compile pipeline, the backends and the runtime.
//
// A backend says what it can run (a ClaimSet of op kinds and dtypes), how much scratch memory a
// kernel needs (so the memory planner can plan it), and compiles LIR into an Executable. The
// Executable owns device memory (one arena) and a queue: inputs and params are uploaded into their
// planned slots, execute() runs the kernel list, outputs are downloaded. Host backends implement
// upload / download as copies; a device backend (OpenCL) as buffer writes / reads on its queue.
#pragma once

#include "rlx/compile/weights.hpp"
#include "rlx/fusion/io_gate.hpp"
#include "rlx/fusion/pass.hpp"
#include "rlx/ir/claims.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/module.hpp"
#include "rlx/ir/tensor.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlx::compile {

/// A compiled graph on one device: an arena laid out by the memory plan, and a flat kernel list.
class Executable {
public:
  virtual ~Executable() = default;
  /// Uploads \p value into the slot of the Input named \p name (type must match exactly).
  virtual void set_input(const std::string& name, const ir::Tensor& value) = 0;
  /// Uploads \p value into the slot of the Param named \p name (type must match exactly).
  virtual void set_param(const std::string& name, const ir::Tensor& value) = 0;
  /// Runs every kernel once, in schedule order, and waits for completion. Throws Error when an
  /// input or param was never set.
  virtual void execute() = 0;
  /// Downloads graph output \p index.
  virtual ir::Tensor output(std::size_t index) const = 0;
  /// Bytes of device memory held (the arena plus any packed weights).
  virtual std::int64_t device_bytes() const = 0;
  /// Whether kernels read Params in place from the WeightRegion the executable was compiled
  /// with (so a write to the region reaches them); false when set_param must upload a copy.
  virtual bool reads_weights_in_place() const { return false; }
};

/// A backend: a claim set and a compiler from LIR to an Executable.
class Backend {
public:
  virtual ~Backend() = default;
  /// Short device name ("cpu", "opencl").
  virtual std::string name() const = 0;
  virtual const ir::ClaimSet& claims() const = 0;
  /// Arena alignment the backend needs (bytes, a power of two).
  virtual std::int64_t alignment() const { return 64; }
  /// Scratch bytes the kernel for node \p id needs while it runs (0 = none).
  virtual std::int64_t scratch_bytes(const ir::Graph& g, ir::NodeId id) const {
    (void)g;
    (void)id;
    return 0;
  }
  /// How the backend's kernels take broadcast operands of binary ops, Compare and Where; the
  /// pipeline's legalize-broadcast stage materialises (with Expand) what they do not handle.
  virtual fusion::BroadcastPolicy broadcast_policy() const {
    return fusion::BroadcastPolicy::implicit;
  }
  /// The backend's cost knobs for the IO fusion-benefit gate (rlx/fusion/io_gate.hpp): the
  /// fusion passes refuse a rewrite whose fused kernel the model says is slower (a
  /// not_profitable miss). Null (the default): every legal fusion the backend claims applies.
  virtual const fusion::IoFusionGate* io_fusion_gate() const { return nullptr; }
  /// Compiles an LIR module; throws Error on an op it cannot run.
  virtual std::unique_ptr<Executable> compile(const ir::Module& lir) const = 0;
  /// Compiles an LIR module whose Params are bound by name to \p weights, shared with every
  /// other executable compiled against them. A host backend reads them in place (see
  /// Executable::reads_weights_in_place); this default, for backends with memory of their own,
  /// compiles and uploads a copy of every weight already set.
  virtual std::unique_ptr<Executable>
  compile_with_weights(const ir::Module& lir, std::shared_ptr<WeightRegion> weights) const {
    auto exe = compile(lir);
    for (ir::NodeId id : lir.graph().params()) {
      const std::string& name = lir.graph().node(id).attr<ir::LeafAttrs>().name;
      if (weights->is_set(name))
        exe->set_param(name, weights->read(name));
    }
    return exe;
  }
};

} // namespace rlx::compile
