// ops_elementwise.cpp: ONNX elementwise math, comparisons, logic and activations -> rlx ops.
#include "importer.hpp"

#include <array>
#include <cmath>
#include <limits>

namespace rlx::onnx::detail {

namespace {

using ir::CmpOp;
using ir::DType;
using ir::NodeId;
using ir::OpKind;

void unary(NodeCtx& c, OpKind k) {
  c.set(0, c.b().unary(k, c.in(0)));
}

NodeId sc(NodeCtx& c, double v, NodeId like) {
  return c.scalar(v, c.g().shape(like).dtype);
}

/// Legacy (opset < 7) broadcasting attributes: `broadcast` with the default trailing alignment is
/// NumPy broadcasting; an explicit `axis` is not supported.
void legacy_broadcast(NodeCtx& c) {
  if (c.opset() < 7) {
    c.ignore("broadcast");
    if (c.has_attr("axis"))
      throw Unsupported("legacy broadcasting with an explicit axis is not supported");
  }
  c.ignore("consumed_inputs");
}

/// The second operand of a binary op, aligned for legacy (opset < 7) broadcasting with an
/// explicit axis: its dims start at `axis` of the first operand's.
NodeId legacy_rhs(NodeCtx& c, NodeId a, NodeId rhs) {
  c.ignore("consumed_inputs");
  if (c.opset() >= 7)
    return rhs;
  c.ignore("broadcast");
  if (!c.has_attr("axis"))
    return rhs;
  auto ra = c.g().shape(a).rank();
  auto d = c.g().shape(rhs).dims;
  auto axis = norm_axis(c.attr_i("axis", 0), ra, "axis");
  if (static_cast<std::size_t>(axis) + d.size() > ra)
    throw Invalid("legacy broadcast: operand B does not fit at axis " + std::to_string(axis));
  d.resize(ra - static_cast<std::size_t>(axis), ir::Dim(1));
  return reshape_to(c, rhs, d);
}

void binary(NodeCtx& c, OpKind k) {
  NodeId a = c.in(0);
  c.set(0, c.b().binary(k, a, legacy_rhs(c, a, c.in(1))));
}

void compare(NodeCtx& c, CmpOp op) {
  NodeId a = c.in(0);
  c.set(0, c.b().compare(op, a, legacy_rhs(c, a, c.in(1))));
}

/// Integer Mod: fmod = 1 keeps the dividend's sign (C's %), fmod = 0 the divisor's (Python's %).
void mod(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0), y = c.in(1);
  DType t = c.g().shape(x).dtype;
  bool fmod = c.attr_i("fmod", 0) != 0;
  if (!ir::is_int(t))
    throw Unsupported("Mod of " + std::string(ir::dtype_name(t)) +
                      " (float fmod has no exact rlx spelling)");
  NodeId r = b.sub(x, b.mul(b.div(x, y), y)); // integer Div truncates toward zero
  if (!fmod) {
    NodeId z = sc(c, 0, r);
    NodeId fix =
        b.where(b.compare(CmpOp::ne, b.compare(CmpOp::lt, r, z), b.compare(CmpOp::lt, y, z)),
                b.compare(CmpOp::ne, r, z), b.compare(CmpOp::ne, z, z));
    r = b.where(fix, b.add(r, y), r);
  }
  c.set(0, r);
}

/// Folds a variadic op (Max, Min, Sum) left to right.
NodeId fold_variadic(NodeCtx& c, OpKind k) {
  if (c.num_inputs() == 0)
    throw Invalid("needs at least one input");
  c.ignore("consumed_inputs");
  NodeId acc = c.in(0);
  for (std::size_t i = 1; i < c.num_inputs(); ++i)
    acc = c.b().binary(k, acc, c.in(i));
  return acc;
}

DType float_dtype(NodeCtx& c, NodeId x, const char* what) {
  DType t = c.g().shape(x).dtype;
  if (!ir::is_float(t))
    throw Unsupported(std::string(what) + " of " + std::string(ir::dtype_name(t)) +
                      " is not supported");
  return t;
}

/// floor / ceil through an int64 round trip, exact for every float: values at or above 2^52 in
/// magnitude (and NaN, inf) are integral already and pass through.
NodeId floor_or_ceil(NodeCtx& c, NodeId x, bool ceil) {
  auto& b = c.b();
  DType t = float_dtype(c, x, ceil ? "Ceil" : "Floor");
  NodeId tr = b.cast(b.cast(x, DType::i64), t); // truncated toward zero
  NodeId fixed = ceil ? b.add(tr, b.cast(b.compare(CmpOp::lt, tr, x), t))
                      : b.sub(tr, b.cast(b.compare(CmpOp::gt, tr, x), t));
  NodeId small = b.compare(CmpOp::lt, b.abs(x), sc(c, 4503599627370496.0, x));
  return b.where(small, fixed, x);
}

/// Round half to even, in f64 (exact: floor is exact, and x - floor(x) is exact in f64 for every
/// f32 / f16 / bf16 value); NaN and inf pass through.
NodeId round_even(NodeCtx& c, NodeId x) {
  auto& b = c.b();
  DType t = float_dtype(c, x, "Round");
  NodeId xd = t == DType::f64 ? x : b.cast(x, DType::f64);
  NodeId f = floor_or_ceil(c, xd, false);
  NodeId diff = b.sub(xd, f);
  NodeId half = c.scalar(0.5, DType::f64), one = c.scalar(1, DType::f64);
  NodeId up = b.add(f, one);
  NodeId even = b.compare(
      CmpOp::eq, b.sub(f, b.mul(c.scalar(2, DType::f64), floor_or_ceil(c, b.mul(f, half), false))),
      c.scalar(0, DType::f64));
  NodeId tie = b.where(even, f, up);
  NodeId r = b.where(b.compare(CmpOp::gt, diff, half), up,
                     b.where(b.compare(CmpOp::lt, diff, half), f, tie));
  return t == DType::f64 ? r : b.cast(r, t);
}

NodeId softplus(NodeCtx& c, NodeId x) {
  auto& b = c.b();
  return b.log(b.add(b.exp(x), sc(c, 1, x)));
}

NodeId hard_sigmoid(NodeCtx& c, NodeId x, double alpha, double beta) {
  auto& b = c.b();
  NodeId y = b.add(b.mul(x, sc(c, alpha, x)), sc(c, beta, x));
  return b.maximum(b.minimum(y, sc(c, 1, x)), sc(c, 0, x));
}

void clip(NodeCtx& c) {
  auto& b = c.b();
  NodeId x = c.in(0);
  DType t = c.g().shape(x).dtype;
  std::optional<NodeId> lo, hi;
  if (c.opset() < 11) {
    c.ignore("consumed_inputs");
    double flt_max = std::numeric_limits<float>::max();
    double l = c.attr_f("min", -flt_max), h = c.attr_f("max", flt_max);
    if (l != -flt_max)
      lo = c.scalar(l, t);
    if (h != flt_max)
      hi = c.scalar(h, t);
  } else {
    if (c.has(1))
      lo = reshape_to(c, c.in(1), {});
    if (c.has(2))
      hi = reshape_to(c, c.in(2), {});
  }
  if (lo)
    x = b.maximum(x, *lo);
  if (hi)
    x = b.minimum(x, *hi);
  c.set(0, x);
}

constexpr auto kOps = std::to_array<ConverterEntry>({
    {"Abs", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Abs); }},
    {"Neg", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Neg); }},
    {"Exp", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Exp); }},
    {"Log", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Log); }},
    {"Sqrt", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Sqrt); }},
    {"Reciprocal", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Reciprocal); }},
    {"Tanh", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Tanh); }},
    {"Sigmoid", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Sigmoid); }},
    {"Relu", [](NodeCtx& c) { c.ignore("consumed_inputs"), unary(c, OpKind::Relu); }},
    {"Sin", [](NodeCtx& c) { unary(c, OpKind::Sin); }},
    {"Sinh", [](NodeCtx& c) { unary(c, OpKind::Sinh); }},
    {"Cosh", [](NodeCtx& c) { unary(c, OpKind::Cosh); }},
    {"Asin", [](NodeCtx& c) { unary(c, OpKind::Asin); }},
    {"Acos", [](NodeCtx& c) { unary(c, OpKind::Acos); }},
    {"Atan", [](NodeCtx& c) { unary(c, OpKind::Atan); }},
    {"Asinh", [](NodeCtx& c) { unary(c, OpKind::Asinh); }},
    {"Acosh", [](NodeCtx& c) { unary(c, OpKind::Acosh); }},
    {"Atanh", [](NodeCtx& c) { unary(c, OpKind::Atanh); }},
    {"Cos", [](NodeCtx& c) { unary(c, OpKind::Cos); }},
    {"Tan",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       c.set(0, c.b().div(c.b().sin(x), c.b().cos(x)));
     }},
    {"Erf", [](NodeCtx& c) { unary(c, OpKind::Erf); }},
    {"Floor", [](NodeCtx& c) { c.ignore("consumed_inputs"), c.set(0, floor_or_ceil(c, c.in(0), false)); }},
    {"Ceil", [](NodeCtx& c) { c.ignore("consumed_inputs"), c.set(0, floor_or_ceil(c, c.in(0), true)); }},
    {"Round", [](NodeCtx& c) { c.set(0, round_even(c, c.in(0))); }},
    {"Sign",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0), z = sc(c, 0, x);
       NodeId pos = b.where(b.compare(CmpOp::gt, x, z), sc(c, 1, x), z);
       c.set(0, b.where(b.compare(CmpOp::lt, x, z), sc(c, -1, x), pos));
     }},
    {"IsNaN",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       float_dtype(c, x, "IsNaN");
       c.set(0, c.b().compare(CmpOp::ne, x, x));
     }},
    {"IsInf",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       float_dtype(c, x, "IsInf");
       bool pos = c.attr_i("detect_positive", 1) != 0, neg = c.attr_i("detect_negative", 1) != 0;
       double inf = std::numeric_limits<double>::infinity();
       NodeId p = b.compare(CmpOp::eq, x, sc(c, inf, x));
       NodeId n = b.compare(CmpOp::eq, x, sc(c, -inf, x));
       if (pos && neg)
         c.set(0, b.where(p, p, n));
       else if (pos)
         c.set(0, p);
       else if (neg)
         c.set(0, n);
       else
         c.set(0, b.expand(c.scalar(0, DType::boolean), c.g().shape(x).dims));
     }},
    {"Mod", mod},
    {"Shrink",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       double lambd = c.attr_f("lambd", 0.5), bias = c.attr_f("bias", 0.0);
       NodeId hi = b.where(b.compare(CmpOp::gt, x, sc(c, lambd, x)), b.sub(x, sc(c, bias, x)),
                           sc(c, 0, x));
       c.set(0, b.where(b.compare(CmpOp::lt, x, sc(c, -lambd, x)), b.add(x, sc(c, bias, x)), hi));
     }},
    {"Add", [](NodeCtx& c) { binary(c, OpKind::Add); }},
    {"Sub", [](NodeCtx& c) { binary(c, OpKind::Sub); }},
    {"Mul", [](NodeCtx& c) { binary(c, OpKind::Mul); }},
    {"Div", [](NodeCtx& c) { binary(c, OpKind::Div); }},
    {"Pow",
     [](NodeCtx& c) {
       legacy_broadcast(c);
       NodeId a = c.in(0), e = c.in(1);
       DType ta = c.g().shape(a).dtype;
       if (c.g().shape(e).dtype != ta)
         e = c.b().cast(e, ta);
       c.set(0, c.b().pow(a, e));
     }},
    {"Max", [](NodeCtx& c) { c.set(0, fold_variadic(c, OpKind::Maximum)); }},
    {"Min", [](NodeCtx& c) { c.set(0, fold_variadic(c, OpKind::Minimum)); }},
    {"Sum", [](NodeCtx& c) { c.set(0, fold_variadic(c, OpKind::Add)); }},
    {"Mean",
     [](NodeCtx& c) {
       NodeId s = fold_variadic(c, OpKind::Add);
       c.set(0, c.b().div(s, sc(c, static_cast<double>(c.num_inputs()), s)));
     }},
    {"Equal", [](NodeCtx& c) { compare(c, CmpOp::eq); }},
    {"Less", [](NodeCtx& c) { compare(c, CmpOp::lt); }},
    {"LessOrEqual", [](NodeCtx& c) { compare(c, CmpOp::le); }},
    {"Greater", [](NodeCtx& c) { compare(c, CmpOp::gt); }},
    {"GreaterOrEqual", [](NodeCtx& c) { compare(c, CmpOp::ge); }},
    {"Not",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       c.set(0, c.b().compare(CmpOp::eq, x, c.scalar(0, DType::boolean)));
     }},
    {"And",
     [](NodeCtx& c) {
       legacy_broadcast(c);
       c.set(0, c.b().where(c.in(0), c.in(1), c.scalar(0, DType::boolean)));
     }},
    {"Or",
     [](NodeCtx& c) {
       legacy_broadcast(c);
       c.set(0, c.b().where(c.in(0), c.scalar(1, DType::boolean), c.in(1)));
     }},
    {"Xor", [](NodeCtx& c) { compare(c, CmpOp::ne); }},
    {"Where", [](NodeCtx& c) { c.set(0, c.b().where(c.in(0), c.in(1), c.in(2))); }},
    {"Clip", clip},
    {"LeakyRelu",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       double alpha = c.attr_f("alpha", 0.01);
       c.ignore("consumed_inputs");
       c.set(0, b.where(b.compare(CmpOp::lt, x, sc(c, 0, x)), b.mul(x, sc(c, alpha, x)), x));
     }},
    {"PRelu",
     [](NodeCtx& c) {
       auto& b = c.b();
       legacy_broadcast(c);
       NodeId x = c.in(0), slope = c.in(1);
       auto xr = c.g().shape(x).rank();
       auto sd = c.g().shape(slope).dims;
       if (c.opset() < 7 && sd.size() == 1 && xr > 2) {
         // Legacy PRelu: a 1-D slope is per channel (axis 1).
         std::vector<ir::Dim> d{sd[0]};
         d.resize(xr - 1, ir::Dim(1));
         slope = reshape_to(c, slope, d);
       }
       c.set(0, b.where(b.compare(CmpOp::lt, x, sc(c, 0, x)), b.mul(x, slope), x));
     }},
    {"Elu",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       double alpha = c.attr_f("alpha", 1.0);
       c.ignore("consumed_inputs");
       NodeId neg = b.mul(sc(c, alpha, x), b.sub(b.exp(x), sc(c, 1, x)));
       c.set(0, b.where(b.compare(CmpOp::lt, x, sc(c, 0, x)), neg, x));
     }},
    {"Selu",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       double alpha = c.attr_f("alpha", 1.67326319217681884765625);
       double gamma = c.attr_f("gamma", 1.05070102214813232421875);
       c.ignore("consumed_inputs");
       NodeId neg = b.mul(sc(c, alpha, x), b.sub(b.exp(x), sc(c, 1, x)));
       NodeId y = b.where(b.compare(CmpOp::le, x, sc(c, 0, x)), neg, x);
       c.set(0, b.mul(y, sc(c, gamma, x)));
     }},
    {"Celu",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       double alpha = c.attr_f("alpha", 1.0);
       NodeId e = b.mul(sc(c, alpha, x), b.sub(b.exp(b.div(x, sc(c, alpha, x))), sc(c, 1, x)));
       c.set(0, b.add(b.maximum(x, sc(c, 0, x)), b.minimum(e, sc(c, 0, x))));
     }},
    {"ThresholdedRelu",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       double alpha = c.attr_f("alpha", 1.0);
       c.set(0, b.where(b.compare(CmpOp::gt, x, sc(c, alpha, x)), x, sc(c, 0, x)));
     }},
    {"HardSigmoid",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       double alpha = c.attr_f("alpha", 0.2), beta = c.attr_f("beta", 0.5);
       c.ignore("consumed_inputs");
       c.set(0, hard_sigmoid(c, x, alpha, beta));
     }},
    {"HardSwish",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       c.set(0, c.b().mul(x, hard_sigmoid(c, x, 1.0 / 6.0, 0.5)));
     }},
    {"Softplus", [](NodeCtx& c) { c.set(0, softplus(c, c.in(0))); }},
    {"Softsign",
     [](NodeCtx& c) {
       auto& b = c.b();
       NodeId x = c.in(0);
       c.set(0, b.div(x, b.add(b.abs(x), sc(c, 1, x))));
     }},
    {"Mish",
     [](NodeCtx& c) {
       NodeId x = c.in(0);
       c.set(0, c.b().mul(x, c.b().tanh(softplus(c, x))));
     }},
    {"Gelu",
     [](NodeCtx& c) {
       std::string approx = c.attr_s("approximate", "none");
       if (approx == "none")
         unary(c, OpKind::Gelu);
       else if (approx == "tanh")
         unary(c, OpKind::GeluTanh);
       else
         throw Invalid("approximate = '" + approx + "' (none or tanh)");
     }},
});

} // namespace

std::span<const ConverterEntry> elementwise_converters() {
  return kOps;
}

} // namespace rlx::onnx::detail
