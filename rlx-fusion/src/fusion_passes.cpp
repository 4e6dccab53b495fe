// fusion_passes.cpp: the claim-gated list of fusion passes (empty until the fusion issue).
#include "rlx/fusion/fusion_passes.hpp"

namespace rlx::fusion {

std::vector<std::string> fusion_passes_for_supported(const ir::ClaimSet& claims) {
  (void)claims; // each fusion pass will be listed here iff claims.claims(<its fused op>)
  return {};
}

void register_fusion_passes(PassRegistry& registry) {
  (void)registry;
}

} // namespace rlx::fusion
