// fusion_passes.hpp: which fusion passes run for a backend, and their registration.
#pragma once

#include "rlx/fusion/pass.hpp"
#include "rlx/ir/claims.hpp"

#include <string>
#include <vector>

namespace rlx::fusion {

/// The ordered names of the fusion passes to run for a backend with claim set \p claims: a fusion
/// pass is listed only when the backend claims the fused op it emits. Empty for now: the fusion
/// patterns (MatMul+bias+act, residual+norm, SwiGLU, attention, elementwise regions ...) arrive in
/// the fusion issue, which fills this list and register_fusion_passes() together.
std::vector<std::string> fusion_passes_for_supported(const ir::ClaimSet& claims);

/// Registers every fusion pass of rlx-fusion in \p registry (none yet; see above).
void register_fusion_passes(PassRegistry& registry);

} // namespace rlx::fusion
