// passes.hpp: the pass classes of rlx-compile (generated from passes.def) and their registration.
//
// Each pass lives in its own source file (src/<name>.cpp) and implements run(). What each does,
// and what it deliberately leaves alone, is documented at the top of that file and in
// rlx-compile/DESIGN.md.
#pragma once

#include "rlx/compile/legalize.hpp"
#include "rlx/fusion/pass.hpp"

#include <string>
#include <string_view>
#include <vector>

namespace rlx::compile {

#define RLX_PASS(pass_name, Class)                                                                 \
  /** The pass registered as pass_name in passes.def. */                                           \
  class Class final : public fusion::Pass {                                                        \
  public:                                                                                          \
    static constexpr std::string_view kName = pass_name;                                           \
    std::string_view name() const override { return kName; }                                       \
    bool run(ir::Graph& g, fusion::PassContext& ctx) override;                                     \
  };
#define RLX_PASS_DECLARED(pass_name, Class)
#include "rlx/compile/passes.def"

/// Registers every pass of passes.def in \p registry.
void register_compile_passes(fusion::PassRegistry& registry);

/// A registry holding the passes of rlx-compile and of rlx-fusion.
fusion::PassRegistry default_pass_registry();

/// Runs the comma-separated pass list \p pipeline (names from passes.def or the fusion passes)
/// over \p g with \p ctx, verifying after every pass; \returns the per-pass statistics. A
/// convenience for tests and tools.
std::vector<fusion::PassStats> run_pipeline(ir::Graph& g, std::string_view pipeline,
                                            fusion::PassContext& ctx);

} // namespace rlx::compile
