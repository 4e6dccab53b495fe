// executable.hpp (private): CpuExecutable, one arena and one flat kernel list.
#pragma once

#include "kernel.hpp"
#include "onednn.hpp"
#include "rlx/compile/backend.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/module.hpp"

#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace rlx::cpu {

/// A compiled graph on the CPU. The arena is allocated once (64-byte aligned) at compile time;
/// constants are copied into it then; set_input / set_param copy into their slots; execute() is a
/// single loop over the kernel records; output() copies out. Not safe to use from two threads at
/// once.
class CpuExecutable final : public compile::Executable, private onednn::WeightPacker {
public:
  /// Compiles \p lir for \p backend (see CpuBackend::compile).
  CpuExecutable(const ir::Module& lir, const CpuBackend& backend);
  ~CpuExecutable() override;

  void set_input(const std::string& name, const ir::Tensor& value) override;
  void set_param(const std::string& name, const ir::Tensor& value) override;
  void execute() override;
  ir::Tensor output(std::size_t index) const override;
  std::int64_t device_bytes() const override { return arena_bytes_ + packed_bytes_; }

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
    std::int64_t offset = 0;
  };
  /// One kernel and its description.
  struct Record {
    std::unique_ptr<Kernel> kernel;
    std::string label;
    double ms = 0; ///< accumulated time while profiling
  };
  struct FreeAligned {
    void operator()(std::byte* p) const;
  };

  /// A weight copy in a oneDNN primitive's preferred layout, refreshed from its source.
  struct Pack {
    ir::NodeId source;
    std::string param; ///< the source Param's name (empty for a Constant, packed once)
    std::unique_ptr<std::byte[], FreeAligned> buffer;
    dnnl::memory src, dst;
    dnnl::reorder reorder;
  };

  void upload(std::map<std::string, Leaf>& leaves, const char* what, const std::string& name,
              const ir::Tensor& value);
  void* packed(ir::NodeId source, const std::byte* src, const dnnl::memory::desc& src_md,
               const dnnl::memory::desc& packed_md) override;

  std::unique_ptr<std::byte[], FreeAligned> arena_;
  std::int64_t arena_bytes_ = 0;
  std::int64_t packed_bytes_ = 0;
  std::vector<Pack> packs_;
  const ir::Graph* building_ = nullptr; ///< the graph, while the constructor lowers it
  std::map<std::string, Leaf> inputs_;
  std::map<std::string, Leaf> params_;
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
};

} // namespace rlx::cpu
