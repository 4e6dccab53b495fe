// tuple.cpp: kernels of the tuple ops. Split writes each part into its slot of the tuple's one
// planned buffer (Shape::part_offset); Get is a pure view of its part, so the planner aliases it
// and it runs no kernel; its copy kernel serves only a Get whose buffer was not aliased.
#include "../lower.hpp"
#include "block_copy.hpp"
#include "rlx/ir/error.hpp"

namespace rlx::cpu {
namespace {

/// One BlockCopy per part: part p takes the rows [start_p, start_p + sizes[p]) of the axis.
class SplitKernel final : public Kernel {
public:
  void run(ExecContext& ctx) override {
    for (auto& p : parts)
      p.run(ctx);
  }
  std::vector<BlockCopy> parts;
};

std::unique_ptr<Kernel> make_split(const LowerContext& c) {
  const auto& a = c.node().attr<ir::SplitAttrs>();
  auto sizes = c.in(0).sizes();
  auto ax = static_cast<std::size_t>(ir::normalize_axis(a.axis, sizes.size(), "split"));
  auto es = static_cast<std::int64_t>(ir::dtype_size(c.in(0).dtype));
  std::int64_t outer = 1, inner = es;
  for (std::size_t d = 0; d < ax; ++d)
    outer *= sizes[d];
  for (std::size_t d = ax + 1; d < sizes.size(); ++d)
    inner *= sizes[d];
  auto k = std::make_unique<SplitKernel>();
  std::int64_t start = 0;
  for (std::size_t p = 0; p < a.sizes.size(); ++p) {
    std::int64_t chunk = a.sizes[p] * inner;
    std::byte* dst = c.dst() + c.out().part_offset(static_cast<std::int64_t>(p));
    if (chunk > 0 && outer > 0)
      k->parts.emplace_back(c.src(0) + start * inner, sizes[ax] * inner, dst, chunk, outer, chunk);
    start += a.sizes[p];
  }
  return k;
}

std::unique_ptr<Kernel> make_get_copy(const LowerContext& c) {
  std::int64_t bytes = c.out().bytes();
  std::int64_t at = c.in(0).part_offset(c.node().attr<ir::GetAttrs>().index);
  return std::make_unique<BlockCopy>(c.src(0) + at, bytes, c.dst(), bytes, 1, bytes);
}

constexpr KernelImpl kSplit[] = {{"tbb", accept_all, nullptr, make_split}};
constexpr KernelImpl kGet[] = {{"copy", accept_all, nullptr, make_get_copy}};

} // namespace

std::span<const KernelImpl> split_impls() {
  return kSplit;
}

std::span<const KernelImpl> get_impls() {
  return kGet;
}

} // namespace rlx::cpu
