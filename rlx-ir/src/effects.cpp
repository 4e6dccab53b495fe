// effects.cpp: has_effects, the one answer to "may this node be merged, folded or removed?".
#include "rlx/ir/effects.hpp"

#include "attr_visit.hpp"
#include "rlx/ir/custom_op.hpp"

namespace rlx::ir {

bool has_effects(const Node& n) {
  if (has_flag(n.op, kMayHaveEffects)) {
    if (n.op != OpKind::Custom)
      return true;
    const auto* attrs = std::get_if<CustomAttrs>(&n.attrs);
    const CustomOpDef* def = attrs ? CustomOpRegistry::global().find(attrs->name) : nullptr;
    if (def == nullptr || def->has_effects)
      return true;
  }
  if (!has_flag(n.op, kSubgraphs))
    return false;
  bool effects = false;
  detail::visit_attr_fields(n.attrs, [&](std::string_view, const auto& f) {
    if constexpr (std::is_same_v<std::decay_t<decltype(f)>, SubGraph>) {
      if (f && !effects)
        for (const Node& inner : f->nodes())
          if (has_effects(inner)) {
            effects = true;
            break;
          }
    }
  });
  return effects;
}

} // namespace rlx::ir
