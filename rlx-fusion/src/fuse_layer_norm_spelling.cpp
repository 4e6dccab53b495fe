// fuse_layer_norm_spelling.cpp: the fuse-layer-norm-spelling pass, a recogniser. Exporters
// (PyTorch before opset 17, TF) spell LayerNorm out in primitives; this rewrites the spelling into
// the LayerNorm op (one kernel instead of about nine):
//
//   mean = reduce_mean(x, [-1], keep)      d = x - mean
//   var  = reduce_mean(d ^ 2 | d * d, [-1], keep)
//   y    = d / sqrt(var + eps) | d * rsqrt(var + eps)
//   out  = y * gamma (+ beta)               -> layer_norm(x, gamma (, beta), eps)
//
// Patterns: layer_norm_spelling (up to gamma) and layer_norm_beta (a LayerNorm without beta
// followed by + beta, which also folds a user's separate bias add). Structure: both reductions are
// means keeping dims, eps is a constant of one value. Preconditions, each a MissReason: the
// reductions run over the last axis only (attribute_mismatch); gamma and beta are [D] of x's
// dtype and the result keeps x's type (shape_mismatch); every inner value has one use, except d,
// whose uses must all be inside the pattern (multiple_consumers); the backend claims LayerNorm.
#include "fusion_pass_list.hpp"
#include "pattern_pass.hpp"

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

bool mean_keep(const Graph& g, NodeId id) {
  const auto& a = g.node(id).attr<ir::ReduceAttrs>();
  return a.op == ir::ReduceOp::mean && a.keep_dims;
}

bool over_last_axis(const Graph& g, NodeId id) {
  const auto& a = g.node(id).attr<ir::ReduceAttrs>();
  const auto rank = static_cast<std::int64_t>(g.shape(g.node(id).inputs[0]).rank());
  return a.axes.size() == 1 && (a.axes[0] == -1 || a.axes[0] == rank - 1);
}

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

Pat reduce_mean(Pat operand, const char* name) {
  Pat p = Pat::op(OpKind::Reduce, {std::move(operand)});
  p.bind(name)
      .structurally(mean_keep)
      .where(over_last_axis, MissReason::attribute_mismatch,
             "LayerNorm normalises over the last axis only")
      .one_use();
  return p;
}

Pat inner(OpKind k, std::vector<Pat> operands) {
  Pat p = Pat::op(k, std::move(operands));
  p.one_use();
  return p;
}

/// \p v is [D] for x's last dim D, of x's dtype.
std::optional<Miss> vector_of_x(const Graph& g, const Match& m, const char* v) {
  const ir::Shape& x = g.shape(m["x"]);
  const ir::Shape& s = g.shape(m[v]);
  if (s.rank() == 1 && x.rank() >= 1 && s.dims[0] == x.dims.back() && s.dtype == x.dtype)
    return std::nullopt;
  return Miss{MissReason::shape_mismatch,
              std::string(v) + " " + s.str() + " is not [D] for x " + x.str()};
}

std::optional<Miss> check_spelling(const Graph& g, const Match& m) {
  // d feeds the square and the normalisation, nothing else.
  for (NodeId u : g.users(m["d"]))
    if (u != m["sq"] && u != m["norm"])
      return Miss{MissReason::multiple_consumers,
                  ir::describe(g, m["d"]) + " (x - mean) is also read by " + ir::describe(g, u)};
  if (g.is_output(m["d"]))
    return Miss{MissReason::is_graph_output, ir::describe(g, m["d"]) + " is a graph output"};
  if (g.shape(m.root) != g.shape(m["x"]))
    return Miss{MissReason::shape_mismatch, "the result " + g.shape(m.root).str() +
                                                " does not keep x's type " + g.shape(m["x"]).str()};
  return vector_of_x(g, m, "gamma");
}

std::vector<Pattern> spellings() {
  std::vector<Pattern> out;
  const Pat d = [] {
    Pat p = Pat::op(OpKind::Sub, {Pat::any().bind("x"), reduce_mean(Pat::same("x"), "mean")});
    p.bind("d");
    return p;
  }();
  const Pat squares[] = {Pat::op(OpKind::Pow, {Pat::same("d"), Pat::splat(2.0)}),
                         Pat::op(OpKind::Mul, {Pat::same("d"), Pat::same("d")})};
  for (const Pat& sq0 : squares) {
    Pat sq = sq0;
    sq.bind("sq").one_use();
    const Pat ve = inner(OpKind::Add, {reduce_mean(sq, "var"),
                                       Pat::any().bind("eps").structurally(one_value_constant)});
    const Pat norms[] = {Pat::op(OpKind::Div, {d, inner(OpKind::Sqrt, {ve})}),
                         Pat::op(OpKind::Mul, {d, inner(OpKind::Rsqrt, {ve})})};
    for (const Pat& n0 : norms) {
      Pat norm = n0;
      norm.bind("norm").one_use();
      Pattern p;
      p.name = "layer_norm_spelling";
      p.root = Pat::op(OpKind::Mul, {norm, Pat::any().bind("gamma")});
      p.root.float_dtype();
      p.check = check_spelling;
      p.emits = {OpKind::LayerNorm};
      p.rewrite = [](ir::Builder& b, const Match& m) {
        const double eps = b.graph().node(m["eps"]).attr<ir::ConstantAttrs>().value.get_f64(0);
        return b.op(OpKind::LayerNorm, {m["x"], m["gamma"]}, ir::NormAttrs{eps});
      };
      out.push_back(std::move(p));
    }
  }
  return out;
}

Pattern beta() {
  Pattern p;
  p.name = "layer_norm_beta";
  Pat ln = Pat::op(OpKind::LayerNorm);
  ln.bind("ln")
      .structurally([](const Graph& g, NodeId id) { return g.node(id).inputs.size() == 2; })
      .one_use();
  p.root = Pat::op(OpKind::Add, {ln, Pat::any().bind("beta")});
  p.check = [](const Graph& g, const Match& m) -> std::optional<Miss> {
    const ir::Shape& y = g.shape(m["ln"]);
    const ir::Shape& s = g.shape(m["beta"]);
    if (s.rank() == 1 && s.dims[0] == y.dims.back() && s.dtype == y.dtype)
      return std::nullopt;
    return Miss{MissReason::shape_mismatch, "beta " + s.str() + " is not [D] for " + y.str()};
  };
  p.emits = {OpKind::LayerNorm};
  p.rewrite = [](ir::Builder& b, const Match& m) {
    const ir::Node n = b.graph().node(m["ln"]);
    return b.op(OpKind::LayerNorm, {n.inputs[0], n.inputs[1], m["beta"]}, n.attrs, n.name);
  };
  return p;
}

} // namespace

std::unique_ptr<Pass> make_fuse_layer_norm_spelling() {
  std::vector<Pattern> ps = spellings();
  ps.push_back(beta());
  return std::make_unique<PatternPass>("fuse-layer-norm-spelling", std::move(ps));
}

} // namespace rlx::fusion
