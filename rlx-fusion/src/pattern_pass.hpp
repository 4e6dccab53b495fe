// pattern_pass.hpp (private): a Pass that applies a fixed list of Patterns to a fixed point, with
// the context's claims gating what they emit and its report receiving what fused and what missed.
#pragma once

#include "rlx/fusion/pattern.hpp"

#include <string>
#include <vector>

namespace rlx::fusion {

class PatternPass final : public Pass {
public:
  PatternPass(std::string name, std::vector<Pattern> patterns)
      : name_(std::move(name)), patterns_(std::move(patterns)) {}
  std::string_view name() const override { return name_; }
  bool run(ir::Graph& g, PassContext& ctx) override {
    ApplyOptions o;
    o.claims = ctx.claims;
    o.report = ctx.report;
    o.gate = ctx.io_gate;
    return apply_patterns(g, patterns_, o) > 0;
  }

private:
  std::string name_;
  std::vector<Pattern> patterns_;
};

/// A Constant every element of which is within relative \p rel of \p v (exporters write constants
/// such as 1/sqrt(2) rounded to f32, or to a few digits).
Pat near_splat(double v, double rel = 1e-5);

/// The Activation of a unary op kind, when MatMulBiasAct's epilogue has it.
std::optional<ir::Activation> activation_of(ir::OpKind k);

} // namespace rlx::fusion
