// executable.hpp (private): OpenClExecutable, one device arena and one flat list of launches on
// the device's in-order queue.
#pragma once

#include "cl.hpp"
#include "rlx/compile/backend.hpp"
#include "rlx/compile/weights.hpp"
#include "rlx/ir/module.hpp"
#include "rlx/opencl/backend.hpp"
#include "runtime.hpp"

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlx::opencl {

/// Where a buffer lives: an arena chunk and a byte offset in it.
struct Loc {
  cl_mem mem = nullptr;
  std::int64_t offset = 0;
};

/// One step of a run: a kernel launch (every argument set at compile time) or a buffer copy.
struct Step {
  Kernel kernel; ///< null for a copy
  cl_uint dims = 1;
  std::size_t global[3] = {1, 1, 1};
  std::size_t local[3] = {0, 0, 0}; ///< all 0: the implementation chooses
  Loc copy_src, copy_dst;           ///< for a copy
  std::int64_t copy_bytes = 0;
  /// A library call that enqueues its own work on the queue (CLBlast), when set.
  std::function<void(cl_command_queue)> call;
  std::string label;
  std::uint32_t node = 0; ///< the node it computes (its id)
  std::string what;       ///< the kernel's name, "clblast_sgemm" or "copy" (for the profile)
};

/// The kernel choices of the backend's options a compile follows.
struct KernelChoices {
  GemmKernel gemm = GemmKernel::automatic;
  AttentionKernel attention = AttentionKernel::automatic;
};

/// Splits an arena into chunks of at most \p max_chunk bytes at boundaries no buffer crosses:
/// \p extents are the [offset, offset + bytes) ranges of every planned buffer. \returns each
/// chunk's [begin, end). Throws Error when one group of overlapping buffers alone exceeds
/// \p max_chunk.
std::vector<std::pair<std::int64_t, std::int64_t>>
split_arena(std::vector<std::pair<std::int64_t, std::int64_t>> extents, std::int64_t max_chunk);

/// A compiled graph on one OpenCL device. Compile time allocates the arena (one buffer, or several
/// when it exceeds the largest allocation), uploads constants and the kernels' metadata, creates
/// every kernel with its arguments; execute() enqueues the steps on the in-order queue and waits
/// once; output() reads one result back. Not safe to use from two threads at once.
class OpenClExecutable final : public compile::Executable {
public:
  /// Compiles \p lir for \p rt's device; \p alignment is the backend's; \p max_chunk the largest
  /// arena buffer; \p choices the MatMul and Attention kernels (automatic: by measurement). With \p
  /// weights, Params live in the region's device copies (kind "opencl:<device>", one buffer per
  /// weight, shared by every executable of the region on this device) instead of the arena.
  OpenClExecutable(const ir::Module& lir, std::shared_ptr<DeviceRuntime> rt, std::int64_t alignment,
                   std::int64_t max_chunk, KernelChoices choices,
                   std::shared_ptr<compile::WeightRegion> weights = nullptr, int device = 0);
  ~OpenClExecutable() override;

  void set_input(const std::string& name, const ir::Tensor& value) override;
  void set_param(const std::string& name, const ir::Tensor& value) override;
  void execute() override;
  ir::Tensor output(std::size_t index) const override;
  std::int64_t device_bytes() const override { return device_bytes_; }
  /// True when compiled with a weight region: its device copies are refreshed by every
  /// WeightRegion::write, so the runtime need not call set_param on each executable.
  bool reads_weights_in_place() const override { return weights_ != nullptr; }
  /// The device buffer weight \p name is read from (null when params live in the arena).
  cl_mem weight_buffer(const std::string& name) const;

  /// One line per step (see kernel_listing()).
  std::string listing() const;
  /// Starts (\p on) or stops timing every step of the runs on the device's profiling queue;
  /// clears the times (see set_kernel_profiling()).
  void set_profiling(bool on);
  /// Per node, its steps' device time over the profiled runs (see kernel_timings()).
  compile::KernelTimings timings() const;
  /// The number of arena buffers.
  int buffer_count() const { return static_cast<int>(chunks_.size()); }

  /// The location of node \p id's planned buffer (used while lowering).
  Loc loc(const ir::Graph& g, ir::NodeId id) const;
  /// The location and size of node \p id's planned kernel scratch (used while lowering); a null
  /// location with 0 bytes when the plan has none.
  std::pair<Loc, std::int64_t> scratch_loc(ir::NodeId id) const;

private:
  struct Leaf {
    ir::Shape shape;
    Loc loc;
    bool set = false;
  };
  struct Output {
    ir::Shape shape;
    Loc loc;
  };
  struct Chunk {
    std::int64_t begin = 0, end = 0;
    Mem mem;
  };

  void upload(std::map<std::string, Leaf>& leaves, const char* what, const std::string& name,
              const ir::Tensor& value);

  /// Waits for queue \p q by reading the status word; throws Error naming the failing node.
  void check_status(cl_command_queue q);
  /// Enqueues every step on \p q; with \p events, one profiling event per step (a call step:
  /// a marker before and one after it).
  void enqueue_steps(cl_command_queue q, std::vector<cl_event>* events);
  /// Adds the device times of one profiled run's \p events (one per step, two per call step)
  /// to step_ms_.
  void record_run(const std::vector<cl_event>& events);
  /// Binds Param \p id to the region's device copy of its weight (creating it when new).
  void bind_weight(const ir::Graph& g, ir::NodeId id, int device);

  std::shared_ptr<DeviceRuntime> rt_;
  std::shared_ptr<compile::WeightRegion> weights_; ///< null: params in the arena
  std::map<std::uint32_t, cl_mem> weight_mem_;     ///< Param node id -> its device copy
  std::map<std::string, cl_mem> weight_by_name_;
  std::vector<std::string> updated_;     ///< weights updated in place (Graph::aliases)
  const ir::MemoryPlan* plan_ = nullptr; ///< while compiling
  std::vector<Chunk> chunks_;
  Mem aux_;    ///< kernel metadata and tables, uploaded once
  Mem status_; ///< the error word kernels report through (present when a kernel can fail)
  std::vector<std::string> status_labels_;
  std::int64_t device_bytes_ = 0;
  std::map<std::string, Leaf> inputs_, params_;
  std::vector<Output> outputs_;
  std::vector<Step> steps_;
  /// Work of each computing node (compile::kernel_work), by node id, for the profile's rates.
  std::map<std::uint32_t, std::pair<double, double>> work_; ///< flops, bytes
  std::map<std::uint32_t, std::string> op_names_;
  bool profiling_ = false;
  int profiled_runs_ = 0;
  std::vector<std::vector<double>> step_ms_; ///< per step, its device ms in each profiled run
};

} // namespace rlx::opencl
