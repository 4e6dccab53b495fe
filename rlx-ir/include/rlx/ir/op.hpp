// op.hpp: OpKind and its traits, all generated from ops.def.
#pragma once

#include "rlx/ir/attrs.hpp"

#include <cstdint>
#include <optional>
#include <string_view>

namespace rlx::ir {

/// How an op may take part in fusion (TVM's OpPatternKind, reduced).
enum class FusionKind : std::uint8_t { elementwise, broadcast, injective, reduce, opaque };

/// Trait flags of an op (bitwise OR in ops.def).
enum OpFlags : std::uint32_t {
  kCommutative = 1u << 0,    ///< binary op whose operands may be swapped
  kDifferentiable = 1u << 1, ///< has a gradient (autodiff rule)
  kView = 1u << 2,           ///< output may alias its input's buffer
  kLeaf = 1u << 3,           ///< no inputs; Input / Param / Constant
  kHir = 1u << 4,            ///< HIR block op, lowered before MIR
  kSubgraphs = 1u << 5,      ///< carries sub-graph attributes
  kMayFail = 1u << 6,        ///< can reject a value at run time (index out of range, ...)
  kMayFailInt = 1u << 7,     ///< can reject a value at run time on integer operands only
  /// May have effects the IR cannot see (writes outside the graph, randomness): which nodes do is
  /// decided per node by has_effects() in effects.hpp (a Custom node asks its CustomOpDef; an op
  /// with this flag and no per-node rule always has effects). CSE never merges, constant folding
  /// never folds and DCE / compact() never remove a node with effects.
  kMayHaveEffects = 1u << 8,
  /// A fused op emitted by rlx-fusion (ops.def's last sections): it has a decomposition back to
  /// primitives, which the unfuse pass applies.
  kFused = 1u << 9,
};

/// One enumerator per row of ops.def.
enum class OpKind : std::uint16_t {
#define RLX_OP(Name, ...) Name,
#include "rlx/ir/ops.def"
};

/// Number of op kinds.
inline constexpr int kNumOps = 0
#define RLX_OP(Name, ...) +1
#include "rlx/ir/ops.def"
    ;

/// Static facts about an op kind, one row of ops.def.
struct OpInfo {
  OpKind kind;
  std::string_view name;   ///< mnemonic
  int min_arity;           ///< fewest inputs
  int max_arity;           ///< most inputs; -1 = variadic
  std::size_t attrs_index; ///< index of the op's alternative in `Attrs`
  FusionKind fusion;
  std::uint32_t flags;
  std::string_view doc;
};

/// \returns the row of ops.def for \p k.
const OpInfo& op_info(OpKind k);
/// \returns the mnemonic of \p k.
inline std::string_view op_name(OpKind k) {
  return op_info(k).name;
}
/// \returns the OpKind whose mnemonic is \p name, or nullopt.
std::optional<OpKind> parse_op_name(std::string_view name);
/// \returns a default-constructed attribute struct of the type \p k carries.
Attrs default_attrs(OpKind k);

inline bool has_flag(OpKind k, OpFlags f) {
  return (op_info(k).flags & f) != 0;
}
inline bool is_leaf(OpKind k) {
  return has_flag(k, kLeaf);
}
inline bool is_hir(OpKind k) {
  return has_flag(k, kHir);
}
inline bool is_commutative(OpKind k) {
  return has_flag(k, kCommutative);
}
inline bool is_differentiable(OpKind k) {
  return has_flag(k, kDifferentiable);
}
inline FusionKind fusion_kind(OpKind k) {
  return op_info(k).fusion;
}
/// \returns true for elementwise and broadcast ops.
inline bool is_elementwise(OpKind k) {
  return fusion_kind(k) == FusionKind::elementwise || fusion_kind(k) == FusionKind::broadcast;
}
std::string_view fusion_kind_name(FusionKind f);

/// \returns the unary op that applies \p act, or nullopt for Activation::none.
std::optional<OpKind> activation_op(Activation act);

/// Iterates every op kind in table order.
template <class Fn> void for_each_op(Fn&& fn) {
  for (int i = 0; i < kNumOps; ++i)
    fn(static_cast<OpKind>(i));
}

} // namespace rlx::ir
