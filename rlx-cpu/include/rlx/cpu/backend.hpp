// backend.hpp: the CPU backend: its options, the compile::Backend implementation and its factory.
#pragma once

#include "rlx/compile/backend.hpp"
#include "rlx/compile/kernel_timing.hpp"
#include "rlx/ir/claims.hpp"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

namespace rlx::cpu {

/// The library that runs f32 matrix products (MatMul, MatMulBiasAct, SwiGluMatMul).
enum class GemmProvider : std::uint8_t {
  /// Per product shape, the fastest of oneDNN, OpenBLAS and the packed GEMM, timed at compile time
  /// on the real
  /// shape (weights packed as the kernel reads them) once per process and remembered by shape,
  /// transposes, epilogue, threads and ISA (`--gemm auto`, the default).
  automatic,
  onednn,   ///< oneDNN matmul primitives, created at compile time
  openblas, ///< OpenBLAS cblas_sgemm, one call per batch matrix
  /// rlx's own packed GEMM (B packed once into panels, an MR x NR register tile compiled for
  /// AVX-512 / AVX2 / baseline and chosen by CPU features); products it declines run on oneDNN.
  packed,
};

/// "auto", "onednn", "openblas" or "packed" (the `--gemm` spelling).
std::string_view gemm_provider_name(GemmProvider p);
/// The provider spelled \p name by gemm_provider_name(); throws Error naming the choices otherwise.
GemmProvider parse_gemm_provider(std::string_view name);

/// Options of the CPU backend, fixed when the backend is created.
struct CpuOptions {
  /// GEMM library for f32 products; f64 MatMul always uses OpenBLAS dgemm.
  GemmProvider gemm = GemmProvider::automatic;
  /// Threads used by the parallel kernels, oneDNN and OpenBLAS; 0 means every core the process
  /// may run on (TBB's default concurrency).
  int num_threads = 0;
  /// Claim ElementwiseRegion, so the region fusion pass groups elementwise chains into one
  /// generated loop each (on by default; off runs every elementwise op as its own kernel).
  bool elementwise_regions = true;
  /// `automatic`: products with fewer multiply-adds than this are not timed (they use oneDNN).
  std::int64_t gemm_measure_min_work = std::int64_t{1} << 16;
  /// The IO fusion-benefit gate's cost knobs (rlx/fusion/io_gate.hpp): unset means
  /// cpu_io_gate_defaults(); `use_io_gate = false` turns the gate off (every legal fusion).
  std::optional<fusion::IoFusionGate> io_gate{};
  bool use_io_gate = true;
};

/// The CPU's IO-gate knobs checked into the code: calibrate_cpu_io_gate()'s output on the
/// development machine (the machine, ISA and load are named in io_gate_calibration.cpp).
fusion::IoFusionGate cpu_io_gate_defaults();

/// Measures the IO-gate knobs on this machine with the kernel profiler, through the real compile
/// pipeline (gate off) and backend options \p opts (threads, GEMM provider), on 128 x 1024 f32
/// activations: the dispatch cost of a kernel record with no work, the bandwidth of a kernel
/// that only moves bytes, each activation's one-op kernel time per element beyond its bytes
/// ("gelu"), the region loop's time per element of a cheap instruction ("elementwise_region")
/// and of each activation ("elementwise_region.gelu"), and each MatMulBiasAct epilogue's time
/// per element over the same product with the bias only ("matmul_bias_act.gelu"). Takes a few
/// seconds.
fusion::IoFusionGate calibrate_cpu_io_gate(const CpuOptions& opts = {});

/// The CPU backend: claims the ops of cpu_claims() and compiles LIR into a flat kernel list over
/// one arena allocated once (see rlx-cpu/DESIGN.md).
class CpuBackend final : public compile::Backend {
public:
  /// A backend with options \p opts; throws Error when num_threads is negative.
  explicit CpuBackend(CpuOptions opts = {});

