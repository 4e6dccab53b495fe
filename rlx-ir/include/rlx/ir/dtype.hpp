// dtype.hpp: element types, their sizes and promotion rules.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string_view>

namespace rlx::ir {

/// Element type of a tensor.
enum class DType : std::uint8_t { f32, f64, f16, bf16, i8, i32, i64, u8, boolean };

/// Number of DType values (for tables and loops).
inline constexpr int kNumDTypes = 9;

/// \returns the size of one element of \p t in bytes.
std::size_t dtype_size(DType t);
/// \returns the printed name of \p t ("f32", "bool", ...).
std::string_view dtype_name(DType t);
/// \returns the DType named \p name, or nullopt when the name is unknown.
std::optional<DType> parse_dtype(std::string_view name);
/// \returns true for f32, f64, f16 and bf16.
bool is_float(DType t);
/// \returns true for the signed and unsigned integer types (bool is not an integer).
bool is_int(DType t);

/// The result type of a binary arithmetic op on \p a and \p b.
///
/// Rules: equal types give that type; bool promotes to anything; two integer types give the wider
/// (u8 with i8 gives i32, since neither holds the other); integer with float gives the float; f16
/// with bf16 gives f32; two floats give the wider.
DType promote(DType a, DType b);

} // namespace rlx::ir
