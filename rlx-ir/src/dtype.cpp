// dtype.cpp: element type sizes, names and promotion.
#include "rlx/ir/dtype.hpp"

#include <array>

namespace rlx::ir {
namespace {
struct DTypeRow {
  std::string_view name;
  std::size_t size;
  int rank; // promotion rank within its class
};
constexpr std::array<DTypeRow, kNumDTypes> kRows = {{
    {"f32", 4, 2},
    {"f64", 8, 3},
    {"f16", 2, 1},
    {"bf16", 2, 1},
    {"i8", 1, 1},
    {"i32", 4, 3},
    {"i64", 8, 4},
    {"u8", 1, 1},
    {"bool", 1, 0},
}};
const DTypeRow& row(DType t) {
  return kRows[static_cast<std::size_t>(t)];
}
} // namespace

std::size_t dtype_size(DType t) {
  return row(t).size;
}
std::string_view dtype_name(DType t) {
  return row(t).name;
}

std::optional<DType> parse_dtype(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kRows[static_cast<std::size_t>(i)].name == name)
      return static_cast<DType>(i);
  return std::nullopt;
}

bool is_float(DType t) {
  return t == DType::f32 || t == DType::f64 || t == DType::f16 || t == DType::bf16;
}
bool is_int(DType t) {
  return t == DType::i8 || t == DType::i32 || t == DType::i64 || t == DType::u8;
}

DType promote(DType a, DType b) {
  if (a == b)
    return a;
  if (a == DType::boolean)
    return b;
  if (b == DType::boolean)
    return a;
  if (is_float(a) && is_float(b)) {
    if ((a == DType::f16 && b == DType::bf16) || (a == DType::bf16 && b == DType::f16))
      return DType::f32;
    return row(a).rank >= row(b).rank ? a : b;
  }
  if (is_float(a))
    return a;
  if (is_float(b))
    return b;
  // two distinct integer types
  if ((a == DType::u8 && b == DType::i8) || (a == DType::i8 && b == DType::u8))
    return DType::i32;
  return row(a).rank >= row(b).rank ? a : b;
}

} // namespace rlx::ir
