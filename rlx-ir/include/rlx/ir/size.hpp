// size.hpp: checked size arithmetic. Every element count, extent and byte size rlx forms from
// static dims goes through these, so a size that does not fit in int64 is a ShapeError naming
// what was being sized, never a wrapped value; and an allocation the machine cannot hold is an
// AllocationError before anything is allocated.
#pragma once

#include <cstdint>
#include <span>
#include <string_view>

namespace rlx::ir {

/// \returns \p a * \p b; throws ShapeError "<what>: size a x b overflows int64" when the product
/// does not fit.
std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what);

/// \returns \p a + \p b; throws ShapeError naming \p what when the sum does not fit in int64.
std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what);

/// \returns the product of \p sizes (1 for none; 0 when any is 0, whatever the others are);
/// throws ShapeError naming \p what when it does not fit in int64.
std::int64_t checked_product(std::span<const std::int64_t> sizes, std::string_view what);

/// \returns the machine's physical memory in bytes, or 0 when the system does not say.
std::int64_t physical_memory_bytes();

/// \returns whether \p bytes is a size this machine can hold: not negative and at most its
/// physical memory (the check of check_allocation, without building a message).
bool allocation_fits(std::int64_t bytes);

/// Throws AllocationError naming \p what unless \p bytes is a size this machine can hold: not
/// negative and at most its physical memory. Call before allocating a buffer whose size comes
/// from input (a shape, a file header, a command line).
void check_allocation(std::int64_t bytes, std::string_view what);

} // namespace rlx::ir
