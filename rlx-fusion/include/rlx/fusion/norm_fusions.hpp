// norm_fusions.hpp: the residual + norm fusion passes (BERT post-norm: LayerNorm(x + r); LLaMA
// pre-norm: RmsNorm(x + r) whose sum is also the next residual). Each is a Pattern list run by
// apply_patterns(), so every recognised instance that does not fuse is reported with its
// MissReason.
#pragma once

#include "rlx/fusion/pass.hpp"
#include "rlx/fusion/pattern.hpp"

#include <memory>
#include <vector>

namespace rlx::fusion {

/// fuse-residual-layer-norm: LayerNorm(Add(x, r), gamma [, beta]) with x and r of equal dims (no
/// broadcasting) → Get(ResidualLayerNorm(x, r, gamma [, beta]), 1). The sum may have other users
/// (or be a graph output): a second pattern, rooted at the Add, then reads part 0 of the fused
/// node, so the sum is computed once. Misses: shape_mismatch (the residual broadcasts),
/// dtype_mismatch, not_claimed.
std::vector<Pattern> residual_layer_norm_patterns();

/// fuse-residual-rms-norm: RmsNorm(Add(x, r), gamma) → Get(ResidualRmsNorm(x, r, gamma), 1), the
/// sum's other users reading part 0, as above.
std::vector<Pattern> residual_rms_norm_patterns();

/// A new fuse-residual-layer-norm pass (the patterns above with the context's claims and report).
std::unique_ptr<Pass> make_fuse_residual_layer_norm();
/// A new fuse-residual-rms-norm pass.
std::unique_ptr<Pass> make_fuse_residual_rms_norm();

} // namespace rlx::fusion
