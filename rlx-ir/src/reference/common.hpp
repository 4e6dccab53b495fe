// common.hpp (private): helpers shared by the reference kernels: element loads and stores in the
// compute types (double for floats, int64 for integers), row-major index arithmetic, broadcasting
// and the error helper.
#pragma once

#include "rlx/ir/error.hpp"
#include "rlx/ir/graph.hpp"
#include "rlx/ir/tensor.hpp"

#include <cstdint>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace rlx::ir::reference {

/// Operand values of one node, in operand order.
using Args = std::span<const Tensor>;
/// Static sizes of a tensor.
using Sizes = std::vector<std::int64_t>;

/// Throws EvalError with \p msg.
[[noreturn]] void fail(const std::string& msg);

/// The elements of \p t as doubles (ints and bools converted exactly up to 2^53).
std::vector<double> load_f64(const Tensor& t);
/// The elements of \p t as int64 (floats truncate toward zero; bool is 0 / 1).
std::vector<std::int64_t> load_i64(const Tensor& t);

/// A tensor of static type \p out holding \p v: floats round to nearest-even in the target type,
/// integer targets take the Cast rule for floats, bool tests != 0.
Tensor store_f64(const Shape& out, std::span<const double> v);
/// A tensor of static type \p out holding \p v: integer targets wrap to their width (two's
/// complement), float targets round to nearest-even, bool tests != 0.
Tensor store_i64(const Shape& out, std::span<const std::int64_t> v);

/// The compute type of a dtype: double for floats, int64 for everything else.
template <class T>
concept ComputeType = std::is_same_v<T, double> || std::is_same_v<T, std::int64_t>;

template <ComputeType T> std::vector<T> load(const Tensor& t) {
  if constexpr (std::is_same_v<T, double>)
    return load_f64(t);
  else
    return load_i64(t);
}
template <ComputeType T> Tensor store(const Shape& out, std::span<const T> v) {
  if constexpr (std::is_same_v<T, double>)
    return store_f64(out, v);
  else
    return store_i64(out, v);
}

/// Calls \p fn with a value of the compute type of \p t: `fn(double{})` for float types,
/// `fn(std::int64_t{})` otherwise.
template <class Fn> decltype(auto) with_compute_type(DType t, Fn&& fn) {
  if (is_float(t))
    return fn(double{});
  return fn(std::int64_t{});
}

/// Rounds \p v to the nearest float, breaking ties toward the float with an odd significand
/// ("round to odd"). A second rounding of the result to a narrower type (f16, bf16) with
/// round-to-nearest-even then equals a single correct rounding of \p v.
float round_to_odd_float(long double v);
/// Float value \p v converted to integer type \p t: truncated toward zero, saturated to the
/// type's range, NaN gives 0 (the Cast rule).
std::int64_t float_to_int(double v, DType t);

// ---- wrapping integer arithmetic (two's complement, as every integer dtype wraps)
// -----------------

inline std::int64_t wrap_add(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) + static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_sub(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) - static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_mul(std::int64_t a, std::int64_t b) {
  return static_cast<std::int64_t>(static_cast<std::uint64_t>(a) * static_cast<std::uint64_t>(b));
}
inline std::int64_t wrap_neg(std::int64_t a) {
  return wrap_sub(0, a);
}

/// a + b in the compute type \p T (wrapping for integers).
template <ComputeType T> T add(T a, T b) {
  if constexpr (std::is_same_v<T, double>)
    return a + b;
  else
    return wrap_add(a, b);
}
/// a * b in the compute type \p T (wrapping for integers).
template <ComputeType T> T mul(T a, T b) {
  if constexpr (std::is_same_v<T, double>)
    return a * b;
  else
    return wrap_mul(a, b);
}

// ---- row-major index arithmetic ---------------------------------------------------------------

/// Product of \p sizes[begin, end).
std::int64_t product(const Sizes& sizes, std::size_t begin, std::size_t end);
/// Product of all of \p sizes.
inline std::int64_t product(const Sizes& sizes) {
  return product(sizes, 0, sizes.size());
}

/// Calls \p fn(idx) for every multi-index of \p sizes in row-major order.
template <class Fn> void for_each_index(const Sizes& sizes, Fn&& fn) {
  if (product(sizes) == 0)
    return;
  Sizes idx(sizes.size(), 0);
  for (;;) {
    fn(static_cast<const Sizes&>(idx));
    std::size_t d = sizes.size();
    for (; d > 0; --d) {
      if (++idx[d - 1] < sizes[d - 1])
        break;
      idx[d - 1] = 0;
    }
    if (d == 0)
      return;
  }
}

/// For every element of a tensor of sizes \p out (row-major), the offset of the element of a
/// tensor of sizes \p in that NumPy-broadcasts onto it.
std::vector<std::int64_t> broadcast_offsets(const Sizes& in, const Sizes& out);

/// A tensor of type \p out whose element i is element \p src_offsets[i] of \p src (bytewise).
Tensor gather_elements(const Shape& out, const Tensor& src,
                       std::span<const std::int64_t> src_offsets);
/// Copies element \p j of \p src into element \p i of \p dst (bytewise; same dtype).
void copy_element(Tensor& dst, std::int64_t i, const Tensor& src, std::int64_t j);

/// \p t with its axes permuted: out dim i = in dim \p perm[i].
Tensor permute(const Tensor& t, const Sizes& perm);

/// The normalised \p axis of a rank-\p rank tensor as an index.
std::size_t axis_of(std::int64_t axis, std::size_t rank, const char* what);

/// Evaluates \p g with its Inputs bound in order to \p inputs (sub-graphs of If, While, CustomFn
/// and HIR decompositions). Symbolic dims are bound from the actual inputs. \returns the outputs.
std::vector<Tensor> evaluate_positional(const Graph& g, Args inputs);

} // namespace rlx::ir::reference
