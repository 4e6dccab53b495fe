// matmul.hpp (private): the MatMul kernel builder, with the bias + activation epilogue that the
// fused MatMulBiasAct op (rlx-fusion's fuse-matmul-bias-act) lowers onto; MatMul uses none.
#pragma once

#include "gemm_packed.hpp"
#include "kernel.hpp"
#include "rlx/cpu/backend.hpp"
#include "rlx/ir/attrs.hpp"
#include "rlx/ir/dtype.hpp"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace rlx::cpu {

namespace onednn {
class WeightPacker;
} // namespace onednn
struct NodeView;

/// One matrix product out = act(op(a) op(b) + bias) with NumPy batch broadcasting; op transposes
/// the last two axes when the flag is set. Addresses may be null when only scratch is queried.
struct MatMulSpec {
  std::vector<std::int64_t> a_sizes, b_sizes, out_sizes;
  bool transpose_a = false;
  bool transpose_b = false;
  ir::DType dtype = ir::DType::f32;
  const std::byte* a = nullptr;
  const std::byte* b = nullptr;
  std::byte* out = nullptr;
  /// Whether a bias of shape [N] is added to every row of the product (epilogue), also when its
  /// address is not known yet (scratch queries); a non-null \p bias implies it.
  bool has_bias = false;
  const std::byte* bias = nullptr;
  /// Activation applied after the bias (epilogue).
  ir::Activation act = ir::Activation::none;
  /// Read b from a copy kept by \p packer (oneDNN's chosen layout, the packed GEMM's panels,
  /// OpenBLAS's [K, N] copy of a transposed weight): b must be a 2-D Param, Constant or Concat of
  /// Params (is_weight_concat), node \p b_source, and \p packer set when the kernel is built.
  bool pack_b = false;
  ir::NodeId b_source;
  onednn::WeightPacker* packer = nullptr;
  /// The threads the kernel runs on (the packed GEMM plans a packed A block per thread).
  int threads = 1;
};

/// Sets \p s's weight operand from input \p w of \p n: its sizes and node (b_source), whether it
/// is packed once (a 2-D f32 Param, Constant or weight Concat; \p s.dtype must be set) and \p n's
/// threads.
void set_weight_operand(MatMulSpec& s, const NodeView& n, std::size_t w);

/// The GEMM implementations, in preference order.
enum class GemmImpl : std::uint8_t { onednn, openblas, loop, packed };

/// The name of \p impl ("onednn", "openblas", "loop", "packed").
const char* gemm_impl_name(GemmImpl impl);

/// The implementation \p opts.gemm selects for \p spec on \p threads threads: fixed by the
/// provider, or measured per shape (GemmProvider::automatic, gemm_choice.hpp) for f32; f64 runs on
/// OpenBLAS and other dtypes on loops.
GemmImpl choose_gemm(const MatMulSpec& spec, const CpuOptions& opts, int threads);
/// What the kernel listing says about the choice for \p spec (empty unless measured per shape).
std::string gemm_choice_note(const MatMulSpec& spec, const CpuOptions& opts, int threads);
/// The scratch bytes (oneDNN scratchpad) that implementation \p impl needs for \p spec.
std::int64_t matmul_scratch_bytes(const MatMulSpec& spec, GemmImpl impl);

/// Element offsets of an operand's matrices (each \p matrix elements) for every output batch index
/// of \p out, row-major over an operand with batch dims \p batch (its dims of 1 broadcast).
std::vector<std::int64_t> batch_offsets(const std::vector<std::int64_t>& batch,
                                        const std::vector<std::int64_t>& out, std::int64_t matrix);
/// Builds the kernel of \p spec with implementation \p impl; \p scratch holds
/// matmul_scratch_bytes() bytes.
std::unique_ptr<Kernel> make_matmul_kernel(const MatMulSpec& spec, GemmImpl impl,
                                           std::byte* scratch);

// ---- the packed GEMM (kernels/gemm_packed.cpp) ----------------------------------------------

/// Whether the packed GEMM runs \p spec (f32; products whose per-run packed B would exceed
/// 256 MiB are declined).
bool packed_gemm_accepts(const MatMulSpec& spec);
/// Its scratch bytes for \p spec with \p isa's tile code: a packed A block per thread, and B
/// packed per run unless it reads a packed weight copy.
std::int64_t packed_gemm_scratch_bytes(const MatMulSpec& spec,
                                       packed::Isa isa = packed::best_isa());
/// Builds it with \p isa's tile code (tests call each ISA; the provider uses best_isa()).
std::unique_ptr<Kernel> make_packed_gemm(const MatMulSpec& spec, std::byte* scratch,
                                         packed::Isa isa = packed::best_isa());
/// Whether the packed GEMM runs SwiGLU's pair out = (x · B_up) · silu(x · B_gate) as one product
/// (\p gate with the silu activation, \p up with none; both f32 weights packed once, one shape).
bool packed_pair_accepts(const MatMulSpec& gate, const MatMulSpec& up);
/// The pair's scratch bytes: per thread a packed A block and the block's gate product.
std::int64_t packed_pair_scratch_bytes(const MatMulSpec& up, packed::Isa isa = packed::best_isa());
/// The pair's kernel: each gate tile is computed beside the up tile it scales (the A sliver in L1)
/// into the block's scratch and combined at once; the gate product is never written out whole.
std::unique_ptr<Kernel> make_packed_pair(const MatMulSpec& gate, const MatMulSpec& up,
                                         std::byte* scratch, packed::Isa isa = packed::best_isa());

} // namespace rlx::cpu
