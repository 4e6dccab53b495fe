// claims.cpp: ClaimSet.
#include "rlx/ir/claims.hpp"

namespace rlx::ir {

namespace {
constexpr std::uint16_t kAnyDType = 0xffff;
std::size_t idx(OpKind op) {
  return static_cast<std::size_t>(op);
}
} // namespace

void ClaimSet::claim(OpKind op, std::initializer_list<DType> types) {
  ops_.set(idx(op));
  if (types.size() == 0) {
    dtypes_[idx(op)] = kAnyDType;
    return;
  }
  if (dtypes_[idx(op)] == kAnyDType)
    dtypes_[idx(op)] = 0;
  for (DType t : types)
    dtypes_[idx(op)] |= static_cast<std::uint16_t>(1u << static_cast<unsigned>(t));
}

void ClaimSet::unclaim(OpKind op) {
  ops_.reset(idx(op));
  dtypes_[idx(op)] = 0;
}

bool ClaimSet::claims(OpKind op) const {
  return ops_.test(idx(op));
}

bool ClaimSet::claims(OpKind op, DType t) const {
  return ops_.test(idx(op)) && (dtypes_[idx(op)] & (1u << static_cast<unsigned>(t))) != 0;
}

bool ClaimSet::supports(const Graph& g, NodeId id) const {
  const Node& n = g.node(id);
  if (!claims(n.op, n.shape.dtype))
    return false;
  for (NodeId in : n.inputs)
    if (!claims(n.op, g.shape(in).dtype))
      return false;
  return true;
}

std::vector<OpKind> ClaimSet::kinds() const {
  std::vector<OpKind> out;
  for_each_op([&](OpKind k) {
    if (claims(k))
      out.push_back(k);
  });
  return out;
}

} // namespace rlx::ir
