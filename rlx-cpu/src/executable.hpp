// executable.hpp (private): CpuExecutable, one arena and one flat kernel list.
#pragma once

#include "kernel.hpp"
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
class CpuExecutable final : public compile::Executable {
public:
  /// Compiles \p lir for \p backend (see CpuBackend::compile).
  CpuExecutable(const ir::Module& lir, const CpuBackend& backend);
  ~CpuExecutable() override;

  void set_input(const std::string& name, const ir::Tensor& value) override;
  void set_param(const std::string& name, const ir::Tensor& value) override;
  void execute() override;
  ir::Tensor output(std::size_t index) const override;
  std::int64_t device_bytes() const override { return arena_bytes_; }

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

  void upload(std::map<std::string, Leaf>& leaves, const char* what, const std::string& name,
              const ir::Tensor& value);

  std::unique_ptr<std::byte[], FreeAligned> arena_;
  std::int64_t arena_bytes_ = 0;
  std::map<std::string, Leaf> inputs_;
  std::map<std::string, Leaf> params_;
  std::vector<Output> outputs_;
  std::vector<Record> kernels_;
  int threads_ = 1;
  std::unique_ptr<tbb::task_arena> pool_;
  std::unique_ptr<dnnl::stream> stream_;
  ExecContext ctx_;
  bool profiling_ = false;
  int profiled_runs_ = 0;
};

} // namespace rlx::cpu
