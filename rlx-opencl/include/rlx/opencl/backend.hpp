// backend.hpp: the OpenCL backend: its options, the compile::Backend implementation, its factory
// and inspection.
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/compile/kernel_timing.hpp"
#include "rlx/ir/claims.hpp"
#include "rlx/opencl/devices.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlx::opencl {

/// Which GEMM kernel runs MatMul.
enum class GemmKernel : std::uint8_t {
  automatic, ///< by measurement (DESIGN.md, "GEMM"): rows below 8 rows, and on a CPU device
             ///< (pocl) for every x · Wᵀ; else CLBlast where built with it, else tiled from 64
  tiled,     ///< 64 x 64 tiles staged in local memory (matmul_f32_k)
  rows,      ///< one work-item per output element (matmul_rows_f32_k)
  clblast,   ///< CLBlast's SGEMM where it applies (unbatched, no SwiGluMatMul gate epilogue;
             ///< else tiled from 64 rows, rows below); an Error when built without CLBlast
};

/// Which attention kernel runs Attention.
enum class AttentionKernel : std::uint8_t {
  automatic, ///< by measurement (DESIGN.md, "Attention"): gpu on a GPU device where it fits;
             ///< else tiled from 16 query rows where the tiles fit the device's local memory,
             ///< rows otherwise (decode steps)
  rows,      ///< one work-item per query row, K / V from global memory (attention_f32_k)
  tiled,     ///< 16-row work-groups, Q / K / V tiles in local memory (attention_tiled_f32_k);
             ///< rows where the tiles do not fit the device's local memory
  gpu, ///< 64-item work-groups over 8 query rows, scores / softmax / P·V split over the group
       ///< (attention_gpu_f32_k); the automatic choice on GPU devices; tiled's rule where its
       ///< local memory does not fit the device's
};

/// Whether rlx-opencl was built with CLBlast (found at configure time; optional).
bool have_clblast();

/// Options of the OpenCL backend, fixed when the backend is created.
struct OpenClOptions {
  /// The device, numbered as list_devices() numbers them (`opencl:N`).
  int device = 0;
  /// Largest single device buffer the arena may use, in bytes; 0 means the device's
  /// CL_DEVICE_MAX_MEM_ALLOC_SIZE. A larger arena is split into several buffers.
  std::int64_t max_buffer_bytes = 0;
  /// Folder of the on-disk program cache; empty means $RLX_OPENCL_CACHE_DIR, else
  /// $XDG_CACHE_HOME/rlx/opencl, else ~/.cache/rlx/opencl.
  std::string cache_dir;
  /// The GEMM kernel (automatic unless a test or benchmark pins one).
  GemmKernel gemm = GemmKernel::automatic;
  /// The attention kernel (automatic unless a test or benchmark pins one).
  AttentionKernel attention = AttentionKernel::automatic;
};

struct DeviceRuntime;

/// The OpenCL backend: claims opencl_claims() and compiles LIR into a flat list of kernel launches
/// over one device arena, run on one in-order queue (see rlx-opencl/DESIGN.md). Creating it opens
/// the device and builds (or loads from the disk cache) its program, once per process and device.
class OpenClBackend final : public compile::Backend {
public:
  /// A backend on device \p opts.device; throws Error when there is no OpenCL runtime, no such
  /// device, or its program does not build.
  explicit OpenClBackend(OpenClOptions opts = {});
  ~OpenClBackend() override;

  /// \returns "opencl".
  std::string name() const override;
  /// \returns opencl_claims().
  const ir::ClaimSet& claims() const override;
  /// \returns the device's base-address alignment (at least 64 bytes): every arena slot starts
  /// on it.
  std::int64_t alignment() const override;
  /// Kernel scratch of node \p id: LayerNormGrad / RmsNormGrad keep each row's mean and 1 / std
  /// (8 bytes a row) and their per-row-block partial column sums (8 D bytes a block, at most 64
  /// blocks) for dgamma / dbeta; every other kernel needs none.
  std::int64_t scratch_bytes(const ir::Graph& g, ir::NodeId id) const override;
  /// Compiles an LIR module planned with this backend's alignment(). Throws Error naming the node
  /// when an op is not claimed or a kernel cannot take it.
  std::unique_ptr<compile::Executable> compile(const ir::Module& lir) const override;
  /// Compiles \p lir with its Params bound by name to \p weights: each weight is one device
  /// buffer per device and region (the region's derived copy of kind "opencl:<device>"), uploaded
  /// once and read by every executable compiled against the region (every shape variant);
  /// WeightRegion::write (or set_param on any of them) refreshes it for all.
  std::unique_ptr<compile::Executable>
  compile_with_weights(const ir::Module& lir,
                       std::shared_ptr<compile::WeightRegion> weights) const override;

  /// The options the backend was created with.
  const OpenClOptions& options() const { return opts_; }
  /// The device it runs on.
  const DeviceInfo& device() const;

private:
  OpenClOptions opts_;
  std::shared_ptr<DeviceRuntime> rt_;
};

/// Creates an OpenCL backend (the factory the runtime's backend registry calls).
std::unique_ptr<compile::Backend> make_opencl_backend(const OpenClOptions& opts = {});

/// One line per launch of an OpenCL executable, in execution order: node, op, kernel and arena
/// locations. Throws Error when \p exe was not made by an OpenClBackend.
std::string kernel_listing(const compile::Executable& exe);

/// Starts (\p on) or stops timing every step of an OpenCL executable's runs; clears the times.
/// While on, execute() runs on the device's profiling queue (CL_QUEUE_PROFILING_ENABLE, created
/// on first use) with one event per step and reads their START / END timestamps after the wait;
/// runs that are not profiled use the plain queue, untouched. Throws Error when \p exe was not
/// made by an OpenClBackend.
void set_kernel_profiling(compile::Executable& exe, bool on);

/// Per computing node, in execution order, the device time of its steps over the runs profiled
/// since set_kernel_profiling(exe, true) (a kernel: END - START of its event; a library call:
/// between markers before and after it), with its work. A row's provider is the node's first
/// step (its kernel, "clblast_sgemm" or "copy"), its note the further steps ("+ epilogue_f32_k").
/// Empty while no run was profiled. Throws Error when \p exe was not made by an OpenClBackend.
compile::KernelTimings kernel_timings(const compile::Executable& exe);

/// The number of arena buffers of an OpenCL executable (1 unless the arena is larger than the
/// largest allocation). Throws Error when \p exe was not made by an OpenClBackend.
int arena_buffer_count(const compile::Executable& exe);

} // namespace rlx::opencl
