// heap.hpp: placement of buffers with live ranges in one offset space (private).
#pragma once

#include "rlx/compile/memory_plan.hpp"

#include <cstdint>
#include <vector>

namespace rlx::compile::detail {

/// One buffer to place: \p size bytes (already a multiple of the alignment) live over the closed
/// step range [first, last]. place_buffers() fills \p offset.
struct HeapBuffer {
  std::int64_t size = 0;
  std::int32_t first = 0;
  std::int32_t last = 0;
  std::int64_t offset = 0;
};

/// Places every buffer of \p bufs so that buffers live at a common step never share a byte, and
/// \returns the extent of the offset space used (a multiple of the alignment when every size is).
///
/// best_fit is the global decreasing-size best-fit heap (XLA's GlobalDecreasingSizeBestFitHeap):
/// buffers are taken in decreasing size; for each, the gaps of the offset space left free for its
/// whole live range by the buffers already placed are listed, and the smallest gap that holds it
/// wins; when none does it goes after the last buffer it conflicts with (which may grow the
/// space). Several orders (size, then size x lifetime) are tried and the smallest result is kept.
/// first_fit takes the same size order but the lowest free offset (the older planner, for
/// comparison).
std::int64_t place_buffers(std::vector<HeapBuffer>& bufs, PlanOptions::Strategy strategy);

/// \returns the largest sum of sizes of buffers live at one step: no placement can use less.
std::int64_t peak_live_bytes(const std::vector<HeapBuffer>& bufs, std::int32_t steps);

} // namespace rlx::compile::detail
