// vjp_table.cpp: assembles the VJP rule table from the op families, once.
#include "table.hpp"

namespace rlx::autodiff {

const VjpRule* vjp_rule(ir::OpKind op) {
  static const detail::VjpTable table = [] {
    detail::VjpTable t{};
    detail::add_elementwise_rules(t);
    detail::add_linalg_rules(t);
    detail::add_movement_rules(t);
    detail::add_reduce_norm_rules(t);
    detail::add_nn_rules(t);
    detail::add_control_rules(t);
    return t;
  }();
  const VjpRule& r = table[static_cast<std::size_t>(op)];
  return r.fn ? &r : nullptr;
}

std::uint32_t non_differentiable_operands(const ir::Node& node) {
  const VjpRule* r = vjp_rule(node.op);
  if (r == nullptr)
    return 0;
  return r->non_differentiable | (r->non_differentiable_of ? r->non_differentiable_of(node) : 0u);
}

} // namespace rlx::autodiff
