// vjp_elementwise.cpp: VJP rules of the elementwise unary and binary ops, Cast and Where.
#include "helpers.hpp"
#include "table.hpp"

#include <cmath>
#include <numbers>

namespace rlx::autodiff::detail {
namespace {

using ir::CmpOp;
using ir::OpKind;
using Grads = std::vector<NodeId>;

DType dt(const VjpContext& c) {
  return c.node.shape.dtype;
}
NodeId k(VjpContext& c, double v) {
  return scalar(c.b, v, dt(c));
}
NodeId x0(const VjpContext& c) {
  return c.in[0];
}
/// One gradient for a unary op: d = up * f'(x).
Grads one(NodeId d) {
  return {d};
}

// ---- unary
Grads neg(VjpContext& c) {
  return one(c.b.neg(c.up));
}
Grads abs(VjpContext& c) {
  // sign(x) (0 at 0, like torch)
  auto& b = c.b;
  NodeId z = k(c, 0);
  NodeId s = b.where(b.compare(CmpOp::gt, x0(c), z), k(c, 1),
                     b.where(b.compare(CmpOp::lt, x0(c), z), k(c, -1), z));
  return one(b.mul(c.up, s));
}
Grads exp(VjpContext& c) {
  return one(c.b.mul(c.up, c.self));
}
Grads log(VjpContext& c) {
  return one(c.b.div(c.up, x0(c)));
}
Grads sqrt(VjpContext& c) {
  return one(c.b.div(c.b.mul(c.up, k(c, 0.5)), c.self));
}
Grads rsqrt(VjpContext& c) {
  // d x^-1/2 = -1/2 x^-3/2 = -1/2 y^3
  auto& b = c.b;
  NodeId y3 = b.mul(b.mul(c.self, c.self), c.self);
  return one(b.mul(c.up, b.mul(y3, k(c, -0.5))));
}
Grads reciprocal(VjpContext& c) {
  auto& b = c.b;
  return one(b.neg(b.mul(c.up, b.mul(c.self, c.self))));
}
Grads tanh(VjpContext& c) {
  auto& b = c.b;
  return one(b.mul(c.up, b.sub(k(c, 1), b.mul(c.self, c.self))));
}
Grads sigmoid(VjpContext& c) {
  auto& b = c.b;
  return one(b.mul(c.up, b.mul(c.self, b.sub(k(c, 1), c.self))));
}
Grads relu(VjpContext& c) {
  auto& b = c.b;
  return one(b.where(b.compare(CmpOp::gt, x0(c), k(c, 0)), c.up, k(c, 0)));
}
Grads gelu(VjpContext& c) {
  // Phi(x) + x phi(x), phi(x) = exp(-x^2 / 2) / sqrt(2 pi)
  auto& b = c.b;
  NodeId x = x0(c);
  NodeId cdf = b.mul(k(c, 0.5), b.add(k(c, 1), b.erf(b.mul(x, k(c, std::numbers::sqrt2 / 2)))));
  NodeId pdf =
      b.mul(b.exp(b.mul(b.mul(x, x), k(c, -0.5))), k(c, 1.0 / std::sqrt(2 * std::numbers::pi)));
  return one(b.mul(c.up, b.add(cdf, b.mul(x, pdf))));
}
Grads gelu_tanh(VjpContext& c) {
  // y = 0.5 x (1 + t), t = tanh(u), u = s (x + a x^3):
  // y' = 0.5 (1 + t) + 0.5 x (1 - t^2) s (1 + 3 a x^2)
  auto& b = c.b;
  const double s = std::sqrt(2.0 / std::numbers::pi), a = 0.044715;
  NodeId x = x0(c);
  NodeId x2 = b.mul(x, x);
  NodeId t = b.tanh(b.mul(k(c, s), b.add(x, b.mul(k(c, a), b.mul(x2, x)))));
  NodeId left = b.mul(k(c, 0.5), b.add(k(c, 1), t));
  NodeId du = b.mul(k(c, s), b.add(k(c, 1), b.mul(k(c, 3 * a), x2)));
  NodeId right = b.mul(b.mul(k(c, 0.5), x), b.mul(b.sub(k(c, 1), b.mul(t, t)), du));
  return one(b.mul(c.up, b.add(left, right)));
}
Grads silu(VjpContext& c) {
  // s (1 + x (1 - s))
  auto& b = c.b;
  NodeId s = b.sigmoid(x0(c));
  return one(b.mul(c.up, b.mul(s, b.add(k(c, 1), b.mul(x0(c), b.sub(k(c, 1), s))))));
}
Grads sin(VjpContext& c) {
  return one(c.b.mul(c.up, c.b.cos(x0(c))));
}
Grads cos(VjpContext& c) {
  return one(c.b.neg(c.b.mul(c.up, c.b.sin(x0(c)))));
}
Grads erf(VjpContext& c) {
  auto& b = c.b;
  NodeId x = x0(c);
  return one(
      b.mul(c.up, b.mul(k(c, 2.0 / std::sqrt(std::numbers::pi)), b.exp(b.neg(b.mul(x, x))))));
}
Grads sinh(VjpContext& c) {
  return one(c.b.mul(c.up, c.b.cosh(x0(c))));
}
Grads cosh(VjpContext& c) {
  return one(c.b.mul(c.up, c.b.sinh(x0(c))));
}
/// up * sign / sqrt(s * (1 - x^2)), the derivative of asin (sign 1, s 1), acos (-1, 1) and, with
/// s = -1, acosh (1 / sqrt(x^2 - 1)); asinh is 1 / sqrt(x^2 + 1).
Grads inverse_sqrt_rule(VjpContext& c, double sign, double one_coeff, double sq_coeff) {
  auto& b = c.b;
  NodeId x = x0(c);
  NodeId r = b.rsqrt(b.add(k(c, one_coeff), b.mul(k(c, sq_coeff), b.mul(x, x))));
  return one(b.mul(c.up, sign == 1 ? r : b.neg(r)));
}
Grads asin(VjpContext& c) {
  return inverse_sqrt_rule(c, 1, 1, -1);
}
Grads acos(VjpContext& c) {
  return inverse_sqrt_rule(c, -1, 1, -1);
}
Grads asinh(VjpContext& c) {
  return inverse_sqrt_rule(c, 1, 1, 1);
}
Grads acosh(VjpContext& c) {
  return inverse_sqrt_rule(c, 1, -1, 1);
}
Grads atan(VjpContext& c) { // 1 / (1 + x^2)
  NodeId x = x0(c);
  return one(c.b.div(c.up, c.b.add(k(c, 1), c.b.mul(x, x))));
}
Grads atanh(VjpContext& c) { // 1 / (1 - x^2)
  NodeId x = x0(c);
  return one(c.b.div(c.up, c.b.sub(k(c, 1), c.b.mul(x, x))));
}
Grads cast(VjpContext& c) {
  // float -> float: the gradient is cast back (integer operands never need one)
  return one(c.b.cast(c.up, c.b.shape(x0(c)).dtype));
}

// ---- binary (NumPy broadcasting: every gradient is summed back to its operand's shape)
Grads finish(VjpContext& c, NodeId da, NodeId db) {
  Grads g(2);
  if (c.needs[0] && da.valid())
    g[0] = unbroadcast(c.b, da, c.b.shape(c.in[0]));
  if (c.needs[1] && db.valid())
    g[1] = unbroadcast(c.b, db, c.b.shape(c.in[1]));
  return g;
}
Grads add(VjpContext& c) {
  return finish(c, c.up, c.up);
}
Grads sub(VjpContext& c) {
  return finish(c, c.up, c.needs[1] ? c.b.neg(c.up) : NodeId{});
}
Grads mul(VjpContext& c) {
  auto& b = c.b;
  return finish(c, c.needs[0] ? b.mul(c.up, c.in[1]) : NodeId{},
                c.needs[1] ? b.mul(c.up, c.in[0]) : NodeId{});
}
Grads div(VjpContext& c) {
  // a / b: da = up / b, db = -up a / b^2 = -up y / b
  auto& b = c.b;
  NodeId da = b.div(c.up, c.in[1]);
  return finish(c, da, c.needs[1] ? b.neg(b.mul(da, c.self)) : NodeId{});
}
Grads pow(VjpContext& c) {
  // a^e: da = up e a^(e-1); de = up y log(a), 0 where a == 0 and e >= 0 (torch's convention)
  auto& b = c.b;
  NodeId a = c.in[0], e = c.in[1];
  NodeId da, de;
  if (c.needs[0])
    da = b.mul(c.up, b.mul(e, b.pow(a, b.sub(e, k(c, 1)))));
  if (c.needs[1]) {
    NodeId zero = k(c, 0);
    NodeId raw = b.mul(c.up, b.mul(c.self, b.log(a)));
    NodeId at0 = b.compare(CmpOp::eq, a, zero);
    de = b.where(at0, zero, raw);
    if (!(b.shape(de).dims == b.shape(raw).dims))
      de = b.expand(de, b.shape(raw).dims);
  }
  return finish(c, da, de);
}
/// Maximum / Minimum: the winner takes the gradient, ties split it evenly (torch's convention).
Grads extremum(VjpContext& c, CmpOp wins) {
  auto& b = c.b;
  NodeId a = c.in[0], e = c.in[1];
  NodeId w = b.where(b.compare(wins, a, e), k(c, 1),
                     b.where(b.compare(CmpOp::eq, a, e), k(c, 0.5), k(c, 0)));
  NodeId da = b.mul(c.up, w);
  NodeId db = b.mul(c.up, b.sub(k(c, 1), w));
  return finish(c, da, db);
}
Grads maximum(VjpContext& c) {
  return extremum(c, CmpOp::gt);
}
Grads minimum(VjpContext& c) {
  return extremum(c, CmpOp::lt);
}
Grads where(VjpContext& c) {
  // cond ? a : b (cond never gets a gradient)
  auto& b = c.b;
  NodeId z = k(c, 0);
  Grads g(3);
  if (c.needs[1])
    g[1] = unbroadcast(b, b.where(c.in[0], c.up, z), b.shape(c.in[1]));
  if (c.needs[2])
    g[2] = unbroadcast(b, b.where(c.in[0], z, c.up), b.shape(c.in[2]));
  return g;
}

} // namespace

void add_elementwise_rules(VjpTable& t) {
  set_rule(t, OpKind::Neg, neg);
  set_rule(t, OpKind::Abs, abs);
  set_rule(t, OpKind::Exp, exp);
  set_rule(t, OpKind::Log, log);
  set_rule(t, OpKind::Sqrt, sqrt);
  set_rule(t, OpKind::Rsqrt, rsqrt);
  set_rule(t, OpKind::Reciprocal, reciprocal);
  set_rule(t, OpKind::Tanh, tanh);
  set_rule(t, OpKind::Sigmoid, sigmoid);
  set_rule(t, OpKind::Relu, relu);
  set_rule(t, OpKind::Gelu, gelu);
  set_rule(t, OpKind::GeluTanh, gelu_tanh);
  set_rule(t, OpKind::Silu, silu);
  set_rule(t, OpKind::Sin, sin);
  set_rule(t, OpKind::Cos, cos);
  set_rule(t, OpKind::Erf, erf);
  set_rule(t, OpKind::Sinh, sinh);
  set_rule(t, OpKind::Cosh, cosh);
  set_rule(t, OpKind::Asin, asin);
  set_rule(t, OpKind::Acos, acos);
  set_rule(t, OpKind::Atan, atan);
  set_rule(t, OpKind::Asinh, asinh);
  set_rule(t, OpKind::Acosh, acosh);
  set_rule(t, OpKind::Atanh, atanh);
  set_rule(t, OpKind::Cast, cast);
  set_rule(t, OpKind::Add, add);
  set_rule(t, OpKind::Sub, sub);
  set_rule(t, OpKind::Mul, mul);
  set_rule(t, OpKind::Div, div);
  set_rule(t, OpKind::Pow, pow);
  set_rule(t, OpKind::Maximum, maximum);
  set_rule(t, OpKind::Minimum, minimum);
  set_rule(t, OpKind::Where, where, 1u << 0);
}

} // namespace rlx::autodiff::detail
