// literals.cpp: exact decimal and hex literals for numbers and tensor elements.
#include "literals.hpp"

#include <charconv>
#include <cstring>
#include <limits>

namespace rlx::ir::detail {

namespace {

template <class T> std::string shortest(T v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

template <class T> std::optional<T> read_whole(std::string_view s) {
  T v{};
  if (s.empty())
    return std::nullopt;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size())
    return std::nullopt;
  return v;
}

struct IntRange {
  std::int64_t lo, hi;
};

IntRange int_range(DType t) {
  switch (t) {
  case DType::i8:
    return {-128, 127};
  case DType::u8:
    return {0, 255};
  case DType::i32:
    return {std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max()};
  default:
    return {std::numeric_limits<std::int64_t>::min(), std::numeric_limits<std::int64_t>::max()};
  }
}

const std::byte* element_ptr(const Tensor& t, std::int64_t i) {
  return t.raw() + static_cast<std::size_t>(i) * dtype_size(t.dtype());
}

} // namespace

std::string format_double(double v) {
  return shortest(v);
}
std::string format_float(float v) {
  return shortest(v);
}
std::optional<double> parse_double(std::string_view s) {
  return read_whole<double>(s);
}
std::optional<float> parse_float(std::string_view s) {
  return read_whole<float>(s);
}
std::optional<std::int64_t> parse_int(std::string_view s) {
  return read_whole<std::int64_t>(s);
}

std::string element_text(const Tensor& t, std::int64_t i) {
  const std::byte* p = element_ptr(t, i);
  switch (t.dtype()) {
  case DType::f32: {
    float v;
    std::memcpy(&v, p, sizeof v);
    return format_float(v);
  }
  case DType::f64: {
    double v;
    std::memcpy(&v, p, sizeof v);
    return format_double(v);
  }
  case DType::f16:
  case DType::bf16:
    return format_float(static_cast<float>(t.get_f64(i)));
  case DType::boolean: {
    auto b = static_cast<unsigned>(*p);
    return b == 0 ? "false" : b == 1 ? "true" : std::to_string(b);
  }
  default:
    return std::to_string(t.get_i64(i));
  }
}

std::string set_element_text(Tensor& t, std::int64_t i, std::string_view token) {
  const DType dt = t.dtype();
  std::byte* p = t.raw() + static_cast<std::size_t>(i) * dtype_size(dt);
  if (dt == DType::f64) {
    auto v = parse_double(token);
    if (!v)
      return "expected an f64 number";
    std::memcpy(p, &*v, sizeof(double));
    return {};
  }
  if (is_float(dt)) {
    auto v = parse_float(token);
    if (!v)
      return "expected an " + std::string(dtype_name(dt)) + " number";
    t.set_f64(i, static_cast<double>(*v));
    return {};
  }
  if (dt == DType::boolean) {
    if (token == "true" || token == "1")
      *p = std::byte{1};
    else if (token == "false" || token == "0")
      *p = std::byte{0};
    else
      return "expected true or false";
    return {};
  }
  auto v = parse_int(token);
  if (!v)
    return "expected an integer";
  IntRange r = int_range(dt);
  if (*v < r.lo || *v > r.hi)
    return std::string(token) + " is out of range for " + std::string(dtype_name(dt));
  t.set_i64(i, *v);
  return {};
}

bool decimal_is_exact(const Tensor& t) {
  if (t.empty())
    return true;
  Tensor scratch(Shape::scalar(t.dtype()));
  const std::size_t size = dtype_size(t.dtype());
  for (std::int64_t i = 0; i < t.numel(); ++i) {
    if (!set_element_text(scratch, 0, element_text(t, i)).empty())
      return false;
    if (std::memcmp(scratch.raw(), element_ptr(t, i), size) != 0)
      return false;
  }
  return true;
}

std::string to_hex(const Tensor& t) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out;
  out.reserve(t.nbytes() * 2);
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    auto b = static_cast<unsigned>(t.raw()[i]);
    out += kDigits[b >> 4];
    out += kDigits[b & 15u];
  }
  return out;
}

bool from_hex(std::string_view hex, Tensor& t) {
  if (hex.size() != t.nbytes() * 2)
    return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9')
      return c - '0';
    if (c >= 'a' && c <= 'f')
      return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
      return c - 'A' + 10;
    return -1;
  };
  for (std::size_t i = 0; i < t.nbytes(); ++i) {
    int hi = digit(hex[2 * i]), lo = digit(hex[2 * i + 1]);
    if (hi < 0 || lo < 0)
      return false;
    t.raw()[i] = static_cast<std::byte>(hi * 16 + lo);
  }
  return true;
}

std::optional<std::int64_t> checked_numel(const std::vector<std::int64_t>& sizes,
                                          std::int64_t limit) {
  std::int64_t n = 1;
  bool zero = false;
  for (auto s : sizes) {
    if (s < 0)
      return std::nullopt;
    if (s == 0) {
      zero = true;
      continue;
    }
    if (n > limit / s)
      return std::nullopt;
    n *= s;
  }
  return zero ? 0 : n;
}

} // namespace rlx::ir::detail
