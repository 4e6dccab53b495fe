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

} // namespace rlx::fusion
