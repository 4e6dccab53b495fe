// fuse_gelu_spelling.cpp: the fuse-gelu-spelling pass, a recogniser. Exporters (PyTorch, TF,
// HuggingFace) spell GELU out in primitives; this rewrites the spellings into the Gelu / GeluTanh
// op, which fuse-matmul-bias-act then folds into a MatMul epilogue.
//
//   erf GELU   x * 0.5 * (1 + erf(x / sqrt(2)))       (or erf(x * (1 / sqrt(2))))
//   tanh GELU  0.5 * x * (1 + tanh(sqrt(2 / pi) * (x + 0.044715 * x^3)))
//              with x^3 as pow(x, 3), x * x * x or x * (x * x)
// Every association of the outer product ((x * 0.5) * f, x * (0.5 * f), (x * f) * 0.5) and, since
// Mul and Add are commutative, every operand order is recognised. Constants are scalars or
// tensors of one value, matched within a relative 1e-5 (they are usually rounded to f32). Every
// inner node must have one use (multiple_consumers otherwise) and the backend must claim the op.
#include "fusion_pass_list.hpp"
#include "pattern_pass.hpp"

#include <cmath>
#include <numbers>

namespace rlx::fusion {

namespace {

using ir::Graph;
using ir::NodeId;
using ir::OpKind;

Pat x_first() {
  return Pat::any().bind("x");
}
Pat x_again() {
  return Pat::same("x");
}
/// An inner node: op \p k of \p operands, one use.
Pat inner(OpKind k, std::vector<Pat> operands) {
  Pat p = Pat::op(k, std::move(operands));
  p.one_use();
  return p;
}

/// The value keeps x's type (a constant of a larger shape would broadcast it).
std::optional<Miss> same_type_as_x(const Graph& g, const Match& m) {
  if (g.shape(m["x"]) == g.shape(m.root))
    return std::nullopt;
  return Miss{MissReason::shape_mismatch, "a constant broadcasts x from " + g.shape(m["x"]).str() +
                                              " to " + g.shape(m.root).str()};
}

/// The three associations of x * c * f: (x * c) * f, x * (c * f), (x * f) * c.
std::vector<Pat> products(const Pat& c, const Pat& f) {
  return {
      Pat::op(OpKind::Mul, {inner(OpKind::Mul, {x_first(), c}), f}),
      Pat::op(OpKind::Mul, {x_first(), inner(OpKind::Mul, {c, f})}),
      Pat::op(OpKind::Mul, {inner(OpKind::Mul, {x_first(), f}), c}),
  };
}

std::vector<Pattern> erf_gelu() {
  const double r2 = std::numbers::sqrt2;
  std::vector<Pattern> out;
  for (const Pat& arg : {inner(OpKind::Div, {x_again(), near_splat(r2)}),
                         inner(OpKind::Mul, {x_again(), near_splat(1.0 / r2)})}) {
    const Pat f = inner(OpKind::Add, {Pat::splat(1.0), inner(OpKind::Erf, {arg})});
    for (Pat& root : products(Pat::splat(0.5), f)) {
      Pattern p;
      p.name = "gelu_erf_spelling";
      p.root = std::move(root);
      p.root.float_dtype();
      p.check = same_type_as_x;
      p.emits = {OpKind::Gelu};
      p.rewrite = [](ir::Builder& b, const Match& m) { return b.unary(OpKind::Gelu, m["x"]); };
      out.push_back(std::move(p));
    }
  }
  return out;
}

std::vector<Pattern> tanh_gelu() {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  std::vector<Pattern> out;
  for (const Pat& cube :
       {inner(OpKind::Pow, {x_again(), Pat::splat(3.0)}),
        inner(OpKind::Mul, {inner(OpKind::Mul, {x_again(), x_again()}), x_again()}),
        inner(OpKind::Mul, {x_again(), inner(OpKind::Mul, {x_again(), x_again()})})}) {
    const Pat poly =
        inner(OpKind::Add, {x_again(), inner(OpKind::Mul, {near_splat(0.044715), cube})});
    const Pat t = inner(OpKind::Tanh, {inner(OpKind::Mul, {near_splat(k), poly})});
    const Pat f = inner(OpKind::Add, {Pat::splat(1.0), t});
    for (Pat& root : products(Pat::splat(0.5), f)) {
      Pattern p;
      p.name = "gelu_tanh_spelling";
      p.root = std::move(root);
      p.root.float_dtype();
      p.check = same_type_as_x;
      p.emits = {OpKind::GeluTanh};
      p.rewrite = [](ir::Builder& b, const Match& m) { return b.unary(OpKind::GeluTanh, m["x"]); };
      out.push_back(std::move(p));
    }
  }
  return out;
}

} // namespace

Pat near_splat(double v, double rel) {
  Pat p = Pat::any();
  p.structurally([v, rel](const Graph& g, NodeId id) {
    const ir::Node& n = g.node(id);
    if (n.op != OpKind::Constant)
      return false;
    const ir::Tensor& t = n.attr<ir::ConstantAttrs>().value;
    if (t.numel() == 0)
      return false;
    for (std::int64_t i = 0; i < t.numel(); ++i)
      if (!(std::abs(t.get_f64(i) - v) <= rel * std::abs(v)))
        return false;
    return true;
  });
  return p;
}

std::unique_ptr<Pass> make_fuse_gelu_spelling() {
  std::vector<Pattern> ps = erf_gelu();
  for (Pattern& p : tanh_gelu())
    ps.push_back(std::move(p));
  return std::make_unique<PatternPass>("fuse-gelu-spelling", std::move(ps));
}

} // namespace rlx::fusion
