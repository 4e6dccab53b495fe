// op.cpp: the OpInfo table generated from ops.def.
#include "rlx/ir/op.hpp"

#include <array>
#include <unordered_map>

namespace rlx::ir {
namespace {

template <class V, class T, std::size_t I = 0> constexpr std::size_t variant_index() {
  static_assert(I < std::variant_size_v<V>, "attribute type is not an alternative of Attrs");
  if constexpr (std::is_same_v<std::variant_alternative_t<I, V>, T>)
    return I;
  else
    return variant_index<V, T, I + 1>();
}

const std::array<OpInfo, kNumOps> kOpTable = {{
#define RLX_OP(Name, mnemonic, min_arity, max_arity, AttrsT, rule, fusion, flags, doc)             \
  {OpKind::Name,                                                                                   \
   mnemonic,                                                                                       \
   min_arity,                                                                                      \
   max_arity,                                                                                      \
   variant_index<Attrs, AttrsT>(),                                                                 \
   FusionKind::fusion,                                                                             \
   static_cast<std::uint32_t>(flags),                                                              \
   doc},
#include "rlx/ir/ops.def"
}};

} // namespace

const OpInfo& op_info(OpKind k) {
  return kOpTable.at(static_cast<std::size_t>(k));
}

std::optional<OpKind> parse_op_name(std::string_view name) {
  static const auto* index = [] {
    auto* m = new std::unordered_map<std::string_view, OpKind>();
    for (const auto& row : kOpTable)
      m->emplace(row.name, row.kind);
    return m;
  }();
  if (auto it = index->find(name); it != index->end())
    return it->second;
  return std::nullopt;
}

Attrs default_attrs(OpKind k) {
  switch (k) {
#define RLX_OP(Name, mnemonic, min_arity, max_arity, AttrsT, ...)                                  \
  case OpKind::Name:                                                                               \
    return AttrsT{};
#include "rlx/ir/ops.def"
  }
  return NoAttrs{};
}

std::string_view fusion_kind_name(FusionKind f) {
  switch (f) {
  case FusionKind::elementwise:
    return "elementwise";
  case FusionKind::broadcast:
    return "broadcast";
  case FusionKind::injective:
    return "injective";
  case FusionKind::reduce:
    return "reduce";
  case FusionKind::opaque:
    return "opaque";
  }
  return "?";
}

std::optional<OpKind> activation_op(Activation act) {
  switch (act) {
  case Activation::none:
    return std::nullopt;
  case Activation::relu:
    return OpKind::Relu;
  case Activation::gelu:
    return OpKind::Gelu;
  case Activation::gelu_tanh:
    return OpKind::GeluTanh;
  case Activation::silu:
    return OpKind::Silu;
  case Activation::sigmoid:
    return OpKind::Sigmoid;
  case Activation::tanh:
    return OpKind::Tanh;
  }
  return std::nullopt;
}

} // namespace rlx::ir