  /// \returns "cpu".
  std::string name() const override;
  /// \returns the CPU claim set (cpu_claims(opts.elementwise_regions)).
  const ir::ClaimSet& claims() const override;
  /// \returns 64: every arena slot starts on a cache line (and an AVX-512 vector).
  std::int64_t alignment() const override;
  /// \returns the scratch bytes the kernel chosen for node \p id needs (attention tiles per
  /// thread, oneDNN scratchpads); the memory planner plans them so no run allocates.
  std::int64_t scratch_bytes(const ir::Graph& g, ir::NodeId id) const override;
  /// Compiles an LIR module (static shapes, a memory plan made with this backend's alignment and
  /// scratch_bytes()). Throws Error naming the node when an op is not claimed or a plan slot is
  /// missing.
  std::unique_ptr<compile::Executable> compile(const ir::Module& lir) const override;
  /// \returns the IO gate's knobs (CpuOptions::io_gate or cpu_io_gate_defaults()), or null when
  /// CpuOptions::use_io_gate is off.
  const fusion::IoFusionGate* io_fusion_gate() const override;
  /// Compiles like compile(), with Params read in place from \p weights: kernels point at the
  /// region's bytes, oneDNN GEMMs at packed copies shared through the region, and a weight only
  /// read packed gives its plain bytes back. Executables compiled against one region share its
  /// weights and may run concurrently (each has its own arena).
  std::unique_ptr<compile::Executable>
  compile_with_weights(const ir::Module& lir,
                       std::shared_ptr<compile::WeightRegion> weights) const override;

  /// The options the backend was created with.
  const CpuOptions& options() const { return opts_; }
  /// The resolved thread count (num_threads, or the default concurrency when it is 0).
  int threads() const { return threads_; }

private:
  CpuOptions opts_;
  int threads_ = 1;
  fusion::IoFusionGate gate_;
};

/// Creates a CPU backend with options \p opts (the factory the runtime's backend registry calls).
std::unique_ptr<compile::Backend> make_cpu_backend(const CpuOptions& opts = {});

/// One line per kernel of a CPU executable, in execution order: node, op, implementation
/// ("onednn", "openblas", "tbb", "loop", ...) and arena offsets. Throws Error when \p exe was not
/// made by a CpuBackend.
std::string kernel_listing(const compile::Executable& exe);

/// Starts (\p on) or stops timing every kernel of a CPU executable's runs; clears the totals.
/// Throws Error when \p exe was not made by a CpuBackend.
void set_kernel_profiling(compile::Executable& exe, bool on);

/// The per-kernel times of the runs since profiling started, slowest first, with each kernel's
/// share of the total. Throws Error when \p exe was not made by a CpuBackend.
std::string kernel_profile(const compile::Executable& exe);

/// The structured form of kernel_profile(): per kernel record, in execution order, its median and
/// total time over the profiled runs, its provider, its note and its work (flops, bytes). Throws
/// Error when \p exe was not made by a CpuBackend.
compile::KernelTimings kernel_timings(const compile::Executable& exe);

/// Where a CPU executable's compile (CpuBackend::compile, the "backend" part of a compile) spent
/// its time. The phases do not overlap: total_ms = lower_ms + primitives_ms + weights_ms +
/// measure_ms (up to clock rounding).
struct CompileBreakdown {
  double total_ms = 0;      ///< the whole backend compile of the executable
  double lower_ms = 0;      ///< the rest: arena, kernel selection and construction, bookkeeping
  double primitives_ms = 0; ///< creating oneDNN primitive descriptors and primitives
  double weights_ms = 0;    ///< preparing weight copies: packed layouts, reorders, concatenations
  std::int64_t weight_bytes = 0; ///< bytes of the weight copies prepared (not those reused)
  double measure_ms = 0;         ///< timing candidate GEMMs (`--gemm auto`, unrecorded shapes)
  /// Bytes of the weight copies the executable reads (packed layouts, concatenations; those it
  /// reuses from the weight region included), as device_bytes() counts them. A layout may pad:
  /// oneDNN's blocked layouts on AVX-512 round a [96, 32] weight up to 96 x 64 floats.
  std::int64_t copy_bytes = 0;
};

/// The compile-time breakdown of \p exe. Throws Error when \p exe was not made by a CpuBackend.
CompileBreakdown compile_breakdown(const compile::Executable& exe);

/// Weight preparation done by the CPU backend in this process so far: every fill of a derived
/// weight copy (packed layout, reorder, concatenation), at compile time or when a weight is set.
struct WeightPreparation {
  double ms = 0;          ///< time spent filling copies
  std::int64_t bytes = 0; ///< bytes of copies filled
};

/// The process-wide weight preparation totals (take two and subtract to time a step).
WeightPreparation weight_preparation();

} // namespace rlx::cpu
