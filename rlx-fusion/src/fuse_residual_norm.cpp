// fuse_residual_norm.cpp: fuse-residual-layer-norm and fuse-residual-rms-norm. A norm of a
// residual sum, Norm(Add(x, r), gamma [, beta]), becomes one fused node with a tuple result (the
// sum, the normalised sum); the norm's users read part 1.
//
// The driver replaces one root per rewrite, so the sum's other users (the next residual in a
// pre-norm block, or a graph output) are rewritten on the Add's own visit in the next sweep: a
// pattern rooted at the Add finds the fused node of the same (x, r) among x's users and returns
// its part 0. The Add then dies and the sum is computed once, by the fused kernel.
#include "rlx/fusion/norm_fusions.hpp"

#include "pattern_pass.hpp"

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// x and r have the sum's dims: the fused op does not broadcast.
std::optional<Miss> same_dims(const Graph& g, const Match& m) {
  const ir::Shape& x = g.shape(m["x"]);
  const ir::Shape& r = g.shape(m["r"]);
  const ir::Shape& s = g.shape(m["sum"]);
  if (x.dims == s.dims && r.dims == s.dims)
    return std::nullopt;
  return Miss{MissReason::shape_mismatch, "the residual sum of " + x.str() + " and " + r.str() +
                                              " broadcasts (the fused op adds equal dims only)"};
}

/// The fused node of kind \p fused reading (x, r) in either order, among x's users; invalid when
/// there is none (the norm of this sum was not fused).
NodeId fused_of(const Graph& g, NodeId x, NodeId r, OpKind fused) {
  for (NodeId u : g.users(x)) {
    const ir::Node& n = g.node(u);
    if (n.op == fused &&
        ((n.inputs[0] == x && n.inputs[1] == r) || (n.inputs[0] == r && n.inputs[1] == x)))
      return u;
  }
  return {};
}

/// The norm pattern: Norm(Add(x, r), gamma [, beta]) → Get(Fused(x, r, gamma [, beta]), 1).
Pattern norm_pattern(std::string name, OpKind norm, OpKind fused, bool beta) {
  Pattern p;
  p.name = std::move(name);
  std::vector<Pat> operands{
      Pat::op(OpKind::Add, {Pat::any().bind("x"), Pat::any().bind("r")}).bind("sum"),
      Pat::any().bind("gamma")};
  if (beta)
    operands.push_back(Pat::any().bind("beta"));
  p.root = Pat::op(norm, std::move(operands));
  p.root.float_dtype();
  p.check = same_dims;
  p.emits = {fused, OpKind::Get};
  // Not judged by the IO gate: when the sum has other users (a pre-norm block's residual
  // stream), this step only adds the sum as a second result; the Add dies in the sum pattern's
  // step, so a per-step model would refuse every pre-norm residual (LLaMA's).
  p.gated = false;
  p.rewrite = [fused, beta](ir::Builder& b, const Match& m) {
    std::vector<NodeId> in{m["x"], m["r"], m["gamma"]};
    if (beta)
      in.push_back(m["beta"]);
    const ir::Node& root = b.graph().node(m.root);
    const std::string label = root.name;
    const ir::NormAttrs attrs = root.attr<ir::NormAttrs>();
    const NodeId t = b.graph().add(fused, in, attrs, label);
    return b.graph().add(OpKind::Get, {t}, ir::GetAttrs{1}, label);
  };
  return p;
}

/// The sum pattern: Add(x, r) whose norm was fused → Get(Fused(x, r, ..), 0). Structural only (no
/// fused node: not this pattern), so it never reports a miss of its own.
Pattern sum_pattern(std::string name, OpKind fused) {
  Pattern p;
  p.name = std::move(name);
  p.root = Pat::op(OpKind::Add, {Pat::any().bind("x"), Pat::any().bind("r")});
  p.root.structurally([fused](const Graph& g, NodeId id) {
    const ir::Node& n = g.node(id);
    return fused_of(g, n.inputs[0], n.inputs[1], fused).valid();
  });
  p.emits = {OpKind::Get};
  p.rewrite = [fused](ir::Builder& b, const Match& m) {
    const NodeId t = fused_of(b.graph(), m["x"], m["r"], fused);
    const std::string label = b.graph().node(m.root).name;
    return b.graph().add(OpKind::Get, {t}, ir::GetAttrs{0}, label);
  };
  return p;
}

} // namespace

std::vector<Pattern> residual_layer_norm_patterns() {
  std::vector<Pattern> out;
  out.push_back(norm_pattern("residual_layer_norm", OpKind::LayerNorm, OpKind::ResidualLayerNorm,
                             /*beta=*/true));
  out.push_back(norm_pattern("residual_layer_norm", OpKind::LayerNorm, OpKind::ResidualLayerNorm,
                             /*beta=*/false));
  out.push_back(sum_pattern("residual_layer_norm_sum", OpKind::ResidualLayerNorm));
  return out;
}

std::vector<Pattern> residual_rms_norm_patterns() {
  std::vector<Pattern> out;
  out.push_back(norm_pattern("residual_rms_norm", OpKind::RmsNorm, OpKind::ResidualRmsNorm,
                             /*beta=*/false));
  out.push_back(sum_pattern("residual_rms_norm_sum", OpKind::ResidualRmsNorm));
  return out;
}

std::unique_ptr<Pass> make_fuse_residual_layer_norm() {
  return std::make_unique<PatternPass>("fuse-residual-layer-norm", residual_layer_norm_patterns());
}

std::unique_ptr<Pass> make_fuse_residual_rms_norm() {
  return std::make_unique<PatternPass>("fuse-residual-rms-norm", residual_rms_norm_patterns());
}

} // namespace rlx::fusion
