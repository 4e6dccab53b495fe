// unfuse.cpp: the unfuse pass, every fused op (ops.def's kFused flag) expanded back to primitives
// through its first applicable decomposition (rlx/ir/decompose.hpp). Fusing then unfusing gives a
// graph with the values of the original (tested); a fused op none of whose decompositions applies
// is an error naming it.
#include "fusion_pass_list.hpp"

#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::fusion {

namespace {

class UnfusePass final : public Pass {
public:
  std::string_view name() const override { return "unfuse"; }
  bool run(ir::Graph& g, PassContext& ctx) override {
    bool changed = false;
    // A decomposition may emit another fused op: repeat until none is left (bounded).
    for (int round = 0; round < kMaxRounds; ++round) {
      bool any = false;
      const std::size_t n = g.size();
      for (std::uint32_t i = 0; i < n; ++i) {
        const ir::NodeId id(i);
        if (!ir::has_flag(g.node(id).op, ir::kFused) || g.use_count(id) == 0)
          continue;
        ir::Builder b(g);
        std::string why;
        const std::vector<ir::NodeId> r = ir::decompose_values(b, id, ctx.options.decompose, why);
        if (r.empty())
          throw Error("unfuse: cannot expand " + ir::describe(g, id) + ": " + why);
        ir::replace_by_values(g, id, r); // a tuple's gets read the parts
        any = true;
      }
      if (!any)
        return changed;
      g.compact();
      changed = true;
    }
    throw Error("unfuse: fused ops still left after " + std::to_string(kMaxRounds) + " rounds");
  }

private:
  static constexpr int kMaxRounds = 8;
};

} // namespace

std::unique_ptr<Pass> make_unfuse() {
  return std::make_unique<UnfusePass>();
}

} // namespace rlx::fusion
