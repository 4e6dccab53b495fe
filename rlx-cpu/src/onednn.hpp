// onednn.hpp (private): the oneDNN engine, memory descriptors over arena slots, and primitives
// bound to their arena arguments at compile time.
#pragma once

#include "kernel.hpp"

#include <oneapi/dnnl/dnnl.hpp>

#include "rlx/ir/graph.hpp"
#include "rlx/ir/op.hpp"

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace rlx::cpu::onednn {

using dt = dnnl::memory::data_type;
using tag = dnnl::memory::format_tag;

/// The process-wide oneDNN CPU engine.
dnnl::engine& engine();

/// A row-major descriptor of static \p sizes (rank 0 is treated as [1]).
dnnl::memory::desc plain_md(const std::vector<std::int64_t>& sizes, dt type = dt::f32);
/// A descriptor with explicit element strides.
dnnl::memory::desc strided_md(const std::vector<std::int64_t>& sizes,
                              const std::vector<std::int64_t>& strides, dt type = dt::f32);

/// Primitive attributes with a user-managed scratchpad (planned in the arena) plus \p base.
dnnl::primitive_attr user_scratchpad(dnnl::primitive_attr base = {});

/// Scratchpad bytes of a primitive descriptor created with user_scratchpad().
std::int64_t scratchpad_bytes(const dnnl::primitive_desc_base& pd);

/// A oneDNN eltwise algorithm with its alpha and beta.
struct EltwiseAlg {
  dnnl::algorithm alg;
  float alpha = 0;
  float beta = 0;
};
/// The eltwise algorithm computing unary op \p op exactly as the op table defines it, if oneDNN
/// has one.
std::optional<EltwiseAlg> eltwise_alg(ir::OpKind op);

/// A primitive with every argument bound to an arena address at compile time; run() passes a
/// prebuilt argument array to oneDNN's C API, so rlx allocates nothing per run.
class BoundPrimitive {
public:
  explicit BoundPrimitive(dnnl::primitive p) : prim_(std::move(p)) {}
  /// Binds argument \p arg (DNNL_ARG_SRC, ...) to the buffer at \p ptr described by \p md.
  void bind(int arg, const dnnl::memory::desc& md, void* ptr);
  /// Executes the primitive on \p stream (blocking: oneDNN's CPU runtime here is OpenMP).
  void run(dnnl::stream& stream) const;

private:
  dnnl::primitive prim_;
  std::vector<dnnl::memory> mems_;
  std::vector<dnnl_exec_arg_t> args_;
};

/// Converts a weight between its plain bytes and a packed copy: (from, to).
using OwnPackFn = std::function<void(const std::byte* from, std::byte* to)>;

/// Keeps weights repacked into the layout a primitive prefers (its format-"any" choice), so GEMMs
/// do not repack them on every run. Implemented by the executable: a pack of a Constant is made at
/// compile time, a pack of a Param again on every set_param.
class WeightPacker {
public:
  virtual ~WeightPacker() = default;
  /// \returns the buffer holding node \p source's value (at \p src, laid out as \p src_md)
  /// repacked as \p packed_md; requests for the same source and layout share one buffer.
  virtual void* packed(ir::NodeId source, const std::byte* src, const dnnl::memory::desc& src_md,
                       const dnnl::memory::desc& packed_md) = 0;
  /// Like packed(), for a layout of rlx's own (the packed GEMM's panels): \p layout names it
  /// (requests for the same source and layout share one buffer of \p bytes, 64-byte aligned);
  /// \p pack fills the copy from the weight's plain row-major bytes and \p unpack writes them
  /// back from it.
  virtual void* packed_own(ir::NodeId source, const std::byte* src, const std::string& layout,
                           std::int64_t bytes, const OwnPackFn& pack, const OwnPackFn& unpack) = 0;
};

/// A kernel that runs one bound oneDNN primitive. A primitive with little work (fewer than
/// kSingleThreadWork units, about an element or a multiply-add each) runs on one OpenMP thread:
/// waking a sleeping pool thread costs more than it saves.
class PrimitiveKernel final : public Kernel {
public:
  static constexpr std::int64_t kSingleThreadWork = 4 * kTaskWork;
  PrimitiveKernel(BoundPrimitive p, std::int64_t work)
      : prim_(std::move(p)), single_(work < kSingleThreadWork) {}
  void run(ExecContext& ctx) override;

private:
  BoundPrimitive prim_;
  bool single_;
};

} // namespace rlx::cpu::onednn
