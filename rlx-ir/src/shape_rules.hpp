// shape_rules.hpp (private): one shape rule per `shape_rule` name in ops.def.
#pragma once

#include "rlx/ir/attrs.hpp"
#include "rlx/ir/shape.hpp"

#include <span>

namespace rlx::ir::rules {

using In = std::span<const Shape>;

Shape leaf(In, const LeafAttrs&);
Shape constant(In, const ConstantAttrs&);
Shape unary(In, const NoAttrs&);
Shape unary_float(In, const NoAttrs&);
Shape cast(In, const CastAttrs&);
Shape binary(In, const NoAttrs&);
Shape compare(In, const CompareAttrs&);
Shape where(In, const NoAttrs&);
Shape matmul(In, const MatMulAttrs&);
Shape dot_general(In, const DotGeneralAttrs&);
Shape dense_solve(In, const NoAttrs&);
Shape reshape(In, const TargetShapeAttrs&);
Shape transpose(In, const TransposeAttrs&);
Shape narrow(In, const NarrowAttrs&);
Shape concat(In, const AxisAttrs&);
Shape split(In, const SplitAttrs&); // shape_rules_tuple.cpp
Shape get(In, const GetAttrs&);     // shape_rules_tuple.cpp
Shape topk(In, const TopKAttrs&);   // shape_rules_tuple.cpp
Shape expand(In, const TargetShapeAttrs&);
Shape gather(In, const AxisAttrs&);
Shape scatter_add(In, const AxisAttrs&);
Shape reduce(In, const ReduceAttrs&);
Shape softmax(In, const AxisAttrs&);
Shape argmax(In, const ArgMaxAttrs&);
Shape layer_norm(In, const NormAttrs&);
Shape rms_norm(In, const NormAttrs&);
Shape attention(In, const AttentionAttrs&);
Shape rope(In, const RopeAttrs&);
Shape softmax_cross_entropy(In, const NoAttrs&);
Shape conv2d(In, const Conv2dAttrs&);
Shape pool2d(In, const Pool2dAttrs&);
Shape if_op(In, const IfAttrs&);
Shape while_op(In, const WhileAttrs&);
Shape custom(In, const CustomAttrs&);
Shape custom_fn(In, const CustomFnAttrs&);
Shape elementwise_region(In, const RegionAttrs&);
Shape quantize(In, const QuantAttrs&);
Shape dequantize(In, const QuantAttrs&);
Shape fake_quantize(In, const QuantAttrs&);
Shape linear(In, const LinearAttrs&);
Shape attention_block(In, const AttentionBlockAttrs&);
Shape swiglu_ffn(In, const NoAttrs&);
Shape bert_layer(In, const BertLayerAttrs&);
Shape llama_block(In, const LlamaBlockAttrs&);
// fused ops (shape_rules_fused.cpp)
Shape matmul_bias_act(In, const MatMulBiasActAttrs&);

// fused ops: transformer (shape_rules_fused_transformer.cpp)
Shape swiglu(In, const NoAttrs&);
Shape swiglu_matmul(In, const SwiGluMatMulAttrs&);

// fused ops: residual + norm (shape_rules_fused_norm.cpp)
Shape residual_layer_norm(In, const NormAttrs&);
Shape residual_rms_norm(In, const NormAttrs&);
// fused ops: attention block (shape_rules_fused_attention.cpp)
Shape fused_attention_block(In, const FusedAttentionBlockAttrs&);
/// The operand count a fused attention block with \p a takes.
std::size_t fused_attention_block_arity(const FusedAttentionBlockAttrs& a);
// fused ops: transformer layer (shape_rules_fused_layer.cpp)
Shape fused_transformer_layer(In, const FusedTransformerLayerAttrs&);
// backward ops (shape_rules_backward.cpp)
Shape layer_norm_grad(In, const NormAttrs&);
Shape rms_norm_grad(In, const NormAttrs&);
Shape softmax_grad(In, const AxisAttrs&);
Shape attention_grad(In, const AttentionAttrs&); // shape_rules_backward.cpp: backward ops 2
Shape softmax_cross_entropy_grad(In, const NoAttrs&);
// conv / pool backward (shape_rules_backward.cpp)
Shape conv2d_grad_input(In, const Conv2dGradAttrs&);
Shape conv2d_grad_weight(In, const Conv2dGradAttrs&);
Shape pool2d_grad(In, const Pool2dGradAttrs&);

} // namespace rlx::ir::rules
