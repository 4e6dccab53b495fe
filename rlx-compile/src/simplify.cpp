// simplify.cpp: the simplify pass, algebraic identities written as rlx::fusion patterns.
//
// Every rule replaces a node by a value of exactly its type (a rule whose result would broadcast
// to a larger shape does not fire), and is exact in IEEE arithmetic except where noted:
//   x * 1, 1 * x, x / 1, x ^ 1       -> x
//   x + 0, 0 + x, x - 0              -> x   (x + 0 maps -0.0 to +0.0; the rewrite keeps -0.0.
//                                          The values compare equal; no other difference.)
//   neg(neg(x))                      -> x
//   abs(abs(x)), relu(relu(x))       -> abs(x), relu(x)
//   where(c, x, x)                   -> x
//   transpose(x, identity)           -> x
//   transpose(transpose(x, p), q)    -> transpose(x, p o q), or x when that is the identity
//   reshape(x) to x's own shape      -> x
//   reshape(reshape(x))              -> reshape(x)
//   expand(x) to x's own shape       -> x
//   narrow(x) keeping the whole axis -> x
//   concat(x)                        -> x
//   cast(x) to x's own dtype         -> x
//   cast(cast(x, a), b)              -> cast(x, b) (or x when b is x's dtype), when the composed
//                                       conversion equals the direct one for every value of x's
//                                       dtype: a holds every value exactly (f16 -> f32, i8 -> i32,
//                                       bool -> anything ...) and, for int -> float -> int, b
//                                       holds every value too (float -> int saturates where
//                                       int -> int wraps: i32 300 -> f64 -> i8 is 127, not 44)
//   if(constant pred, ...)           -> the taken branch, inlined
// Rules that are not exact in floating point (x * 0, x - x, reassociation) are deliberately absent.
#include "rlx/compile/passes.hpp"

#include "graph_util.hpp"
#include "rlx/fusion/pattern.hpp"
#include "rlx/ir/decompose.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::compile {

