// common.cpp: element loads / stores, rounding and index helpers of the reference kernels.
#include "common.hpp"

#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <limits>

namespace rlx::ir::reference {

void fail(const std::string& msg) {
  throw EvalError(msg);
}

std::vector<double> load_f64(const Tensor& t) {
  std::vector<double> v(static_cast<std::size_t>(t.numel()));
  switch (t.dtype()) {
  case DType::f32: {
    auto s = t.data<float>();
    std::copy(s.begin(), s.end(), v.begin());
    break;
  }
  case DType::f64: {
    auto s = t.data<double>();
    std::copy(s.begin(), s.end(), v.begin());
    break;
  }
  default:
    for (std::size_t i = 0; i < v.size(); ++i)
      v[i] = t.get_f64(static_cast<std::int64_t>(i));
  }
  return v;
}

std::vector<std::int64_t> load_i64(const Tensor& t) {
  std::vector<std::int64_t> v(static_cast<std::size_t>(t.numel()));
  for (std::size_t i = 0; i < v.size(); ++i)
    v[i] = t.get_i64(static_cast<std::int64_t>(i));
  return v;
}

float round_to_odd_float(long double v) {
  float f = static_cast<float>(v);
  if (std::isnan(v) || std::isinf(v) || static_cast<long double>(f) == v)
    return f;
  if (std::isinf(f)) // beyond the float range: truncation gives the largest float (odd)
    return std::copysign(FLT_MAX, f);
  if (std::fabs(static_cast<long double>(f)) > std::fabs(v))
    f = std::nextafter(f, 0.0f); // truncate toward zero
  auto bits = std::bit_cast<std::uint32_t>(f) | 1u;
  return std::bit_cast<float>(bits);
}

namespace {

struct IntRange {
  double lo, hi;
};
IntRange int_range(DType t) {
  switch (t) {
  case DType::i8:
    return {-128.0, 127.0};
  case DType::u8:
    return {0.0, 255.0};
  case DType::i32:
    return {-2147483648.0, 2147483647.0};
  default:
    return {-9223372036854775808.0, 9223372036854775807.0};
  }
}

void store_float(Tensor& t, std::int64_t i, long double v) {
  switch (t.dtype()) {
  case DType::f32:
    t.data<float>()[static_cast<std::size_t>(i)] = static_cast<float>(v);
    return;
  case DType::f64:
    t.data<double>()[static_cast<std::size_t>(i)] = static_cast<double>(v);
    return;
  case DType::f16:
    t.data<f16_t>()[static_cast<std::size_t>(i)] = float_to_f16(round_to_odd_float(v));
    return;
  case DType::bf16:
    t.data<bf16_t>()[static_cast<std::size_t>(i)] = float_to_bf16(round_to_odd_float(v));
    return;
  default:
    fail("internal: store_float on " + std::string(dtype_name(t.dtype())));
  }
}

} // namespace

std::int64_t float_to_int(double v, DType t) {
  if (std::isnan(v))
    return 0;
  double r = std::trunc(v);
  IntRange range = int_range(t);
  if (r <= range.lo)
    return t == DType::i64 ? std::numeric_limits<std::int64_t>::min()
                           : static_cast<std::int64_t>(range.lo);
  if (r >= range.hi) // 2^63 - 1 is not a double: r >= 2^63 saturates
    return t == DType::i64 ? std::numeric_limits<std::int64_t>::max()
                           : static_cast<std::int64_t>(range.hi);
  return static_cast<std::int64_t>(r);
}

Tensor store_f64(const Shape& out, std::span<const double> v) {
  Tensor t(out);
  if (static_cast<std::int64_t>(v.size()) != t.numel())
    fail("internal: " + std::to_string(v.size()) + " values for " + out.str());
  if (out.dtype == DType::f32) {
    auto d = t.data<float>();
    for (std::size_t i = 0; i < v.size(); ++i)
      d[i] = static_cast<float>(v[i]);
  } else if (out.dtype == DType::f64) {
    std::copy(v.begin(), v.end(), t.data<double>().begin());
  } else if (is_float(out.dtype)) {
    for (std::size_t i = 0; i < v.size(); ++i)
      store_float(t, static_cast<std::int64_t>(i), v[i]);
  } else if (out.dtype == DType::boolean) {
    for (std::size_t i = 0; i < v.size(); ++i)
      t.set_i64(static_cast<std::int64_t>(i), v[i] != 0.0 ? 1 : 0);
  } else {
    for (std::size_t i = 0; i < v.size(); ++i)
      t.set_i64(static_cast<std::int64_t>(i), float_to_int(v[i], out.dtype));
  }
  return t;
}

Tensor store_i64(const Shape& out, std::span<const std::int64_t> v) {
  Tensor t(out);
  if (static_cast<std::int64_t>(v.size()) != t.numel())
    fail("internal: " + std::to_string(v.size()) + " values for " + out.str());
  for (std::size_t i = 0; i < v.size(); ++i) {
    auto at = static_cast<std::int64_t>(i);
    if (is_float(out.dtype))
      store_float(t, at, static_cast<long double>(v[i])); // long double holds every int64
    else
      t.set_i64(at, v[i]); // wraps to the width; bool tests != 0
  }
  return t;
}

std::int64_t product(const Sizes& sizes, std::size_t begin, std::size_t end) {
  std::int64_t p = 1;
  for (std::size_t i = begin; i < end; ++i)
    p *= sizes[i];
  return p;
}

std::vector<std::int64_t> broadcast_offsets(const Sizes& in, const Sizes& out) {
  if (in.size() > out.size())
    fail("internal: broadcast of rank " + std::to_string(in.size()) + " to rank " +
         std::to_string(out.size()));
  std::size_t lead = out.size() - in.size();
  Sizes in_strides = contiguous_strides(in);
  Sizes strides(out.size(), 0); // stride of each out axis in the input (0 = broadcast)
  for (std::size_t i = 0; i < in.size(); ++i) {
    if (in[i] == out[lead + i])
      strides[lead + i] = in_strides[i];
    else if (in[i] != 1)
      fail("internal: size " + std::to_string(in[i]) + " does not broadcast to " +
           std::to_string(out[lead + i]));
  }
  std::vector<std::int64_t> offsets;
  offsets.reserve(static_cast<std::size_t>(product(out)));
  for_each_index(out, [&](const Sizes& idx) {
    std::int64_t off = 0;
    for (std::size_t d = 0; d < idx.size(); ++d)
      off += idx[d] * strides[d];
    offsets.push_back(off);
  });
  return offsets;
}

void copy_element(Tensor& dst, std::int64_t i, const Tensor& src, std::int64_t j) {
  auto size = static_cast<std::int64_t>(dtype_size(dst.dtype()));
  std::memcpy(dst.raw() + i * size, src.raw() + j * size, static_cast<std::size_t>(size));
}

Tensor gather_elements(const Shape& out, const Tensor& src,
                       std::span<const std::int64_t> src_offsets) {
  Tensor t(out);
  if (out.dtype != src.dtype())
    fail("internal: gather_elements changes the dtype");
  for (std::size_t i = 0; i < src_offsets.size(); ++i)
    copy_element(t, static_cast<std::int64_t>(i), src, src_offsets[i]);
  return t;
}

Tensor permute(const Tensor& t, const Sizes& perm) {
  Sizes in = t.shape().sizes();
  Sizes in_strides = contiguous_strides(in);
  Sizes out(perm.size());
  for (std::size_t i = 0; i < perm.size(); ++i)
    out[i] = in[static_cast<std::size_t>(perm[i])];
  std::vector<std::int64_t> offsets;
  offsets.reserve(static_cast<std::size_t>(t.numel()));
  for_each_index(out, [&](const Sizes& idx) {
    std::int64_t off = 0;
    for (std::size_t i = 0; i < idx.size(); ++i)
      off += idx[i] * in_strides[static_cast<std::size_t>(perm[i])];
    offsets.push_back(off);
  });
  return gather_elements(Shape::of(out, t.dtype()), t, offsets);
}

std::size_t axis_of(std::int64_t axis, std::size_t rank, const char* what) {
  return static_cast<std::size_t>(normalize_axis(axis, rank, what));
}

} // namespace rlx::ir::reference
