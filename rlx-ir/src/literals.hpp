// literals.hpp (private): exact decimal and hex literals for numbers and tensor elements, shared by
// the text and JSON forms.
//
// Floats are written as the shortest decimal that parses back to the same value (std::to_chars),
// with the tokens nan, -nan, inf and -inf. A tensor is written element by element in decimal when
// every element reads back bit-exactly (f16 / bf16 go through their float value, bool is
// true / false); otherwise (a NaN with a payload, a bool byte other than 0 / 1) it is written as
// the hex of its raw bytes in memory order, which always round-trips.
#pragma once

#include "rlx/ir/tensor.hpp"

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace rlx::ir::detail {

/// The shortest decimal that reads back as exactly \p v ("nan", "-nan", "inf", "-inf" included).
std::string format_double(double v);
/// The shortest decimal that reads back as exactly \p v as a float.
std::string format_float(float v);
/// Reads a whole decimal token (or nan / inf token); nullopt when \p s is not one.
std::optional<double> parse_double(std::string_view s);
std::optional<float> parse_float(std::string_view s);
/// Reads a whole decimal integer token; nullopt when malformed or out of the int64 range.
std::optional<std::int64_t> parse_int(std::string_view s);

/// Element \p i of \p t as a decimal token (true / false for bool).
std::string element_text(const Tensor& t, std::int64_t i);
/// Sets element \p i of \p t from a token written by element_text; \returns an empty string on
/// success, else why the token does not fit the dtype.
std::string set_element_text(Tensor& t, std::int64_t i, std::string_view token);
/// True when every element of \p t reads back bit-exactly from element_text.
bool decimal_is_exact(const Tensor& t);

/// The raw bytes of \p t as lowercase hex, in memory order.
std::string to_hex(const Tensor& t);
/// Fills \p t (already sized) from hex digits; \returns false on a bad digit or length.
bool from_hex(std::string_view hex, Tensor& t);

/// The element count of \p sizes, or nullopt when a size is negative or the product exceeds
/// \p limit (so no caller allocates on the word of a corrupt file).
std::optional<std::int64_t> checked_numel(const std::vector<std::int64_t>& sizes,
                                          std::int64_t limit);

} // namespace rlx::ir::detail
