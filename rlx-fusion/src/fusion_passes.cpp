// fusion_passes.cpp: the fusion pass table (one row per pass, in run order), the claim-gated list
// and the registration.
#include "rlx/fusion/fusion_passes.hpp"

#include "fusion_pass_list.hpp"
#include "rlx/fusion/elementwise_regions.hpp"
#include "rlx/fusion/norm_fusions.hpp"
#include "rlx/fusion/transformer_fusions.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::fusion {

namespace {

// The fusion passes in run order; a recogniser runs before the fusions that consume its ops, and
// the transformer fusions run before fuse-matmul-bias-act, which would otherwise take the MatMuls
// they match (the dual SwiGLU matmul first: it consumes the Silu * Mul fuse-swiglu would take).
// Elementwise regions run last: the pattern fusions take their elementwise ops first, and the
// regions group what is left.
// Adding a pass: a row here and its factory in fusion_pass_list.hpp (or transformer_fusions.hpp).
const FusionPassInfo kFusionPasses[] = {
    {"fuse-gelu-spelling", {ir::OpKind::Gelu, ir::OpKind::GeluTanh}, make_fuse_gelu_spelling},
    {"fuse-layer-norm-spelling", {ir::OpKind::LayerNorm}, make_fuse_layer_norm_spelling},
    {"fuse-rms-norm-spelling", {ir::OpKind::RmsNorm}, make_fuse_rms_norm_spelling},
    {"fuse-rope-spelling", {ir::OpKind::Rope, ir::OpKind::Transpose}, make_fuse_rope_spelling},
    {"fuse-swiglu-matmul", {ir::OpKind::SwiGluMatMul}, make_fuse_swiglu_matmul},
    {"fuse-shared-input-matmul",
     {ir::OpKind::MatMul, ir::OpKind::Concat, ir::OpKind::Split, ir::OpKind::Get},
     make_fuse_shared_input_matmul},
    {"fuse-swiglu", {ir::OpKind::SwiGlu}, make_fuse_swiglu},
    {"fuse-attention", {ir::OpKind::Attention}, make_fuse_attention},
    {"fuse-matmul-bias-act", {ir::OpKind::MatMulBiasAct}, make_fuse_matmul_bias_act},
    // ---- attention block (after the packed projection and the bias epilogues it reads) ----
    {"fuse-attention-block", {ir::OpKind::FusedAttentionBlock}, make_fuse_attention_block},
    // ---- residual + norm (after the epilogue fusions took their bias Adds) ----
    {"fuse-residual-layer-norm",
     {ir::OpKind::ResidualLayerNorm, ir::OpKind::Get},
     make_fuse_residual_layer_norm},
    {"fuse-residual-rms-norm",
     {ir::OpKind::ResidualRmsNorm, ir::OpKind::Get},
     make_fuse_residual_rms_norm},
    // ---- transformer layer (after the block, the residual norms and the FFN products) ----
    {"fuse-transformer-layer",
     {ir::OpKind::FusedTransformerLayer, ir::OpKind::RmsNorm, ir::OpKind::Add},
     make_fuse_transformer_layer,
     false}, // opt-in: no measured gain yet on the CPU (rlx-fusion DESIGN)
    {MarkElementwiseRegionsPass::kName,
     {ir::OpKind::ElementwiseRegion},
     []() -> std::unique_ptr<Pass> { return std::make_unique<MarkElementwiseRegionsPass>(); }},
};

} // namespace

std::span<const FusionPassInfo> fusion_pass_table() {
  return kFusionPasses;
}

std::vector<std::string> fusion_passes_for_supported(const ir::ClaimSet& claims,
                                                     const FusionOptions& opts) {
  std::vector<std::string> out;
  for (const FusionPassInfo& p : kFusionPasses) {
    bool claimed = true;
    for (ir::OpKind k : p.emits)
      claimed = claimed && claims.claims(k);
    const bool on = p.on_by_default || opts.enabled.contains(p.name);
    if (claimed && on && opts.enables(p.name))
      out.emplace_back(p.name);
  }
  return out;
}

void check_fusion_options(const FusionOptions& opts) {
  std::vector<std::string> named(opts.disabled.begin(), opts.disabled.end());
  named.insert(named.end(), opts.enabled.begin(), opts.enabled.end());
  for (const std::string& name : named) {
    bool known = false;
    std::string names;
    for (const FusionPassInfo& p : kFusionPasses) {
      known = known || p.name == name;
      names += (names.empty() ? "" : ", ") + std::string(p.name);
    }
    if (!known)
      throw Error("unknown fusion pass '" + name + "'; the fusion passes are " + names);
  }
}

void register_fusion_passes(PassRegistry& registry) {
  for (const FusionPassInfo& p : kFusionPasses)
    registry.add(std::string(p.name), p.make);
  registry.add("unfuse", make_unfuse);
  registry.add(std::string(UnfuseElementwiseRegionsPass::kName),
               [] { return std::make_unique<UnfuseElementwiseRegionsPass>(); });
}

} // namespace rlx::fusion
