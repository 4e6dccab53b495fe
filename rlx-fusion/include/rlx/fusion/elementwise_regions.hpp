// elementwise_regions.hpp: MarkElementwiseRegions groups maximal chains of elementwise / broadcast
// ops into ElementwiseRegion nodes (TVM-style, by the op table's FusionKind), and
// UnfuseElementwiseRegions inlines them back into primitives.
#pragma once

#include "rlx/fusion/pass.hpp"

#include <cstdint>
#include <string_view>

namespace rlx::fusion {

/// Caps of one elementwise region (the seed's FusionLimits).
struct FusionLimits {
  /// Most ops in one region (its body's non-leaf nodes). Bounds the kernel's per-tile registers.
  int max_region_ops = 32;
  /// Most distinct operands of one region (small constants folded into the body do not count).
  int max_region_inputs = 16;
  /// Constants with at most this many elements are copied into the body instead of being
  /// operands.
  std::int64_t max_inline_constant_elements = 64;
};

/// Groups elementwise / broadcast ops into ElementwiseRegion nodes. A node joins a region when
/// ir::is_region_body_op accepts it, the backend claims the node's op itself (ClaimSet::supports)
/// and ElementwiseRegion for its result dtype and every operand dtype, its dims equal the region's
/// (every member computes the region's full iteration space; smaller operands are region inputs
/// read by broadcast), the region stays under FusionLimits, and no path leaves the region and
/// re-enters it. A member used outside the region (or a graph output) becomes a region output: one
/// output replaces the member directly, several make the region a tuple read through Get. Regions
/// of a single op are not formed. Misses are reported under the pattern name "elementwise_region".
class MarkElementwiseRegionsPass final : public Pass {
public:
  static constexpr std::string_view kName = "mark-elementwise-regions";
  explicit MarkElementwiseRegionsPass(FusionLimits limits = {}) : limits_(limits) {}
  std::string_view name() const override { return kName; }
  bool run(ir::Graph& g, PassContext& ctx) override;

private:
  FusionLimits limits_;
};

/// Inlines every ElementwiseRegion back into its body's primitives (Gets of a tuple region are
/// replaced by the matching body output).
class UnfuseElementwiseRegionsPass final : public Pass {
public:
  static constexpr std::string_view kName = "unfuse-elementwise-regions";
  std::string_view name() const override { return kName; }
  bool run(ir::Graph& g, PassContext& ctx) override;
};

} // namespace rlx::fusion
