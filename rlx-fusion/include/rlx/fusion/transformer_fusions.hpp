// transformer_fusions.hpp: the transformer-level fusion passes (SwiGLU, the SwiGLU dual matmul,
// attention spelled in primitives). Each pass is a list of Patterns run by apply_patterns(), so
// every recognised instance that does not fuse is reported with its MissReason.
#pragma once

#include "rlx/fusion/pass.hpp"
#include "rlx/fusion/pattern.hpp"
#include "rlx/ir/claims.hpp"

#include <memory>
#include <string>
#include <vector>

namespace rlx::fusion {

/// fuse-swiglu: silu(gate) * up, and the spelling gate * sigmoid(gate) * up, in either operand
/// order, → SwiGlu(gate, up) when gate and up have equal dims (no broadcasting) and the inner
/// values have no other use.
std::vector<Pattern> swiglu_patterns();

/// fuse-swiglu-matmul: silu(x Wg^T) * (x Wu^T) (or SwiGlu of the two products) with [N, K]
/// weights of equal shape and the same x → SwiGluMatMul(x, Wg, Wu).
std::vector<Pattern> swiglu_matmul_patterns();

/// fuse-shared-input-matmul: MatMul(x, W_i, transpose_b) (+ b_i) for two or more 2-D Param
/// weights W_i [N_i, K] of one input x → MatMul(x, Concat(W_i)) (+ Concat(b_i)), Split along the
/// last axis, one Get per projection. The Concat reads Params only, so a backend computes it when
/// weights are bound (the CPU keeps it in the weight region), never per run. A group takes the
/// biased form when every member has a bias Add, the plain form otherwise.
std::vector<Pattern> shared_input_matmul_patterns();

/// fuse-attention: MatMul(softmax(scale · Q K^T [+ mask]), V) as exporters spell it (K^T as the
/// transpose_b flag, a Transpose of the last two axes, or a Transpose {0,2,3,1} of [B, S, H, D];
/// the scale as Mul / Div by a scalar constant, or absent; an additive mask) → Attention in the
/// bhsd layout with mask kind bias (or none) and the spelled scale; and Transpose {0,2,1,3} of a
/// bhsd Attention whose Q / K / V are Transposes {0,2,1,3} → Attention in the bshd layout on the
/// untransposed operands.
std::vector<Pattern> attention_patterns();

/// fuse-attention-block: the attention sub-layer as the earlier passes leave it (a packed Q / K / V
/// projection, MatMul or MatMulBiasAct without activation; Split; per part a Get and a head
/// Reshape; Rope of q and k or of neither; a bshd Attention with any mask; the merging Reshape; the
/// output projection) → FusedAttentionBlock, rooted at the output projection. Misses: inner values
/// with other users or graph outputs, parts not q, k, v in order, a bhsd Attention, RoPE of one
/// of q and k or with different attributes, activations or transposed inputs in the projections.
std::vector<Pattern> attention_block_patterns();

/// A new fuse-swiglu-matmul pass (the patterns above run by apply_patterns with the context's
/// claims and report); likewise for the other three.
std::unique_ptr<Pass> make_fuse_swiglu_matmul();
/// A new fuse-shared-input-matmul pass.
std::unique_ptr<Pass> make_fuse_shared_input_matmul();
/// A new fuse-swiglu pass.
std::unique_ptr<Pass> make_fuse_swiglu();
/// A new fuse-attention pass.
std::unique_ptr<Pass> make_fuse_attention();
/// A new fuse-attention-block pass.
std::unique_ptr<Pass> make_fuse_attention_block();

/// A new fuse-transformer-layer pass: a BERT post-norm layer (attention block, residual
/// LayerNorm, FFN up with its activation, FFN down, residual LayerNorm) or a LLaMA pre-norm layer
/// (RMSNorm, attention block, residual RMSNorm, SwiGLU product, down product, residual Add, the
/// last two usually joined with the next layer's norm) as the earlier passes leave it →
/// FusedTransformerLayer (src/fuse_transformer_layer.cpp says what is matched). Misses: inner
/// values with other users or graph outputs, norms with different eps / betas, an activation on
/// the down product, the backend not claiming the layer for the dtype.
std::unique_ptr<Pass> make_fuse_transformer_layer();

} // namespace rlx::fusion
