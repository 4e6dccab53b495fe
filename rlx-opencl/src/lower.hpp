// lower.hpp (private): how a node becomes steps (kernel launches with every argument set, or
// buffer copies). One function per op family, chosen by one switch over ops.def.
#pragma once

#include "executable.hpp"
#include "rlx/ir/graph.hpp"

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace rlx::opencl {

using Sizes = std::vector<std::int64_t>;

/// Strides (in elements) of a row-major operand of \p in read as the broadcast shape \p out:
/// trailing-aligned, 0 where the operand has size 1 (or lacks the dim).
Sizes broadcast_strides(const Sizes& in, const Sizes& out);
/// The metadata of a strided walk over \p dims with one stride list per operand (size-1 dims
/// dropped, dims every operand walks as one merged): rank, dims, then each stride list; read by
/// strided_offset (00_common.cl).
std::vector<std::int64_t> strided_meta(Sizes dims, std::vector<Sizes> strides);
/// The unary op code of \p op (01_math.cl, U_*); throws Error for other ops.
int unary_code(ir::OpKind op);
/// The binary op code of \p op (01_math.cl, B_*); throws Error for other ops.
int binary_code(ir::OpKind op);

/// Lowers the nodes of one graph into steps for one executable.
class Lowerer {
public:
  /// Lowers into \p steps; kernels come from \p rt's program (or programs generated for it);
  /// node buffers are located through \p exe; \p status is the error word; \p status_labels
  /// names the node of each error tag.
  Lowerer(const ir::Graph& g, const OpenClExecutable& exe, DeviceRuntime& rt, cl_mem status,
          std::vector<Step>& steps, std::vector<std::string>& status_labels, KernelChoices choices)
      : g_(g), exe_(exe), rt_(rt), program_(rt.program.get()), status_(status), steps_(steps),
        status_labels_(status_labels), choices_(choices) {}

  /// Appends the steps of node \p id (a computing node with a buffer; not a pure view).
  void lower(ir::NodeId id);
  /// The metadata and tables the kernels read, to upload once (as 64-bit words).
  const std::vector<std::int64_t>& aux() const { return aux_; }
  /// Sets the metadata argument of every kernel to \p aux (the uploaded aux()).
  void bind_aux(cl_mem aux);

  // ---- used by the op families (lower.cpp)
  /// A new launch step of kernel \p name (of \p program, default the main program) labelled
  /// for the current node.
  Step& launch(const char* name, cl_program program = nullptr);
  /// Appends a step that calls \p fn on the queue (a library that enqueues its own work).
  Step& call(std::function<void(cl_command_queue)> fn, const std::string& what);
  /// The (buffer, byte offset) of node \p n's buffer.
  Loc loc(ir::NodeId n) const;
  /// Sets the next argument of the last launch.
  template <class T> void arg(const T& v);
  /// Sets a (buffer, offset in units of \p unit bytes) argument pair for node \p n's buffer, plus
  /// \p extra elements.
  void tensor(ir::NodeId n, std::int64_t unit, std::int64_t extra = 0);
  /// Appends \p words to the metadata and sets the (aux, offset) argument pair of the last launch.
  void meta(const std::vector<std::int64_t>& words);
  /// Appends \p values (f32) to the aux buffer and sets the (aux, offset in floats) pair.
  void table(const std::vector<float>& values);
  /// The node's kernel scratch (planned by the memory planner from the backend's
  /// scratch_bytes(), which must give at least \p bytes); throws Error when the plan lacks it.
  Loc scratch(std::int64_t bytes) const;
  /// Sets (status buffer, tag) so the kernel can report an error naming the current node.
  void status_arg();
  /// Sets the next argument of the last launch to \p bytes of local memory.
  void local_arg(std::size_t bytes);
  /// Sets a 1-D range of \p n items in work-groups of \p wg (rounded up).
  void range1(std::int64_t n, std::size_t wg = 64);

  const ir::Graph& graph() const { return g_; }
  /// The device runtime (for generated programs).
  DeviceRuntime& runtime() const { return rt_; }
  ir::NodeId node() const { return id_; }
  /// The GEMM kernel choice of the backend's options.
  GemmKernel gemm() const { return choices_.gemm; }
  /// The attention kernel choice of the backend's options.
  AttentionKernel attention() const { return choices_.attention; }

private:
  struct Deferred {
    cl_kernel kernel;
    cl_uint index;
  };
  const ir::Graph& g_;
  const OpenClExecutable& exe_;
  DeviceRuntime& rt_;
  cl_program program_;
  cl_mem status_;
  std::vector<Step>& steps_;
  std::vector<std::string>& status_labels_;
  std::vector<std::int64_t> aux_;
  std::vector<Deferred> deferred_;
  KernelChoices choices_;
  ir::NodeId id_{};
  cl_uint next_arg_ = 0;
};

/// Local memory of attention_tiled_f32_k's tiles for head dims \p D (queries, keys) and \p Dv.
std::size_t attention_tile_bytes(std::int64_t D, std::int64_t Dv);
/// Whether Attention with \p Sq query rows runs attention_tiled_f32_k under the backend's choice
/// \p k on a device with \p local_memory bytes of local memory (the tiles need \p tile_bytes);
/// else attention_f32_k. (The measurements behind it: DESIGN.md, "Attention".)
bool attention_tiled(AttentionKernel k, std::int64_t Sq, std::size_t tile_bytes,
                     std::int64_t local_memory);
/// The attention kernel a launch runs.
enum class AttentionPath : std::uint8_t { rows, tiled, gpu };
/// Local memory of attention_gpu_f32_k's blocks and tiles for head dims \p D and \p Dv.
std::size_t attention_gpu_bytes(std::int64_t D, std::int64_t Dv);
/// The attention kernel of Attention with \p Sq query rows and head dims \p D, \p Dv under the
/// backend's choice \p k on a device of type \p device_type ("gpu", "cpu", ...) with
/// \p local_memory bytes: gpu where asked for (or automatic on a GPU) and its local memory fits,
/// else attention_tiled()'s rule (pinned gpu counts as pinned tiled there).
AttentionPath attention_path(AttentionKernel k, const std::string& device_type, std::int64_t Sq,
                             std::int64_t D, std::int64_t Dv, std::int64_t local_memory);

/// Which kernel runs one product.
enum class GemmPath : std::uint8_t { rows, tiled, clblast };
/// The kernel for the product [M, K] · [K, N] under the backend's choice \p k on a device of
/// type \p device_type ("cpu", "gpu", ..): \p k_contiguous when both operands are contiguous
/// along K (x · Wᵀ: the rows kernel's float4 path), \p library_ok when CLBlast may run it
/// (unbatched, no gate epilogue). Throws Error for GemmKernel::clblast without CLBlast.
/// (clblast.cpp; the measurements behind it: DESIGN.md, "GEMM".)
GemmPath gemm_path(GemmKernel k, const std::string& device_type, std::int64_t M, std::int64_t N,
                   std::int64_t K, bool k_contiguous, bool library_ok);
/// Appends one CLBlast SGEMM step: the current node's buffer = op(a) · op(b), row-major, [M, N].
void clblast_gemm(Lowerer& L, ir::NodeId a, ir::NodeId b, bool transpose_a, bool transpose_b,
                  std::int64_t M, std::int64_t N, std::int64_t K);

/// How LayerNormGrad / RmsNormGrad split their column sums over the rows: \p blocks row blocks of
/// \p chunk rows (the last may be shorter or empty).
struct NormGradBlocks {
  std::int64_t blocks = 1, chunk = 1;
};
/// The row blocks of a norm's backward over \p rows rows.
NormGradBlocks norm_grad_blocks(std::int64_t rows);
/// Scratch bytes of LayerNormGrad / RmsNormGrad node \p id: each row's mean and 1 / std, then the
/// per-block partial column sums (2 D a block), f32.
std::int64_t norm_grad_scratch_bytes(const ir::Graph& g, ir::NodeId id);

/// Lowers the current node, an ElementwiseRegion, to one generated kernel (region.cpp).
void lower_region(Lowerer& L);

template <class T> void Lowerer::arg(const T& v) {
  check(clSetKernelArg(steps_.back().kernel.get(), next_arg_++, sizeof(T), &v),
        "clSetKernelArg for " + steps_.back().label);
}

} // namespace rlx::opencl
