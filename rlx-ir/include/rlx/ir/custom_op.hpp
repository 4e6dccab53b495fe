// custom_op.hpp: the registry of user ops behind OpKind::Custom.
#pragma once

#include "rlx/ir/attrs.hpp"
#include "rlx/ir/shape.hpp"
#include "rlx/ir/tensor.hpp"

#include <functional>
#include <map>
#include <mutex>
#include <span>
#include <string>

namespace rlx::ir {

/// A user op: how many inputs it takes, its shape rule and its reference kernel.
struct CustomOpDef {
  std::string name;
  int min_arity = 0;
  int max_arity = -1; ///< -1 = variadic
  /// Output type from input types and the node's attributes; throw ShapeError on bad input.
  std::function<Shape(std::span<const Shape>, const CustomAttrs&)> infer;
  /// Output value (of type \p out) from input values; the semantics every backend must match.
  std::function<Tensor(std::span<const Tensor>, const CustomAttrs&, const Shape& out)> reference;
  /// True when the op has effects the IR cannot see (it writes outside the graph, draws random
  /// numbers, ...): its nodes are then never merged, folded or removed (see effects.hpp).
  bool has_effects = false;
};

/// Registered custom ops, by name. Registration is explicit (no static initialisers).
class CustomOpRegistry {
public:
  /// The process-wide registry used by shape inference and the reference interpreter.
  static CustomOpRegistry& global();
  /// Adds \p def; throws Error when the name is taken or a function is missing.
  void add(CustomOpDef def);
  /// \returns the op named \p name, or nullptr.
  const CustomOpDef* find(const std::string& name) const;
  /// Removes \p name (for tests); \returns whether it existed.
  bool remove(const std::string& name);

private:
  mutable std::mutex mu_;
  std::map<std::string, CustomOpDef> ops_;
};

} // namespace rlx::ir
