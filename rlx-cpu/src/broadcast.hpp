// broadcast.hpp (private): NumPy broadcasting as an iteration plan: collapsed output dims and, per
// operand, element strides over them (0 along broadcast axes). Kernels walk the plan row by row:
// the last (collapsed) dim is the contiguous-or-strided inner loop.
#pragma once

#include <cstdint>
#include <span>
#include <vector>

namespace rlx::cpu {

/// The iteration plan of an elementwise op with broadcasting operands.
struct BroadcastPlan {
  std::vector<std::int64_t> dims;                 ///< collapsed output dims (rank ≥ 1)
  std::vector<std::vector<std::int64_t>> strides; ///< per operand, element strides over dims

  /// Length of the inner loop.
  std::int64_t inner() const { return dims.back(); }
  /// Number of inner rows (the product of the other dims).
  std::int64_t rows() const;
  /// Stride of operand \p k along the inner loop.
  std::int64_t inner_stride(std::size_t k) const { return strides[k].back(); }
  /// Writes the element offset of the start of row \p row for every operand into \p offsets.
  void row_offsets(std::int64_t row, std::int64_t* offsets) const;
};

/// Plans operands of sizes \p ins broadcast onto output sizes \p out (each operand aligned to the
/// trailing dims; a 1 or a missing dim broadcasts). Adjacent dims merge when every operand walks
/// them contiguously (or not at all), and size-1 dims vanish.
BroadcastPlan plan_broadcast(const std::vector<std::int64_t>& out,
                             std::span<const std::vector<std::int64_t>> ins);

} // namespace rlx::cpu
