// tensor.cpp: host tensors and f16 / bf16 conversion.
#include "rlx/ir/tensor.hpp"

#include "rlx/ir/size.hpp"

#include <bit>
#include <cmath>
#include <cstring>
#include <sstream>

namespace rlx::ir {

f16_t float_to_f16(float v) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  std::uint32_t sign = (x >> 16) & 0x8000u;
  std::uint32_t mant = x & 0x7fffffu;
  int exp = static_cast<int>((x >> 23) & 0xffu);
  if (exp == 0xff) // inf / nan
    return {static_cast<std::uint16_t>(sign | 0x7c00u | (mant ? 0x200u : 0u))};
  int e = exp - 127 + 15;
  if (e >= 0x1f)
    return {static_cast<std::uint16_t>(sign | 0x7c00u)};
  if (e <= 0) { // subnormal or zero
    if (e < -10)
      return {static_cast<std::uint16_t>(sign)};
    mant |= 0x800000u;
    int shift = 14 - e;
    std::uint32_t half = mant >> shift;
    std::uint32_t rem = mant & ((1u << shift) - 1);
    std::uint32_t mid = 1u << (shift - 1);
    if (rem > mid || (rem == mid && (half & 1u)))
      ++half;
    return {static_cast<std::uint16_t>(sign | half)};
  }
  std::uint32_t half = sign | (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
  std::uint32_t rem = mant & 0x1fffu;
  if (rem > 0x1000u || (rem == 0x1000u && (half & 1u)))
    ++half; // may carry into the exponent: correct rounding up to inf
  return {static_cast<std::uint16_t>(half)};
}

float f16_to_float(f16_t h) {
  std::uint32_t sign = static_cast<std::uint32_t>(h.bits & 0x8000u) << 16;
  std::uint32_t exp = (h.bits >> 10) & 0x1fu;
  std::uint32_t mant = h.bits & 0x3ffu;
  std::uint32_t x;
  if (exp == 0) {
    if (mant == 0) {
      x = sign;
    } else { // subnormal: normalise
      int e = -1;
      do {
        ++e;
        mant <<= 1;
      } while ((mant & 0x400u) == 0);
      x = sign | (static_cast<std::uint32_t>(127 - 15 - e) << 23) | ((mant & 0x3ffu) << 13);
    }
  } else if (exp == 0x1f) {
    x = sign | 0x7f800000u | (mant << 13);
  } else {
    x = sign | ((exp + 127 - 15) << 23) | (mant << 13);
  }
  return std::bit_cast<float>(x);
}

bf16_t float_to_bf16(float v) {
  std::uint32_t x = std::bit_cast<std::uint32_t>(v);
  if (std::isnan(v))
    return {static_cast<std::uint16_t>((x >> 16) | 0x40u)};
  std::uint32_t lsb = (x >> 16) & 1u;
  x += 0x7fffu + lsb;
  return {static_cast<std::uint16_t>(x >> 16)};
}

float bf16_to_float(bf16_t v) {
  return std::bit_cast<float>(static_cast<std::uint32_t>(v.bits) << 16);
}

Tensor::Tensor(Shape shape) : shape_(std::move(shape)) {
  for (const auto& d : shape_.dims)
    if (d.is_static() && d.size() < 0)
      throw ShapeError("Tensor: negative size in " + shape_.str());
  numel_ = shape_.numel();                   // throws on symbolic dims and on overflow
  const std::int64_t bytes = shape_.bytes(); // likewise
  if (!allocation_fits(bytes))
    check_allocation(bytes, "tensor " + shape_.str());
  bytes_ = std::make_shared<std::vector<std::byte>>(static_cast<std::size_t>(bytes));
}

void Tensor::check_type(DType t) const {
  if (t != shape_.dtype)
    throw Error("tensor of " + std::string(dtype_name(shape_.dtype)) + " accessed as " +
                std::string(dtype_name(t)));
}

double Tensor::get_f64(std::int64_t i) const {
  const std::byte* p = raw() + i * static_cast<std::int64_t>(dtype_size(dtype()));
  switch (dtype()) {
  case DType::f32: {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::f64: {
    double v;
    std::memcpy(&v, p, 8);
    return v;
  }
  case DType::f16: {
    f16_t v;
    std::memcpy(&v.bits, p, 2);
    return f16_to_float(v);
  }
  case DType::bf16: {
    bf16_t v;
    std::memcpy(&v.bits, p, 2);
    return bf16_to_float(v);
  }
  default:
    return static_cast<double>(get_i64(i));
  }
}

std::int64_t Tensor::get_i64(std::int64_t i) const {
  const std::byte* p = raw() + i * static_cast<std::int64_t>(dtype_size(dtype()));
  switch (dtype()) {
  case DType::i8:
    return static_cast<std::int8_t>(*p);
  case DType::u8:
  case DType::boolean:
    return static_cast<std::uint8_t>(*p);
  case DType::i32: {
    std::int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  case DType::i64: {
    std::int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  default:
    return static_cast<std::int64_t>(get_f64(i));
  }
}

void Tensor::set_f64(std::int64_t i, double v) {
  std::byte* p = raw() + i * static_cast<std::int64_t>(dtype_size(dtype()));
  switch (dtype()) {
  case DType::f32: {
    float f = static_cast<float>(v);
    std::memcpy(p, &f, 4);
    return;
  }
  case DType::f64:
    std::memcpy(p, &v, 8);
    return;
  case DType::f16: {
    auto h = float_to_f16(static_cast<float>(v));
    std::memcpy(p, &h.bits, 2);
    return;
  }
  case DType::bf16: {
    auto h = float_to_bf16(static_cast<float>(v));
    std::memcpy(p, &h.bits, 2);
    return;
  }
  case DType::boolean:
    *p = static_cast<std::byte>(v != 0.0 ? 1 : 0);
    return;
  default:
    if (std::isnan(v))
      throw Error("cannot convert NaN to " + std::string(dtype_name(dtype())));
    set_i64(i, static_cast<std::int64_t>(v));
  }
}

void Tensor::set_i64(std::int64_t i, std::int64_t v) {
  std::byte* p = raw() + i * static_cast<std::int64_t>(dtype_size(dtype()));
  switch (dtype()) {
  case DType::i8:
    *p = static_cast<std::byte>(static_cast<std::int8_t>(v));
    return;
  case DType::u8:
    *p = static_cast<std::byte>(static_cast<std::uint8_t>(v));
    return;
  case DType::boolean:
    *p = static_cast<std::byte>(v != 0 ? 1 : 0);
    return;
  case DType::i32: {
    auto w = static_cast<std::int32_t>(v);
    std::memcpy(p, &w, 4);
    return;
  }
  case DType::i64:
    std::memcpy(p, &v, 8);
    return;
  default:
    set_f64(i, static_cast<double>(v));
  }
}

Tensor Tensor::clone() const {
  Tensor t;
  t.shape_ = shape_;
  t.numel_ = numel_;
  if (bytes_)
    t.bytes_ = std::make_shared<std::vector<std::byte>>(*bytes_);
  return t;
}

Tensor Tensor::cast(DType t) const {
  Tensor out(shape_.with_dtype(t));
  bool int_path = !is_float(t) && !is_float(dtype());
  for (std::int64_t i = 0; i < numel_; ++i) {
    if (int_path)
      out.set_i64(i, get_i64(i));
    else
      out.set_f64(i, get_f64(i));
  }
  return out;
}

Tensor Tensor::reshaped(const std::vector<std::int64_t>& sizes) const {
  Shape s = Shape::of(sizes, dtype());
  if (s.numel() != numel_)
    throw ShapeError("Tensor::reshaped: " + shape_.str() + " has " + std::to_string(numel_) +
                     " elements, " + s.str() + " needs " + std::to_string(s.numel()));
  Tensor t = *this;
  t.shape_ = s;
  return t;
}

bool Tensor::identical(const Tensor& o) const {
  if (!(shape_ == o.shape_))
    return false;
  if (nbytes() != o.nbytes())
    return false;
  return nbytes() == 0 || std::memcmp(raw(), o.raw(), nbytes()) == 0;
}

std::string Tensor::str(std::size_t max_values) const {
  std::ostringstream os;
  os << shape_.str() << " {";
  auto n = static_cast<std::size_t>(numel_);
  for (std::size_t i = 0; i < n && i < max_values; ++i) {
    if (i)
      os << ", ";
    if (is_float(dtype()))
      os << get_f64(static_cast<std::int64_t>(i));
    else
      os << get_i64(static_cast<std::int64_t>(i));
  }
  if (n > max_values)
    os << ", ...";
  os << "}";
  return os.str();
}

double max_abs_diff(const Tensor& a, const Tensor& b) {
  if (a.shape().dims != b.shape().dims)
    throw ShapeError("max_abs_diff: shapes differ: " + a.shape().str() + " vs " + b.shape().str());
  double m = 0;
  for (std::int64_t i = 0; i < a.numel(); ++i) {
    double d = std::abs(a.get_f64(i) - b.get_f64(i));
    if (std::isnan(d))
      return d;
    m = std::max(m, d);
  }
  return m;
}

} // namespace rlx::ir
