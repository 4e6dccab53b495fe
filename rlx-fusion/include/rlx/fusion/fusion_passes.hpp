// fusion_passes.hpp: the fusion passes, which of them run for a backend, and their registration.
//
// A fusion pass rewrites the MIR graph into a fused op (or, for a recogniser, an exporter's
// spelled-out primitive chain into the op it spells). It runs only when the backend claims every
// op it emits, so the claim set decides the fusions: a backend without a fused kernel keeps the
// primitives, and never needs the fused op's decomposition. The passes record what they fused and
// every recognised instance they could not fuse (with its MissReason) in PassContext::report.
#pragma once

#include "rlx/fusion/pass.hpp"
#include "rlx/ir/claims.hpp"

#include <set>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::fusion {

/// One fusion pass: its registered name, the op kinds it emits (the claim gate) and its factory.
struct FusionPassInfo {
  std::string_view name;           ///< "fuse-matmul-bias-act"
  std::vector<ir::OpKind> emits;   ///< listed only when the backend claims each of these
  std::unique_ptr<Pass> (*make)(); ///< a new instance
  /// Whether the pass runs unless turned off; an opt-in pass (false) runs only when
  /// FusionOptions::enabled names it (fuse-transformer-layer: rlx-fusion DESIGN says why).
  bool on_by_default = true;
};

/// Per-pass toggles: which fusion passes a compile may run (the claim set decides among those
/// enabled). Turning fusion off altogether is CompileOptions::fuse (`--no-fuse`).
struct FusionOptions {
  std::set<std::string, std::less<>> disabled; ///< pass names turned off (`--no-fuse-pass <name>`)
  std::set<std::string, std::less<>> enabled;  ///< opt-in passes turned on (off by default)
  /// \returns whether pass \p name may run (an opt-in pass also needs to be in enabled).
  bool enables(std::string_view name) const { return !disabled.contains(name); }
};

/// Throws rlx::Error when \p opts names a pass that is not a fusion pass (listing them), in
/// disabled or in enabled.
void check_fusion_options(const FusionOptions& opts);

/// Every fusion pass, in run order (recognisers before the fusions that consume their ops).
std::span<const FusionPassInfo> fusion_pass_table();

/// The ordered names of the fusion passes to run for a backend with claim set \p claims: a pass is
/// listed when \p opts enables it and the backend claims every op it emits.
std::vector<std::string> fusion_passes_for_supported(const ir::ClaimSet& claims,
                                                     const FusionOptions& opts = {});

/// Registers every fusion pass of the table, and `unfuse`, in \p registry.
void register_fusion_passes(PassRegistry& registry);

} // namespace rlx::fusion