namespace {

using fusion::Match;
using fusion::Pat;
using fusion::Pattern;
using ir::Builder;
using ir::DType;
using ir::Graph;
using ir::NodeId;
using ir::OpKind;

/// True when every value of \p from is exactly representable in \p to.
bool lossless(DType from, DType to) {
  if (from == to || from == DType::boolean)
    return true;
  switch (from) {
  case DType::u8:
    return to == DType::i32 || to == DType::i64 || to == DType::f16 || to == DType::bf16 ||
           to == DType::f32 || to == DType::f64;
  case DType::i8:
    return to == DType::i32 || to == DType::i64 || to == DType::f16 || to == DType::bf16 ||
           to == DType::f32 || to == DType::f64;
  case DType::i32:
    return to == DType::i64 || to == DType::f64;
  case DType::f16:
  case DType::bf16:
    return to == DType::f32 || to == DType::f64;
  case DType::f32:
    return to == DType::f64;
  default:
    return false;
  }
}

/// True when cast(cast(x, mid), to) equals cast(x, to) for every value x of \p from, by the
/// conversion rules of ops.def's Cast row: conversions are defined by the value alone within a
/// class (int -> int wraps, float -> float and int -> float round to nearest-even, float -> int
/// truncates and saturates, NaN -> 0, anything -> bool tests != 0), but int -> int wraps where
/// float -> int saturates. So the middle cast may go when it holds every value of \p from
/// (lossless), and, when it moves an integer into a float type on the way to an integer type,
/// only if \p to also holds every value of \p from (then neither wraps nor saturates).
bool cast_chain_exact(DType from, DType mid, DType to) {
  if (!lossless(from, mid))
    return false;
  if (ir::is_int(from) && ir::is_float(mid) && ir::is_int(to))
    return lossless(from, to);
  return true;
}

/// A rule "op(x, splat v) -> x" (either operand order for commutative ops), firing only when the
/// result has x's type.
Pattern identity_operand(std::string name, OpKind op, double v) {
  Pattern p;
  p.name = std::move(name);
  p.root = Pat::op(op, {Pat::any().bind("x"), Pat::splat(v)});
  p.rewrite = [](Builder& b, const Match& m) {
    return b.shape(m["x"]) == b.shape(m.root) ? m["x"] : m.root;
  };
  return p;
}

/// A rule "op(x) -> x" when the node has x's type.
Pattern same_type_noop(std::string name, OpKind op) {
  Pattern p;
  p.name = std::move(name);
  p.root = Pat::op(op, {Pat::any().bind("x")});
  p.rewrite = [](Builder& b, const Match& m) {
    return b.shape(m["x"]) == b.shape(m.root) ? m["x"] : m.root;
  };
  return p;
}

/// A rule "op(op(x)) -> op(x)" for idempotent unary ops.
Pattern idempotent(std::string name, OpKind op) {
  Pattern p;
  p.name = std::move(name);
  p.root = Pat::op(op, {Pat::op(op).bind("inner")});
  p.rewrite = [](Builder&, const Match& m) { return m["inner"]; };
  return p;
}

bool is_identity(const std::vector<std::int64_t>& perm) {
  for (std::size_t i = 0; i < perm.size(); ++i)
    if (perm[i] != static_cast<std::int64_t>(i))
      return false;
  return true;
}

std::vector<Pattern> make_rules() {
  std::vector<Pattern> r;
  r.push_back(identity_operand("mul_one", OpKind::Mul, 1));
  r.push_back(identity_operand("add_zero", OpKind::Add, 0));
  r.push_back(identity_operand("sub_zero", OpKind::Sub, 0));
  r.push_back(identity_operand("div_one", OpKind::Div, 1));
  r.push_back(identity_operand("pow_one", OpKind::Pow, 1));
  {
    Pattern p;
    p.name = "neg_neg";
    p.root = Pat::op(OpKind::Neg, {Pat::op(OpKind::Neg, {Pat::any().bind("x")})});
    p.rewrite = [](Builder&, const Match& m) { return m["x"]; };
    r.push_back(std::move(p));
  }
  r.push_back(idempotent("abs_abs", OpKind::Abs));
  r.push_back(idempotent("relu_relu", OpKind::Relu));
  {
    Pattern p;
    p.name = "where_same";
    p.root = Pat::op(OpKind::Where, {Pat::any(), Pat::any().bind("x"), Pat::same("x")});
    p.rewrite = [](Builder& b, const Match& m) {
      return b.shape(m["x"]) == b.shape(m.root) ? m["x"] : m.root;
    };
    r.push_back(std::move(p));
  }
  {
    Pattern p;
    p.name = "transpose_identity";
    p.root = Pat::op(OpKind::Transpose, {Pat::any().bind("x")});
    p.root.structurally([](const Graph& g, NodeId id) {
      return is_identity(g.node(id).attr<ir::TransposeAttrs>().perm);
    });
    p.rewrite = [](Builder&, const Match& m) { return m["x"]; };
    r.push_back(std::move(p));
  }
  {
    Pattern p;
    p.name = "transpose_transpose";
    p.root = Pat::op(OpKind::Transpose,
                     {Pat::op(OpKind::Transpose, {Pat::any().bind("x")}).bind("inner")});
    p.rewrite = [](Builder& b, const Match& m) {
      // out dim i = inner dim q[i] = x dim p[q[i]].
      const auto p1 = b.graph().node(m["inner"]).attr<ir::TransposeAttrs>().perm;
      const auto q = b.graph().node(m.root).attr<ir::TransposeAttrs>().perm;
      std::vector<std::int64_t> c(q.size());
      for (std::size_t i = 0; i < q.size(); ++i)
        c[i] = p1[static_cast<std::size_t>(q[i])];
      return is_identity(c) ? m["x"] : b.transpose(m["x"], c);
    };
    r.push_back(std::move(p));
  }
  r.push_back(same_type_noop("reshape_same", OpKind::Reshape));
  {
    Pattern p;
    p.name = "reshape_reshape";
    p.root = Pat::op(OpKind::Reshape, {Pat::op(OpKind::Reshape, {Pat::any().bind("x")})});
    p.rewrite = [](Builder& b, const Match& m) {
      const std::vector<ir::Dim> dims = b.shape(m.root).dims;
      try {
        return b.reshape(m["x"], dims);
      } catch (const ir::ShapeError&) {
        return m.root; // symbolic sizes the reshape rule cannot prove equal: leave the chain
      }
    };
    r.push_back(std::move(p));
  }
  r.push_back(same_type_noop("expand_same", OpKind::Expand));
  r.push_back(same_type_noop("narrow_whole", OpKind::Narrow));
  r.push_back(same_type_noop("concat_single", OpKind::Concat));
  r.push_back(same_type_noop("cast_same", OpKind::Cast));
  {
    Pattern p;
    p.name = "cast_cast";
    p.root = Pat::op(OpKind::Cast, {Pat::op(OpKind::Cast, {Pat::any().bind("x")}).bind("mid")});
    p.root.structurally([](const Graph& g, NodeId id) {
      NodeId mid = g.node(id).inputs[0];
      if (g.node(mid).op != OpKind::Cast)
        return false;
      NodeId x = g.node(mid).inputs[0];
      return cast_chain_exact(g.shape(x).dtype, g.shape(mid).dtype, g.shape(id).dtype);
    });
    p.rewrite = [](Builder& b, const Match& m) {
      DType to = b.shape(m.root).dtype;
      return b.shape(m["x"]).dtype == to ? m["x"] : b.cast(m["x"], to);
    };
    r.push_back(std::move(p));
  }
  {
    Pattern p;
    p.name = "if_constant";
    p.root = Pat::op(OpKind::If);
    p.root.structurally([](const Graph& g, NodeId id) {
      return g.node(g.node(id).inputs[0]).op == OpKind::Constant;
    });
    p.rewrite = [](Builder& b, const Match& m) {
      const ir::Node n = b.graph().node(m.root);
      const auto& a = n.attr<ir::IfAttrs>();
      const ir::Tensor& pred = b.graph().node(n.inputs[0]).attr<ir::ConstantAttrs>().value;
      const ir::Graph& branch = pred.get_i64(0) != 0 ? *a.then_branch : *a.else_branch;
      std::vector<NodeId> captures(n.inputs.begin() + 1, n.inputs.end());
      return ir::inline_subgraph(b, branch, captures, "simplify: if").at(0);
    };
    r.push_back(std::move(p));
  }
  return r;
}

} // namespace

bool SimplifyPass::run(ir::Graph& g, fusion::PassContext&) {
  static const std::vector<Pattern> rules = make_rules();
  fusion::ApplyOptions o; // no claims needed: rules emit only what the graph already held
  return fusion::apply_patterns(g, rules, o) > 0;
}

} // namespace rlx::compile
