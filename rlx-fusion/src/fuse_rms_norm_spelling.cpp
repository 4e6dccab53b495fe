// fuse_rms_norm_spelling.cpp: the fuse-rms-norm-spelling pass, a recogniser. PyTorch's ONNX export
// of a LLaMA RMSNorm spells it out in primitives; this rewrites the spelling into the RmsNorm op
// (one kernel instead of about seven):
//
//   ms  = reduce_mean(x ^ 2 | x * x, [-1], keep)      r = sqrt(ms + eps)
//   y   = x / r | x * (1 / r) | x * rsqrt(ms + eps)
//   out = y * gamma                                   -> rms_norm(x, gamma, eps)
//
// Structure: the reduction is a mean keeping dims, eps and the 1 of 1 / r are constants of one
// value. Preconditions, each a MissReason: the reduction runs over the last axis only
// (attribute_mismatch); gamma is [D] of x's dtype and the result keeps x's type (shape_mismatch);
// every inner value has one use (multiple_consumers / is_graph_output); the backend claims RmsNorm.
// The values are those of RmsNorm's decomposition, x / sqrt(mean(x^2) + eps) * gamma, which differs
// from the `x * (1 / r)` spelling by rounding only.
#include "fusion_pass_list.hpp"
#include "pattern_pass.hpp"

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// A Constant whose elements all equal its first (a scalar or a one-value tensor).
bool one_value_constant(const Graph& g, NodeId id) {
  const ir::Node& n = g.node(id);
  if (n.op != OpKind::Constant)
    return false;
  const ir::Tensor& t = n.attr<ir::ConstantAttrs>().value;
  if (t.numel() == 0 || !ir::is_float(t.shape().dtype))
    return false;
  for (std::int64_t i = 1; i < t.numel(); ++i)
    if (t.get_f64(i) != t.get_f64(0))
      return false;
  return true;
}

Pat inner(OpKind k, std::vector<Pat> operands) {
  Pat p = Pat::op(k, std::move(operands));
  p.one_use();
  return p;
}

/// reduce_mean(square of x, last axis, keep): x is captured by the caller's first occurrence.
Pat mean_square(Pat square) {
  Pat p = inner(OpKind::Reduce, {std::move(square)});
  p.structurally([](const Graph& g, NodeId id) {
     const auto& a = g.node(id).attr<ir::ReduceAttrs>();
     return a.op == ir::ReduceOp::mean && a.keep_dims;
   })
      .where(
          [](const Graph& g, NodeId id) {
            const auto& a = g.node(id).attr<ir::ReduceAttrs>();
            const auto rank = static_cast<std::int64_t>(g.shape(g.node(id).inputs[0]).rank());
            return a.axes.size() == 1 && (a.axes[0] == -1 || a.axes[0] == rank - 1);
          },
          MissReason::attribute_mismatch, "RMSNorm normalises over the last axis only");
  return p;
}

std::optional<Miss> check_spelling(const Graph& g, const Match& m) {
  const ir::Shape& x = g.shape(m["x"]);
  const ir::Shape& gamma = g.shape(m["gamma"]);
  if (g.shape(m.root) != x)
    return Miss{MissReason::shape_mismatch,
                "the result " + g.shape(m.root).str() + " does not keep x's type " + x.str()};
  if (gamma.rank() == 1 && x.rank() >= 1 && gamma.dims[0] == x.dims.back() &&
      gamma.dtype == x.dtype)
    return std::nullopt;
  return Miss{MissReason::shape_mismatch, "gamma " + gamma.str() + " is not [D] for x " + x.str()};
}

std::vector<Pattern> spellings() {
  std::vector<Pattern> out;
  // x is bound at its first occurrence in match order: the normalisation's x operand.
  const Pat squares[] = {Pat::op(OpKind::Pow, {Pat::same("x"), Pat::splat(2.0)}),
                         Pat::op(OpKind::Mul, {Pat::same("x"), Pat::same("x")})};
  for (const Pat& sq0 : squares) {
    Pat sq = sq0;
    sq.one_use();
    const Pat ve = inner(
        OpKind::Add, {mean_square(sq), Pat::any().bind("eps").structurally(one_value_constant)});
    const Pat norms[] = {
        Pat::op(OpKind::Div, {Pat::any().bind("x"), inner(OpKind::Sqrt, {ve})}),
        Pat::op(OpKind::Mul, {Pat::any().bind("x"), inner(OpKind::Rsqrt, {ve})}),
        Pat::op(OpKind::Mul, {Pat::any().bind("x"),
                              inner(OpKind::Div, {Pat::splat(1.0), inner(OpKind::Sqrt, {ve})})})};
    for (const Pat& n0 : norms) {
      Pat norm = n0;
      norm.one_use();
      Pattern p;
      p.name = "rms_norm_spelling";
      p.root = Pat::op(OpKind::Mul, {norm, Pat::any().bind("gamma")});
      p.root.float_dtype();
      p.check = check_spelling;
      p.emits = {OpKind::RmsNorm};
      p.rewrite = [](ir::Builder& b, const Match& m) {
        const double eps = b.graph().node(m["eps"]).attr<ir::ConstantAttrs>().value.get_f64(0);
        return b.op(OpKind::RmsNorm, {m["x"], m["gamma"]}, ir::NormAttrs{eps},
                    b.graph().node(m.root).name);
      };
      out.push_back(std::move(p));
    }
  }
  return out;
}

} // namespace

std::unique_ptr<Pass> make_fuse_rms_norm_spelling() {
  return std::make_unique<PatternPass>("fuse-rms-norm-spelling", spellings());
}

} // namespace rlx::fusion
