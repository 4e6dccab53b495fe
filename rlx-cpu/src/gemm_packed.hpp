// gemm_packed.hpp (private): rlx's own packed f32 GEMM (`--gemm packed`): B packed into panels of
// NR columns (once, as a weight-region copy, when B is a 2-D Param or Constant; else per run into
// scratch), A packed per block into MR-row slivers, an MR x NR register tile with K blocked for
// L1/L2, TBB over (M, N) blocks, and the bias + activation epilogue applied to each tile's
// accumulators in registers. The hot code is one source (kernels/gemm_packed_tile.inc) compiled for
// x86-64-v4, x86-64-v3 and the baseline; the instruction set is chosen at run time by CPU features.
#pragma once

#include "rlx/ir/activation.hpp"

#include <cstdint>

namespace rlx::cpu::packed {

/// The instruction sets the tile code is compiled for.
enum class Isa : std::uint8_t { baseline, avx2, avx512 };

/// "baseline", "avx2" or "avx512".
const char* isa_name(Isa isa);
/// Whether this CPU (and OS) runs \p isa's code.
bool isa_supported(Isa isa);
/// The cap named by \p value, the value of `RLX_GEMM_ISA`: null or empty means no cap (avx512).
/// Throws rlx::Error naming the accepted values (baseline, avx2, avx512) for any other value.
Isa isa_cap(const char* value);
/// The widest instruction set this CPU runs that is no wider than \p cap.
Isa widest_supported(Isa cap);
/// The widest supported instruction set, capped by `RLX_GEMM_ISA=baseline|avx2|avx512` (read
/// once, on the first call; a bad value throws rlx::Error from every call).
Isa best_isa();

/// One block of C = A · B (+ bias, then the activation) computed by gemm_block(): rows [i0, i1) and
/// columns [j0, j1) (j0 a multiple of the tile width), K in blocks of kc.
struct BlockArgs {
  const float* a = nullptr; ///< A(i, p) at a[i * rsa + p * csa]
  std::int64_t rsa = 0, csa = 0;
  const float* b_pack = nullptr; ///< B packed by pack_b() (this ISA's tile width)
  float* c = nullptr;            ///< C(i, j) at c[i * ldc + j]
  std::int64_t ldc = 0;
  std::int64_t k = 0, kc = 0;
  std::int64_t i0 = 0, i1 = 0, j0 = 0, j1 = 0;
  float* a_pack = nullptr; ///< room for packed_a_floats() floats
  /// C += A · B (every K block adds to C) instead of C = A · B.
  bool accumulate = false;
  /// Rows of each packed B panel when \p b_pack points at row k0 of a taller packing (b_pack =
  /// start + k0 · tile_cols(), panels of b_rows rows): K = k rows [k0, k0 + k) of it. 0: k.
  std::int64_t b_rows = 0;
  const float* bias = nullptr; ///< [N] added to every row, or null
  /// Applied to every finished tile in registers, after the bias.
  ir::Activation act = ir::Activation::none;
  /// A second product over the same block, A · B2 (+ bias2), computed strip by strip beside the
  /// first (SwiGLU's gate beside its up product), or null. It is accumulated in c2, the block's
  /// own buffer (C2(i, j) at c2[(i - i0) * ldc2 + (j - j0)]), and each finished tile of C becomes
  /// C · silu(C2) in registers (\p act is then none).
  const float* b2_pack = nullptr;
  const float* bias2 = nullptr;
  float* c2 = nullptr;
  std::int64_t ldc2 = 0;
};

/// The functions compiled once per instruction set.
struct IsaKernels {
  int (*tile_rows)();
  int (*tile_cols)();
  /// Packs B(p, j) = b[p * rs + j * cs] (K x N) into panels of tile_cols() columns, zero-padded:
  /// panel_floats(k, n, tile_cols()) floats at dst.
  void (*pack_b)(const float* b, std::int64_t rs, std::int64_t cs, std::int64_t k, std::int64_t n,
                 float* dst);
  /// The inverse of pack_b (writes B's K x N elements back through the same strides).
  void (*unpack_b)(const float* src, std::int64_t rs, std::int64_t cs, std::int64_t k,
                   std::int64_t n, float* b);
  void (*gemm_block)(const BlockArgs& args);
};

/// The kernels of \p isa (which must be supported to be called).
const IsaKernels& kernels(Isa isa);

/// Floats of B packed for K = \p k, N = \p n in panels of \p nr columns.
inline std::int64_t panel_floats(std::int64_t k, std::int64_t n, int nr) {
  return (n + nr - 1) / nr * nr * k;
}

#define RLX_GEMM_DECLARE(ns)                                                                       \
  namespace ns {                                                                                   \
  int tile_rows();                                                                                 \
  int tile_cols();                                                                                 \
  void pack_b(const float* b, std::int64_t rs, std::int64_t cs, std::int64_t k, std::int64_t n,    \
              float* dst);                                                                         \
  void unpack_b(const float* src, std::int64_t rs, std::int64_t cs, std::int64_t k,                \
                std::int64_t n, float* b);                                                         \
  void gemm_block(const BlockArgs& args);                                                          \
  }
RLX_GEMM_DECLARE(base)
RLX_GEMM_DECLARE(avx2)
RLX_GEMM_DECLARE(avx512)
#undef RLX_GEMM_DECLARE

} // namespace rlx::cpu::packed
