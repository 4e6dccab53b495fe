// size.cpp: checked size arithmetic and the allocation limit.
#include "rlx/ir/size.hpp"

#include "rlx/ir/error.hpp"

#include <string>
#include <unistd.h>

namespace rlx::ir {

std::int64_t checked_mul(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r))
    throw ShapeError(std::string(what) + ": size " + std::to_string(a) + " x " + std::to_string(b) +
                     " overflows int64");
  return r;
}

std::int64_t checked_add(std::int64_t a, std::int64_t b, std::string_view what) {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r))
    throw ShapeError(std::string(what) + ": size " + std::to_string(a) + " + " + std::to_string(b) +
                     " overflows int64");
  return r;
}

std::int64_t checked_product(std::span<const std::int64_t> sizes, std::string_view what) {
  for (auto s : sizes)
    if (s == 0)
      return 0;
  std::int64_t n = 1;
  for (auto s : sizes)
    n = checked_mul(n, s, what);
  return n;
}

std::int64_t physical_memory_bytes() {
  static const std::int64_t bytes = [] {
    const long pages = ::sysconf(_SC_PHYS_PAGES);
    const long page = ::sysconf(_SC_PAGE_SIZE);
    std::int64_t r = 0;
    if (pages <= 0 || page <= 0 ||
        __builtin_mul_overflow(static_cast<std::int64_t>(pages), static_cast<std::int64_t>(page),
                               &r))
      return std::int64_t{0};
    return r;
  }();
  return bytes;
}

bool allocation_fits(std::int64_t bytes) {
  const std::int64_t limit = physical_memory_bytes();
  return bytes >= 0 && (limit == 0 || bytes <= limit);
}

void check_allocation(std::int64_t bytes, std::string_view what) {
  if (bytes < 0)
    throw AllocationError(std::string(what) + ": negative size " + std::to_string(bytes) +
                          " bytes");
  if (!allocation_fits(bytes))
    throw AllocationError(std::string(what) + " needs " + std::to_string(bytes) +
                          " bytes, more than this machine's " +
                          std::to_string(physical_memory_bytes()) + " bytes of physical memory");
}

} // namespace rlx::ir
