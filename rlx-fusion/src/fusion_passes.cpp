// fusion_passes.cpp: the claim-gated list of fusion passes and their registration.
#include "rlx/fusion/fusion_passes.hpp"

#include "rlx/fusion/elementwise_regions.hpp"

namespace rlx::fusion {

std::vector<std::string> fusion_passes_for_supported(const ir::ClaimSet& claims) {
  std::vector<std::string> passes;
  // Elementwise regions run last: the pattern fusions (MatMul + bias + activation, residual +
  // norm, ...) take their elementwise ops first, and the regions group what is left.
  if (claims.claims(ir::OpKind::ElementwiseRegion))
    passes.emplace_back(MarkElementwiseRegionsPass::kName);
  return passes;
}

void register_fusion_passes(PassRegistry& registry) {
  registry.add(std::string(MarkElementwiseRegionsPass::kName),
               [] { return std::make_unique<MarkElementwiseRegionsPass>(); });
  registry.add(std::string(UnfuseElementwiseRegionsPass::kName),
               [] { return std::make_unique<UnfuseElementwiseRegionsPass>(); });
}

} // namespace rlx::fusion
