// executable.hpp (private): CpuExecutable, one activation arena and one flat kernel list over a
// shared weight region.
#pragma once

#include "kernel.hpp"
#include "onednn.hpp"
#include "rlx/compile/backend.hpp"
#include "rlx/compile/weights.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/module.hpp"

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlx::cpu {

/// A compiled graph on the CPU. The arena (inputs, outputs, constants, temporaries and scratch) is
/// allocated once at compile time; Params are read in place from a WeightRegion (the runtime's,
/// shared with every executable of the model, or one of the executable's own), through oneDNN's
/// packed copies where a GEMM reads them. set_input copies into its slot; set_param writes the
/// region; execute() is a single loop over the kernel records; output() copies out. One thread at
/// a time per executable; executables sharing a region may run concurrently.
class CpuExecutable final : public compile::Executable, private onednn::WeightPacker {
public:
  /// Compiles \p lir for \p backend (see CpuBackend::compile), reading Params from \p weights
  /// (a region of its own when null).
  CpuExecutable(const ir::Module& lir, const CpuBackend& backend,
                std::shared_ptr<compile::WeightRegion> weights = nullptr);
  ~CpuExecutable() override;

  void set_input(const std::string& name, const ir::Tensor& value) override;
  void set_param(const std::string& name, const ir::Tensor& value) override;
  void execute() override;
  ir::Tensor output(std::size_t index) const override;
  /// The arena less its (never touched) Param slots, plus the packed weight copies it reads
  /// (shared copies count in every executable that reads them).
  std::int64_t device_bytes() const override { return arena_bytes_ + packed_bytes_; }
  /// \returns true: Params are read from the region, never copied.
  bool reads_weights_in_place() const override { return true; }

  /// Copies a value of the type of the Input named \p name from \p src into its slot and marks it
  /// set: how control-flow kernels feed the nested executables of their sub-graphs on every run
  /// without allocating. Throws Error for an unknown name.
  void write_input(const std::string& name, const std::byte* src);
  /// Copies graph output \p index into \p dst, which holds its bytes.
  void read_output(std::size_t index, std::byte* dst) const;

  /// One line per kernel record (see kernel_listing()).
  std::string listing() const;
  /// Starts (or stops) timing every kernel of the run loop and clears the totals.
  void set_profiling(bool on);
  /// Per kernel: total milliseconds over the profiled runs and share of the total, slowest first.
  std::string profile() const;
  /// Per kernel, in execution order: median and total time, provider and work.
  compile::KernelTimings timings() const;
  /// Where the constructor (the compile) spent its time, with the weight copies' bytes
  /// (packed_bytes_) as they are now.
  CompileBreakdown breakdown() const {
    CompileBreakdown b = breakdown_;
    b.copy_bytes = packed_bytes_;
    return b;
  }

private:
  /// An Input or Param slot.
  struct Leaf {
    ir::Shape shape;
    std::int64_t offset = 0;
    std::int64_t bytes = 0;
    bool set = false;
  };
  /// A graph output slot.
  struct Output {
    ir::Shape shape;
    const std::byte* at = nullptr; ///< in the arena, or in the region for a weight
  };
  /// One kernel and its description.
  struct Record {
    std::unique_ptr<Kernel> kernel;
    std::string label;
    std::string provider; ///< the implementation's name ("onednn", "view-copy", ...)
    ir::NodeId node;      ///< the node it computes
    std::string op;       ///< the node's op name
    std::string note;     ///< the kernel's note (why it was chosen), may be empty
    double flops = 0;     ///< work of one run (kernel_work)
    double bytes = 0;
    double ms = 0;               ///< accumulated time while profiling
    std::vector<double> samples; ///< one time per profiled run (kept only while profiling)
  };
  /// A Constant's packed copy (the executable's own; Params' copies live in the region).
  struct ConstantPack {
    ir::NodeId source;
    std::shared_ptr<compile::WeightRegion::Derived> copy;
  };

  /// The constructor's work: arena, leaves, kernels, weight readers.
  void build(const ir::Module& lir, const CpuBackend& backend);
  void* packed(ir::NodeId source, const std::byte* src, const dnnl::memory::desc& src_md,
               const dnnl::memory::desc& packed_md) override;
  void* packed_own(ir::NodeId source, const std::byte* src, const std::string& layout,
                   std::int64_t bytes, const onednn::OwnPackFn& pack,
                   const onednn::OwnPackFn& unpack) override;
  /// The copy made by \p make of weight Concat \p source (its buffer at \p src, kept by
  /// weight_concat()): a derived copy of each operand weight, all sharing one buffer, each
  /// recomputing it from \p src when its weight is written. An existing copy for which \p same
  /// holds is shared. \returns the buffer.
  std::byte*
  concat_copy(ir::NodeId source, const std::byte* src,
              const std::function<bool(const compile::WeightRegion::Derived&)>& same,
              const std::function<std::shared_ptr<compile::WeightRegion::Derived>()>& make);
  /// Counts derived copy \p d in packed_bytes_ once; \returns its buffer.
  std::byte* count_copy(const std::shared_ptr<compile::WeightRegion::Derived>& d);

  std::shared_ptr<compile::WeightRegion> weights_;
  compile::HostPages arena_;
  std::int64_t arena_bytes_ = 0;
  std::int64_t packed_bytes_ = 0;
  std::vector<ConstantPack> constant_packs_;
  std::vector<const void*> used_copies_; ///< region copies counted in packed_bytes_
  std::vector<std::byte*> param_addr_;   ///< by node id: a Param's bytes in the region
  std::vector<int> plain_reads_;         ///< by node id, while lowering: plain Param reads
  std::vector<std::string> updated_;     ///< Params this executable updates in place
  const ir::Graph* building_ = nullptr;  ///< the graph, while the constructor lowers it
  std::map<std::string, Leaf> inputs_;
  std::map<std::string, Leaf> params_;
  bool params_ready_ = false; ///< every Param was seen set (it stays set)
  std::vector<Output> outputs_;
  std::vector<Record> kernels_;
  int threads_ = 1;
  std::unique_ptr<tbb::task_arena> pool_;
  std::unique_ptr<dnnl::stream> stream_;
  ExecContext ctx_;
  bool uses_onednn_ = false;   ///< some kernel runs on oneDNN (OpenMP pool)
  bool uses_openblas_ = false; ///< some kernel runs on OpenBLAS (its pthread pool)
  bool profiling_ = false;
  int profiled_runs_ = 0;
  CompileBreakdown breakdown_;
};

} // namespace rlx::cpu
