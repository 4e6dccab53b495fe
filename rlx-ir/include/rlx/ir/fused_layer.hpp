// fused_layer.hpp: where each operand of a FusedTransformerLayer sits (its flags decide which
// optional operands are present). The shape rule, the decomposition, rlx-fusion's pass and the
// backends' kernels read the operands through this one map.
#pragma once

#include "rlx/ir/attrs.hpp"

#include <cstddef>

namespace rlx::ir {

/// Operand slots of a FusedTransformerLayer; kAbsent marks an operand the attributes leave out.
struct LayerSlots {
  static constexpr std::size_t kAbsent = static_cast<std::size_t>(-1);
  std::size_t x = 0, w_qkv = 1, w_o = 2, b_qkv = kAbsent, b_o = kAbsent;
  std::size_t g1 = kAbsent, beta1 = kAbsent;
  std::size_t w_gate = kAbsent, w_up = kAbsent, b_up = kAbsent, w_down = kAbsent, b_down = kAbsent;
  std::size_t g2 = kAbsent, beta2 = kAbsent, mask = kAbsent;
  std::size_t count = 0; ///< the operand count
};

/// Whether attention mask kind \p m reads a mask operand.
inline bool mask_takes_operand(MaskKind m) {
  return m == MaskKind::padding || m == MaskKind::bias;
}

/// The operand slots of a layer with attributes \p a: x, w_qkv, w_o [, b_qkv] [, b_o], g1
/// [, beta1], then w_up [, b_up], w_down [, b_down] (bert_post_norm) or w_gate, w_up, w_down
/// [, b_down] (llama_pre_norm), g2 [, beta2] [, mask].
inline LayerSlots layer_slots(const FusedTransformerLayerAttrs& a) {
  LayerSlots s;
  std::size_t next = 3;
  auto take = [&](bool present) { return present ? next++ : LayerSlots::kAbsent; };
  s.b_qkv = take(a.block.qkv_bias);
  s.b_o = take(a.block.out_bias);
  s.g1 = take(true);
  s.beta1 = take(a.norm_beta);
  const bool llama = a.kind == LayerKind::llama_pre_norm;
  s.w_gate = take(llama);
  s.w_up = take(true);
  s.b_up = take(!llama && a.up_bias);
  s.w_down = take(true);
  s.b_down = take(a.down_bias);
  s.g2 = take(true);
  s.beta2 = take(a.norm_beta);
  s.mask = take(mask_takes_operand(a.block.mask));
  s.count = next;
  return s;
}

} // namespace rlx::ir
