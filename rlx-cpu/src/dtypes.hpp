// dtypes.hpp (private): dtype dispatch and the element conversions of the generic loops.
//
// Every dtype has a storage type (float, double, f16_t, bf16_t, int8_t, int32_t, int64_t, uint8_t,
// bool) and a compute type: float for f32 / f16 / bf16, double for f64, int64 for the integers
// and bool. Integer results wrap to their width (two's complement), as in the reference.
#pragma once

#include "rlx/ir/dtype.hpp"
#include "rlx/ir/error.hpp"
#include "rlx/ir/tensor.hpp"

#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <type_traits>

namespace rlx::cpu {

/// Calls `fn.template operator()<T>()` with the storage type T of \p t.
template <class Fn> decltype(auto) visit_dtype(ir::DType t, Fn&& fn) {
  switch (t) {
  case ir::DType::f32:
    return fn.template operator()<float>();
  case ir::DType::f64:
    return fn.template operator()<double>();
  case ir::DType::f16:
    return fn.template operator()<ir::f16_t>();
  case ir::DType::bf16:
    return fn.template operator()<ir::bf16_t>();
  case ir::DType::i8:
    return fn.template operator()<std::int8_t>();
  case ir::DType::i32:
    return fn.template operator()<std::int32_t>();
  case ir::DType::i64:
    return fn.template operator()<std::int64_t>();
  case ir::DType::u8:
    return fn.template operator()<std::uint8_t>();
  case ir::DType::boolean:
    return fn.template operator()<bool>();
  }
  throw Error("rlx-cpu: unknown dtype " + std::to_string(static_cast<int>(t)));
}

/// True for the storage types of float dtypes.
template <class T>
inline constexpr bool is_float_storage_v =
    std::is_same_v<T, float> || std::is_same_v<T, double> || std::is_same_v<T, ir::f16_t> ||
    std::is_same_v<T, ir::bf16_t>;

/// The compute type of storage type \p T.
template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, double>, double,
                       std::conditional_t<is_float_storage_v<T>, float, std::int64_t>>;

/// Element \p v in its compute type.
template <class T> inline compute_t<T> to_compute(T v) {
  if constexpr (std::is_same_v<T, ir::f16_t>)
    return ir::f16_to_float(v);
  else if constexpr (std::is_same_v<T, ir::bf16_t>)
    return ir::bf16_to_float(v);
  else
    return static_cast<compute_t<T>>(v);
}

/// A compute value \p v stored as \p T (round to nearest-even for floats, wrap for integers,
/// != 0 for bool).
template <class T> inline T from_compute(compute_t<T> v) {
  if constexpr (std::is_same_v<T, ir::f16_t>)
    return ir::float_to_f16(v);
  else if constexpr (std::is_same_v<T, ir::bf16_t>)
    return ir::float_to_bf16(v);
  else if constexpr (std::is_same_v<T, bool>)
    return v != 0;
  else
    return static_cast<T>(v);
}

/// Wrapping integer arithmetic in int64 (the compute type of every integer dtype).
inline std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}

/// The Cast rule for float → integer \p T: truncate toward zero, saturate to the type's range,
/// NaN gives 0.
template <class T> inline T float_to_int(double v) {
  static_assert(std::is_integral_v<T> && !std::is_same_v<T, bool>);
  if (std::isnan(v))
    return T{0};
  double r = std::trunc(v);
  if (r <= static_cast<double>(std::numeric_limits<T>::min()))
    return std::numeric_limits<T>::min();
  if (r >= static_cast<double>(std::numeric_limits<T>::max()))
    return std::numeric_limits<T>::max();
  return static_cast<T>(r);
}

/// \p x rounded to a float with ties and inexact results going to the odd significand ("round to
/// odd"): a second rounding to f16 / bf16 then equals one correct rounding of \p x.
inline float round_to_odd_float(double x) {
  auto t = static_cast<float>(x);
  if (static_cast<double>(t) != x && !std::isnan(x) && (std::bit_cast<std::uint32_t>(t) & 1u) == 0)
    t = std::nextafter(t, x > static_cast<double>(t) ? std::numeric_limits<float>::infinity()
                                                     : -std::numeric_limits<float>::infinity());
  return t;
}

/// Element \p v of storage type \p S converted to storage type \p D by the Cast rule.
template <class S, class D> inline D convert(S v) {
  if constexpr (std::is_same_v<S, D>) {
    return v;
  } else if constexpr (std::is_same_v<D, bool>) {
    return to_compute<S>(v) != 0;
  } else if constexpr (is_float_storage_v<S> && !is_float_storage_v<D>) {
    return float_to_int<D>(static_cast<double>(to_compute<S>(v)));
  } else if constexpr (is_float_storage_v<D>) {
    // Through double: one correct rounding to every float type.
    double x = static_cast<double>(to_compute<S>(v));
    if constexpr (std::is_same_v<D, double>)
      return x;
    else if constexpr (std::is_same_v<D, float>)
      return static_cast<float>(x);
    else
      return from_compute<D>(round_to_odd_float(x));
  } else {
    return static_cast<D>(to_compute<S>(v)); // integer / bool → integer: exact or wrapping
  }
}

} // namespace rlx::cpu
