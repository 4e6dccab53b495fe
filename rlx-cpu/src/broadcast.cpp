// broadcast.cpp: broadcast iteration plans.
#include "broadcast.hpp"

namespace rlx::cpu {

std::int64_t BroadcastPlan::rows() const {
  std::int64_t r = 1;
  for (std::size_t d = 0; d + 1 < dims.size(); ++d)
    r *= dims[d];
  return r;
}

void BroadcastPlan::row_offsets(std::int64_t row, std::int64_t* offsets) const {
  for (std::size_t k = 0; k < strides.size(); ++k)
    offsets[k] = 0;
  for (std::size_t d = dims.size() - 1; d-- > 0;) {
    std::int64_t i = row % dims[d];
    row /= dims[d];
    for (std::size_t k = 0; k < strides.size(); ++k)
      offsets[k] += i * strides[k][d];
  }
}

BroadcastPlan plan_broadcast(const std::vector<std::int64_t>& out,
                             std::span<const std::vector<std::int64_t>> ins) {
  const std::size_t rank = out.size();
  // Full-rank strides of every operand (0 where it broadcasts).
  std::vector<std::vector<std::int64_t>> full;
  full.reserve(ins.size());
  for (std::size_t k = 0; k < ins.size(); ++k) {
    const auto& in = ins[k];
    full.emplace_back(rank, std::int64_t{0});
    std::int64_t stride = 1;
    for (std::size_t j = in.size(); j-- > 0;) {
      std::size_t d = rank - in.size() + j;
      full[k][d] = in[j] == 1 ? 0 : stride;
      stride *= in[j];
    }
  }
  BroadcastPlan p;
  p.strides.assign(ins.size(), {});
  for (std::size_t d = 0; d < rank; ++d) {
    if (out[d] == 1)
      continue; // size-1 dims contribute nothing
    bool merge = !p.dims.empty();
    for (std::size_t k = 0; merge && k < ins.size(); ++k)
      merge = p.strides[k].back() == full[k][d] * out[d];
    if (merge) {
      p.dims.back() *= out[d];
      for (std::size_t k = 0; k < ins.size(); ++k)
        p.strides[k].back() = full[k][d];
    } else {
      p.dims.push_back(out[d]);
      for (std::size_t k = 0; k < ins.size(); ++k)
        p.strides[k].push_back(full[k][d]);
    }
  }
  if (p.dims.empty()) { // a scalar (or all-ones) output
    p.dims.push_back(1);
    for (auto& s : p.strides)
      s.push_back(0);
  }
  return p;
}

} // namespace rlx::cpu
