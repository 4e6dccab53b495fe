// kernel_timing.hpp: the per-kernel times a backend reports over the profiled runs of one of its
// executables (rlx-cpu's and rlx-opencl's `kernel_timings(exe)`), one form for every backend so
// that `rlx bench --profile` prints and writes one table.
#pragma once

#include <string>
#include <vector>

namespace rlx::compile {

/// One kernel row's times and work over a backend executable's profiled runs: on the CPU a kernel
/// record, on OpenCL a computing node (its steps together).
struct KernelTiming {
  std::string node; ///< the node it computes, "%12"
  std::string op;   ///< the op's name, "matmul_bias_act"
  /// The implementation: on the CPU "onednn", "openblas", "tbb", "view-copy", ...; on OpenCL the
  /// node's first step, a kernel ("attention_gpu_f32_k"), "clblast_sgemm" or "copy".
  std::string provider;
  /// More about it, when the backend says: on the CPU why the implementation was chosen (e.g.
  /// `--gemm auto`); on OpenCL the node's further steps ("+ epilogue_f32_k").
  std::string note;
  double median_ms = 0; ///< median time of one run of the row (device time on OpenCL)
  double total_ms = 0;  ///< summed over the profiled runs
  /// Floating-point operations of one run for the products and attention (2 per multiply-add),
  /// else 0 (their rate is the bytes').
  double flops = 0;
  /// Bytes of its operands and result, what it must move at least once (on OpenCL a copy counts
  /// its bytes twice: read and write).
  double bytes = 0;
};

/// A backend executable's kernel rows over its profiled runs, in execution order.
struct KernelTimings {
  int runs = 0;                      ///< runs profiled since profiling was switched on
  std::vector<KernelTiming> kernels; ///< one per kernel row, in execution order
};

} // namespace rlx::compile
