// pass_registry.cpp: registration of the passes in passes.def, and run_pipeline().
#include "rlx/compile/passes.hpp"

#include "rlx/fusion/fusion_passes.hpp"

namespace rlx::compile {

void register_compile_passes(fusion::PassRegistry& registry) {
#define RLX_PASS(pass_name, Class)                                                                 \
  registry.add(pass_name, [] { return std::make_unique<Class>(); });
#include "rlx/compile/passes.def"
}

fusion::PassRegistry default_pass_registry() {
  fusion::PassRegistry r;
  register_compile_passes(r);
  fusion::register_fusion_passes(r);
  return r;
}

std::vector<fusion::PassStats> run_pipeline(ir::Graph& g, std::string_view pipeline,
                                            fusion::PassContext& ctx) {
  fusion::PassManagerOptions o = fusion::PassManagerOptions::from_env();
  o.verify = true;
  fusion::PassManager pm(o);
  pm.add(default_pass_registry(), fusion::parse_pipeline(pipeline));
  pm.run(g, ctx);
  return pm.stats();
}

} // namespace rlx::compile
