// claims.hpp: ClaimSet, the op kinds and dtypes a backend runs natively.
#pragma once

#include "rlx/ir/graph.hpp"

#include <array>
#include <bitset>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace rlx::ir {

/// The op kinds and dtypes a backend runs natively.
class ClaimSet {
public:
  /// Claims \p op for the dtypes \p types (empty list = every dtype).
  void claim(OpKind op, std::initializer_list<DType> types = {});
  /// Drops \p op from the set.
  void unclaim(OpKind op);
  /// \returns whether \p op is claimed for any dtype.
  bool claims(OpKind op) const;
  /// \returns whether \p op is claimed for dtype \p t.
  bool claims(OpKind op, DType t) const;
  /// The one capability question: can this backend run node \p id of \p g as it is? True when
  /// the op kind is claimed for the node's output dtype and for the dtype of every operand (so a
  /// Cast needs both its source and target type, a Compare its operand type and bool, a Gather its
  /// index type, a padding-masked Attention its mask type). A backend therefore claims an op for
  /// every dtype its kernel takes at any operand, index and mask operands included.
  bool supports(const Graph& g, NodeId id) const;
  /// Every claimed op kind, in table order.
  std::vector<OpKind> kinds() const;

private:
  std::bitset<kNumOps> ops_;
  std::array<std::uint16_t, kNumOps> dtypes_{}; // bit per DType; all-ones = any
};

} // namespace rlx::ir
