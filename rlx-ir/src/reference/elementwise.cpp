// elementwise.cpp: reference kernels of the elementwise ops: unary math, Cast, the broadcasting
// binary ops, Compare and Where.
#include "kernels.hpp"

#include <cmath>
#include <numbers>

namespace rlx::ir::reference::kernels {
namespace {

/// out[i] = f(x[i]) in the compute type \p T.
template <ComputeType T, class F> Tensor map(const Shape& out, const Tensor& x, F f) {
  auto v = load<T>(x);
  for (auto& e : v)
    e = f(e);
  return store<T>(out, v);
}

/// out[i] = f(x[i]) for a float-only op (computed in double).
template <class F> Tensor map_float(const Shape& out, const Tensor& x, F f) {
  return map<double>(out, x, f);
}

/// out[i] = f(a[i'], b[i'']) with NumPy broadcasting, in the compute type \p T.
template <ComputeType T, class F>
Tensor zip(const Shape& out, const Tensor& a, const Tensor& b, F f) {
  auto va = load<T>(a);
  auto vb = load<T>(b);
  Sizes sizes = out.sizes();
  auto oa = broadcast_offsets(a.shape().sizes(), sizes);
  auto ob = broadcast_offsets(b.shape().sizes(), sizes);
  std::vector<T> r(oa.size());
  for (std::size_t i = 0; i < r.size(); ++i)
    r[i] = f(va[static_cast<std::size_t>(oa[i])], vb[static_cast<std::size_t>(ob[i])]);
  return store<T>(out, r);
}

double sigmoid(double x) {
  return 1.0 / (1.0 + std::exp(-x));
}

/// Integer a^b for b >= 0, wrapping; b < 0 is an error (no integer result).
std::int64_t int_pow(std::int64_t a, std::int64_t b) {
  if (b < 0)
    fail("pow: negative integer exponent " + std::to_string(b) + " has no integer result");
  std::int64_t r = 1;
  while (b > 0) {
    if (b & 1)
      r = wrap_mul(r, a);
    a = wrap_mul(a, a);
    b >>= 1;
  }
  return r;
}

/// Truncating integer division; by zero is an error; INT64_MIN / -1 wraps to INT64_MIN.
std::int64_t int_div(std::int64_t a, std::int64_t b) {
  if (b == 0)
    fail("div: integer division by zero");
  if (b == -1)
    return wrap_neg(a);
  return a / b; // C++ truncates toward zero
}

/// NaN-propagating max / min of doubles, or the plain one of integers.
template <ComputeType T> T max_of(T a, T b) {
  if constexpr (std::is_same_v<T, double>)
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<double>::quiet_NaN();
  return a < b ? b : a;
}
template <ComputeType T> T min_of(T a, T b) {
  if constexpr (std::is_same_v<T, double>)
    if (std::isnan(a) || std::isnan(b))
      return std::numeric_limits<double>::quiet_NaN();
  return b < a ? b : a;
}

} // namespace

// ---- unary -------------------------------------------------------------------------------------

RLX_REFERENCE_KERNEL(Neg) {
  return with_compute_type(out.dtype, [&]<class T>(T) {
    return map<T>(out, in[0], [](T x) {
      if constexpr (std::is_same_v<T, double>)
        return -x;
      else
        return wrap_neg(x);
    });
  });
}

RLX_REFERENCE_KERNEL(Abs) {
  return with_compute_type(out.dtype, [&]<class T>(T) {
    return map<T>(out, in[0], [](T x) {
      if constexpr (std::is_same_v<T, double>)
        return std::fabs(x);
      else
        return x < 0 ? wrap_neg(x) : x;
    });
  });
}

RLX_REFERENCE_KERNEL(Relu) {
  // x < 0 ? 0 : x, so NaN stays NaN.
  return with_compute_type(out.dtype, [&]<class T>(T) {
    return map<T>(out, in[0], [](T x) { return x < T{0} ? T{0} : x; });
  });
}

RLX_REFERENCE_KERNEL(Exp) {
  return map_float(out, in[0], [](double x) { return std::exp(x); });
}
RLX_REFERENCE_KERNEL(Log) {
  return map_float(out, in[0], [](double x) { return std::log(x); });
}
RLX_REFERENCE_KERNEL(Sqrt) {
  return map_float(out, in[0], [](double x) { return std::sqrt(x); });
}
RLX_REFERENCE_KERNEL(Rsqrt) {
  return map_float(out, in[0], [](double x) { return 1.0 / std::sqrt(x); });
}
RLX_REFERENCE_KERNEL(Reciprocal) {
  return map_float(out, in[0], [](double x) { return 1.0 / x; });
}
RLX_REFERENCE_KERNEL(Tanh) {
  return map_float(out, in[0], [](double x) { return std::tanh(x); });
}
RLX_REFERENCE_KERNEL(Sigmoid) {
  return map_float(out, in[0], sigmoid);
}
RLX_REFERENCE_KERNEL(Gelu) {
  return map_float(out, in[0],
                   [](double x) { return 0.5 * x * (1.0 + std::erf(x / std::numbers::sqrt2)); });
}
RLX_REFERENCE_KERNEL(GeluTanh) {
  const double k = std::sqrt(2.0 / std::numbers::pi);
  return map_float(out, in[0], [k](double x) {
    return 0.5 * x * (1.0 + std::tanh(k * (x + 0.044715 * x * x * x)));
  });
}
RLX_REFERENCE_KERNEL(Silu) {
  return map_float(out, in[0], [](double x) { return x * sigmoid(x); });
}
RLX_REFERENCE_KERNEL(Sin) {
  return map_float(out, in[0], [](double x) { return std::sin(x); });
}
RLX_REFERENCE_KERNEL(Cos) {
  return map_float(out, in[0], [](double x) { return std::cos(x); });
}
RLX_REFERENCE_KERNEL(Erf) {
  return map_float(out, in[0], [](double x) { return std::erf(x); });
}
RLX_REFERENCE_KERNEL(Sinh) {
  return map_float(out, in[0], [](double x) { return std::sinh(x); });
}
RLX_REFERENCE_KERNEL(Cosh) {
  return map_float(out, in[0], [](double x) { return std::cosh(x); });
}
RLX_REFERENCE_KERNEL(Asin) {
  return map_float(out, in[0], [](double x) { return std::asin(x); });
}
RLX_REFERENCE_KERNEL(Acos) {
  return map_float(out, in[0], [](double x) { return std::acos(x); });
}
RLX_REFERENCE_KERNEL(Atan) {
  return map_float(out, in[0], [](double x) { return std::atan(x); });
}
RLX_REFERENCE_KERNEL(Asinh) {
  return map_float(out, in[0], [](double x) { return std::asinh(x); });
}
RLX_REFERENCE_KERNEL(Acosh) {
  return map_float(out, in[0], [](double x) { return std::acosh(x); });
}
RLX_REFERENCE_KERNEL(Atanh) {
  return map_float(out, in[0], [](double x) { return std::atanh(x); });
}

RLX_REFERENCE_KERNEL(Cast) {
  const Tensor& x = in[0];
  DType from = x.dtype(), to = out.dtype;
  if (is_float(from) && !is_float(to) && to != DType::boolean) {
    auto v = load_f64(x);
    std::vector<std::int64_t> r(v.size());
    for (std::size_t i = 0; i < v.size(); ++i)
      r[i] = float_to_int(v[i], to); // truncate toward zero, saturate, NaN -> 0
    return store_i64(out, r);
  }
  if (is_float(from)) // float -> float (round to nearest-even) or float -> bool (!= 0)
    return store_f64(out, load_f64(x));
  return store_i64(out, load_i64(x)); // int / bool -> anything: exact, wrapping, or != 0
}

// ---- binary ------------------------------------------------------------------------------------

RLX_REFERENCE_KERNEL(Add) {
  return with_compute_type(out.dtype,
                           [&]<class T>(T) { return zip<T>(out, in[0], in[1], add<T>); });
}

RLX_REFERENCE_KERNEL(Sub) {
  return with_compute_type(out.dtype, [&]<class T>(T) {
    return zip<T>(out, in[0], in[1], [](T a, T b) {
      if constexpr (std::is_same_v<T, double>)
        return a - b;
      else
        return wrap_sub(a, b);
    });
  });
}

RLX_REFERENCE_KERNEL(Mul) {
  return with_compute_type(out.dtype,
                           [&]<class T>(T) { return zip<T>(out, in[0], in[1], mul<T>); });
}

RLX_REFERENCE_KERNEL(Div) {
  if (is_float(out.dtype))
    return zip<double>(out, in[0], in[1], [](double a, double b) { return a / b; });
  return zip<std::int64_t>(out, in[0], in[1], int_div);
}

RLX_REFERENCE_KERNEL(Pow) {
  if (is_float(out.dtype))
    return zip<double>(out, in[0], in[1], [](double a, double b) { return std::pow(a, b); });
  return zip<std::int64_t>(out, in[0], in[1], int_pow);
}

RLX_REFERENCE_KERNEL(Maximum) {
  return with_compute_type(out.dtype,
                           [&]<class T>(T) { return zip<T>(out, in[0], in[1], max_of<T>); });
}

RLX_REFERENCE_KERNEL(Minimum) {
  return with_compute_type(out.dtype,
                           [&]<class T>(T) { return zip<T>(out, in[0], in[1], min_of<T>); });
}

RLX_REFERENCE_KERNEL(Compare) {
  CmpOp op = node.attr<CompareAttrs>().op;
  auto test = [op](auto a, auto b) -> bool {
    switch (op) {
    case CmpOp::eq:
      return a == b;
    case CmpOp::ne:
      return a != b;
    case CmpOp::lt:
      return a < b;
    case CmpOp::le:
      return a <= b;
    case CmpOp::gt:
      return a > b;
    case CmpOp::ge:
      return a >= b;
    }
    return false;
  };
  // Compare in the operands' compute type, then store 0 / 1 as bool.
  return with_compute_type(in[0].dtype(), [&]<class T>(T) {
    auto va = load<T>(in[0]);
    auto vb = load<T>(in[1]);
    Sizes sizes = out.sizes();
    auto oa = broadcast_offsets(in[0].shape().sizes(), sizes);
    auto ob = broadcast_offsets(in[1].shape().sizes(), sizes);
    std::vector<std::int64_t> r(oa.size());
    for (std::size_t i = 0; i < r.size(); ++i)
      r[i] = test(va[static_cast<std::size_t>(oa[i])], vb[static_cast<std::size_t>(ob[i])]);
    return store_i64(out, r);
  });
}

RLX_REFERENCE_KERNEL(Where) {
  Sizes sizes = out.sizes();
  auto oc = broadcast_offsets(in[0].shape().sizes(), sizes);
  auto oa = broadcast_offsets(in[1].shape().sizes(), sizes);
  auto ob = broadcast_offsets(in[2].shape().sizes(), sizes);
  Tensor r(out);
  for (std::size_t i = 0; i < oc.size(); ++i) {
    auto at = static_cast<std::int64_t>(i);
    if (in[0].get_i64(oc[i]) != 0)
      copy_element(r, at, in[1], oa[i]);
    else
      copy_element(r, at, in[2], ob[i]);
  }
  return r;
}

} // namespace rlx::ir::reference::kernels
