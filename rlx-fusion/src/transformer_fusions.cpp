// transformer_fusions.cpp: the transformer fusion passes as Pattern lists run by apply_patterns,
// their registration and their claim gate.
#include "rlx/fusion/transformer_fusions.hpp"

#include <memory>

namespace rlx::fusion {

namespace {

/// A fusion pass: a named list of patterns applied to a fixed point, gated by the context's claims
/// and reporting into its FusionReport.
class PatternPass final : public Pass {
public:
  PatternPass(std::string name, std::vector<Pattern> patterns)
      : name_(std::move(name)), patterns_(std::move(patterns)) {}
  std::string_view name() const override { return name_; }
  bool run(ir::Graph& g, PassContext& ctx) override {
    ApplyOptions o;
    o.claims = ctx.claims;
    o.report = ctx.report;
    return apply_patterns(g, patterns_, o) > 0;
  }

private:
  std::string name_;
  std::vector<Pattern> patterns_;
};

} // namespace

std::unique_ptr<Pass> make_fuse_swiglu_matmul() {
  return std::make_unique<PatternPass>("fuse-swiglu-matmul", swiglu_matmul_patterns());
}
std::unique_ptr<Pass> make_fuse_shared_input_matmul() {
  return std::make_unique<PatternPass>("fuse-shared-input-matmul", shared_input_matmul_patterns());
}
std::unique_ptr<Pass> make_fuse_swiglu() {
  return std::make_unique<PatternPass>("fuse-swiglu", swiglu_patterns());
}
std::unique_ptr<Pass> make_fuse_attention() {
  return std::make_unique<PatternPass>("fuse-attention", attention_patterns());
}

void register_transformer_fusions(PassRegistry& registry) {
  registry.add("fuse-swiglu-matmul", make_fuse_swiglu_matmul);
  registry.add("fuse-shared-input-matmul", make_fuse_shared_input_matmul);
  registry.add("fuse-swiglu", make_fuse_swiglu);
  registry.add("fuse-attention", make_fuse_attention);
}

void append_transformer_fusions(const ir::ClaimSet& claims, std::vector<std::string>& names) {
  // The dual matmul first: it consumes the Silu * Mul that fuse-swiglu would otherwise take.
  if (claims.claims(ir::OpKind::SwiGluMatMul, ir::DType::f32))
    names.emplace_back("fuse-swiglu-matmul");
  // Then the remaining projections of one input (Q / K / V) into one packed GEMM.
  if (claims.claims(ir::OpKind::Concat, ir::DType::f32) &&
      claims.claims(ir::OpKind::Split, ir::DType::f32) &&
      claims.claims(ir::OpKind::Get, ir::DType::f32))
    names.emplace_back("fuse-shared-input-matmul");
  if (claims.claims(ir::OpKind::SwiGlu, ir::DType::f32))
    names.emplace_back("fuse-swiglu");
  if (claims.claims(ir::OpKind::Attention, ir::DType::f32))
    names.emplace_back("fuse-attention");
}

} // namespace rlx::fusion
