// unary_math.hpp (private): the unary elementwise functions of the op table (and the activations
// of fused epilogues) as callables on a compute type, so each loop is instantiated per function
// and vectorises (f32 exp, sigmoid, silu, tanh, erf and both GELUs are branch-free polynomials
// from simd.hpp; the rest is libm).
#pragma once

#include "dtypes.hpp"
#include "rlx/ir/attrs.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/op.hpp"
#include "simd.hpp"

#include <cmath>
#include <numbers>
#include <string>
#include <type_traits>

namespace rlx::cpu {

/// Calls \p fn with a callable computing unary op \p op on compute type \p C. Always inlined, so
/// the loop \p fn runs is compiled for its caller's ISA (the region loop's AVX2 / AVX-512 clones).
template <class C, class Fn> [[gnu::always_inline]] inline void with_unary(ir::OpKind op, Fn&& fn) {
  constexpr bool is_f = std::is_floating_point_v<C>;
  switch (op) {
  case ir::OpKind::Neg:
    if constexpr (is_f)
      return fn([](C x) { return -x; });
    else
      return fn([](C x) { return wrap_sub(0, x); });
  case ir::OpKind::Abs:
    if constexpr (is_f)
      return fn([](C x) { return std::fabs(x); });
    else
      return fn([](C x) { return x < 0 ? wrap_sub(0, x) : x; });
  case ir::OpKind::Relu:
    return fn([](C x) { return x < C{0} ? C{0} : x; });
  default:
    break;
  }
  if constexpr (is_f) {
    switch (op) {
    case ir::OpKind::Exp:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::exp(x); });
      else
        return fn([](C x) { return std::exp(x); });
    case ir::OpKind::Log:
      return fn([](C x) { return std::log(x); });
    case ir::OpKind::Sqrt:
      return fn([](C x) { return std::sqrt(x); });
    case ir::OpKind::Rsqrt:
      return fn([](C x) { return C{1} / std::sqrt(x); });
    case ir::OpKind::Reciprocal:
      return fn([](C x) { return C{1} / x; });
    case ir::OpKind::Tanh:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::tanh(x); });
      else
        return fn([](C x) { return std::tanh(x); });
    case ir::OpKind::Sigmoid:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::sigmoid(x); });
      else
        return fn([](C x) { return C{1} / (C{1} + std::exp(-x)); });
    case ir::OpKind::Gelu:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::gelu(x); });
      else
        return fn([](C x) {
          return C{0.5} * x * (C{1} + std::erf(x / static_cast<C>(std::numbers::sqrt2)));
        });
    case ir::OpKind::GeluTanh:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::gelu_tanh(x); });
      else
        return fn([](C x) {
          const C k = static_cast<C>(0.79788456080286535588); // sqrt(2 / pi)
          return C{0.5} * x * (C{1} + std::tanh(k * (x + C{0.044715} * x * x * x)));
        });
    case ir::OpKind::Silu:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::silu(x); });
      else
        return fn([](C x) { return x / (C{1} + std::exp(-x)); });
    case ir::OpKind::Sin:
      return fn([](C x) { return std::sin(x); });
    case ir::OpKind::Cos:
      return fn([](C x) { return std::cos(x); });
    case ir::OpKind::Erf:
      if constexpr (std::is_same_v<C, float>)
        return fn([](float x) { return simd::erf(x); });
      else
        return fn([](C x) { return std::erf(x); });
    case ir::OpKind::Sinh:
      return fn([](C x) { return std::sinh(x); });
    case ir::OpKind::Cosh:
      return fn([](C x) { return std::cosh(x); });
    case ir::OpKind::Asin:
      return fn([](C x) { return std::asin(x); });
    case ir::OpKind::Acos:
      return fn([](C x) { return std::acos(x); });
    case ir::OpKind::Atan:
      return fn([](C x) { return std::atan(x); });
    case ir::OpKind::Asinh:
      return fn([](C x) { return std::asinh(x); });
    case ir::OpKind::Acosh:
      return fn([](C x) { return std::acosh(x); });
    case ir::OpKind::Atanh:
      return fn([](C x) { return std::atanh(x); });
    default:
      break;
    }
  }
  throw Error("rlx-cpu: unary op " + std::string(ir::op_name(op)) + " on an unsupported type");
}

} // namespace rlx::cpu
