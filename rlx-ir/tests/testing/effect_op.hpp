// effect_op.hpp: a custom op that is the identity but declares effects, for the tests of what the
// IR, the passes and the fusions do with nodes that have effects (keep them, never merge or move
// them into a region). Link the rlx_ir_testing library and include "testing/effect_op.hpp".
#pragma once

namespace rlx::ir::testing {

/// The name of the identity custom op with declared effects (`y = x`, one operand).
inline constexpr const char* kEffectOp = "testing.effect";

/// Registers kEffectOp in CustomOpRegistry::global() unless it is already there.
void register_effect_op();

} // namespace rlx::ir::testing
