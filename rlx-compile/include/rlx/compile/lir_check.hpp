// lir_check.hpp: what every backend's compile (Backend::compile) checks of the LIR module it is
// given before it lays out memory, in one place so each backend refuses the same things with the
// same one-line errors.
#pragma once

#include "rlx/ir/module.hpp"

#include <cstdint>
#include <string_view>

namespace rlx::compile {

/// Checks that \p lir is an LIR module with a plan slot per node, the plan's alignment a multiple
/// of \p alignment (the backend's), and no symbolic type left. Throws rlx::Error starting
/// "<\p backend>: " otherwise.
void check_compilable(const ir::Module& lir, std::string_view backend, std::int64_t alignment);

} // namespace rlx::compile
