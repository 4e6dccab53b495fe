// table.hpp: how the rule families fill the VJP table (private to rlx-autodiff).
#pragma once

#include "rlx/autodiff/vjp_rules.hpp"

#include <array>

namespace rlx::autodiff::detail {

/// The table: one row per OpKind.
using VjpTable = std::array<VjpRule, ir::kNumOps>;

inline void set_rule(VjpTable& t, ir::OpKind k, VjpFn fn, std::uint32_t non_differentiable = 0,
                     bool via_decomposition = false,
                     std::uint32_t (*non_differentiable_of)(const ir::Node&) = nullptr) {
  t[static_cast<std::size_t>(k)] =
      VjpRule{fn, non_differentiable, non_differentiable_of, via_decomposition};
}

void add_elementwise_rules(VjpTable& t); // vjp_elementwise.cpp
void add_linalg_rules(VjpTable& t);      // vjp_linalg.cpp
void add_movement_rules(VjpTable& t);    // vjp_movement.cpp
void add_reduce_norm_rules(VjpTable& t); // vjp_reduce_norm.cpp
void add_nn_rules(VjpTable& t);          // vjp_nn.cpp (attention, rope, losses, conv, pool)
void add_control_rules(VjpTable& t);     // vjp_control.cpp (If, CustomFn, FakeQuantize)

} // namespace rlx::autodiff::detail
