// binary_math.hpp (private): the binary elementwise functions of the op table as callables on a
// compute type (float, double, wrapping int64), shared by the binary kernels and the region loop.
#pragma once

#include "dtypes.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/op.hpp"

#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace rlx::cpu {

/// NaN-propagating max / min (as the reference), plain for integers.
template <class C> C max_of(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    if (a != a || b != b)
      return std::numeric_limits<C>::quiet_NaN();
  return a < b ? b : a;
}
template <class C> C min_of(C a, C b) {
  if constexpr (std::is_floating_point_v<C>)
    if (a != a || b != b)
      return std::numeric_limits<C>::quiet_NaN();
  return b < a ? b : a;
}

/// Integer a^b for b ≥ 0 (wrapping); a negative exponent has no integer result.
inline std::int64_t int_pow(std::int64_t a, std::int64_t b) {
  if (b < 0)
    throw Error("rlx-cpu: pow: negative integer exponent " + std::to_string(b) +
                " has no integer result");
  std::int64_t r = 1;
  while (b > 0) {
    if (b & 1)
      r = wrap_mul(r, a);
    a = wrap_mul(a, a);
    b >>= 1;
  }
  return r;
}

/// Truncating integer division; by zero is an error; INT64_MIN / -1 wraps.
inline std::int64_t int_div(std::int64_t a, std::int64_t b) {
  if (b == 0)
    throw Error("rlx-cpu: div: integer division by zero");
  if (b == -1)
    return wrap_sub(0, a);
  return a / b;
}

/// Calls \p fn with a callable computing binary op \p op on compute type \p C.
template <class C, class Fn>
[[gnu::always_inline]] inline void with_binary(ir::OpKind op, Fn&& fn) {
  constexpr bool is_f = std::is_floating_point_v<C>;
  switch (op) {
  case ir::OpKind::Add:
    if constexpr (is_f)
      return fn([](C a, C b) { return a + b; });
    else
      return fn([](C a, C b) { return wrap_add(a, b); });
  case ir::OpKind::Sub:
    if constexpr (is_f)
      return fn([](C a, C b) { return a - b; });
    else
      return fn([](C a, C b) { return wrap_sub(a, b); });
  case ir::OpKind::Mul:
    if constexpr (is_f)
      return fn([](C a, C b) { return a * b; });
    else
      return fn([](C a, C b) { return wrap_mul(a, b); });
  case ir::OpKind::Div:
    if constexpr (is_f)
      return fn([](C a, C b) { return a / b; });
    else
      return fn([](C a, C b) { return int_div(a, b); });
  case ir::OpKind::Pow:
    if constexpr (is_f)
      return fn([](C a, C b) { return std::pow(a, b); });
    else
      return fn([](C a, C b) { return int_pow(a, b); });
  case ir::OpKind::Maximum:
    return fn([](C a, C b) { return max_of(a, b); });
  case ir::OpKind::Minimum:
    return fn([](C a, C b) { return min_of(a, b); });
  default:
    throw Error("rlx-cpu: " + std::string(ir::op_name(op)) + " is not a binary op");
  }
}

} // namespace rlx::cpu
