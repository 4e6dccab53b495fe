// custom_op.cpp: the custom-op registry.
#include "rlx/ir/custom_op.hpp"

#include "rlx/ir/error.hpp"

namespace rlx::ir {

CustomOpRegistry& CustomOpRegistry::global() {
  static CustomOpRegistry registry;
  return registry;
}

void CustomOpRegistry::add(CustomOpDef def) {
  if (def.name.empty())
    throw Error("custom op: empty name");
  if (!def.infer || !def.reference)
    throw Error("custom op '" + def.name + "': a shape rule and a reference kernel are required");
  std::lock_guard lock(mu_);
  if (ops_.count(def.name))
    throw Error("custom op '" + def.name + "' is already registered");
  std::string name = def.name;
  ops_.emplace(std::move(name), std::move(def));
}

const CustomOpDef* CustomOpRegistry::find(const std::string& name) const {
  std::lock_guard lock(mu_);
  auto it = ops_.find(name);
  return it == ops_.end() ? nullptr : &it->second;
}

bool CustomOpRegistry::remove(const std::string& name) {
  std::lock_guard lock(mu_);
  return ops_.erase(name) > 0;
}

} // namespace rlx::ir
