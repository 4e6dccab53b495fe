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

/// Throws Error "<model> config: <what>" unless \p ok.
inline void require(bool ok, const char* model, const std::string& what) {
  if (!ok)
    throw Error(std::string(model) + " config: " + what);
}

} // namespace rlx::runtime::detail
