// effect_op.cpp: the identity custom op with declared effects of effect_op.hpp.
#include "testing/effect_op.hpp"

#include "rlx/ir/custom_op.hpp"

namespace rlx::ir::testing {

void register_effect_op() {
  auto& reg = CustomOpRegistry::global();
  if (reg.find(kEffectOp))
    return;
  CustomOpDef def;
  def.name = kEffectOp;
  def.min_arity = 1;
  def.max_arity = 1;
  def.infer = [](std::span<const Shape> in, const CustomAttrs&) { return in[0]; };
  def.reference = [](std::span<const Tensor> in, const CustomAttrs&, const Shape&) {
    return in[0].clone();
  };
  def.has_effects = true;
  reg.add(std::move(def));
}

} // namespace rlx::ir::testing
