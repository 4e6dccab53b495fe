// fd_cases.hpp: the conformance cases the finite-difference tests walk (fd_ops_test, jvp_test,
// vmap_test): which cases have something to differentiate, a case by name, its values in f64.
#pragma once

#include "fd.hpp"
#include "op_cases.hpp"

#include "rlx/ir/op.hpp"

#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace rlx::autodiff::testing {

/// Whether \p k's gradient is straight-through by definition (ops.def), not its derivative:
/// finite differences of a step function are 0, so these ops are checked apart.
inline bool straight_through(ir::OpKind k) {
  return k == ir::OpKind::FakeQuantize;
}

/// The names of the cases of differentiable, not straight-through ops with a float operand (a
/// mask aside) and a float result. Cheap: no graph is built, so every test process of the ctest
/// run starts fast; the tests assert that each case has a differentiable leaf.
inline std::vector<std::string> differentiable_case_names() {
  std::vector<std::string> r;
  for (const auto& c : conformance::op_cases()) {
    if (!ir::is_differentiable(c.op) || ir::is_leaf(c.op) || straight_through(c.op))
      continue;
    bool float_in = false;
    for (const auto& s : c.inputs)
      float_in = float_in || (ir::is_float(s.type.dtype) && s.name != "mask");
    const auto* cast = std::get_if<ir::CastAttrs>(&c.attrs);
    if (float_in && !(cast && !ir::is_float(cast->to)))
      r.push_back(c.name);
  }
  return r;
}

/// The conformance case named \p name; throws std::runtime_error when there is none.
inline const conformance::OpCase& find_case(const std::string& name) {
  for (const auto& c : conformance::op_cases())
    if (c.name == name)
      return c;
  throw std::runtime_error("no case " + name);
}

/// The input and param values of case \p c with every float tensor cast to f64.
inline conformance::CaseValues f64_values(const conformance::OpCase& c) {
  conformance::CaseValues v = conformance::make_values(c);
  return {to_f64(v.inputs), to_f64(v.params)};
}

} // namespace rlx::autodiff::testing
