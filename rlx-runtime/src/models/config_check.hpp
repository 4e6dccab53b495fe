// config_check.hpp: validation helpers shared by the model builders.
#pragma once

#include "rlx/ir/error.hpp"

#include <string>

namespace rlx::runtime::detail {

/// Throws Error "<model> config: <field> must be positive, got <v>" unless \p v > 0.
inline void require_positive(const char* model, const char* field, long long v) {
  if (v <= 0)
    throw Error(std::string(model) + " config: " + field + " must be positive, got " +
                std::to_string(v));
}

/// Throws Error "<model> config: <field> must be in [1, <max>], got <v>" unless 1 <= \p v <= \p
/// max.
inline void require_in_range(const char* model, const char* field, long long v, long long max) {
  if (v <= 0 || v > max)
    throw Error(std::string(model) + " config: " + field + " must be in [1, " +
                std::to_string(max) + "], got " + std::to_string(v));
}

/// Throws Error "<model> config: <field> (<v>) must be a multiple of <of> (<d>)" unless \p d
/// divides \p v (\p d must already be known positive).
inline void require_multiple(const char* model, const char* field, long long v, const char* of,
                             long long d) {
  if (v % d != 0)
    throw Error(std::string(model) + " config: " + field + " (" + std::to_string(v) +
                ") must be a multiple of " + of + " (" + std::to_string(d) + ")");
}

/// Throws Error "<model> config: <what>" unless \p ok.
inline void require(bool ok, const char* model, const std::string& what) {
  if (!ok)
    throw Error(std::string(model) + " config: " + what);
}

} // namespace rlx::runtime::detail
