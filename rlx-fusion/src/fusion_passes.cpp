// fusion_passes.cpp: the claim-gated list of fusion passes and their registration.
#include "rlx/fusion/fusion_passes.hpp"

#include "rlx/fusion/transformer_fusions.hpp"

namespace rlx::fusion {

std::vector<std::string> fusion_passes_for_supported(const ir::ClaimSet& claims) {
  std::vector<std::string> names; // each fusion pass is listed iff claims.claims(<its fused op>)
  append_transformer_fusions(claims, names); // fuse-swiglu-matmul, fuse-swiglu, fuse-attention
  return names;
}

void register_fusion_passes(PassRegistry& registry) {
  register_transformer_fusions(registry); // fuse-swiglu-matmul, fuse-swiglu, fuse-attention
}

} // namespace rlx::fusion
