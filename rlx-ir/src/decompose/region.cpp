// region.cpp: the decomposition of the fused ElementwiseRegion: its body inlined.
#include "rlx/ir/region.hpp"
#include "families.hpp"

namespace rlx::ir::decompose_detail {
namespace {

// elementwise_region(args) = body(args), inlined (ir::inline_region). The table maps a node to
// one value, so this serves single-result regions; a tuple-typed region is unfused by
// rlx-fusion's unfuse-elementwise-regions pass instead.
NodeId region_inline(Builder& b, NodeId id, const Opts&, std::string& why) {
  const Node n = node_copy(b, id);
  if (n.shape.is_tuple()) {
    why = "a region with several results is unfused by unfuse-elementwise-regions, not by a "
          "one-value decomposition";
    return NodeId{};
  }
  return inline_region(b, n, n.inputs).at(0);
}

} // namespace

void add_region_decompositions(DecompositionTable& t) {
  t.set(OpKind::ElementwiseRegion, {{"region_inline", region_inline}});
}

} // namespace rlx::ir::decompose_detail
